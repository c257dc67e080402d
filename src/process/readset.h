/* What a result was computed from, to prove it still holds.
 *
 * A cache keyed by a target address proves nothing by the address: objects
 * die and others are born in their place.  What does prove a result still
 * holds is that every byte it was computed from is unchanged: decoding is
 * deterministic, so the same bytes give the same answer.  A readset records
 * the ranges read (through readset_mem()) while a result is computed, with
 * their bytes; each later round re-reads all of them at once (readset_check)
 * and a result is reused only if all its ranges still hold their bytes.
 *
 * The re-read is cheap where one read per range would not be: ranges near
 * each other are merged into spans and the spans read in batches (the
 * kernel's cost is per page pinned and per iovec, and small iovecs on
 * scattered pages are the dearest part of a round).  Ranges are shared by
 * results that read the same bytes (a type object, a code object's
 * identity), so those are checked once a round.
 */
#ifndef PYSTROBE_READSET_H
#define PYSTROBE_READSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/mem.h"
#include "util/hashidx.h"

#define READSET_RANGE_MAX 4096	/* a longer read makes the result unprovable */
#define READSET_LOG_MAX 256	/* ranges one result may depend on */

/* Buffers of mem_read_merged(), kept from call to call. */
struct merge_buf {
	struct span {
		uint64_t lo, hi;
		int first, last;	/* the blocks in it */
	} *sp;
	struct mem_block *sb;
	uint8_t *buf;
	size_t sp_cap, sb_cap, buf_cap;
};
void merge_buf_release(struct merge_buf *mb);

struct readset {
	struct mem mem;		/* the recording reader (readset_mem) */
	struct mem *under;
	struct rs_range {
		uint64_t addr;
		uint32_t len;
		uint32_t refs;	/* results depending on it; 0: dead */
		size_t off;	/* its bytes in bytes[] */
		bool ok;	/* held its bytes at the last check */
	} *v;
	uint32_t n, live;
	uint32_t nbad;		/* ranges that did not hold at the last check */
	size_t cap;
	uint8_t *bytes;
	size_t nbytes, bytes_cap;
	struct hashidx ix;	/* (addr, len) -> ranges */
	uint32_t *order;	/* the live ranges by address */
	uint32_t norder;
	bool dirty;		/* order is out of date */
	uint8_t *now;		/* readset_check's buffers */
	struct mem_block *blocks;
	bool *okv;
	size_t now_cap, blocks_cap, okv_cap;
	struct merge_buf mb;
	/* The log of the result being computed (readset_begin/_end). */
	uint32_t log[READSET_LOG_MAX];
	int nlog;
	bool recording, overflow;
};

void readset_init(struct readset *rs, struct mem *under);
void readset_release(struct readset *rs);

/* A reader through `under` that, between readset_begin() and
 * readset_end(), records every range read. */
static inline struct mem *readset_mem(struct readset *rs)
{
	return &rs->mem;
}

void readset_begin(struct readset *rs);
/* The ranges recorded since readset_begin(), now depended on (a new
 * array, *ids), or -1 when too many or too long to prove (nothing kept). */
int readset_end(struct readset *rs, uint32_t **ids);
/* A result is gone: its ranges are no longer depended on. */
void readset_drop(struct readset *rs, const uint32_t *ids, int n);
/* Re-read every range depended on through m (in merged batches) and mark
 * the ones whose bytes changed or cannot be read. */
void readset_check(struct readset *rs, struct mem *m);
/* Did every one of these ranges hold at the last check? */
bool readset_holds(const struct readset *rs, const uint32_t *ids, int n);
/* When dead ranges outnumber the live ones: only the live ones kept,
 * renumbered.  Returns each old id's new one (UINT32_MAX: dead) for the
 * caller to renumber what it holds, then free; NULL: nothing done. */
uint32_t *readset_compact(struct readset *rs);

/* Read the blocks as a few merged spans (blocks near each other in the
 * order given are read as one span through whatever lies between them),
 * falling back to the blocks one by one for a span that cannot be read.
 * ok[i] says whether block i was read. */
void mem_read_merged(struct mem *m, const struct mem_block *b, int n, bool *ok,
		     struct merge_buf *mb);

#endif
