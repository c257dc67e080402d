/* pystrobe dump and record under valgrind (memcheck): no invalid read or
 * write, no use of uninitialised memory, no definite leak.
 *
 *   valgrind -q --error-exitcode=99 --leak-check=full
 *            --errors-for-leak-kinds=definite pystrobe ...
 *
 * against a target with a spinning and a sleeping thread, on three
 * interpreters (the oldest, Debian's static 3.11 when there is one, the
 * newest): dump, dump --json --locals, dump --native, record by --pid
 * (flame graph), record --blocking (pprof) and record of a launched command
 * (collapsed).  No suppressions are used: libdw and libunwind have needed
 * none so far.
 *
 * Without valgrind the check says so loudly and does not run; on a
 * sanitizer build (which valgrind cannot run) likewise: the plain build
 * runs it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "suite.h"
#include "target.h"

#define VALGRIND_TIMEOUT_MS 180000

static const struct test_interp *interps;
static int ninterps;
static const char *why_not;	/* why valgrind cannot run here, or NULL */

static const char spin_code[] =
	"import os, sys, threading, time\n"
	"def spin():\n"
	"    x = 0\n"
	"    while True:\n"
	"        x += 1\n"
	"threading.Thread(target=spin, daemon=True).start()\n"
	"open(os.path.join(sys.argv[-1], 'ready'), 'w').close()\n"
	"time.sleep(3600)\n";

/* Long enough for pystrobe, slowed down by valgrind on a loaded machine,
 * to find the Python that env runs (0.5 s was not). */
static const char short_code[] =
	"import time\n"
	"end = time.time() + 3\n"
	"while time.time() < end:\n"
	"    pass\n";

/* The interpreters to run on: the oldest, Debian's static one, the newest. */
static int pick(int which)
{
	int lo = 0, hi = 0, stat = -1;

	for (int k = 0; k < ninterps; k++) {
		if (interps[k].minor < interps[lo].minor)
			lo = k;
		if (interps[k].minor > interps[hi].minor)
			hi = k;
		if (stat < 0 && strstr(interps[k].label, "static"))
			stat = k;
	}
	return which == 0 ? lo : which == 1 ? (stat >= 0 ? stat : -1) : hi;
}

static void grind(const char *label, const char *what, char *const args[], char **failures)
{
	char *argv[64] = { "valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
			   "--errors-for-leak-kinds=definite", (char *)pystrobe_path() };
	int n = 6;
	char how[96];
	struct run r;

	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (run_cmd(&r, VALGRIND_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "%s: %s: cannot run valgrind", label, what);
		return;
	}
	/* -q: valgrind itself says something only about an error. */
	if (run_exit(&r) != 0 || strstr(r.err, "=="))
		msg_add(failures, "%s: %s under valgrind: %s; stderr: %.3000s", label, what,
			run_describe(&r, how, sizeof(how)), r.err);
	else
		printf("valgrind: %s: %s: clean\n", label, what);
	run_free(&r);
}

START_TEST(test_valgrind)
{
	int k = pick(_i);
	const struct test_interp *ti;
	char pid[16], why[512], out[64];
	char *failures = NULL;
	struct target t;

	if (why_not) {
		test_skip("valgrind: %s", why_not);
		return;
	}
	if (k < 0) {
		test_skip("valgrind: no Debian static /usr/bin/python3.11 (apt-get install python3): "
			  "its run did not happen");
		return;
	}
	ti = &interps[k];
	test_used("valgrind");
	if (target_start(&t, ti, why, sizeof(why), "-c", spin_code, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: %s", ti->label, why);
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	snprintf(out, sizeof(out), "/tmp/pystrobe-valgrind-%d", getpid());
	{
		char *dump[] = { "dump", "--pid", pid, NULL };
		char *dump_locals[] = { "dump", "--json", "--locals", "--pid", pid, NULL };
		char *dump_native[] = { "dump", "--native", "--pid", pid, NULL };
		char *rec[] = { "record", "-q", "-d", "1", "-o", out, "--pid", pid, NULL };
		char *rec_b[] = { "record", "-q", "--blocking", "-d", "1", "-f", "pprof", "-o", out,
				  "--pid", pid, NULL };

		grind(ti->label, "dump", dump, &failures);
		grind(ti->label, "dump --json --locals", dump_locals, &failures);
		grind(ti->label, "dump --native", dump_native, &failures);
		grind(ti->label, "record (flamegraph)", rec, &failures);
		grind(ti->label, "record --blocking (pprof)", rec_b, &failures);
	}
	target_stop(&t);
	{
		char *launch[64] = { "record", "-q", "-f", "collapsed", "-o", out, "--" };
		int n = 7;

		n += python_argv(ti, launch + n, 60 - n);
		launch[n++] = "-c";
		launch[n++] = (char *)short_code;
		launch[n] = NULL;
		grind(ti->label, "record -- python", launch, &failures);
	}
	unlink(out);
	if (failures)
		printf("valgrind: %s FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%.3000s", failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	if (system("valgrind --version >/dev/null 2>&1") != 0)
		why_not = "valgrind is not installed (sh tests/install-deps.sh installs it)";
	else if (pystrobe_sanitized())
		why_not = "this is a sanitizer build, which valgrind cannot run; the plain build runs it";
	tc = tcase_create("valgrind");
	tcase_set_timeout(tc, 600);
	add_have_interps(tc, ninterps);
	if (ninterps > 0)
		tcase_add_loop_test(tc, test_valgrind, 0, 3);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
