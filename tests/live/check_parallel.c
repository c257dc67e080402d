/* `pystrobe record` and `dump` of threads that compute in parallel: a
 * free-threaded build (3.13t), where no GIL makes them take turns.
 *
 * tests/targets/ft_parallel.py runs 8 threads, w1..w8, each computing in
 * work() for i units of its own thread CPU clock, then sleeping one, all
 * at once; each times its work() calls with time.monotonic() and, at the
 * end, reads its own time.thread_time(); the target writes both to
 * truth.json.  record --threads (launched, so the recording spans exactly
 * the target's life) must give each thread a share of the samples in
 * work() within TOLERANCE points of its share of the wall time the
 * threads' own clocks say they spent in work().  That is what a sampler
 * of running threads measures on any machine: a thread in work() that
 * waits for a CPU is running to /proc and to its own monotonic clock, not
 * to its CPU clock.  Where the machine gave each thread a CPU of its own
 * (its share of the CPU and its share of the busy wall time within
 * DISTURB_SKEW points), the CPU shares are held to TOLERANCE too; on a
 * machine with fewer CPUs than threads that comparison is printed, not
 * judged.  The target must say it ran without a GIL, so that the test
 * cannot pass on a build that took turns, and record must say it lost no
 * sample (", no errors").  A run where pystrobe got under
 * 90% of the rate it asked for is tried again, up to TRIES times; when
 * every run was, the last is held to LOOSE_TOLERANCE, and a SKIP says
 * that the 2-point check did not run.
 *
 * dump of the same 8 threads spinning for good (ft_parallel.py --park):
 * equal to the target's own sys._current_frames() of every thread
 * (tests/compare_dump.py, no thread more or less), each worker attached
 * and active, the main thread detached and idle: paused three times, and
 * once --nonblocking (the workers' lines then need not agree).
 *
 * Runs on the free-threaded interpreters (label "3.13t ft-build"), a SKIP
 * that names tests/setup-ft-python.sh without one.
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define THREADS		8
#define DURATION	"4"	/* seconds the target computes */
#define RATE		"200"	/* Hz: 1600 samples a second on 8 threads */
#define TOLERANCE	2.0	/* points between a thread's two shares */
#define LOOSE_TOLERANCE	6.0	/* the same, on a machine too loaded for that */
#define DISTURB_SKEW	1.0	/* points between a thread's CPU and wall shares:
				 * the CPU shares are judged within it */
#define TRIES		3

static const struct test_interp *interps;
static int ninterps;

/* Each thread's seconds in the object named key of truth.json ({"wN": s}):
 * how many of w1..wN were there. */
static int truth_times(const char *text, const char *key, double v[THREADS + 1])
{
	const char *at = strstr(text, key), *p;
	int n = 0;

	for (int i = 1; i <= THREADS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "\"w%d\": ", i);
		v[i] = at && (p = strstr(at, name)) ? atof(p + strlen(name)) : -1;
		n += v[i] >= 0;
	}
	return n;
}

/* The threads' CPU and busy wall seconds from truth.json; -1 when the file
 * is not what the target writes, 0 for a build with a GIL. */
static int read_truth(const char *path, double cpu[THREADS + 1], double wall[THREADS + 1])
{
	char *text = test_slurp(path);
	int rc = -1;

	if (strstr(text, "\"gil\": true"))
		rc = 0;
	else if (truth_times(text, "\"cpu\": {", cpu) == THREADS &&
		 truth_times(text, "\"wall\": {", wall) == THREADS)
		rc = 1;
	free(text);
	return rc;
}

/* The samples in work() under the root frame of thread wI,
 * 'thread TID "wI"'. */
static uint64_t thread_samples(const struct folded *f, int i)
{
	char name[16];
	uint64_t n = 0;

	snprintf(name, sizeof(name), "\"w%d\"", i);
	for (size_t k = 0; k < f->n; k++) {
		const char *s = f->stacks[k];
		size_t root = strcspn(s, ";"), len = strlen(name);

		if (!strncmp(s, "thread ", 7) && root > len &&
		    !strncmp(s + root - len, name, len) && strstr(s, ";work ("))
			n += f->counts[k];
	}
	return n;
}

/* The most a thread's share of the threads' CPU and its share of their
 * busy wall time differ, in points: the machine kept some waiting for a
 * CPU more than others, and /proc shows a waiting thread as running. */
static double skew(const double *cpu, double total, const double *wall, double busy)
{
	double worst = 0;

	for (int i = 1; i <= THREADS; i++)
		worst = fmax(worst, fabs(100.0 * cpu[i] / total - 100.0 * wall[i] / busy));
	return worst;
}

/* Whether record's summary says it sampled at 90% of RATE or more. */
static bool kept_rate(const struct run *r)
{
	const char *sum = record_summary(r->err), *hz = sum ? strstr(sum, " s, ") : NULL;

	return hz && atof(hz + 4) >= 0.9 * atof(RATE);
}

/* Each thread's share of the samples in work() against its share of the
 * busy wall time, and, where cpu_too, of the CPU: the worst points off
 * (wall), what is off in *msg. */
static double judge(const struct test_interp *ti, const double *cpu, const double *wall,
		    const uint64_t *got, double tolerance, bool cpu_too, char **msg)
{
	double total = 0, busy = 0, samples = 0, worst = 0;

	for (int i = 1; i <= THREADS; i++) {
		total += cpu[i];
		busy += wall[i];
		samples += got[i];
	}
	for (int i = 1; i <= THREADS; i++) {
		double have = 100.0 * got[i] / samples, want = 100.0 * wall[i] / busy;
		double want_cpu = 100.0 * cpu[i] / total;

		printf("parallel: %s: w%d %.1f%% of the samples in work(), %.1f%% of the busy "
		       "wall time, %.1f%% of the CPU (%.3f s)\n", ti->label, i, have, want,
		       want_cpu, cpu[i]);
		worst = fmax(worst, fabs(have - want));
		if (fabs(have - want) > tolerance)
			msg_add(msg, "%s: w%d has %.1f%% of the samples in work(), %.1f%% of the "
				"threads' wall time in it", ti->label, i, have, want);
		if (cpu_too && fabs(have - want_cpu) > tolerance)
			msg_add(msg, "%s: w%d has %.1f%% of the samples in work(), %.1f%% of the "
				"threads' CPU", ti->label, i, have, want_cpu);
	}
	printf("parallel: %s: %.0f samples in work(), %.2f CPU s, %.2f busy wall s, worst "
	       "%.1f points; CPU shares %s (%.1f points from the wall shares)\n", ti->label,
	       samples, total, busy, worst, cpu_too ? "judged" : "not judged: threads waited "
	       "for a CPU", skew(cpu, total, wall, busy));
	return worst;
}

/* One recording; 1: judged (shares in *msg when off), 0: short of the
 * rate, try again.  last: judge such a run too, at LOOSE_TOLERANCE. */
static int one_run(const struct test_interp *ti, char **msg, bool last)
{
	char script[PATH_MAX], truth[PATH_MAX + 16];
	char host[PATH_MAX], inside[PATH_MAX];
	double cpu[THREADS + 1], wall[THREADS + 1], total = 0, busy = 0, samples = 0;
	uint64_t got[THREADS + 1];
	struct argv_buf a = { .n = 0 };
	struct folded f;
	struct run r;
	const char *summary;
	double tolerance = TOLERANCE;
	int rc;

	test_interp_script(ti, "tests/targets/ft_parallel.py", script, sizeof(script));
	test_interp_shared_dir(ti, host, inside, sizeof(host));
	arg(&a, pystrobe_path());
	arg(&a, "record");
	args(&a, (char *const[]){ "--threads", "-r", RATE, "-f", "collapsed", "-o", "-", "--",
				  NULL });
	arg_python(&a, ti);
	args(&a, (char *const[]){ script, "--duration", DURATION, inside, NULL });
	rc = run_cmd(&r, 120 * 1000, a.v);
	snprintf(truth, sizeof(truth), "%s/truth.json", host);
	ck_assert_msg(rc == 0 && run_exit(&r) == 0, "%s: record: exit %d: %.2000s", ti->label,
		      run_exit(&r), r.err);
	rc = read_truth(truth, cpu, wall);
	ck_assert_msg(rc != 0, "%s: the target ran with a GIL (sys._is_gil_enabled())",
		      ti->label);
	ck_assert_msg(rc > 0, "%s: %s is not the target's truth", ti->label, truth);
	folded_parse(r.out, &f);
	for (int i = 1; i <= THREADS; i++) {
		got[i] = thread_samples(&f, i);
		total += cpu[i];
		busy += wall[i];
		samples += got[i];
	}
	ck_assert_msg(samples > 0 && total > 0 && busy > 0, "%s: no samples of w1..w8 in work() "
		      "(%.0f) or no CPU in them (%.2f s):\n%.2000s", ti->label, samples, total, r.err);
	folded_free(&f);
	rm_rf(host);
	/* Threads whose stacks move while read, in parallel: none lost. */
	summary = record_summary(r.err);
	if (!summary || !strstr(summary, ", no errors"))
		msg_add(msg, "%s: record lost samples: %s", ti->label, summary);
	if (!kept_rate(&r)) {
		printf("parallel: %s: short of the rate (%s): %s\n", ti->label,
		       summary, last ? "judged at the loose tolerance" : "again");
		if (!last) {
			run_free(&r);
			return 0;
		}
		tolerance = LOOSE_TOLERANCE;
	}
	run_free(&r);
	judge(ti, cpu, wall, got, tolerance,
	      skew(cpu, total, wall, busy) <= DISTURB_SKEW, msg);
	if (tolerance != TOLERANCE)
		test_skip("parallel: %s: pystrobe under 90%% of %s Hz in every run: held to %.0f "
			  "points, not %.0f", ti->label, RATE, LOOSE_TOLERANCE, TOLERANCE);
	return 1;
}

START_TEST(test_parallel_shares)
{
	const struct test_interp *ti = &interps[_i];
	char *msg = NULL;
	int tries = 0;

	if (!strstr(ti->label, "t ft-build"))
		return;
	while (!one_run(ti, &msg, ++tries == TRIES))
		;
	fail_if_any(msg, "record's share of each thread");
}
END_TEST

/* dump --json [opt] of the parked target against its own view; NULL, or
 * what differs. */
static char *dump_compared(const struct test_interp *ti, struct target *t, const char *opt,
			   const char *flag)
{
	char pid[16], path[PATH_MAX + 32], script[PATH_MAX + 32], how[96], *msg = NULL;
	struct run r, c;
	char *argv[] = { (char *)test_python3(), script, (char *)flag, t->truth, path, NULL };

	const char *what = opt ? opt : "(paused)";

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(path, sizeof(path), "%s/dump.json", t->dir);
	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	if (run_pystrobe(&r, "dump", "--json", "--pid", pid, opt, NULL) < 0 || run_exit(&r) != 0 ||
	    write_file(path, r.out, r.out_len) < 0) {
		msg_add(&msg, "%s: dump %s: %s: %.1500s", ti->label, what,
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return msg;
	}
	run_free(&r);
	if (proc_stopped_thread(t->py_pid, &(char){ 0 }))
		msg_add(&msg, "%s: dump %s left a thread stopped", ti->label, what);
	if (run_cmd(&c, RUN_TIMEOUT_MS, argv) < 0 || run_exit(&c) != 0)
		msg_add(&msg, "%s: dump %s: compare_dump.py %s:\n%s%s", ti->label, what,
			run_describe(&c, how, sizeof(how)), c.out, c.err);
	else
		printf("parallel: %s: dump %s: %s", ti->label, what, c.out);
	run_free(&c);
	return msg;
}

/* dump of 8 threads spinning at once (ft_parallel.py --park): equal to
 * the target's own sys._current_frames(), every worker attached and
 * active, the main thread detached and idle; paused, the workers'
 * innermost lines are spin()'s; not paused (--nonblocking), only what
 * cannot move (ident, name, tid) must agree for them. */
START_TEST(test_parallel_dump)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], *msg = NULL, *m;
	struct target t;

	if (!strstr(ti->label, "t ft-build"))
		return;
	if (target_start_script_arg(&t, ti, "tests/targets/ft_parallel.py", "--park", why,
				    sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: ft_parallel.py --park: %s", ti->label, why);
	}
	m = slurp(t.truth);
	ck_assert_msg(m && strstr(m, "\"gil\": false"), "%s: the target ran with a GIL: %s",
		      ti->label, m);
	free(m);
	for (int i = 0; i < 3; i++) {
		if ((m = dump_compared(ti, &t, NULL, "--no-extra")))
			msg_add(&msg, "%s", m);
		free(m);
	}
	if ((m = dump_compared(ti, &t, "--nonblocking", "--loose-moving")))
		msg_add(&msg, "%s", m);
	free(m);
	target_stop(&t);
	fail_if_any(msg, "dump of threads running at once");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("parallel");
	TCase *tc = tcase_create("interpreters"), *td = tcase_create("dump");
	int ft = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	for (int i = 0; i < ninterps; i++)
		ft += strstr(interps[i].label, "t ft-build") != NULL;
	if (!ft)
		test_skip("parallel: no free-threaded interpreter: tests/setup-ft-python.sh "
			  "builds it");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_parallel_shares, 0, ninterps);
	tcase_set_timeout(td, 120);
	tcase_add_loop_test(td, test_parallel_dump, 0, ninterps);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, td);
	return run_suite(s);
}
