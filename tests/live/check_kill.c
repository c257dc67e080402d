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
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

static const struct test_interp *interps;
static int ninterps;

static int kills_per_mode(void)
{
	const char *s = getenv("PYSTROBE_STRESS");

	return s && *s && strcmp(s, "0") ? KILLS_STRESS : KILLS_CHECK;
}

/* Start pystrobe with its output thrown away. */
static pid_t start_pystrobe(const char *mode, pid_t target)
{
	char pid[16];
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	p = fork();
	if (p == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		execl(pystrobe_path(), "pystrobe", "record", mode, "-r", "1000", "-d", "60",
		      "-f", "collapsed", "-o", "/dev/null", "--pid", pid, (char *)NULL);
		_exit(127);
	}
	return p;
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

	return run_suite(s);
}
