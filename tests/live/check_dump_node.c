/* `pystrobe dump --slurm-node=JOB`: one node's part of dump --slurm, with
 * no cluster.
 *
 * Python targets (tests/targets/job_rank.py) run with the environments
 * Slurm and torchrun give a job's processes, in this one PID namespace,
 * as two slurmd on one host do: tasks of job J on hnode1 and on hnode2, a
 * torchrun worker, a task of job J+1, one of pystrobe's own step, and
 * two with no such variable under a fake `slurmd -N NODE` and
 * `slurmstepd: [J.0]` (tests/targets/fake_slurm.sh); a `sleep` of the
 * job is not Python.  pystrobe runs as srun would start it on hnode1
 * (SLURMD_NODENAME=hnode1, its own SLURM_JOB_ID and SLURM_STEP_ID), and
 * tests/check_dump_node.py holds its reply to what the targets wrote of
 * themselves: the framing (each line at most 400 bytes, the end line's
 * status and byte count), exactly hnode1's processes of J, each with the
 * job and rank its own environment gave it (or the fake step daemon
 * that started it), its parent, and its stack in rank_park(); also with
 * --native.  Then with one of them held by another tracer: it is listed
 * with its error and no threads, the others are still read, and the
 * status is 4.  With --native and --timeout=0.1 (pyenv's interpreters,
 * whose symbols take longer than that to load), the processes after the
 * first are listed as not read, and the status is 1.  On the oldest and
 * the newest interpreter.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

enum how { BY_ENV, BY_TREE, NOT_PYTHON };

/* The job's processes and their neighbours, and whether hnode1's pystrobe
 * must list each.  Ranks are "PROCID LOCALID NTASKS" and torchrun's
 * "RANK LOCAL_RANK WORLD_SIZE". */
static const struct rank_target {
	const char *what;
	int next_job;		/* of job J+1 */
	const char *node;	/* SLURMD_NODENAME, or the fake slurmd's -N */
	const char *step;
	const char *slurm_rank, *torch_rank;
	enum how how;
	bool wanted;
} rank_targets[] = {
	{ "a task on hnode1", 0, "hnode1", "0", "0 0 4", NULL, BY_ENV, true },
	{ "a torchrun worker on hnode1", 0, "hnode1", "0", "1 1 4", "5 1 8", BY_ENV, true },
	{ "a task on hnode2", 0, "hnode2", "0", "2 0 4", NULL, BY_ENV, false },
	{ "a task of job J+1 on hnode1", 1, "hnode1", "0", "0 0 2", NULL, BY_ENV, false },
	{ "a task of pystrobe's own step", 0, "hnode1", "7", "3 1 4", NULL, BY_ENV, false },
	{ "no Slurm environment, started by hnode1's step daemon", 0, "hnode1", NULL, NULL, NULL,
	  BY_TREE, true },
	{ "no Slurm environment, started by hnode2's step daemon", 0, "hnode2", NULL, NULL, NULL,
	  BY_TREE, false },
	{ "sleep, not Python, on hnode1", 0, "hnode1", "0", "3 1 4", NULL, NOT_PYTHON, false },
};

#define NTARGETS (sizeof(rank_targets) / sizeof(rank_targets[0]))
#define OWN_STEP "7"

static const char *const job_vars[] = {
	"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "SLURM_PROCID", "SLURM_LOCALID",
	"SLURM_NTASKS", "RANK", "LOCAL_RANK", "WORLD_SIZE",
};

/* A command line of words kept here: the wrapper of one target. */
struct words {
	char buf[16][PATH_MAX];
	const char *v[24];
	int n;
};

static void word(struct words *w, const char *name, const char *value)
{
	if (value)
		snprintf(w->buf[w->n], sizeof(w->buf[0]), "%s=%s", name, value);
	else
		snprintf(w->buf[w->n], sizeof(w->buf[0]), "%s", name);
	w->v[w->n] = w->buf[w->n];
	w->v[++w->n] = NULL;
}

/* "PROCID LOCALID NTASKS" as three assignments. */
static void rank_words(struct words *w, const char *names[3], const char *ranks)
{
	char r[3][16];

	if (!ranks || sscanf(ranks, "%15s %15s %15s", r[0], r[1], r[2]) != 3)
		return;
	for (int i = 0; i < 3; i++)
		word(w, names[i], r[i]);
}

/* env VAR=VALUE... for a target named by its environment; fake_slurm.sh
 * NODE JOB for one named by its ancestry. */
static void wrapper(const struct rank_target *rt, const char *job, struct words *w)
{
	static const char *slurm[3] = { "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS" };
	static const char *torch[3] = { "RANK", "LOCAL_RANK", "WORLD_SIZE" };
	char path[PATH_MAX];

	w->n = 0;
	if (rt->how == BY_TREE) {
		snprintf(path, sizeof(path), "%s/tests/targets/fake_slurm.sh", test_srcdir());
		word(w, path, NULL);
		word(w, rt->node, NULL);
		word(w, job, NULL);
		return;
	}
	word(w, "env", NULL);
	word(w, "SLURM_JOB_ID", job);
	word(w, "SLURM_STEP_ID", rt->step);
	word(w, "SLURMD_NODENAME", rt->node);
	rank_words(w, slurm, rt->slurm_rank);
	rank_words(w, torch, rt->torch_rank);
}

struct started {
	struct target t[NTARGETS];
	bool up[NTARGETS];
	pid_t pid[NTARGETS];	/* the Python process, or the sleep */
};

static void start_one(const struct test_interp *ti, const char *jobs[2], int i,
		      struct started *s, char **failures)
{
	const struct rank_target *rt = &rank_targets[i];
	struct words w;
	char why[512];

	wrapper(rt, jobs[rt->next_job], &w);
	if (rt->how == NOT_PYTHON) {
		word(&w, "sleep", NULL);
		word(&w, "600", NULL);
		s->pid[i] = spawn_cmd((char *const *)w.v);
		if (s->pid[i] < 0)
			msg_add(failures, "%s: cannot start", rt->what);
		return;
	}
	target_set_wrapper(w.v);
	if (target_start_script(&s->t[i], ti, "tests/targets/job_rank.py", why, sizeof(why)) < 0)
		msg_add(failures, "%s: job_rank.py: %s", rt->what, why);
	else
		s->up[i] = true, s->pid[i] = s->t[i].py_pid;
	target_set_wrapper(NULL);
}

/* What the checker is told: the node and job, the targets it must find
 * (their truth, and for those found by ancestry the identity the fake
 * step daemon gives), the pids it must not. */
static char *expectation(const struct started *s, const char *job, pid_t traced, bool cut)
{
	char *text = NULL, *want = NULL, *unwanted = NULL;

	for (size_t i = 0; i < NTARGETS; i++) {
		const struct rank_target *rt = &rank_targets[i];

		if (rt->wanted && s->up[i])
			msg_add(&want, "%s{\"truth\": \"%s\", \"tree\": %s%s%s%s}", want ? ", " : "",
				s->t[i].truth, rt->how == BY_TREE ? "{\"id\": \"" : "null",
				rt->how == BY_TREE ? job : "",
				rt->how == BY_TREE ? "\", \"step\": \"0\", \"node\": \"" : "",
				rt->how == BY_TREE ? "hnode1\"}" : "");
		else if (!rt->wanted && s->pid[i] > 0)
			msg_add(&unwanted, "%s{\"pid\": %d, \"what\": \"%s\"}", unwanted ? ", " : "",
				(int)s->pid[i], rt->what);
	}
	msg_add(&text, "{\"node\": \"hnode1\", \"job\": \"%s\", \"want\": [%s], "
		"\"unwanted\": [%s], \"traced\": %d, \"cut\": %s}", job, want ? want : "",
		unwanted ? unwanted : "", (int)traced, cut ? "true" : "false");
	free(want);
	free(unwanted);
	return text;
}

/* pystrobe as srun starts it on hnode1, in the job's step 7. */
static int run_node(struct run *r, const char *job, const char *opt, bool cut)
{
	int rc;

	setenv("SLURMD_NODENAME", "hnode1", 1);
	setenv("SLURM_JOB_ID", job, 1);
	setenv("SLURM_STEP_ID", OWN_STEP, 1);
	rc = run_pystrobe(r, "dump", "--slurm-node", job, "--json", cut ? "--timeout=0.1" : opt,
			  cut ? opt : NULL, NULL);
	unsetenv("SLURMD_NODENAME");
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_STEP_ID");
	return rc;
}

/* traced: a wanted target that another tracer holds, or 0.  It cannot be
 * read (exit status 4), the others still are.  cut: with --timeout=0.1,
 * which the first read outlasts: the rest are listed unread (status 1). */
static void check_reply(const struct started *s, const char *job, const char *dir,
			const char *opt, pid_t traced, bool cut, char **failures)
{
	char script[PATH_MAX], out[PATH_MAX + 32], expect[PATH_MAX + 32], how[96];
	char *argv[] = { (char *)test_python3(), script, out, expect, NULL };
	char *text = expectation(s, job, traced, cut);
	struct run r, c;

	snprintf(script, sizeof(script), "%s/tests/check_dump_node.py", test_srcdir());
	snprintf(out, sizeof(out), "%s/node.out", dir);
	snprintf(expect, sizeof(expect), "%s/expect.json", dir);
	write_file(expect, text, strlen(text));
	free(text);
	if (run_node(&r, job, opt, cut) < 0) {
		msg_add(failures, "cannot run pystrobe");
		return;
	}
	if (run_exit(&r) != (traced ? 4 : cut ? 1 : 0) || r.err_len)
		msg_add(failures, "dump --slurm-node %s%s: %s: %.1000s", job, opt ? opt : "",
			run_describe(&r, how, sizeof(how)), r.err);
	write_file(out, r.out, r.out_len);
	run_free(&r);
	if (run_cmd(&c, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run check_dump_node.py");
		return;
	}
	printf("dump_node%s%s: %s", opt ? opt : "", cut ? " --timeout=0.1" : "", c.out);
	if (run_exit(&c) != 0)
		msg_add(failures, "%s%s%s", opt ? opt : "", c.out, c.err);
	run_free(&c);
}

/* A tracer that holds pid without stopping it (a debugger attached):
 * its pid, or -1.  Killing it lets pid go. */
static pid_t seize(pid_t pid)
{
	char path[64], *status, *at;
	pid_t tracer = fork();

	if (tracer == 0) {
		if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0)
			_exit(1);
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; tracer > 0 && i < 500; i++, sleep_ms(10)) {
		status = slurp(path);
		at = status ? strstr(status, "TracerPid:") : NULL;
		if (at && atoi(at + 10) == tracer) {
			free(status);
			return tracer;
		}
		free(status);
	}
	if (tracer > 0)
		kill_reap(tracer);
	return -1;
}

static void stop_all(struct started *s)
{
	for (size_t i = 0; i < NTARGETS; i++) {
		if (s->up[i]) {
			/* fake_slurm.sh's levels below the first. */
			kill_descendants(s->t[i].pid);
			target_stop(&s->t[i]);
		} else if (rank_targets[i].how == NOT_PYTHON && s->pid[i] > 0) {
			kill_reap(s->pid[i]);
		}
	}
}

START_TEST(test_node)
{
	const struct test_interp *ti;
	struct started s = { 0 };
	char *failures = NULL, job[16], next[16];
	const char *jobs[2] = { job, next };
	int oldest, newest;
	pid_t tracer;

	test_interp_span(interps, ninterps, &oldest, &newest);
	if (_i == 1 && oldest == newest)
		return;
	ti = &interps[_i ? newest : oldest];
	/* A job id of this run only: other runs may fake jobs beside it. */
	snprintf(job, sizeof(job), "%d", 7000000 + (int)getpid() % 1000000);
	snprintf(next, sizeof(next), "%d", 7000001 + (int)getpid() % 1000000);
	for (size_t i = 0; i < NTARGETS && !failures; i++)
		start_one(ti, jobs, i, &s, &failures);
	if (!failures)
		check_reply(&s, job, s.t[0].dir, NULL, 0, false, &failures);
	/* pyenv's libpython, with debug info: its symbols take longer than
	 * 0.1 s to load, first in the first process read. */
	if (!failures && !ti->root[0])
		check_reply(&s, job, s.t[0].dir, "--native", 0, true, &failures);
	if (!failures)
		check_reply(&s, job, s.t[0].dir, "--native", 0, false, &failures);
	if (!failures && (tracer = seize(s.pid[1])) < 0)
		msg_add(&failures, "cannot trace %d", (int)s.pid[1]);
	if (!failures) {
		check_reply(&s, job, s.t[0].dir, NULL, s.pid[1], false, &failures);
		kill_reap(tracer);
	}
	stop_all(&s);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
	free(failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dump_node");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The targets' environments are the test's: none may inherit a job
	 * of the machine the suite runs in. */
	for (size_t i = 0; i < sizeof(job_vars) / sizeof(job_vars[0]); i++)
		unsetenv(job_vars[i]);
	ninterps = test_interps(&interps);
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_node, 0, ninterps ? 2 : 0);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
