/* Reading a job's JSON dumps into one model (jobdump.h). */
#include "cluster/jobdump.h"
#include "util/jsonread.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a document says about all its processes. */
struct doc_ctx {
	const struct jdoc *d;
	const char *node, *host, *origin;
};

static uint64_t mix8(uint64_t x, const char *s)
{
	uint64_t w;

	memcpy(&w, s, 8);
	x = (x ^ w) * 0x9e3779b97f4a7c15ull;
	return x ^ x >> 29;
}

/* Eight bytes a step, and four steps at once over long texts: every
 * frame of every rank is hashed, and every thread's "frames" text, a
 * tenth of `pystrobe group` with one step at a time (bench/README). */
static uint32_t hash_mem(uint32_t h, const char *s, size_t n)
{
	uint64_t x = h ^ ((uint64_t)n << 32);

	if (n >= 32) {
		uint64_t l[4] = { x, x + 1, x + 2, x + 3 };

		for (; n >= 32; s += 32, n -= 32)
			for (int k = 0; k < 4; k++)
				l[k] = mix8(l[k], s + 8 * k);
		x = l[0] ^ (l[1] << 16 | l[1] >> 48) ^ (l[2] << 32 | l[2] >> 32) ^
		    (l[3] << 48 | l[3] >> 16);
	}
	for (; n >= 8; s += 8, n -= 8)
		x = mix8(x, s);
	if (n) {
		uint64_t w = 0;

		memcpy(&w, s, n);
		x = (x ^ w) * 0x9e3779b97f4a7c15ull;
	}
	return hash_u64(x);
}

static const char *intern_n(struct job_dump *jd, const char *s, size_t n)
{
	struct hashidx_pos pos;
	uint32_t h, id;

	if (!s)
		return NULL;
	h = hash_mem(HASH_INIT, s, n);
	for (id = hashidx_first(&jd->str_ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&jd->str_ix, &pos))
		if (!strcmp(jd->strs[id], s))
			return jd->strs[id];
	ALLOC_GROW(jd->strs, jd->nstrs + 1, jd->astrs);
	jd->strs[jd->nstrs] = xstrdup(s);
	hashidx_add(&jd->str_ix, h, (uint32_t)jd->nstrs);
	return jd->strs[jd->nstrs++];
}

const char *jobdump_intern(struct job_dump *jd, const char *s)
{
	return s ? intern_n(jd, s, strlen(s)) : NULL;
}

static const char *get_str(struct job_dump *jd, const struct jdoc *d, const struct jv *v,
			   const char *key)
{
	const struct jv *s = jv_get(d, v, key);

	return jv_is(s, JV_STR) ? intern_n(jd, jv_str(d, s), s->n) : NULL;
}

static long get_long(const struct jdoc *d, const struct jv *v, const char *key, long lo,
		     long hi, long dflt)
{
	int64_t x;

	return jv_int(jv_get(d, v, key), lo, hi, &x) ? (long)x : dflt;
}

static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* A frame as read, its strings still the document's: most frames of a
 * job are met thousands of times, so they are looked up before anything
 * of theirs is interned. */
struct raw_frame {
	struct job_frame f;	/* the strings: the document's */
	const struct jv *function, *file, *library;
};

static uint32_t raw_hash(const struct raw_frame *r)
{
	uint64_t k[3] = { (uint64_t)r->f.kind, (uint64_t)r->f.line, r->f.offset };
	uint32_t h = hash_mem(HASH_INIT, (const char *)k, sizeof(k));

	h = hash_mem(h, r->f.function ? r->f.function : "", r->function ? r->function->n : 0);
	h = hash_mem(h, r->f.file ? r->f.file : "", r->file ? r->file->n : 0);
	return hash_mem(h, r->f.library ? r->f.library : "", r->library ? r->library->n : 0);
}

static bool same_frame(const struct job_frame *a, const struct job_frame *b)
{
	return a->kind == b->kind && a->line == b->line && a->offset == b->offset &&
	       streq(a->function, b->function) && streq(a->file, b->file) &&
	       streq(a->library, b->library);
}

/* The frame's id.  The source line is no part of its key: a frame is
 * where it is, whatever a node read from its copy of the file. */
static uint32_t intern_frame(struct job_dump *jd, const struct raw_frame *r)
{
	uint32_t h = raw_hash(r), id;
	struct hashidx_pos pos;
	struct job_frame *f;

	for (id = hashidx_first(&jd->frame_ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&jd->frame_ix, &pos))
		if (same_frame(&jd->frames[id], &r->f))
			return id;
	ALLOC_GROW(jd->frames, jd->nframes + 1, jd->aframes);
	f = &jd->frames[jd->nframes];
	*f = r->f;
	f->function = jobdump_intern(jd, f->function);
	f->file = jobdump_intern(jd, f->file);
	f->library = jobdump_intern(jd, f->library);
	f->source = jobdump_intern(jd, f->source);
	hashidx_add(&jd->frame_ix, h, (uint32_t)jd->nframes);
	return (uint32_t)jd->nframes++;
}

static uint32_t intern_stack(struct job_dump *jd, const uint32_t *v, uint32_t n)
{
	struct hashidx_pos pos;
	uint32_t h = hash_u32s(HASH_INIT, v, n), id;

	for (id = hashidx_first(&jd->stack_ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&jd->stack_ix, &pos))
		if (jd->stacks[id].n == n &&
		    (!n || !memcmp(jd->stackv + jd->stacks[id].at, v, n * sizeof(*v))))
			return id;
	ALLOC_GROW(jd->stackv, jd->nstackv + n, jd->astackv);
	if (n)
		memcpy(jd->stackv + jd->nstackv, v, n * sizeof(*v));
	ALLOC_GROW(jd->stacks, jd->nstacks + 1, jd->astacks);
	jd->stacks[jd->nstacks] = (struct job_stack){ (uint32_t)jd->nstackv, n };
	jd->nstackv += n;
	hashidx_add(&jd->stack_ix, h, (uint32_t)jd->nstacks);
	return (uint32_t)jd->nstacks++;
}

static const struct {
	const char *name;
	enum job_frame_kind kind;
} frame_kinds[] = {
	{ "python", JF_PYTHON }, { "native", JF_NATIVE }, { "gc", JF_GC },
};

static const struct jv *str_or_null(const struct jdoc *d, const struct jv *v, const char *key)
{
	const struct jv *s = jv_get(d, v, key);

	return jv_is(s, JV_STR) ? s : NULL;
}

/* A frame of a kind this build does not know is skipped, not guessed. */
static bool read_frame(const struct jdoc *d, const struct jv *v, struct raw_frame *r)
{
	const char *kind = jv_str(d, jv_get(d, v, "kind"));
	int64_t off = 0;
	size_t k = 0;

	while (k < ARRAY_SIZE(frame_kinds) && (!kind || strcmp(kind, frame_kinds[k].name)))
		k++;
	if (k == ARRAY_SIZE(frame_kinds))
		return false;
	memset(r, 0, sizeof(*r));
	r->f.kind = frame_kinds[k].kind;
	r->function = str_or_null(d, v, "function");
	r->file = str_or_null(d, v, "file");
	r->f.function = jv_str(d, r->function);
	r->f.file = jv_str(d, r->file);
	r->f.line = get_long(d, v, "line", 0, INT32_MAX, -1);
	if (r->f.kind == JF_NATIVE) {
		r->library = str_or_null(d, v, "library");
		r->f.library = jv_str(d, r->library);
		if (jv_int(jv_get(d, v, "offset"), 0, INT64_MAX, &off))
			r->f.offset = (uint64_t)off;
	} else {
		r->f.source = jv_str(d, jv_get(d, v, "source"));
	}
	return true;
}

static uint32_t read_stack(struct job_dump *jd, const struct jdoc *d, const struct jv *frames)
{
	size_t len = jv_len(frames) < JOB_MAX_FRAMES ? jv_len(frames) : JOB_MAX_FRAMES;
	uint32_t n = 0;

	ALLOC_GROW(jd->scratch, len + 1, jd->ascratch);
	for (size_t i = 0; i < len; i++) {
		struct raw_frame r;

		if (read_frame(d, jv_at(d, frames, i), &r))
			jd->scratch[n++] = intern_frame(jd, &r);
	}
	return intern_stack(jd, jd->scratch, n);
}

/* Raw text id is what text begins with, and may stand at depth. */
static bool raw_at(const struct job_dump *jd, uint32_t id, const char *text, size_t avail,
		   int depth)
{
	const struct job_raw *r = &jd->raws[id];

	return r->len <= avail && depth <= r->depth && !memcmp(r->text, text, r->len);
}

/* jdoc's known_raw: the text of a "frames" met before, which the parser
 * then compares rather than reads.  The k-th one of the document is
 * first taken to be the last document's k-th, then one of the texts that
 * begin as it does (a few tries: a miss is read as JSON, and the stack
 * found by raw_stack). */
static size_t known_raw(void *ctx, const char *text, size_t avail, int depth, int64_t *name)
{
	struct job_dump *jd = ctx;
	size_t k = jd->nth++;
	uint32_t id = HASHIDX_NONE, tries = 0;
	struct hashidx_pos pos;

	if (k < jd->ahint && jd->hint[k] < jd->nraws && raw_at(jd, jd->hint[k], text, avail, depth))
		id = jd->hint[k];
	else if (avail >= JOB_RAW_HEAD)
		for (id = hashidx_first(&jd->head_ix, hash_mem(HASH_INIT, text, JOB_RAW_HEAD), &pos);
		     id != HASHIDX_NONE && !raw_at(jd, id, text, avail, depth);
		     id = ++tries < 8 ? hashidx_next(&jd->head_ix, &pos) : HASHIDX_NONE)
			;
	if (id == HASHIDX_NONE)
		return 0;
	if (k >= jd->ahint) {
		size_t old = jd->ahint;

		ALLOC_GROW(jd->hint, k + 1, jd->ahint);
		memset(jd->hint + old, 0xff, (jd->ahint - old) * sizeof(*jd->hint));
	}
	jd->hint[k] = id;
	*name = (int64_t)id + 1;
	return jd->raws[id].len;
}

static void add_raw(struct job_dump *jd, const char *text, size_t len, uint32_t h,
		    uint32_t stack, int depth)
{
	uint32_t id = (uint32_t)jd->nraws;

	ALLOC_GROW(jd->raws, jd->nraws + 1, jd->araws);
	jd->raws[id] = (struct job_raw){ xmalloc(len ? len : 1), len, stack, depth };
	memcpy(jd->raws[id].text, text, len);
	jd->raw_bytes += len;
	hashidx_add(&jd->raw_ix, h, id);
	if (len >= JOB_RAW_HEAD && (text[0] == '[' || text[0] == '{'))
		hashidx_add(&jd->head_ix, hash_mem(HASH_INIT, text, JOB_RAW_HEAD), id);
	jd->nraws++;
}

/* The stack of a "frames" text: the one the parser found it to be, or
 * the one read before from the same text, else parsed (the document's
 * parse has checked it already). */
static uint32_t raw_stack(struct job_dump *jd, const struct jdoc *d, const struct jv *frames)
{
	size_t len;
	const char *text = jv_raw(d, frames, &len);
	uint32_t h, id, stack;
	struct hashidx_pos pos;
	char err[64];

	if (frames->i > 0 && (uint64_t)frames->i <= jd->nraws)
		return jd->raws[frames->i - 1].stack;
	h = hash_mem(HASH_INIT, text, len);
	for (id = hashidx_first(&jd->raw_ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&jd->raw_ix, &pos))
		if (jd->raws[id].len == len && !memcmp(jd->raws[id].text, text, len))
			return jd->raws[id].stack;
	if (jdoc_parse(&jd->sub, text, len, err, sizeof(err)) < 0)
		return read_stack(jd, &jd->sub, NULL);	/* cannot be: an empty stack */
	stack = read_stack(jd, &jd->sub, jdoc_root(&jd->sub));
	if (jd->raw_bytes + len <= JOB_RAW_CACHE)
		add_raw(jd, text, len, h, stack, frames->depth);
	return stack;
}

static void read_thread(struct job_dump *jd, const struct jdoc *d, const struct jv *v,
			struct job_proc *p)
{
	struct job_thread *t;
	const struct jv *idle = jv_get(d, v, "idle"), *frames;

	ALLOC_GROW(jd->threads, jd->nthreads + 1, jd->athreads);
	t = &jd->threads[jd->nthreads++];
	t->tid = get_long(d, v, "tid", 0, INT32_MAX, 0);
	t->name = get_str(jd, d, v, "name");
	t->main = t->tid == p->pid;
	t->gil = jv_is(jv_get(d, v, "gil"), JV_TRUE);
	t->idle = jv_is(idle, JV_TRUE) ? 1 : jv_is(idle, JV_FALSE) ? 0 : -1;
	t->proc = (uint32_t)(p - jd->procs);
	frames = jv_get(d, v, "frames");
	t->stack = jv_is(frames, JV_RAW) ? raw_stack(jd, d, frames) : read_stack(jd, d, frames);
	p->nthreads++;
}

/* "job": {...} (design38.md, section 1); null or absent: not present. */
static void read_ident(struct job_dump *jd, const struct jdoc *d, const struct jv *v,
		       struct jobdump_ident *id)
{
	*id = (struct jobdump_ident){ .rank = -1, .local_rank = -1, .world_size = -1 };
	if (!jv_is(v, JV_OBJ))
		return;
	id->present = true;
	id->id = get_str(jd, d, v, "id");
	id->step = get_str(jd, d, v, "step");
	id->node = get_str(jd, d, v, "node");
	id->rank_from = get_str(jd, d, v, "rank_from");
	id->rank = get_long(d, v, "rank", 0, INT32_MAX, -1);
	id->local_rank = get_long(d, v, "local_rank", 0, INT32_MAX, -1);
	id->world_size = get_long(d, v, "world_size", 1, INT32_MAX, -1);
}

static struct job_node *add_node(struct job_dump *jd, const char *name)
{
	for (size_t i = 0; i < jd->nnodes; i++)
		if (jd->nodes[i].name == name)
			return &jd->nodes[i];
	ALLOC_GROW(jd->nodes, jd->nnodes + 1, jd->anodes);
	jd->nodes[jd->nnodes] = (struct job_node){ name, NULL };
	return &jd->nodes[jd->nnodes++];
}

void jobdump_node_error(struct job_dump *jd, const char *node, const char *error)
{
	add_node(jd, jobdump_intern(jd, node))->error = jobdump_intern(jd, error);
}

static void read_argv(struct job_dump *jd, const struct jdoc *d, const struct jv *v,
		      struct job_proc *p)
{
	size_t n = jv_len(v) < JOB_MAX_ARGS ? jv_len(v) : JOB_MAX_ARGS;

	p->argv = n ? xcalloc(n, sizeof(*p->argv)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const char *s = jv_str(d, jv_at(d, v, i));

		if (s)
			p->argv[p->argc++] = jobdump_intern(jd, s);
	}
}

/* Where the process runs: its own "node" (a job-wide dump read back),
 * its SLURMD_NODENAME, the node the document came from, its host, and
 * last the file it was read from (a dump from an older pystrobe). */
static const char *proc_node(struct job_dump *jd, const struct doc_ctx *c,
			     const struct jv *v, const struct job_proc *p)
{
	const char *own = get_str(jd, c->d, v, "node");

	if (own)
		return own;
	if (p->job.node)
		return p->job.node;
	return c->node ? c->node : c->host ? c->host : jobdump_intern(jd, c->origin);
}

static void read_proc(struct job_dump *jd, const struct doc_ctx *c, const struct jv *v)
{
	const struct jdoc *d = c->d;
	const struct jv *threads = jv_get(d, v, "threads");
	struct job_proc *p;

	ALLOC_GROW(jd->procs, jd->nprocs + 1, jd->aprocs);
	p = &jd->procs[jd->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = get_long(d, v, "pid", 1, INT32_MAX, 0);
	p->ppid = get_long(d, v, "ppid", 0, INT32_MAX, 0);
	read_ident(jd, d, jv_get(d, v, "job"), &p->job);
	p->node = proc_node(jd, c, v, p);
	p->host = get_str(jd, d, v, "host");
	if (!p->host)
		p->host = c->host;
	p->origin = jobdump_intern(jd, c->origin);
	read_argv(jd, d, jv_get(d, v, "cmdline"), p);
	p->python = get_str(jd, d, jv_get(d, v, "python"), "version");
	p->error = get_str(jd, d, v, "error");
	p->thread0 = (uint32_t)jd->nthreads;
	for (size_t i = 0; i < jv_len(threads); i++)
		read_thread(jd, d, jv_at(d, threads, i), p);
	add_node(jd, p->node);
}

__attribute__((format(printf, 3, 4)))
static int doc_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Everything that refuses a document, before any of it is added. */
static int check_doc(const struct jdoc *d, const struct jv *procs, char *err, size_t errlen)
{
	if (!jv_is(procs, JV_ARR))
		return doc_fail(err, errlen, "not a pystrobe dump --json document: no \"processes\" list");
	if (jv_len(procs) > JOB_MAX_PROCS)
		return doc_fail(err, errlen, "more than %d processes", JOB_MAX_PROCS);
	for (size_t i = 0; i < jv_len(procs); i++) {
		const struct jv *p = jv_at(d, procs, i), *threads = jv_get(d, p, "threads");
		int64_t pid;

		if (!jv_int(jv_get(d, p, "pid"), 1, INT32_MAX, &pid))
			return doc_fail(err, errlen, "process %zu has no \"pid\"", i + 1);
		if (jv_len(threads) > JOB_MAX_THREADS)
			return doc_fail(err, errlen, "process %lld has more than %d threads",
					(long long)pid, JOB_MAX_THREADS);
	}
	return 0;
}

/* A job-wide dump read back: the nodes that did not answer. */
static void read_nodes(struct job_dump *jd, const struct jdoc *d, const struct jv *nodes)
{
	for (size_t i = 0; i < jv_len(nodes); i++) {
		const struct jv *n = jv_at(d, nodes, i);
		const char *name = jv_str(d, jv_get(d, n, "name"));

		if (name)
			add_node(jd, jobdump_intern(jd, name))->error = get_str(jd, d, n, "error");
	}
}

static int add_doc(struct job_dump *jd, const struct jdoc *d, const char *origin, char *err,
		   size_t errlen)
{
	const struct jv *root = jdoc_root(d), *procs = jv_get(d, root, "processes");
	struct doc_ctx c = { d, NULL, NULL, origin };
	int rc;

	if ((rc = check_doc(d, procs, err, errlen)) < 0)
		return rc;
	c.node = get_str(jd, d, root, "node");
	c.host = get_str(jd, d, root, "host");
	if (!jd->job)
		jd->job = get_str(jd, d, root, "job");
	read_nodes(jd, d, jv_get(d, root, "nodes"));
	if (c.node)
		add_node(jd, c.node);
	for (size_t i = 0; i < jv_len(procs); i++)
		read_proc(jd, &c, jv_at(d, procs, i));
	return 0;
}

/* Documents one after another, as a pipe from many hosts brings them. */
int jobdump_add_json(struct job_dump *jd, const char *text, size_t len, const char *origin,
		     char *err, size_t errlen)
{
	static const char *const raw_keys[] = { "frames", NULL };
	struct jdoc *d = &jd->doc;
	size_t at = 0, end = len, ndocs = 0;
	int rc = 0;

	d->raw_keys = raw_keys;
	d->known_raw = known_raw;
	d->known_ctx = jd;

	while (rc == 0 && (at < len || !ndocs)) {
		jd->nth = 0;
		rc = jdoc_parse_next(d, text, len, at, &end, err, errlen);
		if (rc == 0)
			rc = add_doc(jd, d, origin, err, errlen);
		if (rc < 0 && ndocs && !strstr(err, "byte "))
			doc_fail(err, errlen, "document %zu (from byte %zu): %s", ndocs + 1, at,
				 strdupa(err));
		ndocs++;
		at = end;
	}
	return rc;
}

void jobdump_mark(const struct job_dump *jd, struct jobdump_mark *m)
{
	*m = (struct jobdump_mark){ jd->nprocs, jd->nthreads, jd->nnodes, jd->job };
}

void jobdump_undo(struct job_dump *jd, const struct jobdump_mark *m)
{
	for (size_t i = m->nprocs; i < jd->nprocs; i++)
		free(jd->procs[i].argv);
	jd->nprocs = m->nprocs;
	jd->nthreads = m->nthreads;
	jd->nnodes = m->nnodes;
	jd->job = m->job;
}

const struct job_frame *jobdump_innermost(const struct job_dump *jd, uint32_t stack)
{
	const struct job_stack *s = &jd->stacks[stack];

	for (uint32_t i = 0; i < s->n; i++)
		if (jd->frames[jd->stackv[s->at + i]].kind == JF_PYTHON)
			return &jd->frames[jd->stackv[s->at + i]];
	return NULL;
}

void jobdump_release(struct job_dump *jd)
{
	for (size_t i = 0; i < jd->nprocs; i++)
		free(jd->procs[i].argv);
	for (size_t i = 0; i < jd->nstrs; i++)
		free(jd->strs[i]);
	free(jd->strs);
	free(jd->nodes);
	free(jd->procs);
	free(jd->threads);
	free(jd->frames);
	free(jd->stacks);
	free(jd->stackv);
	free(jd->scratch);
	hashidx_release(&jd->frame_ix);
	hashidx_release(&jd->stack_ix);
	hashidx_release(&jd->str_ix);
	jdoc_release(&jd->doc);
	jdoc_release(&jd->sub);
	for (size_t i = 0; i < jd->nraws; i++)
		free(jd->raws[i].text);
	free(jd->raws);
	hashidx_release(&jd->raw_ix);
	hashidx_release(&jd->head_ix);
	free(jd->hint);
	memset(jd, 0, sizeof(*jd));
}
