/* Periodic jobs must not alias (on the oldest and the newest Python here).
 *
 * tests/targets/periodic.py runs steps of exactly a period on the monotonic
 * clock (the one pystrobe's rounds are due on), busy() for the first third
 * of each and asleep to the step's absolute end, as a training loop is, and
 * counts its own time inside busy() and in all (perf_counter), in
 * truth.json.  Three of them (10, 20 and 30 ms steps) are recorded at once,
 * `record --idle -r 100` each and the 20 ms one also at -r 50: periods of 1,
 * 2 and 3 sampling intervals, and of 1 at another rate.  busy()'s share of
 * the thread's samples must be within TOLERANCE points of its share of the
 * job's own wall-clock time over the recording.  A sampler whose rounds are
 * on a grid of the interval sees one phase of every step: 0% or 91% busy
 * against 33%, 1 to 22% for the 20 ms steps.
 *
 * Chance alone: SECONDS at 50 Hz is 1500 samples, whose share is off by 3
 * points about once in 70 recordings (binomial, p = 1/3); a case that
 * misses is recorded again, up to TRIES times, so a sampler that is right
 * fails about once in 300000, and one that aliases every time.  A machine
 * so loaded that the job's own wake-ups are late by LATE_MS on average, or
 * its steps overran, or pystrobe fell below 80% of its rate, disturbs the
 * sampling instants as it does the job's (a late round falls later in the
 * step): such a run proves little, and on the last try a case then needs
 * only LOOSE_TOLERANCE, still far inside what aliasing gives.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "folded.h"
#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define SECONDS		30	/* of a recording */
#define TOLERANCE	3.0	/* points between busy()'s two shares */
#define LOOSE_TOLERANCE	6.0	/* the same on a disturbed last try */
#define LATE_MS		1.0	/* the job's mean wake-up lateness, disturbed */
#define TRIES		3

static const struct test_interp *interps;
static int ninterps;
/* The clock is pystrobe's, the same whatever the target runs: the oldest
 * and the newest interpreter prove it (a minute each with its retries),
 * not all fourteen. */
static int chosen[2], nchosen;

/* The targets' periods, and the recordings of them. */
static const int periods_ms[] = { 10, 20, 30 };
#define NTARGETS 3

static const struct pcase {
	int target;		/* into periods_ms[] */
	int rate;		/* Hz */
} cases[] = {
	{ 0, 100 }, { 1, 100 }, { 1, 50 }, { 2, 100 },
};
#define NCASES 4

/* One look at a target's truth.json. */
struct look {
	double busy, wall, late;	/* s */
	double steps, overruns;
};

struct result {
	bool done;		/* passed, no more tries */
	uint64_t busy, total;	/* samples with busy(), of run_steps() */
	double got, want, off;	/* busy()'s shares and their distance */
	const char *noise;	/* why the try was disturbed, or NULL */
	char err[512];		/* pystrobe's summary line */
};

static void look(const struct target *t, struct look *lk)
{
	char *truth = slurp(t->truth);

	ck_assert_msg(truth, "%s: periodic.py has no truth.json", t->ti->label);
	lk->busy = json_text_num(truth, "busy_s");
	lk->wall = json_text_num(truth, "wall_s");
	lk->late = json_text_num(truth, "late_s");
	lk->steps = json_text_num(truth, "steps");
	lk->overruns = json_text_num(truth, "overruns");
	free(truth);
}

static void tally(const char *label, const char *path, struct result *r)
{
	char *text = slurp(path);
	struct folded f;

	ck_assert_msg(text, "%s: no profile at %s", label, path);
	ck_assert_msg(folded_parse(text, &f) == 0, "%s: malformed collapsed output: %.300s",
		      label, text);
	r->busy = r->total = 0;
	for (size_t i = 0; i < f.n; i++) {
		/* Frames below the thread's root: each after a ';'. */
		if (!strstr(f.stacks[i], ";run_steps ("))
			continue;
		r->total += f.counts[i];
		if (strstr(f.stacks[i], ";busy ("))
			r->busy += f.counts[i];
	}
	folded_free(&f);
	free(text);
}

/* pystrobe's summary line from the file of its stderr, into r->err. */
static void summary(const char *path, struct result *r)
{
	char *text = slurp(path);
	const char *p = record_summary(text);
	size_t n = p ? strcspn(p, "\n") : 0;

	snprintf(r->err, sizeof(r->err), "%.*s", (int)n, p ? p : "");
	free(text);
}

/* Why a try proves little, or NULL. */
static const char *disturbed(const struct look *b, const struct look *a,
			     const struct result *r, int rate)
{
	double steps = a->steps - b->steps;

	if (steps > 0 && (a->late - b->late) / steps * 1000 > LATE_MS)
		return "the job woke late: a loaded machine";
	if (a->overruns > b->overruns)
		return "the job's steps overran: a loaded machine";
	if (r->total < 0.8 * rate * SECONDS)
		return "pystrobe sampled below 80% of its rate";
	return NULL;
}

/* Case c's profile in out against its target's looks before and after. */
static void judge(const struct target *t, int c, const struct look *b, const struct look *a,
		  const char *out, struct result *r, int try)
{
	double late = a->steps > b->steps ? (a->late - b->late) / (a->steps - b->steps) : 0;

	tally(t->ti->label, out, r);
	unlink(out);
	r->got = r->total ? 100.0 * r->busy / r->total : 0;
	r->want = a->wall > b->wall ? 100 * (a->busy - b->busy) / (a->wall - b->wall) : -1;
	r->off = fabs(r->got - r->want);
	r->noise = disturbed(b, a, r, cases[c].rate);
	r->done = r->total && r->off <= TOLERANCE;
	printf("periodic: %s: %d ms steps, -r %d%s: busy() %.1f%% of %llu samples, %.1f%% by "
	       "the job's clock (%.1f points off); the job's wake-ups %.2f ms late on average, "
	       "%.0f steps overran%s%s\n  %s\n", t->ti->label, periods_ms[cases[c].target],
	       cases[c].rate, try > 1 ? ", again" : "", r->got, (unsigned long long)r->total,
	       r->want, r->off, late * 1000, a->overruns - b->overruns,
	       r->noise ? "; disturbed: " : "", r->noise ? r->noise : "", r->err);
}

/* Start `record --idle -r RATE -d SECONDS -f collapsed -o OUT --pid PID`
 * with its stderr to ERR. */
static pid_t start_record(const struct target *tg, int rate, const char *out, const char *err)
{
	char pid[16], hz[16], secs[16];
	char *argv[] = { (char *)pystrobe_path(), "record", "--idle", "-r", hz, "-d", secs,
			 "-f", "collapsed", "-o", (char *)out, "--pid", pid, NULL };
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)tg->py_pid);
	snprintf(hz, sizeof(hz), "%d", rate);
	snprintf(secs, sizeof(secs), "%d", SECONDS);
	p = spawn_cmd_err(argv, err);
	ck_assert_msg(p > 0, "cannot run pystrobe");
	return p;
}

/* Start the recordings of the cases not done, all at once, and wait for
 * them; judge each against its target's clock over the same time. */
static void record_all(const struct target *t, struct result *res, int try)
{
	char out[NCASES][PATH_MAX + 32], err[NCASES][PATH_MAX + 32];
	struct look before[NTARGETS], after[NTARGETS];
	pid_t rec[NCASES] = { 0 };
	int status;

	for (int i = 0; i < NTARGETS; i++)
		look(&t[i], &before[i]);
	for (int c = 0; c < NCASES; c++) {
		const struct target *tg = &t[cases[c].target];

		if (res[c].done)
			continue;
		snprintf(out[c], sizeof(out[c]), "%s/r%d.txt", tg->dir, cases[c].rate);
		snprintf(err[c], sizeof(err[c]), "%s/r%d.err", tg->dir, cases[c].rate);
		rec[c] = start_record(tg, cases[c].rate, out[c], err[c]);
	}
	for (int c = 0; c < NCASES; c++) {
		if (!rec[c])
			continue;
		while (waitpid(rec[c], &status, 0) < 0 && errno == EINTR)
			;
		summary(err[c], &res[c]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "%s: record -r %d of the %d ms job: status %d: %s", t->ti->label,
			      cases[c].rate, periods_ms[cases[c].target], status, res[c].err);
	}
	for (int i = 0; i < NTARGETS; i++)
		look(&t[i], &after[i]);
	for (int c = 0; c < NCASES; c++)
		if (rec[c])
			judge(t, c, &before[cases[c].target], &after[cases[c].target], out[c],
			      &res[c], try);
}

START_TEST(test_periodic)
{
	const struct test_interp *ti = &interps[chosen[_i]];
	struct result res[NCASES];
	struct target t[NTARGETS];
	char why[512], period[16];
	char *msg = NULL;

	if (pystrobe_sanitized()) {
		test_skip("periodic: a sanitizer build: a timing test, which the plain build runs "
			  "(the sanitizers slow pystrobe, and CI's phase 5 runs two tests at once)");
		return;
	}

	memset(res, 0, sizeof(res));
	memset(t, 0, sizeof(t));
	for (int i = 0; i < NTARGETS; i++) {
		snprintf(period, sizeof(period), "%d", periods_ms[i]);
		if (target_start_script_arg(&t[i], ti, "tests/targets/periodic.py", period, why,
					    sizeof(why)) < 0) {
			for (int k = 0; k < i; k++)
				target_stop(&t[k]);
			ck_abort_msg("%s: periodic.py %s: %s", ti->label, period, why);
		}
	}
	for (int try = 1; try <= TRIES; try++) {
		record_all(t, res, try);
		if (res[0].done && res[1].done && res[2].done && res[3].done)
			break;
	}
	for (int i = 0; i < NTARGETS; i++)
		target_stop(&t[i]);
	for (int c = 0; c < NCASES; c++) {
		const struct result *r = &res[c];

		if (r->done)
			continue;
		if (r->noise && r->total && r->off <= LOOSE_TOLERANCE) {
			printf("periodic: %s: WARNING: %d ms steps, -r %d: %.1f points off on a "
			       "disturbed machine (%s)\n", ti->label, periods_ms[cases[c].target],
			       cases[c].rate, r->off, r->noise);
			continue;
		}
		msg_add(&msg, "%d ms steps, -r %d: busy() has %.1f%% of %llu samples, %.1f%% of "
			"the job's time by its own clock: %.1f points off in each of %d tries, "
			"at most %.1f allowed%s%s", periods_ms[cases[c].target], cases[c].rate,
			r->got, (unsigned long long)r->total, r->want, r->off, TRIES,
			r->noise ? LOOSE_TOLERANCE : TOLERANCE, r->noise ? "; disturbed: " : "",
			r->noise ? r->noise : "");
	}
	fail_if_any(msg, ti->label);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("periodic");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	printf("periodic: pystrobe is %s\n", pystrobe_path());
	if (ninterps) {
		test_interp_span(interps, ninterps, &chosen[0], &chosen[1]);
		nchosen = chosen[1] == chosen[0] ? 1 : 2;
		for (int i = 0; i < nchosen; i++)
			printf("periodic: on %s (the oldest and the newest: the clock is "
			       "pystrobe's)\n", interps[chosen[i]].label);
	}
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, TRIES * (SECONDS + 30) + 60);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_periodic, 0, nchosen);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
