/* A stack taken whole from the last round must still be the thread's stack.
 *
 * Without --native, a thread that has not held the GIL since its stack was
 * last read keeps that stack: sample_stack.c's unchanged() proves it by the
 * GIL's switch count (read from each version's _gil_runtime_state).  Here a
 * sleeper alternates between nap_long() (30 ms) and nap_short() (10 ms)
 * while a spinner holds the GIL: `record --idle` must split the sleeper's
 * samples between the two as the sleeper's own clock does over the same
 * time (its naps, timed by itself; within 3 points), and most of the round's stacks must have been kept whole (the
 * main thread's and the sleeper's), or the proof is not what ran.  On every
 * interpreter found; a wrong switch-count offset freezes the sleeper in one
 * function and fails it.  On the free-threaded 3.13t, where threads run
 * without the GIL, no stack may be kept whole at all.
 *
 * With --native --idle (test_still), a thread asleep is left running and its
 * native frames taken from its last unwind, proved still by where it entered
 * the kernel, the stack bytes that unwind read and its run counts
 * (sample_pause.c's still_thread()).  nap_long() waits in time.sleep, nap_short()
 * in select.select: a native stack kept from before the sleeper moved shows
 * as a nap_short sample in time_sleep(), or a nap_long one in
 * select_select() (the C functions of the two modules; before 3.11
 * time.sleep waits in select() too), and none may (said and skipped where
 * the interpreter's symbols are stripped).  The split is held to the sleeper's clock as
 * above, each nap must show its own wait, and a fifth of the stacks at
 * least must have been read without a stop (the main thread waits all
 * along).
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define TARGET_SECONDS	"6"
#define RECORD_SECONDS	"3"
/* Rounds a second asked for: --native --idle (test_still), plain. */
#define STILL_RATE	200
#define QUIET_RATE	1000
#define STR_(x)		#x
#define STR(x)		STR_(x)

static const struct test_interp *interps;
static int ninterps;

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

/* Samples of the collapsed profile at path with fn whose frames after fn
 * (inner to it) hold, or do not hold, inner. */
static long samples_in_with(const char *path, const char *fn, const char *inner, bool with)
{
	char line[8192];
	long n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' '), *at = strstr(line, fn);

		if (sp && at && (strstr(at, inner) != NULL) == with)
			n += atol(sp + 1);
	}
	fclose(f);
	return n;
}

/* Samples of the collapsed profile at path whose stack holds fn. */
static long samples_in(const char *path, const char *fn)
{
	return samples_in_with(path, fn, "", true);
}

static void record(struct run *r, const struct target *t, const char *out, bool native)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", t->py_pid);
	setenv("PYSTROBE_STATS", "1", 1);
	run_pystrobe(r, "record", "--idle", "-r", native ? STR(STILL_RATE) : STR(QUIET_RATE),
		     "-d", RECORD_SECONDS,
		     "-f", "collapsed", "-o", out, "--pid", pid, native ? "--native" : NULL, NULL);
	unsetenv("PYSTROBE_STATS");
}

/* quiet.py started and ready, or the test aborted. */
static void start(struct target *t, const struct test_interp *ti)
{
	char why[512], script[PATH_MAX];

	test_interp_script(ti, "tests/targets/quiet.py", script, sizeof(script));
	if (target_start(t, ti, why, sizeof(why), script, TARGET_SECONDS, NULL) < 0 ||
	    target_wait_file(t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(t);
		ck_abort_msg("%s: target: %s", ti->label, why);
	}
}

static void wait_done(struct target *t)
{
	char why[512];

	if (target_wait_file(t, "done", 60000, why, sizeof(why)) < 0) {
		target_stop(t);
		ck_abort_msg("%s: target: %s", t->ti->label, why);
	}
}

/* One recording of quiet.py, and what pystrobe and the target said. */
struct split {
	struct target t;
	struct run r;
	char out[64];
	long nlong, nshort;		/* the sleeper's samples in each nap */
	double got, want;		/* nap_long's share: pystrobe's, the target's */
	unsigned long long stacks, kept, still;	/* PYSTROBE_STATS */
	unsigned long long late;	/* the sleeper's samples not taken */
	double tol;			/* points the shares may differ by */
};

/* The shares may differ by 3 points, and by as much again as the samples
 * of the sleeper that were never taken could move them.  A sample of a
 * thread that moved while it was read (or was late to its stop) is left
 * out, and a sleeper moves at each nap's end; a round pystrobe had no CPU
 * for is not taken, and on a machine short of CPU the sleeper's wake-ups
 * (which need a CPU too) are what lasts.  Either shifts the share towards
 * the longer nap.  With --idle every thread has a sample a round: the
 * sleeper's not taken are the rounds asked for less its samples. */
#define SHARE_POINTS 3.0

static void share_bound(struct split *sp, double rate)
{
	const char *sum = record_summary(sp->r.err);
	long n = sp->nlong + sp->nshort, mine = samples_in(sp->out, "sleeper (");
	double secs = 0, asked;

	if (sum)
		sscanf(sum, "pystrobe: %*u samples from %*u rounds in %lf s", &secs);
	asked = rate * secs;
	sp->late = mine >= 0 && asked > (double)mine ? (unsigned long long)(asked - (double)mine) : 0;
	sp->tol = SHARE_POINTS + (n > 0 ? 100.0 * (double)sp->late / (double)(n + sp->late) : 0);
}

static void record_split(const struct test_interp *ti, bool native, struct split *sp)
{
	double from, to;
	const char *st;

	memset(sp, 0, sizeof(*sp));
	start(&sp->t, ti);
	snprintf(sp->out, sizeof(sp->out), "/tmp/pystrobe-%s-%d.txt", native ? "still" : "quiet",
		 getpid());
	from = now_s();
	record(&sp->r, &sp->t, sp->out, native);
	to = now_s();
	wait_done(&sp->t);
	sp->want = truth_long_share(&sp->t, from, to);
	sp->nlong = samples_in(sp->out, "nap_long");
	sp->nshort = samples_in(sp->out, "nap_short");
	sp->got = sp->nlong + sp->nshort > 0 ? 100.0 * sp->nlong / (sp->nlong + sp->nshort) : -1;
	st = sp->r.err ? strstr(sp->r.err, "stats: ") : NULL;
	if (st)
		sscanf(st, "stats: %llu stacks, %llu of them unchanged since the last round "
		       "(their thread had not held the GIL), %llu", &sp->stacks, &sp->kept,
		       &sp->still);
	share_bound(sp, native ? STILL_RATE : QUIET_RATE);
	target_stop(&sp->t);
}

START_TEST(test_quiet)
{
	const struct test_interp *ti = &interps[_i];
	struct split sp;

	record_split(ti, false, &sp);
	printf("quiet: %s: nap_long %.1f%% of the sleeper's samples (%ld of %ld), its own clock "
	       "%.1f%% (within %.1f: %llu of its samples not taken); %llu of %llu stacks kept whole\n",
	       ti->label, sp.got, sp.nlong, sp.nlong + sp.nshort, sp.want, sp.tol, sp.late,
	       sp.kept, sp.stacks);
	unlink(sp.out);
	ck_assert_msg(run_exit(&sp.r) == 0, "%s: record: %s", ti->label, sp.r.err);
	ck_assert_msg(sp.nlong + sp.nshort >= 500, "%s: too few samples of the sleeper: %s",
		      ti->label, sp.r.err);
	ck_assert_msg(sp.got > sp.want - sp.tol && sp.got < sp.want + sp.tol,
		      "%s: nap_long %.1f%% of the samples, %.1f%% by the target's clock (at most "
		      "%.1f points apart)", ti->label, sp.got, sp.want, sp.tol);
	/* Without a GIL (3.13t) its switch count proves nothing: threads run
	 * without taking it, so no stack may be kept on its say-so. */
	if (strstr(ti->label, "t ft-build"))
		ck_assert_msg(sp.stacks > 0 && sp.kept == 0, "%s: %llu of %llu stacks kept whole "
			      "on a build without a GIL", ti->label, sp.kept, sp.stacks);
	else
		ck_assert_msg(sp.stacks > 0 && sp.kept * 10 >= sp.stacks * 3,
			      "%s: only %llu of %llu stacks kept whole", ti->label, sp.kept,
			      sp.stacks);
	run_free(&sp.r);
}
END_TEST

START_TEST(test_still)
{
	const struct test_interp *ti = &interps[_i];
	long long_select, short_sleep, long_sleep, short_select;
	struct split sp;

	record_split(ti, true, &sp);
	long_select = samples_in_with(sp.out, "nap_long (", "select_select", true);
	long_sleep = samples_in_with(sp.out, "nap_long (", "time_sleep", true);
	short_sleep = samples_in_with(sp.out, "nap_short (", "time_sleep", true);
	short_select = samples_in_with(sp.out, "nap_short (", "select_select", true);
	printf("still: %s: --native --idle: nap_long %.1f%% of the sleeper's samples (%ld of %ld), "
	       "its own clock %.1f%% (within %.1f: %llu of its samples not taken); in their own waits %ld "
	       "and %ld, in the other's %ld and %ld; %llu of %llu stacks read without a stop\n",
	       ti->label, sp.got, sp.nlong, sp.nlong + sp.nshort, sp.want, sp.tol, sp.late,
	       long_sleep, short_select, long_select, short_sleep, sp.still, sp.stacks);
	ck_assert_msg(run_exit(&sp.r) == 0, "%s: record --native --idle: %s", ti->label, sp.r.err);
	ck_assert_msg(!long_select && !short_sleep,
		      "%s: a native stack of the other nap: nap_long in select_select %ld, "
		      "nap_short in time_sleep %ld (%s)", ti->label, long_select, short_sleep,
		      sp.out);
	unlink(sp.out);
	ck_assert_msg(sp.nlong + sp.nshort >= 300, "%s: too few samples of the sleeper: %s",
		      ti->label, sp.r.err);
	/* A stripped interpreter (Debian's static python3.11) names neither
	 * C function: the other interpreters tell the waits apart. */
	if (!long_sleep && !short_select && !long_select && !short_sleep)
		printf("still: %s: SKIP telling the waits apart: time_sleep and select_select "
		       "unnamed (the interpreter has no symbols)\n", ti->label);
	else
		ck_assert_msg(long_sleep > 0 && short_select > 0,
			      "%s: the naps without their waits' native frames", ti->label);
	ck_assert_msg(sp.got > sp.want - sp.tol && sp.got < sp.want + sp.tol,
		      "%s: nap_long %.1f%% of the samples, %.1f%% by the target's clock (at most "
		      "%.1f points apart)", ti->label, sp.got, sp.want, sp.tol);
	ck_assert_msg(sp.stacks > 0 && sp.still * 5 >= sp.stacks,
		      "%s: only %llu of %llu stacks read without a stop", ti->label, sp.still,
		      sp.stacks);
	run_free(&sp.r);
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
	tcase_add_loop_test(tc, test_still, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
