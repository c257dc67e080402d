/* A page cache in front of another reader, for one sample at a time.
 *
 * A sample reads many small pieces that sit close together: the thread
 * states, a data stack of frames, the code objects.  One system call per
 * page instead of one per piece cuts the cost of a sample severalfold, and
 * reads within one sample see one copy of each page.  The cache is emptied
 * before every sample, so nothing stale outlives it.
 *
 * What it keeps is the list of pages the last sample read: a program's
 * stacks stay where they are from one sample to the next, so the next one
 * will most likely read the same pages.  Its first read fetches them all
 * in one batch: one system call instead of ~30, and the kernel's cost per
 * page falls from ~0.7 to ~0.25 us, a sample's by about a third.  Then
 * only pages not seen before cost a call of their own.
 */
#include "target/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define SLOTS 256u		/* direct-mapped: 1 MiB of the target per sample */

struct page {
	uint64_t addr;		/* page address + 1; 0 = empty */
	bool used;		/* read from in this sample (not just prefetched) */
	uint8_t data[PAGE];
};

/* Giving up on the prefetch after this many unreadable pages (a thread
 * that exited took its stack along): the rest are read on demand. */
#define PREFETCH_FAILURES 4

struct mem_cache {
	struct mem mem;
	struct mem *under;
	struct page *pages;
	uint64_t want[SLOTS];	/* pages the last sample read, to prefetch */
	struct mem_block blocks[SLOTS];
	unsigned nwant;
	bool prefetch_due;
};

static struct page *slot_of(struct mem_cache *c, uint64_t page)
{
	return &c->pages[(page / PAGE) % SLOTS];
}

/* Read the pages in want[] into their slots, in as few calls as the
 * reader allows.  A page that cannot be read is skipped and left empty. */
static void prefetch(struct mem_cache *c)
{
	unsigned n = 0, i = 0, failures = 0;

	c->prefetch_due = false;
	for (unsigned k = 0; k < c->nwant; k++) {
		c->blocks[n++] = (struct mem_block){ c->want[k], slot_of(c, c->want[k])->data, PAGE };
	}
	while (i < n && failures <= PREFETCH_FAILURES) {
		int got = mem_read_batch(c->under, c->blocks + i, (int)(n - i));

		if (got < 0)
			return;
		for (unsigned k = i; k < i + (unsigned)got; k++)
			slot_of(c, c->blocks[k].addr)->addr = c->blocks[k].addr + 1;
		i += (unsigned)got + 1;
		failures += i <= n;
	}
}

/* The page at base (page-aligned), from the cache or read into it; NULL
 * when it cannot be read whole. */
static struct page *page_at(struct mem_cache *c, uint64_t base)
{
	struct page *pg = slot_of(c, base);

	if (pg->addr != base + 1) {
		if (mem_read(c->under, base, pg->data, PAGE) < 0) {
			pg->addr = 0;
			return NULL;
		}
		pg->addr = base + 1;
	}
	pg->used = true;
	return pg;
}

static int cache_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_cache *c = (struct mem_cache *)m;
	uint8_t *out = buf;

	if (c->prefetch_due)
		prefetch(c);
	/* Big reads go straight through: caching them would evict the rest. */
	if (len > PAGE)
		return mem_read(c->under, addr, buf, len);
	while (len) {
		uint64_t base = addr & ~(uint64_t)(PAGE - 1);
		size_t off = addr - base, n = PAGE - off < len ? PAGE - off : len;
		struct page *pg = page_at(c, base);

		/* Part of the page may be unmapped: read just what was
		 * asked for, uncached. */
		if (!pg)
			return mem_read(c->under, addr, out, len);
		memcpy(out, pg->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

/* Reads of a few fields (a frame, a code object's identity) are most of a
 * sample's reads; handing out the cached bytes in place spares each a
 * copy, and the stall of loading fields from a buffer just written. */
static const void *cache_peek(struct mem *m, uint64_t addr, size_t len)
{
	struct mem_cache *c = (struct mem_cache *)m;
	uint64_t base = addr & ~(uint64_t)(PAGE - 1);
	struct page *pg;

	if (len == 0 || len > PAGE - (addr - base))
		return NULL;
	if (c->prefetch_due)
		prefetch(c);
	pg = page_at(c, base);
	return pg ? pg->data + (addr - base) : NULL;
}

static void cache_close(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	free(c->pages);
	free(c);
}

struct mem *mem_cache_new(struct mem *under)
{
	struct mem_cache *c = xcalloc(1, sizeof(*c));

	c->mem.read = cache_read;
	c->mem.peek = cache_peek;
	c->mem.close = cache_close;
	c->under = under;
	c->pages = xcalloc(SLOTS, sizeof(*c->pages));
	return &c->mem;
}

void mem_cache_reset(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	c->nwant = 0;
	for (unsigned i = 0; i < SLOTS; i++) {
		/* Only what was used: a page prefetched in vain is not
		 * fetched again. */
		if (c->pages[i].addr && c->pages[i].used)
			c->want[c->nwant++] = c->pages[i].addr - 1;
		c->pages[i].addr = 0;
		c->pages[i].used = false;
	}
	/* Fetched on the first read, not now: the sample may pause the
	 * target first, and the pages must be read in the pause. */
	c->prefetch_due = c->nwant > 0;
}
