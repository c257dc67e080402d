/* Tests for pystrobe's own scheduling priority (src/process/schedprio.c):
 * the sampling loop's level and the guards that keep it from starving the
 * job, read back from the kernel (sched_getscheduler, getpriority), not
 * from the module.  Real time needs root or CAP_SYS_NICE: without, the
 * cases that need it are a SKIP, and the fallback is checked instead. */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process/schedprio.h"
#include "suite.h"

static bool may_realtime(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	pid_t p = fork();
	int status = 0;

	if (p == 0)
		_exit(sched_setscheduler(0, SCHED_FIFO, &sp) ? 1 : 0);
	return p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) &&
	       !WEXITSTATUS(status);
}

static int policy(void)
{
	return sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
}

/* The policy a child forked now starts with. */
static int child_policy(void)
{
	pid_t p = fork();
	int status = 0;

	if (p == 0)
		_exit(policy());
	ck_assert_int_eq(waitpid(p, &status, 0), p);
	return WEXITSTATUS(status);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_raise_and_lower)
{
	if (getpriority(PRIO_PROCESS, 0) > 0 || policy() != SCHED_OTHER) {
		test_skip("schedprio: the tests run niced or at another policy: kept as given");
		return;
	}
	if (!may_realtime()) {
		/* The fallback: nice -10 where RLIMIT_NICE allows, else none. */
		enum schedprio got = schedprio_raise();

		ck_assert_int_eq(policy(), SCHED_OTHER);
		if (got == SCHEDPRIO_NICE) {
			ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), SCHEDPRIO_NICE_VALUE);
			/* top's drawing, watch's judging: at the nice started with. */
			schedprio_aside();
			ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), 0);
			schedprio_restore();
			ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), SCHEDPRIO_NICE_VALUE);
		}
		ck_assert_ptr_nonnull(schedprio_why());
		test_skip("schedprio: real time is not permitted here (root or CAP_SYS_NICE)");
		return;
	}
	ck_assert_int_eq(schedprio_raise(), SCHEDPRIO_REALTIME);
	ck_assert_int_eq(policy(), SCHED_FIFO);
	ck_assert(sched_getscheduler(0) & SCHED_RESET_ON_FORK);
	/* Nothing started from the loop inherits it. */
	ck_assert_int_eq(child_policy(), SCHED_OTHER);
	/* A pause's long read at the normal policy, then back to the loop's. */
	ck_assert(!schedprio_set(false));
	ck_assert_int_eq(policy(), SCHED_OTHER);
	schedprio_restore();
	ck_assert_int_eq(policy(), SCHED_FIFO);
	/* Work between rounds that is not sampling (top, watch): the same. */
	schedprio_aside();
	ck_assert_int_eq(policy(), SCHED_OTHER);
	ck_assert_int_eq(child_policy(), SCHED_OTHER);
	schedprio_restore();
	ck_assert_int_eq(policy(), SCHED_FIFO);
	schedprio_lower("given up for the test");
	ck_assert_int_eq(policy(), SCHED_OTHER);
	ck_assert_int_eq(schedprio_level(), SCHEDPRIO_NORMAL);
	ck_assert_int_eq(schedprio_reached(), SCHEDPRIO_REALTIME);
	ck_assert_str_eq(schedprio_why(), "given up for the test");
	/* A pause after the loop has given it up ends at the normal policy. */
	ck_assert(schedprio_set(true));
	schedprio_restore();
	ck_assert_int_eq(policy(), SCHED_OTHER);
}
END_TEST

/* --no-priority: neither the loop nor a pause raises it. */
START_TEST(test_forbidden)
{
	int nice0 = getpriority(PRIO_PROCESS, 0);

	schedprio_forbid();
	ck_assert_int_eq(schedprio_raise(), SCHEDPRIO_NORMAL);
	ck_assert(!schedprio_set(true));
	ck_assert_int_eq(policy(), SCHED_OTHER);
	ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), nice0);
	ck_assert_ptr_null(schedprio_why());
}
END_TEST

/* Started niced (nice 5), pystrobe keeps the priority it was given. */
START_TEST(test_started_niced)
{
	ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 5), 0);
	ck_assert_int_eq(schedprio_raise(), SCHEDPRIO_NORMAL);
	ck_assert(!schedprio_set(true));
	ck_assert_int_eq(policy(), SCHED_OTHER);
	ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), 5);
}
END_TEST

/* A round that runs away at real-time priority (it never sleeps): the
 * kernel's SIGXCPU after RLIMIT_RTTIME puts it back at the normal policy,
 * and it stays there. */
START_TEST(test_runaway_demoted)
{
	double t0, limit = SCHEDPRIO_RTTIME_US / 1e6;
	struct rlimit rl;

	if (!may_realtime() || getpriority(PRIO_PROCESS, 0) > 0) {
		test_skip("schedprio: real time is not permitted here (root or CAP_SYS_NICE)");
		return;
	}
	ck_assert_int_eq(schedprio_raise(), SCHEDPRIO_REALTIME);
	ck_assert_int_eq(getrlimit(RLIMIT_RTTIME, &rl), 0);
	ck_assert_uint_le(rl.rlim_cur, SCHEDPRIO_RTTIME_US);
	t0 = now_s();
	while (policy() == SCHED_FIFO && now_s() - t0 < 5 * limit)
		;
	ck_assert_msg(policy() == SCHED_OTHER, "still SCHED_FIFO after %.1f s of spinning",
		      now_s() - t0);
	ck_assert_msg(now_s() - t0 >= limit * 0.9, "demoted after %.3f s", now_s() - t0);
	ck_assert_int_eq(schedprio_level(), SCHEDPRIO_NORMAL);
	ck_assert_ptr_nonnull(strstr(schedprio_why(), "without sleeping"));
	ck_assert(!schedprio_set(true));
	ck_assert_int_eq(policy(), SCHED_OTHER);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("schedprio");
	TCase *tc = tcase_create("schedprio");

	tcase_add_test(tc, test_raise_and_lower);
	tcase_add_test(tc, test_forbidden);
	tcase_add_test(tc, test_started_niced);
	tcase_add_test(tc, test_runaway_demoted);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
