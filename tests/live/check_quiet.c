/* A stack taken whole from the last round must still be the thread's stack.
 *
 * Without --native, a thread that has not held the GIL since its stack was
 * last read keeps that stack: sampler.c's quiet() proves it by the GIL's
 * switch count (read from each version's _gil_runtime_state).  Here a
 * sleeper alternates between nap_long() (30 ms) and nap_short() (10 ms)
 * while a spinner holds the GIL: `record --idle` must split the sleeper's
 * samples between the two as the sleeper's own clock does over the same
 * time (its naps, timed by itself; within 3 points), and most of the round's stacks must have been kept whole (the
 * main thread's and the sleeper's), or the proof is not what ran.  On every
 * interpreter found; a wrong switch-count offset freezes the sleeper in one
 * function and fails it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define TARGET_SECONDS	"6"
#define RECORD_SECONDS	"3"

static const struct test_interp *interps;
static int ninterps;

/* Samples of the collapsed profile at path whose stack holds fn. */
static long samples_in(const char *path, const char *fn)
{
	char line[8192];
	long n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		if (sp && strstr(line, fn))
			n += atol(sp + 1);
	}
	fclose(f);
	return n;
}

/* nap_long()'s share of the sleeper's time between a and b (CLOCK_MONOTONIC
 * seconds, while pystrobe ran), from the naps the target timed itself. */
static double truth_long_share(const struct target *t, double a, double b)
{
	char path[PATH_MAX + 16], kind[16];
	double t0, t1, sum[2] = { 0, 0 };
	FILE *f;

	snprintf(path, sizeof(path), "%s/naps.txt", t->dir);
	if (!(f = fopen(path, "r")))
		ck_abort_msg("%s: no naps.txt from the target", t->ti->label);
	while (fscanf(f, "%15s %lf %lf", kind, &t0, &t1) == 3) {
		if (t0 < a)
			t0 = a;
		if (t1 > b)
			t1 = b;
		if (t1 > t0)
			sum[strcmp(kind, "long") != 0] += t1 - t0;
	}
	fclose(f);
	if (sum[0] + sum[1] <= 0)
		ck_abort_msg("%s: no nap while pystrobe ran", t->ti->label);
	return 100 * sum[0] / (sum[0] + sum[1]);
}

static void record(struct run *r, const struct target *t, const char *out)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", t->py_pid);
	setenv("PYSTROBE_STATS", "1", 1);
	run_pystrobe(r, "record", "--idle", "-r", "1000", "-d", RECORD_SECONDS, "-f",
		     "collapsed", "-o", out, "--pid", pid, NULL);
	unsetenv("PYSTROBE_STATS");
}

START_TEST(test_quiet)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], script[PATH_MAX], out[64];
	unsigned long long stacks = 0, kept = 0;
	long nlong, nshort;
	double got, want, from, to;
	struct target t;
	struct run r;
	const char *st;

	test_interp_script(ti, "tests/targets/quiet.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, TARGET_SECONDS, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: target: %s", ti->label, why);
	}
	snprintf(out, sizeof(out), "/tmp/pystrobe-quiet-%d.txt", getpid());
	from = now_s();
	record(&r, &t, out);
	to = now_s();
	if (target_wait_file(&t, "done", 60000, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: target: %s", ti->label, why);
	}
	want = truth_long_share(&t, from, to);
	nlong = samples_in(out, "nap_long");
	nshort = samples_in(out, "nap_short");
	st = r.err ? strstr(r.err, "stats: ") : NULL;
	if (st)
		sscanf(st, "stats: %llu stacks, %llu", &stacks, &kept);
	got = nlong + nshort > 0 ? 100.0 * nlong / (nlong + nshort) : -1;
	printf("quiet: %s: nap_long %.1f%% of the sleeper's samples (%ld of %ld), its own clock "
	       "%.1f%%; %llu of %llu stacks kept whole\n", ti->label, got, nlong,
	       nlong + nshort, want, kept, stacks);
	target_stop(&t);
	unlink(out);
	ck_assert_msg(run_exit(&r) == 0, "%s: record: %s", ti->label, r.err);
	ck_assert_msg(nlong + nshort >= 500, "%s: too few samples of the sleeper: %s", ti->label,
		      r.err);
	ck_assert_msg(got > want - 3 && got < want + 3,
		      "%s: nap_long %.1f%% of the samples, %.1f%% by the target's clock", ti->label,
		      got, want);
	ck_assert_msg(stacks > 0 && kept * 10 >= stacks * 3,
		      "%s: only %llu of %llu stacks kept whole", ti->label, kept, stacks);
	run_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quiet");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("quiet");
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_quiet, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
