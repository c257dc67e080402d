/* pystrobe's own scheduling priority; see schedprio.h for why.
 *
 * One thread calls these: the one that samples (main).  The state below
 * is that thread's; the SIGXCPU handler, on whichever thread the kernel
 * picks, names it by its tid. */
#include "process/schedprio.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct {
	bool looked;		/* the policy pystrobe was started with, seen */
	bool keep;		/* never change it: forbidden, or chosen by the user */
	bool rt;		/* the thread is at SCHED_FIFO now */
	bool guarded;		/* RLIMIT_RTTIME and the SIGXCPU handler in place */
	bool aside;		/* schedprio_aside(): at nice0 until restored */
	int nice0;		/* the nice pystrobe was started with */
	enum schedprio loop, reached;
	char why[160];
} s;

/* The tid to put back at the normal policy, and whether that was done:
 * written before the thread goes real-time, read by the handler. */
static volatile pid_t rt_tid;
static volatile sig_atomic_t tripped;

static void set_why(const char *why)
{
	if (why && !s.why[0])
		snprintf(s.why, sizeof(s.why), "%s", why);
}

/* Started at a real-time policy, SCHED_BATCH or SCHED_IDLE, or niced:
 * whoever started pystrobe chose its priority, and it is kept. */
static void look(void)
{
	int policy;

	if (s.looked)
		return;
	s.looked = true;
	policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
	errno = 0;
	s.nice0 = getpriority(PRIO_PROCESS, 0);
	if (policy != SCHED_OTHER || s.nice0 > 0)
		s.keep = true;
}

/* The kernel's SIGXCPU: this thread ran SCHEDPRIO_RTTIME_US at real-time
 * priority without sleeping.  Back to the normal policy, from any thread
 * (sched_setscheduler is one system call). */
static void on_xcpu(int sig)
{
	struct sched_param sp = { .sched_priority = 0 };
	int saved = errno;

	(void)sig;
	tripped = 1;
	if (rt_tid)
		sched_setscheduler(rt_tid, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp);
	errno = saved;
}

/* RLIMIT_RTTIME at SCHEDPRIO_RTTIME_US, or lower where the hard limit is:
 * the soft limit at most half the hard one, whose SIGKILL must never come
 * before the SIGXCPU that demotes.  Without the guard, no real time. */
static bool guard(void)
{
	struct sigaction sa;
	struct rlimit rl;
	rlim_t want = SCHEDPRIO_RTTIME_US;

	if (s.guarded)
		return true;
	if (getrlimit(RLIMIT_RTTIME, &rl))
		return false;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max / 2)
		want = rl.rlim_max / 2;
	if (rl.rlim_cur != RLIM_INFINITY && want > rl.rlim_cur)
		want = rl.rlim_cur;
	if (!want)
		return false;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_xcpu;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL))
		return false;
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_RTTIME, &rl))
		return false;
	s.guarded = true;
	return true;
}

/* After the handler ran: the thread is at the normal policy already. */
static void notice_trip(void)
{
	if (!tripped || !s.rt)
		return;
	s.rt = false;
	if (s.loop == SCHEDPRIO_REALTIME)
		s.loop = SCHEDPRIO_NORMAL;
	set_why("real-time priority given up: a round ran 0.2 s without sleeping");
}

/* SCHED_FIFO at priority 1 (on), or back to SCHED_OTHER; with
 * SCHED_RESET_ON_FORK either way, so that nothing started from this
 * thread inherits a raised priority. */
static bool policy(bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	notice_trip();
	if (on == s.rt)
		return true;
	if (on && (s.keep || tripped || !guard()))
		return false;
	if (on)
		rt_tid = (pid_t)syscall(SYS_gettid);
	if (sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK, &sp))
		return false;
	s.rt = on;
	return true;
}

void schedprio_forbid(void)
{
	look();
	s.keep = true;
}

enum schedprio schedprio_raise(void)
{
	look();
	if (s.keep || s.loop != SCHEDPRIO_NORMAL)
		return s.loop;
	if (policy(true))
		s.loop = SCHEDPRIO_REALTIME;
	else if (!tripped && setpriority(PRIO_PROCESS, 0, SCHEDPRIO_NICE_VALUE) == 0)
		s.loop = SCHEDPRIO_NICE;
	if (s.loop > s.reached)
		s.reached = s.loop;
	if (s.loop == SCHEDPRIO_NICE)
		set_why("sampled at nice -10: real-time priority needs root, CAP_SYS_NICE "
			"or an RLIMIT_RTPRIO");
	else if (s.loop == SCHEDPRIO_NORMAL)
		set_why("sampled at normal priority: root or CAP_SYS_NICE would raise it");
	return s.loop;
}

void schedprio_lower(const char *why)
{
	look();
	notice_trip();
	if (s.keep)
		return;
	policy(false);
	if (s.loop == SCHEDPRIO_NICE && !s.aside)
		setpriority(PRIO_PROCESS, 0, s.nice0);
	s.aside = false;
	if (s.loop == SCHEDPRIO_REALTIME)
		set_why(why);
	s.loop = SCHEDPRIO_NORMAL;
}

enum schedprio schedprio_level(void)
{
	notice_trip();
	return s.loop;
}

enum schedprio schedprio_reached(void)
{
	return s.reached;
}

const char *schedprio_why(void)
{
	notice_trip();
	return s.why[0] ? s.why : NULL;
}

bool schedprio_set(bool on)
{
	look();
	policy(on);
	return s.rt;
}

void schedprio_aside(void)
{
	look();
	policy(false);
	if (s.loop == SCHEDPRIO_NICE && !s.aside && !setpriority(PRIO_PROCESS, 0, s.nice0))
		s.aside = true;
}

void schedprio_restore(void)
{
	policy(s.loop == SCHEDPRIO_REALTIME);
	if (!s.aside)
		return;
	s.aside = false;
	if (s.loop == SCHEDPRIO_NICE)
		setpriority(PRIO_PROCESS, 0, SCHEDPRIO_NICE_VALUE);
}
