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

#endif
