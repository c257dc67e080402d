/* Torn stacks read again (without --blocking): a thread none of whose
 * stacks the recheck proved is walked again, from fresh memory, each
 * thread until one of its stacks holds; one whose stack will not hold
 * still is then read with that thread alone stopped.  Separate from
 * sampler.c because it is a loop of its own after a round's walks; the
 * stacks and their proof are held.c's, the walk sample_stack.c's, the
 * stop pause.c's.  With --blocking only the late threads' stacks, read
 * once the pause is over, come here (sampler.c's count_late()). */
#include "sample/sampler_int.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "process/pause.h"
#include "process/proc.h"
#include "util/status.h"
#include "util/util.h"

#include <errno.h>
#include <time.h>

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

/* How a read of a thread stopped alone went (stop_and_read()). */
enum stopped_read {
	STOPPED_COUNTED,	/* its stack counted, or it had none (left Python) */
	STOPPED_AGAIN,		/* not stopped in time, or its walk failed */
	STOPPED_GONE,		/* the thread has ended */
	STOPPED_REFUSED,	/* ptrace refused: no stop from now on */
};

/* Stops of one thread in a round: another when the last did not stop it
 * in time or its read failed.  Three left one sample in about a thousand
 * of tests/targets/mixed_shapes.py lost on 3.7 under ASan; the round's
 * time (stop_time_left()) bounds them all the same. */
#define STOP_TRIES 5
/* After a stop whose read failed, the thread is let run this long at most
 * before the next (see let_run()); polled this often. */
#define LET_RUN_NS (2 * 1000 * 1000ull)
#define LET_RUN_POLL_NS (50 * 1000ull)

/* The stop's cost, for the summary (PYSTROBE_STATS) and bench/README. */
static void note_stop(struct sampler *s, const struct pause *pause)
{
	uint64_t ns = pause->began_ns ? pause->released_ns - pause->began_ns : 0;

	s->count.stop_ns += ns;
	if (ns > s->count.max_stop_ns)
		s->count.max_stop_ns = ns;
}

/* Read the stack of redo's thread with that thread alone stopped: what
 * --blocking does for every running thread, for the one whose stack would
 * not hold still while it ran.  Stopped, its own frames cannot change, and
 * what other threads change is read as --blocking reads it (hostile
 * memory, as without a pause).  It is walked as a running thread is (a
 * stack cut at a generator is still torn: the thread may have stopped
 * between two of the interpreter's stores) and counted at once.  The stop
 * is pause.c's, bounded as a sample's pause is: a thread that does not
 * stop within it is left running (and let go when its stop comes),
 * nothing else is ever stopped, and SIGINT, SIGTERM and the like wait
 * until it is let go. */
static enum stopped_read stop_and_read(struct sampler *s, const struct redo *r, uint64_t t_ns)
{
	struct py_tstate *ts = &s->ts[r->ts];
	struct sthread *t = &s->threads.v[r->thread];
	uint64_t stacks = s->count.stacks;
	uint32_t overflow = s->held.rc.overflow;
	struct pause pause;
	int rc = pause_thread(s->pid, t->tid, &pause);

	if (rc == -ESRCH)
		return STOPPED_GONE;
	if (rc < 0)
		return is_fail(rc, EXIT_PERMISSION) ? STOPPED_REFUSED : STOPPED_AGAIN;
	if (!pause_holds(&pause, t->tid)) {
		pause_release(&pause);
		return STOPPED_AGAIN;
	}
	mem_cache_reset(s->held.fresh);
	s->walk.m = s->held.fresh;
	for (int p = 0; p < ts->nparts; p++)
		pystack_reread_frame(s->held.fresh, &s->pi.layout, &ts[p]);
	s->walk.stopped = true;
	s->walk.failed = false;
	record_thread(s, t, ts, t_ns);
	s->walk.stopped = false;
	/* Its words, which prove nothing here, are gone (record_thread()). */
	s->held.rc.overflow = overflow;
	pause_release(&pause);
	s->walk.m = s->m;
	t->last_read.valid = false;
	note_stop(s, &pause);
	s->count.stops++;
	if (s->walk.failed)
		return STOPPED_AGAIN;
	s->count.stopped_stacks += s->count.stacks - stacks;
	return STOPPED_COUNTED;
}

/* A thread stopped where its stack cannot be read whole (between two of
 * the interpreter's stores: a generator resumed while the thread's
 * current frame, which the compiler stores late, still names it as
 * suspended) is there again at the next stop unless it has run since: on
 * a busy machine it waits for a CPU.  Wait until its run count or time
 * has moved, or LET_RUN_NS (or half the interval) has passed. */
static void let_run(struct sampler *s, struct sthread *t)
{
	uint64_t bound = s->interval_ns && s->interval_ns / 2 < LET_RUN_NS ?
			 s->interval_ns / 2 : LET_RUN_NS;
	uint64_t until = mono_ns() + bound, run0, runs0, run, runs;

	if (t->sched_fd == -1)
		t->sched_fd = proc_task_open(s->pid, t->tid, "schedstat");
	if (t->sched_fd < 0) {
		t->sched_fd = -2;
		return;
	}
	if (proc_schedstat_read(t->sched_fd, &run0, &runs0) < 0)
		return;
	do
		nanosleep(&(struct timespec){ 0, LET_RUN_POLL_NS }, NULL);
	while (proc_schedstat_read(t->sched_fd, &run, &runs) == 0 && run == run0 &&
	       runs == runs0 && mono_ns() < until);
}

/* May the round stop another thread?  Until it has taken a whole interval:
 * each stop is bounded, their sum must be too, or a target with many
 * threads tearing on a starved machine would make every round late.  (A
 * few stops take a few hundred microseconds.) */
static bool stop_time_left(const struct sampler *s)
{
	return !s->interval_ns || mono_ns() - s->round_ns < s->interval_ns;
}

/* Stop each thread whose stack would not hold still (held.redo) alone,
 * and read it; again if that read failed (a frame half pushed at the
 * instant it stopped) or it did not stop in time.  Returns how many are
 * still open, left in held.redo: not stopped in time (waiting for a CPU,
 * so most likely standing still), not to be stopped (ptrace refused), or
 * not stopped once the round's time was up. */
static size_t stop_torn(struct sampler *s, uint64_t t_ns)
{
	size_t open = 0;

	if (!s->held.fresh)
		s->held.fresh = mem_cache_new(s->direct);
	for (size_t i = 0; i < s->held.nredo; i++) {
		struct redo r = s->held.redo[i];
		enum stopped_read got = STOPPED_AGAIN;
		pid_t tid = s->threads.v[r.thread].tid;

		for (int k = 0; k < STOP_TRIES && got == STOPPED_AGAIN; k++) {
			if (tid <= 0 || s->count.stop_refused || !stop_time_left(s))
				break;
			if (k)
				let_run(s, &s->threads.v[r.thread]);
			got = stop_and_read(s, &r, t_ns);
		}
		if (got == STOPPED_REFUSED)
			s->count.stop_refused = true;
		if (got == STOPPED_GONE)
			lose_sample(s, s->threads.v[r.thread].pthread, SERR_GONE);
		if (got == STOPPED_COUNTED || got == STOPPED_GONE)
			held_done(&s->held, r.thread);
		else
			s->held.redo[open++] = r;
	}
	s->held.nredo = open;
	return open;
}

/* The threads still open after stop_torn() are read again once more, and
 * counted if that read holds: a thread that did not stop in time was not
 * on a CPU, and its stack stands still.  A sample is lost only when the
 * thread has ended (SERR_GONE), or when its stack would not hold still
 * and it could not be stopped (SERR_TORN; ptrace refused, said in the
 * summary). */
static void stop_or_drop(struct sampler *s, uint64_t t_ns)
{
	if (!stop_torn(s, t_ns))
		return;
	reread_torn(s, t_ns);
	s->count.stacks += held_count_proved(&s->held, s->direct, s->p, t_ns,
						    &s->count.matched_stacks);
	held_keep_open(&s->held);
	for (size_t i = 0; i < s->held.nredo; i++)
		lose_sample(s, s->threads.v[s->held.redo[i].thread].pthread, SERR_TORN);
}

/* Count the stacks held this round that the recheck proves.  Dropping the
 * torn ones would under-count the threads whose stacks change fastest (a
 * loop calling a small function tears far more often than one spinning in
 * one frame): each such thread is read again and rechecked, up to
 * TORN_RETRIES times, with its earlier walks kept, as any of them may hold
 * at the next recheck (the thread is back where it was).  A thread's first
 * stack proved is counted; one with none, once the tries or the round's
 * time are used up, is read with it stopped alone (stop_torn()). */
void count_held(struct sampler *s, uint64_t t_ns)
{
	held_begin(&s->held, s->threads.n);
	for (int tries = 0;; tries++) {
		s->count.stacks += held_count_proved(&s->held, s->direct, s->p, t_ns,
						    &s->count.matched_stacks);
		if (!held_keep_open(&s->held))
			break;
		/* Their last walks (reuse) are not proved. */
		for (size_t i = 0; i < s->held.nredo; i++)
			s->threads.v[s->held.redo[i].thread].last_read.valid = false;
		/* Also when their words no longer all fit (the walks after
		 * would go unproved), or the round's time is up. */
		if (tries == TORN_RETRIES || s->held.rc.overflow != UINT32_MAX ||
		    !retry_time_left(s)) {
			stop_or_drop(s, t_ns);
			break;
		}
		reread_torn(s, t_ns);
	}
	held_end(&s->held);
}
