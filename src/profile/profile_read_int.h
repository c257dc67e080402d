/* What the readers of profile_read.c share: the state of one read, its
 * one error line, and the stack being built.  profile_read.c tells the
 * formats apart and gunzips; each format is read in a file of its own,
 * as each is written in one (in_collapsed.c, in_pprof.c, in_flamegraph.c;
 * a flight recording in flightrec_read.c).  Internal to src/profile: the
 * callers see only profile_read.h. */
#ifndef PYSTROBE_PROFILE_READ_INT_H
#define PYSTROBE_PROFILE_READ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile_read.h"
#include "profile/flightrec.h"
#include "profile/profile.h"

struct reader {
	const char *name;
	char *err;
	size_t errlen;
	struct profile *p;
	uint32_t stack[PROFILE_READ_DEPTH + 1];
	uint32_t depth;
	const struct flightrec_slice *slice;	/* NULL: the whole file */
	struct flightrec_info *info;		/* of a flight recording */
	bool recording;
};

/* --- profile_read.c ----------------------------------------------------- */

/* The message "NAME: what" in r's err; returns -1. */
int reader_fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The stack being built, root first: a frame, by id or interned, then
 * count samples of it (a message names where on failure). */
void reader_push_id(struct reader *r, uint32_t id);
void reader_push_frame(struct reader *r, const struct pframe *f);
int reader_end_stack(struct reader *r, uint64_t count, const char *where);

/* A frame's name with pystrobe's escapes undone (new). */
char *reader_unescape(const char *s, size_t len);

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* --- the readers, one file each ----------------------------------------- */

/* A decimal count [s, e): 0, or -1 when it is not one (in_collapsed.c). */
int reader_parse_count(const char *s, const char *e, uint64_t *out);

/* Folded stacks (in_collapsed.c); line numbers in messages count from
 * first_line + 1. */
int read_folded(struct reader *r, const char *data, size_t len, size_t first_line);

/* pprof's protobuf, uncompressed (in_pprof.c). */
int read_pprof_proto(struct reader *r, const uint8_t *data, size_t len);

/* The stacks a flame graph of pystrobe's carries (in_flamegraph.c). */
int read_svg(struct reader *r, const char *data, size_t len);

#endif
