/* Sampling a process, and with --subprocesses every process below it, into
 * one profile.
 *
 * Each Python process gets its own sampler (its own address space, code
 * cache and threads).  The tree is walked again every FLEET_WALK_NS, so a
 * worker started later is sampled within that time plus the time to find
 * its interpreter.  Processes that are not Python (a shell, a launcher)
 * are walked through, not sampled; a process that exits is dropped
 * without a word.
 */
#ifndef PYSTROBE_FLEET_H
#define PYSTROBE_FLEET_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/proctree.h"
#include "sample/sampler.h"
#include "util/hist.h"
#include "util/rng.h"

#define FLEET_WALK_NS 50000000ull

struct fleet_opts {
	bool subprocesses;	/* follow every descendant of the target */
	/* With subprocesses: descendants with the same command line (digits
	 * aside) share one root frame, instead of one root per process. */
	bool group;
	/* With subprocesses: walk the tree this often; 0: FLEET_WALK_NS.
	 * A watch for days walks it less often than a recording does. */
	uint64_t walk_ns;
	/* Once the fleet is started, nothing raises pystrobe's scheduling
	 * priority for the rest of the run (see process/schedprio.h): not
	 * the loop that drives it (fleetprio.h), nor its pauses
	 * (--no-priority). */
	bool no_priority;
	/* With subprocesses: the processes to follow are what list puts in
	 * out (room for max; its count), parents before children, instead
	 * of pid and its descendants (record --slurm-node: a job's processes
	 * on this node, which no one process is the parent of).  The target
	 * is gone when a walk finds none. */
	int (*list)(void *arg, struct proc_node *out, int max);
	void *list_arg;
};

struct fleet;

/* Start sampling pid, as *out.  Without subprocesses pid must be a Python
 * process (the return and err as sampler_open()).  With them it may be
 * anything that exists: its Python descendants are what gets sampled.
 * Returns 0, or a negative errno or status_fail(EXIT_*) with a reason in
 * err. */
int fleet_open(pid_t pid, const struct sampler_opts *so, const struct fleet_opts *fo,
	       struct profile *p, struct fleet **out, char *err, size_t errlen);
void fleet_close(struct fleet *f);

/* The sampling loop's clock.  Time is cut into cells one interval long
 * from the start, and each round is due at an instant drawn uniformly
 * within its own cell (the first at the start): a job's period, however
 * it falls against the interval, cannot lock onto the instants (each is
 * equally likely anywhere in its cell, and the cells tile time, so every
 * instant of the job is as likely to be sampled as any other), and the
 * rate is exact (one round per cell: rounds over any stretch of time are
 * its length times the rate, give or take one).  Two rounds are 0 to 2
 * intervals apart.  Deadlines are absolute, so a slow round does not
 * shift the ones after it; a round that ends when the next round's whole
 * cell is past skips the cells missed instead of firing them in a burst,
 * and counts as lagged.  fleet_run() drives a
 * clock to the end; a caller with more to do between rounds (top reads
 * keys and redraws) drives its own with fleet_start(), fleet_step() and
 * fleet_due(), and gets the same rounds and walks of the tree. */
struct fleet_clock {
	/* One round every interval_ns: sampler_interval_ns() of the rate
	 * the fleet was opened with (the profile's copy drives nothing). */
	uint64_t interval_ns;
	uint64_t start_ns;	/* mono_ns() at fleet_start() */
	uint64_t cell_ns;	/* the start of the next round's cell */
	uint64_t deadline_ns;	/* when the next round is due: in its cell */
	uint64_t end_ns;	/* the end of the duration, or 0 */
	uint64_t rounds;	/* rounds taken */
	uint64_t lagged;	/* rounds that left it a whole interval behind */
	uint64_t skipped;	/* rounds skipped to catch up after those */
	/* The longest lag since fleet_start(), or since the caller last
	 * zeroed it (top tells the lag of each refresh interval). */
	uint64_t max_lag_ns;
	/* The time pystrobe was stopped (Ctrl-Z) since fleet_start(): not
	 * sampling time, nor lag, nor part of the duration. */
	uint64_t stopped_ns;
	uint64_t suspend_seen;	/* selfstop_total_ns() when last looked at */
	/* The first round, beyond an interval: start-up (see fleet_step()),
	 * as stopped_ns is. */
	uint64_t startup_ns;
	struct rng rng;		/* draws the instants, seeded at the start */
	/* How late each round started after its deadline (ns), and the
	 * rounds FLEET_LATE_NS late or more: a sampler that wakes late on a
	 * busy machine samples the moments the job blocks and frees a CPU. */
	struct hist late;
	uint64_t late_rounds;
};

#define FLEET_LATE_NS 1000000ull

/* What fleet_step() did, when the target is still there. */
enum {
	FLEET_WAIT,		/* no round was due (maybe a walk of the tree) */
	FLEET_ROUND,		/* took a round: a sample of every process */
	FLEET_OVER,		/* the duration is over */
};

/* Start a clock: the first round is due now.  The process's timer slack
 * is made to fit its interval (fleet.c's set_slack()). */
void fleet_start(struct fleet *f, struct fleet_clock *c);

/* After a round that ended at now: the next cell and its instant, and
 * lag and skipped cells when the next cell is already past.  fleet_step()
 * calls it; apart from the clock for tests. */
void fleet_clock_advance(struct fleet_clock *c, uint64_t now);

/* Do what is due by now: a round, or with subprocesses a walk of the tree
 * between rounds.  Returns FLEET_WAIT, FLEET_ROUND or FLEET_OVER,
 * status_fail(EXIT_EXITED) once the target is gone, or without
 * subprocesses status_fail(EXIT_NOT_PYTHON) once it has run exec() (see
 * sampler_sample()). */
int fleet_step(struct fleet *f, struct fleet_clock *c);

/* When the next step is due, as mono_ns(): sleep or poll until then. */
uint64_t fleet_due(const struct fleet *f, const struct fleet_clock *c);

/* Sample at the rate until *stop is set, the duration is over or
 * the target exits.  status() is called about four times a second when
 * not NULL. */
void fleet_run(struct fleet *f, volatile sig_atomic_t *stop,
	       void (*status)(void *arg, const struct sampler_status *st), void *arg,
	       struct sampler_status *final);

/* Totals over every process sampled so far, also those gone. */
void fleet_counts(const struct fleet *f, struct sampler_counts *c);

/* Processes being sampled now, and ever. */
int fleet_nprocs(const struct fleet *f);
int fleet_nprocs_ever(const struct fleet *f);

/* When no process was ever sampled: why (the first Python process's
 * failure, else that none was Python), as status_fail(EXIT_*) and a
 * line. */
int fleet_why_none(const struct fleet *f, char *err, size_t errlen);

/* Why a native stack did not merge, the latest time it happened, or NULL
 * (see sampler_merge_error()). */
const char *fleet_merge_error(const struct fleet *f);

/* The Python version of the first process sampled, or NULL. */
const char *fleet_python_version(const struct fleet *f);
/* That process's pid and command line (argv, *argc words) as read when it
 * was found, or NULL: with --subprocesses, or a launcher (env, a pyenv
 * shim) that ran exec() into Python, the target's own differs.  Valid
 * until fleet_close(). */
char **fleet_python_cmdline(const struct fleet *f, pid_t *pid, int *argc);

void fleet_set_idle(struct fleet *f, bool idle);

#endif
