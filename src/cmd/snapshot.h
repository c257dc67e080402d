/* One consistent picture of a Python process: who it is, which Python, and
 * every thread's stack, read while its threads are paused (or not, with
 * --nonblocking).  The dump command prints one per process; record and top
 * sample through sample/sampler.c instead. */
#ifndef PYSTROBE_SNAPSHOT_H
#define PYSTROBE_SNAPSHOT_H

#include <stdbool.h>
#include <sys/types.h>

#include "python/locate.h"
#include "native/mixed.h"
#include "python/pystack.h"
#include "python/asyncio.h"
#include "process/jobenv.h"

struct snapshot_opts {
	bool nonblocking;
	bool locals;
	bool deep_locals;	/* --locals=deep */
	bool native;		/* also unwind native stacks and merge (not with nonblocking) */
	bool async;		/* also read asyncio tasks */
};

struct snapshot {
	pid_t pid;
	pid_t ns_pid;		/* its id in its own PID namespace (== pid outside containers) */
	pid_t ppid;		/* its parent when read, 0 when unknown (a core) */
	struct job_ident job;	/* its job and rank, from its environment */
	char **argv;		/* command line, NULL if unreadable */
	int argc;
	struct pyinterp pi;
	struct py_thread *threads;
	int nthreads;
	struct mixed_stack *mixed;	/* with opts.native: threads[i]'s merged stack */
	/* threads[].idle was read from the scheduler (a live process).  A
	 * core records no run state: there idle is unknown, not false. */
	bool idle_known;
	/* With opts.async: its tasks, or why there are none (no asyncio
	 * imported: tasks stays empty and async_note says so). */
	struct py_tasks tasks;
	char *async_note;
	/* Read from a core (snapshot_take() with one) instead of a live process. */
	char *core;		/* its path, NULL when live */
	char *root;		/* --root, NULL for "/" */
	unsigned long long core_ns;	/* when the core was written (its mtime) */
	int signo;		/* the fatal signal, 0 when none */
	pid_t crash_tid;	/* the thread that took it */
	bool have_addr;		/* fault_addr is meaningful */
	uint64_t fault_addr;
	char **notes;		/* what could not be read, one line each */
	int nnotes;
	bool incomplete;	/* a note says something is missing */
};

/* Where a core is and how to read it. */
struct core_opts {
	const char *path;
	const char *exe;	/* --executable, or NULL */
	const char *root;	/* --root, or NULL */
};

/* Read the live process pid, or with core the process that core file was
 * taken of (pid unused).  Returns 0, or status_fail(EXIT_*) with a
 * one-line message in err.  A live target is never left paused, whatever
 * happens; from a core, s->notes say what could not be read (files
 * missing, a truncated core): what could be is there all the same. */
int snapshot_take(pid_t pid, const struct core_opts *core, const struct snapshot_opts *o,
		  struct snapshot *s, char *err, size_t errlen);
void snapshot_free(struct snapshot *s);


#endif
