/* Hostile names in every output.
 *
 * tests/targets/hostile.py names a function, its file and a thread with
 * markup (< & "), the collapsed separator (;), a newline, terminal escape
 * sequences, bidi overrides and zero-width characters, invalid UTF-8 (a
 * surrogate-escaped file name) and 10 kB, and spins in them with a str
 * local of the same.  pystrobe dump (text and --json, with and without
 * --locals), record in every format (flamegraph, collapsed, speedscope,
 * chrometrace, pprof) and top's plain text mode are run against it, and tests/check_hostile.py checks each
 * output parses as its format and shows the names safely; the SVG also
 * goes through xmllint.  (top on a terminal, in tmux, has its own hostile
 * name in check_top.)
 *
 * dump and collapsed run on every interpreter, the rest on two (the oldest
 * and the newest).  3.7 cannot rename a code object: there only the file
 * and thread names are hostile.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

static const char *const formats[] = { "collapsed", "flamegraph", "speedscope",
				       "chrometrace", "pprof" };

/* The oldest and the newest interpreter do everything. */
static bool full_interp(int i)
{
	int oldest, newest;

	test_interp_span(interps, ninterps, &oldest, &newest);
	return i == oldest || i == newest;
}

/* Run argv, sending it signal sig after signal_ms when sig is not 0; its
 * stdout goes to path (when not NULL).  A clean run exits 0 and says
 * nothing but "pystrobe: " lines. */
static void run_to(const char *what, char *const argv[], int sig, int signal_ms, const char *path,
		   char **failures)
{
	char how[96];
	struct run r;
	int rc = sig ? run_cmd_signal(&r, RUN_TIMEOUT_MS, signal_ms, sig, argv)
		     : run_cmd(&r, RUN_TIMEOUT_MS, argv);

	if (rc < 0) {
		msg_add(failures, "%s: cannot run", what);
		return;
	}
	if (run_exit(&r) != 0 || !all_lines_pystrobe(r.err) || sanitizer_report(r.err))
		msg_add(failures, "%s: %s; stderr: %.500s", what, run_describe(&r, how, sizeof(how)),
			r.err);
	if (path && write_file(path, r.out, r.out_len) < 0)
		msg_add(failures, "%s: cannot write %s", what, path);
	run_free(&r);
}

static void record_format(const char *dir, const char *pid, const char *fmt, char **failures)
{
	char out[PATH_MAX + 32], what[64];
	char *argv[] = { (char *)pystrobe_path(), "record", "-q", "-d", "0.3", "-f", (char *)fmt,
			 "-o", out, "--pid", (char *)pid, NULL };

	snprintf(out, sizeof(out), "%s/out.%s", dir, fmt);
	snprintf(what, sizeof(what), "record -f %s", fmt);
	run_to(what, argv, 0, 0, NULL, failures);
}

/* top with stdout not a terminal prints plain snapshots; SIGINT ends it
 * with 0.  Not through coreutils' timeout: it sends SIGCONT right after
 * the signal, and when that lands while LeakSanitizer is stopping the
 * exiting process with ptrace, it discards LSan's SIGSTOP and the
 * sanitizer build waits forever. */
static void top_plain(const char *dir, const char *pid, char **failures)
{
	char out[PATH_MAX + 32];
	char *argv[] = { (char *)pystrobe_path(), "top", "-d", "0.4", "--pid", (char *)pid, NULL };

	snprintf(out, sizeof(out), "%s/top.txt", dir);
	run_to("top (plain text)", argv, SIGINT, 1500, out, failures);
}

static void check_outputs(const char *dir, bool full, char **failures)
{
	char svg[PATH_MAX + 32], checker[PATH_MAX];
	char *xmllint[] = { "xmllint", "--noout", svg, NULL };
	char *py[] = { (char *)test_python3(), checker, (char *)dir, NULL };
	struct run r;

	snprintf(checker, sizeof(checker), "%s/tests/check_hostile.py", test_srcdir());
	ck_assert_int_eq(run_cmd(&r, RUN_TIMEOUT_MS, py), 0);
	printf("%s", r.out);
	if (run_exit(&r) != 0)
		msg_add(failures, "check_hostile.py: %s%s", r.out, r.err);
	else if (full && !strstr(r.out, "pprof"))
		msg_add(failures, "check_hostile.py did not check every output: %s", r.out);
	run_free(&r);
	if (!full)
		return;
	snprintf(svg, sizeof(svg), "%s/out.flamegraph", dir);
	ck_assert_int_eq(run_cmd(&r, RUN_TIMEOUT_MS, xmllint), 0);
	if (run_exit(&r) != 0)
		msg_add(failures, "xmllint --noout %s: %.1000s", svg, r.err);
	run_free(&r);
}

START_TEST(test_hostile)
{
	const struct test_interp *ti = &interps[_i];
	bool full = full_interp(_i);
	char script[PATH_MAX], why[512], pid[16], path[PATH_MAX + 32];
	char *dump[] = { (char *)pystrobe_path(), "dump", "--pid", pid, NULL };
	char *dump_json[] = { (char *)pystrobe_path(), "dump", "--json", "--pid", pid, NULL };
	char *dump_locals[] = { (char *)pystrobe_path(), "dump", "--locals", "--pid", pid, NULL };
	char *dump_locals_json[] = { (char *)pystrobe_path(), "dump", "--locals", "--json",
				     "--pid", pid, NULL };
	char *failures = NULL;
	struct target t;

	test_interp_script(ti, "tests/targets/hostile.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: %s", ti->label, why);
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	printf("hostile: %s: dump, dump --json, dump --locals (text, JSON), record -f collapsed%s\n",
	       ti->label,
	       full ? ", flamegraph, speedscope, chrometrace, pprof, top" : "");

	snprintf(path, sizeof(path), "%s/dump.txt", t.dir);
	run_to("dump", dump, 0, 0, path, &failures);
	snprintf(path, sizeof(path), "%s/dump.json", t.dir);
	run_to("dump --json", dump_json, 0, 0, path, &failures);
	snprintf(path, sizeof(path), "%s/dump-locals.txt", t.dir);
	run_to("dump --locals", dump_locals, 0, 0, path, &failures);
	snprintf(path, sizeof(path), "%s/dump-locals.json", t.dir);
	run_to("dump --locals --json", dump_locals_json, 0, 0, path, &failures);
	for (size_t i = 0; i < (full ? sizeof(formats) / sizeof(formats[0]) : 1); i++)
		record_format(t.dir, pid, formats[i], &failures);
	if (full)
		top_plain(t.dir, pid, &failures);
	if (!failures)
		check_outputs(t.dir, full, &failures);
	target_stop(&t);
	if (failures)
		printf("hostile: %s FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%s: %.2000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_hostile, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
