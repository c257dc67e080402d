/* The sampling loop's scheduling priority, one per sampling thread: the
 * rounds on time on a busy machine (process/schedprio.h says why and
 * how), under guards that keep pystrobe from starving the job.
 *
 * fleet_run() keeps one.  A command that drives its own clock (top, watch:
 * fleet_step() in a loop of its own) keeps one the same way, so that its
 * rounds are as much on time as record's and under the same guards:
 *
 *	rc = fleet_step(f, &c);
 *	fleet_prio_after(&pr, rc == FLEET_ROUND);
 *	if (other work is due) {
 *		fleet_prio_aside(&pr);
 *		... draw, judge, write ...
 *		fleet_prio_back(&pr);
 *	}
 *	sleep until fleet_due()
 *	...
 *	fleet_prio_end(&pr);
 *
 * Only the rounds and the sleeps between them (the wake-up is what must
 * be on time) run raised: the command's other work (top's drawing, watch's
 * reads of /proc and its reports) runs at the level pystrobe was started
 * with, so that however long it takes, it competes with the job as any
 * process does. */
#ifndef PYSTROBE_FLEETPRIO_H
#define PYSTROBE_FLEETPRIO_H

#include <stdbool.h>
#include <stdint.h>

struct fleet_prio {
	bool started;		/* the first round is over: raised */
	bool realtime;		/* at real-time priority now: never spin */
	bool aside;		/* between fleet_prio_aside() and _back() */
	uint64_t since_ns;	/* the duty window's start, mono_ns() */
	uint64_t cpu0_ns;	/* the thread's CPU time then */
	uint64_t aside_cpu_ns;	/* its CPU set aside since */
	uint64_t aside_at_ns;	/* its CPU time at fleet_prio_aside() */
};

/* Never raised in this run (--no-priority): before the first round;
 * fleet_start() calls it for a fleet opened so. */
void fleet_prio_forbid(void);

/* After each fleet_step() (or each set of them, one per fleet, as
 * watch's): round says whether a round was taken.  The first round raises
 * the thread's priority (the round before it is start-up); later ones
 * judge the duty guard's window once it is over. */
void fleet_prio_after(struct fleet_prio *pr, bool round);

/* Work between rounds that is not sampling: at the level pystrobe was
 * started with, then back to the loop's. */
void fleet_prio_aside(struct fleet_prio *pr);
void fleet_prio_back(struct fleet_prio *pr);

/* The loop is over: the normal level for the rest of the run (the output
 * is written so). */
void fleet_prio_end(struct fleet_prio *pr);

#endif
