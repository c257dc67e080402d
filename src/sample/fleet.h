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

#include "sample/sampler.h"

#define FLEET_WALK_NS 50000000ull

struct fleet_opts {
	bool subprocesses;	/* follow every descendant of the target */
	/* With subprocesses: descendants with the same command line (digits
	 * aside) share one root frame, instead of one root per process. */
	bool group;
};

struct fleet;

/* Start sampling pid.  Without subprocesses pid must be a Python process
 * (NULL, *rc and err as sampler_open).  With them it may be anything that
 * exists: its Python descendants are what gets sampled. */
struct fleet *fleet_open(pid_t pid, const struct sampler_opts *so, const struct fleet_opts *fo,
			 struct profile *p, int *rc, char *err, size_t errlen);
void fleet_close(struct fleet *f);

/* One round: a sample of every process, and a walk of the tree when one
 * is due.  Returns 0, -EXIT_EXITED once the target is gone, or without
 * subprocesses -EXIT_NOT_PYTHON once it has run exec() (see
 * sampler_sample()). */
int fleet_sample(struct fleet *f, uint64_t t_ns);

/* Sample at the fixed rate with absolute deadlines until *stop is set,
 * the duration is over or the target exits.  status() is called about four
 * times a second when not NULL. */
void fleet_run(struct fleet *f, volatile sig_atomic_t *stop,
	       void (*status)(void *arg, const struct sampler_status *st), void *arg,
	       struct sampler_status *final);

/* Totals over every process sampled so far, also those gone. */
void fleet_counts(const struct fleet *f, struct sampler_counts *c);

/* Processes being sampled now, and ever. */
int fleet_nprocs(const struct fleet *f);
int fleet_nprocs_ever(const struct fleet *f);

/* When no process was ever sampled: why (the first Python process's
 * failure, else that none was Python), as an EXIT_* code and a line. */
int fleet_why_none(const struct fleet *f, char *err, size_t errlen);

/* Why a native stack did not merge, the latest time it happened, or NULL
 * (see sampler_merge_error()). */
const char *fleet_merge_error(const struct fleet *f);

/* The Python version of the first process sampled, or NULL. */
const char *fleet_python_version(const struct fleet *f);

void fleet_set_idle(struct fleet *f, bool idle);

#endif
