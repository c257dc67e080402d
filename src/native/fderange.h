/* Where each function of an object starts and ends, from the FDEs of its
 * unwind tables (.eh_frame, .debug_frame): what names a stripped
 * function that no symbol covers by its start, so that every sample in
 * it adds to one frame (symbolize.h).  The tables are the object's, a
 * file pystrobe did not choose: every entry is read within its section,
 * and their number is bounded. */
#ifndef PYSTROBE_FDERANGE_H
#define PYSTROBE_FDERANGE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Entries kept of one object: libxul, among the largest, has ~300k. */
#define FDERANGE_MAX (1u << 21)

struct fderange {
	uint64_t start, end;	/* [start, end) in the object's link-time addresses */
};

/* The FDEs of elf, sorted by start, into *v (free() it); their number
 * (0 and *v NULL when it has none). */
size_t fderange_read(Elf *elf, struct fderange **v);

/* The one among v[0..n) that holds addr, innermost where they nest, or
 * NULL. */
const struct fderange *fderange_find(const struct fderange *v, size_t n, uint64_t addr);

#endif
