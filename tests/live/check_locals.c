/* `pystrobe dump --locals` shows each value as the target's own repr().
 *
 * tests/targets/locals_corpus.py parks in a frame whose locals are a
 * corpus (every byte, every BMP code point and a sample of the others,
 * each escape class of repr, NaN and signed zero, ints at and past the
 * bound, long values cut) and writes what pystrobe must show for each;
 * tests/compare_locals.py holds `dump --locals --json` and the text dump
 * against it, on every interpreter.  `dump --locals=deep` is held the same
 * way against the target's repr() of each container within deep's bounds
 * (and the bounds' rule, computed by the target, for the ones past them).
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

/* dump --pid PID LOCALS [--json] into DIR/file; NULL or why not. */
static char *dump_to(struct target *t, const char *pid, const char *locals, const char *json,
		     const char *file)
{
	char path[PATH_MAX + 64], how[96];
	struct run r;
	char *why = NULL;

	if (run_pystrobe(&r, "dump", locals, "--pid", pid, json, NULL) < 0)
		return strdup("cannot run pystrobe");
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (run_exit(&r) != 0)
		msg_add(&why, "dump %s %s: %s: %.1000s", locals, json ? json : "",
			run_describe(&r, how, sizeof(how)), r.err);
	else if (write_file(path, r.out, r.out_len) < 0)
		msg_add(&why, "cannot write %s", path);
	run_free(&r);
	return why;
}

/* Dump with `locals` (--locals or --locals=deep) as JSON and text, and
 * hold both against the truth with compare_locals.py [--deep]. */
static void compare(struct target *t, const struct test_interp *ti, const char *pid,
		    bool deep, char **failures)
{
	const char *locals = deep ? "--locals=deep" : "--locals";
	char json[PATH_MAX + 16], text[PATH_MAX + 16], script[PATH_MAX];
	char *argv[7], **a = argv, *why;
	struct run r;

	why = dump_to(t, pid, locals, "--json", deep ? "deep.json" : "dump.json");
	if (!why)
		why = dump_to(t, pid, locals, NULL, deep ? "deep.txt" : "dump.txt");
	if (why) {
		msg_add(failures, "%s", why);
		free(why);
		return;
	}
	snprintf(script, sizeof(script), "%s/tests/compare_locals.py", test_srcdir());
	snprintf(json, sizeof(json), "%s/%s", t->dir, deep ? "deep.json" : "dump.json");
	snprintf(text, sizeof(text), "%s/%s", t->dir, deep ? "deep.txt" : "dump.txt");
	*a++ = (char *)test_python3();
	*a++ = script;
	if (deep)
		*a++ = "--deep";
	*a++ = t->truth;
	*a++ = json;
	*a++ = text;
	*a = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run compare_locals.py");
		return;
	}
	printf("locals: %s: %s", ti->label, r.out);
	if (run_exit(&r) != 0)
		msg_add(failures, "%s%s", r.out, r.err);
	run_free(&r);
}

START_TEST(test_locals)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], pid[16];
	char *failures = NULL;
	struct target t;

	if (target_start_script(&t, ti, "tests/targets/locals_corpus.py", why, sizeof(why)) < 0)
		ck_abort_msg("%s: locals_corpus.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	compare(&t, ti, pid, false, &failures);
	compare(&t, ti, pid, true, &failures);
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
