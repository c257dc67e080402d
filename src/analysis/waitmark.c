/* The <wait:...> leaf frames; see waitmark.h. */
#include "analysis/waitmark.h"
#include "process/srcline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A frame's bits (wait_frame_bits()) not looked at yet. */
#define UNKNOWN 0xff

struct waitmark {
	struct profile *p;
	struct waitsum *sum;
	struct srcline_cache *src;
	uint32_t renamed;	/* p->renamed when frame_cls was made */
	uint8_t *frame_cls;	/* per frame id: its bits by the frame rules */
	uint8_t *line_cls;	/* per frame id: its line's class by the line rules */
	size_t nframes;		/* entries of the two above */
	uint32_t marker[WC_COUNT];	/* frame ids, UINT32_MAX until used */
	uint32_t *buf;		/* a stack with its marker */
	size_t buf_cap;
	uint8_t *bits;		/* a stack's frames' bits, innermost first */
	size_t bits_cap;
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
	free(w->frame_cls);
	free(w->line_cls);
	free(w->buf);
	free(w->bits);
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
	memset(w->frame_cls + n, UNKNOWN, w->nframes - n);
	memset(w->line_cls + n, UNKNOWN, w->nframes - n);
}

/* The frame rules' bits of frame id. */
static uint8_t frame_bits(struct waitmark *w, uint32_t id)
{
	/* A native frame named since it was looked at may match now. */
	if (w->renamed != w->p->renamed) {
		memset(w->frame_cls, UNKNOWN, w->nframes);
		w->renamed = w->p->renamed;
	}
	grow(w, id);
	if (w->frame_cls[id] == UNKNOWN)
		w->frame_cls[id] = wait_frame_bits(&w->p->frames[id]);
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

/* A stack's class by the frame rules (frames root first), as
 * wait_class_of_frames() gives it, from the bits kept per frame; *at (when
 * not NULL) the index of the frame that decided it. */
static enum wait_class stack_class(struct waitmark *w, const uint32_t *frames, uint32_t n,
				   uint32_t *at)
{
	enum wait_class c;
	uint32_t inner = 0;

	ALLOC_GROW(w->bits, n + 1, w->bits_cap);
	for (uint32_t i = 0; i < n; i++)
		w->bits[i] = frame_bits(w, frames[n - 1 - i]);
	c = wait_class_of_bits(w->bits, n, &inner);
	if (at)
		*at = c == WC_NONE ? UINT32_MAX : n - 1 - inner;
	return c;
}

static bool is_python(const struct pframe *f)
{
	return f->kind == PF_PYTHON && f->file;
}

/* Where the summary says a sample was: the innermost Python frame; for a
 * wait a Python frame decided (frames[at]), that frame "via" the code
 * that called it, "Queue.get from next_batch (job.py:48)": the nearest
 * caller of the program's own, else its direct caller.  false when the
 * stack has no Python frame. */
static bool place_of(struct waitmark *w, const uint32_t *frames, uint32_t n, uint32_t at,
		     struct waitsum_place *pl)
{
	const struct pframe *f = NULL;

	memset(pl, 0, sizeof(*pl));
	if (at < n && is_python(&w->p->frames[frames[at]]) && at > 0) {
		pl->via = w->p->frames[frames[at]].name;
		for (uint32_t i = at; i-- > 0 && !f;)
			if (is_python(&w->p->frames[frames[i]]) &&
			    pframe_category(&w->p->frames[frames[i]]) == CAT_USER)
				f = &w->p->frames[frames[i]];
		if (!f && is_python(&w->p->frames[frames[at - 1]]))
			f = &w->p->frames[frames[at - 1]];
		if (!f)
			pl->via = NULL;
	}
	for (uint32_t i = n; !f && i-- > 0;)
		if (is_python(&w->p->frames[frames[i]]))
			f = &w->p->frames[frames[i]];
	if (!f)
		return false;
	pl->function = f->name;
	pl->file = profile_display_file(f->file, false);
	pl->firstline = f->firstlineno;
	pl->line = f->line;
	return true;
}

static const uint32_t *decorate(void *arg, uint32_t thread, const uint32_t *frames,
				uint32_t *depth)
{
	struct waitmark *w = arg;
	const struct pthread_info *t = &w->p->threads[thread];
	uint32_t n = *depth, at = UINT32_MAX;
	enum wait_class best = stack_class(w, frames, n, &at);
	struct waitsum_place pl;

	if (best == WC_NONE && n)
		best = line_class(w, frames[n - 1], t->pid);
	waitsum_add(w->sum, t->pid, t->tid, best, t->idle,
		    place_of(w, frames, n, marked(best) ? at : UINT32_MAX, &pl) ? &pl : NULL);
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
	c = stack_class(w, frames, depth, NULL);
	return marked(c) ? marker(w, c) : UINT32_MAX;
}

void waitmark_finish(struct waitmark *w)
{
	w->p->decorate = NULL;
	profile_add_leaves(w->p, missing_marker, w);
}
