/* Torn stacks must not bias the profile, on every Python this machine has.
 *
 * tests/targets/torn_calls.py runs two busy threads that take turns at the
 * GIL: "caller" calls tiny functions in a loop, so that a stack read while
 * it runs is torn most of the time (its innermost frames change every few
 * tens of nanoseconds), and "spinner" counts in one frame and is never
 * torn.  Each keeps its own CPU clock (time.thread_time()), which the script
 * writes down every 0.05 s (truth.json).  `pystrobe record --pid` of it, in
 * the default non-blocking mode at RATE, must give each thread its share of
 * the CPU the target's clocks counted while it was recorded, within
 * TOLERANCE points.  A sampler that drops a torn stack, rather than reading
 * it again until it is proved, gives the caller 8 to 10 points too few.
 *
 * A sampler sees a thread that is runnable, running or not: on a loaded
 * machine a thread waiting for a CPU is sampled while its CPU clock stands
 * still.  The test also reads the kernel's account of each thread
 * (/proc/PID/task/TID/schedstat: time on a CPU and time runnable waiting
 * for one) before and after: when the shares of that and of the CPU clocks
 * differ by more than DISTURB_SKEW points, or pystrobe fell below 80% of its
 * rate, the run proves little and is run again, up to TRIES times; the last
 * must then match one of the two within TOLERANCE.  Both are about 50/50
 * for this target, so a sampler that under-counts the caller fails either
 * way.
 */
#include <check.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define RATE		"1000"	/* Hz: the default mode's usual rate */
#define SECONDS		"5"	/* of a recording: about 2500 samples each */
#define TOLERANCE	3.0	/* points of share between profile and truth */
#define DISTURB_SKEW	1.5	/* points between the CPU and runnable truths */
#define TRIES		3	/* recordings of an interpreter while disturbed */
#define MIN_SAMPLES	2000	/* of the two threads, for a run to count */

static const struct test_interp *interps;
static int ninterps;
static const char *const names[2] = { "caller", "spinner" };

/* One look at the target: what its clocks and the kernel say. */
struct look {
	double cpu[2];		/* its own CPU clocks, s */
	double runnable[2];	/* on a CPU or waiting for one, s; -1 unknown */
};

struct torn_run {
	uint64_t samples[2];	/* with caller(), spinner() */
	uint64_t no_line;	/* with a frame of torn_calls.py at no line */
	struct look before, after;
	unsigned long long rounds, torn;
	double elapsed;
};

/* Does a frame of the stack start with prefix? */
static bool has_frame(const char *stack, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = stack; p;) {
		if (!strncmp(p, prefix, n))
			return true;
		p = strchr(p, ';');
		if (p)
			p++;
	}
	return false;
}

static void tally(const char *text, struct torn_run *tr)
{
	char prefix[32];
	struct folded f;

	ck_assert_msg(folded_parse(text, &f) == 0, "malformed collapsed output: %.500s", text);
	for (size_t i = 0; i < f.n; i++)
		for (int k = 0; k < 2; k++) {
			snprintf(prefix, sizeof(prefix), "%s (", names[k]);
			if (has_frame(f.stacks[i], prefix))
				tr->samples[k] += f.counts[i];
		}
	/* Every instruction of the target's functions has a line: a frame
	 * without one paired a function with another's instruction pointer
	 * (a frame pushed where one had just returned, read half written). */
	for (size_t i = 0; i < f.n; i++)
		if (strstr(f.stacks[i], " (torn_calls.py)"))
			tr->no_line += f.counts[i];
	folded_free(&f);
}

/* The number after "key": in truth.json's object `obj` (NULL: anywhere);
 * -1 when absent. */
static double truth_num(const char *truth, const char *obj, const char *key)
{
	char pat[40];
	const char *p = truth;

	if (p && obj) {
		snprintf(pat, sizeof(pat), "\"%s\"", obj);
		p = strstr(p, pat);
	}
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = p ? strstr(p, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* Seconds on a CPU plus waiting for one, by the kernel: -1 unknown. */
static double runnable_s(pid_t pid, double tid)
{
	unsigned long long run, wait;
	char path[96], *text;
	double s = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	text = tid > 0 ? slurp(path) : NULL;
	if (text && sscanf(text, "%llu %llu", &run, &wait) == 2)
		s = (run + wait) / 1e9;
	free(text);
	return s;
}

static void look(struct target *t, struct look *lk)
{
	char *truth = slurp(t->truth);

	ck_assert_msg(truth, "%s: torn_calls.py has no truth.json", t->ti->label);
	for (int k = 0; k < 2; k++) {
		lk->cpu[k] = truth_num(truth, "cpu", names[k]);
		lk->runnable[k] = runnable_s(t->py_pid, truth_num(truth, "tids", names[k]));
	}
	free(truth);
}

static void parse_summary(const char *err, struct torn_run *tr)
{
	const char *p = record_summary(err);
	const char *torn = err ? strstr(err, " discarded: the stack changed") : NULL;

	if (p)
		sscanf(p, "pystrobe: %*u samples from %llu rounds in %lf s", &tr->rounds,
		       &tr->elapsed);
	/* ", M samples discarded: the stack changed...": M follows the comma. */
	while (torn && torn > err && torn[-1] != ',')
		torn--;
	if (torn)
		tr->torn = strtoull(torn, NULL, 10);
}

/* Record the target once, looking at it before and after. */
static void record(struct target *t, struct torn_run *tr)
{
	char out[PATH_MAX + 32], pid[16];
	struct run r;
	char *text;

	memset(tr, 0, sizeof(*tr));
	snprintf(out, sizeof(out), "%s/profile.txt", t->dir);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	look(t, &tr->before);
	ck_assert_msg(run_pystrobe(&r, "record", "-r", RATE, "-d", SECONDS, "-f", "collapsed",
				   "-o", out, "--pid", pid, NULL) == 0,
		      "%s: cannot run pystrobe", t->ti->label);
	look(t, &tr->after);
	printf("torn: %s: %s", t->ti->label, r.err ? r.err : "(nothing on stderr)\n");
	ck_assert_msg(run_exit(&r) == 0, "%s: record exited %d: %s", t->ti->label,
		      run_exit(&r), r.err);
	text = slurp(out);
	ck_assert_msg(text, "%s: no profile at %s", t->ti->label, out);
	tally(text, tr);
	parse_summary(r.err, tr);
	free(text);
	unlink(out);
	run_free(&r);
}

/* The caller's share, in points, of what grew from x[] to y[] (caller,
 * spinner); -1 when unknown. */
static double share(const double x[2], const double y[2])
{
	double c = y[0] - x[0], s = y[1] - x[1];

	if (x[0] < 0 || x[1] < 0 || y[0] < 0 || y[1] < 0 || c + s <= 0)
		return -1;
	return 100 * c / (c + s);
}

/* Why the run proves little, or NULL. */
static const char *disturbed(const struct torn_run *tr, double cpu, double runnable)
{
	if (tr->elapsed <= 0 || tr->rounds < 0.8 * atof(RATE) * tr->elapsed)
		return "pystrobe sampled below 80% of its rate";
	if (tr->samples[0] + tr->samples[1] < MIN_SAMPLES)
		return "too few samples of the two threads";
	if (runnable >= 0 && fabs(cpu - runnable) > DISTURB_SKEW)
		return "the threads waited for a CPU unevenly";
	return NULL;
}

/* The first two CPUs this test may use into cpus[]; false when there is
 * only one. */
static bool two_cpus(const cpu_set_t *all, int cpus[2])
{
	int n = 0;

	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, all))
			cpus[n++] = i;
	return n == 2;
}

/* Run this process, and what it starts from now on, on one CPU. */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_msg(sched_setaffinity(0, sizeof(set), &set) == 0, "cannot pin to CPU %d", cpu);
}

START_TEST(test_torn)
{
	const struct test_interp *ti = &interps[_i];
	double got, cpu, runnable, off;
	char script[PATH_MAX], why[512];
	const char *noise = NULL;
	struct torn_run tr;
	struct target t;
	cpu_set_t all;
	int cpus[2];
	bool pinned;

	test_interp_script(ti, "tests/targets/torn_calls.py", script, sizeof(script));
	/* The target on one CPU, pystrobe on another: a stack tears only
	 * when its thread runs while it is read, which a loaded machine
	 * might otherwise seldom let happen. */
	ck_assert(sched_getaffinity(0, sizeof(all), &all) == 0);
	pinned = two_cpus(&all, cpus);
	if (pinned)
		pin(cpus[0]);
	if (target_start(&t, ti, why, sizeof(why), script, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: torn_calls.py: %s", ti->label, why);
	}
	if (pinned)
		pin(cpus[1]);
	printf("torn: %s: %s\n", ti->label, pinned ? "the target on one CPU, pystrobe on another"
						  : "one CPU: nothing pinned");
	for (int try = 1; try <= TRIES; try++) {
		record(&t, &tr);
		got = 100.0 * tr.samples[0] / (tr.samples[0] + tr.samples[1] + !tr.samples[0]);
		cpu = share(tr.before.cpu, tr.after.cpu);
		runnable = share(tr.before.runnable, tr.after.runnable);
		off = fabs(got - cpu);
		noise = disturbed(&tr, cpu, runnable);
		printf("torn: %s: caller %.1f%% of the profile (%llu of %llu samples), %.1f%% "
		       "of the CPU, %.1f%% of the time runnable; %llu torn%s%s\n", ti->label,
		       got, (unsigned long long)tr.samples[0],
		       (unsigned long long)(tr.samples[0] + tr.samples[1]), cpu, runnable,
		       tr.torn, noise ? "; disturbed: " : "", noise ? noise : "");
		if (off <= TOLERANCE || !noise)
			break;
		if (try == TRIES && runnable >= 0 && fabs(got - runnable) < off) {
			printf("torn: %s: WARNING: still disturbed; judged by the runnable "
			       "time\n", ti->label);
			off = fabs(got - runnable);
		}
	}
	target_stop(&t);
	sched_setaffinity(0, sizeof(all), &all);
	ck_assert_msg(cpu > 0 && tr.samples[0] && tr.samples[1], "%s: a thread is missing "
		      "(caller %llu, spinner %llu samples; CPU share %.1f)", ti->label,
		      (unsigned long long)tr.samples[0], (unsigned long long)tr.samples[1], cpu);
	ck_assert_msg(!tr.no_line, "%s: %llu samples show a frame of torn_calls.py at no "
		      "line: a torn frame was counted", ti->label,
		      (unsigned long long)tr.no_line);
	ck_assert_msg(off <= TOLERANCE, "%s: the caller has %.1f%% of the profile, %.1f%% of "
		      "the CPU, %.1f%% of the runnable time: %.1f points off, at most %.1f "
		      "allowed (%llu torn stacks)", ti->label, got, cpu, runnable, off, TOLERANCE,
		      tr.torn);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torn");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	printf("torn: pystrobe is %s\n", pystrobe_path());
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_torn, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
