/* The tests' own Slurm cluster (tests/slurm-cluster.sh, tests/lib/slurm.c),
 * which the live tests of --slurm (issue 38) run their jobs on, proved
 * from /proc and from what srun brings back, never from pystrobe:
 *
 *   - ranks: 2 nodes; a 4-rank batch job of tests/targets/slurm_light_rank.py
 *     (srun, 2 per node, rank 3 stalled) has exactly 4 rank processes, each
 *     with the SLURM_PROCID, SLURMD_NODENAME and pid its own log names, 2 on
 *     each node, each a child of a `slurmstepd: [JOB.0]`; after
 *     slurm_down() none of them, nor munged, slurmctld, slurmd or
 *     slurmstepd of the cluster, is left running.
 *   - fanout: what the front of `--slurm` relies on: `srun --jobid=JOB
 *     --overlap -N2 --ntasks-per-node=1 --label` inside the running job runs
 *     once on each node (its "0: " and "1: " lines name both nodes), a
 *     400-byte line (the framing's longest, design38) comes back whole, and a
 *     5000-byte one comes back as "0: " lines of at most 1024 bytes that
 *     join into it (srun's split, printed in the log).
 *   - orphan: a test process that dies with its cluster up (no
 *     slurm_down(), as a failed check's _exit or Check's timeout kill) leaves
 *     nothing of it running: the script's watchdog stops it.
 *
 * Root only, with slurm-wlm and munge (a SKIP naming them otherwise).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "slurm.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

#define NODES		2
#define RANKS		4	/* 2 a node */
#define STALL_RANK	3
#define PYTHON		"/usr/bin/python3"
#define READY_MS	60000
#define GLOO_READY_MS	300000	/* 4 ranks importing torch on a loaded machine */
#define MAX_DAEMONS	(NODES + 2)

/* Up, or why not (slurm_up_or_skip()), and how long it took. */
static bool cluster_up(struct slurm *s, int nodes)
{
	/* pystrobe plays no part here: the plain build's run proves it,
	 * and the sanitizers' run has the time for what pystrobe does. */
	if (pystrobe_sanitized()) {
		test_skip("slurm cluster: the harness alone, proved by the plain build's run");
		return false;
	}
	if (!slurm_up_or_skip(s, nodes))
		return false;
	printf("slurm: %d nodes up in %.1f s\n", nodes, s->up_s);
	return true;
}

/* The light ranks' batch job: RANKS over NODES, rank STALL_RANK stalled;
 * their logs in logdir.  The job id. */
static long light_job(struct slurm *s, const char *logdir)
{
	char why[1024];
	long job = slurm_light_job(s, NODES, RANKS, STALL_RANK, PYTHON, logdir, READY_MS, why,
				   sizeof(why));

	ck_assert_msg(job > 0, "%s", why);
	return job;
}

/* A cluster of NODES nodes running light_job(), its logs in s->dir/light
 * (logdir); the job id, or -1 after a SKIP. */
static long light_up(struct slurm *s, char *logdir, size_t size)
{
	if (access(PYTHON, X_OK) != 0) {
		test_skip("slurm cluster: no %s (apt-get install python3)", PYTHON);
		return -1;
	}
	if (!cluster_up(s, NODES))
		return -1;
	snprintf(logdir, size, "%s/light", s->dir);
	return light_job(s, logdir);
}

/* One rank process against its own log and its parent: the stalled rank
 * in fetch_shard, the others in others. */
static void check_rank(const struct slurm_proc *p, long job, const char *logdir,
		       const char *others, char **msg)
{
	char path[PATH_MAX + 64], node[64], fn[64], want_parent[64], *log, *parent;

	snprintf(path, sizeof(path), "%s/rank-%ld.json", logdir, p->procid);
	log = slurp(path);
	json_text_str(log, "node", node, sizeof(node));
	json_text_str(log, "function", fn, sizeof(fn));
	if (!log || json_text_num(log, "pid") != p->pid || strcmp(node, p->node))
		msg_add(msg, "pid %d (rank %ld on %s) is not what %s says: %s", (int)p->pid,
			p->procid, p->node, path, log ? log : "(missing)");
	if (strcmp(fn, p->procid == STALL_RANK ? "fetch_shard" : others))
		msg_add(msg, "rank %ld is in %s", p->procid, fn);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)p->ppid);
	parent = slurp(path);
	snprintf(want_parent, sizeof(want_parent), "slurmstepd: [%ld.0]", job);
	if (!parent || strncmp(parent, want_parent, strlen(want_parent)))
		msg_add(msg, "rank %ld's parent %d is \"%s\", not %s", p->procid, (int)p->ppid,
			parent ? parent : "?", want_parent);
	free(parent);
	free(log);
}

/* The daemons' pids, from the cluster's pids file ("NAME PID" lines). */
static int daemon_pids(const struct slurm *s, pid_t *pids, int max)
{
	char path[PATH_MAX + 16], *text, *line, *save = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "%s/pids", s->dir);
	text = slurp(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save))
		if (strchr(line, ' '))
			pids[n++] = (pid_t)atoi(strchr(line, ' ') + 1);
	free(text);
	return n;
}

/* The job's RANKS rank processes (command line has word) from /proc, each
 * against its log in logdir, RANKS / NODES on each node; their count. */
static int job_ranks(long job, const char *word, const char *logdir, const char *others,
		     struct slurm_proc procs[16], char **msg)
{
	int n = slurm_job_procs(job, word, procs, 16), per_node[NODES + 1] = { 0 }, seen = 0;

	if (n != RANKS)
		msg_add(msg, "%d rank processes of job %ld in /proc, not %d", n, job, RANKS);
	for (int i = 0; i < n; i++) {
		int k = strncmp(procs[i].node, "hnode", 5) ? 0 : atoi(procs[i].node + 5);

		check_rank(&procs[i], job, logdir, others, msg);
		per_node[k >= 1 && k <= NODES ? k : 0]++;
		if (procs[i].procid >= 0 && procs[i].procid < RANKS)
			seen |= 1 << procs[i].procid;
		/* one slurmstepd a node: each node's ranks have their own */
		for (int j = 0; j < i; j++)
			if ((procs[i].ppid == procs[j].ppid) != !strcmp(procs[i].node, procs[j].node))
				msg_add(msg, "ranks %ld (%s) and %ld (%s) have parents %d and %d",
					procs[i].procid, procs[i].node, procs[j].procid,
					procs[j].node, (int)procs[i].ppid, (int)procs[j].ppid);
	}
	for (int k = 1; k <= NODES; k++)
		if (per_node[k] != RANKS / NODES)
			msg_add(msg, "hnode%d has %d ranks, not %d", k, per_node[k], RANKS / NODES);
	if (seen != (1 << RANKS) - 1 || per_node[0])
		msg_add(msg, "ranks seen %#x, %d on no node of the cluster", seen, per_node[0]);
	return n;
}

static bool running(pid_t pid)
{
	char st = proc_state(pid, pid);

	return st && st != 'Z' && st != 'X';
}

START_TEST(test_ranks)
{
	struct slurm s;
	struct slurm_proc procs[16];
	pid_t daemons[MAX_DAEMONS + 4];
	char logdir[PATH_MAX + 16], why[1024], left[1024], *msg = NULL;
	int n, ndaemons;
	long job;

	job = light_up(&s, logdir, sizeof(logdir));
	if (job < 0)
		return;
	n = job_ranks(job, "slurm_light_rank.py", logdir, "allreduce_wait", procs, &msg);
	ndaemons = daemon_pids(&s, daemons, MAX_DAEMONS + 4);
	if (ndaemons != MAX_DAEMONS)
		msg_add(&msg, "%d daemons in %s/pids, not %d", ndaemons, s.dir, MAX_DAEMONS);
	if (slurm_down_check(&s, why, sizeof(why)) < 0)
		msg_add(&msg, "slurm_down: %s", why);
	printf("slurm: down in %.1f s\n", s.down_s);
	for (int i = 0; i < n; i++)
		if (running(procs[i].pid))
			msg_add(&msg, "rank %ld (pid %d) outlived slurm_down", procs[i].procid,
				(int)procs[i].pid);
	for (int i = 0; i < ndaemons; i++)
		if (running(daemons[i]))
			msg_add(&msg, "daemon pid %d outlived slurm_down", (int)daemons[i]);
	if (slurm_leftovers(&s, left, sizeof(left)))
		msg_add(&msg, "left running: %s", left);
	fail_if_any(msg, "the cluster's job");
}
END_TEST

/* The gloo job (slurm_gloo_train.py on the sid root's torch): RANKS
 * ranks over NODES nodes, each the root's python3.14, rank STALL_RANK in
 * fetch_shard, the others blocked in all_reduce. */
START_TEST(test_gloo)
{
	char host[PATH_MAX], inside[PATH_MAX], exe[2 * PATH_MAX], why[1024], left[1024];
	char path[64], *cmd, *text, *msg = NULL;
	const struct test_interp *all, *ti;
	struct slurm_proc procs[16];
	struct slurm s;
	int n, nall = test_interps(&all);
	long job;

	ti = test_interp_torch(all, nall, "slurm cluster: the gloo job");
	if (!ti || !cluster_up(&s, NODES))
		return;
	test_interp_shared_dir(ti, host, inside, sizeof(host));
	cmd = slurm_python_cmd(ti, "tests/targets/slurm_gloo_train.py");
	text = xasprintf("#!/bin/sh\n#SBATCH -N %d -n %d --ntasks-per-node=%d\n"
			 "export STALL_RANK=%d\nexec srun %s %s\n", NODES, RANKS, RANKS / NODES,
			 STALL_RANK, cmd, inside);
	job = slurm_sbatch(&s, text, why, sizeof(why));
	ck_assert_msg(job > 0, "%s", why);
	ck_assert_msg(!slurm_wait_ranks(&s, job, host, RANKS, GLOO_READY_MS, why, sizeof(why)),
		      "%s", why);
	n = job_ranks(job, "slurm_gloo_train.py", host, "average_gradients", procs, &msg);
	snprintf(exe, sizeof(exe), "%s%s", ti->root, ti->path);
	for (int i = 0; i < n; i++) {
		char real[PATH_MAX] = "", *want = realpath(exe, NULL);
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)procs[i].pid);
		len = readlink(path, real, sizeof(real) - 1);
		real[len > 0 ? len : 0] = 0;
		if (!want || strcmp(real, want))
			msg_add(&msg, "rank %ld runs %s, not %s", procs[i].procid, real, exe);
		free(want);
	}
	if (slurm_down_check(&s, why, sizeof(why)) < 0)
		msg_add(&msg, "slurm_down: %s", why);
	printf("slurm: down in %.1f s\n", s.down_s);
	if (slurm_leftovers(&s, left, sizeof(left)))
		msg_add(&msg, "left running: %s", left);
	rm_rf(host);
	free(text);
	free(cmd);
	fail_if_any(msg, "the gloo job");
}
END_TEST

/* srun --jobid=JOB --overlap -N2 --ntasks-per-node=1 --label ARGV...: its
 * output (free it), or NULL with why. */
static char *fan_out(long job, const char *const *argv, char *why, size_t whysize)
{
	char id[32], how[64], *out = NULL;
	struct argv_buf a = { .n = 0 };
	struct run r;

	snprintf(id, sizeof(id), "--jobid=%ld", job);
	args(&a, (char *const[]){ "srun", id, "--overlap", "-N2", "--ntasks-per-node=1", "--label",
				  NULL });
	args(&a, (char *const *)argv);
	if (run_cmd(&r, RUN_TIMEOUT_MS, a.v) < 0) {
		snprintf(why, whysize, "cannot run srun");
		return NULL;
	}
	if (run_exit(&r) == 0)
		out = strdup(r.out);
	else
		snprintf(why, whysize, "srun: %s: %.500s", run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	return out;
}

/* The payloads of the lines labelled "task: " in out, joined, and how many
 * lines and the longest line (label included). */
static char *label_payload(const char *out, int task, int *lines, size_t *longest)
{
	char label[16];
	struct strbuf sb = STRBUF_INIT;
	size_t ll = 0;

	snprintf(label, sizeof(label), "%d: ", task);
	ll = strlen(label);
	*lines = 0;
	*longest = 0;
	for (const char *p = out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
		size_t len = strcspn(p, "\n");

		if (len < ll || strncmp(p, label, ll))
			continue;
		sb_printf(&sb, "%.*s", (int)(len - ll), p + ll);
		(*lines)++;
		if (len > *longest)
			*longest = len;
	}
	return sb_detach(&sb);
}

/* Task 0 writes a line of len bytes of 'x', task 1 one of 'y': each comes
 * back under its label; srun's split of each printed. */
static void long_lines(long job, size_t len, bool whole, char **msg)
{
	char code[256], why[1024], *out;
	const char *const argv[] = { PYTHON, "-c", code, NULL };

	snprintf(code, sizeof(code),
		 "import os, sys; c = 'xy'[int(os.environ['SLURM_PROCID'])]; "
		 "sys.stdout.write(c * %zu + '\\n')", len);
	out = fan_out(job, argv, why, sizeof(why));
	if (!out) {
		msg_add(msg, "%zu-byte lines: %s", len, why);
		return;
	}
	for (int task = 0; task < NODES; task++) {
		int lines;
		size_t longest;
		char *got = label_payload(out, task, &lines, &longest);
		size_t bad = strspn(got, task ? "y" : "x");

		printf("slurm: a %zu-byte line of task %d came back as %d line(s) of at most "
		       "%zu bytes, label included\n", len, task, lines, longest);
		if (strlen(got) != len || bad != len)
			msg_add(msg, "task %d's %zu-byte line came back as %zu bytes (%zu right)",
				task, len, strlen(got), bad);
		if (whole && lines != 1)
			msg_add(msg, "task %d's %zu-byte line came back in %d lines", task, len,
				lines);
		free(got);
	}
	free(out);
}

START_TEST(test_fanout)
{
	const char *const where[] = { "sh", "-c", "echo \"$SLURMD_NODENAME $SLURM_PROCID\"",
				      NULL };
	char logdir[PATH_MAX + 16], why[1024], *out, *msg = NULL;
	struct slurm s;
	long job;

	job = light_up(&s, logdir, sizeof(logdir));
	if (job < 0)
		return;
	out = fan_out(job, where, why, sizeof(why));
	if (!out)
		msg_add(&msg, "%s", why);
	else if (strcmp(out, "0: hnode1 0\n1: hnode2 1\n") &&
		 strcmp(out, "1: hnode2 1\n0: hnode1 0\n"))
		msg_add(&msg, "the fan-out said \"%s\", not once on each node", out);
	free(out);
	long_lines(job, 400, true, &msg);
	long_lines(job, 5000, false, &msg);
	if (slurm_down_check(&s, why, sizeof(why)) < 0)
		msg_add(&msg, "slurm_down: %s", why);
	fail_if_any(msg, "the fan-out");
}
END_TEST

/* A child brings a cluster up and dies without slurm_down(): the
 * watchdog must stop it all (bounded). */
START_TEST(test_orphan)
{
	int fds[2], status;
	char conf[PATH_MAX + 16] = "", left[1024];
	struct slurm s;
	pid_t child;
	ssize_t got;
	long long deadline;

	ck_assert(pipe(fds) == 0);
	child = fork();
	if (child == 0) {
		char why[1024];
		int rc = slurm_up(&s, 1, why, sizeof(why));

		dprintf(fds[1], "%d %s", rc, rc ? why : s.conf);
		_exit(0);		/* no atexit(): as a failed check's exit */
	}
	close(fds[1]);
	got = read(fds[0], conf, sizeof(conf) - 1);
	close(fds[0]);
	waitpid(child, &status, 0);
	conf[got > 0 ? got : 0] = 0;
	if (atoi(conf) == SLURM_UNAVAILABLE) {
		test_skip("slurm cluster: %s", strchr(conf, ' ') + 1);
		return;
	}
	ck_assert_msg(atoi(conf) == 0 && strchr(conf, ' '), "slurm_up in the child: %s", conf);
	memset(&s, 0, sizeof(s));
	snprintf(s.conf, sizeof(s.conf), "%s", strchr(conf, ' ') + 1);
	snprintf(s.dir, sizeof(s.dir), "%.*s", (int)(strrchr(s.conf, '/') - s.conf), s.conf);
	deadline = now_ms() + 60000;
	while ((slurm_leftovers(&s, left, sizeof(left)) || access(s.dir, F_OK) == 0) &&
	       now_ms() < deadline)
		sleep_ms(200);
	ck_assert_msg(!slurm_leftovers(&s, left, sizeof(left)),
		      "60 s after its test process died, the cluster still runs: %s", left);
	ck_assert_msg(access(s.dir, F_OK) != 0, "the watchdog stopped the cluster but left %s",
		      s.dir);
	printf("slurm: the watchdog stopped the orphaned cluster in %.1f s\n",
	       60 - (deadline - now_ms()) / 1000.0);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "ranks", 240, 0, 1, { test_ranks } },
		{ "fanout", 240, 0, 1, { test_fanout } },
		{ "orphan", 180, 0, 1, { test_orphan } },
		{ "gloo", 420, 0, 1, { test_gloo } },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return run_groups("slurm_cluster", groups, sizeof(groups) / sizeof(groups[0]), 0, 1);
}
