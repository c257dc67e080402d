/* pystrobe's own scheduling priority: samples taken on time on a busy
 * machine, never at the job's expense.
 *
 * A sampler that waits for a CPU like any other task wakes late whenever
 * every CPU is busy, and the moment it gets one is often the moment one of
 * the job's threads blocks: its samples lean towards the job's waits (3
 * ranks of a gloo job on 2 CPUs: the fast ranks' <wait:collective> share
 * 2.5 to 6.2 points above their own clocks).  So the sampling loop runs at
 * SCHED_FIFO, the lowest real-time priority, where pystrobe may (root,
 * CAP_SYS_NICE, RLIMIT_RTPRIO), else at a negative nice where it may, else
 * as it was started.  The guards, why each:
 *
 *  - Only the calling thread is raised (Linux priorities are per thread),
 *    with SCHED_RESET_ON_FORK: a thread or process pystrobe starts (the
 *    symbol loader, the symbolization helper) runs at the normal policy.
 *  - It never spins at real-time priority: every wait sleeps on an
 *    absolute deadline (the loop's spinning at 4 kHz and up is off while
 *    it is raised: a real-time wake-up is on time without it).
 *  - RLIMIT_RTTIME: should a round ever run SCHEDPRIO_RTTIME_US at
 *    real-time priority without sleeping, the kernel sends SIGXCPU, whose
 *    handler puts the thread back at the normal policy for the rest of the
 *    run (the summary says so).
 *  - The caller gives it up for long work: the first round (start-up),
 *    writing the output, and rounds that take over a quarter of a CPU
 *    over a second (sample/fleetprio.c); and it sets aside the work of
 *    its loop that is not sampling (top's drawing, watch's judging):
 *    only the rounds and the sleeps before them run raised.
 *
 * pause.c's pauses (--blocking, --native) use the same real-time level
 * while they stop and let go of the threads, through schedprio_set() and
 * schedprio_restore(), so that the two agree on the thread's policy. */
#ifndef PYSTROBE_SCHEDPRIO_H
#define PYSTROBE_SCHEDPRIO_H

#include <stdbool.h>

enum schedprio {
	SCHEDPRIO_NORMAL,	/* the policy and nice pystrobe was started with */
	SCHEDPRIO_NICE,		/* SCHEDPRIO_NICE_VALUE: real time not permitted */
	SCHEDPRIO_REALTIME,	/* SCHED_FIFO, priority 1 */
};

/* The nice value of the fallback, and the real-time budget without a
 * sleep before the kernel's SIGXCPU (microseconds). */
#define SCHEDPRIO_NICE_VALUE (-10)
#define SCHEDPRIO_RTTIME_US 200000

/* Never above the normal policy from now on, in the loop or in a pause
 * (--no-priority). */
void schedprio_forbid(void);

/* The sampling loop's level for the run, for the calling thread: the
 * highest permitted.  Returns it. */
enum schedprio schedprio_raise(void);

/* The loop's level given up for the rest of the run, why in a few words
 * (a guard; NULL: the run is over, nothing to tell). */
void schedprio_lower(const char *why);

/* The level the loop holds now. */
enum schedprio schedprio_level(void);

/* The highest level the loop was at in this run, and why it was not
 * higher or was given up ("...: not permitted"), or NULL. */
enum schedprio schedprio_reached(void);
const char *schedprio_why(void);

/* A pause's: the calling thread at real-time priority now (on), if
 * permitted, or at the normal policy (off).  Returns whether it is at
 * real-time priority. */
bool schedprio_set(bool on);

/* Work between rounds that is not sampling (top's drawing, watch's
 * judging): the calling thread at the level pystrobe was started with,
 * policy and nice, until schedprio_restore(). */
void schedprio_aside(void);

/* A pause's end, or the end of the work set aside: back to the loop's
 * level. */
void schedprio_restore(void);

#endif
