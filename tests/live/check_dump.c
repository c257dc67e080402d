/* `pystrobe dump` against live targets, on every Python this machine has.
 *
 * tests/targets/parked.py parks threads in known stacks and writes what it
 * sees itself (truth.json); tests/compare_dump.py holds pystrobe's JSON
 * against that.  Each interpreter is dumped five ways: --json (threads
 * paused), --json --nonblocking, plain text (the standard library's paths
 * short, as record shows them), text with --full-filenames, and --locals
 * --json.  After each run no thread of the target may be left stopped.
 *
 * Failures are collected while the target runs and reported once it is
 * stopped, so that all five dumps are judged and nothing is left behind.
 *
 * tests/targets/no_threading.py (run with -S) never imports threading:
 * its main thread must still be "MainThread", as Python names it, in
 * dump's text and in record --threads.
 */
#include <check.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

struct dump_test {
	const struct test_interp *ti;
	struct target t;
	char pid[16];
	char *failures;		/* one line (or block) per failure */
};

static void add_failure(struct dump_test *d, const char *what,
			const char *detail)
{
	msg_add(&d->failures, "%s: %s", what, detail);
}

static void add_run_failure(struct dump_test *d, const char *what,
			    const struct run *r)
{
	char how[96];

	msg_add(&d->failures, "%s: pystrobe %s; stderr: %.2000s", what,
		run_describe(r, how, sizeof(how)), r->err);
}

/* The target must come out of every dump as it went in: running, whole. */
static void check_target_after(struct dump_test *d, const char *what)
{
	char state = 0, buf[128];
	pid_t tid = proc_stopped_thread(d->t.py_pid, &state);
	int n = proc_thread_count(d->t.py_pid);

	if (tid) {
		snprintf(buf, sizeof(buf),
			 "thread %d left stopped (state %c) after pystrobe returned",
			 tid, state);
		add_failure(d, what, buf);
	}
	if (n != d->t.nthreads) {
		snprintf(buf, sizeof(buf),
			 "target has %d threads after the dump, had %d", n,
			 d->t.nthreads);
		add_failure(d, what, buf);
	}
}

static void compare(struct dump_test *d, const char *what, const char *dump,
		    const char *flag)
{
	char script[PATH_MAX + 32], how[96];
	char *argv[6];
	struct run r;
	int n = 0;

	snprintf(script, sizeof(script), "%s/tests/compare_dump.py",
		 test_srcdir());
	argv[n++] = (char *)test_python3();
	argv[n++] = script;
	if (flag)
		argv[n++] = (char *)flag;
	argv[n++] = d->t.truth;
	argv[n++] = (char *)dump;
	argv[n] = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		add_failure(d, what, "cannot run compare_dump.py");
		return;
	}
	if (run_exit(&r) != 0)
		msg_add(&d->failures, "%s: compare_dump.py %s:\n%s%s", what,
			run_describe(&r, how, sizeof(how)), r.out, r.err);
	else
		printf("dump: %s: %s: %s", d->ti->label, what, r.out);
	run_free(&r);
}

/* Run `pystrobe dump --pid PID OPTS...` and keep its stdout in OUTDIR/file;
 * returns whether it exited 0. */
static int dump_to(struct dump_test *d, const char *what, const char *file,
		   struct run *r, const char *opt1, const char *opt2)
{
	char path[PATH_MAX + 64];

	/* Releasing a thread from the previous dump's ptrace stop wakes it
	 * from its futex wait for a moment; on a loaded machine it can still
	 * be runnable ('R') when the next dump reads its state.  That is a
	 * true observation, not the parked state this test compares with, so
	 * let the threads settle first. */
	usleep(300 * 1000);
	if (run_pystrobe(r, "dump", "--pid", d->pid, opt1, opt2, NULL) < 0) {
		add_failure(d, what, "cannot run pystrobe");
		return 0;
	}
	check_target_after(d, what);
	if (run_exit(r) != 0) {
		add_run_failure(d, what, r);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", d->t.dir, file);
	if (write_file(path, r->out, r->out_len) < 0) {
		add_failure(d, what, "cannot save the dump");
		return 0;
	}
	return 1;
}

static void check_json(struct dump_test *d, const char *what,
		       const char *file, const char *opt, const char *flag)
{
	char path[PATH_MAX + 64];
	struct run r;

	if (dump_to(d, what, file, &r, "--json", opt)) {
		snprintf(path, sizeof(path), "%s/%s", d->t.dir, file);
		compare(d, what, path, flag);
	}
	run_free(&r);
}

/* Text output has no schema to compare, but every parked function must be
 * named in it, non-ASCII names intact. */
static void check_text(struct dump_test *d)
{
	const char *names[] = {
		"main_park", "nested_a", "nested_b", "nested_c", "outer", "recurse", "lock_waiter", "spin_loop", "spinner",
		"sleeper", "unicode_parker", "функция_ñ", "modülé_данные.py",
		d->ti->minor >= 11 ? "Keeper.middle" : "middle",
		/* source lines, and the mark of the file edited after import */
		"ev.wait()", "[file changed since the process started]",
		/* lines of files in latin-1 and cp1252 (PEP 263), and after a BOM */
		"# caf\u00e9, \u00d1and\u00fa, \u00a35", "# \u20ac10, \u201cquoted\u201d \u2014 dash",
		"return rest[0](rest[1:], f, ev) if rest else f(ev)  # \u00fcn\u00efc\u00f6d\u00e9 after a BOM",
	};
	char buf[128];
	struct run r;

	if (dump_to(d, "text", "dump.txt", &r, NULL, NULL)) {
		for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
			if (strstr(r.out, names[i]))
				continue;
			snprintf(buf, sizeof(buf), "\"%s\" not in the output",
				 names[i]);
			add_failure(d, "text", buf);
		}
		if (strstr(r.out, "/lib/python3") || !strstr(r.out, " (threading.py:"))
			add_failure(d, "text", "the standard library's paths are not shortened "
				    "(threading.py:LINE)");
	}
	run_free(&r);
}

/* --full-filenames gives text the whole paths JSON always has. */
static void check_full_filenames(struct dump_test *d)
{
	struct run r;

	if (dump_to(d, "text --full-filenames", "dump-full.txt", &r, "--full-filenames",
		    NULL) &&
	    !strstr(r.out, "/threading.py:"))
		add_failure(d, "text --full-filenames", "no whole path .../threading.py");
	run_free(&r);
}

static void report(struct dump_test *d)
{
	if (!d->failures) {
		printf("dump: %s: OK (%d threads)\n", d->ti->label,
		       d->t.nthreads);
		return;
	}
	/* The whole report goes to the log; Check's message is short. */
	printf("dump: %s: FAILED\n%s", d->ti->label, d->failures);
	fflush(stdout);
	ck_abort_msg("%s: %.1500s", d->ti->label, d->failures);
}

START_TEST(test_dump)
{
	struct dump_test d = { .ti = &interps[_i] };
	char why[512];

	if (target_start_parked(&d.t, d.ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked.py: %s", d.ti->label, why);
	snprintf(d.pid, sizeof(d.pid), "%d", d.t.py_pid);

	check_json(&d, "--json", "dump.json", NULL, NULL);
	check_json(&d, "--json --nonblocking", "dump-nonblocking.json",
		   "--nonblocking", "--loose-moving");
	check_text(&d);
	check_full_filenames(&d);
	check_json(&d, "--json --locals", "dump-locals.json", "--locals",
		   "--locals");

	target_stop(&d.t);
	report(&d);
	free(d.failures);
}
END_TEST

/* The main thread is MainThread when no threading module names it. */
START_TEST(test_main_thread_name)
{
	const struct test_interp *ti = &interps[_i];
	struct target t;
	char why[512], script[PATH_MAX], pid[16], *truth, how[96];
	struct run r;

	test_interp_script(ti, "tests/targets/no_threading.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), "-S", script, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: no_threading.py: %s", ti->label, why);
	}
	truth = slurp(t.truth);
	ck_assert_msg(truth && strstr(truth, "\"threading\": false"),
		      "%s: threading was loaded after all: %s", ti->label, truth);
	t.py_pid = t.pid;
	if (strstr(truth, "\"pid\": "))
		t.py_pid = atoi(strstr(truth, "\"pid\": ") + 7);
	free(truth);
	snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);

	ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", pid, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0 && strstr(r.out, "\"MainThread\""),
		      "%s: dump: %s, no \"MainThread\" in:\n%.1500s", ti->label,
		      run_describe(&r, how, sizeof(how)), r.out);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-q", "--threads", "-d", "0.5", "-f",
				      "collapsed", "-o", "-", "--pid", pid, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0 && strstr(r.out, "\"MainThread\";"),
		      "%s: record --threads: %s, no \"MainThread\" root in:\n%.1500s", ti->label,
		      run_describe(&r, how, sizeof(how)), r.out);
	run_free(&r);
	target_stop(&t);
	printf("dump: %s: the main thread of a program without threading is MainThread\n",
	       ti->label);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dump");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);

	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_dump, 0, ninterps);
	tcase_add_loop_test(tc, test_main_thread_name, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
