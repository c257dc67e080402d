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

#include <stdbool.h>
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

/* What Thread.__repr__ shows, as read from a thread object's __dict__. */
struct repr_thread {
	const char *cls;	/* its class's name: "Thread", "_MainThread" */
	const char *name;	/* _name, UTF-8 */
	bool started;		/* _started.is_set() */
	bool stopped;		/* _is_stopped (3.7 to 3.12) */
	bool daemon;		/* _daemonic */
	bool has_ident;		/* _ident is not None */
	uint64_t ident;
};

/* "<Thread(worker-1, started daemon 140234)>": Thread.__repr__'s form. */
void repr_thread(struct strbuf *sb, const struct repr_thread *t);

/* " (N characters)" or " (N bytes)", " (200 MiB)": the cut mark. */
void repr_cut_mark(struct strbuf *sb, uint64_t whole, const char *unit);

#endif
