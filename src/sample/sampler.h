/* Sampling one Python process at a fixed rate into a profile. */
#ifndef PYSTROBE_SAMPLER_H
#define PYSTROBE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/locate.h"
#include "profile/profile.h"
#include "util/hist.h"

struct sampler_opts {
	/* Rounds a second: the one home of the rate.  The loop's clock
	 * (fleet.c) and a round's budget for reading torn stacks again run
	 * on its interval, sampler_interval_ns(); a profile records the rate
	 * it was given, for its writers, and drives nothing. */
	double rate_hz;
	double duration_s;	/* 0: until stopped or the target exits */
	bool blocking;		/* pause the threads for every sample */
	bool idle;		/* include threads that are not running */
	bool gil_only;		/* only the thread holding the GIL */
	bool threads;		/* a root frame per thread */
	bool by_function;	/* aggregate by function, not line */
	bool native;		/* merge native frames in (implies blocking) */
	bool native_startup;	/* also the interpreter's start-up frames (--native=all) */
	bool no_debuginfod;	/* never fetch debug files (--no-debuginfod) */
	/* asyncio (3.14+): the running task's stack as the chain of tasks
	 * awaiting it (root outermost) then its coroutine's frames; with
	 * ASYNC_ALL every pending task's stack too, each sample. */
	enum { ASYNC_OFF, ASYNC_RUNNING, ASYNC_ALL } async;
	/* With --idle and no pause: nothing reads which threads run (a
	 * sample's running mark, for --waits; the active count, for top),
	 * so their states are read rarely (sampler.c's want_states()). */
	bool states_unused;
};

/* Why a sample (of one thread, or of the whole process) was lost, or, for
 * SERR_MERGE, counted with its Python frames only, or, for SERR_GAP, with
 * a gap between its Python frames and the native frames found. */
enum serr {
	SERR_TORN,		/* a frame or code object unreadable: torn stack */
	SERR_STATE,		/* the interpreter state unreadable */
	SERR_PAUSE,		/* the threads could not be paused */
	SERR_MERGE,		/* native and Python stacks did not fit: Python only */
	SERR_SYMBOLS,		/* the symbolization helper was lost: lib+0xOFFSET since */
	SERR_GAP,		/* the native unwind stopped early: partial merge, a gap */
	SERR_GONE,		/* the thread ended while its stack was read */
	SERR_COUNT,
};

/* A gap's stack is recorded whole as far as it is known: summaries and
 * error rates count it apart from the samples that were lost or cut. */
static inline bool serr_is_error(enum serr e)
{
	return e != SERR_GAP;
}

struct sampler;

/* Attach to pid (which must already be a Python process: locate it first)
 * as *out.  Returns 0, or a negative errno or status_fail(EXIT_*) with a
 * reason in err. */
int sampler_open(pid_t pid, const struct sampler_opts *o, struct profile *p,
		 struct sampler **out, char *err, size_t errlen);
void sampler_close(struct sampler *s);

/* One sample of every thread, t_ns after the start.  Returns 0,
 * status_fail(EXIT_EXITED) once the process is gone, or
 * status_fail(EXIT_NOT_PYTHON) once it has replaced itself with another
 * program (exec). */
int sampler_sample(struct sampler *s, uint64_t t_ns);

struct sampler_status {
	double elapsed_s;
	uint64_t rounds;		/* sampling rounds done */
	uint64_t stacks;		/* thread stacks recorded */
	uint64_t unchanged_stacks;	/* ... of which taken whole from the last
					 * round (the thread had not run) */
	uint64_t still_stacks;		/* ... of which of a thread asleep, left
					 * running, its native frames from its
					 * last unwind (--native --idle) */
	uint64_t errors[SERR_COUNT];
	uint64_t lagged;		/* rounds that started late by an interval or more */
	uint64_t skipped;		/* rounds skipped to catch up after those */
	double max_lag_ms;
	uint64_t late_rounds;		/* rounds FLEET_LATE_NS late or more */
	double late_p99_ms;		/* lateness of the rounds, p99 */
	double rate_hz;			/* achieved rounds per second */
	int processes;			/* being sampled at the end */
	int processes_ever;		/* sampled at some point */
	bool target_exited;
	bool target_execd;		/* it ran exec(): no longer the program sampled */
	bool duration_over;		/* stopped because --duration ran out */
};

/* Running totals since sampler_open, for a live view (top). */
struct sampler_counts {
	uint64_t rounds;		/* rounds that read the thread list */
	uint64_t gil_rounds;		/* ... in which some thread held the GIL */
	uint64_t ft_rounds;		/* ... of a free-threaded build (no GIL) */
	uint64_t attached;		/* ... and the threads attached to its
					 * interpreter in them, summed */
	uint64_t threads;		/* threads seen, summed over those rounds */
	uint64_t checked;		/* ... of which their state was read (with
					 * --idle, not every round) */
	uint64_t active;		/* ... and found running (state R) */
	uint64_t stacks;		/* thread stacks recorded */
	uint64_t unchanged_stacks;	/* ... of which taken whole from the last
					 * round (the thread had not run) */
	uint64_t still_stacks;		/* ... of which of a thread asleep, left
					 * running, its native frames from its
					 * last unwind (--native --idle) */
	uint64_t matched_stacks;	/* ... of which read running and proved
					 * by their thread's last proved words,
					 * not read twice (recheck.h) */
	uint64_t errors[SERR_COUNT];
	int nthreads;			/* threads in the latest round */
	uint64_t unready;		/* rounds before the interpreter could be read */
	uint64_t pauses;		/* rounds that paused the target */
	uint64_t pause_ns;		/* ... and how long it was stopped in all */
	uint64_t max_pause_ns;		/* ... and at most */
	struct hist pause_hist;		/* ... each pause, in ns */
	uint64_t late;			/* with --native, samples of threads not
					 * stopped in time (or stopped where
					 * their stack could not be read), read
					 * running and counted without native
					 * frames */
	int max_late;			/* ... and at most in one round */
	/* Without --blocking: stacks that would not hold still, read with
	 * their thread stopped alone (reread.c). */
	uint64_t stops;			/* such stops */
	uint64_t stopped_stacks;	/* ... the stacks they counted */
	uint64_t stop_ns;		/* ... how long the threads were stopped */
	uint64_t max_stop_ns;		/* ... and at most */
	bool stop_refused;		/* ptrace refused one: torn stacks dropped */
};
void sampler_counts(const struct sampler *s, struct sampler_counts *c);

/* Include idle threads from the next sample on, or not. */
void sampler_set_idle(struct sampler *s, bool idle);

/* Root every stack of this process in a frame with this label (copied),
 * or in none with NULL. */
void sampler_set_root(struct sampler *s, const char *label);

pid_t sampler_pid(const struct sampler *s);
const char *sampler_python_version(const struct sampler *s);

/* Why the latest merge error happened, or NULL when there was none. */
const char *sampler_merge_error(const struct sampler *s);

const char *serr_name(enum serr e);

/* The time between two rounds at rate_hz, in ns (0 for no rate). */
uint64_t sampler_interval_ns(double rate_hz);

#endif
