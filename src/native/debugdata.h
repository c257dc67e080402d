/* The bound on an object's .gnu_debugdata (MiniDebugInfo, as Fedora
 * ships it: an xz-compressed ELF file holding the .symtab that stripping
 * took away).  libdwfl decompresses it by itself, whole, with no limit
 * on the memory the xz header asks for or on what comes out: a crafted
 * section of a few kilobytes can ask for gigabytes.  So pystrobe first
 * decompresses it here, bounded, and an object whose section does not
 * fit is not handed to libdwfl at all. */
#ifndef PYSTROBE_DEBUGDATA_H
#define PYSTROBE_DEBUGDATA_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

/* What a .gnu_debugdata may decompress to: its symbol and string tables
 * (Fedora's largest, libLLVM's, are tens of MiB). */
#define DEBUGDATA_OUT_MAX (256u << 20)
/* What its xz decoder may allocate: xz -9 needs 65 MiB. */
#define DEBUGDATA_MEM_MAX (128u << 20)

/* Does the xz data in[0..len) decompress, whole and without error, to at
 * most max bytes within the decoder's memory bound?  (Concatenated
 * streams count together, as libdwfl reads them.) */
bool debugdata_xz_fits(const void *in, size_t len, size_t max);

/* false when elf has a .gnu_debugdata that does not fit the bounds
 * (or is not xz at all); true when it fits or there is none. */
bool debugdata_ok(Elf *elf);

#endif
