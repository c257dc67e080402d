/* One thread's stack in a sample: its Python frames walked (or, for a
 * thread that has not held the GIL since, its last stack taken whole:
 * unchanged()), turned into profile frames through the code cache, headed
 * by its root frames and asyncio tasks, and counted: at once when the
 * target is paused, else held until the recheck proves it (held.c), with
 * the words the walk read on the way.  Separate from sampler.c because it
 * is the reading of one thread, which a round, the still threads after a
 * pause (sample_pause.c) and the re-reading of torn stacks (reread.c) all
 * ask for. */
#include "sample/sampler_int.h"
#include "python/codecache.h"
#include "python/framereuse.h"
#include "python/pystack.h"
#include "python/recheck.h"
#include "native/nsample.h"
#include "profile/loss.h"
#include "process/mem.h"
#include "util/util.h"

/* The frames the walk stepped over between `from` and the visited frame
 * `to` (shims such as a C call's entry frame, frames not started yet) join
 * the visited ones: their back pointers are proved too, or a shim read at
 * the wrong moment could splice two stacks.  The walk read them through
 * the same cache, so this follows the chain it followed. */
static void recheck_skipped(struct sampler *s, uint64_t from, uint64_t to)
{
	const struct py_layout *L = &s->pi.layout;

	for (int steps = 0; from && from != to && steps < 4 * PYSTACK_MAX_DEPTH; steps++) {
		recheck_frame(&s->held.rc, s->walk.owner, s->walk.m, L, from, true);
		if (mem_read_u64(s->walk.m, from + L->frame.back, &from) < 0)
			return;
	}
}

/* The walk only gathers the frames; resolve_frames() turns them into
 * profile frames once the whole stack is known, reusing last round's. */
static int collect_frame(void *arg, uint64_t frame, const struct raw_frame *rf)
{
	struct sampler *s = arg;

	if (s->walk.live) {
		recheck_skipped(s, s->walk.link, frame);
		recheck_frame_read(&s->held.rc, s->walk.owner, &s->pi.layout, frame, rf,
				   s->walk.nframes == 0);
		s->walk.link = rf->back;
	}
	if (s->walk.nframes < PYSTACK_MAX_DEPTH)
		s->walk.raw[s->walk.nframes++] =
			(struct reuse_frame){ frame, rf->code, rf->lasti, 0, 0 };
	return 0;
}

/* The pointers that lead a recheck to the innermost frame of a part, and
 * the thread state's owner: a thread that ends frees its state, and the
 * next one, often given the same address and the same pthread_t, would
 * otherwise lend its frames to the sample of the one that ended.  Its
 * native id tells them apart (3.11+); before 3.11, the id in the thread
 * descriptor its ident names, which the next thread takes over with the
 * pthread_t (t: the OS thread's entry, for its first part).  A relay of
 * threads on 3.10 once had the descriptor read while one thread ran and
 * the stack once the next did, the same frame at the same address in
 * both: the stack went under the first one's id.  For the collector, the
 * words that made it one: a collection that ended between the listing and
 * the walk would put <gc> on whatever the thread went on to call. */
static void recheck_tstate(struct sampler *s, const struct sthread *t, const struct py_tstate *ts)
{
	const struct py_layout *L = &s->pi.layout;
	struct recheck *rc = &s->held.rc;
	uint32_t owner = s->walk.owner;

	if (L->tstate.native_thread_id != NONE && ts->tid_read)
		recheck_add(rc, owner, ts->addr + L->tstate.native_thread_id,
			    (uint64_t)ts->tid_read, 4);
	if (t && t->desc_tid > 0 && s->threads.tid_offset >= 0) {
		recheck_add(rc, owner, ts->addr + L->tstate.thread_id, ts->ident, 8);
		recheck_add(rc, owner, ts->ident + (uint64_t)s->threads.tid_offset,
			    (uint64_t)(uint32_t)t->desc_tid, 4);
	}
	/* A free-threaded build's collector has no GIL to hold (gil_at 0). */
	if (ts->gc && ts->gc_at) {
		recheck_add(rc, owner, ts->gc_at, 1, 4);
		if (ts->gil_at)
			recheck_add(rc, owner, ts->gil_at, ts->addr, 8);
	}
	if (ts->cframe) {
		recheck_add(rc, owner, ts->addr + L->tstate.frame, ts->cframe, 8);
		recheck_add(rc, owner, ts->cframe + L->tstate.cframe_frame, ts->frame, 8);
	} else {
		recheck_add(rc, owner, ts->addr + L->tstate.frame, ts->frame, 8);
	}
}

/* 3.11+: who owns a generator's frame (enum _frameowner, the same value
 * in every version since). */
#define FRAME_OWNED_BY_GENERATOR 1
/* CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR:
 * the same bits in every version. */
#define CO_GENERATOR_KINDS (0x20 | 0x80 | 0x100 | 0x200)

/* Did a walk end at a generator's frame (3.11+: by its owner; before, by
 * its code's flags) with nothing after it (not even the C stack's entry
 * shim, or 3.15's base frame)?  A generator's frame has no caller only
 * while suspended, so a walk of a running thread read the thread's
 * current frame before a yield and that frame's caller after it: a stack
 * cut short, which the recheck cannot tell (nested generators switch so
 * often that its reads race the same way: a tenth of the samples of
 * tests/targets/mixed_shapes.py's run_gen were cut so, 2 points of
 * share).  A thread stopped can show it too: 3.12 stores its current
 * frame late, after a suspended generator it resumes is marked running
 * (under --blocking, 0.3% of mixed_shapes.py's samples on 3.12 at 1 kHz
 * were such stacks, rooted at a generator, when they were counted).  It
 * is torn: read again, or with the thread stopped again once it has run
 * (reread.c); one --blocking's pause held so, once the pause is over
 * (walk_failed()). */
static bool cut_at_generator(struct sampler *s)
{
	const struct py_layout *L = &s->pi.layout;
	const struct reuse_frame *last;
	uint64_t link = s->walk.link;
	uint8_t owner;
	int32_t flags;

	if (!s->walk.nframes)
		return false;
	last = &s->walk.raw[s->walk.nframes - 1];
	/* A walk of a stopped thread kept no link (collect_frame()): the
	 * last frame's own, which that walk has just read (a cached read). */
	if (!s->walk.live && mem_read_u64(s->walk.m, last->frame + L->frame.back, &link) < 0)
		return false;
	if (link)
		return false;
	/* Before 3.11 frames have no owner: a generator's is one whose code
	 * is a generator's, coroutine's or async generator's. */
	if (L->frame.owner == NONE)
		return L->code.flags != NONE &&
		       mem_read_i32(s->walk.m, last->code + L->code.flags, &flags) == 0 &&
		       (flags & CO_GENERATOR_KINDS);
	return mem_read_u8(s->walk.m, last->frame + L->frame.owner, &owner) == 0 &&
	       owner == FRAME_OWNED_BY_GENERATOR;
}

/* The Python frames of one OS thread into s->walk.frames, innermost first: its
 * thread states ts[0..ts->nparts), one interpreter's after another.  A part
 * that ends early ends the stack (see pystack.c's walk_thread). */
static enum walk_end walk_parts(struct sampler *s, const struct sthread *t,
			       const struct py_tstate *ts)
{
	enum walk_end end = WALK_DONE;
	int n, rc;

	s->walk.nframes = 0;
	for (int p = 0; p < ts->nparts && end == WALK_DONE; p++) {
		int max = PYSTACK_MAX_DEPTH - s->walk.nframes;

		if (ts[p].frame_err < 0)
			return WALK_READ_ERROR;
		if (s->walk.live)
			recheck_tstate(s, p ? NULL : t, &ts[p]);
		if (!ts[p].frame)
			continue;
		s->walk.link = ts[p].frame;
		if (max <= 0)
			return WALK_TRUNCATED;
		end = pystack_walk(s->walk.m, &s->pi.layout, ts[p].frame, max, collect_frame, s,
				   &n, &rc);
		/* The frames after the outermost shown: had a shim's back
		 * pointer been read as the end, outer frames would be lost. */
		if (end == WALK_DONE && cut_at_generator(s))
			return WALK_READ_ERROR;
		if (end == WALK_DONE && s->walk.live)
			recheck_skipped(s, s->walk.link, 0);
	}
	return end;
}

/* The walked frames' profile ids into s->walk.frames; a code object that cannot
 * be read fails the stack, as it would have failed the walk. */
static enum walk_end resolve_frames(struct sampler *s, struct sthread *t, enum walk_end end)
{
	if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR) {
		t->reuse.n = 0;
		return end;
	}
	if (frame_reuse_resolve(&t->reuse, s->cc, s->walk.raw, (uint32_t)s->walk.nframes,
				s->walk.frames) < 0)
		return WALK_VISIT_ERROR;
	return end;
}

/* Is any part of the thread running its interpreter's collector? */
static bool collecting(const struct py_tstate *ts)
{
	for (int p = 0; p < ts->nparts; p++)
		if (ts[p].gc)
			return true;
	return false;
}

/* Has the thread run no Python code since its last proved stack was read?
 * Only a thread holding its interpreter's GIL runs Python code, and the
 * GIL's switch count goes up whenever a thread other than its last holder
 * takes it (take_gil()).  So a thread that is not the last holder now,
 * with the count what it was when its stack was read, has not taken the
 * GIL since: its frames are as they were, and the code objects they hold
 * references to are alive.  The count is read before the frames in a
 * round, and a stack read without a pause is proved by the recheck after
 * them, so nothing between the two reads escapes.  Not with --native (C
 * code runs without the GIL) or --async (the running task is looked up
 * from the walk), nor for a thread in more than one interpreter. */
static bool may_be_unchanged(const struct sampler *s, const struct py_tstate *ts)
{
	return !s->ns && !s->o.async && ts->nparts == 1 && ts->gil_counted;
}

/* (The holder is the last holder: !gil_last covers it.) */
static bool unchanged(const struct sampler *s, const struct sthread *t, const struct py_tstate *ts)
{
	return t->last_read.valid && may_be_unchanged(s, ts) && !ts->gil_last && !ts->frame_err &&
	       ts->addr == t->last_read.tstate && ts->frame == t->last_read.frame &&
	       ts->interp == t->last_read.interp && ts->gil_switches == t->last_read.switches;
}

/* The thread's last stack, as the walk and resolve_frames() leave it. */
static enum walk_end unchanged_stack(struct sampler *s, struct sthread *t)
{
	s->walk.nframes = (int)t->reuse.n;
	for (uint32_t i = 0; i < t->reuse.n; i++) {
		s->walk.raw[i] = t->reuse.v[i];
		s->walk.frames[i] = t->reuse.v[i].id;
	}
	s->count.unchanged_stacks++;
	return t->last_read.end;
}

/* Remember where this round's stack of t was read from; without a pause
 * it counts once the recheck has proved it (reread.c's count_held()). */
static void note_read(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		       enum walk_end end)
{
	t->last_read.valid = (end == WALK_DONE || end == WALK_TRUNCATED) && may_be_unchanged(s, ts);
	t->last_read.tstate = ts->addr;
	t->last_read.frame = ts->frame;
	t->last_read.interp = ts->interp;
	t->last_read.switches = ts->gil_switches;
	t->last_read.end = end;
}

/* The thread table's entry and this round's thread state of a held stack:
 * what reread.c reads again should it not hold. */
static struct redo who(const struct sampler *s, const struct sthread *t,
		       const struct py_tstate *ts)
{
	return (struct redo){ (int)(t - s->threads.v), (int)(ts - s->ts) };
}

void lose_sample(struct sampler *s, uint32_t pthread, enum serr why)
{
	s->count.errors[why]++;
	profile_lose(s->p, pthread, why == SERR_GONE ? PLOSS_GONE : PLOSS_TORN);
}

/* A walk of t that failed (a loop, a frame or code object unreadable).
 * Read from a running thread, a walk fails when it is torn too (a frame
 * freed, a chain changed under it): it is held, to be read again as a
 * torn stack is, and counted lost only if it stays so (reread.c); read
 * with t stopped alone, that read failed (reread.c's stop_and_read()).
 * Read under the pause (--blocking), t stopped where its stack cannot be
 * read whole (between two of the interpreter's stores, a frame half
 * pushed), or with --native --idle as it sleeps (a still thread): rather
 * than lost, t is late: read again once the pause is over, running
 * (sample_pause.c's record_late(), sampler.c's count_late()), and given
 * up only if it is gone or its stack stays torn then; with --native its
 * sample lacks its native frames, as a late thread's does.  That read is
 * live, so it never comes back here.  Returns what record_thread() does. */
static bool walk_failed(struct sampler *s, struct sthread *t, const struct py_tstate *ts)
{
	if (s->walk.stopped) {
		s->walk.failed = true;
		return false;
	}
	if (s->walk.live) {
		held_add(&s->held, t->pthread, who(s, t, ts), NULL, 0, &t->proved);
		return true;
	}
	t->late = true;
	return false;
}

bool record_thread(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		   uint64_t t_ns)
{
	uint32_t stack[PYSTACK_MAX_DEPTH + ASYNCIO_CHAIN_MAX + 5];
	uint32_t depth = 0, nhead;
	size_t words = s->held.rc.n;
	enum walk_end end;
	int outer;

	s->walk.owner = (uint32_t)s->held.npend;
	/* Not stopped by the pause: read as without one (sampler_int.h). */
	s->walk.live = !s->o.blocking || t->late;
	/* For --waits: running, or waiting without a class of its own. */
	s->p->threads[t->pthread].idle = t->state && t->state != 'R';
	if (unchanged(s, t, ts)) {
		end = unchanged_stack(s, t);
	} else {
		bool logged = s->walk.m == s->m;

		if (logged)
			mem_cache_log_begin(s->m);
		end = resolve_frames(s, t, walk_parts(s, t, ts));
		if (logged)
			t->npages = mem_cache_log_end(s->m, t->pages, MEM_CACHE_LOG_MAX);
		note_read(s, t, ts, end);
		t->walked_round = s->count.rounds;
	}
	if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR) {
		s->held.rc.n = words;	/* only a stack that is held needs them */
		return walk_failed(s, t, ts);
	}
	/* A thread with no Python frame (starting, or only in C) adds nothing. */
	if (s->walk.nframes == 0) {
		s->held.rc.n = words;
		return false;
	}
	if (s->proc_root != NO_FRAME)
		stack[depth++] = s->proc_root;
	if (s->o.threads)
		stack[depth++] = t->root;
	nhead = depth;
	outer = running_task_head(s, ts, stack, &depth);
	if (end == WALK_TRUNCATED && outer == s->walk.nframes - 1)
		stack[depth++] = s->truncated_marker;
	for (int i = outer; i >= 0; i--)
		stack[depth++] = s->walk.frames[i];
	/* With --native the collector's own C functions show instead, but
	 * for a late thread, whose native frames are not read: a marker
	 * says so, which holds the share they would have had. */
	if ((!s->ns || t->late) && collecting(ts))
		stack[depth++] = s->gc_frame;
	if (s->ns && t->late)
		stack[depth++] = s->late_marker;
	/* Counted once the threads run again: see nsample.h. */
	if (s->ns && !t->late) {
		s->count.stacks++;
		if (t->still) {
			s->count.still_stacks++;
			nsample_capture_still(s->ns, s->m, ts, t->tid, t->pthread, stack, depth,
					      nhead, end == WALK_DONE);
		} else {
			nsample_capture(s->ns, s->m, ts, t->tid, t->pthread, stack, depth, nhead,
					end == WALK_DONE);
		}
		return false;
	}
	if (s->walk.live && !s->walk.stopped) {
		held_add(&s->held, t->pthread, who(s, t, ts), stack, depth, &t->proved);
		return true;
	}
	s->held.rc.n = words;	/* stopped alone: nothing to prove */
	s->count.stacks++;
	profile_add(s->p, t->pthread, stack, depth, t_ns, 1);
	return false;
}

/* A thread the last round did not walk (its stack was unchanged, or the
 * round did not want it) is walked with none of its pages in the page
 * cache's prefetch, which holds what the last round read: the walk would
 * fetch them a page a system call, as it reached them.  When the GIL
 * changes hands every thread's stack is walked, so that was most of a
 * round's calls with several busy threads (bench/README, "peers").  A
 * stack mostly stays where it was: the pages its last walk read (frames,
 * code objects' identities, the C stack's entry frames) are fetched for
 * all such threads in one batch before the walks.  A page that no longer
 * holds what it did costs a range read in vain, never a wrong read: the
 * walk still reads what it reads, and proves it as ever. */
void stack_hints(const struct sampler *s, const struct sthread *t, const struct py_tstate *ts,
		 struct mem_range *r, int *n, int max)
{
	if (!t->npages || t->walked_round + 1 == s->count.rounds || unchanged(s, t, ts))
		return;
	for (int i = 0; i < t->npages && *n < max; i++)
		r[(*n)++] = t->pages[i];
}

void warm_stack(struct sampler *s, struct sthread *t, const struct py_tstate *ts)
{
	s->walk.live = false;
	resolve_frames(s, t, walk_parts(s, t, ts));
	t->reuse.n = 0;
	t->last_read.valid = false;
}
