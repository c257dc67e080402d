#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "suite.h"

/* Set in the parent before the run; Check forks each test, so the
 * children see it. */
static int have_ninterps;

START_TEST(test_have_interps)
{
	ck_assert_msg(have_ninterps > 0, "MISSING: no Python interpreter found to test on");
}
END_TEST

void add_have_interps(TCase *tc, int ninterps)
{
	have_ninterps = ninterps;
	tcase_add_test(tc, test_have_interps);
}

/* Both on stderr, unbuffered: Check forks each test, and a child's
 * buffered stdout could be lost when it fails. */
void test_skip(const char *fmt, ...)
{
	va_list ap;

	fputs("SKIP: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void test_used(const char *tool)
{
	fprintf(stderr, "USED: %s\n", tool);
}

int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	/* pystrobe --native fetches missing debug files from the servers
	 * this names: no test waits on the developer's (Debian sets it for
	 * login shells); check_debuginfod sets its own. */
	unsetenv("DEBUGINFOD_URLS");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int run_groups(const char *name, const struct test_group *groups, size_t n, int lo, int hi)
{
	Suite *s = suite_create(name);

	for (size_t g = 0; g < n; g++) {
		const struct test_group *gr = &groups[g];
		TCase *tc = tcase_create(gr->name);
		int glo = gr->lo == gr->hi ? lo : gr->lo;
		int ghi = gr->lo == gr->hi ? hi : gr->hi;

		if (gr->timeout)
			tcase_set_timeout(tc, gr->timeout);
		for (size_t i = 0; i < TEST_GROUP_MAX && gr->tests[i]; i++)
			tcase_add_loop_test(tc, gr->tests[i], glo, ghi);
		suite_add_tcase(s, tc);
	}
	return run_suite(s);
}

void fail_if_any(char *msg, const char *what)
{
	/* Whole in the log: Check drops a message past its own bound (a few
	 * screens of tmux), failure and all. */
	if (msg)
		fprintf(stderr, "%s:\n%s\n", what, msg);
	ck_assert_msg(!msg, "%s:\n%.3000s", what, msg ? msg : "");
}
