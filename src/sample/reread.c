/* Torn stacks read again (without --blocking): a thread none of whose
 * stacks the recheck proved is walked again, from fresh memory, each
 * thread until one of its stacks holds.  Separate from sampler.c because
 * it is a loop of its own after a round's walks; the stacks and their
 * proof are held.c's, the walk sample_stack.c's.  With --blocking none of
 * it runs. */
#include "sample/sampler_int.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "profile/loss.h"
#include "util/util.h"

/* A stack that fails its recheck is read again at once, from fresh
 * memory, at most this many times (see count_held()).  A thread calling
 * tiny functions in a loop (tests/targets/torn_calls.py) tears again in
 * most of its first re-reads, and less with each walk kept: this many
 * tries close nearly all of its torn rounds (bench/README, "torn stacks").
 * Only torn threads pay for a try: a
 * fresh read of their pages and one recheck. */
#define TORN_RETRIES 12

/* Walk the threads in held.redo again, from what they run now: the round's
 * cache holds the bytes they were torn from, so a cache of their own,
 * emptied first, reads them afresh (in one call: it prefetches what the
 * last such walk read).  A thread that now has no stack to hold (it left
 * Python) is done. */
static void reread_torn(struct sampler *s, uint64_t t_ns)
{
	if (!s->held.fresh)
		s->held.fresh = mem_cache_new(s->direct);
	mem_cache_reset(s->held.fresh);
	s->walk.m = s->held.fresh;
	for (size_t i = 0; i < s->held.nredo; i++) {
		struct py_tstate *ts = &s->ts[s->held.redo[i].ts];
		struct sthread *t = &s->threads.v[s->held.redo[i].thread];

		for (int p = 0; p < ts->nparts; p++)
			pystack_reread_frame(s->held.fresh, &s->pi.layout, &ts[p]);
		if (!record_thread(s, t, ts, t_ns))
			held_done(&s->held, s->held.redo[i].thread);
		/* The stack counted may be an earlier walk than the one its
		 * reuse now holds: taken whole again only once a round's
		 * own walk is proved. */
		t->last_read.valid = false;
	}
	s->walk.m = s->m;
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
	held_begin(&s->held, s->threads.n);
	for (int tries = 0;; tries++) {
		s->count.stacks += held_count_proved(&s->held, s->direct, s->p, t_ns);
		if (!held_keep_open(&s->held))
			break;
		/* Their last walks (reuse) are not proved. */
		for (size_t i = 0; i < s->held.nredo; i++)
			s->threads.v[s->held.redo[i].thread].last_read.valid = false;
		/* Also when their words no longer all fit (the walks after
		 * would go unproved), or the round's time is up. */
		if (tries == TORN_RETRIES || s->held.rc.overflow != UINT32_MAX ||
		    !retry_time_left(s)) {
			s->count.errors[SERR_TORN] += s->held.nredo;
			for (size_t i = 0; i < s->held.nredo; i++)
				profile_lose(s->p, s->threads.v[s->held.redo[i].thread].pthread,
					     PLOSS_TORN);
			break;
		}
		reread_torn(s, t_ns);
	}
	held_end(&s->held);
}
