/* Mapping bytecode offsets to source lines, for each line-table format
 * CPython has used.  The table bytes come from the target and may be garbage:
 * every decoder is bounded by len and returns -1 rather than guess.
 */
#ifndef PYSTROBE_LINETABLE_H
#define PYSTROBE_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

enum lt_format {
	LT_LNOTAB,	/* 3.7–3.9: co_lnotab (byte increment, line increment) pairs */
	LT_LINETABLE,	/* 3.10: co_linetable (byte delta, line delta; -128 = no line) */
	LT_LOCATIONS,	/* 3.11+: co_linetable location entries (PEP 657) */
};

/* The line of the instruction starting at byte offset `offset` of the code
 * object's bytecode, given its co_firstlineno and its table.  Returns the line
 * (>= 0), or -1 when the instruction has no line or the table is malformed or
 * does not reach that offset. */
int linetable_line(enum lt_format fmt, const uint8_t *table, size_t len,
		   int firstlineno, uint32_t offset);

/* A whole table decoded once, for code objects whose lines are asked for
 * again and again (the sampler, deep recursion): linetable_line() scans
 * from the start of the table on every call, which for long tables and
 * many frames costs more than everything else in a sample.  The ranges
 * give exactly the answers linetable_line() gives, for any bytes. */
struct lt_range {
	uint64_t end;		/* the range ends before this offset */
	int line;		/* its line, or -1 */
};

struct lt_ranges {
	struct lt_range *r;	/* ends increasing; a range starts where the
				 * previous one ends (the first at 0) */
	size_t n;
	int tail;		/* the line past the last range, or -1 */
};

/* Decode the table into *out (free with linetable_ranges_free()).  Returns
 * 0, or -1 when out of memory (*out then answers -1 everywhere). */
int linetable_ranges(enum lt_format fmt, const uint8_t *table, size_t len,
		     int firstlineno, struct lt_ranges *out);

/* What linetable_line() would say for this offset: a binary search. */
int linetable_ranges_line(const struct lt_ranges *rs, uint32_t offset);

void linetable_ranges_free(struct lt_ranges *rs);

#endif
