/* A page cache in front of another reader, for one sample at a time.
 *
 * A sample reads many small pieces that sit close together: the thread
 * states, a data stack of frames, the code objects.  One system call per
 * page instead of one per piece cuts the cost of a sample severalfold, and
 * reads within one sample see one copy of each page.  The cache is emptied
 * before every sample, so nothing stale outlives it.
 *
 * What it keeps is the list of what the last sample read, page by page:
 * a program's stacks stay where they are from one sample to the next, so
 * the next one will most likely read the same bytes.  Its first read
 * fetches them all in one batch, one system call instead of ~30, and only
 * the byte range of each page the last sample used (see struct page).
 * Then only pages not seen before cost a call of their own.
 */
#include "process/mem.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define SLOTS 256u		/* direct-mapped: 1 MiB of the target per sample */
/* Prefetched ranges are whole lines of this size: a field read a little
 * off last round's range still hits. */
#define LINE 64u

/* Of a page, only the bytes the last sample used are fetched again: a
 * code object's identity is ~100 bytes of its page, a thread's frames the
 * used part of its data stack; copying whole pages was the largest part
 * of a round's kernel time.  valid is the range this sample holds; a read
 * outside it fetches the rest of the page (keeping the bytes already
 * handed out, so one sample still sees one copy of each byte). */
struct page {
	uint16_t lo, hi;	/* valid bytes [lo, hi) */
	uint16_t ulo, uhi;	/* used this sample (not just prefetched); ulo == uhi: none */
	bool listed;		/* in filled[] */
	uint8_t data[PAGE];
};

/* Giving up on the prefetch after this many unreadable ranges (a thread
 * that exited took its stack along): the rest are read on demand. */
#define PREFETCH_FAILURES 4
/* Slots a page may take, from the one its address hashes to. */
#define PROBES 4

struct want {
	uint64_t page;
	uint16_t lo, hi;
};

struct mem_cache {
	struct mem mem;
	struct mem *under;
	struct page *pages;
	/* Which page each slot holds: its address + 1, 0 = empty.  Apart
	 * from the pages, so that looking for one touches one cache line,
	 * not the header of each 4 kB slot probed (a TLB miss each). */
	uint64_t tag[SLOTS];
	struct want want[SLOTS];	/* ranges the last sample read, to prefetch */
	struct mem_block blocks[SLOTS];
	uint16_t filled[SLOTS];		/* slots holding a page this sample */
	unsigned nwant, nfilled;
	bool prefetch_due;
	struct page *last;		/* the page of the last read */
	uint64_t last_tag;		/* and its tag */
	/* mem_cache_log_begin(): the pages read since, in first-read order
	 * (a page read again after another may repeat). */
	uint64_t log[MEM_CACHE_LOG_MAX];
	unsigned nlog;
	bool logging;
};

/* A walk goes back and forth between a few pages (a frame's, its code
 * object's): a page among the last few logged is not logged again, so
 * that those do not fill the log. */
static void log_page(struct mem_cache *c, uint64_t base)
{
	for (unsigned k = 1; k <= 4 && k <= c->nlog; k++)
		if (c->log[c->nlog - k] == base)
			return;
	if (c->nlog < MEM_CACHE_LOG_MAX)
		c->log[c->nlog++] = base;
}

/* Where page `base` is, or goes: its slot or one of the next few.  Two
 * pages a round uses often share a direct-mapped slot (a heap page and a
 * stack page 1 MiB apart): they then evicted each other, two whole-page
 * reads every round.  With all of them taken, the first is evicted, or
 * (evict false) NULL returned. */
static struct page *slot_find(struct mem_cache *c, uint64_t base, bool evict)
{
	uint32_t home = hash_u64(base / PAGE) % SLOTS;
	struct page *pg = NULL;

	for (unsigned k = 0; k < PROBES; k++) {
		unsigned i = (home + k) % SLOTS;

		if (c->tag[i] == base + 1) {
			if (c->logging)
				log_page(c, base);
			c->last_tag = base + 1;
			return c->last = &c->pages[i];
		}
		if (!c->tag[i] && !pg)
			pg = &c->pages[i];
	}
	if (!pg && !evict)
		return NULL;
	if (!pg)
		pg = &c->pages[home];
	if (c->logging)
		log_page(c, base);
	if (!pg->listed)
		c->filled[c->nfilled++] = (uint16_t)(pg - c->pages);
	pg->listed = true;
	c->tag[pg - c->pages] = base + 1;
	c->last_tag = base + 1;
	pg->lo = pg->hi = 0;
	pg->ulo = pg->uhi = 0;
	return c->last = pg;
}

/* A frame's fields, then the recheck's look at them: reads come in runs on
 * one page, answered here without a call (last_tag is 0 with no last). */
static inline struct page *slot_claim(struct mem_cache *c, uint64_t base, bool evict)
{
	if (c->last_tag == base + 1)
		return c->last;
	return slot_find(c, base, evict);
}

/* Read the ranges w[0..n) into their slots, in as few calls as the reader
 * allows.  A range that cannot be read leaves its slot holding nothing: a
 * read there fetches the page as if it were new.  One with no free slot
 * left near its own is not fetched (two ranges in one slot would leave it
 * claiming one page with the other's bytes). */
static void fetch_wants(struct mem_cache *c, const struct want *w, unsigned nw)
{
	struct page *dst[SLOTS];
	uint16_t lo[SLOTS], hi[SLOTS];
	unsigned n = 0, i = 0, failures = 0;
	bool logging = c->logging;

	c->logging = false;	/* fetched is not read */
	for (unsigned k = 0; k < nw && n < SLOTS; k++) {
		if (!(dst[n] = slot_claim(c, w[k].page, false)))
			continue;
		lo[n] = w[k].lo;
		hi[n] = w[k].hi;
		c->blocks[n] = (struct mem_block){ w[k].page + w[k].lo, dst[n]->data + w[k].lo,
						   (size_t)(w[k].hi - w[k].lo) };
		n++;
	}
	while (i < n && failures <= PREFETCH_FAILURES) {
		int got = mem_read_batch(c->under, c->blocks + i, (int)(n - i));

		if (got < 0)
			break;
		for (unsigned k = i; k < i + (unsigned)got; k++) {
			dst[k]->lo = lo[k];
			dst[k]->hi = hi[k];
		}
		i += (unsigned)got + 1;
		failures += i <= n;
	}
	c->logging = logging;
}

/* What the last sample used, fetched for this one. */
static void prefetch(struct mem_cache *c)
{
	c->prefetch_due = false;
	fetch_wants(c, c->want, c->nwant);
}

/* Fetch what slot pg (holding [lo, hi) of page base) lacks: both sides,
 * in one call where the reader batches. */
static int fill_rest(struct mem_cache *c, struct page *pg, uint64_t base)
{
	struct mem_block b[2];
	int n = 0;

	if (pg->lo == pg->hi)
		pg->lo = pg->hi = 0;
	if (pg->lo)
		b[n++] = (struct mem_block){ base, pg->data, pg->lo };
	if (pg->hi < PAGE)
		b[n++] = (struct mem_block){ base + pg->hi, pg->data + pg->hi, PAGE - pg->hi };
	if (n == 1 ? mem_read(c->under, b[0].addr, b[0].buf, b[0].len) < 0
		   : mem_read_batch(c->under, b, n) != n)
		return -EFAULT;
	pg->lo = 0;
	pg->hi = PAGE;
	return 0;
}

/* The page at base (page-aligned) holding bytes [off, off + len), from the
 * cache or read into it; NULL when it cannot be read (part of the page
 * may be unmapped). */
static inline struct page *page_at(struct mem_cache *c, uint64_t base, size_t off, size_t len)
{
	struct page *pg = slot_claim(c, base, true);

	if ((off < pg->lo || off + len > pg->hi) && fill_rest(c, pg, base) < 0)
		return NULL;
	if (pg->ulo == pg->uhi) {
		pg->ulo = (uint16_t)off;
		pg->uhi = (uint16_t)(off + len);
	} else {
		if (off < pg->ulo)
			pg->ulo = (uint16_t)off;
		if (off + len > pg->uhi)
			pg->uhi = (uint16_t)(off + len);
	}
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
		struct page *pg = page_at(c, base, off, n);

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
	pg = page_at(c, base, addr - base, len);
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

static int cmp_want(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	return x->page < y->page ? -1 : x->page > y->page;
}

void mem_cache_reset(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	c->nwant = 0;
	/* Only the slots filled: walking all 256 pages' headers (one TLB
	 * entry each) was a visible part of a cheap round. */
	for (unsigned i = 0; i < c->nfilled; i++) {
		struct page *pg = &c->pages[c->filled[i]];
		uint64_t *tag = &c->tag[c->filled[i]];

		/* Only what was used: a range prefetched in vain is not
		 * fetched again. */
		if (*tag && pg->ulo != pg->uhi)
			c->want[c->nwant++] = (struct want){
				*tag - 1, (uint16_t)(pg->ulo & ~(LINE - 1)),
				(uint16_t)((pg->uhi + LINE - 1) & ~(LINE - 1)) };
		*tag = 0;
		pg->listed = false;
	}
	c->nfilled = 0;
	c->last = NULL;
	c->last_tag = 0;
	/* In address order: the reader joins ranges that touch (a data
	 * stack's pages) into one piece for the kernel. */
	sort_small(c->want, c->nwant, sizeof(*c->want), cmp_want);
	/* Fetched on the first read, not now: the sample may pause the
	 * target first, and the memory must be read in the pause. */
	c->prefetch_due = c->nwant > 0;
}

void mem_cache_forget(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	mem_cache_reset(m);
	c->nwant = 0;
	c->prefetch_due = false;
}

static int cmp_range_addr(const void *a, const void *b)
{
	const struct mem_range *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The slot holding page base this sample, or NULL: a lookup that claims
 * nothing (and logs nothing). */
static const struct page *slot_lookup(const struct mem_cache *c, uint64_t base)
{
	uint32_t home = hash_u64(base / PAGE) % SLOTS;

	for (unsigned k = 0; k < PROBES; k++)
		if (c->tag[(home + k) % SLOTS] == base + 1)
			return &c->pages[(home + k) % SLOTS];
	return NULL;
}

void mem_cache_fetch(struct mem *m, struct mem_range *r, int n)
{
	struct mem_cache *c = (struct mem_cache *)m;
	struct want w[SLOTS];
	unsigned nw = 0;

	if (c->prefetch_due)
		prefetch(c);
	sort_small(r, (size_t)n, sizeof(*r), cmp_range_addr);
	for (int i = 0; i < n && nw < SLOTS; i++) {
		uint64_t addr = r[i].addr, end = r[i].addr + r[i].len;

		if (!r[i].len || r[i].len > PAGE || end < addr)
			continue;
		while (addr < end && nw < SLOTS) {
			uint64_t base = addr & ~(uint64_t)(PAGE - 1);
			uint64_t stop = end < base + PAGE ? end : base + PAGE;
			uint16_t lo = (uint16_t)((addr - base) & ~(uint64_t)(LINE - 1));
			uint16_t hi = (uint16_t)(((stop - base) + LINE - 1) & ~(uint64_t)(LINE - 1));

			if (nw && w[nw - 1].page == base) {
				/* Sorted by start: only hi can grow. */
				if (hi > w[nw - 1].hi)
					w[nw - 1].hi = hi;
			} else if (!slot_lookup(c, base)) {
				w[nw++] = (struct want){ base, lo, hi };
			}
			addr = stop;
		}
	}
	fetch_wants(c, w, nw);
}

void mem_cache_log_begin(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	c->logging = true;
	c->nlog = 0;
	/* The next read looks its page up, and so logs it. */
	c->last = NULL;
	c->last_tag = 0;
}

int mem_cache_log_end(struct mem *m, struct mem_range *out, int max)
{
	struct mem_cache *c = (struct mem_cache *)m;
	int n = 0;

	c->logging = false;
	sort_small(c->log, c->nlog, sizeof(*c->log), cmp_u64);
	for (unsigned i = 0; i < c->nlog && n < max; i++) {
		const struct page *pg;

		if (i && c->log[i] == c->log[i - 1])
			continue;
		pg = slot_lookup(c, c->log[i]);
		/* Evicted since, or read uncached: the whole page. */
		if (!pg || pg->ulo == pg->uhi)
			out[n++] = (struct mem_range){ c->log[i], PAGE };
		else
			out[n++] = (struct mem_range){ c->log[i] + pg->ulo,
						       (uint32_t)(pg->uhi - pg->ulo) };
	}
	return n;
}
