/* Never a stale stack at a high rate: tests/targets/shifting.py changes
 * its stack on every sample (random depth, functions and generators drawn
 * afresh for every descent, threads starting and ending all the time) and
 * notes every pattern it descends.  `record --idle -r 20000` of it must
 * show, below worker(), only stacks that really occurred: levels that are a
 * prefix of a noted pattern, leaf() only at a pattern's full length
 * (tests/check_shifting.py checks).  A stack put together from two walks,
 * or one reused after it changed, fails that.
 *
 * Runs on 3.12 (pyenv) and 3.14 (the sid root), the first found of each;
 * one that is missing is said so and fails the test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define TARGET_SECONDS	"6"	/* the target's life after it is ready */
#define RECORD_SECONDS	"3"
#define RATE		"20000"

static const struct test_interp *interps;
static int ninterps;
static const int minors[] = { 12, 14 };

static const struct test_interp *find_minor(int minor)
{
	for (int i = 0; i < ninterps; i++)
		if (interps[i].minor == minor)
			return &interps[i];
	return NULL;
}

START_TEST(test_shifting)
{
	const struct test_interp *ti = find_minor(minors[_i]);
	char why[512], script[PATH_MAX], pid[16], out[64], pats[PATH_MAX + 32];
	char checker[PATH_MAX + 32];
	struct target t;
	struct run r, chk;
	int rc;

	if (!ti) {
		test_skip("shifting: no Python 3.%d here (the other version still runs)", minors[_i]);
		return;
	}
	test_interp_script(ti, "tests/targets/shifting.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, TARGET_SECONDS, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: target: %s", ti->label, why);
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	snprintf(out, sizeof(out), "/tmp/pystrobe-shifting-%d.txt", getpid());
	rc = run_pystrobe(&r, "record", "--idle", "-r", RATE, "-d", RECORD_SECONDS, "-f",
			  "collapsed", "-o", out, "--pid", pid, NULL);
	if (rc < 0 || target_wait_file(&t, "done", 60000, why, sizeof(why)) < 0) {
		target_stop(&t);
		unlink(out);
		ck_abort_msg("%s: %s", ti->label, rc < 0 ? "cannot run pystrobe" : why);
	}
	snprintf(pats, sizeof(pats), "%s/patterns.txt", t.dir);
	snprintf(checker, sizeof(checker), "%s/tests/check_shifting.py", test_srcdir());
	rc = run_cmd(&chk, RUN_TIMEOUT_MS,
		     (char *[]){ (char *)test_python3(), checker, out, pats, NULL });
	printf("shifting: %s: record -r %s: %s         %s", ti->label, RATE,
	       r.err ? r.err : "(nothing)\n", chk.out ? chk.out : "(no output)\n");
	target_stop(&t);
	unlink(out);
	ck_assert_msg(run_exit(&r) == 0, "%s: record: %s", ti->label, r.err);
	ck_assert_msg(rc == 0 && run_exit(&chk) != 2, "%s: nothing to check: %s%s", ti->label,
		      chk.out, chk.err);
	ck_assert_msg(run_exit(&chk) == 0, "%s: a stack that never occurred: %s%s", ti->label,
		      chk.out, chk.err);
	run_free(&chk);
	run_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shifting");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("shifting");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_shifting, 0, sizeof(minors) / sizeof(minors[0]));
	suite_add_tcase(s, tc);
	return run_suite(s);
}
