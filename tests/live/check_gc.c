/* The garbage collector shown as a <gc> frame, against the target's own
 * log of its collections.
 *
 * tests/targets/gc_target.py forces collections of a large cyclic graph
 * in its "collector" thread, again and again, and logs from inside each
 * (a gc.callbacks hook) when it starts and ends.  On every interpreter:
 *
 *   - dump, as JSON and as text, until each has been taken both inside a
 *     collection (all of the dump between a start and its stop: the
 *     collector must show <gc> right above the function that called
 *     gc.collect(), or above the gc.callbacks hook the collection runs)
 *     and away from any (no thread may show it);
 *     tests/compare_gc.py judges each dump by the log's wall-clock times;
 *   - record -f collapsed for 2 s: <gc> only as a leaf above that
 *     function, its share of the collector's samples within 0.3 of the
 *     share of the time the log says went to collecting (again when the
 *     target happened not to collect during those 2 s).
 *
 * On the oldest and the newest interpreter, also record in every other
 * format (flamegraph, speedscope, chrometrace, pprof) and top's plain text
 * must name the <gc> frame (each again when the target collected for less
 * than 0.1 s of the time the run surely sampled: record's 2 s lie
 * somewhere after a start-up of unknown length, which under ASan can hold
 * a whole collection).
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* Dumps tried at most, for the four cases (JSON and text, inside and
 * outside a collection) to have each come up. */
#define MAX_DUMPS 120

/* Seconds each record samples. */
#define RECORD_S "2"

static const char *const formats[] = { "flamegraph", "speedscope", "chrometrace", "pprof" };

static bool full_interp(int i)
{
	int oldest, newest;

	test_interp_span(interps, ninterps, &oldest, &newest);
	return i == oldest || i == newest;
}

/* compare_gc.py MODE TRUTH LOG OUT T0 T1 [D]: its first line of output
 * into verdict; 0, 1 when there was nothing to judge (no collection while
 * it recorded), or -1 with failures said.  d: the seconds record sampled
 * (-d), or NULL. */
static int judge(struct target *t, const char *mode, const char *out, double t0, double t1,
		 const char *d, char *verdict, size_t vlen, char **failures)
{
	char script[PATH_MAX], log[PATH_MAX + 16], a[32], b[32];
	char *argv[] = { (char *)test_python3(), script, (char *)mode, t->truth, log,
			 (char *)out, a, b, (char *)d, NULL };
	struct run r;
	int rc = 0;

	snprintf(script, sizeof(script), "%s/tests/compare_gc.py", test_srcdir());
	snprintf(log, sizeof(log), "%s/gc.log", t->dir);
	snprintf(a, sizeof(a), "%.6f", t0);
	snprintf(b, sizeof(b), "%.6f", t1);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run compare_gc.py");
		return -1;
	}
	snprintf(verdict, vlen, "%.*s", (int)strcspn(r.out, "\n"), r.out);
	if (run_exit(&r) == 3) {
		rc = 1;		/* nothing to judge: try again */
	} else if (run_exit(&r) != 0) {
		msg_add(failures, "%s %s: %s%s", mode, out, r.out, r.err);
		rc = -1;
	}
	run_free(&r);
	return rc;
}

/* Run pystrobe argv, its stdout to path, timed in wall-clock seconds. */
static int run_timed(char *const argv[], int sig, const char *path, double *t0, double *t1,
		     char **failures)
{
	char how[96];
	struct run r;
	int rc;

	*t0 = wall_s();
	rc = sig ? run_cmd_signal(&r, RUN_TIMEOUT_MS, 3000, sig, argv)
		 : run_cmd(&r, RUN_TIMEOUT_MS, argv);
	*t1 = wall_s();
	if (rc < 0) {
		msg_add(failures, "%s %s: cannot run", argv[0], argv[1]);
		return -1;
	}
	rc = 0;
	if (run_exit(&r) != 0) {
		msg_add(failures, "%s: %s: %.500s", argv[1], run_describe(&r, how, sizeof(how)), r.err);
		rc = -1;
	} else if (path && write_file(path, r.out, r.out_len) < 0) {
		msg_add(failures, "cannot write %s", path);
		rc = -1;
	}
	run_free(&r);
	return rc;
}

/* Dumps until JSON and text have each been seen inside a collection and
 * away from one. */
static void check_dumps(struct target *t, const char *pid, char **failures)
{
	char *argv[] = { (char *)pystrobe_path(), "dump", "--no-source", "--pid", (char *)pid,
			 NULL, NULL };
	char path[PATH_MAX + 32], verdict[256];
	int seen[2][2] = { { 0 } }, tries = 0, unclear = 0;

	for (; tries < MAX_DUMPS; tries++) {
		int json = tries % 2;
		double t0, t1;

		if (seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1])
			break;
		argv[5] = json ? "--json" : NULL;
		snprintf(path, sizeof(path), "%s/dump.%s", t->dir, json ? "json" : "txt");
		if (run_timed(argv, 0, path, &t0, &t1, failures) < 0)
			return;
		/* The hook's lines are written from inside the collection:
		 * let a stop line land before the log is read. */
		sleep_ms(100);
		if (judge(t, "dump", path, t0, t1, NULL, verdict, sizeof(verdict), failures) < 0)
			return;
		if (!strcmp(verdict, "inside"))
			seen[json][1]++;
		else if (!strcmp(verdict, "outside"))
			seen[json][0]++;
		else
			unclear++;
		sleep_ms(37 * (tries % 7));
	}
	printf("gc: %s: dumps: JSON %d inside, %d outside; text %d inside, %d outside; "
	       "%d unclear\n", t->ti->label, seen[1][1], seen[1][0], seen[0][1], seen[0][0],
	       unclear);
	if (!(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]))
		msg_add(failures, "%d dumps did not catch every case (see the counts)", tries);
}

static void check_record(struct target *t, const char *pid, const char *fmt, char **failures)
{
	char out[PATH_MAX + 32], verdict[256];
	char *argv[] = { (char *)pystrobe_path(), "record", "-q", "-d", RECORD_S, "-f", (char *)fmt,
			 "-o", out, "--pid", (char *)pid, NULL };
	bool collapsed = !strcmp(fmt, "collapsed");
	double t0, t1;
	int rc = 1;

	snprintf(out, sizeof(out), "%s/out.%s", t->dir, fmt);
	for (int tries = 0; rc == 1 && tries < 4; tries++) {
		if (run_timed(argv, 0, NULL, &t0, &t1, failures) < 0)
			return;
		rc = judge(t, collapsed ? "record" : "has", out, t0, t1,
			   collapsed ? NULL : RECORD_S, verdict, sizeof(verdict), failures);
		printf("gc: %s: record -f %s: %s\n", t->ti->label, fmt, verdict);
	}
	if (rc == 1)
		msg_add(failures, "record -f %s: no collection while it recorded, 4 times", fmt);
}

/* top with stdout not a terminal prints plain snapshots; SIGINT ends it. */
static void check_top(struct target *t, const char *pid, char **failures)
{
	char out[PATH_MAX + 32], verdict[256];
	char *argv[] = { (char *)pystrobe_path(), "top", "-d", "0.5", "--pid", (char *)pid, NULL };
	double t0, t1;
	int rc = 1;

	snprintf(out, sizeof(out), "%s/top.txt", t->dir);
	for (int tries = 0; rc == 1 && tries < 4; tries++) {
		if (run_timed(argv, SIGINT, out, &t0, &t1, failures) < 0)
			return;
		rc = judge(t, "has", out, t0, t1, NULL, verdict, sizeof(verdict), failures);
		printf("gc: %s: top: %s\n", t->ti->label, verdict);
	}
	if (rc == 1)
		msg_add(failures, "top: no collection while it ran, 4 times");
}

START_TEST(test_gc)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], pid[16];
	char *failures = NULL;
	struct target t;

	if (target_start_script(&t, ti, "tests/targets/gc_target.py", why, sizeof(why)) < 0)
		ck_abort_msg("%s: gc_target.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	check_dumps(&t, pid, &failures);
	check_record(&t, pid, "collapsed", &failures);
	if (full_interp(_i)) {
		for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
			check_record(&t, pid, formats[i], &failures);
		check_top(&t, pid, &failures);
	}
	target_stop(&t);
	if (failures)
		printf("gc: %s FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%s: %.2000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gc");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("gc");
	tcase_set_timeout(tc, 240);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_gc, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
