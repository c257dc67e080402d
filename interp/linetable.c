/* Bytecode offset -> source line, for the three line-table formats.
 *
 * Each decoder walks the table from the start, as the interpreter does: the
 * tables are delta-encoded, so there is no shortcut (but a table decoded
 * once into ranges answers any offset by a binary search).  The bytes were copied
 * out of a process we do not trust to be consistent (it may be mid-update, or
 * we may have read the wrong address), so every read is checked against len,
 * every loop moves forward, and arithmetic is done wide enough that no input
 * can overflow it.  Anything that does not decode cleanly gives -1: a wrong
 * line in a profile is worse than a missing one.
 */
#include "interp/linetable.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

static int checked_line(int64_t line)
{
	if (line < 0 || line > INT_MAX)
		return -1;
	return (int)line;
}

/*
 * Each format is walked by one function that hands every address range it
 * passes, with its line, to a visitor: linetable_line() stops at the range
 * holding its offset, linetable_ranges() keeps them all.  One walk per
 * format means the two can never disagree.
 */
struct lt_visit {
	/* Called for each range [previous end, end); true stops the walk. */
	bool (*range)(struct lt_visit *v, uint64_t end, int line);
	int tail;		/* the line past the last range the walk gave */
};

/*
 * 3.7-3.9 co_lnotab: (address increment, line increment) byte pairs, the line
 * increment signed.  A big jump is split over several pairs, one of the two
 * increments zero, so a line only takes effect once the address has moved
 * past the query.  The table has no end marker: the last line runs to the end
 * of the bytecode, so any offset has a line.
 */
static void lnotab_walk(struct lt_visit *v, const uint8_t *t, size_t len, int firstlineno)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;

	if (len % 2)
		return;
	for (size_t i = 0; i < len; i += 2) {
		addr += t[i];
		if (v->range(v, addr, checked_line(line)))
			return;
		line += (int8_t)t[i + 1];
	}
	v->tail = checked_line(line);
}

/*
 * 3.10 co_linetable: (length in bytes, line delta) pairs; each pair with a
 * non-zero length is an address range of its own.  Zero-length pairs only
 * carry line deltas too big for one byte.  A delta of -128 marks a range with
 * no line, and leaves the running line where it was for the next range.
 */
static void linetable310_walk(struct lt_visit *v, const uint8_t *t, size_t len,
			      int firstlineno)
{
	int64_t line = firstlineno;
	uint64_t end = 0;

	if (len % 2)
		return;
	for (size_t i = 0; i < len; i += 2) {
		int delta = (int8_t)t[i + 1];
		bool no_line = delta == -128;

		if (!no_line)
			line += delta;
		if (!t[i])
			continue;
		end += t[i];
		if (v->range(v, end, no_line ? -1 : checked_line(line)))
			return;
	}
}

/* Location-table entries start with a byte that has the top bit set; the
 * bytes that follow within an entry never do. */
#define LOC_ENTRY_START		0x80
#define LOC_CODE(b)		(((b) >> 3) & 15)
#define LOC_UNITS(b)		(((b) & 7) + 1)
#define LOC_NO_COLUMNS		13
#define LOC_LONG		14
#define LOC_NONE		15

/*
 * A varint of 6-bit chunks, least significant first, 0x40 meaning more follow.
 * It ends inside its entry: running into the next entry's first byte or off
 * the table is a broken table, not something to read through.  No real line
 * delta needs more than 32 bits, so a longer varint is refused rather than
 * shifted into undefined behaviour.
 */
static bool read_varint(const uint8_t *t, size_t len, size_t pos, uint32_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift <= 30; shift += 6) {
		uint8_t b;

		if (pos >= len || (t[pos] & LOC_ENTRY_START))
			return false;
		b = t[pos++];
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64)) {
			if (v > UINT32_MAX)
				return false;
			*out = (uint32_t)v;
			return true;
		}
	}
	return false;
}

/* Signed varints keep the sign in the low bit, so small negative deltas
 * (a loop jumping back a few lines) stay one byte long. */
static bool read_svarint(const uint8_t *t, size_t len, size_t pos, int64_t *out)
{
	uint32_t v;

	if (!read_varint(t, len, pos, &v))
		return false;
	*out = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
	return true;
}

/*
 * 3.11+ PEP 657 location table.  Each entry covers 1-8 code units (cache
 * entries included) and says how the line moves from the previous entry's;
 * the column information that follows is of no use to us and is skipped by
 * looking for the next entry's start byte.  The line sticks across an entry
 * with no location, which later entries count from.  A broken entry ends
 * the walk: nothing past it has a line.
 */
static void locations_walk(struct lt_visit *v, const uint8_t *t, size_t len, int firstlineno)
{
	int64_t line = firstlineno;
	uint64_t end = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = t[i];
		int code = LOC_CODE(b);
		int64_t delta = 0;

		if (!(b & LOC_ENTRY_START))
			return;
		if (code == LOC_NO_COLUMNS || code == LOC_LONG) {
			if (!read_svarint(t, len, i + 1, &delta))
				return;
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		end += 2 * LOC_UNITS(b);
		if (v->range(v, end, code == LOC_NONE ? -1 : checked_line(line)))
			return;
		do
			i++;
		while (i < len && !(t[i] & LOC_ENTRY_START));
	}
}

static void walk(enum lt_format fmt, struct lt_visit *v, const uint8_t *table, size_t len,
		 int firstlineno)
{
	v->tail = -1;
	if (!table && len)
		return;
	switch (fmt) {
	case LT_LNOTAB:
		lnotab_walk(v, table, len, firstlineno);
		break;
	case LT_LINETABLE:
		linetable310_walk(v, table, len, firstlineno);
		break;
	case LT_LOCATIONS:
		locations_walk(v, table, len, firstlineno);
		break;
	}
}

/* --- one offset ------------------------------------------------------------ */

struct line_query {
	struct lt_visit v;
	uint32_t offset;
	bool found;
	int line;
};

static bool query_range(struct lt_visit *v, uint64_t end, int line)
{
	struct line_query *q = (struct line_query *)v;

	if (q->offset >= end)
		return false;
	q->found = true;
	q->line = line;
	return true;
}

int linetable_line(enum lt_format fmt, const uint8_t *table, size_t len,
		   int firstlineno, uint32_t offset)
{
	struct line_query q = { { query_range, -1 }, offset, false, -1 };

	walk(fmt, &q.v, table, len, firstlineno);
	return q.found ? q.line : q.v.tail;
}

/* --- whole tables ----------------------------------------------------------
 *
 * Empty ranges are dropped and neighbours with the same line merged, so a
 * real table shrinks to about one range per line; a hostile one is at most
 * one range per table entry.
 */

struct ranges_builder {
	struct lt_visit v;
	struct lt_ranges *rs;
	size_t cap;
	bool failed;
};

static bool push_range(struct lt_visit *v, uint64_t end, int line)
{
	struct ranges_builder *b = (struct ranges_builder *)v;
	struct lt_ranges *rs = b->rs;
	struct lt_range *r;

	/* Empty: never the first to reach past an offset. */
	if (rs->n ? end <= rs->r[rs->n - 1].end : !end)
		return false;
	if (rs->n && rs->r[rs->n - 1].line == line) {
		rs->r[rs->n - 1].end = end;
		return false;
	}
	if (rs->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;

		r = realloc(rs->r, cap * sizeof(*r));
		if (!r) {
			b->failed = true;
			return true;
		}
		rs->r = r;
		b->cap = cap;
	}
	rs->r[rs->n++] = (struct lt_range){ end, line };
	return false;
}

int linetable_ranges(enum lt_format fmt, const uint8_t *table, size_t len,
		     int firstlineno, struct lt_ranges *out)
{
	struct ranges_builder b = { { push_range, -1 }, out, 0, false };

	out->r = NULL;
	out->n = 0;
	walk(fmt, &b.v, table, len, firstlineno);
	out->tail = b.v.tail;
	if (!b.failed)
		return 0;
	linetable_ranges_free(out);
	return -1;
}

int linetable_ranges_line(const struct lt_ranges *rs, uint32_t offset)
{
	size_t lo = 0, hi = rs->n;

	/* The first range that ends past the offset. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rs->r[mid].end > offset)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < rs->n ? rs->r[lo].line : rs->tail;
}

void linetable_ranges_free(struct lt_ranges *rs)
{
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
	rs->tail = -1;
}
