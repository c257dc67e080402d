/* The <wait:...> leaf frames; see waitmark.h. */
#include "analysis/waitmark.h"
#include "process/srcline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A frame's class not looked at yet; with PRODUCER: the frame is the
 * input pipeline's own loop (wait_frame_is_producer()). */
#define UNKNOWN 0xff
#define PRODUCER 0x40

struct waitmark {
	struct profile *p;
	struct waitsum *sum;
	struct srcline_cache *src;
	uint32_t renamed;	/* p->renamed when frame_cls was made */
	uint8_t *frame_cls;	/* per frame id: its class by the frame rules */
	uint8_t *line_cls;	/* per frame id: its line's by the line rules */
	char **where;		/* per frame id: "function (file:line)", or NULL */
	size_t nframes;		/* entries of the three above */
	uint32_t marker[WC_COUNT];	/* frame ids, UINT32_MAX until used */
	uint32_t *buf;		/* a stack with its marker */
	size_t buf_cap;
};

static const uint32_t *decorate(void *arg, uint32_t thread, const uint32_t *frames,
				uint32_t *depth);

struct waitmark *waitmark_new(struct profile *p)
{
	struct waitmark *w = xcalloc(1, sizeof(*w));

	w->p = p;
	w->sum = waitsum_new();
	w->src = srcline_new();
	w->renamed = p->renamed;
	memset(w->marker, 0xff, sizeof(w->marker));
	p->decorate = decorate;
	p->decorate_arg = w;
	return w;
}

void waitmark_free(struct waitmark *w)
{
	if (!w)
		return;
	w->p->decorate = NULL;
	w->p->decorate_arg = NULL;
	for (size_t i = 0; i < w->nframes; i++)
		free(w->where[i]);
	free(w->where);
	free(w->frame_cls);
	free(w->line_cls);
	free(w->buf);
	srcline_free(w->src);
	waitsum_free(w->sum);
	free(w);
}

const struct waitsum *waitmark_summary(const struct waitmark *w)
{
	return w->sum;
}

/* Room for frame id in the per-frame tables. */
static void grow(struct waitmark *w, uint32_t id)
{
	size_t n = w->nframes;

	if (id < n)
		return;
	w->nframes = id + 1 > 2 * n ? id + 1 : 2 * n;
	w->frame_cls = xrealloc(w->frame_cls, w->nframes);
	w->line_cls = xrealloc(w->line_cls, w->nframes);
	w->where = xrealloc(w->where, w->nframes * sizeof(*w->where));
	memset(w->frame_cls + n, UNKNOWN, w->nframes - n);
	memset(w->line_cls + n, UNKNOWN, w->nframes - n);
	memset(w->where + n, 0, (w->nframes - n) * sizeof(*w->where));
}

/* The frame rules' class of frame id, PRODUCER added for a pipeline loop. */
static unsigned frame_class(struct waitmark *w, uint32_t id)
{
	/* A native frame named since it was looked at may match now. */
	if (w->renamed != w->p->renamed) {
		memset(w->frame_cls, UNKNOWN, w->nframes);
		w->renamed = w->p->renamed;
	}
	grow(w, id);
	if (w->frame_cls[id] == UNKNOWN)
		w->frame_cls[id] = (uint8_t)wait_class_of_frame(&w->p->frames[id]) |
				   (wait_frame_is_producer(&w->p->frames[id]) ? PRODUCER : 0);
	return w->frame_cls[id];
}

/* The line rules on the source line of Python frame id, in process pid's
 * view of its files. */
static enum wait_class line_class(struct waitmark *w, uint32_t id, pid_t pid)
{
	const struct pframe *f = &w->p->frames[id];
	char root[32], cwd[32];

	grow(w, id);
	if (w->line_cls[id] != UNKNOWN)
		return (enum wait_class)w->line_cls[id];
	w->line_cls[id] = WC_NONE;
	if (f->kind == PF_PYTHON && f->file && f->line > 0) {
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
		snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)pid);
		w->line_cls[id] = (uint8_t)wait_class_of_line(srcline_get(w->src, root, cwd,
									  f->file, f->line));
	}
	return (enum wait_class)w->line_cls[id];
}

/* The label of the innermost Python frame, for the summary's "85% in
 * augment (job.py:20)": the function and where it starts. */
static const char *where_of(struct waitmark *w, const uint32_t *frames, uint32_t depth)
{
	for (uint32_t i = depth; i-- > 0;) {
		const struct pframe *f = &w->p->frames[frames[i]];

		if (f->kind != PF_PYTHON || !f->file)
			continue;
		grow(w, frames[i]);
		if (!w->where[frames[i]])
			w->where[frames[i]] = xasprintf("%s (%s:%d)", f->name,
							profile_display_file(f->file, false),
							f->firstlineno > 0 ? f->firstlineno : f->line);
		return w->where[frames[i]];
	}
	return NULL;
}

/* The best class of a pipeline thread's stack other than data. */
static enum wait_class data_aside(struct waitmark *w, const uint32_t *frames, uint32_t n)
{
	enum wait_class best = WC_NONE;

	for (uint32_t i = 0; i < n; i++) {
		enum wait_class c = (enum wait_class)(frame_class(w, frames[i]) & ~PRODUCER);

		if (c != WC_NONE && c != WC_DATA && (best == WC_NONE || c < best))
			best = c;
	}
	return best;
}

static bool marked(enum wait_class c)
{
	return c == WC_GPU || c == WC_DATA || c == WC_COLLECTIVE;
}

static uint32_t marker(struct waitmark *w, enum wait_class c)
{
	if (w->marker[c] == UINT32_MAX) {
		char *name = xasprintf(PFRAME_WAIT_PREFIX "%s>", wait_class_name(c));

		w->marker[c] = profile_frame(w->p, &(struct pframe){ PF_MARKER, name, NULL, -1, -1 });
		free(name);
	}
	return w->marker[c];
}

/* A stack's class by the frame rules, as wait_class_of_frames() gives it
 * (the classes are in order of precedence, and the pipeline's own threads
 * never wait for data), from the classes kept per frame. */
static enum wait_class stack_class(struct waitmark *w, const uint32_t *frames, uint32_t n)
{
	enum wait_class best = WC_NONE;
	bool producer = false;

	for (uint32_t i = 0; i < n; i++) {
		unsigned fc = frame_class(w, frames[i]);
		enum wait_class c = (enum wait_class)(fc & ~PRODUCER);

		producer |= fc & PRODUCER;
		if (c != WC_NONE && (best == WC_NONE || c < best))
			best = c;
	}
	return best == WC_DATA && producer ? data_aside(w, frames, n) : best;
}

static const uint32_t *decorate(void *arg, uint32_t thread, const uint32_t *frames,
				uint32_t *depth)
{
	struct waitmark *w = arg;
	const struct pthread_info *t = &w->p->threads[thread];
	uint32_t n = *depth;
	enum wait_class best = stack_class(w, frames, n);

	if (best == WC_NONE && n)
		best = line_class(w, frames[n - 1], t->pid);
	waitsum_add(w->sum, t->pid, t->tid, best, t->idle, where_of(w, frames, n));
	if (!marked(best))
		return frames;
	ALLOC_GROW(w->buf, n + 1, w->buf_cap);
	memcpy(w->buf, frames, n * sizeof(*frames));
	w->buf[n] = marker(w, best);
	*depth = n + 1;
	return w->buf;
}

/* profile_add_leaves()'s: the marker a stack that has none should have
 * by the frame rules.  (The line rules were tried as it was counted, on
 * Python frames, which are never renamed.) */
static uint32_t missing_marker(void *arg, const struct profile *p, const uint32_t *frames,
			       uint32_t depth)
{
	struct waitmark *w = arg;
	enum wait_class c;

	if (!depth || pframe_category(&p->frames[frames[depth - 1]]) == CAT_WAIT)
		return UINT32_MAX;
	c = stack_class(w, frames, depth);
	return marked(c) ? marker(w, c) : UINT32_MAX;
}

void waitmark_finish(struct waitmark *w)
{
	w->p->decorate = NULL;
	profile_add_leaves(w->p, missing_marker, w);
}
