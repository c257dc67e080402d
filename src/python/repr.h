/* Python's repr() of values already read out of the target: the text
 * CPython itself would print, character for character (for str, with the
 * printability of util/unicode.h's Unicode version).  No target access
 * here, so the formatting is tested on synthetic input alone.
 *
 * A value known only in part (the first n of `whole` characters or bytes)
 * is shown as the repr of that part, then a mark with the whole length:
 * 'abc'… (1048576 characters), b'\x00'… (200 MiB).
 */
#ifndef PYSTROBE_REPR_H
#define PYSTROBE_REPR_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* Ints wider than this are shown as "<int of N bits>". */
#define REPR_INT_MAX_BITS 2048
/* 30-bit digits of the widest int shown in decimal. */
#define REPR_INT_MAX_DIGITS ((REPR_INT_MAX_BITS + 29) / 30)

void repr_str(struct strbuf *sb, const uint32_t *cps, size_t n, uint64_t whole);
void repr_bytes(struct strbuf *sb, const uint8_t *b, size_t n, uint64_t whole);
void repr_float(struct strbuf *sb, double d);

/* An int from its sign (-1, 0, 1) and nd 30-bit digits, least significant
 * first (CPython's own form); at most REPR_INT_MAX_BITS wide. */
void repr_int(struct strbuf *sb, int sign, const uint32_t *digits, size_t nd);
/* The placeholder for a wider one, from its width in bits. */
void repr_int_bits(struct strbuf *sb, int sign, uint64_t bits);

/* " (N characters)" or " (N bytes)", " (200 MiB)": the cut mark. */
void repr_cut_mark(struct strbuf *sb, uint64_t whole, const char *unit);

#endif
