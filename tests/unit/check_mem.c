/* Tests for the memory readers: the per-sample page cache and its
 * prefetch of the pages the previous sample read, and batch reads through
 * process_vm_readv.
 *
 * The cache sits in front of a test reader whose pages can be changed,
 * unmapped and counted between "samples", so each promise is checked
 * directly: a sample sees the memory as it is now, never as the previous
 * sample saw it; a repeated sample costs one call; an unreadable page costs
 * no more than it did without the prefetch.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/mem.h"
#include "python/pystack_int.h"
#include "python/recheck.h"
#include "util/hashidx.h"
#include "suite.h"

#define PAGE 4096u
#define NPAGES 16
#define BASE 0x7f1200000000ull

struct pages {
	struct mem mem;
	uint8_t data[NPAGES][PAGE];
	bool unmapped[NPAGES];
	bool gone;			/* the process has exited */
	int reads, batches;		/* calls served */
	size_t bytes;			/* bytes copied */
};

static int page_of(uint64_t addr)
{
	if (addr < BASE || addr >= BASE + NPAGES * (uint64_t)PAGE)
		return -1;
	return (int)((addr - BASE) / PAGE);
}

static int copy_out(struct pages *p, uint64_t addr, void *buf, size_t len)
{
	int first = page_of(addr), last = page_of(addr + len - 1);

	if (p->gone)
		return -ESRCH;
	if (first < 0 || last < 0)
		return -EFAULT;
	for (int i = first; i <= last; i++)
		if (p->unmapped[i])
			return -EFAULT;
	memcpy(buf, &p->data[0][0] + (addr - BASE), len);
	p->bytes += len;
	return 0;
}

static int pages_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct pages *p = (struct pages *)m;

	p->reads++;
	return copy_out(p, addr, buf, len);
}

/* As process_vm_readv: in order, stopping at the first block it cannot
 * copy whole. */
static int pages_read_batch(struct mem *m, const struct mem_block *b, int n)
{
	struct pages *p = (struct pages *)m;

	p->batches++;
	for (int i = 0; i < n; i++) {
		int rc = copy_out(p, b[i].addr, b[i].buf, b[i].len);

		if (rc < 0)
			return i == 0 && rc == -ESRCH ? rc : i;
	}
	return n;
}

static void pages_close(struct mem *m)
{
	(void)m;
}

static struct pages *pages_new(bool batch)
{
	struct pages *p = calloc(1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	p->mem.read = pages_read;
	p->mem.read_batch = batch ? pages_read_batch : NULL;
	p->mem.close = pages_close;
	for (int i = 0; i < NPAGES; i++)
		memset(p->data[i], 'a' + i, PAGE);
	return p;
}

static uint64_t at(int page, unsigned off)
{
	return BASE + (uint64_t)page * PAGE + off;
}

static int calls(const struct pages *p)
{
	return p->reads + p->batches;
}

/* Read 8 bytes at each of the pages, checking each against the backing
 * memory as it is now. */
static void sample(struct mem *c, struct pages *p, const int *pages, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t got[8], want[8];
		int rc = mem_read(c, at(pages[i], 100), got, sizeof(got));

		if (p->unmapped[pages[i]]) {
			ck_assert_int_eq(rc, -EFAULT);
			continue;
		}
		ck_assert_int_eq(rc, 0);
		memcpy(want, &p->data[pages[i]][100], sizeof(want));
		ck_assert_msg(!memcmp(got, want, sizeof(got)), "page %d: stale or wrong bytes",
			      pages[i]);
	}
}

START_TEST(test_repeat_is_one_call)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int ws[] = { 0, 3, 4, 9, 15 };

	sample(c, p, ws, 5);
	ck_assert_int_eq(calls(p), 5);	/* nothing known yet: a call a page */
	mem_cache_reset(c);
	p->reads = p->batches = 0;
	sample(c, p, ws, 5);
	ck_assert_int_eq(p->batches, 1);
	ck_assert_int_eq(p->reads, 0);
	/* Reads within a page after it came in cost nothing. */
	sample(c, p, ws, 5);
	ck_assert_int_eq(calls(p), 1);
	mem_close(c);
	free(p);
}
END_TEST

/* The pages a walk read, as mem_cache_log_end() gives them: each once,
 * in address order, as the part of it this sample used (in lines); a
 * page read back and forth with another is logged once. */
START_TEST(test_log_pages)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	struct mem_range r[MEM_CACHE_LOG_MAX];
	uint8_t got[8];
	int n;

	ck_assert_int_eq(mem_read(c, at(1, 0), got, 8), 0);	/* before: not logged */
	mem_cache_log_begin(c);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(mem_read(c, at(9, 100 + 8 * i), got, 8), 0);
		ck_assert_int_eq(mem_read(c, at(4, 2000), got, 8), 0);
	}
	ck_assert_int_eq(mem_read(c, at(1, 300), got, 8), 0);
	n = mem_cache_log_end(c, r, MEM_CACHE_LOG_MAX);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(r[0].addr, at(1, 0));		/* its use this sample: [0, 308) */
	ck_assert_uint_eq(r[0].len, 308);
	ck_assert_uint_eq(r[1].addr, at(4, 2000));
	ck_assert_uint_eq(r[1].len, 8);
	ck_assert_uint_eq(r[2].addr, at(9, 100));
	ck_assert_uint_eq(r[2].len, 80);
	/* Nothing is logged once it ends. */
	ck_assert_int_eq(mem_read(c, at(7, 0), got, 8), 0);
	mem_cache_log_begin(c);
	ck_assert_int_eq(mem_cache_log_end(c, r, MEM_CACHE_LOG_MAX), 0);
	mem_close(c);
	free(p);
}
END_TEST

/* mem_cache_fetch(): the pages of the ranges not held yet, in one call
 * (what the last sample's prefetch holds is not fetched again), and the
 * reads after it cost nothing; a range over a page long, or on an unmapped
 * page, is no error: read as if never hinted. */
START_TEST(test_fetch_hints)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	struct mem_range r[] = {
		{ at(5, 3000), 2000 },	/* over two pages: 5 and 6 */
		{ at(2, 64), 64 },	/* held by the prefetch */
		{ at(11, 10), 8 },
		{ at(12, 0), PAGE + 1 },	/* too long: skipped */
		{ at(13, 0), 8 },	/* unmapped */
	};
	const int ws[] = { 2 }, more[] = { 5, 6, 11 };
	uint8_t got[8];

	sample(c, p, ws, 1);
	mem_cache_reset(c);
	p->unmapped[13] = true;
	p->reads = p->batches = 0;
	mem_cache_fetch(c, r, 5);
	/* The prefetch, then the hints (one batch, and a second past the
	 * unmapped page, which is last). */
	ck_assert_int_le(p->batches, 3);
	ck_assert_int_eq(p->reads, 0);
	p->reads = p->batches = 0;
	ck_assert_int_eq(mem_read(c, at(5, 3500), got, 8), 0);
	ck_assert_int_eq(mem_read(c, at(6, 100), got, 8), 0);
	ck_assert_int_eq(mem_read(c, at(11, 12), got, 8), 0);
	ck_assert_int_eq(calls(p), 0);
	/* Outside the hinted lines of 5 and 11, inside 6's: the rest of 5
	 * and of 11, a call each. */
	sample(c, p, more, 3);
	ck_assert_int_eq(calls(p), 2);
	ck_assert_int_eq(mem_read(c, at(13, 0), got, 8), -EFAULT);
	ck_assert_int_eq(mem_read(c, at(12, 0), got, 8), 0);
	mem_close(c);
	free(p);
}
END_TEST

/* A sample fetches again only the bytes of each page the last one used
 * (in 64-byte lines), not the whole page; a read outside them fetches the
 * rest of the page as it is now, while the bytes already read in this
 * sample stay as they were read: one copy of each byte a sample. */
START_TEST(test_exact_ranges)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	uint8_t got[8];

	ck_assert_int_eq(mem_read(c, at(3, 100), got, 8), 0);
	ck_assert_int_eq(mem_read(c, at(3, 200), got, 8), 0);
	ck_assert_uint_eq(p->bytes, PAGE);
	mem_cache_reset(c);
	p->bytes = 0;
	p->reads = p->batches = 0;
	memset(p->data[3], 'N', PAGE);
	ck_assert_int_eq(mem_read(c, at(3, 100), got, 8), 0);
	ck_assert_int_eq(p->batches, 1);
	ck_assert_uint_eq(p->bytes, 192);	/* [64, 256) */
	ck_assert_mem_eq(got, "NNNNNNNN", 8);
	memset(p->data[3], 'Q', PAGE);
	ck_assert_int_eq(mem_read(c, at(3, 3000), got, 8), 0);
	ck_assert_mem_eq(got, "QQQQQQQQ", 8);
	ck_assert_uint_eq(p->bytes, PAGE);	/* the rest, in one call */
	ck_assert_int_eq(calls(p), 2);
	ck_assert_int_eq(mem_read(c, at(3, 100), got, 8), 0);
	ck_assert_mem_eq(got, "NNNNNNNN", 8);
	ck_assert_int_eq(calls(p), 2);
	/* The next sample's range spans both reads. */
	mem_cache_reset(c);
	p->bytes = 0;
	ck_assert_int_eq(mem_read(c, at(3, 3000), got, 8), 0);
	ck_assert_uint_eq(p->bytes, 3008 - 64);	/* [64, 3008) */
	mem_close(c);
	free(p);
}
END_TEST

/* Memory of any size whose every byte says which page, offset and
 * generation it is: a cache slot holding one page's range under another
 * page's address would show. */
struct synth {
	struct mem mem;
	unsigned gen;
	uint64_t hole;		/* a page gone, 0: none */
};

static uint8_t synth_byte(uint64_t addr, unsigned gen)
{
	return (uint8_t)((addr / PAGE) * 7 + (addr % PAGE) + gen * 13);
}

/* In generation 2 every 50th page (of those test_more_pages_than_slots
 * reads) is gone. */
static bool synth_hole(const struct synth *sy, uint64_t addr)
{
	if (sy->hole && addr / PAGE == sy->hole / PAGE)
		return true;
	return sy->gen == 2 && !sy->hole && addr >= BASE &&
	       ((addr - BASE) / (3 * PAGE)) % 50 == 7;
}

static int synth_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct synth *sy = (struct synth *)m;

	for (size_t i = 0; i < len; i++) {
		if (synth_hole(sy, addr + i))
			return -EFAULT;
		((uint8_t *)buf)[i] = synth_byte(addr + i, sy->gen);
	}
	return 0;
}

static int synth_read_batch(struct mem *m, const struct mem_block *b, int n)
{
	for (int i = 0; i < n; i++)
		if (synth_read(m, b[i].addr, b[i].buf, b[i].len) < 0)
			return i;
	return n;
}

/* More pages a sample than the cache has slots: the prefetch of the next
 * sample runs out of free slots, and must not put two pages in one. */
START_TEST(test_more_pages_than_slots)
{
	struct synth sy = { { synth_read, pages_close, synth_read_batch, NULL }, 0, 0 };
	struct mem *c = mem_cache_new(&sy.mem);

	for (unsigned gen = 0; gen < 4; gen++) {
		sy.gen = gen;
		mem_cache_reset(c);
		for (uint64_t pg = 0; pg < 400; pg++) {
			uint64_t addr = BASE + pg * 3 * PAGE + 100 + pg % 50;
			uint8_t got[8];
			int rc = mem_read(c, addr, got, sizeof(got));

			if (synth_hole(&sy, addr)) {
				ck_assert_int_eq(rc, -EFAULT);
				continue;
			}
			ck_assert_int_eq(rc, 0);
			for (unsigned i = 0; i < sizeof(got); i++)
				ck_assert_uint_eq(got[i], synth_byte(addr + i, gen));
		}
	}
	mem_close(c);
}
END_TEST

/* Pages of the synthetic memory whose cache slots collide: four whose
 * address hashes to one slot h, and, below them all, one hashing to h + 3,
 * which takes slot h + 4 when it comes after the four. */
static void colliding_pages(uint64_t *a, uint64_t *b)
{
	uint32_t h = hash_u64(BASE / PAGE + 1000) % 256;
	int na = 0;

	*b = 0;
	for (uint64_t p = BASE / PAGE; na < 4; p++) {
		uint32_t slot = hash_u64(p) % 256;

		if (!*b && slot == (h + 3) % 256)
			*b = p * PAGE;
		else if (*b && slot == h)
			a[na++] = p * PAGE;
	}
}

static void read_synth(struct mem *c, const struct synth *sy, uint64_t page)
{
	uint8_t got[8];
	int rc = mem_read(c, page + 200, got, sizeof(got));

	if (synth_hole(sy, page)) {
		ck_assert_int_eq(rc, -EFAULT);
		return;
	}
	ck_assert_int_eq(rc, 0);
	for (unsigned k = 0; k < sizeof(got); k++)
		ck_assert_uint_eq(got[k], synth_byte(page + 200 + k, sy->gen));
}

/* Five pages used in slots h .. h + 4: the next prefetch finds no free
 * slot near the home of the last of the four.  It must leave that page out
 * rather than share a slot, which (that page being gone now) would hand out
 * another page's bytes for it. */
START_TEST(test_prefetch_full_window)
{
	struct synth sy = { { synth_read, pages_close, synth_read_batch, NULL }, 0, 0 };
	struct mem *c = mem_cache_new(&sy.mem);
	uint64_t a[4], b;

	colliding_pages(a, &b);
	mem_cache_reset(c);
	for (int i = 0; i < 4; i++)
		read_synth(c, &sy, a[i]);
	read_synth(c, &sy, b);
	sy.gen = 1;
	sy.hole = a[3];
	mem_cache_reset(c);
	read_synth(c, &sy, a[3]);
	for (int i = 0; i < 3; i++)
		read_synth(c, &sy, a[i]);
	read_synth(c, &sy, b);
	mem_close(c);
}
END_TEST

/* The prefetch happens at the sample's first read, not at the reset, and
 * what it brings is the memory of now. */
START_TEST(test_prefetch_sees_new_bytes)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int ws[] = { 1, 2, 7 };

	sample(c, p, ws, 3);
	mem_cache_reset(c);
	ck_assert_int_eq(p->batches, 0);
	memset(p->data[2], 'Z', PAGE);
	memset(p->data[7], 'Y', PAGE);
	sample(c, p, ws, 3);
	ck_assert_int_eq(p->batches, 1);
	mem_close(c);
	free(p);
}
END_TEST

/* A page unmapped since the last sample is skipped by the prefetch; the
 * pages after it still come in the batch that follows. */
START_TEST(test_unmapped_page_skipped)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int ws[] = { 0, 1, 2, 3, 4, 5 };

	sample(c, p, ws, 6);
	mem_cache_reset(c);
	p->unmapped[2] = true;
	p->reads = p->batches = 0;
	sample(c, p, ws, 6);
	/* Batch 0-1 stops at 2, batch 3-5; page 2 read on demand, refused. */
	ck_assert_int_eq(p->batches, 2);
	ck_assert_int_eq(p->reads, 2);	/* the page, then just the bytes asked */
	/* Mapped again: read on demand, and prefetched the sample after. */
	p->unmapped[2] = false;
	mem_cache_reset(c);
	sample(c, p, ws, 6);
	mem_cache_reset(c);
	p->reads = p->batches = 0;
	sample(c, p, ws, 6);
	ck_assert_int_eq(calls(p), 1);
	mem_close(c);
	free(p);
}
END_TEST

/* Many pages gone at once (a thread exited with its stack): a few failures
 * end the prefetch, the rest is read on demand, every read still right. */
START_TEST(test_many_unmapped)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	int ws[NPAGES];

	for (int i = 0; i < NPAGES; i++)
		ws[i] = i;
	sample(c, p, ws, NPAGES);
	mem_cache_reset(c);
	for (int i = 0; i < NPAGES; i += 2)
		p->unmapped[i] = true;
	p->reads = p->batches = 0;
	sample(c, p, ws, NPAGES);
	ck_assert_int_le(p->batches, 6);
	mem_close(c);
	free(p);
}
END_TEST

/* A page brought by the prefetch but not read in its sample is not
 * prefetched again: the working set follows the program. */
START_TEST(test_unused_pages_dropped)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int before[] = { 0, 5, 6, 8 }, after[] = { 0, 6 };

	sample(c, p, before, 4);
	mem_cache_reset(c);
	sample(c, p, after, 2);	/* prefetches 0 5 6 8, uses 0 6 */
	mem_cache_reset(c);
	p->reads = p->batches = 0;
	sample(c, p, before, 4);	/* prefetches 0 6; 5 and 8 on demand */
	ck_assert_int_eq(p->batches, 1);
	ck_assert_int_eq(p->reads, 2);
	mem_close(c);
	free(p);
}
END_TEST

/* After mem_cache_forget() (the sampler's look before its first pause)
 * nothing is fetched ahead: every page is read on demand, and what that
 * sample uses is fetched ahead of the next as before. */
START_TEST(test_forget)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int pages[] = { 0, 5, 6 };

	sample(c, p, pages, 3);
	mem_cache_forget(c);
	p->reads = p->batches = 0;
	sample(c, p, pages, 3);
	ck_assert_int_eq(p->batches, 0);
	ck_assert_int_eq(p->reads, 3);
	mem_cache_reset(c);
	p->reads = p->batches = 0;
	sample(c, p, pages, 3);
	ck_assert_int_eq(p->batches, 1);
	ck_assert_int_eq(p->reads, 0);
	mem_close(c);
	free(p);
}
END_TEST

/* A reader without read_batch gets the same results, a call per page. */
START_TEST(test_reader_without_batch)
{
	struct pages *p = pages_new(false);
	struct mem *c = mem_cache_new(&p->mem);
	const int ws[] = { 3, 4, 10 };

	sample(c, p, ws, 3);
	mem_cache_reset(c);
	p->unmapped[4] = true;
	memset(p->data[10], 'Q', PAGE);
	p->reads = 0;
	sample(c, p, ws, 3);
	ck_assert_int_eq(p->batches, 0);
	mem_close(c);
	free(p);
}
END_TEST

START_TEST(test_process_gone)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const int ws[] = { 1, 2 };
	uint8_t b[8];

	sample(c, p, ws, 2);
	mem_cache_reset(c);
	p->gone = true;
	ck_assert_int_eq(mem_read(c, at(1, 0), b, sizeof(b)), -ESRCH);
	ck_assert_int_eq(mem_read(c, at(2, 0), b, sizeof(b)), -ESRCH);
	mem_close(c);
	free(p);
}
END_TEST

/* Peeking hands out the cached bytes in place: only within one page, only
 * what can be read, and a peeked page counts as used for the prefetch. */
START_TEST(test_peek)
{
	struct pages *p = pages_new(true);
	struct mem *c = mem_cache_new(&p->mem);
	const uint8_t *v;

	v = mem_peek(c, at(3, 10), 16);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v[0], 'a' + 3);
	ck_assert_int_eq(v[15], 'a' + 3);
	ck_assert_ptr_null(mem_peek(c, at(3, PAGE - 8), 16));	/* crosses a page */
	ck_assert_ptr_null(mem_peek(c, at(3, 0), 0));
	p->unmapped[5] = true;
	ck_assert_ptr_null(mem_peek(c, at(5, 0), 8));
	mem_cache_reset(c);
	memset(p->data[3], 'N', PAGE);
	p->reads = p->batches = 0;
	v = mem_peek(c, at(3, 10), 16);
	ck_assert_int_eq(p->batches, 1);	/* page 3 was used: prefetched */
	ck_assert_int_eq(p->reads, 0);
	ck_assert_int_eq(v[0], 'N');
	/* Readers without a cache have nothing to peek at. */
	ck_assert_ptr_null(mem_peek(&p->mem, at(3, 10), 16));
	mem_close(c);
	free(p);
}
END_TEST

/* The process_vm_readv reader's batches, on our own memory: three pages
 * with the middle one unmapped. */
START_TEST(test_proc_batch)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mem *m = mem_proc_open(getpid());
	static uint8_t bufs[3][4096];
	struct mem_block b[3];

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_le(pg, 4096);
	for (int i = 0; i < 3; i++) {
		memset(map + i * pg, '0' + i, pg);
		b[i] = (struct mem_block){ (uint64_t)(uintptr_t)(map + i * pg), bufs[i], (size_t)pg };
	}
	ck_assert_int_eq(mem_read_batch(m, b, 3), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(bufs[i][pg - 1], '0' + i);
	/* Blocks a little apart on one page and on the next are read as one
	 * remote piece, the gaps read in vain: each block gets its own bytes. */
	for (int i = 0; i < 3 * pg; i++)
		map[i] = (uint8_t)(i * 7 + i / 251);
	memset(bufs, 0, sizeof(bufs));
	b[0] = (struct mem_block){ (uint64_t)(uintptr_t)(map + 100), bufs[0], 40 };
	b[1] = (struct mem_block){ (uint64_t)(uintptr_t)(map + 500), bufs[1], 64 };
	b[2] = (struct mem_block){ (uint64_t)(uintptr_t)(map + pg + 300), bufs[2], 30 };
	ck_assert_int_eq(mem_read_batch(m, b, 3), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(memcmp(bufs[i], (void *)(uintptr_t)b[i].addr, b[i].len), 0);
	for (int i = 0; i < 3; i++)
		b[i] = (struct mem_block){ (uint64_t)(uintptr_t)(map + i * pg), bufs[i], (size_t)pg };
	ck_assert_int_eq(munmap(map + pg, pg), 0);
	ck_assert_int_eq(mem_read_batch(m, b, 3), 1);
	ck_assert_int_eq(mem_read_batch(m, b + 1, 2), 0);
	ck_assert_int_eq(mem_read_batch(m, b + 2, 1), 1);
	/* Near the hole: a block that ends just before it still arrives when
	 * the next one, just after the hole's start, cannot; and a block two
	 * pages on is not joined across the hole. */
	memset(bufs, 0, sizeof(bufs));
	b[0] = (struct mem_block){ (uint64_t)(uintptr_t)(map + pg - 200), bufs[0], 100 };
	b[1] = (struct mem_block){ (uint64_t)(uintptr_t)(map + pg + 8), bufs[1], 8 };
	ck_assert_int_eq(mem_read_batch(m, b, 2), 1);
	ck_assert_int_eq(memcmp(bufs[0], map + pg - 200, 100), 0);
	b[1] = (struct mem_block){ (uint64_t)(uintptr_t)(map + 2 * pg + 8), bufs[1], 8 };
	ck_assert_int_eq(mem_read_batch(m, b, 2), 2);
	ck_assert_int_eq(memcmp(bufs[1], map + 2 * pg + 8, 8), 0);
	/* Hostile addresses: a range that wraps past 2^64 is not joined with
	 * one after the wrap, and reads nothing. */
	b[0] = (struct mem_block){ UINT64_MAX - 4095, bufs[0], 4096 };
	b[1] = (struct mem_block){ 0x100, bufs[1], 8 };
	ck_assert_int_eq(mem_read_batch(m, b, 2), 0);
	b[0] = (struct mem_block){ (uint64_t)(uintptr_t)map, bufs[0], (size_t)pg };
	/* A block that runs into the hole is not read whole: it stops there. */
	b[0].len = pg + 8;
	ck_assert_int_eq(mem_read_batch(m, b, 1), 0);
	mem_close(m);
	munmap(map, pg);
	munmap(map + 2 * pg, pg);
}
END_TEST

/* The recheck of a walk, on our own memory: words that still hold prove
 * their owner, one that changed or whose page went away does not, nor do
 * owners whose words did not fit. */
START_TEST(test_recheck)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t *map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)map, per = pg / 8;
	struct mem *m = mem_proc_open(getpid());
	struct recheck rc = { 0 };
	bool bad[4] = { false };
	uint32_t v32 = 0x11223344;

	ck_assert_ptr_ne(map, MAP_FAILED);
	for (uint64_t i = 0; i < 3 * per; i++)
		map[i] = i * 7;
	recheck_reset(&rc);
	/* Owner 0: words on two pages, out of order; owner 1: one that will
	 * change; owner 2: one on a page that will go; owner 3: a 4-byte word. */
	recheck_add(&rc, 0, base + 8 * 5, 5 * 7, 8);
	recheck_add(&rc, 0, base + 8 * (2 * per + 3), (2 * per + 3) * 7, 8);
	recheck_add(&rc, 0, base + 8 * 1, 1 * 7, 8);
	recheck_add(&rc, 1, base + 8 * 9, 9 * 7, 8);
	recheck_add(&rc, 2, base + 8 * (per + 1), (per + 1) * 7, 8);
	memcpy(&map[20], &v32, 4);
	recheck_add(&rc, 3, base + 8 * 20, v32, 4);
	map[9] = 1;
	ck_assert_int_eq(munmap(map + per, pg), 0);
	recheck_run(&rc, m, bad, NULL, 4);
	ck_assert(!bad[0]);
	ck_assert(bad[1]);
	ck_assert(bad[2]);
	ck_assert(!bad[3]);
	/* Past RECHECK_MAX_WORDS: the owner that lost a word and those after
	 * it prove nothing. */
	recheck_reset(&rc);
	memset(bad, 0, sizeof(bad));
	for (int i = 0; i < RECHECK_MAX_WORDS; i++)
		recheck_add(&rc, 0, base + 8 * 5, 5 * 7, 8);
	recheck_add(&rc, 1, base + 8 * 5, 5 * 7, 8);
	recheck_run(&rc, m, bad, NULL, 3);
	ck_assert(!bad[0]);
	ck_assert(bad[1] && bad[2]);
	recheck_release(&rc);
	mem_close(m);
	munmap(map, pg);
	munmap(map + 2 * per, pg);
}
END_TEST

/* A word of the pages fake, as a recheck would keep it. */
static uint64_t word_at(const struct pages *p, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, &p->data[0][0] + (addr - BASE), 8);
	return v;
}

/* Owner o's two words (on page 1 + o and page 8), as the walk adds them. */
static void add_owner_words(struct recheck *rc, const struct pages *p, uint32_t o)
{
	recheck_add(rc, o, at(1 + (int)o, 16), word_at(p, at(1 + (int)o, 16)), 8);
	recheck_add(rc, o, at(8, 64 * o), word_at(p, at(8, 64 * o)), 8);
}

/* A stack whose words are its thread's last proved ones, word for word, is
 * proved without a read of them: none when every owner is so proved; one
 * word different, a word more or less, or an owner past the words that
 * fit is read and proved as ever; kept words are what the next match
 * compares with. */
START_TEST(test_recheck_match)
{
	struct pages *p = pages_new(true);
	struct recheck rc = { 0 };
	struct recheck_ref ref[3] = { { 0 } }, *refs[3] = { &ref[0], &ref[1], &ref[2] };
	bool known[3] = { false }, bad[3] = { false }, keep[3] = { true, true, true };
	int before;

	recheck_reset(&rc);
	for (uint32_t o = 0; o < 3; o++)
		add_owner_words(&rc, p, o);
	/* Nothing kept yet: nothing matches; kept, everything does. */
	recheck_match(&rc, refs, known, 3);
	ck_assert(!known[0] && !known[1] && !known[2]);
	recheck_keep(&rc, refs, keep, 3);
	ck_assert_uint_eq(ref[0].n, 2);
	ck_assert_uint_eq(ref[2].w[1].addr, at(8, 128));
	recheck_match(&rc, refs, known, 3);
	ck_assert(known[0] && known[1] && known[2]);
	before = calls(p);
	recheck_run(&rc, &p->mem, bad, known, 3);
	ck_assert_int_eq(calls(p), before);
	ck_assert(!bad[0] && !bad[1] && !bad[2]);

	/* Owner 1's walk saw another value (its stack moved), owner 2's ref
	 * lacks a word: both read again; owner 0's page changes under it,
	 * and as its words are its ref's it is not read. */
	recheck_reset(&rc);
	memset(known, 0, sizeof(known));
	add_owner_words(&rc, p, 0);
	recheck_add(&rc, 1, at(2, 16), 12345, 8);
	recheck_add(&rc, 1, at(8, 64), word_at(p, at(8, 64)), 8);
	add_owner_words(&rc, p, 2);
	ref[2].n = 1;
	memset(p->data[1], 'z', PAGE);
	recheck_match(&rc, refs, known, 3);
	ck_assert(known[0] && !known[1] && !known[2]);
	before = calls(p);
	recheck_run(&rc, &p->mem, bad, known, 3);
	ck_assert_int_eq(calls(p), before + 1);
	ck_assert(!bad[0] && bad[1] && !bad[2]);

	/* Owners out of order match nothing; nor an owner past the overflow. */
	recheck_reset(&rc);
	memset(known, 0, sizeof(known));
	recheck_keep(&rc, refs, keep, 3);	/* no words: refs as they were */
	ck_assert_uint_eq(ref[0].n, 2);
	recheck_add(&rc, 0, ref[0].w[0].addr, ref[0].w[0].value, 8);
	recheck_add(&rc, 1, ref[1].w[0].addr, ref[1].w[0].value, 8);
	recheck_add(&rc, 0, ref[0].w[1].addr, ref[0].w[1].value, 8);
	recheck_match(&rc, refs, known, 3);
	ck_assert(!known[0] && !known[1]);
	recheck_reset(&rc);
	for (uint32_t o = 0; o < 2; o++) {
		recheck_add(&rc, o, ref[o].w[0].addr, ref[o].w[0].value, 8);
		recheck_add(&rc, o, ref[o].w[1].addr, ref[o].w[1].value, 8);
	}
	rc.overflow = 1;
	recheck_match(&rc, refs, known, 3);
	ck_assert(known[0] && !known[1]);
	recheck_release(&rc);
	for (int o = 0; o < 3; o++)
		recheck_ref_release(&ref[o]);
	free(p);
}
END_TEST

/* Words on two pages just either side of their boundary, added out of
 * order (as a walk adds a data stack's frames, inner first): read as one
 * run, each still proves or fails its own owner. */
START_TEST(test_recheck_join)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t *map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)map, per = pg / 8;
	struct mem *m = mem_proc_open(getpid());
	struct recheck rc = { 0 };
	bool bad[3] = { false };

	ck_assert_ptr_ne(map, MAP_FAILED);
	for (uint64_t i = 0; i < 2 * per; i++)
		map[i] = i * 3;
	recheck_reset(&rc);
	recheck_add(&rc, 0, base + 8 * (per + 2), (per + 2) * 3, 8);
	recheck_add(&rc, 1, base + 8 * (per - 3), (per - 3) * 3, 8);
	recheck_add(&rc, 2, base + 8 * (per + 4), (per + 4) * 3, 8);
	map[per + 4] = 1;
	recheck_run(&rc, m, bad, NULL, 3);
	ck_assert(!bad[0]);
	ck_assert(!bad[1]);
	ck_assert(bad[2]);
	recheck_release(&rc);
	mem_close(m);
	munmap(map, 2 * pg);
}
END_TEST

/* Words kept for another run under new numbers (a torn stack's walks,
 * read again): a walk torn by one recheck is proved by the next once its
 * words hold again, a dropped owner's words are gone, and the owner that
 * lost a word stays unproved under its new number. */
START_TEST(test_recheck_renumber)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t *map = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)map;
	struct mem *m = mem_proc_open(getpid());
	struct recheck rc = { 0 };
	bool bad[3] = { false };
	uint32_t keep12[3] = { UINT32_MAX, 0, 1 }, keep1[2] = { UINT32_MAX, 0 };
	uint32_t keep0[2] = { 0, UINT32_MAX };

	ck_assert_ptr_ne(map, MAP_FAILED);
	for (long i = 0; i < pg / 8; i++)
		map[i] = (uint64_t)i;
	recheck_reset(&rc);
	recheck_add(&rc, 0, base + 8 * 1, 1, 8);
	recheck_add(&rc, 1, base + 8 * 2, 2, 8);
	recheck_add(&rc, 1, base + 8 * 3, 3, 8);
	recheck_add(&rc, 2, base + 8 * 4, 4, 8);
	map[2] = 99;
	recheck_run(&rc, m, bad, NULL, 3);
	ck_assert(!bad[0] && bad[1] && !bad[2]);
	/* 0 is dropped, 1 and 2 become 0 and 1; a new walk (2) is added. */
	recheck_renumber(&rc, keep12, 3);
	ck_assert_uint_eq(rc.n, 3);
	recheck_add(&rc, 2, base + 8 * 5, 5, 8);
	map[1] = 42;	/* the dropped owner's word: no longer looked at */
	map[2] = 2;	/* old owner 1 holds again */
	map[5] = 7;	/* the new walk is torn */
	memset(bad, 0, sizeof(bad));
	recheck_run(&rc, m, bad, NULL, 3);
	ck_assert(!bad[0] && !bad[1] && bad[2]);
	/* Past RECHECK_MAX_WORDS: owner 1 lost a word, and stays unproved
	 * as 0; dropping it instead clears the mark. */
	for (int drop = 0; drop < 2; drop++) {
		recheck_reset(&rc);
		for (int i = 0; i < RECHECK_MAX_WORDS; i++)
			recheck_add(&rc, 0, base + 8 * 1, 42, 8);
		recheck_add(&rc, 1, base + 8 * 1, 42, 8);
		ck_assert_uint_eq(rc.overflow, 1);
		recheck_renumber(&rc, drop ? keep0 : keep1, 2);
		ck_assert_uint_eq(rc.overflow, drop ? UINT32_MAX : 0);
		ck_assert_uint_eq(rc.n, drop ? RECHECK_MAX_WORDS : 0);
		memset(bad, 0, sizeof(bad));
		recheck_run(&rc, m, bad, NULL, 1);
		ck_assert(bad[0] == !drop);
	}
	recheck_release(&rc);
	mem_close(m);
	munmap(map, pg);
}
END_TEST

/* A frame's owner byte is proved with its pointers: a C stack slot on its
 * way to becoming an entry frame holds the trampoline's code and the
 * outer frame's address before its owner says "shim", and a walk that
 * saw it then showed the trampoline as a Python frame (3.12, seen once in
 * 56,620 samples of check_shifting). */
START_TEST(test_recheck_frame_owner)
{
	const struct py_layout *L = layout_for_minor(12);
	uint8_t *frames = calloc(2, 256);
	struct mem *m = mem_proc_open(getpid());
	struct recheck rc = { 0 };
	bool bad[2] = { false };

	ck_assert_ptr_nonnull(L);
	ck_assert_uint_ne(L->frame.owner, NONE);
	for (int k = 0; k < 2; k++) {
		uint64_t code = 0x1000 + k, back = 0x2000 + k;

		memcpy(frames + 256 * k + L->frame.code, &code, 8);
		memcpy(frames + 256 * k + L->frame.back, &back, 8);
		frames[256 * k + L->frame.owner] = 0;
	}
	recheck_reset(&rc);
	recheck_frame(&rc, 0, m, L, (uint64_t)(uintptr_t)frames, true);
	recheck_frame(&rc, 1, m, L, (uint64_t)(uintptr_t)(frames + 256), true);
	frames[256 + L->frame.owner] = (uint8_t)L->frame.owner_shim;
	recheck_run(&rc, m, bad, NULL, 2);
	ck_assert(!bad[0]);
	ck_assert(bad[1]);
	recheck_release(&rc);
	mem_close(m);
	free(frames);
}
END_TEST

/* recheck_frame() through the walk's reader (the page cache, whose bytes it
 * takes in place): each of a frame's words is proved on its own (back,
 * code, owner, and lasti but for the innermost frame), on layouts with and
 * without an owner byte and with a 4-byte and an 8-byte lasti, and a frame
 * whose words do not fit leaves its owner unproved. */
START_TEST(test_recheck_frame_words)
{
	static const int minors[] = { 9, 10, 12, 14 };
	struct mem *direct = mem_proc_open(getpid()), *under = mem_proc_open(getpid());
	struct mem *m = mem_cache_new(under);
	uint8_t *frames = calloc(2, 256);
	struct recheck rc = { 0 };

	for (size_t i = 0; i < sizeof(minors) / sizeof(*minors); i++) {
		const struct py_layout *L = layout_for_minor(minors[i]);
		uint32_t offs[] = { L->frame.back, L->frame.code, L->frame.lasti, L->frame.owner };
		int nf = L->frame.owner != NONE ? 4 : 3;

		for (int change = -1; change < nf; change++) {
			for (int innermost = 0; innermost < 2; innermost++) {
				bool bad[2] = { false, false };

				memset(frames, 0x11, 512);
				mem_cache_reset(m);
				recheck_reset(&rc);
				recheck_frame(&rc, 0, m, L, (uint64_t)(uintptr_t)frames, innermost);
				recheck_frame(&rc, 1, m, L, (uint64_t)(uintptr_t)(frames + 256), true);
				if (change >= 0)
					frames[offs[change]] ^= 0x40;
				recheck_run(&rc, direct, bad, NULL, 2);
				ck_assert_msg(bad[0] == (change >= 0 && !(change == 2 && innermost)),
					      "3.%d: field %d changed, innermost %d: bad %d",
					      minors[i], change, innermost, bad[0]);
				ck_assert(!bad[1]);
			}
		}
	}
	recheck_reset(&rc);
	for (int i = 0; i < RECHECK_MAX_WORDS - 1; i++)
		recheck_add(&rc, 0, (uint64_t)(uintptr_t)frames, 0x1111111111111111ull, 8);
	recheck_frame(&rc, 1, m, layout_for_minor(12), (uint64_t)(uintptr_t)frames, true);
	ck_assert_uint_eq(rc.overflow, 1);
	ck_assert_uint_eq(rc.n, RECHECK_MAX_WORDS - 1);
	recheck_release(&rc);
	mem_close(m);
	mem_close(under);
	mem_close(direct);
	free(frames);
}
END_TEST

/* A frame's words from its fields as the walk read them are the words
 * recheck_frame() takes from memory, on every layout (a tagged code
 * pointer kept as the word it was, a 4-byte offset, an owner byte), so
 * that a walk's words match the last proved ones however they were made. */
START_TEST(test_recheck_frame_read)
{
	static const int minors[] = { 9, 10, 11, 12, 13, 14, 15 };
	struct mem *under = mem_proc_open(getpid()), *m = mem_cache_new(under);
	uint8_t *frame = calloc(1, 256);
	struct recheck a = { 0 }, b = { 0 };

	for (int k = 0; k < 256; k++)
		frame[k] = (uint8_t)(k * 37 + 5);
	for (size_t i = 0; i < sizeof(minors) / sizeof(*minors); i++) {
		const struct py_layout *L = layout_for_minor(minors[i]);
		uint64_t at = (uint64_t)(uintptr_t)frame;
		struct raw_frame rf;

		for (int innermost = 0; innermost < 2; innermost++) {
			mem_cache_reset(m);
			recheck_reset(&a);
			recheck_reset(&b);
			ck_assert_int_eq(read_raw_frame(m, L, at, &rf), 0);
			recheck_frame(&a, 3, m, L, at, innermost);
			recheck_frame_read(&b, 3, L, at, &rf, innermost);
			ck_assert_uint_eq(a.n, b.n);
			for (size_t w = 0; w < a.n; w++)
				ck_assert_msg(a.w[w].addr == b.w[w].addr && a.w[w].value == b.w[w].value &&
					      a.w[w].size == b.w[w].size && a.w[w].owner == b.w[w].owner,
					      "3.%d, innermost %d: word %zu differs", minors[i],
					      innermost, w);
		}
	}
	recheck_release(&a);
	recheck_release(&b);
	mem_close(m);
	mem_close(under);
	free(frame);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mem");
	TCase *tc = tcase_create("cache");

	tcase_add_test(tc, test_repeat_is_one_call);
	tcase_add_test(tc, test_log_pages);
	tcase_add_test(tc, test_fetch_hints);
	tcase_add_test(tc, test_prefetch_sees_new_bytes);
	tcase_add_test(tc, test_forget);
	tcase_add_test(tc, test_exact_ranges);
	tcase_add_test(tc, test_more_pages_than_slots);
	tcase_add_test(tc, test_prefetch_full_window);
	tcase_add_test(tc, test_unmapped_page_skipped);
	tcase_add_test(tc, test_many_unmapped);
	tcase_add_test(tc, test_unused_pages_dropped);
	tcase_add_test(tc, test_reader_without_batch);
	tcase_add_test(tc, test_process_gone);
	tcase_add_test(tc, test_peek);
	suite_add_tcase(s, tc);
	tc = tcase_create("proc");
	tcase_add_test(tc, test_proc_batch);
	tcase_add_test(tc, test_recheck);
	tcase_add_test(tc, test_recheck_join);
	tcase_add_test(tc, test_recheck_match);
	tcase_add_test(tc, test_recheck_frame_read);
	tcase_add_test(tc, test_recheck_renumber);
	tcase_add_test(tc, test_recheck_frame_owner);
	tcase_add_test(tc, test_recheck_frame_words);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
