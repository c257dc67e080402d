/* `pystrobe record` against live targets, on every Python this machine has.
 *
 * tests/targets/burn.py burns its CPU in burn_a(), burn_b() and burn_c() in
 * a 60/30/10 split of its own thread CPU clock and writes down what each
 * actually got (truth.json).  The profile's shares of the three must come
 * within TOLERANCE points of those, recording a launched command and a
 * running process (--pid), each without and with --blocking.  Every
 * interpreter runs launch and --pid; a few (full_modes(), or all with
 * PYSTROBE_RECORD_FULL=1) also run both with --blocking, which keeps the
 * whole file within about three minutes.  A run the machine disturbed (the
 * target starved of CPU, or pystrobe of its rate) is tried again; see
 * judge_shares().
 *
 * No wall-clock limit here is one another job on the machine could break:
 * --duration is judged by pystrobe's own account (no round after the
 * duration, none short of it), and the time from a launched target's exit
 * to pystrobe's is held to EXIT_SLACK over what it is, at that moment, for
 * the same target run without pystrobe.
 *
 * Around that: --duration is honoured, SIGINT (and SIGTERM) stop a --pid
 * recording cleanly, the end of a launched command ends the recording and
 * its exit status (or 128 + signal) is pystrobe's, also when the command
 * exits while --blocking has it paused, and --gil, --idle, --threads and
 * --function do what they say, against a burn.py with a second busy thread
 * and a sleeping one.  No run may leave a thread of the target stopped.
 *
 * Failures are collected while the targets run and reported for each
 * interpreter at the end, so that every check is judged and nothing is left
 * behind.  PYSTROBE_BIN overrides the binary ($PYSTROBE_BUILDDIR/pystrobe).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define RATE		"200"	/* Hz: 600 samples in an accuracy run */
#define HIGH_RATE	"20000"	/* Hz: the pid accuracy run again, on 3.12 and 3.14 */
#define ACC_SECONDS	3.0	/* length of an accuracy run */
#define TOLERANCE	3.0	/* points of share between profile and truth */
#define LOOSE_TOLERANCE	10.0	/* the same on a machine too loaded for that */
#define DISTURB_SKEW	1.5	/* points between the CPU and wall truths */
#define ACC_TRIES	3	/* runs of an accuracy mode, while disturbed */
#define OPT_SECONDS	"0.8"	/* length of the option runs */
#define EXIT_SLACK	1.0	/* seconds from the target's exit to ours, over
				 * the same unprofiled (see exit_latency_alone()) */
#define SIGNAL_AFTER_MS	800	/* how long a recording samples before SIGINT */
#define STOP_TIMEOUT_MS	20000	/* after SIGINT, pystrobe must be gone by then */
#define EXIT_TIMEOUT_MS	30000	/* a short launched run, start to end */
#define EXIT_PAUSED_TRIES 3	/* launches that exit under --blocking */

static const struct test_interp *interps;
static int ninterps;

static const char *const funcs[3] = { "burn_a", "burn_b", "burn_c" };

struct rec_test {
	const struct test_interp *ti;
	char script[PATH_MAX];	/* burn.py as the interpreter names it */
	bool full;		/* also the --blocking accuracy modes */
	const char *rate;	/* -r of the runs, RATE unless changed */
	int nout;		/* output files made, for unique names */
	char *failures;
};

/* --- small helpers -------------------------------------------------------- */

static void flunk(struct rec_test *d, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Every failure names the interpreter, so that each line of a report stands
 * on its own. */
static void flunk(struct rec_test *d, const char *what, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	msg_add(&d->failures, "%s: %s: %s", d->ti->label, what,
		line ? line : "?");
	free(line);
}

/* The number after "key": in JSON that burn.py wrote (json.dump puts a
 * space after the colon); searching starts at from.  -1 if absent or null. */
static int json_num(const char *from, const char *key, double *out)
{
	char pat[64], *end;
	const char *p;

	if (!from)
		return -1;
	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(from, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	while (*p == ' ' || *p == '\n')
		p++;
	if (*p++ != ':')
		return -1;
	*out = strtod(p, &end);
	return end == p ? -1 : 0;
}

/* --- collapsed output ----------------------------------------------------- */

/* Calls fn for each "frame;frame;...;leaf COUNT" line; returns the number of
 * lines that are not of that form. */
static int each_line(const char *text,
		     void (*fn)(void *arg, const char *stack, size_t len,
				uint64_t count),
		     void *fnarg)
{
	const char *line = text;
	int bad = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *sp = NULL;
		char *end;
		uint64_t count;

		for (const char *p = line; p < line + len; p++)
			if (*p == ' ')
				sp = p;
		if (!sp || sp == line || sp + 1 == line + len) {
			bad++;
		} else {
			count = strtoull(sp + 1, &end, 10);
			if (end != line + len)
				bad++;
			else
				fn(fnarg, line, sp - line, count);
		}
		line = nl ? nl + 1 : NULL;
	}
	return bad;
}

/* Whether a frame of the stack starts with prefix. */
static bool has_frame(const char *stack, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	for (size_t i = 0; i + n <= len; i++) {
		if (i && stack[i - 1] != ';')
			continue;
		if (!memcmp(stack + i, prefix, n))
			return true;
	}
	return false;
}

struct tally {
	uint64_t total;		/* every sample */
	uint64_t fn[3];		/* samples of stacks with burn_a, _b, _c */
	uint64_t burn;		/* samples of stacks with any of them */
	uint64_t idle;		/* samples of stacks with idle_sleep */
	int bad;		/* malformed lines */
};

static void tally_line(void *arg, const char *stack, size_t len, uint64_t count)
{
	struct tally *t = arg;
	char prefix[32];
	bool any = false;

	t->total += count;
	for (int i = 0; i < 3; i++) {
		/* "burn_a (": the frame, whatever its file and line. */
		snprintf(prefix, sizeof(prefix), "%s (", funcs[i]);
		if (has_frame(stack, len, prefix)) {
			t->fn[i] += count;
			any = true;
		}
	}
	if (any)
		t->burn += count;
	if (has_frame(stack, len, "idle_sleep ("))
		t->idle += count;
}

static struct tally tally_of(const char *text)
{
	struct tally t = { 0 };

	t.bad = each_line(text, tally_line, &t);
	return t;
}

/* --- running pystrobe ----------------------------------------------------- */

struct rec_run {
	struct run r;
	double start, end;	/* monotonic, around the run */
	char out[PATH_MAX + 32];	/* the profile's path */
	char *profile;		/* its contents, NULL if there is none */
	struct tally t;
	/* From the summary line. */
	bool summary;
	unsigned long long rounds, stacks;
	double elapsed;
	double max_lag_s;	/* "fell behind ... (up to X ms late", or 0 */
	double exit_alone;	/* launched: exit_latency_alone() just before */
	bool late_exit;		/* launched: slower to exit than EXIT_SLACK allows,
				 * and the caller may try again */
};

static void rec_free(struct rec_run *rr)
{
	run_free(&rr->r);
	free(rr->profile);
	rr->profile = NULL;
}

/* "pystrobe: M samples from N rounds in X s, ..." */
static void parse_summary(struct rec_run *rr, const char *err)
{
	const char *p = record_summary(err), *lag;

	if (!p || sscanf(p, "pystrobe: %llu samples from %llu rounds in %lf s", &rr->stacks,
			 &rr->rounds, &rr->elapsed) != 3)
		return;
	lag = strstr(p, "fell behind");
	lag = lag ? strstr(lag, "(up to ") : NULL;
	if (lag && sscanf(lag, "(up to %lf ms", &rr->max_lag_s) == 1)
		rr->max_lag_s /= 1000;
	rr->summary = true;
}

static void read_profile(struct rec_test *d, const char *what,
			 struct rec_run *rr)
{
	rr->profile = slurp(rr->out);
	if (!rr->profile)
		return;
	rr->t = tally_of(rr->profile);
	if (rr->t.bad)
		flunk(d, what, "%d malformed lines in the collapsed output",
		      rr->t.bad);
}

static void new_out(struct rec_test *d, const char *dir, struct rec_run *rr)
{
	snprintf(rr->out, sizeof(rr->out), "%s/profile-%d.txt", dir, d->nout++);
}

/* pystrobe record -r RATE -f collapsed -o OUT EXTRA..., run to the end or
 * killed after timeout_ms; returns whether it could be run at all. */
static bool record_within(struct rec_test *d, const char *what,
			  const char *dir, struct rec_run *rr,
			  char *const *extra, int timeout_ms)
{
	struct argv_buf a = { .n = 0 };

	memset(rr, 0, sizeof(*rr));
	new_out(d, dir, rr);
	arg(&a, pystrobe_path());
	arg(&a, "record");
	arg(&a, "-r");
	arg(&a, d->rate);
	arg(&a, "-f");
	arg(&a, "collapsed");
	arg(&a, "-o");
	arg(&a, rr->out);
	args(&a, extra);
	rr->start = now_s();
	if (run_cmd(&rr->r, timeout_ms, a.v) < 0) {
		flunk(d, what, "cannot run %s: %s", pystrobe_path(),
		      strerror(errno));
		return false;
	}
	rr->end = now_s();
	parse_summary(rr, rr->r.err);
	read_profile(d, what, rr);
	return true;
}

static bool record(struct rec_test *d, const char *what, const char *dir,
		   struct rec_run *rr, char *const *extra)
{
	return record_within(d, what, dir, rr, extra, RUN_TIMEOUT_MS);
}

static void fail_run(struct rec_test *d, const char *what,
		     const struct rec_run *rr, const char *why)
{
	char how[96];

	flunk(d, what, "%s: pystrobe %s; stderr: %.1500s", why,
	      run_describe(&rr->r, how, sizeof(how)), rr->r.err);
}

/* Exit code as expected, a summary, a profile with samples in it. */
static bool check_run(struct rec_test *d, const char *what,
		      const struct rec_run *rr, int want_exit)
{
	char why[64];

	if (run_exit(&rr->r) != want_exit) {
		snprintf(why, sizeof(why), "want exit %d", want_exit);
		fail_run(d, what, rr, why);
		return false;
	}
	if (!rr->summary)
		fail_run(d, what, rr, "no summary line");
	if (!strstr(rr->r.err, "; wrote "))
		fail_run(d, what, rr, "the summary does not say it wrote the file");
	if (!rr->profile) {
		flunk(d, what, "no profile at %s", rr->out);
		return false;
	}
	if (!rr->t.burn) {
		flunk(d, what, "no burn_* samples in the profile (%llu samples): %.800s",
		      (unsigned long long)rr->t.total, rr->profile);
		return false;
	}
	return true;
}

/* --- targets -------------------------------------------------------------- */

/* A --pid target: burn.py --forever OPTS, up and steady. */
static bool start_burner(struct rec_test *d, const char *what,
			 struct target *t, const char *opt1, const char *opt2)
{
	char why[512], path[PATH_MAX + 32], *text;
	double v;
	int rc;

	if (opt1 && opt2)
		rc = target_start(t, d->ti, why, sizeof(why), d->script,
				  "--forever", opt1, opt2, NULL);
	else
		rc = target_start(t, d->ti, why, sizeof(why), d->script,
				  "--forever", NULL);
	if (rc < 0) {
		flunk(d, what, "burn.py: %s", why);
		return false;
	}
	if (target_wait_file(t, "ready.json", TARGET_READY_MS, why,
			     sizeof(why)) < 0 ||
	    target_wait_file(t, "truth.json", TARGET_READY_MS, why,
			     sizeof(why)) < 0) {
		flunk(d, what, "burn.py: %s", why);
		target_stop(t);
		return false;
	}
	snprintf(path, sizeof(path), "%s/ready.json", t->dir);
	text = slurp(path);
	/* A shim or chroot execs in place, so these agree; should one ever
	 * fork instead, record the Python process, not its parent. */
	if (json_num(text, "pid", &v) == 0 && v > 0)
		t->py_pid = (pid_t)v;
	if (json_num(text, "nthreads", &v) == 0)
		t->nthreads = (int)v;
	free(text);
	return true;
}

/* No thread of the target stopped, none gone, the process alive. */
static void check_target(struct rec_test *d, const char *what,
			 struct target *t)
{
	char state = 0;
	pid_t tid = proc_stopped_thread(t->py_pid, &state);
	int n = proc_thread_count(t->py_pid);
	char s = proc_state(t->py_pid, t->py_pid);

	if (tid)
		flunk(d, what, "thread %d of the target left stopped (state %c)",
		      tid, state);
	if (!t->reaped && waitpid(t->pid, &t->status, WNOHANG) == t->pid)
		t->reaped = 1;
	if (t->reaped || n < 0 || s == 'Z' || s == 'X')
		flunk(d, what, "the target is gone after the recording");
	else if (t->nthreads > 0 && n != t->nthreads)
		flunk(d, what, "the target has %d threads, had %d", n,
		      t->nthreads);
}

struct truth {
	double cpu[3], wall[3];
	double rounds, end_mono;
};

static int read_truth(const char *dir, struct truth *tr)
{
	char path[PATH_MAX + 32], *text;
	const char *cpu, *wall;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/truth.json", dir);
	text = slurp(path);
	if (!text)
		return -1;
	cpu = strstr(text, "\"cpu\"");
	wall = strstr(text, "\"wall\"");
	for (int i = 0; i < 3; i++) {
		const char *key = (const char *[]){ "a", "b", "c" }[i];

		if (json_num(cpu, key, &tr->cpu[i]) < 0 ||
		    json_num(wall, key, &tr->wall[i]) < 0)
			rc = -1;
	}
	if (json_num(text, "rounds", &tr->rounds) < 0 ||
	    json_num(text, "end_mono", &tr->end_mono) < 0)
		rc = -1;
	free(text);
	return rc;
}

/* --- accuracy ------------------------------------------------------------- */

static double share(const double v[3], int i)
{
	double sum = v[0] + v[1] + v[2];

	return sum > 0 ? 100 * v[i] / sum : 0;
}

enum verdict { GOOD, BAD, DISTURBED };

static double off_by(const double a[3], const double b[3])
{
	double worst = 0;

	for (int i = 0; i < 3; i++)
		worst = fmax(worst, fabs(a[i] - b[i]));
	return worst;
}

/* The profile's shares of burn_a/b/c against the target's own CPU clock.
 *
 * The profile counts wall time (a runnable thread is sampled whether or not
 * it has a CPU), the truth CPU time.  On a machine that is not starving the
 * target the two agree; on one that is (other suites, stray spinners) a
 * burn_b that waits two seconds for a CPU is two seconds of burn_b to a
 * sampler and 15 ms to the truth, and a starved pystrobe wakes when the
 * scheduler lets it, not when it asked.  A run that misses is then
 * DISTURBED, not BAD: it proves nothing either way and is tried again.
 * When the last try is disturbed too, the profile must still match one of
 * the two truths within TOLERANCE, or come within LOOSE_TOLERANCE of one
 * (the log says the machine was overloaded): a profiler that gets the
 * functions wrong is caught on any machine, a 3-point check needs a machine
 * that is not oversubscribed. */
static enum verdict judge_shares(struct rec_test *d, const char *what,
				 const struct rec_run *rr,
				 const struct truth *tr, double window_s,
				 bool last, bool *loaded)
{
	double got[3], want[3], wall[3], cpu = 0, skew, best;
	double rate = atof(d->rate), achieved;
	uint64_t n = rr->t.fn[0] + rr->t.fn[1] + rr->t.fn[2];
	double v[3] = { (double)rr->t.fn[0], (double)rr->t.fn[1],
			(double)rr->t.fn[2] };
	char why[128] = "";

	for (int i = 0; i < 3; i++) {
		got[i] = share(v, i);
		want[i] = share(tr->cpu, i);
		wall[i] = share(tr->wall, i);
		cpu += tr->cpu[i];
	}
	skew = off_by(want, wall);
	achieved = rr->elapsed > 0 ? rr->rounds / rr->elapsed : 0;
	printf("record: %s: %s: a %.1f b %.1f c %.1f (truth %.1f/%.1f/%.1f; "
	       "wall %.1f/%.1f/%.1f; %llu samples in %llu rounds, %.0f Hz; "
	       "target had %.0f%% of a CPU)\n",
	       d->ti->label, what, got[0], got[1], got[2], want[0], want[1],
	       want[2], wall[0], wall[1], wall[2], (unsigned long long)n,
	       rr->rounds, achieved, window_s > 0 ? 100 * cpu / window_s : 0);

	if (n < 100 && achieved >= 0.8 * rate) {
		flunk(d, what, "only %llu samples of burn_a/b/c",
		      (unsigned long long)n);
		return BAD;
	}
	if (skew > DISTURB_SKEW)
		snprintf(why, sizeof(why), "the target's CPU and wall-clock "
			 "shares differ by %.1f points", skew);
	else if (achieved < 0.8 * rate)
		snprintf(why, sizeof(why), "pystrobe sampled at %.0f Hz of %.0f",
			 achieved, rate);
	*loaded = why[0] != 0;
	if (n >= 100 && off_by(got, want) <= TOLERANCE)
		return GOOD;
	if (!why[0]) {
		flunk(d, what, "shares a %.1f b %.1f c %.1f, truth %.1f/%.1f/%.1f "
		      "(off by %.1f points, at most %.1f allowed; wall-clock "
		      "truth %.1f/%.1f/%.1f)", got[0], got[1], got[2], want[0],
		      want[1], want[2], off_by(got, want), TOLERANCE, wall[0],
		      wall[1], wall[2]);
		return BAD;
	}
	if (!last) {
		printf("record: %s: %s: disturbed (%s): again\n", d->ti->label,
		       what, why);
		return DISTURBED;
	}
	best = fmin(off_by(got, want), off_by(got, wall));
	if (best <= TOLERANCE && n >= 100)
		return GOOD;
	if (best <= LOOSE_TOLERANCE) {
		printf("record: %s: %s: WARNING: still disturbed (%s), %.1f points "
		       "off: the machine is too loaded to hold pystrobe to %.1f "
		       "points\n", d->ti->label, what, why, best, TOLERANCE);
		return GOOD;
	}
	flunk(d, what, "shares a %.1f b %.1f c %.1f, %.1f points from the CPU "
	      "truth %.1f/%.1f/%.1f and %.1f from the wall-clock truth "
	      "%.1f/%.1f/%.1f (each of %d runs disturbed: %s)", got[0], got[1],
	      got[2], off_by(got, want), want[0], want[1], want[2],
	      off_by(got, wall), wall[0], wall[1], wall[2], ACC_TRIES, why);
	return BAD;
}

/* A directory shared with a launched target: struct target's, so that
 * target_stop() removes it (it has no process to kill). */
static bool launch_dir(struct rec_test *d, const char *what, struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->ti = d->ti;
	test_interp_shared_dir(d->ti, t->dir, t->dir_inside, sizeof(t->dir));
	if (!t->dir[0]) {
		flunk(d, what, "cannot make a shared directory: %s",
		      strerror(errno));
		return false;
	}
	return true;
}

/* How long after burn.py's end_mono (it then _exits at once) its parent
 * sees it gone, run without pystrobe, now: what the machine's load makes
 * of a process's exit and its parent's wake-up, the part of pystrobe's
 * time after its target's exit that is not pystrobe's doing.  0 when it
 * cannot be run. */
static double exit_latency_alone(struct rec_test *d)
{
	struct argv_buf a = { .n = 0 };
	struct target t;
	struct truth tr;
	struct run r;
	double lat = 0, end;

	if (!launch_dir(d, "exit alone", &t))
		return 0;
	arg_python(&a, d->ti);
	arg(&a, d->script);
	arg(&a, "--duration");
	arg(&a, "0.05");
	arg(&a, t.dir_inside);
	if (run_cmd(&r, RUN_TIMEOUT_MS, a.v) == 0) {
		end = now_s();
		if (run_exit(&r) == 0 && read_truth(t.dir, &tr) == 0 && end > tr.end_mono)
			lat = end - tr.end_mono;
		run_free(&r);
	}
	target_stop(&t);
	return lat;
}

/* pystrobe record OPTS... -- python burn.py BURN_ARGS... OUTDIR, killed
 * after timeout_ms; the launched target's truth.json in *tr.  Returns
 * whether both are there.  An exit slower than EXIT_SLACK allows fails,
 * unless may_retry: then rr->late_exit says the caller should run it again
 * (the unprofiled measure is one run, and another job on the machine can
 * delay any one exit, pystrobe's or the measure's, by a second). */
static bool launch(struct rec_test *d, const char *what, struct target *t,
		   struct rec_run *rr, char *const *opts, char *const *burn_args,
		   int want_exit, int timeout_ms, struct truth *tr, bool may_retry)
{
	struct argv_buf a = { .n = 0 };
	double alone = exit_latency_alone(d);
	bool ok;

	args(&a, opts);
	arg(&a, "--");
	arg_python(&a, d->ti);
	arg(&a, d->script);
	args(&a, burn_args);
	arg(&a, t->dir_inside);
	if (!record_within(d, what, t->dir, rr, a.v, timeout_ms))
		return false;
	rr->exit_alone = alone;
	ok = check_run(d, what, rr, want_exit);
	if (read_truth(t->dir, tr) < 0) {
		flunk(d, what, "burn.py wrote no truth.json; pystrobe stderr: %.1500s",
		      rr->r.err);
		return false;
	}
	/* The target's exit ends the recording: pystrobe must not go on
	 * sampling a dead process, nor wait for anything else. */
	rr->late_exit = rr->end - tr->end_mono > EXIT_SLACK + alone;
	if (rr->late_exit && may_retry)
		printf("record: %s: %s: pystrobe returned %.2f s after the target exited "
		       "(%.2f s without pystrobe): again\n", d->ti->label, what,
		       rr->end - tr->end_mono, alone);
	else if (rr->late_exit)
		flunk(d, what, "pystrobe returned %.2f s after the target exited "
		      "(at most %.1f s allowed: %.1f, and %.2f s as it takes without "
		      "pystrobe)", rr->end - tr->end_mono, EXIT_SLACK + alone, EXIT_SLACK,
		      alone);
	return ok;
}

static void accuracy_launch(struct rec_test *d, bool blocking)
{
	char what[64], duration[16];
	enum verdict v = DISTURBED;

	snprintf(duration, sizeof(duration), "%.1f", ACC_SECONDS);
	for (int try = 1; try <= ACC_TRIES && v == DISTURBED; try++) {
		struct rec_run rr;
		struct target t;
		struct truth tr;
		bool loaded;

		snprintf(what, sizeof(what), "launch %s%s",
			 blocking ? "--blocking" : "nonblocking",
			 try > 1 ? ", again" : "");
		if (!launch_dir(d, what, &t))
			return;
		v = BAD;
		if (launch(d, what, &t, &rr,
			   (char *[]){ blocking ? "--blocking" : NULL, NULL },
			   (char *[]){ "--duration", duration, NULL }, 0,
			   RUN_TIMEOUT_MS, &tr, try < ACC_TRIES))
			v = judge_shares(d, what, &rr, &tr, ACC_SECONDS,
					 try == ACC_TRIES, &loaded);
		if (v != BAD && rr.late_exit && try < ACC_TRIES)
			v = DISTURBED;
		rec_free(&rr);
		target_stop(&t);
	}
}

/* --duration: sampling stops when asked: never short of it, and no round
 * after it (rounds fall on a grid of intervals from the start: at most
 * one per interval, and one more at the start).  Wall time is printed,
 * not judged: a starved pystrobe, or one whose exit waits for a CPU, takes
 * longer, as any program would. */
static void check_duration(struct rec_test *d, const struct rec_run *rr,
			   bool loaded)
{
	double wall = rr->end - rr->start;
	double most = ACC_SECONDS * atof(d->rate) + 1;

	printf("record: %s: --duration %.1f: pystrobe took %.2f s, sampled for "
	       "%.2f s in %llu rounds, fell behind by at most %.3f s%s\n", d->ti->label,
	       ACC_SECONDS, wall, rr->elapsed, rr->rounds, rr->max_lag_s,
	       loaded ? " (machine overloaded)" : "");
	if (wall < ACC_SECONDS)
		flunk(d, "--duration", "asked for %.1f s, pystrobe took %.2f s",
		      ACC_SECONDS, wall);
	if (!rr->summary || rr->elapsed < ACC_SECONDS - 0.05 || rr->rounds > most)
		flunk(d, "--duration", "asked for %.1f s at %s Hz, the summary says it "
		      "sampled for %.2f s, %llu rounds (at most %.0f)", ACC_SECONDS, d->rate,
		      rr->elapsed, rr->rounds, most);
}

/* Record a running burn.py for ACC_SECONDS; without --blocking this is also
 * the --duration test. */
static void accuracy_pid(struct rec_test *d, struct target *t, bool blocking)
{
	char what[64], pid[16], duration[16];
	enum verdict v = DISTURBED;

	snprintf(pid, sizeof(pid), "%d", t->py_pid);
	snprintf(duration, sizeof(duration), "%.1f", ACC_SECONDS);
	for (int try = 1; try <= ACC_TRIES && v == DISTURBED; try++) {
		struct truth before, after, tr;
		struct rec_run rr;
		bool loaded;

		snprintf(what, sizeof(what), "pid %s%s%s%s",
			 blocking ? "--blocking" : "nonblocking",
			 strcmp(d->rate, RATE) ? " -r " : "",
			 strcmp(d->rate, RATE) ? d->rate : "", try > 1 ? ", again" : "");
		/* truth.json is rewritten every 0.2 s: the difference of a
		 * look before and one after is what the target did while
		 * it was recorded. */
		if (read_truth(t->dir, &before) < 0) {
			flunk(d, what, "cannot read truth.json before recording");
			return;
		}
		if (!record(d, what, t->dir, &rr,
			    (char *[]){ "--pid", pid, "-d", duration,
					blocking ? "--blocking" : NULL, NULL }))
			return;
		check_target(d, what, t);
		v = BAD;
		if (read_truth(t->dir, &after) < 0) {
			flunk(d, what, "cannot read truth.json after recording");
		} else if (check_run(d, what, &rr, 0)) {
			for (int i = 0; i < 3; i++) {
				tr.cpu[i] = after.cpu[i] - before.cpu[i];
				tr.wall[i] = after.wall[i] - before.wall[i];
			}
			v = judge_shares(d, what, &rr, &tr, rr.end - rr.start,
					 try == ACC_TRIES, &loaded);
			/* A disturbed run is run again, and judged then
			 * (--duration at the usual rate only). */
			if (!blocking && v != DISTURBED && !strcmp(d->rate, RATE))
				check_duration(d, &rr, loaded);
		}
		rec_free(&rr);
	}
}

/* --- stopping by signal --------------------------------------------------- */

/* Start `pystrobe record` on the side, stderr to a file, so that the test
 * can signal it while it runs.  sh execs pystrobe in place: the pid is
 * pystrobe's. */
static pid_t record_async(const char *out, const char *errfile,
			  char *const *extra)
{
	struct argv_buf a = { .n = 0 };

	arg(&a, "sh");
	arg(&a, "-c");
	arg(&a, "f=$1; shift; exec \"$@\" 2>\"$f\"");
	arg(&a, "sh");
	arg(&a, errfile);
	arg(&a, pystrobe_path());
	arg(&a, "record");
	arg(&a, "-r");
	arg(&a, RATE);
	arg(&a, "-f");
	arg(&a, "collapsed");
	arg(&a, "-o");
	arg(&a, out);
	args(&a, extra);
	return spawn_cmd(a.v);
}

/* Wait (bounded) for a child; 0 with its status, or -1 on timeout. */
static int wait_bounded(pid_t pid, int timeout_ms, int *status)
{
	double deadline = now_s() + timeout_ms / 1000.0;
	pid_t w;

	while ((w = waitpid(pid, status, WNOHANG)) == 0) {
		if (now_s() > deadline)
			return -1;
		sleep_ms(5);
	}
	return w == pid ? 0 : -1;
}

/* Ctrl-C (or SIGTERM) ends a --pid recording: the file is written, the exit
 * status is 0, and the target goes on, no thread of it stopped. */
static void stop_by_signal(struct rec_test *d, struct target *t, int sig,
			   bool blocking)
{
	char what[64], pid[16], out[PATH_MAX + 32], errfile[PATH_MAX + 32];
	char *err, *text;
	struct tally tl;
	pid_t p;
	int status;

	snprintf(what, sizeof(what), "%s%s", sig == SIGINT ? "SIGINT" : "SIGTERM",
		 blocking ? " --blocking" : "");
	snprintf(pid, sizeof(pid), "%d", t->py_pid);
	snprintf(out, sizeof(out), "%s/signal-%d.txt", t->dir, d->nout);
	snprintf(errfile, sizeof(errfile), "%s/signal-%d.err", t->dir, d->nout++);
	p = record_async(out, errfile,
			 (char *[]){ "--pid", pid, blocking ? "--blocking" : NULL,
				     NULL });
	if (p < 0) {
		flunk(d, what, "cannot start pystrobe: %s", strerror(errno));
		return;
	}
	wait_sampling(p, t->py_pid, RUN_TIMEOUT_MS / 4);
	sleep_ms(SIGNAL_AFTER_MS);
	kill(p, sig);
	if (wait_bounded(p, STOP_TIMEOUT_MS, &status) < 0) {
		kill_reap(p);
		flunk(d, what, "pystrobe still running %d s after the signal",
		      STOP_TIMEOUT_MS / 1000);
		check_target(d, what, t);
		return;
	}
	check_target(d, what, t);
	err = slurp(errfile);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		flunk(d, what, "pystrobe ended with status 0x%x, want exit 0; "
		      "stderr: %.1000s", status, err ? err : "");
	text = slurp(out);
	if (!text) {
		flunk(d, what, "no profile written; stderr: %.1000s",
		      err ? err : "");
	} else {
		tl = tally_of(text);
		if (!tl.burn)
			flunk(d, what, "no burn_* samples in the profile");
		printf("record: %s: %s: exit %d, %llu samples written\n",
		       d->ti->label, what,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		       (unsigned long long)tl.total);
	}
	free(text);
	free(err);
}

/* --- exit status of a launched command ------------------------------------ */

static bool exit_status(struct rec_test *d, const char *what,
			char *const *opts, char *const *burn_args, int want)
{
	bool ok = false, again = true;

	for (int try = 1; try <= ACC_TRIES && again; try++) {
		struct rec_run rr;
		struct target t;
		struct truth tr;

		if (!launch_dir(d, what, &t))
			return false;
		again = false;
		if (launch(d, what, &t, &rr, opts, burn_args, want, EXIT_TIMEOUT_MS,
			   &tr, try < ACC_TRIES)) {
			printf("record: %s: %s: pystrobe exit %d, %.2f s after the target "
			       "(%.2f s without pystrobe)\n", d->ti->label, what,
			       run_exit(&rr.r), rr.end - tr.end_mono, rr.exit_alone);
			again = rr.late_exit;
			ok = run_exit(&rr.r) == want && !rr.late_exit;
		}
		rec_free(&rr);
		target_stop(&t);
	}
	return ok;
}

/* The launched target is pystrobe's child, and with --blocking its threads
 * are also pystrobe's tracees: when it exits in the middle of a pause,
 * pystrobe must still reap what it traced, not wait for its child forever,
 * and must still hand on the child's exit status.  A second busy thread and
 * 500 Hz make an exit inside a pause likely; a few tries, up to the first
 * failure. */
static void exit_while_paused(struct rec_test *d)
{
	char what[64];

	for (int i = 1; i <= EXIT_PAUSED_TRIES; i++) {
		snprintf(what, sizeof(what), "exit 7 --blocking, try %d", i);
		if (!exit_status(d, what,
				 (char *[]){ "--blocking", "-r", "500", NULL },
				 (char *[]){ "--duration", "0.3", "--busy-thread",
					     "--exit", "7", NULL }, 7))
			break;
	}
}

/* --- options -------------------------------------------------------------- */

/* ready.json's tid of the named thread; 0 if unknown (null before 3.8 when
 * gettid could not be called). */
static pid_t ready_tid(const struct target *t, const char *name)
{
	char path[PATH_MAX + 32], pat[64], *text;
	const char *p;
	double v = 0;

	snprintf(path, sizeof(path), "%s/ready.json", t->dir);
	text = slurp(path);
	snprintf(pat, sizeof(pat), "\"name\": \"%s\"", name);
	p = text ? strstr(text, pat) : NULL;
	if (!p || json_num(p, "tid", &v) < 0)
		v = 0;
	free(text);
	return (pid_t)v;
}

struct roots {
	const struct target *t;
	struct rec_test *d;
	const char *what;
	pid_t tid[3];			/* MainThread, busy2, sleeper */
	uint64_t named[3];		/* samples under each one's root */
	uint64_t unnamed;		/* under a root of no known thread */
	int complaints;
};

static const char *const thread_names[3] = { "MainThread", "busy2", "sleeper" };

/* Each line must start at a root `thread TID "NAME"` of a thread the
 * target has, sleeping in the sleeper and burning in the others. */
static void root_line(void *arg, const char *stack, size_t len, uint64_t count)
{
	struct roots *r = arg;
	const char *semi = memchr(stack, ';', len);
	size_t rlen = semi ? (size_t)(semi - stack) : len;
	char want[128];

	for (int i = 0; i < 3; i++) {
		int n;

		if (r->tid[i])
			n = snprintf(want, sizeof(want), "thread %d \"%s\"",
				     r->tid[i], thread_names[i]);
		else
			n = snprintf(want, sizeof(want), "\"%s\"", thread_names[i]);
		if (rlen < (size_t)n ||
		    memcmp(stack + rlen - n, want, n) != 0 ||
		    strncmp(stack, "thread ", 7) != 0)
			continue;
		r->named[i] += count;
		if ((i == 2) != has_frame(stack, len, "idle_sleep (") &&
		    r->complaints++ < 3)
			flunk(r->d, r->what, "thread %s has the stack %.*s",
			      thread_names[i], (int)len, stack);
		return;
	}
	r->unnamed += count;
	if (r->complaints++ < 3)
		flunk(r->d, r->what, "a root that is not `thread TID \"NAME\"` "
		      "of a thread of the target: %.*s (%llu samples)", (int)len,
		      stack, (unsigned long long)count);
}

static void check_threads(struct rec_test *d, struct target *t,
			  const struct rec_run *rr)
{
	const char *what = "--threads --idle";
	struct roots r = { .t = t, .d = d, .what = what };

	for (int i = 0; i < 3; i++)
		r.tid[i] = ready_tid(t, thread_names[i]);
	each_line(rr->profile, root_line, &r);
	for (int i = 0; i < 3; i++)
		if (!r.named[i])
			flunk(d, what, "no root `thread %d \"%s\"`", r.tid[i],
			      thread_names[i]);
	printf("record: %s: %s: roots MainThread %llu, busy2 %llu, sleeper %llu, "
	       "other %llu samples\n", d->ti->label, what,
	       (unsigned long long)r.named[0], (unsigned long long)r.named[1],
	       (unsigned long long)r.named[2], (unsigned long long)r.unnamed);
}

/* Line numbers in labels, or not. */
static void check_labels(struct rec_test *d, const char *what,
			 const struct rec_run *rr, bool by_function)
{
	bool with_line = strstr(rr->profile, "burn_a (burn.py:") != NULL;
	bool without = strstr(rr->profile, "burn_a (burn.py)") != NULL;

	if (by_function && (!without || strstr(rr->profile, "(burn.py:")))
		flunk(d, what, "want labels like `burn_a (burn.py)`, no line "
		      "numbers: %.600s", rr->profile);
	if (!by_function && (!with_line || without))
		flunk(d, what, "want labels like `burn_a (burn.py:12)`: %.600s",
		      rr->profile);
}

/* pystrobe record --pid PID -d OPT_SECONDS OPTS..., then the target is
 * checked; returns whether the run went well enough to look at its
 * profile. */
static bool option_run(struct rec_test *d, const char *what, struct target *t,
		       struct rec_run *rr, const char *opt1, const char *opt2)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", t->py_pid);
	if (!record(d, what, t->dir, rr,
		    (char *[]){ "--pid", pid, "-d", OPT_SECONDS, (char *)opt1,
				(char *)opt2, NULL }))
		return false;
	check_target(d, what, t);
	return check_run(d, what, rr, 0);
}

/* --gil: at most one thread a round, the holder, which is busy; on a
 * build without a GIL (3.13t), the threads attached to the interpreter:
 * the two busy ones. */
static void option_gil(struct rec_test *d, struct target *t)
{
	const char *what = "--gil";
	bool no_gil = strstr(d->ti->label, "t ft-build") != NULL;
	struct rec_run rr;

	if (option_run(d, what, t, &rr, "--gil", NULL)) {
		printf("record: %s: %s: %llu samples in %llu rounds, %llu burning\n",
		       d->ti->label, what, (unsigned long long)rr.t.total,
		       rr.rounds, (unsigned long long)rr.t.burn);
		if (rr.t.total > (no_gil ? 2 : 1) * rr.rounds || rr.t.total < 0.8 * rr.rounds)
			flunk(d, what, "%llu samples in %llu rounds: want one "
			      "per round, the GIL holder's (two without a GIL)",
			      (unsigned long long)rr.t.total, rr.rounds);
		if (rr.t.idle)
			flunk(d, what, "%llu samples of idle_sleep, which never "
			      "holds the GIL", (unsigned long long)rr.t.idle);
		check_labels(d, what, &rr, false);
	}
	rec_free(&rr);
}

/* --idle: every thread every round: both busy threads (mostly in burn_*,
 * but a thread waiting for the GIL may wait between calls too), and the
 * sleeper.  3.13t writes burn.py's JSON files slowly (0.1-0.35 s a
 * write_atomically() there, against 0.3 ms on Debian's 3.11), and the
 * main thread does so inside the run: less of it is in burn_* there. */
static void option_idle(struct rec_test *d, struct target *t)
{
	const char *what = "--idle";
	double burning = strstr(d->ti->label, "t ft-build") ? 1.2 : 1.5;
	struct rec_run rr;
	uint64_t busy;

	if (option_run(d, what, t, &rr, "--idle", NULL)) {
		busy = rr.t.total - rr.t.idle;
		printf("record: %s: %s: %llu samples in %llu rounds: %llu of the "
		       "busy threads (%llu burning), %llu idle_sleep\n",
		       d->ti->label, what, (unsigned long long)rr.t.total,
		       rr.rounds, (unsigned long long)busy,
		       (unsigned long long)rr.t.burn,
		       (unsigned long long)rr.t.idle);
		if (busy > 2 * rr.rounds || busy < 1.8 * rr.rounds ||
		    rr.t.burn < burning * rr.rounds)
			flunk(d, what, "%llu samples of the busy threads (%llu "
			      "in burn_*) in %llu rounds: want two per round",
			      (unsigned long long)busy,
			      (unsigned long long)rr.t.burn, rr.rounds);
		if (rr.t.idle > rr.rounds || rr.t.idle < 0.9 * rr.rounds)
			flunk(d, what, "%llu samples of idle_sleep in %llu "
			      "rounds: want one per round",
			      (unsigned long long)rr.t.idle, rr.rounds);
	}
	rec_free(&rr);
}

/* --threads: a root per thread, named as threading names them. */
static void option_threads(struct rec_test *d, struct target *t)
{
	struct rec_run rr;

	if (option_run(d, "--threads --idle", t, &rr, "--threads", "--idle"))
		check_threads(d, t, &rr);
	rec_free(&rr);
}

/* --function; and without --idle, nothing of the sleeper. */
static void option_function(struct rec_test *d, struct target *t)
{
	const char *what = "--function";
	struct rec_run rr;

	if (option_run(d, what, t, &rr, "--function", NULL)) {
		printf("record: %s: %s: %llu samples in %llu rounds, %llu "
		       "burning, %llu idle_sleep\n", d->ti->label, what,
		       (unsigned long long)rr.t.total, rr.rounds,
		       (unsigned long long)rr.t.burn,
		       (unsigned long long)rr.t.idle);
		check_labels(d, what, &rr, true);
		if (rr.t.idle)
			flunk(d, what, "%llu samples of the sleeping thread "
			      "without --idle", (unsigned long long)rr.t.idle);
	}
	rec_free(&rr);
}

/* burn.py with a second busy thread and a sleeping one: MainThread and
 * busy2 take turns holding the GIL, sleeper is never runnable. */
static void options(struct rec_test *d)
{
	struct target t;

	if (!start_burner(d, "options", &t, "--busy-thread", "--idle-thread"))
		return;
	option_gil(d, &t);
	option_idle(d, &t);
	option_threads(d, &t);
	option_function(d, &t);
	target_stop(&t);
}

/* --- the tests ------------------------------------------------------------ */

/* Labels of the interpreters that run every accuracy mode: the oldest,
 * a static build and the rooted 3.14 cover the layouts that differ most. */
static bool full_modes(int i)
{
	const char *all = getenv("PYSTROBE_RECORD_FULL");
	const struct test_interp *ti = &interps[i];

	if (all && *all && strcmp(all, "0") != 0)
		return true;
	return i == 0 || strstr(ti->label, "debian-static") || ti->root[0];
}

/* The first 3.12 and the first 3.14 (not a debug build) also run the pid
 * accuracy mode at HIGH_RATE. */
static bool high_rate(int i)
{
	const struct test_interp *ti = &interps[i];

	if ((ti->minor != 12 && ti->minor != 14) || strstr(ti->label, "dbg"))
		return false;
	for (int k = 0; k < i; k++)
		if (interps[k].minor == ti->minor && !strstr(interps[k].label, "dbg"))
			return false;
	return true;
}

static void report(struct rec_test *d, double took)
{
	char msg[1600];

	if (!d->failures) {
		printf("record: %s: OK in %.1f s\n", d->ti->label, took);
		return;
	}
	/* The whole report goes to the log; Check's message is short, and
	 * does not return. */
	printf("record: %s: FAILED in %.1f s\n%s", d->ti->label, took,
	       d->failures);
	fflush(stdout);
	snprintf(msg, sizeof(msg), "%.1500s", d->failures);
	free(d->failures);
	d->failures = NULL;
	ck_abort_msg("%s", msg);
}

START_TEST(test_record)
{
	struct rec_test d = { .ti = &interps[_i], .full = full_modes(_i), .rate = RATE };
	double start = now_s();
	struct target t;

	test_interp_script(d.ti, "tests/targets/burn.py", d.script,
			   sizeof(d.script));
	printf("record: %s: accuracy modes: launch, pid%s%s\n", d.ti->label,
	       d.full ? ", launch --blocking, pid --blocking" : "",
	       high_rate(_i) ? ", pid at " HIGH_RATE " Hz" : "");

	accuracy_launch(&d, false);
	if (d.full)
		accuracy_launch(&d, true);

	if (start_burner(&d, "pid", &t, NULL, NULL)) {
		accuracy_pid(&d, &t, false);
		if (d.full)
			accuracy_pid(&d, &t, true);
		if (high_rate(_i)) {
			d.rate = HIGH_RATE;
			accuracy_pid(&d, &t, false);
			d.rate = RATE;
		}
		stop_by_signal(&d, &t, SIGINT, true);
		if (d.full)
			stop_by_signal(&d, &t, SIGTERM, false);
		target_stop(&t);
	}

	exit_status(&d, "exit 7", NULL,
		    (char *[]){ "--duration", "0.3", "--exit", "7", NULL }, 7);
	exit_status(&d, "killed by SIGTERM", NULL,
		    (char *[]){ "--duration", "0.3", "--signal", "15", NULL },
		    128 + SIGTERM);
	exit_while_paused(&d);

	options(&d);

	report(&d, now_s() - start);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("record");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	printf("record: pystrobe is %s\n", pystrobe_path());

	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_record, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
