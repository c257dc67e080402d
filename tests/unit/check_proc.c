/* Tests for what pystrobe reads of a thread without stopping it
 * (src/process/proc.c): the lines of /proc/PID/task/TID/syscall, made by
 * hand as the kernel writes them and read from this very process, and the
 * run counts of its schedstat.
 */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "process/proc.h"
#include "suite.h"

START_TEST(test_syscall_in_call)
{
	struct task_entry e;

	ck_assert_int_eq(proc_syscall_parse("202 0x7f0012345678 0x80 0x0 0x0 0x0 0x0 "
					    "0x7ffd1000 0x7f00aabbccdd\n", &e), 0);
	ck_assert_int_eq(e.nr, 202);
	ck_assert_uint_eq(e.args[0], 0x7f0012345678ull);
	ck_assert_uint_eq(e.args[1], 0x80);
	ck_assert_uint_eq(e.sp, 0x7ffd1000);
	ck_assert_uint_eq(e.pc, 0x7f00aabbccddull);
}
END_TEST

/* In the kernel outside a call (a page fault): "-1 SP PC". */
START_TEST(test_syscall_outside_call)
{
	struct task_entry e;

	ck_assert_int_eq(proc_syscall_parse("-1 0x7ffd2000 0x401000\n", &e), 0);
	ck_assert_int_eq(e.nr, -1);
	ck_assert_uint_eq(e.sp, 0x7ffd2000);
	ck_assert_uint_eq(e.pc, 0x401000);
}
END_TEST

START_TEST(test_syscall_refused)
{
	static const char *const bad[] = {
		"running\n", "", "202 0x1 0x2", "-1 0x7ffd2000", "-2 0x1 0x2\n", "x 0x1 0x2\n",
		"202 0x1 0x2 0x3 0x4 0x5 0x6 0x7\n",
	};
	struct task_entry e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(proc_syscall_parse(bad[i], &e) < 0, "accepted \"%s\"", bad[i]);
}
END_TEST

/* A thread of this process: a sleep adds to its run count (it is given a
 * CPU again to wake) and the counts never go back. */
START_TEST(test_schedstat_counts_runs)
{
	char path[96];
	uint64_t ns0, runs0, ns1, runs1;
	struct timespec ts = { 0, 2000000 };
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
	fd = proc_task_open(getpid(), (pid_t)syscall(SYS_gettid), "schedstat");
	if (fd < 0) {
		printf("proc: SKIP schedstat: %s cannot be opened (a kernel without "
		       "CONFIG_SCHED_INFO)\n", path);
		return;
	}
	ck_assert_int_eq(proc_schedstat_read(fd, &ns0, &runs0), 0);
	nanosleep(&ts, NULL);
	ck_assert_int_eq(proc_schedstat_read(fd, &ns1, &runs1), 0);
	ck_assert_uint_gt(runs1, runs0);
	ck_assert_uint_ge(ns1, ns0);
	close(fd);
	ck_assert_int_lt(proc_schedstat_read(-1, &ns1, &runs1), 0);
}
END_TEST

/* A thread's /proc file opened by name; a thread that is not there has
 * none. */
START_TEST(test_task_open)
{
	char buf[64];
	int fd = proc_task_open(getpid(), (pid_t)syscall(SYS_gettid), "stat");

	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	ck_assert_int_lt(proc_task_open(getpid(), 0x7ffffff0, "stat"), 0);
	ck_assert_int_lt(proc_task_open(getpid(), (pid_t)syscall(SYS_gettid), "no-such"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proc");
	TCase *tc = tcase_create("proc");

	tcase_add_test(tc, test_syscall_in_call);
	tcase_add_test(tc, test_syscall_outside_call);
	tcase_add_test(tc, test_syscall_refused);
	tcase_add_test(tc, test_schedstat_counts_runs);
	tcase_add_test(tc, test_task_open);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
