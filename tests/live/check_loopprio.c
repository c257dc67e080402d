/* The sampling loop's priority in every command that samples for a while
 * (issue 39: samples on time on a busy machine): record, top (in a tmux
 * pane, as a user runs it, and with its output to a file) and watch raise
 * the thread that samples to SCHED_FIFO 1 once their first round is over
 * (process/schedprio.h), and keep what they were started with where the
 * guard says so.
 *
 * Read from the kernel, never from pystrobe: fields 19 (nice), 40
 * (rt_priority) and 41 (policy) of /proc/PID/task/TID/stat, for each of
 * pystrobe's threads, every POLL_MS for LOOK_MS once it samples the target
 * (tests/targets/parked.py: sleeping threads).
 *
 *   raised  as started by root: the sampling thread (the main one) reads
 *           SCHED_FIFO at rt_priority 1 in most reads (top and watch draw
 *           and judge at the normal policy, so not in all), every other
 *           thread of pystrobe SCHED_OTHER in every read.
 *   niced   started under `nice -n 5`: never raised, nice 5 in every read.
 *   batch   started under `chrt --batch 0`: SCHED_BATCH in every read,
 *           never SCHED_FIFO.
 *   --no-priority  as root: SCHED_OTHER at nice 0 in every read.
 *   guarded record --idle at 20 kHz, as root: its loop takes over a
 *           quarter of a CPU, so it is raised after its first round and
 *           given up after a second (sample/fleetprio.c): SCHED_FIFO in
 *           some reads, SCHED_OTHER in the last.
 *
 * Before top and watch shared record's loop priority (sample/fleetprio.c)
 * they sampled at SCHED_OTHER: the `raised` case failed for both.  Needs
 * root (ptrace, and real time); one interpreter (pyenv 3.12, else the
 * first), as what is tested is the loop, not the reader.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define LOOK_MS		2500
#define POLL_MS		50
#define SAMPLING_MS	30000
/* Of the reads of the sampling thread, at least this share at SCHED_FIFO. */
#define RAISED_SHARE	0.8

static const struct test_interp *interps;
static int ninterps;

enum start { RAISED, NICED, BATCH, FORBIDDEN, GUARDED };
static const char *const start_name[] = { "raised", "niced", "batch", "--no-priority",
					  "guarded" };

/* What each read of pystrobe's threads found. */
struct seen {
	int reads;		/* of the sampling thread */
	int fifo;		/* ... at SCHED_FIFO, rt_priority 1 */
	int other_raised;	/* reads of another thread not at SCHED_OTHER */
	int policy, nice;	/* the sampling thread's, last read */
	bool policy_changed, nice_changed;
};

/* Fields 19, 40 and 41 of a task's stat; 0 or -1. */
static int task_sched(pid_t pid, pid_t tid, int *nice, int *rtprio, int *policy)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')))
		return -1;
	*nice = *rtprio = *policy = -100;
	for (p = strtok(p + 1, " "); p; p = strtok(NULL, " "), field++) {
		if (field == 19)
			*nice = atoi(p);
		else if (field == 40)
			*rtprio = atoi(p);
		else if (field == 41)
			*policy = atoi(p);
	}
	return *policy == -100 ? -1 : 0;
}

static void look_once(pid_t pid, struct seen *s)
{
	DIR *d;
	struct dirent *e;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		pid_t tid = atoi(e->d_name);
		int nice, rtprio, policy;

		if (tid <= 0 || task_sched(pid, tid, &nice, &rtprio, &policy))
			continue;
		if (tid != pid) {
			s->other_raised += policy != SCHED_OTHER && policy != SCHED_BATCH;
			continue;
		}
		if (s->reads && policy != s->policy)
			s->policy_changed = true;
		if (s->reads && nice != s->nice)
			s->nice_changed = true;
		s->reads++;
		s->fifo += policy == SCHED_FIFO && rtprio == 1;
		s->policy = policy;
		s->nice = nice;
	}
	closedir(d);
}

static void look(pid_t pid, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	for (long long end = now_ms() + LOOK_MS; now_ms() < end; sleep_ms(POLL_MS))
		look_once(pid, s);
}

/* What was seen against what the start asks for. */
static void judge(const char *what, enum start how, const struct seen *s, char **failures)
{
	printf("loopprio: %s, %s: %d reads, %d at SCHED_FIFO 1; last policy %d, nice %d; "
	       "other threads raised in %d reads\n", what, start_name[how], s->reads, s->fifo,
	       s->policy, s->nice, s->other_raised);
	if (s->reads < LOOK_MS / POLL_MS / 2) {
		msg_add(failures, "%s, %s: pystrobe's main thread read %d times only", what,
			start_name[how], s->reads);
		return;
	}
	if (s->other_raised)
		msg_add(failures, "%s, %s: a thread other than the sampling one was raised", what,
			start_name[how]);
	if (how == RAISED && s->fifo < RAISED_SHARE * s->reads)
		msg_add(failures, "%s, started as root: the sampling thread at SCHED_FIFO 1 in %d "
			"of %d reads (at least %.0f%% expected)", what, s->fifo, s->reads,
			RAISED_SHARE * 100);
	if (how == NICED && (s->fifo || s->nice != 5 || s->nice_changed))
		msg_add(failures, "%s, started at nice 5: raised (%d reads at SCHED_FIFO, nice %d%s)",
			what, s->fifo, s->nice, s->nice_changed ? ", changed" : "");
	if (how == FORBIDDEN && (s->fifo || s->policy != SCHED_OTHER || s->policy_changed ||
				 s->nice != 0 || s->nice_changed))
		msg_add(failures, "%s --no-priority: raised (%d reads at SCHED_FIFO, last policy "
			"%d, nice %d)", what, s->fifo, s->policy, s->nice);
	if (how == GUARDED && (!s->fifo || s->policy != SCHED_OTHER))
		msg_add(failures, "%s at 20 kHz, started as root: not raised then given up (%d "
			"reads at SCHED_FIFO, last policy %d)", what, s->fifo, s->policy);
	if (how == BATCH && (s->fifo || s->policy != SCHED_BATCH || s->policy_changed))
		msg_add(failures, "%s, started at SCHED_BATCH: its policy changed (%d reads at "
			"SCHED_FIFO, last policy %d)", what, s->fifo, s->policy);
}

/* The command line: the start's wrapper, then pystrobe's arguments. */
static int command(enum start how, char **argv, char *const *args)
{
	int n = 0;

	if (how == NICED) {
		argv[n++] = "nice";
		argv[n++] = "-n";
		argv[n++] = "5";
	} else if (how == BATCH) {
		argv[n++] = "chrt";
		argv[n++] = "--batch";
		argv[n++] = "0";
	}
	argv[n++] = (char *)pystrobe_path();
	while (*args)
		argv[n++] = *args++;
	argv[n] = NULL;
	return n;
}

/* pystrobe ARGS... (the wrapper execs it: the pid is pystrobe's), looked
 * at once it samples, then ended. */
static void run_plain(struct target *t, const char *what, enum start how, char *const *args,
		      char **failures)
{
	char *argv[32], err[PATH_MAX + 32];
	struct seen s;
	pid_t p;

	command(how, argv, args);
	snprintf(err, sizeof(err), "%s/%s-%s.err", t->dir, what, start_name[how]);
	p = spawn_cmd_err(argv, err);
	if (p < 0 || wait_sampling(p, t->py_pid, SAMPLING_MS) < 0) {
		msg_add(failures, "%s, %s: pystrobe never sampled the target", what,
			start_name[how]);
		if (p > 0)
			kill_reap(p);
		return;
	}
	look(p, &s);
	kill(p, SIGINT);
	waitpid(p, NULL, 0);
	judge(what, how, &s, failures);
}

/* `pystrobe top` full screen in a tmux pane, looked at as run_plain()
 * does; q ends it. */
static void run_tmux(struct target *t, enum start how, char *const *args, char **failures)
{
	char *argv[32], sock[PATH_MAX + 16], line[PATH_MAX * 2], *out = NULL, *words;
	char *start[] = { "new-session", "-d", "-x", "160", "-y", "40", "-s", "prio", line, NULL };
	char *pane[] = { "display-message", "-p", "-t", "prio", "#{pane_pid}", NULL };
	char *quit[] = { "send-keys", "-t", "prio", "q", NULL };
	char *end[] = { "kill-server", NULL };
	struct seen s;
	pid_t p = 0;

	command(how, argv, args);
	words = shell_words(argv);
	snprintf(line, sizeof(line), "exec %s", words);
	free(words);
	snprintf(sock, sizeof(sock), "%s/tmux-%s", t->dir, start_name[how]);
	if (tmux_cmd(sock, NULL, start) == 0 && tmux_cmd(sock, &out, pane) == 0 && out)
		p = (pid_t)atoi(out);
	free(out);
	if (p <= 0 || wait_sampling(p, t->py_pid, SAMPLING_MS) < 0) {
		msg_add(failures, "top in tmux, %s: pystrobe did not start, or never sampled the "
			"target", start_name[how]);
	} else {
		look(p, &s);
		judge("top in tmux", how, &s, failures);
		tmux_cmd(sock, NULL, quit);
		for (long long until = now_ms() + 5000; kill(p, 0) == 0 && now_ms() < until;)
			sleep_ms(50);
	}
	tmux_cmd(sock, NULL, end);
}

static void check_command(const char *what, char *const *args, enum start first,
			  enum start last)
{
	char *failures = NULL, why[256];
	const struct test_interp *ti = test_interp_pick(interps, ninterps, 12);
	struct target t;

	if (geteuid() != 0) {
		test_skip("loopprio: needs root (ptrace, and real-time priority)");
		return;
	}
	if (!ti || target_start_parked(&t, ti, why, sizeof(why)) < 0) {
		msg_add(&failures, "%s", ti ? why : "no interpreter");
		fail_if_any(failures, "loopprio: the target");
		return;
	}
	for (enum start how = first; how <= last; how++) {
		char *full[16], pid[24], dir[PATH_MAX + 32];
		int n = 0;

		snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
		snprintf(dir, sizeof(dir), "%s/reports-%s", t.dir, start_name[how]);
		for (; args[n]; n++)
			full[n] = !strcmp(args[n], "DIR") ? dir : !strcmp(args[n], "PID") ?
				  pid : args[n];
		if (how == FORBIDDEN)
			full[n++] = "--no-priority";
		full[n] = NULL;
		if (!strcmp(what, "top in tmux"))
			run_tmux(&t, how, full, &failures);
		else
			run_plain(&t, what, how, full, &failures);
	}
	target_stop(&t);
	fail_if_any(failures, what);
}

START_TEST(test_record)
{
	char *args[] = { "record", "-f", "collapsed", "-o", "DIR", "-q", "--pid", "PID", NULL };

	check_command("record", args, RAISED, FORBIDDEN);
}
END_TEST

START_TEST(test_record_guard)
{
	char *args[] = { "record", "--idle", "-r", "20000", "-f", "collapsed", "-o", "DIR", "-q",
			 "--pid", "PID", NULL };

	check_command("record", args, GUARDED, GUARDED);
}
END_TEST

START_TEST(test_top_tmux)
{
	char *args[] = { "top", "-d", "0.2", "--pid", "PID", NULL };

	if (system("tmux -V >/dev/null 2>&1") != 0) {
		test_skip("loopprio: no tmux");
		return;
	}
	check_command("top in tmux", args, RAISED, FORBIDDEN);
}
END_TEST

START_TEST(test_top_snapshots)
{
	char *args[] = { "top", "-d", "0.2", "--pid", "PID", NULL };

	check_command("top to a file", args, RAISED, FORBIDDEN);
}
END_TEST

START_TEST(test_watch)
{
	char *args[] = { "watch", "-D", "DIR", "-r", "20", "--pid", "PID", NULL };

	check_command("watch", args, RAISED, FORBIDDEN);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loopprio");
	TCase *tc = tcase_create("loopprio");

	setvbuf(stdout, NULL, _IOLBF, 0);
	unsetenv("TMUX");
	ninterps = test_interps(&interps);
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_test(tc, test_record);
	tcase_add_test(tc, test_record_guard);
	tcase_add_test(tc, test_top_tmux);
	tcase_add_test(tc, test_top_snapshots);
	tcase_add_test(tc, test_watch);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
