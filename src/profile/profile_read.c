/* Reading folded and pprof profiles and pystrobe's flame graphs; see
 * profile_read.h. */
#include "profile/profile_read.h"
#include "profile/flightrec.h"
#include "util/util.h"
#include "util/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	char msg[PROFILE_READ_ERR - 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s: %s", r->name, msg);
	return -1;
}

/* --- building stacks ---------------------------------------------------- */

/* Add a frame to the stack being built, root first.  Past the depth limit
 * frames are dropped and the stack ends in "<truncated>": deeper stacks
 * than `record` makes would only come from a broken or hostile file, and
 * the writers recurse per level. */
static void push_id(struct reader *r, uint32_t id)
{
	static const struct pframe cut = { PF_MARKER, "<truncated>", NULL, -1, -1 };

	if (r->depth > PROFILE_READ_DEPTH)
		return;
	if (r->depth == PROFILE_READ_DEPTH)
		id = profile_frame(r->p, &cut);
	r->stack[r->depth++] = id;
}

static void push_frame(struct reader *r, const struct pframe *f)
{
	if (r->depth <= PROFILE_READ_DEPTH)
		push_id(r, profile_frame(r->p, f));
}

static int end_stack(struct reader *r, uint64_t count, const char *where)
{
	uint32_t depth = r->depth;

	r->depth = 0;
	if (!count)
		return 0;
	if (!depth)
		return fail(r, "%s: a count without frames", where);
	if (!profile_add_count(r->p, r->stack, depth, count))
		return fail(r, "%s: the counts add up to more than 2^64", where);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "\uXXXX" or "\UXXXXXXXX" at s, the escape of a format character: its
 * UTF-8 onto sb and the escape's length, or 0 when s is not one. */
static int unescape_cp(const char *s, size_t len, struct strbuf *sb)
{
	int digits = len > 1 && s[1] == 'u' ? 4 : len > 1 && s[1] == 'U' ? 8 : 0;
	uint32_t cp = 0;

	if (!digits || len < (size_t)digits + 2)
		return 0;
	for (int k = 0; k < digits; k++) {
		int v = hexval(s[2 + k]);

		if (v < 0)
			return 0;
		cp = cp << 4 | (uint32_t)v;
	}
	if (!esc_unsafe(cp) || cp < 0x100 || cp > 0x10ffff)
		return 0;
	sb_add_utf8(sb, cp);
	return digits + 2;
}

/* Undo pystrobe's escapes ("\\", "\xNN" for control characters,
 * invalid UTF-8 and ';', "\uXXXX" for format characters), so that a
 * frame read back is the frame that was written and a second write
 * escapes it the same way.  Other backslashes
 * are kept: other tools' names have their own (C:\path, regexes).  A NUL,
 * escaped or not, stays visible as "\x00" rather than cut the name. */
static char *unescape(const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < len; i++) {
		int hi, lo, n;

		if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\\') {
			sb_putc(&sb, '\\');
			i++;
		} else if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' &&
			   (hi = hexval(s[i + 2])) >= 0 && (lo = hexval(s[i + 3])) >= 0 &&
			   (hi | lo)) {
			sb_putc(&sb, (char)(hi << 4 | lo));
			i += 3;
		} else if (s[i] == '\\' && (n = unescape_cp(s + i, len - i, &sb)) > 0) {
			i += n - 1;
		} else if (!s[i]) {
			sb_puts(&sb, "\\x00");
		} else {
			sb_putc(&sb, s[i]);
		}
	}
	return sb_detach(&sb);
}

/* --- folded stacks ------------------------------------------------------ */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int parse_count(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;

	if (s == e)
		return -1;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* One frame's text, without the blanks around it: tools differ in how
 * they space "a; b" and a name never starts or ends with one. */
static void folded_frame(struct reader *r, const char *s, const char *e)
{
	struct pframe f = { PF_PYTHON, NULL, NULL, -1, -1 };

	while (s < e && is_blank(*s))
		s++;
	while (e > s && is_blank(e[-1]))
		e--;
	if (s == e)
		return;
	f.name = unescape(s, e - s);
	push_frame(r, &f);
	free(f.name);
}

/* "frame;frame;...;leaf COUNT": the count is the last word, the frames
 * are everything before it split at ';' (names may hold spaces). */
static int folded_line(struct reader *r, const char *s, const char *e, size_t lineno)
{
	const char *c;
	uint64_t count;
	char where[40];

	while (e > s && is_blank(e[-1]))
		e--;
	while (s < e && is_blank(*s))
		s++;
	if (s == e)
		return 0;
	snprintf(where, sizeof(where), "line %zu", lineno);
	for (c = e; c > s && !is_blank(c[-1]); c--)
		;
	if (c == s)
		return fail(r, "%s: no sample count after the stack", where);
	if (parse_count(c, e, &count) < 0)
		return fail(r, "%s: '%.*s' is not a sample count (a whole number)", where,
			    (int)(e - c > 40 ? 40 : e - c), c);
	for (e = c; s < e;) {
		const char *semi = memchr(s, ';', e - s);

		folded_frame(r, s, semi ? semi : e);
		s = semi ? semi + 1 : e;
	}
	return end_stack(r, count, where);
}

/* Folded stacks; line numbers in messages count from first_line + 1 (the
 * text may be part of a bigger file). */
static int read_folded(struct reader *r, const char *data, size_t len, size_t first_line)
{
	const char *s = data, *end = data + len;
	size_t lineno = first_line;

	if (memchr(data, 0, len))
		return fail(r, "binary data that is neither folded stacks nor pprof");
	while (s < end) {
		const char *nl = memchr(s, '\n', end - s);

		if (folded_line(r, s, nl ? nl : end, ++lineno) < 0)
			return -1;
		s = nl ? nl + 1 : end;
	}
	return 0;
}

/* --- protobuf ----------------------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num;
	int wire;
	uint64_t v;		/* wire type 0 */
	struct pb sub;		/* wire type 2 */
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	return get_varint(&b->p, b->end, v);
}

/* The next field of a message: 1, 0 at its end, -1 when it is broken. */
static int pb_next(struct pb *b, struct pb_field *f)
{
	uint64_t key, len;

	if (b->p == b->end)
		return 0;
	if (pb_varint(b, &key) < 0 || key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wire = key & 7;
	f->v = 0;
	switch (f->wire) {
	case 0:
		return pb_varint(b, &f->v) < 0 ? -1 : 1;
	case 1:
	case 5:
		len = f->wire == 1 ? 8 : 4;
		break;
	case 2:
		if (pb_varint(b, &len) < 0)
			return -1;
		break;
	default:
		return -1;
	}
	if (len > (uint64_t)(b->end - b->p))
		return -1;
	f->sub.p = b->p;
	f->sub.end = b->p + len;
	b->p += len;
	return 1;
}

struct u64s {
	uint64_t *v;
	size_t n, cap;
};

static void u64_push(struct u64s *a, uint64_t v)
{
	ALLOC_GROW(a->v, a->n + 1, a->cap);
	a->v[a->n++] = v;
}

/* A repeated integer field, packed (proto3's default) or one per field. */
static int pb_ints(const struct pb_field *f, struct u64s *out)
{
	struct pb b = f->sub;
	uint64_t v;

	if (f->wire == 0) {
		u64_push(out, f->v);
		return 0;
	}
	if (f->wire != 2)
		return -1;
	while (b.p < b.end) {
		if (pb_varint(&b, &v) < 0)
			return -1;
		u64_push(out, v);
	}
	return 0;
}

/* --- pprof -------------------------------------------------------------- */

struct pp_func {
	uint64_t id;
	uint64_t name, file;	/* string indices */
	int64_t start;
};

struct pp_loc {
	uint64_t id;
	uint32_t first, n;	/* frame ids in pp.loc_frames, innermost first */
};

struct pp {
	struct reader *r;
	struct pb *strs;
	size_t nstrs, strs_cap;
	struct pp_func *funcs;
	size_t nfuncs, funcs_cap;
	struct pp_loc *locs;
	size_t nlocs, locs_cap;
	struct u64s loc_frames;
	struct pb *samples, *func_msgs, *loc_msgs;
	size_t nsamples, nfunc_msgs, nloc_msgs, samples_cap, func_cap, loc_cap;
	struct u64s types;	/* sample_type: type string index per value */
	struct u64s comments;
	uint64_t default_type, period, duration, time;
	size_t value_index;
};

static void span_push(struct pb **a, size_t *n, size_t *cap, struct pb s)
{
	ALLOC_GROW(*a, *n + 1, *cap);
	(*a)[(*n)++] = s;
}

static int bad(struct pp *pp, const char *what)
{
	return fail(pp->r, "not a valid pprof profile (%s)", what);
}

/* String i of the table, unescaped, or NULL when out of range. */
static char *pp_str(struct pp *pp, uint64_t i)
{
	if (i >= pp->nstrs)
		return NULL;
	return unescape((const char *)pp->strs[i].p, pp->strs[i].end - pp->strs[i].p);
}

static bool pp_str_is(struct pp *pp, uint64_t i, const char *s)
{
	size_t n = strlen(s);

	return i < pp->nstrs && (size_t)(pp->strs[i].end - pp->strs[i].p) == n &&
	       !memcmp(pp->strs[i].p, s, n);
}

/* The top-level fields; sub-messages are kept as spans for later. */
static int pp_scan(struct pp *pp, struct pb b)
{
	struct pb_field f;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		struct pb_field t;
		struct pb vt = f.sub;

		if ((f.num == 1 || f.num == 2 || f.num == 4 || f.num == 5 || f.num == 6) &&
		    f.wire != 2)
			return bad(pp, "a message field with the wrong wire type");
		switch (f.num) {
		case 1:		/* sample_type: ValueType { type = 1, unit = 2 } */
			u64_push(&pp->types, 0);
			while ((rc = pb_next(&vt, &t)) > 0)
				if (t.num == 1 && t.wire == 0)
					pp->types.v[pp->types.n - 1] = t.v;
			if (rc < 0)
				return bad(pp, "sample type");
			break;
		case 2: span_push(&pp->samples, &pp->nsamples, &pp->samples_cap, f.sub); break;
		case 4: span_push(&pp->loc_msgs, &pp->nloc_msgs, &pp->loc_cap, f.sub); break;
		case 5: span_push(&pp->func_msgs, &pp->nfunc_msgs, &pp->func_cap, f.sub); break;
		case 6: span_push(&pp->strs, &pp->nstrs, &pp->strs_cap, f.sub); break;
		case 9: pp->time = f.v; break;
		case 10: pp->duration = f.v; break;
		case 12: pp->period = f.v; break;
		case 13:
			if (pb_ints(&f, &pp->comments) < 0)
				return bad(pp, "comment");
			break;
		case 14: pp->default_type = f.v; break;
		default: break;
		}
	}
	if (rc < 0)
		return bad(pp, "a field runs past the end");
	if (!pp->nstrs || pp->strs[0].p != pp->strs[0].end)
		return bad(pp, "string_table[0] is not empty");
	if (!pp->types.n)
		return bad(pp, "no sample types");
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_func *)a)->id, y = ((const struct pp_func *)b)->id;

	return x < y ? -1 : x > y;
}

static int cmp_loc(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_loc *)a)->id, y = ((const struct pp_loc *)b)->id;

	return x < y ? -1 : x > y;
}

static int pp_functions(struct pp *pp)
{
	pp->funcs = xcalloc(pp->nfunc_msgs ? pp->nfunc_msgs : 1, sizeof(*pp->funcs));
	for (size_t i = 0; i < pp->nfunc_msgs; i++) {
		struct pp_func *fn = &pp->funcs[pp->nfuncs++];
		struct pb b = pp->func_msgs[i];
		struct pb_field f;
		uint64_t system = 0;
		int rc;

		while ((rc = pb_next(&b, &f)) > 0) {
			if (f.wire != 0)
				continue;
			switch (f.num) {
			case 1: fn->id = f.v; break;
			case 2: fn->name = f.v; break;
			case 3: system = f.v; break;
			case 4: fn->file = f.v; break;
			case 5: fn->start = (int64_t)f.v; break;
			}
		}
		if (rc < 0)
			return bad(pp, "function");
		if (!fn->name)
			fn->name = system;
		if (fn->name >= pp->nstrs || fn->file >= pp->nstrs)
			return bad(pp, "function names a string past the table");
	}
	if (pp->nfuncs)
		qsort(pp->funcs, pp->nfuncs, sizeof(*pp->funcs), cmp_func);
	return 0;
}

static const struct pp_func *find_func(struct pp *pp, uint64_t id)
{
	struct pp_func key = { .id = id };

	return pp->nfuncs ? bsearch(&key, pp->funcs, pp->nfuncs, sizeof(key), cmp_func) : NULL;
}

/* One Line { function_id = 1, line = 2 } of a location, as a frame. */
static int pp_line(struct pp *pp, struct pb b)
{
	struct pframe fr = { PF_PYTHON, NULL, NULL, -1, -1 };
	const struct pp_func *fn;
	uint64_t func = 0;
	int64_t line = 0;
	struct pb_field f;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && f.wire == 0)
			func = f.v;
		else if (f.num == 2 && f.wire == 0)
			line = (int64_t)f.v;
	}
	if (rc < 0 || !(fn = find_func(pp, func)))
		return bad(pp, "a location's line names no function");
	/* A nameless function would print as an empty frame, which a folded
	 * reader drops. */
	fr.name = pp_str(pp, fn->name);
	if (!*fr.name) {
		free(fr.name);
		fr.name = xstrdup("?");
	}
	fr.file = fn->file ? pp_str(pp, fn->file) : NULL;
	/* Line 0 is pprof's "unknown", which `record --function` writes. */
	fr.line = line > 0 && line <= INT32_MAX ? (int)line : -1;
	fr.firstlineno = fn->start > 0 && fn->start <= INT32_MAX ? (int)fn->start : -1;
	u64_push(&pp->loc_frames, profile_frame(pp->r->p, &fr));
	free(fr.name);
	free(fr.file);
	return 0;
}

static int pp_locations(struct pp *pp)
{
	pp->locs = xcalloc(pp->nloc_msgs ? pp->nloc_msgs : 1, sizeof(*pp->locs));
	for (size_t i = 0; i < pp->nloc_msgs; i++) {
		struct pp_loc *l = &pp->locs[pp->nlocs++];
		struct pb b = pp->loc_msgs[i];
		struct pb_field f;
		uint64_t address = 0;
		int rc;

		l->first = (uint32_t)pp->loc_frames.n;
		while ((rc = pb_next(&b, &f)) > 0) {
			if (f.num == 1 && f.wire == 0)
				l->id = f.v;
			else if (f.num == 3 && f.wire == 0)
				address = f.v;
			else if (f.num == 4 && f.wire == 2 && pp_line(pp, f.sub) < 0)
				return -1;
		}
		if (rc < 0)
			return bad(pp, "location");
		/* An unsymbolised address, as Go and perf converters leave them. */
		if (pp->loc_frames.n == l->first) {
			char *name = xasprintf("0x%llx", (unsigned long long)address);
			struct pframe fr = { PF_NATIVE, name, NULL, -1, -1 };

			u64_push(&pp->loc_frames, profile_frame(pp->r->p, &fr));
			free(name);
		}
		l->n = (uint32_t)(pp->loc_frames.n - l->first);
	}
	if (pp->nlocs)
		qsort(pp->locs, pp->nlocs, sizeof(*pp->locs), cmp_loc);
	return 0;
}

/* The numeric labels "pid" and "tid" of a sample, which out_pprof.c
 * writes: the thread its samples came from. */
struct pp_ids {
	int64_t pid, tid;
	bool have_pid, have_tid;
};

/* A string label as a root frame: "process" and "thread" are what
 * out_pprof.c makes of those roots, anything else a merge label. */
static int pp_label(struct pp *pp, struct pb b, struct pp_ids *ids)
{
	struct pframe fr = { PF_LABEL, NULL, NULL, -1, -1 };
	uint64_t key = 0, str = 0, num = 0;
	struct pb_field f;
	char *k, *v;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && f.wire == 0)
			key = f.v;
		else if (f.num == 2 && f.wire == 0)
			str = f.v;
		else if (f.num == 3 && f.wire == 0)
			num = f.v;
	}
	if (rc < 0 || key >= pp->nstrs || str >= pp->nstrs)
		return bad(pp, "label");
	if (!str && pp_str_is(pp, key, "pid") && num <= INT32_MAX) {
		ids->pid = (int64_t)num;
		ids->have_pid = true;
	} else if (!str && pp_str_is(pp, key, "tid") && num <= INT32_MAX) {
		ids->tid = (int64_t)num;
		ids->have_tid = true;
	}
	if (!str)
		return 0;	/* numeric: no root */
	k = pp_str(pp, key);
	v = pp_str(pp, str);
	if (!strcmp(k, "process")) {
		fr.kind = PF_PROCESS;
		fr.name = v;
	} else if (!strcmp(k, "thread")) {
		fr.kind = PF_THREAD;
		fr.name = v;
	} else if (!strcmp(k, "label")) {
		fr.name = v;	/* out_pprof.c's key for a root without '=' */
	} else {
		fr.name = xasprintf("%s=%s", k, v);
	}
	push_frame(pp->r, &fr);
	if (fr.name != v)
		free(fr.name);
	free(k);
	free(v);
	return 0;
}

/* More threads than this in one file are not told apart (labels kept
 * only for the first ones): profile_thread() looks them up one by one. */
#define PP_MAX_THREADS 4096

/* The sample just counted came from the thread its labels say. */
static void pp_sample_thread(struct pp *pp, const struct pp_ids *ids, uint32_t depth,
			     uint64_t count)
{
	struct profile *p = pp->r->p;
	uint32_t t;

	if (!ids->have_pid || !ids->have_tid || !count || !depth ||
	    depth > PROFILE_READ_DEPTH + 1)
		return;
	for (t = 0; t < p->nthreads; t++)
		if (p->threads[t].pid == ids->pid && p->threads[t].tid == ids->tid)
			break;
	if (t == p->nthreads && t >= PP_MAX_THREADS)
		return;
	t = profile_thread(p, (pid_t)ids->pid, (pid_t)ids->tid, NULL);
	profile_add_stack_thread(p, profile_stack(p, pp->r->stack, depth), t, count);
}

static int pp_sample(struct pp *pp, struct pb b, size_t index)
{
	struct u64s locs = { 0 }, values = { 0 };
	struct pp_ids ids = { 0 };
	struct pb_field f;
	char where[48];
	uint32_t depth;
	int rc, ret = -1;

	snprintf(where, sizeof(where), "sample %zu", index);
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1)
			rc = pb_ints(&f, &locs);
		else if (f.num == 2)
			rc = pb_ints(&f, &values);
		else if (f.num == 3 && f.wire == 2)
			rc = pp_label(pp, f.sub, &ids);
		if (rc < 0)
			goto out;
	}
	if (rc < 0) {
		bad(pp, "sample");
		goto out;
	}
	if (values.n != pp->types.n) {
		fail(pp->r, "%s: %zu values for %zu sample types", where, values.n, pp->types.n);
		goto out;
	}
	if ((int64_t)values.v[pp->value_index] < 0) {
		fail(pp->r, "%s: a negative count (a difference profile?)", where);
		goto out;
	}
	/* Leaf first in the file; each location's lines innermost first. */
	for (size_t i = locs.n; i-- > 0;) {
		struct pp_loc key = { .id = locs.v[i] }, *l;

		l = pp->nlocs ? bsearch(&key, pp->locs, pp->nlocs, sizeof(key), cmp_loc) : NULL;
		if (!l) {
			fail(pp->r, "%s: location %llu does not exist", where,
			     (unsigned long long)locs.v[i]);
			goto out;
		}
		for (uint32_t k = l->n; k-- > 0;)
			push_id(pp->r, (uint32_t)pp->loc_frames.v[l->first + k]);
	}
	depth = pp->r->depth;
	ret = end_stack(pp->r, values.v[pp->value_index], where);
	if (!ret)
		pp_sample_thread(pp, &ids, depth, values.v[pp->value_index]);
out:
	pp->r->depth = 0;
	free(locs.v);
	free(values.v);
	return ret;
}

/* Which value is the count: "samples", else the default type, else the
 * first. */
static void pp_value_index(struct pp *pp)
{
	for (size_t i = 0; i < pp->types.n; i++)
		if (pp_str_is(pp, pp->types.v[i], "samples")) {
			pp->value_index = i;
			return;
		}
	for (size_t i = 0; i < pp->types.n; i++)
		if (pp->default_type && pp->types.v[i] == pp->default_type) {
			pp->value_index = i;
			return;
		}
	pp->value_index = 0;
}

static void pp_metadata(struct pp *pp)
{
	struct profile *p = pp->r->p;
	char *s;

	if (pp->period) {
		p->interval_ns = pp->period;
		p->rate_hz = 1e9 / (double)pp->period;
	}
	p->start_unix_ns = pp->time;
	p->duration_ns = pp->duration;
	/* out_pprof.c's "wall" for a recording of idle threads too. */
	for (size_t i = 0; i < pp->types.n; i++)
		p->wall |= pp_str_is(pp, pp->types.v[i], "wall");
	/* out_pprof.c writes "pystrobe", the command, "Python X.Y.Z". */
	if (pp->comments.n < 2 || !pp_str_is(pp, pp->comments.v[0], "pystrobe"))
		return;
	p->command = pp_str(pp, pp->comments.v[1]);
	s = pp->comments.n > 2 ? pp_str(pp, pp->comments.v[2]) : NULL;
	if (s && !strncmp(s, "Python ", 7))
		p->python_version = xstrdup(s + 7);
	free(s);
}

static int read_pprof_proto(struct reader *r, const uint8_t *data, size_t len)
{
	struct pp pp = { .r = r };
	int ret = -1;

	if (pp_scan(&pp, (struct pb){ data, data + len }) < 0 || pp_functions(&pp) < 0 ||
	    pp_locations(&pp) < 0)
		goto out;
	pp_value_index(&pp);
	for (size_t i = 0; i < pp.nsamples; i++)
		if (pp_sample(&pp, pp.samples[i], i) < 0)
			goto out;
	pp_metadata(&pp);
	ret = 0;
out:
	free(pp.strs);
	free(pp.funcs);
	free(pp.locs);
	free(pp.loc_frames.v);
	free(pp.samples);
	free(pp.func_msgs);
	free(pp.loc_msgs);
	free(pp.types.v);
	free(pp.comments.v);
	return ret;
}

static int gunzip(struct reader *r, const char *data, size_t len, struct strbuf *out)
{
	char buf[64 * 1024];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return fail(r, "cannot start decompressing");
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = (Bytef *)buf;
		z.avail_out = sizeof(buf);
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END)
			break;
		sb_add(out, buf, sizeof(buf) - z.avail_out);
		if (out->len > PROFILE_READ_MAX) {
			inflateEnd(&z);
			return fail(r, "more than %u MiB once decompressed", PROFILE_READ_MAX >> 20);
		}
	} while (rc != Z_STREAM_END);
	inflateEnd(&z);
	if (rc == Z_STREAM_END)
		return 0;
	if (rc == Z_BUF_ERROR)
		return fail(r, "truncated gzip data");
	return fail(r, "corrupt gzip data (%s)", z.msg ? z.msg : "inflate failed");
}

/* --- pystrobe's flame graph --------------------------------------------- */

/* The character the entity at s stands for, and the entity's length; 0
 * for none that out_flamegraph.c writes.  (An XML tool that rewrote the
 * file may have left a quote bare, which is fine.) */
static size_t xml_entity(const char *s, size_t len, char *c)
{
	static const struct { const char *ent; char c; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
		{ "&#39;", '\'' }, { "&apos;", '\'' },
	};

	for (size_t k = 0; k < ARRAY_SIZE(ents); k++) {
		size_t n = strlen(ents[k].ent);

		if (n <= len && !memcmp(s, ents[k].ent, n)) {
			*c = ents[k].c;
			return n;
		}
	}
	return 0;
}

/* The XML text of the stacks element, entities undone.  out_flamegraph.c
 * writes no markup inside it. */
static int xml_text(struct reader *r, const char *s, size_t len, struct strbuf *out)
{
	for (size_t i = 0; i < len; i++) {
		size_t n;
		char c;

		if (s[i] == '<')
			return fail(r, "markup inside pystrobe's stack data: not as pystrobe writes it");
		if (s[i] != '&') {
			sb_putc(out, s[i]);
			continue;
		}
		n = xml_entity(s + i, len - i, &c);
		if (!n)
			return fail(r, "an XML entity in pystrobe's stack data that pystrobe "
				    "does not write");
		sb_putc(out, c);
		i += n - 1;
	}
	return 0;
}

/* The value [*v, *ve) of attribute name="..." in the tag [s, e). */
static bool attr_value(const char *s, const char *e, const char *name, const char **v,
		       const char **ve)
{
	size_t n = strlen(name);
	const char *a;

	for (a = s; (a = memmem(a, e - a, name, n)); a += n)
		if (a > s && a[-1] == ' ' && e - a > (ptrdiff_t)n + 1 && !memcmp(a + n, "=\"", 2))
			break;
	if (!a)
		return false;
	*v = a + n + 2;
	*ve = memchr(*v, '"', e - *v);
	return *ve != NULL;
}

static bool attr_u64(const char *s, const char *e, const char *name, uint64_t *out)
{
	const char *v, *ve;

	return attr_value(s, e, name, &v, &ve) && parse_count(v, ve, out) == 0;
}

/* What the stacks element's attributes say about the recording. */
static void svg_metadata(struct reader *r, const char *s, const char *e)
{
	struct profile *p = r->p;
	const char *v, *ve;
	char buf[32];
	double hz;
	uint64_t wall = 0;

	if (attr_value(s, e, "data-rate-hz", &v, &ve) && ve - v < (ptrdiff_t)sizeof(buf)) {
		memcpy(buf, v, ve - v);
		buf[ve - v] = 0;
		if (parse_number(buf, 1e-3, 1e9, &hz) == 0) {
			p->rate_hz = hz;
			p->interval_ns = (uint64_t)(1e9 / hz);
		}
	}
	attr_u64(s, e, "data-duration-ns", &p->duration_ns);
	attr_u64(s, e, "data-start-unix-ns", &p->start_unix_ns);
	p->wall = attr_u64(s, e, "data-wall", &wall) && wall == 1;
}

static size_t count_lines(const char *s, const char *e)
{
	size_t n = 0;

	while ((s = memchr(s, '\n', e - s))) {
		n++;
		s++;
	}
	return n;
}

/* The stacks a flame graph of pystrobe's carries (out_flamegraph.c). */
static int read_svg(struct reader *r, const char *data, size_t len)
{
	const char *end = data + len, *tag, *body, *stop;
	struct strbuf text = STRBUF_INIT;
	int ret;

	tag = memmem(data, len, SVG_STACKS_TAG, strlen(SVG_STACKS_TAG));
	if (!tag)
		return fail(r, "an SVG or XML file without pystrobe's stack data (another tool's, "
			    "pystrobe diff's or an older pystrobe's flame graph); "
			    PROFILE_READ_FORMATS);
	body = memchr(tag, '>', end - tag);
	stop = body ? memmem(body, end - body, "</metadata>", 11) : NULL;
	if (!stop)
		return fail(r, "pystrobe's stack data is cut short (no </metadata>)");
	svg_metadata(r, tag, body++);
	ret = xml_text(r, body, stop - body, &text);
	if (!ret)
		ret = read_folded(r, text.buf ? text.buf : "", text.len, count_lines(data, body));
	sb_release(&text);
	return ret;
}

/* --- a flight recording -------------------------------------------------- */

/* Seconds from base, "-120.0 s", for messages about slices. */
static void rel_seconds(char *buf, size_t size, int64_t ns)
{
	if (ns == INT64_MIN || ns == INT64_MAX)
		snprintf(buf, size, "%s", ns < 0 ? "the start" : "the end");
	else
		snprintf(buf, size, "%+.1f s", (double)ns / 1e9);
}

/* An empty slice is the user's mistake: say what the recording holds. */
static int empty_slice(struct reader *r)
{
	const struct flightrec_info *in = r->info;
	char from[32], until[32], first[32], last[32];

	rel_seconds(from, sizeof(from), r->slice->from_ns);
	rel_seconds(until, sizeof(until), r->slice->until_ns);
	rel_seconds(first, sizeof(first),
		    (int64_t)in->first_unix_ns - (int64_t)in->base_unix_ns);
	rel_seconds(last, sizeof(last), (int64_t)in->last_unix_ns - (int64_t)in->base_unix_ns);
	fail(r, "no samples from %s until %s of the %s; its %llu samples run from %s to %s",
	     from, until, in->mark_unix_ns ? "mark" : "last sample",
	     (unsigned long long)in->samples, first, last);
	return status_fail(EXIT_USAGE);
}

static int read_recording(struct reader *r, const char *data, size_t len)
{
	char why[PROFILE_READ_ERR - 256];

	r->recording = true;
	/* p was initialised empty; the parser starts it again. */
	profile_free(r->p);
	if (flightrec_parse(data, len, r->slice, r->p, r->info, why, sizeof(why)) < 0)
		return fail(r, "%s", why);
	if (r->slice && !r->p->samples && r->info->samples)
		return empty_slice(r);
	return 0;
}

/* --- telling formats apart --------------------------------------------- */

static bool is_gzip(const char *data, size_t len)
{
	return len >= 2 && (uint8_t)data[0] == 0x1f && (uint8_t)data[1] == 0x8b;
}

/* Text holds no control characters but tab, CR and LF (pystrobe's folded
 * output escapes the others); pprof's protobuf nearly always does, in
 * its first kilobytes. */
static bool is_binary(const char *data, size_t len)
{
	for (size_t i = 0; i < len && i < 4096; i++) {
		unsigned char c = data[i];

		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			return true;
	}
	return false;
}

/* Binary data is pprof, or nothing we read: the protobuf's complaint says
 * why it is not pprof. */
static int read_binary(struct reader *r, const char *data, size_t len)
{
	char why[256];
	size_t skip = strlen(r->name) + 2;

	if (read_pprof_proto(r, (const uint8_t *)data, len) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", strlen(r->err) > skip ? r->err + skip : r->err);
	return fail(r, "binary data that is not pprof (as pprof: %s); " PROFILE_READ_FORMATS, why);
}

/* Whether the text (after blanks) starts as XML does: a flame graph, or
 * some other SVG or XML.  Not a bare '<': "<module> (x.py:1);f 3" is
 * folded. */
static bool is_xml(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && is_blank(data[i]))
		i++;
	return len - i >= 5 && (!strncmp(data + i, "<?xml", 5) || !strncmp(data + i, "<svg", 4));
}

/* What a text file we do not read is, by its first bytes: NULL when it
 * may be folded stacks. */
static const char *unreadable_text(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && is_blank(data[i]))
		i++;
	if (i < len && (data[i] == '{' || data[i] == '[')) {
		size_t n = len - i < 65536 ? len - i : 65536;

		if (memmem(data + i, n, "speedscope", 10))
			return "a speedscope JSON profile";
		if (data[i] == '[' || memmem(data + i, n, "\"traceEvents\"", 13))
			return "a Chrome trace (JSON)";
		return "JSON that is not a profile format";
	}
	return NULL;
}

/* Read data by what it is; inside a gzip stream once more (gzip of
 * folded stacks, of pprof, ...). */
static int read_any(struct reader *r, const char *data, size_t len, enum profile_format *fmt,
		    int gz_depth)
{
	const char *what;

	if (is_gzip(data, len)) {
		struct strbuf raw = STRBUF_INIT;
		int ret = gz_depth > 0 ? fail(r, "gzip inside gzip inside gzip") :
					 gunzip(r, data, len, &raw);

		if (!ret)
			ret = read_any(r, raw.buf ? raw.buf : "", raw.len, fmt, gz_depth + 1);
		sb_release(&raw);
		return ret;
	}
	if (flightrec_is(data, len)) {
		*fmt = PROFILE_RECORDING;
		return read_recording(r, data, len);
	}
	if (is_binary(data, len)) {
		*fmt = PROFILE_PPROF;
		return read_binary(r, data, len);
	}
	*fmt = PROFILE_FOLDED;
	if (is_xml(data, len))
		return read_svg(r, data, len);
	what = unreadable_text(data, len);
	if (what)
		return fail(r, "%s; " PROFILE_READ_FORMATS, what);
	return read_folded(r, data, len, 0);
}

/* --- entry points ------------------------------------------------------- */

/* The readers on data, with r's slice and info. */
static int read_mem(struct reader *r, const char *data, size_t len, struct profile *p,
		    enum profile_format *fmt)
{
	enum profile_format f = PROFILE_FOLDED;
	int ret;

	profile_init(p, 0);
	r->p = p;
	ret = read_any(r, data, len, &f, 0);
	if (fmt)
		*fmt = f;
	if (!ret && r->slice && !r->recording) {
		fail(r, "not a flight recording: only recordings (pystrobe watch) have the sample "
		     "times --from and --until slice by");
		ret = status_fail(EXIT_USAGE);
	}
	if (!ret && !p->samples)
		ret = fail(r, "no samples");
	if (ret)
		profile_free(p);
	return ret;
}

int profile_read_mem(const char *data, size_t len, const char *name, struct profile *p,
		     enum profile_format *fmt, char *err, size_t errlen)
{
	struct flightrec_info info;

	return profile_read_slice_mem(data, len, name, NULL, &info, p, fmt, err, errlen);
}

int profile_read_slice_mem(const char *data, size_t len, const char *name,
			   const struct flightrec_slice *slice, struct flightrec_info *info,
			   struct profile *p, enum profile_format *fmt, char *err, size_t errlen)
{
	struct reader *r = xcalloc(1, sizeof(*r));
	int ret;

	memset(info, 0, sizeof(*info));
	r->name = name;
	r->err = err;
	r->errlen = errlen;
	r->slice = slice;
	r->info = info;
	ret = read_mem(r, data, len, p, fmt);
	free(r);
	return ret;
}

int profile_read(const char *path, struct profile *p, enum profile_format *fmt,
		 char *err, size_t errlen)
{
	struct flightrec_info info;

	return profile_read_slice(path, NULL, &info, p, fmt, err, errlen);
}

int profile_read_slice(const char *path, const struct flightrec_slice *slice,
		       struct flightrec_info *info, struct profile *p, enum profile_format *fmt,
		       char *err, size_t errlen)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[64 * 1024];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len <= PROFILE_READ_MAX)
		sb_add(&sb, buf, n);
	if (n < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else if (sb.len > PROFILE_READ_MAX)
		snprintf(err, errlen, "%s: larger than %u MiB", path, PROFILE_READ_MAX >> 20);
	close(fd);
	if (n < 0 || sb.len > PROFILE_READ_MAX) {
		sb_release(&sb);
		return -1;
	}
	ret = profile_read_slice_mem(sb.buf ? sb.buf : "", sb.len, path, slice, info, p, fmt,
				     err, errlen);
	sb_release(&sb);
	return ret;
}
