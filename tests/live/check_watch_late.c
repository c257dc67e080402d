/* `pystrobe watch` on time after long work (issue 39): a job that worked
 * for 5, 60 or 300 s and then deadlocked is reported --stall seconds after
 * it stopped, however long it worked, and the report's "since" is when it
 * stopped.  Before the fix the report came later the longer the job had
 * worked (after 20 s of work, 34 s after the deadlock; after 60 s, 161 s)
 * or before the threshold, and "since" named the job's start.
 *
 * The target (tests/targets/late_deadlock.py) runs two threads in a loop
 * of a few lines (a short computation, a long nap: the same few stacks
 * round after round, never a spin) for WORK_S seconds, then deadlocks them
 * on two locks taken in opposite order; the second thread to stop writes
 * onset.json with the moment, by its own clock (time.time()), just before
 * it blocks.  Each is launched by `watch --stall 4`; the test polls the
 * report directory every 100 ms and holds what it finds against onset.json:
 *
 *   - one report, of a deadlock naming both threads, seen by the test
 *     within --stall + 2 s of the onset (plus the worst lateness of the
 *     test's own polling loop meanwhile: what the machine's load took from
 *     every process, which the watch cannot be blamed for; printed), and
 *     detected (report.json's detected_unix) no sooner than --stall - 1 s
 *     after it;
 *   - report.json's since_unix within 1 s of the onset.
 *
 * The 5 and 60 s cases on every interpreter, the 300 s case on one plain
 * interpreter alone (pyenv's 3.12, else Debian's 3.11, as in CI's phase 1;
 * what it adds to the 60 s case does not depend on the version), and not
 * in a sanitizer build (CI's phase 5), all in one test so that
 * the whole takes about 300 s and not the sum: the 300 s case from the
 * start, and beside it the others, the 60 s ones first, SLOTS at a time
 * and a second apart.  Not all at once: the load of 29 interpreters
 * starting together made threads that ran 1% of the time runnable at
 * 80% of the watch's readings, which is a livelock to it (watch's
 * definition: a spin on a loaded machine waits for a CPU much of the
 * time), reported before the deadlock.  About 300 s with the long case
 * (CI's phase 1 too), 2 min without it.
 *
 * Case `loaded`: one case of 15 s of work on one plain interpreter, the
 * target under nice -n 15 beside 3 CPU hogs per CPU, judged the same way:
 * its threads are starved (runnable at most readings, 0-2% of a CPU),
 * which is no livelock.  Before the fix, a livelock during the work and
 * no report of the deadlock.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define STALL_S		4
#define STALL_ARG	"4"
#define ALLOWED_S	2	/* the report within --stall + 2 s of the onset */
#define SINCE_S		1	/* its since within 1 s of the onset */
#define POLL_MS		100
#define STOP_MS		20000	/* a watch ending after SIGINT, with its command */
#define LONG_WORK_S	300
#define MID_WORK_S	60
#define SHORT_WORK_S	5
#define SLOTS		4	/* cases at a time beside the 300 s one */
#define LAUNCH_GAP_MS	1000	/* between two launches */
#define GIVE_UP_S	30	/* no report this long past its deadline: none */
#define MAX_CASES	64
#define TARGET		"tests/targets/late_deadlock.py"
#define LOADED_WORK_S	15
#define LOADED_NICE	"15"
#define HOGS_PER_CPU	3
#define MAX_HOGS	64

static const struct test_interp *interps;
static int ninterps;

/* One watch of one target. */
struct late {
	const struct test_interp *ti;
	int work_s;
	char out[PATH_MAX];		/* the target's OUTDIR, as the test sees it */
	char out_inside[PATH_MAX];	/* the same as the target names it */
	char reports[PATH_MAX];		/* --report-dir */
	char err[PATH_MAX + 16];	/* the watch's stderr */
	pid_t pid;			/* pystrobe watch */
	double started;			/* wall clock, when launched */
	double onset;			/* onset.json's onset_unix, 0 until written */
	double seen;			/* wall clock when a report.json first showed */
	double lateness;		/* the polling loop's worst lateness meanwhile */
	bool done;			/* judged, the watch told to end */
	bool reaped;
	bool niced;			/* the target under nice -n LOADED_NICE */
};

/* The number after "key": in the file (0 when there is none). */
static double json_number(const char *path, const char *key)
{
	char pat[64], *text = slurp(path), *p;
	double v = 0;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (text && (p = strstr(text, pat)))
		v = strtod(p + strlen(pat), NULL);
	free(text);
	return v;
}

/* The report.json of the first report in dir into path; how many reports
 * there are. */
static int find_report(const char *dir, char *path, size_t size)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (de = readdir(d))) {
		char p[PATH_MAX * 2];

		if (strncmp(de->d_name, "stall-", 6))
			continue;
		snprintf(p, sizeof(p), "%s/%s/report.json", dir, de->d_name);
		if (access(p, F_OK) != 0)
			continue;
		if (!n++)
			snprintf(path, size, "%s", p);
	}
	if (d)
		closedir(d);
	return n;
}

/* --- starting and ending ------------------------------------------------------ */

static int late_init(struct late *c, const struct test_interp *ti, int work_s)
{
	char tmpl[] = "/tmp/pystrobe-late-XXXXXX";

	memset(c, 0, sizeof(*c));
	c->ti = ti;
	c->work_s = work_s;
	test_interp_shared_dir(ti, c->out, c->out_inside, sizeof(c->out));
	if (!c->out[0] || !mkdtemp(tmpl))
		return -1;
	snprintf(c->reports, sizeof(c->reports), "%s", tmpl);
	snprintf(c->err, sizeof(c->err), "%s/watch.err", c->reports);
	return 0;
}

/* pystrobe watch --stall STALL_S -D REPORTS -- python TARGET WORK_S OUTDIR,
 * stderr to c->err, dying with the test. */
static void late_launch(struct late *c)
{
	char script[PATH_MAX], work[16];
	struct argv_buf a = { .n = 0 };
	pid_t pid;

	test_interp_script(c->ti, TARGET, script, sizeof(script));
	snprintf(work, sizeof(work), "%d", c->work_s);
	arg(&a, pystrobe_path());
	arg(&a, "watch");
	arg(&a, "--stall");
	arg(&a, STALL_ARG);
	arg(&a, "-D");
	arg(&a, c->reports);
	arg(&a, "--");
	if (c->niced) {
		arg(&a, "nice");
		arg(&a, "-n");
		arg(&a, LOADED_NICE);
	}
	arg_python(&a, c->ti);
	arg(&a, script);
	arg(&a, work);
	arg(&a, c->out_inside);
	c->started = wall_s();
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		int err = open(c->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		signal(SIGINT, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(err, 2);
		execv(a.v[0], a.v);
		_exit(127);
	}
	c->pid = pid;
}

/* Reap the watch (which ends its command) within STOP_MS, else kill all. */
static void late_reap(struct late *c, char **failures)
{
	long long deadline = now_ms() + STOP_MS;

	while (c->pid > 0 && !c->reaped) {
		pid_t r = waitpid(c->pid, NULL, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			c->reaped = true;
		} else if (now_ms() > deadline) {
			msg_add(failures, "%s, %d s of work: the watch did not end %d s after "
				"SIGINT", c->ti->label, c->work_s, STOP_MS / 1000);
			kill_descendants(c->pid);
			kill_reap(c->pid);
			c->reaped = true;
		} else {
			sleep_ms(20);
		}
	}
	rm_rf(c->out);
	rm_rf(c->reports);
}

/* --- judging ---------------------------------------------------------------------- */

/* What is wrong with c's report, into failures; one line on stdout. */
static void late_judge(struct late *c, char **failures)
{
	char report[PATH_MAX * 2], onset[PATH_MAX + 16], *text, *what = NULL;
	int n = find_report(c->reports, report, sizeof(report));
	double since, detected;
	long tid[2];

	snprintf(onset, sizeof(onset), "%s/onset.json", c->out);
	tid[0] = (long)json_number(onset, "left");
	tid[1] = (long)json_number(onset, "right");
	since = json_number(report, "since_unix");
	detected = json_number(report, "detected_unix");
	text = slurp(report);
	printf("late: %s: %d s of work: report seen %+.1f s after the onset (detected %+.1f s), "
	       "since %+.1f s; the test's polling late by %.1f s at worst\n", c->ti->label,
	       c->work_s, c->seen - c->onset, detected - c->onset, since - c->onset, c->lateness);
	if (n != 1)
		msg_add(&what, "%d reports, not 1", n);
	if (!text || !strstr(text, "\"kind\":\"deadlock\""))
		msg_add(&what, "not a deadlock");
	for (int i = 0; i < 2; i++) {
		char word[32];

		snprintf(word, sizeof(word), " %ld \\\"", tid[i]);
		if (!text || !tid[i] || !strstr(text, word))
			msg_add(&what, "thread %ld (%s) not named", tid[i], i ? "right" : "left");
	}
	if (c->seen - c->onset > STALL_S + ALLOWED_S + c->lateness)
		msg_add(&what, "seen %.1f s after the onset (at most %d + %d + %.1f)",
			c->seen - c->onset, STALL_S, ALLOWED_S, c->lateness);
	if (detected - c->onset < STALL_S - 1)
		msg_add(&what, "detected %.1f s after the onset, before --stall %d", detected - c->onset,
			STALL_S);
	if (since - c->onset > SINCE_S || c->onset - since > SINCE_S)
		msg_add(&what, "since %+.1f s off the onset (at most %d)", since - c->onset, SINCE_S);
	if (what) {
		char *err = slurp(c->err);

		msg_add(failures, "%s, %d s of work: %s(the watch said: %.800s)", c->ti->label,
			c->work_s, what, err ? err : "");
		free(err);
	}
	free(what);
	free(text);
}

/* A case running, looked at once: its onset and report noted, judged
 * once seen, given up when none comes.  late: how late the polling loop
 * woke this time. */
static void late_look(struct late *c, double late, char **failures)
{
	char onset[PATH_MAX + 16], report[PATH_MAX * 2];
	double now = wall_s();

	if (c->done || !c->pid)
		return;
	if (late > c->lateness)
		c->lateness = late;
	snprintf(onset, sizeof(onset), "%s/onset.json", c->out);
	if (!c->onset && access(onset, F_OK) == 0)
		c->onset = json_number(onset, "onset_unix");
	if (!c->seen && find_report(c->reports, report, sizeof(report)))
		c->seen = now;
	if (c->seen && c->onset) {
		late_judge(c, failures);
	} else if (c->onset ? now > c->onset + STALL_S + ALLOWED_S + GIVE_UP_S :
		   now > c->started + c->work_s + 2 * GIVE_UP_S) {
		char *err = slurp(c->err);

		msg_add(failures, "%s, %d s of work: %s (the watch said: %.800s)", c->ti->label,
			c->work_s, c->onset ? "no report" : c->seen ? "a report before the onset" :
			"the target wrote no onset.json", err ? err : "");
		free(err);
	} else {
		return;
	}
	c->done = true;
	kill(c->pid, SIGINT);
}

/* --- the test ------------------------------------------------------------------------ */

/* The interpreter of the long case: a plain one (pyenv's 3.12, else
 * Debian's 3.11, as CI's phase 1 has); or NULL after a SKIP saying the
 * long case did not run. */
static const struct test_interp *long_interp(void)
{
	const struct test_interp *one = NULL;

	if (test_interps_plain(&one, 1, "watch_late: the long case") == 1)
		return one;
	test_skip("watch_late: no plain interpreter (pyenv 3.12, Debian's 3.11): the %d s case "
		  "did not run (it runs on one alone, to keep the suite short)", LONG_WORK_S);
	return NULL;
}

/* The cases: 5 s and 60 s on every interpreter, 300 s on one; their count. */
static int plan(struct late *cases)
{
	const struct test_interp *one = long_interp();
	int n = 0;

	if (one && late_init(&cases[n], one, LONG_WORK_S) == 0)
		n++;
	for (int i = 0; i < ninterps && n < MAX_CASES; i++)
		if (late_init(&cases[n], &interps[i], MID_WORK_S) == 0)
			n++;
	for (int i = 0; i < ninterps && n < MAX_CASES; i++)
		if (late_init(&cases[n], &interps[i], SHORT_WORK_S) == 0)
			n++;
	printf("late: %d cases%s%s\n", n, one ? "; the 300 s one on " : "", one ? one->label : "");
	return n;
}

/* Launch the next case when its turn has come: the 300 s one at once, the
 * others while fewer than SLOTS of them run, LAUNCH_GAP_MS apart. */
static void launch_next(struct late *cases, int n, long long *last)
{
	int active = 0;

	if (now_ms() - *last < LAUNCH_GAP_MS)
		return;
	for (int i = 0; i < n; i++)
		active += cases[i].pid && !cases[i].done && cases[i].work_s != LONG_WORK_S;
	for (int i = 0; i < n; i++) {
		if (cases[i].pid)
			continue;
		if (cases[i].work_s == LONG_WORK_S || active < SLOTS) {
			late_launch(&cases[i]);
			*last = now_ms();
		}
		return;
	}
}

START_TEST(test_on_time)
{
	static struct late cases[MAX_CASES];
	char *failures = NULL, *opts;
	int n, left;
	double t0 = now_s(), last = t0;
	long long launched = 0;

	if (pystrobe_sanitized()) {
		test_skip("watch_late: a sanitizer build: a timing test, which the plain build runs "
			  "(the sanitizers slow pystrobe, and CI's phase 5 runs two tests at once)");
		return;
	}
	opts = help_long_options("watch");
	ck_assert_msg(opts, "pystrobe has no watch command (`pystrobe watch --help` failed)");
	free(opts);
	if (!ninterps)
		return;		/* add_have_interps() fails the suite */
	n = plan(cases);
	ck_assert_msg(n > 0, "cannot make the cases' directories: %s", strerror(errno));
	do {
		double now, late;

		sleep_ms(POLL_MS);
		now = now_s();
		late = now - last - POLL_MS / 1000.0;
		last = now;
		launch_next(cases, n, &launched);
		left = 0;
		for (int i = 0; i < n; i++) {
			late_look(&cases[i], late, &failures);
			left += !cases[i].done;
		}
	} while (left);
	for (int i = 0; i < n; i++)
		late_reap(&cases[i], &failures);
	printf("late: all %d cases in %.0f s\n", n, now_s() - t0);
	ck_assert_msg(!failures, "%.4000s", failures);
}
END_TEST

/* The job niced beside CPU hogs (HOGS_PER_CPU for each CPU, at the
 * normal nice): its threads are runnable at most readings and on a CPU
 * 0-2% of the time, starved, not spinning (issue 39: a livelock 15 s
 * into the work, "ran 0% of the last 6 s (runnable 83%)", and its
 * deadlock never reported).  One case, judged as the others are. */
START_TEST(test_loaded)
{
	static struct late c;
	const struct test_interp *one = NULL;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t hogs[MAX_HOGS];
	int nhogs = ncpu > 0 && ncpu * HOGS_PER_CPU < MAX_HOGS ? (int)ncpu * HOGS_PER_CPU :
		    MAX_HOGS;
	char *failures = NULL;
	double last = now_s();

	if (pystrobe_sanitized()) {
		test_skip("watch_late: a sanitizer build: a timing test, which the plain build runs");
		return;
	}
	if (test_interps_plain(&one, 1, "watch_late: loaded") != 1) {
		test_skip("watch_late: no plain interpreter (pyenv 3.12, Debian's 3.11): the "
			  "loaded case did not run");
		return;
	}
	ck_assert_int_eq(late_init(&c, one, LOADED_WORK_S), 0);
	c.niced = true;
	for (int i = 0; i < nhogs; i++)
		if ((hogs[i] = fork()) == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(LOADED_WORK_S + 120);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	printf("late: loaded: %s under nice -n %s beside %d CPU hogs\n", one->label, LOADED_NICE,
	       nhogs);
	late_launch(&c);
	while (!c.done) {
		double now;

		sleep_ms(POLL_MS);
		now = now_s();
		late_look(&c, now - last - POLL_MS / 1000.0, &failures);
		last = now;
	}
	for (int i = 0; i < nhogs; i++)
		if (hogs[i] > 0)
			kill_reap(hogs[i]);
	late_reap(&c, &failures);
	ck_assert_msg(!failures, "%.4000s", failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("watch_late");
	TCase *tc = tcase_create("watch_late");
	TCase *loaded = tcase_create("loaded");

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tcase_set_timeout(tc, LONG_WORK_S + 300);
	add_have_interps(tc, ninterps);
	tcase_add_test(tc, test_on_time);
	suite_add_tcase(s, tc);
	tcase_set_timeout(loaded, LOADED_WORK_S + 120);
	add_have_interps(loaded, ninterps);
	tcase_add_test(loaded, test_loaded);
	suite_add_tcase(s, loaded);
	return run_suite(s);
}
