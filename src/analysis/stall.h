/* The stall detector of `watch`: a model fed with what each round saw,
 * that says when a job has stopped making progress, of which kind, and
 * why.  It reads nothing itself (watch.c feeds it from the sampler and
 * /proc), so tests drive it with made-up rounds.
 *
 * The definitions (pystrobe-watch(1), WHAT A STALL IS, says them to users):
 *
 * A thread moves when it comes to a stack it has not been in within the
 * threshold (a spin loop comes back to the same few); run.few_since_ns is
 * the last time it did (its first sighting for a new thread).  Once it
 * has kept still for the threshold, only more than STALL_FEW_STACKS
 * stacks within the threshold move it again, or a new stack after which
 * it comes back to none of the old ones for the threshold: it left them
 * for good (a loop of work that ended in a lock wait), and moved when it
 * came to the stacks it has been in since (issue 39: a stop after long
 * work is judged from the stop, whatever came before).  Until that is
 * known, its process has no verdict.  The stacks seen
 * within the threshold are kept, STALL_FEW_STACKS at most: one more
 * starts the set afresh (and the CPU time, readings and samples of a
 * livelock are counted from then).  A process is
 * stuck when none of its threads moved for the threshold.  A stuck
 * process is a stall of a kind when, in this order:
 *   asyncio     its asyncio tasks await each other in a cycle, or every
 *               task that awaits no other task waits on a locked
 *               asyncio.Lock while its loop waits without timeout
 *               (watch.c reads the tasks, stall_async_why() judges them,
 *               stall_set_async() says so),
 *               and have since the threshold;
 *   collective  a thread's stack is in a collective (wait class), and no
 *               process of the job moves (a rank that moves is late, not
 *               stuck);
 *   data        a thread's stack waits for the input pipeline, and no
 *               process of the job moves (workers that move are slow);
 *   livelock    a thread ran STALL_LIVELOCK_CPU of the time it has been
 *               in its few stacks, or was runnable in STALL_LIVELOCK_RUNNABLE
 *               of the readings and ran STALL_LIVELOCK_LOADED_CPU of the
 *               time (starved of CPU, it is no spin), and came back to
 *               each of those stacks STALL_LIVELOCK_REPEATS times on
 *               average;
 *   deadlock    every thread sits, without running, in a lock wait with
 *               no timeout (the futex call, from its syscall).
 * A stuck process none of these explains waits for the world (an idle
 * server, a sleep) and is no stall.  While another process of the job
 * still moves, a verdict waits up to one more threshold before it is
 * reported: a rank or a DataLoader worker that blocks on a lock is a
 * deadlock of its own a moment before the job is a stuck collective or a
 * starved pipeline, which says more.  A stall is reported once, until
 * the job moves; but a livelock whose process stops spinning and comes to
 * a stall of another kind (a deadlock) is a stall of its own, reported as
 * it is found.  With a progress file, the file alone
 * decides whether the job has stalled; the kinds only name it, and
 * "no-progress" when none applies.
 */
#ifndef PYSTROBE_STALL_H
#define PYSTROBE_STALL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/waitclass.h"

#define STALL_FEW_STACKS 4
/* A thread spins when one rule of stall.c's table holds for its run: it
 * ran at least STALL_LIVELOCK_CPU of the time; or, on a loaded machine,
 * it was runnable in STALL_LIVELOCK_RUNNABLE of the readings (a spin waits
 * for a CPU much of the time, but never for anything else) and still ran
 * STALL_LIVELOCK_LOADED_CPU of the time: one that ran less was starved of
 * CPU (a loop that naps, niced on a machine full of CPU hogs, is runnable
 * at 80% of the readings with 0-2% of a CPU), too little to show what it
 * does with one; a spin beside 6 hogs at nice -10 on 2 CPUs gets 3.5%. */
#define STALL_LIVELOCK_CPU 0.5
#define STALL_LIVELOCK_RUNNABLE 0.8
#define STALL_LIVELOCK_LOADED_CPU 0.03
/* A spin comes back to its few stacks: each seen this many times on
 * average since the run began.  A moving thread sampled a handful of
 * times in a short threshold is a few stacks too, each seen about once. */
#define STALL_LIVELOCK_REPEATS 3
#define STALL_BLOCKED_CPU 0.05		/* at most this much: did not run */

enum stall_kind {
	STALL_NONE,
	STALL_ASYNCIO,
	STALL_COLLECTIVE,
	STALL_DATA,
	STALL_LIVELOCK,
	STALL_DEADLOCK,
	STALL_NO_PROGRESS,
	STALL_KINDS,
};

/* "asyncio", "collective", ... as report.json names them. */
const char *stall_kind_name(enum stall_kind k);

/* A thread's run of few stacks: since when, and what it did since. */
struct stall_run {
	uint64_t few_since_ns;		/* in no new stack since */
	/* Still since, as reported: few_since_ns, or earlier when the thread
	 * came back to a stack it had before its latest new one.  It then
	 * cycles among the few since the first of them was seen; only the
	 * counts (and when it is judged) start at few_since_ns. */
	uint64_t still_since_ns;
	uint32_t samples;		/* since few_since_ns */
	uint64_t cpu0_ns, cpu0_at_ns;	/* the first CPU reading since then */
	bool cpu0_known;
	uint32_t readings, runnable;	/* since then, and in state R */
};

struct stall_thread {
	pid_t tid;
	char *name;
	uint64_t stack;			/* its latest stack: equal ids, equal stacks */
	enum wait_class frames_class;	/* of that stack's frames */
	char *where;			/* "function (file:line)" of that stack */
	uint64_t first_ns, seen_ns;	/* first and latest round it was in */
	uint64_t stack_since_ns;	/* in its latest stack since */
	struct stall_run run;
	/* A new run it may have begun: a thread that had kept still for the
	 * threshold came to a stack not among its few at fresh_from_ns.  Its
	 * old run goes on (a spin's rare line is no move), and the new one
	 * is counted beside it; back in a stack of the old run, the new one
	 * is dropped; a threshold without one, it is the run. */
	struct stall_run fresh;
	uint64_t fresh_from_ns;
	bool fresh_on;
	struct { uint64_t stack, first_ns, last_ns; } few[STALL_FEW_STACKS];
	int nfew;
	/* From the scheduler: its state and CPU time, the latest reading. */
	char state;
	uint64_t cpu_ns, cpu_at_ns;
	bool cpu_known;
	/* The system call it sits in, read while its process is stuck. */
	enum wait_class sys_class;
	bool sys_timed, sys_known;
	/* The first reading since it came to its stack that found it blocked
	 * in a lock wait without timeout, not running (0: none).  /proc is
	 * read after the round: only a round after that reading, in the same
	 * stack, says that the wait is of this stack. */
	uint64_t blocked_at_ns;
};

struct stall_proc {
	pid_t pid, ppid;
	int rank;			/* from RANK, -1: none */
	char *command;
	char *async_why;		/* its asyncio tasks are deadlocked: how */
	uint64_t async_since_ns;	/* ... since */
	uint64_t async_at_ns;		/* when they were last looked at */
	struct stall_thread *t;
	int nt;
	size_t cap;
	uint64_t first_ns, seen_ns;
	enum stall_kind verdict;	/* as of the latest stall_judge() */
	char *why;			/* ... and why, NULL with STALL_NONE */
};

struct stall_opts {
	uint64_t threshold_ns;
	uint64_t gone_ns;	/* unseen this long: the thread or process is gone */
	bool progress;		/* a progress file decides */
};

/* What stall_judge() found for the job. */
struct stall_report {
	enum stall_kind kind;
	uint64_t since_ns;		/* when the job stopped moving */
	uint64_t moved_after_ns;	/* STALL_EV_MOVED: how long it was stalled */
	int proc;			/* the process it is reported for */
	int odd;			/* the odd one out of a collective, or -1 */
	uint64_t odd_for_ns;		/* ... in its stack this long */
	uint64_t progress_unchanged_ns;	/* with a progress file */
	char *why;
};

struct stall_model {
	struct stall_opts o;
	struct stall_proc *p;
	int np;
	size_t cap;
	uint64_t progress_ns;	/* when the progress file last changed */
	uint64_t pending_ns;	/* a verdict since, not reported yet (0: none) */
	bool stalled;		/* reported, not moved yet */
	pid_t stalled_pid;
	struct stall_report r;
};

enum stall_event {
	STALL_EV_NONE,		/* nothing new */
	STALL_EV_NEW,		/* a stall: m->r says what */
	STALL_EV_MOVED,		/* the stall reported has ended */
};

void stall_init(struct stall_model *m, const struct stall_opts *o, uint64_t now_ns);
void stall_release(struct stall_model *m);

/* A process seen in a round (created the first time): its index. */
int stall_proc_seen(struct stall_model *m, uint64_t now_ns, pid_t pid, pid_t ppid, int rank,
		    const char *command);
/* The index of process pid, or -1. */
int stall_proc_find(const struct stall_model *m, pid_t pid);
/* A thread of process pi seen in a round, in the stack `stack` whose
 * frames are of class cls, its innermost frame `where` (copied). */
void stall_thread_seen(struct stall_model *m, int pi, uint64_t now_ns, pid_t tid,
		       const char *name, uint64_t stack, enum wait_class cls,
		       const char *where);
/* Its scheduler state and CPU time, read at now_ns. */
void stall_thread_cpu(struct stall_model *m, int pi, pid_t tid, uint64_t now_ns, char state,
		      uint64_t cpu_ns);
/* The system call it sits in. */
void stall_thread_syscall(struct stall_model *m, int pi, pid_t tid, enum wait_class cls,
			  bool timed);
/* Whether the asyncio tasks of process p, as read now, are deadlocked
 * (see asyncio above): why in words (new), or NULL. */
struct py_tasks;
char *stall_async_why(const struct stall_proc *p, const struct py_tasks *tasks);
/* Its asyncio tasks are deadlocked, in the words of why (copied), or not
 * (NULL), as read at now_ns. */
void stall_set_async(struct stall_model *m, int pi, const char *why, uint64_t now_ns);
/* The progress file changed (grew, or was touched) at now_ns. */
void stall_progress(struct stall_model *m, uint64_t now_ns);

/* Drop the threads and processes not seen for gone_ns. */
void stall_forget(struct stall_model *m, uint64_t now_ns);

/* Whether process pi is stuck, and since when. */
bool stall_stuck(const struct stall_model *m, int pi, uint64_t now_ns, uint64_t *since_ns);
/* Since when none of its threads has moved (their latest few_since_ns). */
uint64_t stall_still_since(const struct stall_model *m, int pi);

/* Judge the job as of now_ns: every process's verdict, and the event. */
enum stall_event stall_judge(struct stall_model *m, uint64_t now_ns);

/* The class a thread is judged by: its frames' when they name a
 * collective, GPU, data or gc wait, else its system call's while it
 * does not run, else its frames', else WC_CPU while running. */
enum wait_class stall_thread_class(const struct stall_thread *t);
/* The class of thread tid of process pi in the sample stall_thread_seen()
 * was just given, for the flight recording: its frames' when they name a
 * wait; else, while it has stayed in that stack since its latest reading
 * found it not running, its system call's (a lock wait only without a
 * timeout: a thread waiting for the GIL waits with one); else WC_NONE.
 * A thread blocked in lock.acquire() has no frame of the lock's. */
enum wait_class stall_sample_class(const struct stall_model *m, int pi, pid_t tid);
/* Its share of the time since few_since_ns spent running, -1 unknown. */
double stall_thread_busy(const struct stall_thread *t);
/* Its share of the readings since then that found it runnable, -1 none. */
double stall_thread_runnable(const struct stall_thread *t);

#endif
