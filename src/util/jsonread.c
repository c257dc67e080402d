/* Reading JSON back: a bounded recursive-descent parser (jsonread.h).
 *
 * Recursion is bounded by JSON_MAX_DEPTH, so the C stack is too.  The
 * members of a container are parsed onto a scratch stack and moved into
 * the node array when the container closes: each node is copied once,
 * and the members of every container end up contiguous. */
#include "util/jsonread.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const unsigned char *s;
	size_t len, pos;
	struct jdoc *d;
	size_t nscr;		/* members in d->scr, of the containers still open */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(p->err, p->errlen, "byte %zu: ", p->pos);

	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* What stands at the parser's position, for messages. */
static const char *found(const struct parser *p)
{
	return p->pos >= p->len ? "the end of the text" : "something else";
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static void str_add(struct jdoc *d, const void *b, size_t n)
{
	if (!n || d->dry)
		return;	/* memcpy() to the NULL of an empty store is undefined */
	ALLOC_GROW(d->str, d->nstr + n, d->salloc);
	memcpy(d->str + d->nstr, b, n);
	d->nstr += n;
}

static void str_cp(struct jdoc *d, uint32_t cp)
{
	struct strbuf sb = STRBUF_INIT;

	sb_add_utf8(&sb, cp);
	str_add(d, sb.buf, sb.len);
	sb_release(&sb);
}

static int hex4(struct parser *p, uint32_t *cp)
{
	*cp = 0;
	for (int k = 0; k < 4; k++) {
		unsigned c = p->pos < p->len ? p->s[p->pos] : 0;
		int v = c >= '0' && c <= '9' ? (int)c - '0' :
			(c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (int)(c | 0x20) - 'a' + 10 : -1;

		if (v < 0)
			return fail(p, "\\u wants four hex digits");
		*cp = *cp << 4 | (uint32_t)v;
		p->pos++;
	}
	return 0;
}

/* \uXXXX, a surrogate pair as one character; a lone surrogate becomes
 * U+FFFD (sb_add_utf8) as the writer's does for bytes that are not UTF-8. */
static int unicode_escape(struct parser *p)
{
	uint32_t cp, lo;

	if (hex4(p, &cp) < 0)
		return -EINVAL;
	if (cp == 0)
		return fail(p, "\\u0000: a NUL inside a string");
	if (cp >= 0xd800 && cp < 0xdc00 && p->pos + 1 < p->len && p->s[p->pos] == '\\' &&
	    p->s[p->pos + 1] == 'u') {
		size_t back = p->pos;

		p->pos += 2;
		if (hex4(p, &lo) < 0)
			return -EINVAL;
		if (lo >= 0xdc00 && lo < 0xe000)
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		else
			p->pos = back;	/* not a pair: the second is read on its own */
	}
	str_cp(p->d, cp);
	return 0;
}

static int escape(struct parser *p)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *c;

	if (p->pos >= p->len)
		return fail(p, "the text ends inside a string");
	if (p->s[p->pos] == 'u') {
		p->pos++;
		return unicode_escape(p);
	}
	c = p->s[p->pos] ? strchr(from, p->s[p->pos]) : NULL;
	if (!c)
		return fail(p, "unknown escape \\%c", p->s[p->pos] >= 0x20 && p->s[p->pos] < 0x7f
			    ? p->s[p->pos] : '?');
	str_add(p->d, &to[c - from], 1);
	p->pos++;
	return 0;
}

/* One raw byte or UTF-8 character; bytes that are not UTF-8 become
 * U+FFFD, never passed on as they are. */
static int raw_char(struct parser *p)
{
	char buf[5] = { 0 };
	size_t n = p->len - p->pos < 4 ? p->len - p->pos : 4;
	int k;

	if (p->s[p->pos] < 0x20)
		return fail(p, "a control character inside a string");
	memcpy(buf, p->s + p->pos, n);
	k = utf8_char(buf, NULL);
	if (k <= 0) {
		str_cp(p->d, 0xfffd);
		p->pos++;
		return 0;
	}
	str_add(p->d, buf, (size_t)k);
	p->pos += (size_t)k;
	return 0;
}

/* The bytes a string holds as they are: printable ASCII but the quote
 * and the backslash.  A table, as this loop reads most of every byte. */
static const bool plain[256] = {
	[0x20 ... 0x21] = true, [0x23 ... 0x5b] = true, [0x5d ... 0x7e] = true,	/* not " or \\ */
};

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Eight bytes of s as one word, the first byte the lowest. */
static uint64_t load8(const unsigned char *s)
{
	uint64_t w;

	memcpy(&w, s, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* The bytes of w that end a run of plain ones, each marked by its high
 * bit: a quote, a backslash, a control character and, with high, 0x80 and
 * above.  A borrow only runs upwards from a byte that is marked rightly,
 * so the lowest mark is always right: the only one read. */
static uint64_t unplain8(uint64_t w, bool high)
{
	uint64_t q = w ^ ONES * '"', b = w ^ ONES * '\\';
	uint64_t m = ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w);

	return (m | (high ? w : 0)) & HIGHS;
}

/* From i, the first byte that is not plain (as unplain8 says), or len:
 * eight bytes a step, as this reads most of every document. */
static inline __attribute__((always_inline)) size_t plain_run(const unsigned char *s, size_t i, size_t len, bool high)
{
	for (; len - i >= 8; i += 8) {
		uint64_t m = unplain8(load8(s + i), high);

		if (m)
			return i + (size_t)__builtin_ctzll(m) / 8;
	}
	while (i < len && (plain[s[i]] || (!high && s[i] >= 0x80)))
		i++;
	return i;
}

/* At the opening quote; *at and *n: where the bytes went. */
static int parse_string(struct parser *p, uint32_t *at, uint32_t *n)
{
	size_t start = p->d->nstr;

	p->pos++;
	for (;;) {
		/* Plain ASCII in one copy: most of every document. */
		size_t run = plain_run(p->s, p->pos, p->len, true);

		str_add(p->d, p->s + p->pos, run - p->pos);
		p->pos = run;
		if (p->pos >= p->len)
			return fail(p, "the text ends inside a string");
		if (p->s[p->pos] == '"')
			break;
		if (p->s[p->pos] == '\\') {
			p->pos++;
			if (escape(p) < 0)
				return -EINVAL;
		} else if (raw_char(p) < 0) {
			return -EINVAL;
		}
	}
	p->pos++;
	*at = (uint32_t)start;
	*n = (uint32_t)(p->d->nstr - start);
	str_add(p->d, "", 1);
	return 0;
}

static size_t digits(struct parser *p)
{
	size_t start = p->pos;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
		p->pos++;
	return p->pos - start;
}

/* JSON's grammar exactly, then strtod() over a NUL-terminated copy: the
 * text itself need not end in a NUL.  A number too big for a double is
 * +-inf, never exact; the caller's ranges keep it out. */
static int parse_num(struct parser *p, struct jv *v)
{
	size_t start = p->pos;
	bool integer = true;
	char small[64], *copy;

	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '0')
		p->pos++;
	else if (!digits(p))
		return fail(p, "a number wants a digit");
	if (p->pos < p->len && p->s[p->pos] == '.') {
		integer = false;
		p->pos++;
		if (!digits(p))
			return fail(p, "a digit wants to follow the '.'");
	}
	if (p->pos < p->len && (p->s[p->pos] | 0x20) == 'e') {
		integer = false;
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!digits(p))
			return fail(p, "an exponent wants a digit");
	}
	/* Nearly every number of a dump is a small integer: no strtod(). */
	if (integer && p->pos - start <= 18) {
		const unsigned char *c = p->s + start + (p->s[start] == '-');
		int64_t i = 0;

		while (c < p->s + p->pos)
			i = i * 10 + (*c++ - '0');
		v->type = JV_NUM;
		v->i = p->s[start] == '-' ? -i : i;
		v->num = (double)v->i;
		v->exact = true;
		return 0;
	}
	copy = p->pos - start < sizeof(small) ? small : xmalloc(p->pos - start + 1);
	memcpy(copy, p->s + start, p->pos - start);
	copy[p->pos - start] = 0;
	v->type = JV_NUM;
	v->num = strtod(copy, NULL);
	if (integer) {
		errno = 0;
		v->i = strtoll(copy, NULL, 10);
		v->exact = errno == 0;
	}
	if (copy != small)
		free(copy);
	return 0;
}

static int parse_literal(struct parser *p, struct jv *v)
{
	static const struct { const char *word; enum jv_type type; } words[] = {
		{ "null", JV_NULL }, { "true", JV_TRUE }, { "false", JV_FALSE },
	};

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		size_t n = strlen(words[k].word);

		if (p->len - p->pos >= n && !memcmp(p->s + p->pos, words[k].word, n)) {
			v->type = (uint8_t)words[k].type;
			p->pos += n;
			return 0;
		}
	}
	return fail(p, "expected a value, found %s", p->pos >= p->len ? "the end of the text"
		    : "an unexpected character");
}

static int parse_value(struct parser *p, int depth, struct jv *v);

/* Checking a raw member fast (jdoc's raw_keys: most of a job's bytes):
 * the grammar parse_value reads, iteratively, storing nothing and saying
 * nothing.  Where it finds the text wrong, parse_value reads the value
 * again for the message, and its verdict is the one that counts
 * (check_raw): this only has to accept nothing that it refuses. */

static inline size_t ws_at(const unsigned char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* An escape at s[i] (the byte after the backslash): its length, 0 when
 * escape() refuses it.  A \u pair is two escapes each fine alone. */
static size_t escape_len(const unsigned char *s, size_t len, size_t i)
{
	static const bool simple[256] = {
		['"'] = true, ['\\'] = true, ['/'] = true, ['b'] = true, ['f'] = true,
		['n'] = true, ['r'] = true, ['t'] = true,
	};

	if (i >= len)
		return 0;
	if (simple[s[i]])
		return 1;
	if (s[i] != 'u' || len - i < 5 || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) ||
	    !is_hex(s[i + 3]) || !is_hex(s[i + 4]))
		return 0;
	return memcmp(s + i + 1, "0000", 4) ? 5 : 0;	/* \u0000: a NUL */
}

/* A string at *i (its opening quote); bytes of 0x80 and above are never
 * refused (raw_char makes U+FFFD of what is not UTF-8). */
static inline __attribute__((always_inline)) bool check_string(const unsigned char *s, size_t len, size_t *i)
{
	size_t at = *i + 1, k;

	for (;;) {
		at = plain_run(s, at, len, false);
		if (at >= len || s[at] < 0x20)
			return false;
		if (s[at] == '"')
			break;
		if (!(k = escape_len(s, len, at + 1)))	/* a backslash */
			return false;
		at += 1 + k;
	}
	*i = at + 1;
	return true;
}

static size_t digits_at(const unsigned char *s, size_t len, size_t i)
{
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* A number, a string or a literal at *i. */
static bool check_scalar(const unsigned char *s, size_t len, size_t *i)
{
	const char *word = NULL;
	size_t at = *i, d;

	switch (at < len ? s[at] : 0) {
	case '"':
		return check_string(s, len, i);
	case 'n':
		word = "null";
		break;
	case 't':
		word = "true";
		break;
	case 'f':
		word = "false";
		break;
	}
	if (word) {
		d = word[0] == 'f' ? 5 : 4;
		if (len - at < d || memcmp(s + at, word, d))
			return false;
		*i = at + d;
		return true;
	}
	at += at < len && s[at] == '-';
	if (at < len && s[at] == '0')
		at++;
	else if ((d = digits_at(s, len, at)) == at)
		return false;
	else
		at = d;
	if (at < len && s[at] == '.') {
		if ((d = digits_at(s, len, at + 1)) == at + 1)
			return false;
		at = d;
	}
	if (at < len && (s[at] | 0x20) == 'e') {
		at += 1 + (at + 1 < len && (s[at + 1] == '+' || s[at + 1] == '-'));
		if ((d = digits_at(s, len, at)) == at)
			return false;
		at = d;
	}
	*i = at;
	return true;
}

/* After a container's '{' or ',': the whitespace, and in an object the
 * member's name and its ':', up to where the value starts. */
static bool member_at(const unsigned char *s, size_t len, size_t *i, bool obj)
{
	size_t at = ws_at(s, len, *i);

	if (obj) {
		if (at >= len || s[at] != '"' || !check_string(s, len, &at))
			return false;
		at = ws_at(s, len, at);
		if (at >= len || s[at] != ':')
			return false;
		at = ws_at(s, len, at + 1);
	}
	*i = at;
	return true;
}

/* The value at p->pos, nested depth deep; bit k of objs: the k-th
 * container open is an object.  Only whitespace is skipped byte by byte:
 * a dump has none. */
static bool check_value(struct parser *p, int depth)
{
	const unsigned char *s = p->s;
	size_t len = p->len, i = p->pos;
	uint64_t objs = 0;
	int nest = 0;

	for (;;) {
		if (i < len && (s[i] == '{' || s[i] == '[')) {
			if (depth + nest >= JSON_MAX_DEPTH)
				return false;
			objs = (objs & ~(1ull << nest)) | (uint64_t)(s[i] == '{') << nest;
			i = ws_at(s, len, i + 1);
			if (i >= len || s[i] != (objs >> nest & 1 ? '}' : ']')) {
				if (!member_at(s, len, &i, objs >> nest++ & 1))
					return false;
				continue;
			}
			i++;	/* empty */
		} else if (!check_scalar(s, len, &i)) {
			return false;
		}
		for (;;) {	/* after a value */
			if (!nest) {
				p->pos = i;
				return true;
			}
			i = ws_at(s, len, i);
			if (i < len && s[i] == ',') {
				i++;
				if (!member_at(s, len, &i, objs >> (nest - 1) & 1))
					return false;
				break;
			}
			if (i >= len || s[i] != (objs >> (nest - 1) & 1 ? '}' : ']'))
				return false;
			i++;
			nest--;
		}
	}
}

/* A raw member's value into *v: a text the caller knows (known_raw) as
 * it is; else checked fast, and where that finds it wrong read again by
 * the full reader, storing nothing, for its message. */
static int raw_value(struct parser *p, int depth, struct jv *v)
{
	struct jdoc *d = p->d;
	size_t start = p->pos, n = 0;
	int64_t name = 0;
	struct jv scratch;
	int rc = 0;

	if (d->known_raw && start < p->len && (p->s[start] == '[' || p->s[start] == '{'))
		n = d->known_raw(d->known_ctx, (const char *)p->s + start, p->len - start, depth,
				 &name);
	if (n && n <= p->len - start) {
		p->pos += n;
	} else if (name = 0, !check_value(p, depth)) {
		p->pos = start;
		d->dry = true;
		rc = parse_value(p, depth, &scratch);
		d->dry = false;
	}
	*v = (struct jv){ .type = JV_RAW, .key = v->key, .depth = (uint8_t)depth,
			  .at = (uint32_t)start, .n = (uint32_t)(p->pos - start), .i = name };
	return rc;
}

static bool is_raw_key(const struct jdoc *d, const char *key)
{
	for (const char *const *k = d->raw_keys; k && *k; k++)
		if (!strcmp(*k, key))
			return true;
	return false;
}

/* One member of the container being read, onto the scratch stack
 * (nothing, when checking a raw value). */
static int member(struct parser *p, int depth, bool obj)
{
	struct jv v = { .key = UINT32_MAX };
	bool raw = false;
	uint32_t n;

	skip_ws(p);
	if (obj) {
		if (p->pos >= p->len || p->s[p->pos] != '"')
			return fail(p, "expected a member's name in quotes, found %s", found(p));
		if (parse_string(p, &v.key, &n) < 0)
			return -EINVAL;
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':')
			return fail(p, "expected ':' after a member's name");
		p->pos++;
		skip_ws(p);
		raw = !p->d->dry && is_raw_key(p->d, p->d->str + v.key);
	}
	if (raw ? raw_value(p, depth + 1, &v) < 0 : parse_value(p, depth + 1, &v) < 0)
		return -EINVAL;
	if (p->d->dry)
		return 0;
	ALLOC_GROW(p->d->scr, p->nscr + 1, p->d->scralloc);
	p->d->scr[p->nscr++] = v;
	return 0;
}

static int parse_container(struct parser *p, int depth, struct jv *v, bool obj)
{
	char close = obj ? '}' : ']';
	size_t mark = p->nscr;
	int rc = 0;

	if (depth >= JSON_MAX_DEPTH)
		return fail(p, "nested deeper than %d", JSON_MAX_DEPTH);
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
	} else {
		for (;;) {
			if ((rc = member(p, depth, obj)) < 0)
				break;
			skip_ws(p);
			if (p->pos < p->len && p->s[p->pos] == ',') {
				p->pos++;
				continue;
			}
			if (p->pos < p->len && p->s[p->pos] == close) {
				p->pos++;
				break;
			}
			rc = fail(p, "expected ',' or '%c', found %s", close, found(p));
			break;
		}
	}
	if (rc == 0) {
		struct jdoc *d = p->d;

		v->type = obj ? JV_OBJ : JV_ARR;
		v->n = (uint32_t)(p->nscr - mark);
		v->at = (uint32_t)d->nv;
		ALLOC_GROW(d->v, d->nv + v->n, d->valloc);
		if (v->n)
			memcpy(d->v + d->nv, d->scr + mark, v->n * sizeof(*v));
		d->nv += v->n;
	}
	p->nscr = mark;
	return rc;
}

static int parse_value(struct parser *p, int depth, struct jv *v)
{
	if (p->pos >= p->len)
		return fail(p, "expected a value, found the end of the text");
	switch (p->s[p->pos]) {
	case '{':
		return parse_container(p, depth, v, true);
	case '[':
		return parse_container(p, depth, v, false);
	case '"':
		v->type = JV_STR;
		return parse_string(p, &v->at, &v->n);
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return parse_num(p, v);
	default:
		return parse_literal(p, v);
	}
}

void jdoc_release(struct jdoc *d)
{
	free(d->v);
	free(d->str);
	free(d->scr);
	*d = (struct jdoc)JDOC_INIT;
}

/* The root is the last node: every container's members are stored
 * before it is. */
int jdoc_parse_next(struct jdoc *d, const char *text, size_t len, size_t start, size_t *end,
		    char *err, size_t errlen)
{
	struct parser p = { (const unsigned char *)text, len, start, d, 0, err, errlen };
	struct jv root = { .key = UINT32_MAX };
	int rc;

	d->nv = d->nstr = 0;
	d->text = text;
	d->dry = false;
	if (len > JSON_MAX_INPUT) {
		p.pos = JSON_MAX_INPUT;
		return fail(&p, "more than %u MiB of JSON", JSON_MAX_INPUT >> 20);
	}
	skip_ws(&p);
	rc = parse_value(&p, 0, &root);
	skip_ws(&p);
	if (rc < 0) {
		d->nv = d->nstr = 0;
		return rc;
	}
	ALLOC_GROW(d->v, d->nv + 1, d->valloc);
	d->v[d->nv++] = root;
	*end = p.pos;
	return 0;
}

int jdoc_parse(struct jdoc *d, const char *text, size_t len, char *err, size_t errlen)
{
	size_t end;
	int rc = jdoc_parse_next(d, text, len, 0, &end, err, errlen);

	if (rc == 0 && end < len) {
		d->nv = d->nstr = 0;
		snprintf(err, errlen, "byte %zu: text after the end of the JSON value", end);
		return -EINVAL;
	}
	return rc;
}

const struct jv *jdoc_root(const struct jdoc *d)
{
	return d->nv ? &d->v[d->nv - 1] : NULL;
}

bool jv_is(const struct jv *v, enum jv_type t)
{
	return v && v->type == t;
}

size_t jv_len(const struct jv *v)
{
	return v && (v->type == JV_ARR || v->type == JV_OBJ) ? v->n : 0;
}

const struct jv *jv_at(const struct jdoc *d, const struct jv *v, size_t i)
{
	return i < jv_len(v) ? &d->v[v->at + i] : NULL;
}

const struct jv *jv_get(const struct jdoc *d, const struct jv *v, const char *key)
{
	if (!jv_is(v, JV_OBJ))
		return NULL;
	for (uint32_t k = 0; k < v->n; k++) {
		const char *name = d->str + d->v[v->at + k].key;

		if (name[0] == key[0] && !strcmp(name, key))
			return &d->v[v->at + k];
	}
	return NULL;
}

const char *jv_str(const struct jdoc *d, const struct jv *v)
{
	return jv_is(v, JV_STR) ? d->str + v->at : NULL;
}

const char *jv_raw(const struct jdoc *d, const struct jv *v, size_t *len)
{
	if (!jv_is(v, JV_RAW))
		return NULL;
	*len = v->n;
	return d->text + v->at;
}

const char *jv_key(const struct jdoc *d, const struct jv *v)
{
	return v && v->key != UINT32_MAX ? d->str + v->key : NULL;
}

bool jv_int(const struct jv *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (!jv_is(v, JV_NUM) || !v->exact || v->i < lo || v->i > hi)
		return false;
	*out = v->i;
	return true;
}
