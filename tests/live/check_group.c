/* `pystrobe dump --group` against the target's own grouping.
 *
 * tests/targets/pool.py parks 16 identical workers, 3 threads in one
 * other place, 2 in a third and MainThread, and groups its threads by
 * the stacks sys._current_frames() shows; tests/compare_groups.py holds
 * `dump --group --json` (the groups as sets of threads) and the text
 * (the group sizes, in order) against that.  On every interpreter one
 * process; on the oldest and the newest also a forked pair with -s, each
 * group then in two processes.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* dump --group PID [-s] [--json] into DIR/file. */
static void dump_to(struct target *t, const char *pid, bool tree, bool json, const char *file,
		    char **failures)
{
	/* The list ends at the first NULL: the options that are there first. */
	const char *opt1 = tree ? "-s" : json ? "--json" : NULL;
	const char *opt2 = tree && json ? "--json" : NULL;
	char path[PATH_MAX + 64], how[96];
	struct run r;

	if (run_pystrobe(&r, "dump", "--group", "--pid", pid, opt1, opt2, NULL) < 0) {
		msg_add(failures, "cannot run pystrobe");
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (run_exit(&r) != 0)
		msg_add(failures, "dump --group%s%s: %s: %.1000s", tree ? " -s" : "",
			json ? " --json" : "", run_describe(&r, how, sizeof(how)), r.err);
	else if (write_file(path, r.out, r.out_len) < 0)
		msg_add(failures, "cannot write %s", path);
	run_free(&r);
}

static void compare(struct target *t, const char *label, char **failures)
{
	char script[PATH_MAX], json[PATH_MAX + 16], text[PATH_MAX + 16];
	char *argv[] = { (char *)test_python3(), script, t->truth, json, text, NULL };
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/compare_groups.py", test_srcdir());
	snprintf(json, sizeof(json), "%s/dump.json", t->dir);
	snprintf(text, sizeof(text), "%s/dump.txt", t->dir);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run compare_groups.py");
		return;
	}
	printf("group: %s: %s", label, r.out);
	if (run_exit(&r) != 0)
		msg_add(failures, "%s: %s%s", label, r.out, r.err);
	run_free(&r);
}

static void run_one(const struct test_interp *ti, bool fork, char **failures)
{
	char why[512], pid[16], label[160];
	struct target t;

	snprintf(label, sizeof(label), "%s%s", ti->label, fork ? " (2 processes, -s)" : "");
	if (target_start_script_arg(&t, ti, "tests/targets/pool.py", fork ? "--fork" : NULL, why,
				    sizeof(why)) < 0) {
		msg_add(failures, "%s: pool.py: %s", label, why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	dump_to(&t, pid, fork, true, "dump.json", failures);
	dump_to(&t, pid, fork, false, "dump.txt", failures);
	if (!*failures)
		compare(&t, label, failures);
	kill_descendants(t.py_pid);
	target_stop(&t);
}

START_TEST(test_group)
{
	const struct test_interp *ti = &interps[_i];
	char *failures = NULL;
	int oldest, newest;

	test_interp_span(interps, ninterps, &oldest, &newest);
	run_one(ti, false, &failures);
	if (!failures && (_i == oldest || _i == newest))
		run_one(ti, true, &failures);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("group");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_group, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
