/* Reading a flight recording (the format is in flightrec.h) into a
 * profile with its timeline, or the part of it in a time slice.
 *
 * The file is hostile input: every count is bounded by the bytes left
 * (each item takes at least one), every id by the section it names, and
 * anything else is an error saying where, never a crash or a partial
 * profile. */
#include "profile/flightrec.h"
#include "util/status.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* Every failure here is the file's: an input that does not read. */
#define BAD_RECORDING status_fail(EXIT_BAD_INPUT)
/* Roots put below a sample's frames: the context's own (version 2),
 * process, thread, wait class. */
#define ROOTS (FLIGHTREC_ROOTS + 3)

/* A stack as the file gives it: depth frame ids at fstack[off]. */
struct rstack {
	size_t off;
	uint32_t depth;
};

struct rctx {
	pid_t pid, tid;
	uint32_t name, command, wait;	/* string ids, NONE: none */
	uint32_t labels[FLIGHTREC_ROOTS];	/* string ids, NONE: none */
	uint32_t roots[ROOTS];		/* frame ids in the profile, NONE: not made yet */
};

struct rsample {
	uint64_t unix_ns;
	uint32_t stack, ctx;
};

struct rec {
	const uint8_t *p, *end;
	char *err;
	size_t errlen;
	const char *section;

	uint64_t version, flags, mark, interval;
	char **strings;
	uint64_t nstrings;
	struct pframe *frames;
	uint32_t *fmap;			/* frame id in the profile, NONE: not yet */
	uint64_t nframes;
	struct rstack *stacks;
	uint32_t *fstack;
	uint64_t nstacks;
	struct rctx *ctxs;
	uint64_t nctxs;
	struct rsample *samples;
	uint64_t nsamples;
};

static int bad(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct rec *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "not a valid flight recording (%s: %s)", r->section, msg);
	return BAD_RECORDING;
}

static int get_v(struct rec *r, uint64_t *v)
{
	if (get_varint(&r->p, r->end, v) < 0)
		return bad(r, r->p >= r->end ? "cut short" : "a number longer than 64 bits");
	return 0;
}

static int get_z(struct rec *r, int64_t *v)
{
	uint64_t u;

	if (get_v(r, &u) < 0)
		return BAD_RECORDING;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

/* A number at most max; *v is left alone when it is not. */
static int get_max(struct rec *r, uint64_t max, uint64_t *v, const char *what)
{
	uint64_t x;

	if (get_v(r, &x) < 0)
		return BAD_RECORDING;
	if (x > max)
		return bad(r, "%s %llu, more than %llu", what, (unsigned long long)x,
			   (unsigned long long)max);
	*v = x;
	return 0;
}

/* An id of one of n items. */
static int get_id(struct rec *r, uint64_t n, uint32_t *id, const char *what)
{
	uint64_t v;

	if (get_v(r, &v) < 0)
		return BAD_RECORDING;
	if (v >= n)
		return bad(r, "%s %llu of %llu", what, (unsigned long long)v, (unsigned long long)n);
	*id = (uint32_t)v;
	return 0;
}

/* A count of items that take at least min_bytes each. */
static int get_count(struct rec *r, uint64_t min_bytes, uint64_t *n)
{
	uint64_t x, left;

	if (get_v(r, &x) < 0)
		return BAD_RECORDING;
	left = (uint64_t)(r->end - r->p);
	if (x > left / min_bytes)
		return bad(r, "%llu items in the %llu bytes left: cut short",
			   (unsigned long long)x, (unsigned long long)left);
	*n = x;
	return 0;
}

/* A string id + 1: NONE for 0. */
static int get_opt_string(struct rec *r, uint32_t *id)
{
	uint64_t v = 0;

	if (get_max(r, r->nstrings, &v, "string") < 0)
		return BAD_RECORDING;
	*id = v ? (uint32_t)(v - 1) : NONE;
	return 0;
}

static int get_int(struct rec *r, int *out)
{
	int64_t v;

	if (get_z(r, &v) < 0)
		return BAD_RECORDING;
	if (v < INT32_MIN || v > INT32_MAX)
		return bad(r, "line %lld out of range", (long long)v);
	*out = (int)v;
	return 0;
}

static int read_header(struct rec *r)
{
	uint64_t version;

	r->section = "header";
	r->p += FLIGHTREC_MAGIC_LEN;
	if (get_v(r, &version) < 0)
		return BAD_RECORDING;
	r->version = version;
	if (version < 1 || version > FLIGHTREC_VERSION) {
		snprintf(r->err, r->errlen, "a flight recording of format version %llu; this "
			 "pystrobe reads versions 1 to %d: convert it with the pystrobe that "
			 "wrote it", (unsigned long long)version, FLIGHTREC_VERSION);
		return BAD_RECORDING;
	}
	if (get_v(r, &r->flags) < 0 || get_v(r, &r->mark) < 0 || get_v(r, &r->interval) < 0)
		return BAD_RECORDING;
	if (r->mark > INT64_MAX)
		return bad(r, "a mark past the year 2262");
	/* 1 us to an hour: the writers' run ends add it to times. */
	if (r->interval < 1000 || r->interval > 3600000000000ull)
		return bad(r, "a sampling interval of %llu ns", (unsigned long long)r->interval);
	return 0;
}

static int read_strings(struct rec *r)
{
	r->section = "strings";
	if (get_count(r, 1, &r->nstrings) < 0)
		return BAD_RECORDING;
	r->strings = xcalloc(r->nstrings ? r->nstrings : 1, sizeof(*r->strings));
	for (uint64_t i = 0; i < r->nstrings; i++) {
		uint64_t len = 0;

		if (get_max(r, (uint64_t)(r->end - r->p), &len, "a string of length") < 0)
			return BAD_RECORDING;
		if (memchr(r->p, 0, len))
			return bad(r, "string %llu holds a NUL", (unsigned long long)i);
		r->strings[i] = xmalloc(len + 1);
		memcpy(r->strings[i], r->p, len);
		r->strings[i][len] = 0;
		r->p += len;
	}
	return 0;
}

static int read_frames(struct rec *r)
{
	r->section = "frames";
	if (get_count(r, 5, &r->nframes) < 0)
		return BAD_RECORDING;
	r->frames = xcalloc(r->nframes ? r->nframes : 1, sizeof(*r->frames));
	r->fmap = xmalloc((r->nframes ? r->nframes : 1) * sizeof(*r->fmap));
	memset(r->fmap, 0xff, (r->nframes ? r->nframes : 1) * sizeof(*r->fmap));
	for (uint64_t i = 0; i < r->nframes; i++) {
		struct pframe *f = &r->frames[i];
		uint64_t kind = 0;
		uint32_t name = 0, file = NONE;

		if (get_max(r, PF_LABEL, &kind, "frame kind") < 0 ||
		    get_id(r, r->nstrings, &name, "string") < 0 || get_opt_string(r, &file) < 0 ||
		    get_int(r, &f->line) < 0 || get_int(r, &f->firstlineno) < 0)
			return BAD_RECORDING;
		f->kind = (enum pframe_kind)kind;
		f->name = r->strings[name];
		f->file = file == NONE ? NULL : r->strings[file];
	}
	return 0;
}

static int read_stacks(struct rec *r)
{
	size_t total = 0, cap = 0;

	r->section = "stacks";
	if (get_count(r, 1, &r->nstacks) < 0)
		return BAD_RECORDING;
	r->stacks = xcalloc(r->nstacks ? r->nstacks : 1, sizeof(*r->stacks));
	for (uint64_t i = 0; i < r->nstacks; i++) {
		uint64_t depth;

		if (get_count(r, 1, &depth) < 0)
			return BAD_RECORDING;
		r->stacks[i] = (struct rstack){ total, (uint32_t)depth };
		ALLOC_GROW(r->fstack, total + depth, cap);
		for (uint64_t d = 0; d < depth; d++)
			if (get_id(r, r->nframes, &r->fstack[total++], "frame") < 0)
				return BAD_RECORDING;
	}
	return 0;
}

static int read_ctxs(struct rec *r)
{
	r->section = "threads";
	if (get_count(r, 5, &r->nctxs) < 0)
		return BAD_RECORDING;
	r->ctxs = xcalloc(r->nctxs ? r->nctxs : 1, sizeof(*r->ctxs));
	for (uint64_t i = 0; i < r->nctxs; i++) {
		struct rctx *c = &r->ctxs[i];
		uint64_t pid = 0, tid = 0;

		if (get_max(r, INT32_MAX, &pid, "pid") < 0 || get_max(r, INT32_MAX, &tid, "tid") < 0 ||
		    get_opt_string(r, &c->name) < 0 || get_opt_string(r, &c->command) < 0 ||
		    get_opt_string(r, &c->wait) < 0)
			return BAD_RECORDING;
		memset(c->labels, 0xff, sizeof(c->labels));
		for (int k = 0; r->version >= 2 && k < FLIGHTREC_ROOTS; k++)
			if (get_opt_string(r, &c->labels[k]) < 0)
				return BAD_RECORDING;
		c->pid = (pid_t)pid;
		c->tid = (pid_t)tid;
		memset(c->roots, 0xff, sizeof(c->roots));
	}
	return 0;
}

static int read_samples(struct rec *r)
{
	int64_t t = 0;

	r->section = "samples";
	if (get_count(r, 3, &r->nsamples) < 0)
		return BAD_RECORDING;
	r->samples = xcalloc(r->nsamples ? r->nsamples : 1, sizeof(*r->samples));
	for (uint64_t i = 0; i < r->nsamples; i++) {
		struct rsample *s = &r->samples[i];
		uint32_t stack = 0, ctx = 0;
		int64_t d;

		if (get_z(r, &d) < 0)
			return BAD_RECORDING;
		if ((d > 0 && t > INT64_MAX - d) || t + d < 0)
			return bad(r, "sample %llu: a time before 1970 or after 2262",
				   (unsigned long long)i);
		t += d;
		if (get_id(r, r->nstacks, &stack, "stack") < 0 ||
		    get_id(r, r->nctxs, &ctx, "thread") < 0)
			return BAD_RECORDING;
		*s = (struct rsample){ (uint64_t)t, stack, ctx };
	}
	if (r->p != r->end)
		return bad(r, "%zu bytes after the last sample", (size_t)(r->end - r->p));
	return 0;
}

/* --- the profile ------------------------------------------------------------ */

static uint32_t root(struct profile *p, enum pframe_kind kind, char *name)
{
	struct pframe f = { kind, name, NULL, -1, -1 };
	uint32_t id = profile_frame(p, &f);

	free(name);
	return id;
}

/* The roots of a context's samples, made once: its labels ("node=NAME",
 * "rank=N" as record --slurm names them), "process PID: COMMAND",
 * "thread TID \"NAME\"" as `record` names them, "wait=CLASS". */
static uint32_t ctx_roots(struct rec *r, struct profile *p, struct rctx *c, uint32_t *out)
{
	uint32_t n = 0, k = 0;

	if (c->roots[0] == NONE) {
		for (int i = 0; i < FLIGHTREC_ROOTS; i++)
			if (c->labels[i] != NONE)
				c->roots[k++] = root(p, PF_LABEL, xstrdup(r->strings[c->labels[i]]));
		c->roots[k++] = c->command == NONE ?
			root(p, PF_PROCESS, xasprintf("process %d", (int)c->pid)) :
			root(p, PF_PROCESS, xasprintf("process %d: %s", (int)c->pid,
						      r->strings[c->command]));
		c->roots[k++] = c->name == NONE ?
			root(p, PF_THREAD, xasprintf("thread %d", (int)c->tid)) :
			root(p, PF_THREAD, xasprintf("thread %d \"%s\"", (int)c->tid,
						     r->strings[c->name]));
		if (c->wait != NONE)
			c->roots[k] = root(p, PF_LABEL, xasprintf("wait=%s", r->strings[c->wait]));
	}
	for (; n < ROOTS && c->roots[n] != NONE; n++)
		out[n] = c->roots[n];
	return n;
}

/* A sample's stack in the profile's frame ids, into buf (room for ROOTS
 * + FLIGHTREC_DEPTH + 1); its depth. */
static uint32_t sample_stack(struct rec *r, struct profile *p, const struct rsample *s,
			     uint32_t *buf)
{
	static const struct pframe cut = { PF_MARKER, "<truncated>", NULL, -1, -1 };
	const struct rstack *st = &r->stacks[s->stack];
	uint32_t n = ctx_roots(r, p, &r->ctxs[s->ctx], buf);

	for (uint32_t d = 0; d < st->depth && d <= FLIGHTREC_DEPTH; d++) {
		uint32_t f = r->fstack[st->off + d];

		if (d == FLIGHTREC_DEPTH) {
			buf[n++] = profile_frame(p, &cut);
			break;
		}
		if (r->fmap[f] == NONE)
			r->fmap[f] = profile_frame(p, &r->frames[f]);
		buf[n++] = r->fmap[f];
	}
	return n;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct rsample *x = *(const struct rsample *const *)a;
	const struct rsample *y = *(const struct rsample *const *)b;

	if (x->unix_ns != y->unix_ns)
		return x->unix_ns < y->unix_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The samples in the slice, in time order (a thread's runs need it; the
 * file keeps the order they arrived in). */
static struct rsample **in_slice(struct rec *r, const struct flightrec_slice *slice,
				 struct flightrec_info *info)
{
	struct rsample **kept = xmalloc((r->nsamples ? r->nsamples : 1) * sizeof(*kept));

	info->mark_unix_ns = r->mark;
	info->samples = r->nsamples;
	info->first_unix_ns = r->nsamples ? UINT64_MAX : 0;
	for (uint64_t i = 0; i < r->nsamples; i++) {
		uint64_t t = r->samples[i].unix_ns;

		if (t < info->first_unix_ns)
			info->first_unix_ns = t;
		if (t > info->last_unix_ns)
			info->last_unix_ns = t;
	}
	info->base_unix_ns = r->mark ? r->mark : info->last_unix_ns;
	for (uint64_t i = 0; i < r->nsamples; i++) {
		/* Both below 2^63: the difference fits. */
		int64_t rel = (int64_t)r->samples[i].unix_ns - (int64_t)info->base_unix_ns;

		if (rel >= slice->from_ns && rel < slice->until_ns)
			kept[info->kept++] = &r->samples[i];
	}
	if (info->kept)
		qsort(kept, info->kept, sizeof(*kept), cmp_sample);
	return kept;
}

static void build(struct rec *r, const struct flightrec_slice *slice, struct profile *p,
		  struct flightrec_info *info)
{
	uint32_t *buf = xmalloc((ROOTS + FLIGHTREC_DEPTH + 1) * sizeof(*buf));
	struct rsample **kept = in_slice(r, slice, info);
	uint64_t start = info->kept ? kept[0]->unix_ns : 0;

	profile_init(p, 1e9 / (double)r->interval);
	p->interval_ns = r->interval;
	p->wall = r->flags & 1;
	p->start_unix_ns = start;
	if (info->kept) {
		const struct rctx *c = &r->ctxs[kept[0]->ctx];

		p->duration_ns = kept[info->kept - 1]->unix_ns - start + r->interval;
		p->pid = c->pid;
		if (c->command != NONE)
			p->command = xstrdup(r->strings[c->command]);
	}
	for (uint64_t i = 0; i < info->kept; i++) {
		const struct rsample *s = kept[i];
		const struct rctx *c = &r->ctxs[s->ctx];
		uint32_t n = sample_stack(r, p, s, buf);
		uint32_t t = profile_thread(p, c->pid, c->tid,
					    c->name == NONE ? NULL : r->strings[c->name]);

		profile_add(p, t, buf, n, s->unix_ns - start, 1);
	}
	free(kept);
	free(buf);
}

static void rec_free(struct rec *r)
{
	for (uint64_t i = 0; i < r->nstrings; i++)
		free(r->strings[i]);
	free(r->strings);
	free(r->frames);
	free(r->fmap);
	free(r->stacks);
	free(r->fstack);
	free(r->ctxs);
	free(r->samples);
}

bool flightrec_is(const void *data, size_t len)
{
	return len >= FLIGHTREC_MAGIC_LEN && !memcmp(data, FLIGHTREC_MAGIC, FLIGHTREC_MAGIC_LEN);
}

/* Every section of the recording in data into r, checked; -1 with r's
 * error said. */
static int read_all(struct rec *r, const void *data, size_t len)
{
	if (!flightrec_is(data, len)) {
		snprintf(r->err, r->errlen, "not a flight recording");
		return -1;
	}
	if (read_header(r) < 0 || read_strings(r) < 0 || read_frames(r) < 0 ||
	    read_stacks(r) < 0 || read_ctxs(r) < 0 || read_samples(r) < 0)
		return -1;
	return 0;
}

int flightrec_parse(const void *data, size_t len, const struct flightrec_slice *slice,
		    struct profile *p, struct flightrec_info *info, char *err, size_t errlen)
{
	static const struct flightrec_slice all = FLIGHTREC_ALL;
	struct rec r = { .p = data, .end = (const uint8_t *)data + len, .err = err,
			 .errlen = errlen };
	struct flightrec_info scratch;
	int ret = BAD_RECORDING;

	memset(info ? info : &scratch, 0, sizeof(scratch));
	profile_init(p, 0);
	if (read_all(&r, data, len) < 0)
		goto out;
	build(&r, slice ? slice : &all, p, info ? info : &scratch);
	ret = 0;
out:
	rec_free(&r);
	return ret;
}

/* --- one recording of many ------------------------------------------------ */

/* Sample s of r into dst, under roots (NULL: its context's labels). */
static void merge_one(struct flightrec *dst, const struct rec *r, const struct rsample *s,
		      flightrec_roots_fn *roots, void *arg, struct pframe *buf)
{
	const struct rctx *c = &r->ctxs[s->ctx];
	const struct rstack *st = &r->stacks[s->stack];
	struct flightrec_sample out = {
		.unix_ns = s->unix_ns, .pid = c->pid, .tid = c->tid,
		.thread_name = c->name == NONE ? NULL : r->strings[c->name],
		.command = c->command == NONE ? NULL : r->strings[c->command],
		.wait_class = c->wait == NONE ? NULL : r->strings[c->wait],
		.frames = buf, .depth = st->depth,
	};

	for (uint32_t d = 0; d < st->depth; d++)
		buf[d] = r->frames[r->fstack[st->off + d]];
	for (int k = 0; k < FLIGHTREC_ROOTS; k++)
		out.roots[k] = c->labels[k] == NONE ? NULL : r->strings[c->labels[k]];
	if (roots)
		roots(arg, c->pid, out.roots);
	flightrec_add_sample(dst, &out);
}

int flightrec_merge(struct flightrec *dst, const void *data, size_t len,
		    flightrec_roots_fn *roots, void *arg, char *err, size_t errlen)
{
	struct rec r = { .p = data, .end = (const uint8_t *)data + len, .err = err,
			 .errlen = errlen };
	struct pframe *buf = NULL;
	uint32_t deepest = 0;
	int ret = BAD_RECORDING;

	if (read_all(&r, data, len) < 0)
		goto out;
	/* Deeper stacks are cut where flightrec_add_sample() cuts them. */
	for (uint64_t i = 0; i < r.nstacks; i++)
		if (r.stacks[i].depth > deepest)
			deepest = r.stacks[i].depth;
	buf = xcalloc(deepest ? deepest : 1, sizeof(*buf));
	for (uint64_t i = 0; i < r.nsamples; i++)
		merge_one(dst, &r, &r.samples[i], roots, arg, buf);
	ret = 0;
out:
	free(buf);
	rec_free(&r);
	return ret;
}
