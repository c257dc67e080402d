/* The sampling loop's scheduling priority (see fleetprio.h).
 *
 * Raised after the first round, which is start-up (every code object read
 * for the first time, with --native the unwind tables: long work, at the
 * normal policy), and lowered when the loop ends (the output is written
 * at the normal policy).  At real-time priority the loop never spins, and
 * it must not hold a CPU for long stretches: once its rounds take over a
 * quarter of a CPU over a second (a big process, a high rate), real time
 * is given up for the rest of the run.  Over a second, so that the first
 * rounds after start-up (with --native, the names of the first native
 * frames) are not mistaken for the loop's cost; CPU, not wall time, as a
 * pause that waits for a thread to stop sleeps (pause.c), and takes no CPU
 * from the job.  The thread's CPU clock is read at the window's ends, not
 * around every round: it is a system call, and a pair of them a round
 * cost more than the rest of the guard (3% of a round of 100 frames at
 * 1 kHz).  So the wake-ups count too, as they run raised.  A round at
 * real-time priority that never sleeps meets RLIMIT_RTTIME's SIGXCPU
 * (schedprio.c).  Work that is not sampling is set aside at the normal
 * level, and counts for none of this: its CPU is taken out of the
 * window's. */
#include "sample/fleetprio.h"
#include "process/schedprio.h"
#include "util/util.h"

#include <time.h>

/* The window, and the most of it the rounds may take at real-time
 * priority. */
#define PRIO_DUTY_WINDOW_NS 1000000000ull
#define PRIO_MAX_DUTY_DIV 4

/* This thread's CPU time: a system call, made at a window's ends and
 * around work set aside, at real-time priority only. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fleet_prio_forbid(void)
{
	schedprio_forbid();
}

static void window_start(struct fleet_prio *pr, uint64_t now)
{
	pr->since_ns = now;
	pr->cpu0_ns = thread_cpu_ns();
	pr->aside_cpu_ns = 0;
}

void fleet_prio_after(struct fleet_prio *pr, bool round)
{
	uint64_t now;

	if (!round)
		return;
	now = mono_ns();
	if (!pr->started) {
		pr->started = true;
		schedprio_raise();
		window_start(pr, now);
	} else if (pr->realtime && now - pr->since_ns >= PRIO_DUTY_WINDOW_NS) {
		uint64_t cpu = thread_cpu_ns() - pr->cpu0_ns - pr->aside_cpu_ns;

		if (cpu * PRIO_MAX_DUTY_DIV > now - pr->since_ns)
			schedprio_lower("real-time priority given up: its rounds took over a "
					"quarter of a CPU");
		window_start(pr, now);
	}
	pr->realtime = schedprio_level() == SCHEDPRIO_REALTIME;
}

void fleet_prio_aside(struct fleet_prio *pr)
{
	if (pr->aside || schedprio_level() == SCHEDPRIO_NORMAL)
		return;
	if (pr->realtime)
		pr->aside_at_ns = thread_cpu_ns();
	schedprio_aside();
	pr->aside = true;
}

void fleet_prio_back(struct fleet_prio *pr)
{
	if (!pr->aside)
		return;
	pr->aside = false;
	if (pr->realtime)
		pr->aside_cpu_ns += thread_cpu_ns() - pr->aside_at_ns;
	schedprio_restore();
	pr->realtime = schedprio_level() == SCHEDPRIO_REALTIME;
}

void fleet_prio_end(struct fleet_prio *pr)
{
	pr->aside = false;
	pr->realtime = false;
	schedprio_lower(NULL);
}
