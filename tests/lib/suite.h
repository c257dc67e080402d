/* What every test program's main() does with its Check suite. */
#ifndef PYSTROBE_TEST_SUITE_H
#define PYSTROBE_TEST_SUITE_H

#include <check.h>
#include <stddef.h>

/* Add to tc a test that fails when ninterps is 0: a machine with no
 * interpreter must fail the suite, not pass it with nothing run. */
void add_have_interps(TCase *tc, int ninterps);

/* The one rule for a check this machine cannot run (its interpreter or
 * tool is missing): the test calls test_skip() with the reason, which
 * writes "SKIP: <reason>" into the program's log, and returns.  Check has
 * no skipped status of its own, so the line is the record: the summary at
 * the end of `make check` (tests/summary.sh) counts and lists them, and
 * fails the run when the required minimum itself is missing. */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A tool a test has just run for real (node, chromium, tmux, valgrind,
 * sudo, g++, xmllint): "USED: <tool>" in the log, for the summary's list
 * of what the suite covered. */
void test_used(const char *tool);

/* Fail the test with everything msg_add() collected in msg, under the
 * heading what, if anything was: a test that checks many things reports
 * them all at once rather than the first. */
void fail_if_any(char *msg, const char *what);

/* Run every test of s (and free it); the exit status for the test
 * driver. */
int run_suite(Suite *s);

/* One Check test case as data, so that a main() is a table of what it
 * runs: its name, a timeout in seconds (0: Check's default), the loop
 * range each test runs over (lo == hi: the suite's range) and its tests,
 * up to the first NULL. */
#define TEST_GROUP_MAX 32
struct test_group {
	const char *name;
	int timeout;
	int lo, hi;
	const TTest *tests[TEST_GROUP_MAX];
};

/* A suite named name of the n groups, each test run for _i in [lo, hi)
 * unless its group says otherwise (lo 0, hi 1: once); run_suite()'s
 * status. */
int run_groups(const char *name, const struct test_group *groups, size_t n, int lo, int hi);

#endif
