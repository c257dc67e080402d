#include "profile/profile.h"
#include "profile/shortname.h"
#include "util/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define NO_RUN UINT32_MAX

void profile_init(struct profile *p, double rate_hz)
{
	memset(p, 0, sizeof(*p));
	p->rate_hz = rate_hz;
	p->interval_ns = rate_hz > 0 ? (uint64_t)(1e9 / rate_hz) : 10000000;
}

void profile_free(struct profile *p)
{
	for (uint32_t i = 0; i < p->nframes; i++) {
		free(p->frames[i].name);
		free(p->frames[i].file);
	}
	for (uint32_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i].frames);
	for (uint32_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].name);
	free(p->frames);
	hashidx_release(&p->frame_index);
	free(p->stacks);
	hashidx_release(&p->stack_index);
	hashidx_release(&p->stack_thread_index);
	free(p->threads);
	free(p->runs);
	free(p->stack_threads);
	for (uint32_t i = 0; i < p->ncounters; i++) {
		free(p->counters[i].name);
		free(p->counters[i].unit);
		free(p->counters[i].points);
	}
	free(p->counters);
	free(p->command);
	free(p->python_version);
	memset(p, 0, sizeof(*p));
}

static uint32_t frame_hash(const struct pframe *f)
{
	uint32_t h = hash_bytes(HASH_INIT, &f->kind, sizeof(f->kind));

	h = hash_str(h, f->name ? f->name : "");
	h = hash_bytes(h, "\0", 1);
	h = hash_str(h, f->file ? f->file : "");
	return hash_bytes(h, &f->line, sizeof(f->line));
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool frame_eq(const struct pframe *a, const struct pframe *b)
{
	return a->kind == b->kind && a->line == b->line && str_eq(a->name, b->name) &&
	       str_eq(a->file, b->file);
}

uint32_t profile_frame(struct profile *p, const struct pframe *f)
{
	uint32_t h = frame_hash(f), id;
	struct hashidx_pos pos;
	struct pframe *nf;

	for (id = hashidx_first(&p->frame_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&p->frame_index, &pos))
		if (frame_eq(&p->frames[id], f))
			return id;
	ALLOC_GROW(p->frames, p->nframes + 1, p->frames_cap);
	id = p->nframes++;
	nf = &p->frames[id];
	*nf = *f;
	nf->name = xstrdup(f->name ? f->name : "?");
	nf->file = f->file ? xstrdup(f->file) : NULL;
	hashidx_add(&p->frame_index, h, id);
	return id;
}

void profile_frame_rename(struct profile *p, uint32_t id, const struct pframe *f)
{
	uint32_t h = frame_hash(f), other;
	struct hashidx_pos pos;
	struct pframe *old = &p->frames[id];
	bool found = false;

	for (other = hashidx_first(&p->frame_index, h, &pos); other != HASHIDX_NONE && !found;
	     other = hashidx_next(&p->frame_index, &pos))
		found = frame_eq(&p->frames[other], f);
	free(old->name);
	free(old->file);
	*old = *f;
	old->name = xstrdup(f->name ? f->name : "?");
	old->file = f->file ? xstrdup(f->file) : NULL;
	/* Its old key stays in the index, matching nothing now. */
	if (!found)
		hashidx_add(&p->frame_index, h, id);
	p->renamed++;
}

uint32_t profile_thread(struct profile *p, pid_t pid, pid_t tid, const char *name)
{
	struct pthread_info *t;

	for (uint32_t i = 0; i < p->nthreads; i++) {
		t = &p->threads[i];
		if (t->pid != pid || t->tid != tid)
			continue;
		/* Threads are named late (threading sets the name after start). */
		if (name && (!t->name || strcmp(t->name, name) != 0)) {
			free(t->name);
			t->name = xstrdup(name);
		}
		return i;
	}
	return profile_thread_new(p, pid, tid, name);
}

uint32_t profile_thread_new(struct profile *p, pid_t pid, pid_t tid, const char *name)
{
	struct pthread_info *t;

	ALLOC_GROW(p->threads, p->nthreads + 1, p->threads_cap);
	t = &p->threads[p->nthreads];
	t->pid = pid;
	t->tid = tid;
	t->name = name ? xstrdup(name) : NULL;
	t->last_run = NO_RUN;
	t->idle = false;
	t->samples = 0;
	memset(t->loss, 0, sizeof(t->loss));
	return p->nthreads++;
}

static bool stack_eq(const struct pstack *s, const uint32_t *frames, uint32_t depth)
{
	return s->depth == depth && memcmp(s->frames, frames, depth * sizeof(*frames)) == 0;
}

uint32_t profile_stack(struct profile *p, const uint32_t *frames, uint32_t depth)
{
	uint32_t h = hash_u32s(HASH_INIT, frames, depth), id;
	struct hashidx_pos pos;
	struct pstack *s;

	for (id = hashidx_first(&p->stack_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&p->stack_index, &pos))
		if (stack_eq(&p->stacks[id], frames, depth))
			return id;
	ALLOC_GROW(p->stacks, p->nstacks + 1, p->stacks_cap);
	id = p->nstacks++;
	s = &p->stacks[id];
	s->frames = xmalloc((depth ? depth : 1) * sizeof(*frames));
	memcpy(s->frames, frames, depth * sizeof(*frames));
	s->depth = depth;
	s->count = 0;
	hashidx_add(&p->stack_index, h, id);
	return id;
}

/* Extend the thread's latest run when this sample continues it, else start
 * a new one.  Each round falls at a random instant of its own interval
 * (sample/fleet.h), so consecutive rounds are up to two intervals apart,
 * and a round may be late: a run reaches an interval past its last sample,
 * and a sample up to one and a half intervals after that continues it.  A
 * longer gap (missed rounds, a thread that was idle and filtered out) ends
 * a run.  A single round missed leaves a gap of one to three intervals, so
 * the spread of instants hides most of them: a timeline's resolution is
 * about two intervals. */
static void add_run(struct profile *p, uint32_t thread, uint32_t stack, uint64_t t_ns,
		    uint32_t weight)
{
	struct pthread_info *t = &p->threads[thread];
	uint64_t interval = p->interval_ns;
	struct prun *r;

	if (t->last_run != NO_RUN) {
		r = &p->runs[t->last_run];
		if (r->stack == stack && t_ns <= r->end_ns + interval + interval / 2) {
			r->end_ns = t_ns + interval;
			r->samples += weight;
			return;
		}
	}
	ALLOC_GROW(p->runs, p->nruns + 1, p->runs_cap);
	r = &p->runs[p->nruns];
	r->thread = thread;
	r->stack = stack;
	r->start_ns = t_ns;
	r->end_ns = t_ns + interval;
	r->samples = weight;
	t->last_run = p->nruns++;
}

void profile_add(struct profile *p, uint32_t thread, const uint32_t *frames,
		 uint32_t depth, uint64_t t_ns, uint32_t weight)
{
	uint32_t id;
	struct pstack *s;

	if (p->decorate && thread < p->nthreads)
		frames = p->decorate(p->decorate_arg, thread, frames, &depth);
	id = profile_stack(p, frames, depth);
	s = &p->stacks[id];

	s->count += weight;
	p->samples += weight;
	if (thread >= p->nthreads)
		return;
	p->threads[thread].samples += weight;
	if (p->observe)
		p->observe(p->observe_arg, thread, id, t_ns);
	/* Without runs, which thread saw the stack how often is kept per
	 * (stack, thread): it grows with those pairs, not with samples. */
	if (p->no_timeline)
		profile_add_stack_thread(p, id, thread, weight);
	else
		add_run(p, thread, id, t_ns, weight);
}

bool profile_add_count(struct profile *p, const uint32_t *frames, uint32_t depth,
		       uint64_t count)
{
	uint32_t id;

	if (p->samples + count < p->samples)
		return false;
	id = profile_stack(p, frames, depth);
	p->stacks[id].count += count;
	p->samples += count;
	return true;
}

void label_strip_line(char *label)
{
	size_t n = strlen(label), i;

	if (n < 4 || label[n - 1] != ')')
		return;
	for (i = n - 1; i > 0 && label[i - 1] >= '0' && label[i - 1] <= '9'; i--)
		;
	if (i < n - 1 && i > 1 && label[i - 1] == ':') {
		label[i - 1] = ')';
		label[i] = 0;
	}
}

static uint32_t append_frame(struct profile *dst, const struct pframe *f,
			     const struct append_opts *o)
{
	struct pframe t = { PF_PYTHON, NULL, NULL, -1, -1 };
	uint32_t id;

	if (!o->by_label)
		return profile_frame(dst, f);
	t.name = pframe_label(f, o->full_filenames);
	if (o->by_function)
		label_strip_line(t.name);
	id = profile_frame(dst, &t);
	free(t.name);
	return id;
}

/* "thread 123 \"name\"" -> "thread \"name\"", "thread 123" -> "thread",
 * "process 123: CMD" -> "process: CMD"; NULL for any other label. */
static char *root_without_id(const char *label)
{
	const char *kinds[] = { "thread ", "process " };

	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		size_t n = strlen(kinds[k]);
		const char *p = label + n, *rest;

		if (strncmp(label, kinds[k], n) || !isdigit((unsigned char)*p))
			continue;
		while (isdigit((unsigned char)*p))
			p++;
		rest = p;
		if (k == 0 && (!*rest || !strncmp(rest, " \"", 2)))
			return xasprintf("thread%s", rest);
		if (k == 1 && !strncmp(rest, ": ", 2))
			return xasprintf("process%s", rest);
	}
	return NULL;
}

/* The frame a root position of a stack (the first two: a process, then a
 * thread) maps to, rewritten by root_without_id() once per frame. */
static uint32_t append_root(struct profile *dst, const struct profile *src, uint32_t f,
			    const uint32_t *map, uint32_t *roots, const struct append_opts *o)
{
	struct pframe t = { PF_PYTHON, NULL, NULL, -1, -1 };
	char *label;

	if (roots[f] != UINT32_MAX)
		return roots[f];
	label = pframe_label(&src->frames[f], o->full_filenames);
	t.name = root_without_id(label);
	roots[f] = t.name ? profile_frame(dst, &t) : map[f];
	free(t.name);
	free(label);
	return roots[f];
}

void profile_add_stack_thread(struct profile *p, uint32_t stack, uint32_t thread,
			      uint64_t count)
{
	uint32_t h = hash_u64((uint64_t)stack << 32 | thread), id;
	struct hashidx_pos pos;

	for (id = hashidx_first(&p->stack_thread_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&p->stack_thread_index, &pos)) {
		struct pstack_thread *st = &p->stack_threads[id];

		if (st->stack == stack && st->thread == thread) {
			st->count += count;
			return;
		}
	}
	ALLOC_GROW(p->stack_threads, p->nstack_threads + 1, p->stack_threads_cap);
	p->stack_threads[p->nstack_threads] = (struct pstack_thread){ stack, thread, count };
	hashidx_add(&p->stack_thread_index, h, p->nstack_threads++);
}

/* src's threads of stacks into dst, whose stack for src's stack i is
 * dst_stack[i] (UINT32_MAX: none). */
static void append_stack_threads(struct profile *dst, const struct profile *src,
				 const uint32_t *dst_stack)
{
	for (uint32_t i = 0; i < src->nstack_threads; i++) {
		const struct pstack_thread *st = &src->stack_threads[i];
		const struct pthread_info *t = &src->threads[st->thread];

		if (dst_stack[st->stack] == UINT32_MAX)
			continue;
		profile_add_stack_thread(dst, dst_stack[st->stack],
					 profile_thread(dst, t->pid, t->tid, t->name), st->count);
	}
}

bool profile_append(struct profile *dst, const struct profile *src,
		    const struct append_opts *o)
{
	size_t size = (src->nframes ? src->nframes : 1) * sizeof(uint32_t);
	uint32_t *map = xmalloc(size), *roots = NULL, *buf = NULL, *dst_stack, cap = 0;
	bool ok = true;

	for (uint32_t i = 0; i < src->nframes; i++)
		map[i] = append_frame(dst, &src->frames[i], o);
	if (o->by_label && o->roots_by_name) {
		roots = xmalloc(size);
		memset(roots, 0xff, size);	/* UINT32_MAX: not looked at yet */
	}
	dst_stack = xmalloc((src->nstacks ? src->nstacks : 1) * sizeof(*dst_stack));
	for (uint32_t i = 0; i < src->nstacks && ok; i++) {
		const struct pstack *s = &src->stacks[i];
		uint32_t n = 0;

		dst_stack[i] = UINT32_MAX;
		if (!s->count)
			continue;
		ALLOC_GROW(buf, s->depth + 1, cap);
		if (o->root)
			buf[n++] = profile_frame(dst, o->root);
		for (uint32_t d = 0; d < s->depth; d++)
			buf[n++] = roots && d < 2 ? append_root(dst, src, s->frames[d], map, roots, o)
						  : map[s->frames[d]];
		ok = profile_add_count(dst, buf, n, s->count);
		dst_stack[i] = profile_stack(dst, buf, n);
	}
	if (ok)
		append_stack_threads(dst, src, dst_stack);
	free(dst_stack);
	free(buf);
	free(roots);
	free(map);
	return ok;
}

/* One stack of src under roots (n of them, in buf already), counted as
 * thread t's count samples; thread UINT32_MAX: no thread. */
static bool append_rooted(struct profile *dst, const struct profile *src, const uint32_t *map,
			  uint32_t stack, uint32_t t, uint64_t count, uint32_t **buf,
			  uint32_t *cap, uint32_t n)
{
	const struct pstack *s = &src->stacks[stack];
	const struct pthread_info *ti;
	uint32_t ds;

	ALLOC_GROW(*buf, n + s->depth + 1, *cap);
	for (uint32_t d = 0; d < s->depth; d++)
		(*buf)[n++] = map[s->frames[d]];
	if (!profile_add_count(dst, *buf, n, count))
		return false;
	if (t == UINT32_MAX)
		return true;
	ds = profile_stack(dst, *buf, n);
	ti = &src->threads[t];
	profile_add_stack_thread(dst, ds, profile_thread(dst, ti->pid, ti->tid, ti->name), count);
	return true;
}

bool profile_append_by_process(struct profile *dst, const struct profile *src,
			       const struct append_opts *o,
			       const struct pframe *(*proc_root)(void *arg, pid_t pid), void *arg)
{
	size_t size = (src->nframes ? src->nframes : 1) * sizeof(uint32_t);
	uint32_t *map = xmalloc(size), *buf = NULL, cap = 0, root = UINT32_MAX;
	uint64_t *left = xcalloc(src->nstacks ? src->nstacks : 1, sizeof(*left));
	bool ok = true;

	for (uint32_t i = 0; i < src->nframes; i++)
		map[i] = append_frame(dst, &src->frames[i], o);
	if (o->root)
		root = profile_frame(dst, o->root);
	for (uint32_t i = 0; i < src->nstacks; i++)
		left[i] = src->stacks[i].count;
	for (uint32_t i = 0; i < src->nstack_threads && ok; i++) {
		const struct pstack_thread *st = &src->stack_threads[i];
		const struct pframe *pr = proc_root(arg, src->threads[st->thread].pid);
		uint32_t n = 0;

		ALLOC_GROW(buf, 2, cap);
		if (root != UINT32_MAX)
			buf[n++] = root;
		if (pr)
			buf[n++] = profile_frame(dst, pr);
		ok = append_rooted(dst, src, map, st->stack, st->thread, st->count, &buf, &cap, n);
		left[st->stack] -= st->count < left[st->stack] ? st->count : left[st->stack];
	}
	for (uint32_t i = 0; i < src->nstacks && ok; i++) {
		ALLOC_GROW(buf, 1, cap);
		if (left[i])
			ok = append_rooted(dst, src, map, i, UINT32_MAX, left[i], &buf, &cap,
					   root != UINT32_MAX ? (buf[0] = root, 1) : 0);
	}
	free(left);
	free(buf);
	free(map);
	return ok;
}

/* Intern every frame again: frames made equal by renames become one, and
 * the ids are dense again.  Returns each old id's new id. */
static uint32_t *renumber_frames(struct profile *p)
{
	struct pframe *old = p->frames;
	uint32_t n = p->nframes, *map = xmalloc((n ? n : 1) * sizeof(*map));

	p->frames = NULL;
	p->nframes = p->frames_cap = 0;
	/* Its renamed frames' old keys go with it. */
	hashidx_release(&p->frame_index);
	for (uint32_t i = 0; i < n; i++) {
		map[i] = profile_frame(p, &old[i]);
		free(old[i].name);
		free(old[i].file);
	}
	free(old);
	return map;
}

/* Rewrite every stack through fmap (NULL: as it is), with the frame
 * leaf() gives it added innermost (none when UINT32_MAX, or leaf NULL), and
 * intern it again, summing the counts of stacks that became equal.
 * Returns each old id's new id. */
static uint32_t *merge_equal_stacks(struct profile *p, const uint32_t *fmap, profile_leaf_fn *leaf,
			       void *arg)
{
	struct pstack *old = p->stacks;
	uint32_t n = p->nstacks, *map = xmalloc((n ? n : 1) * sizeof(*map));

	p->stacks = NULL;
	p->nstacks = p->stacks_cap = 0;
	hashidx_release(&p->stack_index);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t add = leaf ? leaf(arg, p, old[i].frames, old[i].depth) : UINT32_MAX;

		for (uint32_t d = 0; fmap && d < old[i].depth; d++)
			old[i].frames[d] = fmap[old[i].frames[d]];
		if (add != UINT32_MAX) {
			old[i].frames = xrealloc(old[i].frames,
						 (old[i].depth + 1) * sizeof(*old[i].frames));
			old[i].frames[old[i].depth++] = add;
		}
		map[i] = profile_stack(p, old[i].frames, old[i].depth);
		p->stacks[map[i]].count += old[i].count;
		free(old[i].frames);
	}
	free(old);
	return map;
}

static void repoint_stack_threads(struct profile *p, const uint32_t *smap)
{
	struct pstack_thread *old = p->stack_threads;
	uint32_t n = p->nstack_threads;

	p->stack_threads = NULL;
	p->nstack_threads = p->stack_threads_cap = 0;
	hashidx_release(&p->stack_thread_index);
	for (uint32_t i = 0; i < n; i++)
		profile_add_stack_thread(p, smap[old[i].stack], old[i].thread, old[i].count);
	free(old);
}

/* merge_equal_stacks(), then the runs and per-thread counts pointed at the
 * stacks' new ids. */
static void restack(struct profile *p, const uint32_t *fmap, profile_leaf_fn *leaf, void *arg)
{
	uint32_t *smap = merge_equal_stacks(p, fmap, leaf, arg);

	/* Runs keep their places (a thread's last_run stays valid); two
	 * neighbours may now show the same stack, which writers tolerate. */
	for (uint32_t i = 0; i < p->nruns; i++)
		p->runs[i].stack = smap[p->runs[i].stack];
	repoint_stack_threads(p, smap);
	free(smap);
}

void profile_merge_renamed(struct profile *p)
{
	uint32_t n = p->nframes, *fmap;

	if (!p->renamed)
		return;
	p->renamed = 0;
	fmap = renumber_frames(p);
	/* No two frames became one: every id kept its number. */
	if (p->nframes != n)
		restack(p, fmap, NULL, NULL);
	free(fmap);
}

void profile_add_leaves(struct profile *p, profile_leaf_fn *leaf, void *arg)
{
	restack(p, NULL, leaf, arg);
}

static const char *after(const char *s, const char *marker)
{
	const char *p = NULL, *q = s;

	/* The last occurrence: a venv inside another tree has several. */
	while ((q = strstr(q, marker))) {
		p = q + strlen(marker);
		q++;
	}
	return p;
}

const char *profile_display_file(const char *file, bool full)
{
	const char *p, *slash;

	if (!file)
		return "";
	if (full)
		return file;
	if ((p = after(file, "/site-packages/")) || (p = after(file, "/dist-packages/")))
		return p;
	if ((p = after(file, "/lib/python3.")) && (slash = strchr(p, '/')))
		return slash + 1;
	slash = strrchr(file, '/');
	return slash ? slash + 1 : file;
}

enum pframe_category pframe_category(const struct pframe *f)
{
	const char *file = f->file;

	if (!file && f->name && !strncmp(f->name, PFRAME_WAIT_PREFIX, strlen(PFRAME_WAIT_PREFIX)))
		return CAT_WAIT;
	switch (f->kind) {
	case PF_NATIVE:
		return CAT_NATIVE;
	case PF_PROCESS:
	case PF_THREAD:
	case PF_MARKER:
	case PF_LABEL:
		return CAT_ROOT;
	case PF_PYTHON:
		break;
	}
	if (!file)
		return CAT_USER;
	if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
		return CAT_SITE;
	if (strstr(file, "/lib/python3.") || !strncmp(file, "<frozen", 7))
		return CAT_STDLIB;
	return CAT_USER;
}

char *pframe_label(const struct pframe *f, bool full)
{
	if ((f->kind != PF_PYTHON && f->kind != PF_NATIVE) || !f->file)
		return xstrdup(f->name);
	if (f->line >= 0)
		return xasprintf("%s (%s:%d)", f->name, profile_display_file(f->file, full), f->line);
	return xasprintf("%s (%s)", f->name, profile_display_file(f->file, full));
}

char *pframe_shown_label(const struct pframe *f, bool full_filenames, bool full_names)
{
	struct pframe shown = *f;
	char *label;

	if (full_names || f->kind != PF_NATIVE)
		return pframe_label(f, full_filenames);
	shown.name = short_name(f->name);
	label = pframe_label(&shown, full_filenames);
	free(shown.name);
	return label;
}

static int run_cmp(const void *a, const void *b, void *arg)
{
	const struct prun *runs = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (runs[i].start_ns != runs[j].start_ns)
		return runs[i].start_ns < runs[j].start_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* A counting sort by thread, then each group by start time.  Runs arrive
 * in time order per thread, so the sorts are nearly free. */
void profile_runs_by_thread(const struct profile *p, uint32_t **firstp, uint32_t **orderp)
{
	uint32_t *first = xcalloc(p->nthreads + 1, sizeof(*first));
	uint32_t *order = xcalloc(p->nruns ? p->nruns : 1, sizeof(*order));
	uint32_t *next = xcalloc(p->nthreads ? p->nthreads : 1, sizeof(*next));

	for (uint32_t i = 0; i < p->nruns; i++)
		first[p->runs[i].thread + 1]++;
	for (uint32_t t = 0; t < p->nthreads; t++)
		first[t + 1] += first[t];
	memcpy(next, first, p->nthreads * sizeof(*next));
	for (uint32_t i = 0; i < p->nruns; i++)
		order[next[p->runs[i].thread]++] = i;
	free(next);
	for (uint32_t t = 0; t < p->nthreads; t++)
		qsort_r(order + first[t], first[t + 1] - first[t], sizeof(*order), run_cmp,
			p->runs);
	*firstp = first;
	*orderp = order;
}

uint32_t profile_counter(struct profile *p, const char *name, const char *unit)
{
	struct pcounter *c;

	ALLOC_GROW(p->counters, p->ncounters + 1, p->counters_cap);
	c = &p->counters[p->ncounters];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(name);
	c->unit = xstrdup(unit);
	return p->ncounters++;
}

void profile_counter_add(struct profile *p, uint32_t counter, uint64_t t_ns, double value)
{
	struct pcounter *c = &p->counters[counter];

	if (c->npoints && t_ns < c->points[c->npoints - 1].t_ns)
		return;
	ALLOC_GROW(c->points, c->npoints + 1, c->points_cap);
	c->points[c->npoints++] = (struct pcounter_point){ t_ns, value };
}
