/* The input formats of the fuzz harnesses, shared by the harnesses (which
 * parse them) and the seed writers mkseeds and capture (which write them).
 *
 * Every format that carries target memory ends in a list of regions:
 *
 *	[addr u64][len u32][rflags u8][len bytes] ...
 *
 * all little-endian.  A region whose len runs past the end of the input is
 * cut to what is there; a region of length 0, or one overlapping a region
 * already added, is skipped; at most FZ_MAX_REGIONS are used.  rflags bit 0
 * keeps a region out of the first snapshot, bit 1 out of the second (see
 * fuzz_walk.c: the code cache is checked across two snapshots).
 *
 * fuzz_walk:	"PSW1" [minor u8][flags u8][max_depth u16][runtime u64] regions
 * fuzz_pyobj:	"PSO1" [minor u8][flags u8][keylen u8][pad u8][addr u64]
 *		[intkey i64][key: keylen bytes] regions
 * fuzz_asyncio: "PSA1" [minor u8][flags u8][pad u16][runtime u64]
 *		[the .AsyncioDebug section: 104 bytes (3.14+)] regions
 * fuzz_linetable: [fmt u8][firstlineno i32][offset u32] table bytes
 * fuzz_debug_offsets: the table itself (the first 1024 bytes)
 */
#ifndef PYSTROBE_FUZZMEM_H
#define PYSTROBE_FUZZMEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "process/mem.h"

#define FZ_WALK_MAGIC "PSW1"
#define FZ_PYOBJ_MAGIC "PSO1"
#define FZ_ASYNCIO_MAGIC "PSA1"
#define FZ_WALK_HDR 16
#define FZ_ASYNCIO_HDR (16 + 104)	/* the header, then the section */
#define FZ_PYOBJ_HDR 24

/* Bounds on what one input may describe: enough for a capture of a real
 * process (a few hundred ranges), small enough that the linear lookups in
 * mem_fake stay cheap. */
#define FZ_MAX_REGIONS 512
#define FZ_REGION_HDR 13

/* fuzz_walk flags. */
#define FZW_DEBUG_OFFSETS 0x01	/* 3.13+: take the layout from _Py_DebugOffsets */
#define FZW_MEM_CACHE	  0x02	/* read through mem_cache, as the sampler does */
#define FZW_BY_FUNCTION	  0x04	/* code cache aggregates by function */
#define FZW_TWO_PHASE	  0x08	/* sample again on the second snapshot */

/* fuzz_asyncio flags. */
#define FZA_TWO_PHASE	0x01	/* a second snapshot: re-checks and memo rounds */
#define FZA_RECHECK	0x02	/* the memo rounds re-check tasks (--nonblocking) */
#define FZA_DEBUG_OFFSETS 0x04	/* 3.13: take the layout from _Py_DebugOffsets */

/* Region flags. */
#define FZR_NOT_FIRST	0x01
#define FZR_NOT_SECOND	0x02

static inline uint64_t fz_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint32_t fz_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint16_t fz_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* A minor version 7..14 from any byte: the seeds carry the real one. */
static inline int fz_minor(uint8_t b)
{
	return b >= 7 && b <= 14 ? b : 7 + b % 8;
}

/* fuzz_asyncio's minor version, 11..15 from any byte (the seeds carry the
 * real one): 11-13 the legacy reader's, 14 and 15 asyncio314.c's. */
static inline int fz_asyncio_minor(uint8_t b)
{
	return b >= 11 && b <= 15 ? b : 11 + b % 5;
}

/* Add the regions in [p, p + n) to first (and to second when not NULL).
 * Returns the number of regions read. */
static inline int fz_add_regions(const uint8_t *p, size_t n, struct mem *first,
				 struct mem *second)
{
	int count = 0;

	while (n >= FZ_REGION_HDR && count < FZ_MAX_REGIONS) {
		uint64_t addr = fz_le64(p);
		size_t len = fz_le32(p + 8);
		uint8_t rf = p[12];

		p += FZ_REGION_HDR;
		n -= FZ_REGION_HDR;
		if (len > n)
			len = n;
		if (len) {
			/* Overlaps and wrapping ranges are refused by
			 * mem_fake_add: such a region is simply not there. */
			if (!(rf & FZR_NOT_FIRST))
				mem_fake_add(first, addr, p, len);
			if (second && !(rf & FZR_NOT_SECOND))
				mem_fake_add(second, addr, p, len);
		}
		p += len;
		n -= len;
		count++;
	}
	return count;
}

/* --- writing -------------------------------------------------------------- */

static inline void fz_put64(FILE *f, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		fputc((int)(v >> (8 * i)) & 0xff, f);
}

static inline void fz_put32(FILE *f, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		fputc((int)(v >> (8 * i)) & 0xff, f);
}

static inline void fz_put16(FILE *f, uint16_t v)
{
	fputc(v & 0xff, f);
	fputc(v >> 8, f);
}

static inline void fz_put_region(FILE *f, uint64_t addr, const void *data, uint32_t len,
				 uint8_t rflags)
{
	fz_put64(f, addr);
	fz_put32(f, len);
	fputc(rflags, f);
	fwrite(data, 1, len, f);
}

static inline void fz_put_walk_header(FILE *f, int minor, uint8_t flags, uint16_t max_depth,
				      uint64_t runtime)
{
	fwrite(FZ_WALK_MAGIC, 1, 4, f);
	fputc(minor, f);
	fputc(flags, f);
	fz_put16(f, max_depth);
	fz_put64(f, runtime);
}

/* A reader that forwards to whichever snapshot is current (harnesses that
 * read two snapshots through one reader, as memory changes between
 * samples). */
struct fz_switch {
	struct mem mem;
	struct mem *cur;
};

static inline int fz_switch_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return mem_read(((struct fz_switch *)m)->cur, addr, buf, len);
}

static inline void fz_switch_close(struct mem *m)
{
	(void)m;	/* on the stack; the snapshots are closed by their owner */
}

#define FZ_SWITCH_INIT { .mem = { .read = fz_switch_read, .close = fz_switch_close } }

static inline void fz_put_asyncio_header(FILE *f, int minor, uint8_t flags, uint64_t runtime,
					 const uint8_t *section)
{
	fwrite(FZ_ASYNCIO_MAGIC, 1, 4, f);
	fputc(minor, f);
	fputc(flags, f);
	fz_put16(f, 0);
	fz_put64(f, runtime);
	fwrite(section, 1, FZ_ASYNCIO_HDR - 16, f);
}

#endif
