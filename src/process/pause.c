#include "process/pause.h"
#include "process/proc.h"
#include "process/schedprio.h"
#include "process/selfstop.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* A thread that has not reached its stop this long after the pause began
 * is late: it is not held (pause_holds(); the sampler reads it running
 * after the pause), and the others are not held waiting for it.  A thread in an uninterruptible sleep (a GPU driver
 * call, NFS, the parent of a vfork()) cannot stop until it leaves it, and
 * waiting 200 ms for one held a training loop stopped for 200 ms per
 * sample.  A running thread stops in microseconds; one that waits for a
 * CPU behind the target's own threads may take a time slice. */
#define STOP_BOUND_NS (2 * 1000 * 1000ull)
/* A thread that has not stopped this long after the first wait of a
 * sampler's pause is looked at in /proc (and again at each stop after,
 * and this often): when every such thread is in an uninterruptible sleep
 * (state D), the pause waits no longer.  None of them can stop before it
 * leaves that sleep, which may be the next millisecond or the next
 * minute; waiting out
 * STOP_BOUND_NS for them put the whole bound into a share of bench/late's
 * pauses, its p99 with them (bench/README, "late").  A thread that is
 * runnable or in an interruptible sleep is on its way and keeps the bound. */
#define STOP_D_LOOK_NS (200 * 1000ull)
/* A thread found past the bound (a new one) may still stop this fast. */
#define STOP_GRACE_NS (200 * 1000ull)
/* New threads can appear while we attach; look again, but not forever. */
#define MAX_ROUNDS 8
/* A thread late this many pauses in a row in an uninterruptible sleep is
 * left running by the next ones, twice as many after each further late
 * one (or each time it is still in that sleep when they are over: see
 * look_before_seizing()), up to LATE_SKIP_MAX: seizing it costs the
 * others little any more, but it still reaches a stop it need not have
 * made, every time.  A thread late for want of a CPU (state R, a busy
 * machine) is not backed off from: it is running, and leaving it out of
 * many samples would hide that. */
#define LATE_STREAK 2
#define LATE_SKIP_MAX 64

/* A seized thread can be detached only from a stop.  One that has not
 * reached its stop when we release (an uninterruptible sleep: NFS, a GPU
 * driver call) would stop the moment it gets there, and stay stopped for
 * as long as pystrobe lives.  So it is kept here and detached as soon as
 * its stop comes, by the SIGCHLD handler below (the kernel tells the
 * tracer of each stop): at once, whatever pystrobe is doing then (waiting
 * for the next sample, naming frames for dump).  A thread on this list is
 * not seized again (the kernel would refuse: it is ours).  As many as the
 * target has threads: none may be forgotten.  Outside the handler the
 * list is only touched with SIGCHLD blocked (during a pause, or
 * hold_sigchld()). */
static pid_t *leftovers;
static volatile sig_atomic_t nleftovers;
static size_t leftovers_cap;

/* Between block_signals() and the end of pause_release(): read by
 * selfstop.c's signal handler. */
static volatile sig_atomic_t holding;

/* A stopped pystrobe would keep the threads it holds stopped, and the
 * leftovers that reach their stop meanwhile: the SIGSTOP watchdog is to
 * know of both. */
static void tell_watchdog(void)
{
	selfstop_holding(holding || nleftovers > 0);
}

static bool is_leftover(pid_t tid)
{
	for (int i = 0; i < nleftovers; i++)
		if (leftovers[i] == tid)
			return true;
	return false;
}

static void drop_leftover(pid_t tid)
{
	for (int i = 0; i < nleftovers; i++)
		if (leftovers[i] == tid)
			leftovers[i--] = leftovers[--nleftovers];
}

/* The signal a ptrace stop holds back for the thread: none for our own
 * interrupt or a group stop (PTRACE_EVENT_STOP), else the one it was about
 * to get, which must be handed back on detach. */
static int signal_of_stop(int status)
{
	return (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
}

/* Waiting for a thread's stop (or a leftover's, in the SIGCHLD handler)
 * can reap the process itself when it is our own child (launch mode) and
 * its leader has exited: keep that status for whoever waits for the child
 * afterwards. */
static volatile pid_t reaped_pid;
static volatile int reaped_status;

static void note_exit(pid_t tid, int status)
{
	reaped_pid = tid;
	reaped_status = status;
}

static void sweep_leftovers(void)
{
	int j = 0;

	for (int i = 0; i < nleftovers; i++) {
		int status = 0;
		pid_t r = waitpid(leftovers[i], &status, WNOHANG | __WALL);

		if (r == 0) {
			leftovers[j++] = leftovers[i];
			continue;
		}
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			if (r > 0)
				note_exit(r, status);
			continue;
		}
		ptrace(PTRACE_DETACH, leftovers[i], 0, (void *)(long)signal_of_stop(status));
	}
	nleftovers = j;
	tell_watchdog();
}

static void add_leftover(pid_t tid)
{
	ALLOC_GROW(leftovers, nleftovers + 1, leftovers_cap);
	leftovers[nleftovers] = tid;
	nleftovers++;
	tell_watchdog();
}

static void on_sigchld(int sig)
{
	int saved = errno;

	(void)sig;
	sweep_leftovers();
	/* The last one gone: a Ctrl-Z put off for it may stop pystrobe. */
	if (!nleftovers)
		selfstop_poll();
	errno = saved;
}

/* The handler above, and wait_stops(), which sleeps until a SIGCHLD says
 * a thread has stopped: the kernel sends none to a tracer that ignores
 * SIGCHLD or asked for none on stops (a disposition inherited through
 * exec made every pause wait out its whole bound).  SA_RESTART: the
 * program's reads and writes go on; its sleeps and polls end early, and
 * each of them looks at the time again. */
static void want_sigchld(void)
{
	static bool done;
	struct sigaction sa;

	if (done)
		return;
	done = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
}

static void hold_sigchld(sigset_t *old)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, old);
}

int pause_leftovers(void)
{
	sigset_t old;
	int n;

	hold_sigchld(&old);
	sweep_leftovers();
	n = nleftovers;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return n;
}

int pause_leftovers_seen(void)
{
	return nleftovers;
}

bool pause_holding(void)
{
	return holding;
}

static void block_signals(struct pause *p)
{
	sigset_t set;

	want_sigchld();
	selfstop_watch();

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	/* A stop of pystrobe now would keep the target stopped with it:
	 * selfstop.c stops pystrobe once the threads are let go. */
	sigaddset(&set, SIGTSTP);
	sigaddset(&set, SIGTTIN);
	sigaddset(&set, SIGTTOU);
	/* Taken by wait_stops(): the tracer gets one for each stop. */
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &p->saved_mask);
	holding = true;
	tell_watchdog();
}


bool pause_reaped(pid_t pid, int *status)
{
	if (pid != reaped_pid || !pid)
		return false;
	*status = reaped_status;
	return true;
}

/* With SIGCHLD held: the stops of leftovers come to this wait, and the
 * handler must not change the list under it.  The handler may have reaped
 * the child already: looked at first, since the suspend watchdog, also a
 * child of pystrobe that lives as long as it does, would keep a blocking
 * waitpid(-1) from ever failing with ECHILD.
 *
 * A stop is never the child's exit, not even one reported under the
 * child's own pid: its main thread, late in the last pause, reaching its
 * stop.  Taken for the exit, that made record say exit 1 for a command
 * that went on to exit 3, and left the command stopped until pystrobe
 * ended (check_chaos, once in a thousand short launches; check_pause's
 * test_late_child makes it happen every time). */
static pid_t wait_child(pid_t child, int *status, bool block)
{
	if (pause_reaped(child, status))
		return child;
	for (;;) {
		int st;
		pid_t r = waitpid(-1, &st, __WALL | (block ? 0 : WNOHANG));

		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return pause_reaped(child, status) ? child : -1;
		}
		/* A leftover reaching its stop: let it go. */
		if (WIFSTOPPED(st)) {
			if (is_leftover(r)) {
				drop_leftover(r);
				tell_watchdog();
				ptrace(PTRACE_DETACH, r, 0, (void *)(long)signal_of_stop(st));
			}
			continue;
		}
		if (r == child) {
			*status = st;
			return r;
		}
		/* A thread of the child that died while we traced it: reaping
		 * it is what lets the kernel report the child's own exit. */
	}
}

pid_t pause_wait_child(pid_t child, int *status, bool block)
{
	sigset_t old;
	pid_t r;

	hold_sigchld(&old);
	r = wait_child(child, status, block);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

bool pause_has(const struct pause *p, pid_t tid)
{
	for (int i = 0; i < p->n; i++)
		if (p->threads[i].tid == tid)
			return true;
	return false;
}

/* Is tid a thread p stopped, and still holds? */
static bool stopped_by(const struct pause *p, pid_t tid)
{
	for (int i = 0; i < p->n; i++)
		if (p->threads[i].tid == tid)
			return p->threads[i].stopped;
	return false;
}

bool pause_holds(const struct pause *p, pid_t tid)
{
	if (!p->partial && !p->nlate)
		return true;
	/* A gone thread's entry has tid 0: an unknown tid proves nothing. */
	return tid > 0 && stopped_by(p, tid);
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Is tid one the caller of pause_process_except() leaves running? */
static bool skipped(const struct pause *p, pid_t tid)
{
	return p->nskip && bsearch(&tid, p->skip, p->nskip, sizeof(*p->skip), cmp_tid);
}

/* --- threads late again and again ---------------------------------------- */

static struct late_thread *find_late(const struct pause_hint *h, pid_t tid)
{
	for (int i = 0; i < h->nlate; i++)
		if (h->late[i].tid == tid)
			return &h->late[i];
	return NULL;
}

/* Is tid a thread this pause leaves running for having been late before?
 * (p->hint is of p's process, or NULL.) */
static bool backed_off(const struct pause *p, pid_t tid)
{
	const struct late_thread *l = p->hint ? find_late(p->hint, tid) : NULL;

	return l && p->hint->npauses < l->until;
}

/* One more pause in which tid was late. */
static void late_again(struct pause_hint *h, pid_t tid)
{
	struct late_thread *l = find_late(h, tid);
	int shift;

	if (!l) {
		ALLOC_GROW(h->late, h->nlate + 1, h->late_cap);
		l = &h->late[h->nlate++];
		*l = (struct late_thread){ .tid = tid };
	}
	if (++l->streak < LATE_STREAK)
		return;
	/* Pauses 1, 2, 4 ... 32, then LATE_SKIP_MAX, from the next one. */
	shift = l->streak - LATE_STREAK;
	l->until = h->npauses + 1 + (shift < 6 ? 1 << shift : LATE_SKIP_MAX);
}

/* Before a pause seizes anything: a thread whose time off is over and
 * that is still in its uninterruptible sleep would only be seized to be
 * left out again, after the pause waited STOP_D_LOOK_NS for it.  One look
 * at /proc, while nothing is stopped yet, gives it its next time off
 * instead. */
static void look_before_seizing(struct pause_hint *h)
{
	for (int i = 0; i < h->nlate; i++) {
		struct late_thread *l = &h->late[i];

		if (l->streak >= LATE_STREAK && h->npauses >= l->until &&
		    proc_task_state(h->pid, l->tid) == 'D')
			late_again(h, l->tid);
	}
}

/* The threads seized that have not stopped (yet): late. */
static void count_late(struct pause *p)
{
	for (int i = 0; i < p->n; i++)
		p->nlate += p->threads[i].tid && !p->threads[i].stopped;
}

/* After a pause, once its threads are let go (a look at /proc for each
 * late thread is no time to keep the others stopped): every thread it
 * stopped in time starts afresh, every one it seized late that is in an
 * uninterruptible sleep counts one more, and a thread no longer listed is
 * forgotten (its number may come back as another's). */
static void note_late(const struct pause *p, struct pause_hint *h)
{
	int j = 0;

	for (int i = 0; i < p->n; i++) {
		const struct paused_thread *t = &p->threads[i];

		if (t->tid && !t->stopped && proc_task_state(p->pid, t->tid) == 'D')
			late_again(h, t->tid);
	}
	for (int i = 0; i < h->nlate; i++) {
		struct late_thread *l = &h->late[i];

		if (stopped_by(p, l->tid) || !h->nlisted ||
		    !bsearch(&l->tid, h->listed, h->nlisted, sizeof(*h->listed), cmp_tid))
			continue;
		h->late[j++] = *l;
	}
	h->nlate = j;
}

/* Seize and interrupt one thread.  0, 1 if it is already gone, or an error. */
static int seize(pid_t pid, pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
		if (errno == ESRCH)
			return 1;
		/* The kernel refuses to attach to a thread that is exiting:
		 * that thread is as good as gone, not a permission problem. */
		if (errno == EPERM && proc_task_exiting(pid, tid))
			return 1;
		return status_fail(errno == EPERM ? EXIT_PERMISSION : EXIT_ERROR);
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
		/* It exited between the two calls; the kernel dropped it. */
		return 1;
	}
	return 0;
}

/* seize(), the first of a pause noting when the pause began. */
static int seize_first(struct pause *p, pid_t tid)
{
	if (!p->began_ns)
		p->began_ns = mono_ns();
	return seize(p->pid, tid);
}

/* Collect what waitpid() has for the seized threads from `from` on;
 * returns how many are still on their way to their stop. */
static int collect_stops(struct pause *p, int from)
{
	int pending = 0;

	for (int i = from; i < p->n; i++) {
		struct paused_thread *t = &p->threads[i];
		int status = 0;
		pid_t r;

		if (t->stopped || t->tid == 0)
			continue;
		r = waitpid(t->tid, &status, WNOHANG | __WALL);
		if (r == 0) {
			pending++;
			continue;
		}
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			if (r > 0)
				note_exit(r, status);
			t->tid = 0;	/* gone: nothing to release */
			continue;
		}
		t->stopped = true;
		t->signal = signal_of_stop(status);
	}
	return pending;
}

/* Sleep until a SIGCHLD (blocked during a pause) or the deadline.  One
 * that came before the call returns at once.  -1 once the deadline has
 * passed, else 0. */
static int wait_sigchld(uint64_t deadline)
{
	uint64_t now = mono_ns();
	struct timespec ts;
	sigset_t chld;

	if (now >= deadline)
		return -1;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	ts.tv_sec = (deadline - now) / 1000000000;
	ts.tv_nsec = (deadline - now) % 1000000000;
	sigtimedwait(&chld, NULL, &ts);
	return 0;
}

/* Is every thread seized from `from` on that has not stopped yet in an
 * uninterruptible sleep?  (See STOP_D_LOOK_NS.) */
static bool pending_all_in_d(const struct pause *p, int from)
{
	for (int i = from; i < p->n; i++) {
		const struct paused_thread *t = &p->threads[i];

		if (t->tid && !t->stopped && proc_task_state(p->pid, t->tid) != 'D')
			return false;
	}
	return true;
}

/* Collect the stop of every seized thread, up to the deadline.  Each stop
 * sends pystrobe a SIGCHLD (held back by block_signals()), so between
 * looks it sleeps until the next stop rather than for a fixed while: a
 * poll at a fixed period added several periods to the median pause of
 * threads spinning in C (bench/README, "native"), most of it from waking
 * up for nothing. */
static void wait_stops(struct pause *p, int from)
{
	uint64_t now = mono_ns(), deadline = now + STOP_GRACE_NS;
	/* Only a sampler's pauses (with a hint) look for threads in D: the
	 * next sample comes in milliseconds, while a one-shot pause (dump
	 * --native, its bound growing each try) gives such a thread its whole
	 * bound. */
	uint64_t look = p->hint ? now + STOP_D_LOOK_NS : UINT64_MAX;

	/* The bound runs from the first wait, after the first threads are
	 * seized: seizing 200 threads takes a millisecond by itself.  A
	 * thread found later (started meanwhile) gets a short grace. */
	if (!p->deadline_ns)
		p->deadline_ns = now + p->bound_ns;
	if (p->deadline_ns > deadline)
		deadline = p->deadline_ns;
	while (collect_stops(p, from) > 0) {
		now = mono_ns();
		if (now >= deadline)
			return;
		/* Again at each stop after the first look, and every
		 * STOP_D_LOOK_NS: the threads in D may be the last ones.
		 * (pystrobe runs SCHED_FIFO here: every wait must sleep.) */
		if (now >= look) {
			if (pending_all_in_d(p, from))
				return;
			look = now + STOP_D_LOOK_NS;
		}
		wait_sigchld(look < deadline ? look : deadline);
	}
}

/* pystrobe runs SCHED_FIFO, when it may (root, CAP_SYS_NICE or
 * RLIMIT_RTPRIO), while it stops the threads, reads them and lets them go.
 * With more runnable threads than CPUs, a thread stopping or let go
 * otherwise takes pystrobe's CPU, and the threads not yet stopped or let
 * go wait a time slice: with this, more threads spinning in C than CPUs
 * are paused many times less per sample (bench/README, "native").  Stopping
 * and letting go are a few system calls per thread, and every wait in them
 * sleeps.  The reading grows with the threads (--native: a stack copy and
 * registers each), so for a process with
 * more than REALTIME_READ_THREADS it runs at the normal policy: a big
 * target must not make pystrobe hold a CPU at real-time priority. */
#define REALTIME_READ_THREADS 32

/* Through schedprio.c, which holds the sampling loop's own level: the end
 * of a pause goes back to it (see schedprio.h). */
static bool realtime(bool on)
{
	return schedprio_set(on);
}

/* Seize the threads the last pause of this process stopped, before any
 * listing of /proc/PID/task: they start on their way to their stop at
 * once, and the listing that must follow once they are stopped (see
 * pause_process()) is then the only one.  A tid is seized only if it is
 * still a thread of pid (tgkill with no signal checks that): it may have
 * exited and its number gone to another process.  A failure is left to
 * the listing, which seizes the thread again and reports it. */
static void seize_hinted(pid_t pid, struct pause *p, const struct pause_hint *h, size_t *cap)
{
	if (!h || h->pid != pid)
		return;
	for (int i = 0; i < h->n; i++) {
		pid_t tid = h->tids[i];

		if (is_leftover(tid) || skipped(p, tid) || backed_off(p, tid) ||
		    syscall(SYS_tgkill, pid, tid, 0) != 0 || seize_first(p, tid) != 0)
			continue;
		ALLOC_GROW(p->threads, p->n + 1, *cap);
		p->threads[p->n++] = (struct paused_thread){ .tid = tid };
	}
	wait_stops(p, 0);
}

/* A seized thread missing from a listing of the process's threads (tids,
 * sorted) is not one of them any more: it exited after tgkill looked, and
 * its number may already be another process's.  Let it go now. */
static void drop_strangers(struct pause *p, const pid_t *tids, int n)
{
	for (int i = 0; i < p->n; i++) {
		struct paused_thread *t = &p->threads[i];

		if (!t->tid || !t->stopped || bsearch(&t->tid, tids, n, sizeof(*tids), cmp_tid))
			continue;
		ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->signal);
		t->tid = 0;
	}
}

/* Keep the threads held for the next pause (h may be NULL); returns how
 * many there are. */
static int keep_hint(const struct pause *p, struct pause_hint *h)
{
	int n = 0;

	if (h) {
		h->pid = p->pid;
		h->n = 0;
	}
	for (int i = 0; i < p->n; i++) {
		if (!p->threads[i].tid)
			continue;
		n++;
		if (!h)
			continue;
		ALLOC_GROW(h->tids, h->n + 1, h->cap);
		h->tids[h->n++] = p->threads[i].tid;
	}
	return n;
}

void pause_hint_rest(const struct pause_hint *h, pid_t pid, pid_t *keep, int nkeep,
		     pid_t **skip, int *n, size_t *cap)
{
	if (h->listed_pid != pid)
		return;
	/* keep may be NULL when empty, which qsort() must not get. */
	if (nkeep)
		qsort(keep, nkeep, sizeof(*keep), cmp_tid);
	for (int i = 0; i < h->nlisted; i++) {
		if (nkeep && bsearch(&h->listed[i], keep, nkeep, sizeof(*keep), cmp_tid))
			continue;
		ALLOC_GROW(*skip, *n + 1, *cap);
		(*skip)[(*n)++] = h->listed[i];
	}
}

void pause_hint_free(struct pause_hint *h)
{
	free(h->tids);
	free(h->listed);
	free(h->late);
	memset(h, 0, sizeof(*h));
}

static int pause_within(pid_t pid, struct pause *p, struct pause_hint *h, pid_t *skip,
			int nskip, uint64_t bound_ns);

int pause_process(pid_t pid, struct pause *p)
{
	return pause_within(pid, p, NULL, NULL, 0, STOP_BOUND_NS);
}

int pause_process_within(pid_t pid, struct pause *p, uint64_t bound_ns)
{
	return pause_within(pid, p, NULL, NULL, 0, bound_ns);
}

int pause_process_hinted(pid_t pid, struct pause *p, struct pause_hint *h)
{
	return pause_process_except(pid, p, h, NULL, 0);
}

/* Seize the threads of one listing of the process (tids[0..n)) that are
 * not seized yet, nor left running on purpose.  Returns how many it
 * seized, or an error.  A leftover, or a thread backed off from, is late
 * (counted in the first listing, where it first shows). */
static int seize_listed(struct pause *p, const pid_t *tids, int n, size_t *cap,
			bool first)
{
	int added = 0;

	for (int i = 0; i < n; i++) {
		int r;

		if (pause_has(p, tids[i]))
			continue;
		if (skipped(p, tids[i])) {
			p->left_running = true;
			continue;
		}
		if (is_leftover(tids[i]) || backed_off(p, tids[i])) {
			p->nlate += first;
			continue;
		}
		r = seize_first(p, tids[i]);
		if (r == 1)
			continue;
		if (r < 0)
			return r;
		ALLOC_GROW(p->threads, p->n + 1, *cap);
		p->threads[p->n++] = (struct paused_thread){ .tid = tids[i] };
		added++;
	}
	return added;
}

/* Keep the last listing for the next pause's caller (h may be NULL). */
static void keep_listing(struct pause_hint *h, pid_t pid, pid_t *tids, int n)
{
	if (!h) {
		free(tids);
		return;
	}
	free(h->listed);
	h->listed = tids;
	h->nlisted = n;
	h->listed_pid = pid;
}

int pause_hint_list(struct pause_hint *h, pid_t pid)
{
	pid_t *tids;
	int n = proc_tasks(pid, &tids);

	if (n < 0)
		return -ESRCH;
	keep_listing(h, pid, tids, n);
	return 0;
}

/* Every listing is made with all threads seized so far stopped: one that
 * finds no new thread proves that none can start, but from a thread left
 * running (see pause_holds()). */
static int seize_all(pid_t pid, struct pause *p, struct pause_hint *h, size_t *cap)
{
	for (int round = 0; round < MAX_ROUNDS; round++) {
		pid_t *tids;
		int n = proc_tasks(pid, &tids), from = p->n, added;

		if (n < 0)
			return p->n || p->left_running || p->nlate ? 0 :
				status_fail(EXIT_NO_PROCESS);
		if (round == 0)
			drop_strangers(p, tids, n);
		added = seize_listed(p, tids, n, cap, round == 0);
		keep_listing(h, pid, tids, n);
		if (added < 0)
			return added;
		wait_stops(p, from);
		if (!added)
			break;
	}
	return 0;
}

int pause_process_except(pid_t pid, struct pause *p, struct pause_hint *h, pid_t *skip, int nskip)
{
	return pause_within(pid, p, h, skip, nskip, STOP_BOUND_NS);
}

static int pause_within(pid_t pid, struct pause *p, struct pause_hint *h, pid_t *skip,
			int nskip, uint64_t bound_ns)
{
	size_t cap = 0;
	int rc;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->bound_ns = bound_ns;
	if (nskip > 0) {
		qsort(skip, nskip, sizeof(*skip), cmp_tid);
		p->skip = skip;
		p->nskip = nskip;
		p->partial = true;
	}
	if (h && h->pid == pid) {
		p->hint = h;
		h->npauses++;
		look_before_seizing(h);
	}
	block_signals(p);
	p->realtime = realtime(true);
	sweep_leftovers();
	seize_hinted(pid, p, h, &cap);
	rc = seize_all(pid, p, h, &cap);
	/* Only this call reads the caller's array. */
	p->skip = NULL;
	p->nskip = 0;
	if (rc < 0) {
		/* Threads seized but not yet stopped cannot be detached:
		 * collect their stops first, then let everything go. */
		wait_stops(p, 0);
		pause_release(p);
		return rc;
	}
	/* The stops that came while later threads were seized. */
	collect_stops(p, 0);
	count_late(p);
	/* Nothing stopped is a pause only when threads were left running on
	 * purpose, or late: otherwise the process has gone. */
	if (!keep_hint(p, h) && !p->left_running && !p->nlate) {
		pause_release(p);
		return status_fail(EXIT_NO_PROCESS);
	}
	if (p->realtime && p->n > REALTIME_READ_THREADS)
		realtime(false);
	return 0;
}

int pause_thread(pid_t pid, pid_t tid, struct pause *p)
{
	size_t cap = 0;
	int r = 0;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->bound_ns = STOP_BOUND_NS;
	p->partial = true;
	block_signals(p);
	p->realtime = realtime(true);
	sweep_leftovers();
	/* On its way to an earlier stop: late again, as in seize_listed().
	 * Else seized if it is still a thread of pid (its number may be
	 * another's by now), and waited for. */
	if (!(p->nlate = is_leftover(tid))) {
		r = syscall(SYS_tgkill, pid, tid, 0) && errno == ESRCH ? 1 : seize_first(p, tid);
		ALLOC_GROW(p->threads, 1, cap);
		p->threads[p->n++] = (struct paused_thread){ .tid = r ? 0 : tid };
		wait_stops(p, 0);
		count_late(p);
	}
	/* Gone, maybe on the way to its stop (collect_stops() zeroed it). */
	if (r || (p->n && !p->threads[0].tid)) {
		pause_release(p);
		return r < 0 ? r : -ESRCH;
	}
	return 0;
}

/* A seized thread can only be detached from a stop.  One that has not
 * reached its stop yet will (the interrupt is pending): it is looked at
 * once more, and if it is still on its way it becomes a leftover, detached
 * when its stop comes.  Waiting for it here would hold every other thread
 * stopped for as long as it takes. */
static void last_look(struct paused_thread *t)
{
	int status = 0;
	pid_t r = waitpid(t->tid, &status, WNOHANG | __WALL);

	if (r == 0)
		return;
	if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
		if (r > 0)
			note_exit(r, status);
		t->tid = 0;
		return;
	}
	t->stopped = true;
	t->signal = signal_of_stop(status);
}

void pause_release(struct pause *p)
{
	/* Dropped for a big process's reading: see REALTIME_READ_THREADS. */
	if (p->realtime && p->n > REALTIME_READ_THREADS)
		realtime(true);
	for (int i = 0; i < p->n; i++) {
		struct paused_thread *t = &p->threads[i];

		if (t->tid && !t->stopped)
			last_look(t);
		if (t->tid == 0)
			continue;
		if (!t->stopped) {
			add_leftover(t->tid);
			continue;
		}
		ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->signal);
	}
	sweep_leftovers();
	/* Before the policy drops back: from then on pystrobe may wait for a
	 * CPU behind the target's own threads, which run already. */
	p->released_ns = mono_ns();
	if (p->realtime)
		schedprio_restore();
	if (p->hint)
		note_late(p, p->hint);
	p->hint = NULL;
	free(p->threads);
	p->threads = NULL;
	p->n = 0;
	if (p->pid) {
		holding = false;
		tell_watchdog();
		sigprocmask(SIG_SETMASK, &p->saved_mask, NULL);
		/* A Ctrl-Z that came while the threads were held. */
		selfstop_poll();
	}
	p->pid = 0;
}
