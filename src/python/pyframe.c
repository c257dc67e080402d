/* The frame chain: walking it, one thread's stack decoded in full, and
 * frames decoded one at a time (asyncio tasks). */
#include "python/pystack_int.h"
#include "interp/linetable.h"
#include "process/mem.h"
#include "python/codecache.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int read_raw_frame(struct mem *m, const struct py_layout *L, uint64_t frame,
		   struct raw_frame *rf)
{
	uint32_t offs[] = { L->frame.back, L->frame.code, L->frame.lasti, L->frame.owner };
	uint8_t buf[256];
	const uint8_t *fb;
	uint32_t size = layout_span(offs, ARRAY_SIZE(offs));
	int rc;

	if (size > sizeof(buf))
		return -EINVAL;
	if (!(fb = mem_peek(m, frame, size))) {
		if ((rc = mem_read(m, frame, buf, size)) < 0)
			return rc;
		fb = buf;
	}
	rf->back = field_u64(fb, L->frame.back);
	rf->code = rf->code_word = field_u64(fb, L->frame.code);
	if (L->frame.code_tagged)
		rf->code &= ~(uint64_t)3;
	rf->lasti = L->lasti == LASTI_PTR ? field_u64(fb, L->frame.lasti)
					  : (uint64_t)(uint32_t)field_i32(fb, L->frame.lasti);
	rf->owner = L->frame.owner != NONE ? fb[L->frame.owner] : 0;
	return 0;
}

enum walk_end pystack_walk(struct mem *m, const struct py_layout *L, uint64_t frame,
			   int max, pyframe_fn fn, void *arg, int *nframes, int *rcp)
{
	struct cycle cy;
	int steps = 0, rc;

	*nframes = 0;
	*rcp = 0;
	if (max <= 0)
		max = PYSTACK_MAX_DEPTH;
	cycle_init(&cy, frame);
	while (frame) {
		struct raw_frame rf;

		/* Shims and skipped frames count too, so garbage cannot spin. */
		if (++steps > 4 * max)
			return WALK_TRUNCATED;
		if ((rc = read_raw_frame(m, L, frame, &rf)) < 0) {
			*rcp = rc;
			return WALK_READ_ERROR;
		}
		/* 3.11/3.12: a frame pushed but not started yet (one unit
		 * before its first instruction) is not shown by the
		 * interpreter either.  Any other pointer before its code is a
		 * torn read, which the code cache refuses
		 * (code_offset_plausible()): hiding the frame would pass it. */
		if (L->lasti == LASTI_PTR && L->minor <= 12 &&
		    (int64_t)(rf.lasti - (rf.code + L->code.code_adaptive)) == -2)
			rf.code = 0;
		if (rf.owner < L->frame.owner_shim && rf.code) {
			if (*nframes >= max)
				return WALK_TRUNCATED;
			if ((rc = fn(arg, frame, &rf)) < 0) {
				*rcp = rc;
				return WALK_VISIT_ERROR;
			}
			++*nframes;
		}
		frame = rf.back;
		if (frame && cycle_step(&cy, frame))
			return WALK_LOOP;
	}
	return WALK_DONE;
}

void py_frame_release(struct py_frame *f)
{
	for (int k = 0; k < f->nlocals; k++) {
		free(f->locals[k].name);
		free(f->locals[k].type);
		free(f->locals[k].repr);
	}
	free(f->locals);
	free(f->function);
	free(f->file);
}

/* The dump's visitor: decode every frame in full. */
struct decode_arg {
	struct walk *w;
	struct py_thread *t;
	size_t cap;
};

static int decode_frame(void *arg, uint64_t frame, const struct raw_frame *rf)
{
	struct decode_arg *d = arg;
	struct py_thread *t = d->t;
	struct py_frame pf = { 0 };
	int rc = read_code(d->w, rf->code, rf->lasti, frame, &pf);

	if (rc < 0) {
		py_frame_release(&pf);
		return rc;
	}
	ALLOC_GROW(t->frames, t->nframes + 1, d->cap);
	t->frames[t->nframes++] = pf;
	return 0;
}

/* Append the frames of one thread state to t, at most max_depth in all. */
static void walk_part(struct walk *w, const struct py_tstate *ts, struct py_thread *t)
{
	struct decode_arg d = { w, t, t->nframes };
	int first = t->nframes, n, rc;
	int max = (w->o->max_depth > 0 ? w->o->max_depth : PYSTACK_MAX_DEPTH) - t->nframes;

	if (ts->frame_err < 0) {
		t->error = xasprintf("cannot read the current frame (%s)", strerror(-ts->frame_err));
		return;
	}
	if (!ts->frame)
		return;
	if (w->frames_left <= 0 || max <= 0) {
		t->truncated = true;
		return;
	}
	if (max > w->frames_left)
		max = w->frames_left;
	w->frames_left -= max;	/* given back below for what was not used */
	switch (pystack_walk(w->c.m, w->c.L, ts->frame, max, decode_frame, &d, &n, &rc)) {
	case WALK_DONE:
		break;
	case WALK_TRUNCATED:
		t->truncated = true;
		break;
	case WALK_LOOP:
		t->error = xstrdup("frame chain loops");
		break;
	case WALK_READ_ERROR:
		t->error = xasprintf("cannot read a frame (%s)", strerror(-rc));
		break;
	case WALK_VISIT_ERROR:
		t->error = xasprintf("cannot read a code object (%s)", strerror(-rc));
		break;
	}
	w->frames_left += max - (t->nframes - first);
	for (int i = first; i < t->nframes; i++)
		t->frames[i].interp = ts->interp;
}

void walk_thread(struct walk *w, const struct py_tstate *ts, struct py_thread *t)
{
	t->tstate = ts->addr;
	t->ident = ts->ident;
	t->interps = xcalloc(ts->nparts, sizeof(*t->interps));
	t->state = ts->state;
	for (int p = 0; p < ts->nparts; p++) {
		t->interps[t->ninterps++] = ts[p].interp;
		t->gil |= ts[p].gil;
		t->gc |= ts[p].gc;
		if (!t->tid)
			t->tid = ts[p].tid;
		if (!t->error && !t->truncated)
			walk_part(w, &ts[p], t);
	}
}

/* --- frames one at a time -------------------------------------------------- */

/* Thousands of tasks suspended in the same few places decode the same
 * (code, lasti) over and over, alternating line tables the walk's
 * one-table cache cannot keep: a small direct-mapped memo, each entry
 * holding the identity of the code object it was decoded from (see
 * codecache.h).  A hit must read that identity unchanged (the same type,
 * names, file, line table and first line at the same addresses), so a
 * code object reborn at the address is decoded anew. */
#define MEMO_SLOTS 256

struct frame_memo {
	uint64_t code, lasti;
	struct code_identity id;
	char *function, *file;
	int line;
	bool used;
};

struct frame_decoder {
	struct walk w;
	struct walk_opts o;
	struct frame_memo memo[MEMO_SLOTS];
};

struct frame_decoder *frame_decoder_new(struct mem *m, const struct pyinterp *pi)
{
	struct frame_decoder *d = xcalloc(1, sizeof(*d));

	d->w = (struct walk){ .c = { m, &pi->layout }, .pi = pi, .o = &d->o,
			      .frames_left = WALK_FRAME_BUDGET };
	return d;
}

static void memo_fill(struct frame_memo *e, uint64_t code, uint64_t lasti,
		      const struct code_identity *id, const struct py_frame *pf)
{
	free(e->function);
	free(e->file);
	e->code = code;
	e->lasti = lasti;
	e->id = *id;
	e->function = xstrdup(pf->function);
	e->file = xstrdup(pf->file);
	e->line = pf->line;
	e->used = true;
}

int frame_decode(struct frame_decoder *d, uint64_t frame, uint64_t code, uint64_t lasti,
		 struct py_frame *out)
{
	struct frame_memo *e = &d->memo[hash_u64(code * 31 + lasti) % MEMO_SLOTS];
	struct code_identity id;
	bool have_id;
	int rc;

	memset(out, 0, sizeof(*out));
	have_id = code_identity_read(d->w.c.m, d->w.c.L, code, &id) == 0;
	if (have_id && e->used && e->code == code && e->lasti == lasti &&
	    code_identity_same(&e->id, &id)) {
		out->code = code;
		out->function = xstrdup(e->function);
		out->file = xstrdup(e->file);
		out->line = e->line;
		return 0;
	}
	rc = read_code(&d->w, code, lasti, frame, out);
	if (rc < 0) {
		py_frame_release(out);
		return rc;
	}
	if (have_id && out->function && out->file)
		memo_fill(e, code, lasti, &id, out);
	return 0;
}

void frame_decoder_free(struct frame_decoder *d)
{
	if (!d)
		return;
	for (int i = 0; i < MEMO_SLOTS; i++) {
		free(d->memo[i].function);
		free(d->memo[i].file);
	}
	linetable_ranges_free(&d->w.ranges);
	free(d);
}
