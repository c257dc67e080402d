/* Reading JSON back: a bounded parser into a tree.
 *
 * What it reads comes from other machines (a node's dump, a file a user
 * collected with kubectl or pdsh): hostile.  One pass, memory linear in
 * the input, nesting at most JSON_MAX_DEPTH, input at most JSON_MAX_INPUT
 * bytes; an error names the byte offset where the text went wrong.
 *
 * The tree is two arrays, the nodes and the strings' bytes: the members
 * of an object or array are contiguous, so a document is two allocations
 * whatever its size, and freeing it is two free()s.
 *
 *	struct jdoc d = JDOC_INIT;
 *	if (jdoc_parse(&d, text, len, err, sizeof(err)) < 0) ...
 *	const struct jv *pid = jv_get(&d, jdoc_root(&d), "pid");
 *	jdoc_release(&d);
 */
#ifndef PYSTROBE_JSONREAD_H
#define PYSTROBE_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_INPUT (256u << 20)

/* JV_RAW: a member named in jdoc's raw_keys, checked but not built: its
 * text, for a caller that has usually met the same text before; i: the
 * name known_raw gave it (0: none), depth: its nesting in the document. */
enum jv_type { JV_NULL, JV_FALSE, JV_TRUE, JV_NUM, JV_STR, JV_ARR, JV_OBJ, JV_RAW };

struct jv {
	uint8_t type;
	bool exact;		/* JV_NUM: an integer that fits in i */
	uint8_t depth;		/* JV_RAW */
	uint32_t n;		/* JV_ARR, JV_OBJ: members; JV_STR, JV_RAW: bytes */
	uint32_t at;		/* JV_ARR, JV_OBJ: first member's node; JV_STR: its bytes;
				   JV_RAW: its offset in the text */
	uint32_t key;		/* a member of an object: its name's bytes */
	int64_t i;
	double num;
};

struct jdoc {
	struct jv *v;
	char *str;
	size_t nv, valloc, nstr, salloc;
	struct jv *scr;		/* the parser's: members of the containers open */
	size_t scralloc;
	/* Set by the caller: object members of these names (NULL-ended)
	 * are JV_RAW, their text pointing into the text parsed. */
	const char *const *raw_keys;
	/* Set by the caller, with raw_keys: the raw texts it met before.
	 * For the raw member of an array or object at text (avail bytes
	 * left), the length of such a text that text begins with, which
	 * was a JV_RAW array or object of a document at a depth no less
	 * than depth; *name: the caller's (non-zero) name for it, put in
	 * the member's i.  0 if none.  Those bytes are not read again: the
	 * same bytes are the same JSON. */
	size_t (*known_raw)(void *ctx, const char *text, size_t avail, int depth, int64_t *name);
	void *known_ctx;
	const char *text;
	bool dry;		/* the parser's: checking a raw value, storing nothing */
};
#define JDOC_INIT { NULL, NULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL, NULL, false }

/* Parse len bytes of text (no NUL needed) into d, replacing what it held
 * (its memory is kept for the next: a job's thousands of documents are
 * parsed into one): 0, or -EINVAL with "byte N: what was wrong" in err. */
int jdoc_parse(struct jdoc *d, const char *text, size_t len, char *err, size_t errlen);
/* One value from byte start of text, and the whitespace after it; *end:
 * where the next begins (len at the end).  For documents one after
 * another (JSON Lines, a pipe from many hosts).  Offsets in err are from
 * the start of text. */
int jdoc_parse_next(struct jdoc *d, const char *text, size_t len, size_t start, size_t *end,
		    char *err, size_t errlen);
void jdoc_release(struct jdoc *d);

const struct jv *jdoc_root(const struct jdoc *d);
/* An object's member called key, NULL when v is no object or has none. */
const struct jv *jv_get(const struct jdoc *d, const struct jv *v, const char *key);
/* An array's or object's i-th member, NULL past the end. */
const struct jv *jv_at(const struct jdoc *d, const struct jv *v, size_t i);
size_t jv_len(const struct jv *v);	/* members; 0 for a scalar or NULL */
/* A JV_RAW value's text and its length (valid while the text parsed
 * is), else NULL. */
const char *jv_raw(const struct jdoc *d, const struct jv *v, size_t *len);
/* A string's bytes (UTF-8, NUL-terminated, no NUL inside), else NULL. */
const char *jv_str(const struct jdoc *d, const struct jv *v);
/* A member's name (NULL outside an object). */
const char *jv_key(const struct jdoc *d, const struct jv *v);
/* An integer in [lo, hi] into *out: true, else false (and *out unchanged). */
bool jv_int(const struct jv *v, int64_t lo, int64_t hi, int64_t *out);
bool jv_is(const struct jv *v, enum jv_type t);

#endif
