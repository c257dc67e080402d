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

/* At the opening quote; *at and *n: where the bytes went. */
static int parse_string(struct parser *p, uint32_t *at, uint32_t *n)
{
	size_t start = p->d->nstr;

	p->pos++;
	for (;;) {
		size_t run = p->pos;

		/* Plain ASCII in one copy: most of every document. */
		while (run < p->len && plain[p->s[run]])
			run++;
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
	size_t start;
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
	start = p->pos;
	p->d->dry |= raw;
	if (parse_value(p, depth + 1, &v) < 0)
		return -EINVAL;
	if (raw)
		v = (struct jv){ .type = JV_RAW, .key = v.key, .at = (uint32_t)start,
				 .n = (uint32_t)(p->pos - start) };
	p->d->dry &= !raw;
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
