/* Stopping every thread of a process for a consistent read, and letting it
 * go again.
 *
 * Threads are attached with PTRACE_SEIZE and stopped with PTRACE_INTERRUPT,
 * never PTRACE_ATTACH: SEIZE sends no SIGSTOP that could be left behind, and
 * if pystrobe dies the kernel releases the threads.  A signal that arrives for
 * a thread while we hold it is delivered when we let go.
 *
 * No thread is waited for longer than a bound of a few milliseconds: one
 * that has not stopped by then (in an uninterruptible sleep) is late, not
 * held (pause_holds(): the sampler reads it running once the others are
 * let go, sample_pause.c's record_late()), and detached
 * when its stop comes; one late again and again is left running by the
 * next pauses of the same hint.
 */
#ifndef PYSTROBE_PAUSE_H
#define PYSTROBE_PAUSE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct paused_thread {
	pid_t tid;
	bool stopped;		/* in a ptrace stop we caused or saw */
	int signal;		/* signal to deliver on release, or 0 */
};

struct pause_hint;

struct pause {
	pid_t pid;
	struct paused_thread *threads;
	int n;
	sigset_t saved_mask;
	bool realtime;		/* pystrobe may run SCHED_FIFO to stop and release */
	bool partial;		/* asked to leave some threads running */
	bool left_running;	/* and a listing found one of them */
	const pid_t *skip;	/* those threads, sorted: during the call only */
	int nskip;
	struct pause_hint *hint;	/* of this process, until pause_release() */
	/* Threads left out as late: not stopped within the bound, still on
	 * their way to an earlier pause's stop, or backed off from. */
	int nlate;
	uint64_t deadline_ns;	/* the bound, once the first wait began */
	uint64_t bound_ns;	/* how long that is */
	uint64_t released_ns;	/* mono_ns() when pause_release() let the last go */
	/* mono_ns() when the first thread was seized (0: none was): the pause
	 * as the target has it runs from here, not from pystrobe's setting
	 * up before (signals, scheduling policy, the first listing). */
	uint64_t began_ns;
};

/* Stop all threads of pid.  Returns 0, or status_fail() of EXIT_PERMISSION,
 * EXIT_NO_PROCESS or EXIT_ERROR (nothing attached remains after an error).  While paused, SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT to pystrobe are held back until pause_release(), so
 * no exit path can leave the target stopped. */
int pause_process(pid_t pid, struct pause *p);

/* The same with another bound than the few milliseconds of a sample:
 * for a one-time read (dump --native) that tries again, with a longer
 * bound, when a thread was late. */
int pause_process_within(pid_t pid, struct pause *p, uint64_t bound_ns);

/* A thread late in the last pauses: see LATE_STREAK in pause.c. */
struct late_thread {
	pid_t tid;
	int streak;		/* pauses in a row it was late in */
	uint64_t until;		/* left running until npauses reaches this */
};

/* The threads one pause of a process found, for its next pause: they
 * are seized before anything else, so that they are on their way to
 * their stop while pystrobe looks for threads started since. */
struct pause_hint {
	pid_t pid;
	pid_t *tids;
	int n;
	size_t cap;
	/* The last listing of /proc/PID/task that pause made (sorted),
	 * every thread in it, stopped or left running. */
	pid_t listed_pid;
	pid_t *listed;
	int nlisted;
	uint64_t npauses;	/* pauses of pid made with this hint */
	struct late_thread *late;
	int nlate;
	size_t late_cap;
};

/* pause_process(), seizing h's threads first when h is of pid, and
 * keeping in h the threads this pause found, and those late in it (h
 * must outlive the pause_release()).  h may be NULL. */
int pause_process_hinted(pid_t pid, struct pause *p, struct pause_hint *h);
void pause_hint_free(struct pause_hint *h);

/* pause_process_hinted(), but the threads in skip[0..nskip) (sorted here)
 * are left running: the caller will not read them this round (a sleeping
 * thread, whose stack it does not record, would have to be woken and
 * scheduled only to reach its stop).  Every other thread is stopped, one
 * started since the last pause included.  It succeeds with no thread
 * stopped when every thread of pid is in skip.  Signals, leftovers and
 * pause_release() are as for any pause: a thread left running was never
 * seized.  A thread left running may start a thread after the last
 * listing, which is then not stopped: pause_holds() says which threads
 * may be read as stopped. */
int pause_process_except(pid_t pid, struct pause *p, struct pause_hint *h, pid_t *skip, int nskip);

/* Append to (*skip)[0..*n) (grown as ALLOC_GROW does, *cap) every thread
 * of h's last listing of pid that is not in keep[0..nkeep) (sorted here):
 * for a caller that reads only keep's threads, the ones it need not stop.
 * A thread started since that listing is in neither, and is stopped. */
void pause_hint_rest(const struct pause_hint *h, pid_t pid, pid_t *keep, int nkeep,
		     pid_t **skip, int *n, size_t *cap);

/* Stop thread tid of pid alone, within the bound of a sample's pause
 * (STOP_BOUND_NS), for one consistent read of a stack that will not hold
 * still while it runs; the other threads run on.  Signals, a thread late
 * (p->nlate 1: not stopped within the bound, left running and detached
 * when its stop comes) and pause_release() are as for pause_process().
 * Returns 0 (pause_holds(p, tid) says whether it stopped), -ESRCH when the
 * thread is gone, or status_fail(EXIT_PERMISSION) when ptrace is refused
 * (another tracer, ptrace_scope) or status_fail(EXIT_ERROR); nothing is
 * held after an error. */
int pause_thread(pid_t pid, pid_t tid, struct pause *p);

/* List pid's threads into h, as a pause would, without stopping any: the
 * first pause of a caller that leaves threads running (pause_hint_rest())
 * then need not stop every thread of the process to find which.  0, or
 * -ESRCH when they cannot be listed. */
int pause_hint_list(struct pause_hint *h, pid_t pid);

/* Let every thread go, and note when in released_ns.  Safe to call on a
 * zeroed struct. */
void pause_release(struct pause *p);

/* Did a pause reap the exit status of process pid (our own child)?  Then
 * *status is what waitpid() would have returned. */
bool pause_reaped(pid_t pid, int *status);

/* Wait for our own child (the launched command), reaping on the way any of
 * its threads that died while traced: until they are reaped, the kernel
 * holds back the child's own exit.  Returns child with *status set, 0 when
 * not blocking and it has not exited, -1 on error. */
pid_t pause_wait_child(pid_t child, int *status, bool block);

/* Detach the threads that had not reached their stop when they were
 * released, if they have now; returns how many are still waited for.
 * Each pause and release does this too. */
int pause_leftovers(void);

/* How many leftovers there are, as last counted: for a signal handler.
 * (Between pauses a SIGCHLD handler detaches each as its stop comes.) */
int pause_leftovers_seen(void);

/* Is a pause holding threads now (between pause_process() and the end of
 * pause_release())?  For a signal handler. */
bool pause_holding(void);

/* Is tid one of the threads stopped by p? */
bool pause_has(const struct pause *p, pid_t tid);

/* May thread tid be read as one p stopped?  Every thread of a full pause
 * with no late thread may; otherwise (threads left running by
 * pause_process_except(), or late) only those it stopped: a thread left
 * running may have started one after the last listing.  Call it before
 * pause_release(). */
bool pause_holds(const struct pause *p, pid_t tid);

#endif
