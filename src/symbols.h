/* Symbols, sections and load segments of an ELF file, through libelf. */
#ifndef PYSTROBE_SYMBOLS_H
#define PYSTROBE_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

struct elf_file;

/* NULL when the file cannot be opened or is not a 64-bit ELF file. */
struct elf_file *elf_file_open(const char *path);
void elf_file_close(struct elf_file *ef);

/* The link-time address and size of a symbol, from .dynsym then .symtab.
 * Returns 0, or -1 when there is no such defined symbol. */
int elf_symbol(struct elf_file *ef, const char *name, uint64_t *addr, uint64_t *size);

/* The link-time address and size of a section by name; 0 or -1. */
int elf_section(struct elf_file *ef, const char *name, uint64_t *addr, uint64_t *size);

/* The load bias of a mapping of this file: the difference between run-time
 * and link-time addresses, from the PT_LOAD segment that covers the file
 * offset of the mapping.  0, or -1 when no segment covers it. */
int elf_load_bias(struct elf_file *ef, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

#endif
