/* Symbols, sections and load segments of an ELF file, through libelf. */
#ifndef PYSTROBE_ELFFILE_H
#define PYSTROBE_ELFFILE_H

#include <stdbool.h>
#include <stdint.h>

struct elffile;

/* NULL when the file cannot be opened or is not a 64-bit ELF file. */
struct elffile *elffile_open(const char *path);
void elffile_close(struct elffile *ef);

/* The link-time address and size of a symbol, from .dynsym then .symtab.
 * Returns 0, or -1 when there is no such defined symbol. */
int elffile_symbol(struct elffile *ef, const char *name, uint64_t *addr, uint64_t *size);

/* The link-time address and size of a section by name; 0 or -1. */
int elffile_section(struct elffile *ef, const char *name, uint64_t *addr, uint64_t *size);

/* The load bias of a mapping of this file: the difference between run-time
 * and link-time addresses, from the PT_LOAD segment that covers the file
 * offset of the mapping.  0, or -1 when no segment covers it. */
int elffile_load_bias(struct elffile *ef, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

#endif
