/* SIGKILL of pystrobe at any moment must leave the target running.
 *
 * pystrobe cannot clean up after SIGKILL: what keeps the target safe is
 * that it only ever attaches with PTRACE_SEIZE (no SIGSTOP of its own to be
 * left behind) and that the kernel detaches a dead tracer's tracees and
 * restarts them, with any signal they were stopped for.  This test holds
 * the kernel and us to that.
 *
 * tests/targets/kill_work.py runs KILL_THREADS threads sorting with libc's
 * qsort and a Python comparison, checking every result.  Against it,
 * `pystrobe record --blocking` and `record --native`, at 1000 Hz, are
 * started and SIGKILLed after a random 0-300 ms (at startup, while
 * symbolizing, mid-pause, between samples), again and again.  After each
 * kill no thread of the target may be in a stopped state (t or T) once
 * SETTLE_MS have passed.  At the end the target is told to stop and must
 * report every round of its work right, with progress in every thread,
 * and exit 0.
 *
 * KILLS_CHECK kills per mode in `make check`; with PYSTROBE_STRESS=1
 * (`make stress`) KILLS_STRESS per mode, 50 in all.  PYSTROBE_KILL_SEED
 * repeats a run's delays (the seed is printed).  One interpreter: pyenv
 * 3.12 where there is one, else the first found.
 *
 * Suspending pystrobe (test_suspend) must not stop the target either: a
 * stopped tracer keeps its stopped threads stopped.  Against the same
 * target, record (--blocking, --native, --blocking --idle, -s --native),
 * top --native and dump --native, each in a process group of its own as a
 * shell's job is, get SIGTSTP, SIGTTIN, SIGTTOU (Ctrl-Z and its kin) or
 * SIGSTOP after a random 0-MAX_DELAY_MS; once pystrobe is stopped (T) and
 * SETTLE_MS more have passed, no thread of the target may be stopped;
 * then SIGCONT, and the next.  record and top take every suspension in one
 * run, which must then end on SIGINT with exit 0; dump is started afresh
 * for each and must exit 0 after SIGCONT.  SUSPENDS_CHECK per mode, or
 * SUSPENDS_STRESS with PYSTROBE_STRESS=1.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define KILL_THREADS	"4"
#define KILLS_CHECK	10
#define KILLS_STRESS	25
#define MAX_DELAY_MS	300
#define SETTLE_MS	1000	/* after the kill, every thread running by then */
#define DONE_MS		30000	/* the target's last round and report */
#define SUSPENDS_CHECK	10
#define SUSPENDS_STRESS	100
#define SUSPEND_SETTLE_MS 300	/* after pystrobe stopped: the 0.3 s */
#define STOPS_WITHIN_MS	5000	/* pystrobe in state T after the signal */

static const struct test_interp *interps;
static int ninterps;

static int kills_per_mode(void)
{
	return stress_mode() ? KILLS_STRESS : KILLS_CHECK;
}

/* Start pystrobe on words (NULL-terminated) and --pid target, with its
 * output thrown away; in a process group of its own with own_group. */
static pid_t start_cmd(const char *const *words, pid_t target, bool own_group)
{
	const char *argv[24];
	char pid[16];
	int n = 0;
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	argv[n++] = "pystrobe";
	while (*words && n < 20)
		argv[n++] = *words++;
	argv[n++] = "--pid";
	argv[n++] = pid;
	argv[n] = NULL;
	p = fork();
	if (p == 0) {
		int nul = open("/dev/null", O_RDWR);

		if (own_group)
			setpgid(0, 0);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		execv(pystrobe_path(), (char *const *)argv);
		_exit(127);
	}
	return p;
}

static pid_t start_pystrobe(const char *mode, pid_t target)
{
	const char *words[] = { "record", mode, "-r", "1000", "-d", "60", "-f", "collapsed",
				"-o", "/dev/null", NULL };

	return start_cmd(words, target, false);
}

/* Every thread of pid out of any stop within SETTLE_MS; 0, or the tid
 * still stopped. */
static pid_t settle(pid_t pid, char *state)
{
	long long deadline = now_ms() + SETTLE_MS;
	pid_t tid;

	while ((tid = proc_stopped_thread(pid, state)) && now_ms() < deadline)
		sleep_ms(5);
	return tid;
}

/* The target's own verdict on its work, once told to stop. */
static void finish_target(struct target *t, char **failures)
{
	char stop[PATH_MAX + 16], done[PATH_MAX + 16], why[512], *text = NULL;
	long long deadline;
	FILE *f;

	snprintf(stop, sizeof(stop), "%s/stop", t->dir);
	f = fopen(stop, "w");
	if (f)
		fclose(f);
	if (target_wait_file(t, "done.json", DONE_MS, why, sizeof(why)) < 0) {
		msg_add(failures, "the target did not finish its work: %s", why);
		return;
	}
	snprintf(done, sizeof(done), "%s/done.json", t->dir);
	f = fopen(done, "r");
	if (f) {
		size_t len = 0;

		if (getdelim(&text, &len, 0, f) < 0) {
			free(text);
			text = NULL;
		}
		fclose(f);
	}
	deadline = now_ms() + DONE_MS;
	while (!t->reaped && now_ms() < deadline) {
		if (waitpid(t->pid, &t->status, WNOHANG) == t->pid)
			t->reaped = 1;
		else
			sleep_ms(10);
	}
	printf("kill: the target's report: %s\n", text ? text : "(unreadable)");
	if (!t->reaped)
		msg_add(failures, "the target did not exit after its report");
	else if (!WIFEXITED(t->status) || WEXITSTATUS(t->status) != 0)
		msg_add(failures, "the target's work came out wrong (status 0x%x): %s",
			t->status, text ? text : "");
	if (!text || !strstr(text, "\"ok\": true"))
		msg_add(failures, "done.json does not say ok: %s", text ? text : "(none)");
	free(text);
}

static void kill_mode(const char *mode, const struct test_interp *ti, unsigned *seed,
		      char **failures)
{
	char script[PATH_MAX], why[512], state = 0;
	int n = kills_per_mode(), stopped = 0;
	long total_delay = 0;
	struct target t;

	test_interp_script(ti, "tests/targets/kill_work.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, KILL_THREADS, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(failures, "%s: kill_work.py: %s", mode, why);
		if (t.pid > 0)
			target_stop(&t);
		return;
	}
	for (int i = 0; i < n; i++) {
		int delay = rand_r(seed) % (MAX_DELAY_MS + 1), status;
		pid_t p = start_pystrobe(mode, t.py_pid), tid;

		if (p < 0) {
			msg_add(failures, "%s: cannot start pystrobe", mode);
			break;
		}
		sleep_ms(delay);
		total_delay += delay;
		kill(p, SIGKILL);
		waitpid(p, &status, 0);
		if (WIFEXITED(status))
			msg_add(failures, "%s, kill %d after %d ms: pystrobe had already exited "
				"(%d): nothing was tested", mode, i + 1, delay, WEXITSTATUS(status));
		tid = settle(t.py_pid, &state);
		if (tid) {
			stopped++;
			msg_add(failures, "%s, kill %d after %d ms: thread %d still stopped "
				"(state %c) %d ms later", mode, i + 1, delay, (int)tid, state,
				SETTLE_MS);
		}
	}
	printf("kill: %s: %d kills after 0-%d ms (mean %ld ms), %d left a thread stopped\n",
	       mode, n, MAX_DELAY_MS, total_delay / (n ? n : 1), stopped);
	finish_target(&t, failures);
	target_stop(&t);
}

/* --- suspending ---------------------------------------------------------- */

#define RECORD(...) { "record", __VA_ARGS__, "-r", "1000", "-d", "600", "-f", "collapsed", \
		      "-o", "/dev/null", NULL }

static const struct suspend_mode {
	const char *name;
	const char *words[16];
	bool once;		/* ends by itself: started afresh for each */
} suspend_modes[] = {
	{ "record --blocking", RECORD("--blocking"), false },
	{ "record --native", RECORD("--native"), false },
	{ "record --blocking --idle", RECORD("--blocking", "--idle"), false },
	/* A pause every 140 ms: the watchdog sleeps between them
	 * (selfstop.c's WATCH_IDLE_LOOKS) and is woken by each. */
	{ "record --native -r 7", { "record", "--native", "-r", "7", "-d", "600", "-f",
				    "collapsed", "-o", "/dev/null", NULL }, false },
	{ "record -s --native", RECORD("-s", "--native"), false },
	{ "top --native", { "top", "--native", "-r", "1000", "-d", "0.2", NULL }, false },
	{ "dump --native", { "dump", "--native", NULL }, true },
};

/* SIGSTOP cannot be caught: pystrobe's watchdog continues it while it
 * holds threads, and it stops again once they are let go. */
static const int stop_signals[] = { SIGTSTP, SIGTTIN, SIGTTOU, SIGSTOP };
#define NSTOPS ((int)(sizeof(stop_signals) / sizeof(*stop_signals)))

struct suspends {
	int tried, stopped, left_stopped, ended_first;
};

/* 1 once p is stopped, 0 once it has exited (*status then says how), -1
 * if neither within STOPS_WITHIN_MS. */
static int wait_stopped(pid_t p, int *status)
{
	long long deadline = now_ms() + STOPS_WITHIN_MS;

	do {
		if (waitpid(p, status, WNOHANG | WUNTRACED) == p)
			return WIFSTOPPED(*status) ? 1 : 0;
		sleep_ms(1);
	} while (now_ms() < deadline);
	return -1;
}

/* Suspend p after delay ms with sig; once it is stopped and SETTLE more
 * ms have passed, no thread of target may be stopped; then continue p.
 * Returns whether p is still there. */
static bool suspend_once(pid_t p, pid_t target, int sig, int delay, const char *what,
			 struct suspends *c, char **failures, int *status)
{
	char state = 0;
	pid_t tid;
	int r;

	sleep_ms(delay);
	kill(p, sig);
	c->tried++;
	r = wait_stopped(p, status);
	if (r == 0) {
		c->ended_first++;
		return false;
	}
	if (r < 0) {
		msg_add(failures, "%s: pystrobe did not stop within %d ms of %s", what,
			STOPS_WITHIN_MS, strsignal(sig));
		kill(p, SIGCONT);
		return true;
	}
	c->stopped++;
	sleep_ms(SUSPEND_SETTLE_MS);
	tid = proc_stopped_thread(target, &state);
	kill(p, SIGCONT);
	if (tid) {
		c->left_stopped++;
		msg_add(failures, "%s: thread %d of the target stopped (state %c) %d ms after "
			"pystrobe stopped on %s", what, (int)tid, state, SUSPEND_SETTLE_MS,
			strsignal(sig));
	}
	return true;
}

/* p's exit once told to end (SIGINT) or let end, within DONE_MS. */
static void expect_exit_0(pid_t p, bool stop_it, const char *what, char **failures)
{
	long long deadline = now_ms() + DONE_MS;
	int status;

	if (stop_it)
		kill(p, SIGINT);
	while (waitpid(p, &status, WNOHANG) != p) {
		if (now_ms() > deadline) {
			kill(p, SIGKILL);
			waitpid(p, &status, 0);
			msg_add(failures, "%s: pystrobe did not exit", what);
			return;
		}
		sleep_ms(10);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		msg_add(failures, "%s: pystrobe ended with status 0x%x after its suspensions",
			what, status);
}

static void suspend_mode(const struct suspend_mode *m, pid_t target, unsigned *seed,
			 char **failures)
{
	int n = stress_mode() ? SUSPENDS_STRESS : SUSPENDS_CHECK, status = 0;
	struct suspends c = { 0 };
	pid_t p = 0;
	char what[128];

	for (int i = 0; i < n; i++) {
		int sig = stop_signals[i % NSTOPS], delay = rand_r(seed) % (MAX_DELAY_MS + 1);

		if (!p)
			p = start_cmd(m->words, target, true);
		if (p < 0) {
			msg_add(failures, "%s: cannot start pystrobe", m->name);
			return;
		}
		snprintf(what, sizeof(what), "%s, suspension %d after %d ms", m->name, i + 1, delay);
		if (!suspend_once(p, target, sig, delay, what, &c, failures, &status)) {
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				msg_add(failures, "%s: pystrobe ended with status 0x%x", what, status);
			p = 0;
		} else if (m->once) {
			expect_exit_0(p, false, what, failures);
			p = 0;
		}
	}
	if (p)
		expect_exit_0(p, true, m->name, failures);
	printf("suspend: %s: %d signals after 0-%d ms, %d stopped pystrobe (%d ended first), "
	       "%d left a thread of the target stopped\n", m->name, c.tried, MAX_DELAY_MS,
	       c.stopped, c.ended_first, c.left_stopped);
}

START_TEST(test_suspend)
{
	const struct test_interp *ti = test_interp_pick(interps, ninterps, 12);
	const char *s = getenv("PYSTROBE_KILL_SEED");
	unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
	char script[PATH_MAX], why[512], *failures = NULL;
	struct target t;

	ck_assert_msg(ti, "no interpreter to test on");
	printf("suspend: on %s, PYSTROBE_KILL_SEED=%u\n", ti->label, seed);
	test_interp_script(ti, "tests/targets/kill_work.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, KILL_THREADS, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		if (t.pid > 0)
			target_stop(&t);
		ck_abort_msg("kill_work.py: %s", why);
	}
	for (size_t i = 0; i < sizeof(suspend_modes) / sizeof(*suspend_modes); i++)
		suspend_mode(&suspend_modes[i], t.py_pid, &seed, &failures);
	finish_target(&t, &failures);
	target_stop(&t);
	if (failures) {
		printf("suspend: FAILED\n%s", failures);
		fflush(stdout);
		ck_abort_msg("%.1500s", failures);
	}
}
END_TEST

START_TEST(test_kill)
{
	const struct test_interp *ti = test_interp_pick(interps, ninterps, 12);
	const char *s = getenv("PYSTROBE_KILL_SEED");
	unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
	char *failures = NULL;

	ck_assert_msg(ti, "no interpreter to test on");
	printf("kill: on %s, PYSTROBE_KILL_SEED=%u, %d kills per mode\n", ti->label, seed,
	       kills_per_mode());
	kill_mode("--blocking", ti, &seed, &failures);
	kill_mode("--native", ti, &seed, &failures);
	if (failures) {
		printf("kill: FAILED\n%s", failures);
		fflush(stdout);
		ck_abort_msg("%.1500s", failures);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kill");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);

	tc = tcase_create("kill");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_kill);
	suite_add_tcase(s, tc);

	tc = tcase_create("suspend");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_suspend);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
