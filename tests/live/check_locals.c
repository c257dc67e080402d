/* `pystrobe dump --locals` shows each value as the target's own repr().
 *
 * tests/targets/locals_corpus.py parks in a frame whose locals are a
 * corpus (every byte, every BMP code point and a sample of the others,
 * each escape class of repr, NaN and signed zero, ints at and past the
 * bound, long values cut) and writes what pystrobe must show for each;
 * tests/compare_locals.py holds `dump --locals --json` and the text dump
 * against it, on every interpreter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* dump --pid PID --locals [--json] into DIR/file; NULL or why not. */
static char *dump_to(struct target *t, const char *pid, const char *json, const char *file)
{
	char path[PATH_MAX + 64], how[96];
	struct run r;
	char *why = NULL;

	if (run_pystrobe(&r, "dump", "--locals", "--pid", pid, json, NULL) < 0)
		return strdup("cannot run pystrobe");
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (run_exit(&r) != 0)
		msg_add(&why, "dump --locals %s: %s: %.1000s", json ? json : "",
			run_describe(&r, how, sizeof(how)), r.err);
	else if (write_file(path, r.out, r.out_len) < 0)
		msg_add(&why, "cannot write %s", path);
	run_free(&r);
	return why;
}

START_TEST(test_locals)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], pid[16], json[PATH_MAX + 16], text[PATH_MAX + 16], script[PATH_MAX];
	char *failures = NULL, *argv[6];
	struct target t;
	struct run r;

	if (target_start_script(&t, ti, "tests/targets/locals_corpus.py", why, sizeof(why)) < 0)
		ck_abort_msg("%s: locals_corpus.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	failures = dump_to(&t, pid, "--json", "dump.json");
	if (!failures)
		failures = dump_to(&t, pid, NULL, "dump.txt");
	if (!failures) {
		snprintf(script, sizeof(script), "%s/tests/compare_locals.py", test_srcdir());
		snprintf(json, sizeof(json), "%s/dump.json", t.dir);
		snprintf(text, sizeof(text), "%s/dump.txt", t.dir);
		argv[0] = (char *)test_python3();
		argv[1] = script;
		argv[2] = t.truth;
		argv[3] = json;
		argv[4] = text;
		argv[5] = NULL;
		if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
			msg_add(&failures, "cannot run compare_locals.py");
		} else {
			printf("locals: %s: %s", ti->label, r.out);
			if (run_exit(&r) != 0)
				msg_add(&failures, "%s%s", r.out, r.err);
			run_free(&r);
		}
	}
	target_stop(&t);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("locals");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_locals, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
