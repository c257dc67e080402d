/* Stacks read from running threads (without --blocking): held until the
 * recheck proves they did not change while they were read, and the torn
 * ones read again, each thread until one of its stacks holds.  Separate
 * from sampler.c because it is a loop of its own after a round's walks,
 * with its own state (the held stacks, which threads are done); with
 * --blocking none of it runs. */
#include "sample/sampler_int.h"
#include "python/pystack.h"
#include "python/recheck.h"
#include "process/mem.h"
#include "util/util.h"

#include <string.h>

/* A stack that fails its recheck is read again at once, from fresh
 * memory, at most this many times (see count_held()).  A thread calling
 * tiny functions in a loop (tests/targets/torn_calls.py) tears again in
 * most of its first re-reads, and less with each walk kept: this many
 * tries close nearly all of its torn rounds (bench/README, "torn stacks").
 * Only torn threads pay for a try: a
 * fresh read of their pages and one recheck. */
#define TORN_RETRIES 12

/* Keep a stack of this round until the recheck has proved it; a failed
 * walk (stack NULL) is kept too, for its thread to be read again. */
void hold_stack(struct sampler *s, const struct sthread *t, const struct py_tstate *ts,
		const uint32_t *stack, uint32_t depth)
{
	struct pending *pd;

	ALLOC_GROW(s->pend_frames, s->npend_frames + depth, s->pend_frames_cap);
	if (depth)
		memcpy(s->pend_frames + s->npend_frames, stack, depth * sizeof(*stack));
	ALLOC_GROW(s->pend, s->npend + 1, s->pend_cap);
	pd = &s->pend[s->npend++];
	pd->pthread = t->pthread;
	pd->off = s->npend_frames;
	pd->depth = depth;
	pd->failed = !stack;
	pd->who = (struct redo){ (int)(t - s->threads), (int)(ts - s->ts) };
	s->npend_frames += depth;
}

/* Where a thread stands in count_held(): s->proof, one a thread. */
enum proof {
	OPEN,		/* none of its stacks proved yet */
	DONE,		/* one counted, or given up */
	LISTED,		/* OPEN, and in s->redo (while it is made) */
};

/* Count, for each thread not done yet, the first of its held stacks
 * whose words all still hold. */
static void count_proved(struct sampler *s, uint64_t t_ns)
{
	ALLOC_GROW(s->torn, s->npend + 1, s->torn_cap);
	memset(s->torn, 0, (s->npend + 1) * sizeof(*s->torn));
	recheck_run(&s->rc, s->direct, s->torn, (uint32_t)s->npend);
	for (size_t i = 0; i < s->npend; i++) {
		const struct pending *pd = &s->pend[i];

		if (s->torn[i] || pd->failed || s->proof[pd->who.thread] != OPEN)
			continue;
		s->proof[pd->who.thread] = DONE;
		s->stacks++;
		profile_add(s->p, pd->pthread, s->pend_frames + pd->off, pd->depth, t_ns, 1);
	}
}

/* The threads still open into s->redo, keeping their held stacks (and the
 * words that prove them) for the next recheck; the others' are dropped.
 * Returns how many. */
static size_t keep_open(struct sampler *s)
{
	size_t kept = 0;

	s->nredo = 0;
	ALLOC_GROW(s->renum, s->npend + 1, s->renum_cap);
	for (size_t i = 0; i < s->npend; i++) {
		const struct pending *pd = &s->pend[i];
		uint8_t *st = &s->proof[pd->who.thread];

		s->renum[i] = UINT32_MAX;
		if (*st == DONE)
			continue;
		if (*st == OPEN) {
			*st = LISTED;
			ALLOC_GROW(s->redo, s->nredo + 1, s->redo_cap);
			s->redo[s->nredo++] = pd->who;
			/* Its last walk (reuse) is not proved. */
			s->threads[pd->who.thread].last_read.valid = false;
		}
		s->renum[i] = (uint32_t)kept;
		s->pend[kept++] = *pd;
	}
	recheck_renumber(&s->rc, s->renum, (uint32_t)s->npend);
	s->npend = kept;
	for (size_t i = 0; i < s->nredo; i++)
		s->proof[s->redo[i].thread] = OPEN;
	return s->nredo;
}

/* Walk the threads in s->redo again, from what they run now: the round's
 * cache holds the bytes they were torn from, so a cache of their own,
 * emptied first, reads them afresh (in one call: it prefetches what the
 * last such walk read).  A thread that now has no stack to hold (it left
 * Python) is done. */
static void reread_torn(struct sampler *s, uint64_t t_ns)
{
	if (!s->fresh)
		s->fresh = mem_cache_new(s->direct);
	mem_cache_reset(s->fresh);
	s->wm = s->fresh;
	for (size_t i = 0; i < s->nredo; i++) {
		struct py_tstate *ts = &s->ts[s->redo[i].ts];
		struct sthread *t = &s->threads[s->redo[i].thread];

		for (int p = 0; p < ts->nparts; p++)
			pystack_reread_frame(s->fresh, &s->pi.layout, &ts[p]);
		if (!record_thread(s, t, ts, t_ns))
			s->proof[s->redo[i].thread] = DONE;
		/* The stack counted may be an earlier walk than the one its
		 * reuse now holds: taken whole again only once a round's
		 * own walk is proved. */
		t->last_read.valid = false;
	}
	s->wm = s->m;
}

/* Reading torn stacks again may take the round to half the interval
 * between samples, no further: re-reads alone never make the sampler fall
 * behind its rate (at the highest rates a round whose every stack tears
 * has time for one or two, at ordinary ones for all). */
static bool retry_time_left(const struct sampler *s)
{
	if (!s->interval_ns)
		return true;
	return mono_ns() - s->round_ns < s->interval_ns / 2;
}

/* Count the stacks held this round that the recheck proves.  Dropping the
 * torn ones would under-count the threads whose stacks change fastest (a
 * loop calling a small function tears far more often than one spinning in
 * one frame): each such thread is read again and rechecked, up to
 * TORN_RETRIES times, with its earlier walks kept, as any of them may hold
 * at the next recheck (the thread is back where it was).  A thread's first
 * stack proved is counted; one with none is counted as torn. */
void count_held(struct sampler *s, uint64_t t_ns)
{
	ALLOC_GROW(s->proof, (size_t)s->nthreads + 1, s->proof_cap);
	memset(s->proof, OPEN, (size_t)s->nthreads + 1);
	for (int tries = 0;; tries++) {
		count_proved(s, t_ns);
		if (!keep_open(s))
			break;
		/* Also when their words no longer all fit (the walks after
		 * would go unproved), or the round's time is up. */
		if (tries == TORN_RETRIES || s->rc.overflow != UINT32_MAX ||
		    !retry_time_left(s)) {
			s->errors[SERR_TORN] += s->nredo;
			break;
		}
		reread_torn(s, t_ns);
	}
	s->npend = 0;
	s->npend_frames = 0;
	recheck_reset(&s->rc);
}
