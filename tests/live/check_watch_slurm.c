/* A node's watcher alone (watch --slurm-node, no cluster: a process whose
 * environment names the job and node, as Slurm's would): its framed
 * replies, heartbeat, stall and dump, and SIGUSR1 its clean end.
 *
 * `pystrobe watch --slurm` on the tests' own Slurm cluster (2 nodes,
 * tests/slurm-cluster.sh): one report for the whole job, naming the odd
 * rank, its node and where it is, with every node's dump.
 *
 * The job: 4 light ranks (tests/targets/slurm_stall_ranks.py), 2 a node,
 * work for MOVE_S seconds in changing stacks, then stop for good: rank 3
 * in fetch_shard(), the others in all_reduce(), each blocked on a lock.
 * Each logs rank-N.json just before it blocks: its node, pid, function,
 * line and the moment (its own clock): the ground truth.  The watch runs
 * from the start with --stall STALL_S; the test polls the report
 * directory every 100 ms and holds what it finds against the logs:
 *
 *   - a report directory within STALL_S + ALLOWED_S of the latest onset,
 *     and no second one while the ranks stay stopped (STALL_S more);
 *   - one line on watch's stderr for it, with "rank 3 on NODE differs: in
 *     fetch_shard (slurm_stall_ranks.py:LINE)" and "ranks 0-2 on
 *     hnode[1-2] in all_reduce (slurm_stall_ranks.py:LINE)", from the
 *     logs;
 *   - dump-hnode1.json and dump-hnode2.json in it, each with the pids of
 *     that node's ranks (from the logs) and no other node's;
 *   - after SIGINT, watch exits 0 within STOP_MS, no `watch --slurm-node`
 *     is left running, and no rank is left stopped.
 *
 * The same with rank 3 working 6 s longer than the others (late): the
 * report waits for it, and names it in fetch_shard.
 *
 * --on-stall and the job's flight recording (onstall), the light ranks
 * again: the command runs once (one file it writes, no second while the
 * ranks stay stopped), with $PYSTROBE_REPORT the job's report directory
 * and, listed by the command itself as it ran, both nodes' dumps and
 * flight.pstrobe in it.  The recording, read by `pystrobe convert -f
 * collapsed`, holds each rank under "node=NODE;rank=R;process PID" (node
 * and pid from the rank's log), with samples in the function and at the
 * line its log says it stopped in, and none of it under the other node.
 * SIGUSR1 to the front writes flight-UNIX-jobJ/flight.pstrobe within
 * FLIGHT_MS, held to the same.
 *
 * A node's watcher killed (SIGKILL, hnode2's): the front names that node
 * within its --timeout (5) and 3 s, and no other, and exits 13.
 *
 * No pystrobe where --pystrobe says: each node named with the hint, exit
 * 13 (nobinary).  The front killed outright (SIGKILL): no srun nor node
 * watcher left within 15 s (killed).
 *
 * The same for the torch job (tests/targets/slurm_gloo_train.py, gloo
 * ranks on the sid root's torch, rank 3 in fetch_shard, the others in
 * torch's all_reduce): its ranks log no time, the latest log's own is the
 * onset; the others' line is torch's, only "in all_reduce (" is checked.
 *
 * SKIP when the cluster cannot run here (not root, no slurm-wlm/munge) or
 * there is no /usr/bin/python3 (gloo: no torch in the sid root).
 */
#include <check.h>
#include <dirent.h>
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
#define RANKS		4
#define ODD_RANK	3
#define PYTHON		"/usr/bin/python3"
#define MOVE_S		"3"
#define STALL_S		4
#define ALLOWED_S	5	/* the node's round and judge, the dumps' gathering */
#define READY_MS	60000
#define GLOO_READY_MS	300000	/* 4 ranks importing torch on a loaded machine */
#define STOP_MS		20000
#define POLL_MS		100
#define FLIGHT_MS	10000	/* SIGUSR1 to the job's recording written */

struct rank_log {
	char node[64], function[64], file[PATH_MAX];
	long pid, line;
	double stalled;
};

static bool cluster_or_skip(struct slurm *s)
{
	if (slurm_skip_sanitized("watch --slurm"))
		return false;
	if (access(PYTHON, X_OK) != 0) {
		test_skip("watch --slurm: no %s (apt-get install python3)", PYTHON);
		return false;
	}
	return slurm_up_or_skip(s, NODES);
}

/* A batch job of RANKS tasks over NODES, each running `ranks`. */
static long submit(struct slurm *s, const char *ranks)
{
	char why[1024], *text;
	long job;

	text = xasprintf("#!/bin/sh\n#SBATCH -N %d -n %d --ntasks-per-node=%d\n"
			 "exec srun %s\n", NODES, RANKS, RANKS / NODES, ranks);
	job = slurm_sbatch(s, text, why, sizeof(why));
	free(text);
	ck_assert_msg(job > 0, "%s", why);
	ck_assert_msg(!slurm_wait_running(s, job, READY_MS, why, sizeof(why)), "%s", why);
	return job;
}

/* The string after "key": "..." in a JSON text the target wrote. */
static void text_str(const char *text, const char *key, char *out, size_t size)
{
	char *pat = xasprintf("\"%s\": \"", key);
	const char *p = strstr(text, pat);

	out[0] = 0;
	if (p)
		snprintf(out, size, "%.*s", (int)strcspn(p + strlen(pat), "\""), p + strlen(pat));
	free(pat);
}

static void read_log(const char *logdir, int rank, struct rank_log *l)
{
	char *path = xasprintf("%s/rank-%d.json", logdir, rank), *text = slurp(path);
	struct stat st;

	ck_assert_msg(text, "no %s", path);
	text_str(text, "node", l->node, sizeof(l->node));
	text_str(text, "function", l->function, sizeof(l->function));
	l->pid = (long)json_text_num(text, "pid");
	l->line = (long)json_text_num(text, "line");
	l->stalled = json_text_num(text, "stalled_unix");
	text_str(text, "file", l->file, sizeof(l->file));
	/* The gloo ranks log no time: the log's own is when it stopped. */
	if (l->stalled < 0 && stat(path, &st) == 0)
		l->stalled = st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
	free(text);
	free(path);
}

/* The report directories (stall-*) in dir; the first one's path. */
static int reports(const char *dir, char *first, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "stall-", 6) && n++ == 0)
			snprintf(first, size, "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
	return n;
}

static int count_lines_with(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* The watch's exit status, or -1 when it did not end within ms. */
static int wait_exit(pid_t pid, int ms)
{
	int st;

	for (long long end = now_ms() + ms; now_ms() < end; sleep_ms(POLL_MS))
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	kill_reap(pid);
	return -1;
}

/* Processes whose command line has word; their count. */
static int procs_with(const char *word)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[4096];
		FILE *f;
		size_t len;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < len; i++)
			buf[i] = buf[i] ? buf[i] : ' ';
		buf[len] = 0;
		n += strstr(buf, word) != NULL;
	}
	if (d)
		closedir(d);
	return n;
}

/* The line and the dumps against the ranks' logs. */
static void check_report(const char *err, const char *dir, const struct rank_log *l)
{
	const char *base = strrchr(l[ODD_RANK].file, '/');
	char *odd = xasprintf("rank %d on %s differs: in fetch_shard (%s:%ld)", ODD_RANK,
			      l[ODD_RANK].node, base ? base + 1 : l[ODD_RANK].file,
			      l[ODD_RANK].line);
	/* The light ranks sit in their own all_reduce; the gloo ones in
	 * torch's, whose line is torch's version's. */
	char *rest = !strcmp(l[0].function, "all_reduce") ?
		     xasprintf("ranks 0-2 on hnode[1-2] in all_reduce (%s:%ld)", l[0].file,
			       l[0].line) : xstrdup("ranks 0-2 on hnode[1-2] in all_reduce (");

	ck_assert_msg(strstr(err, odd) && strstr(err, rest), "the line does not name both '%s' and "
		      "'%s': %s", odd, rest, err);
	for (int r = 0; r < RANKS; r++) {
		char *path = xasprintf("%s/dump-%s.json", dir, l[r].node), *text = slurp(path);
		char *pid = xasprintf("\"pid\":%ld,", l[r].pid), *other;

		ck_assert_msg(text && strstr(text, pid), "rank %d (pid %ld) is not in %s", r,
			      l[r].pid, path);
		free(text);
		text = xasprintf("%s/dump-%s.json", dir, strcmp(l[r].node, "hnode1") ? "hnode1" :
				 "hnode2");
		other = slurp(text);
		ck_assert_msg(!other || !strstr(other, pid), "rank %d of %s is in %s too", r,
			      l[r].node, text);
		free(other);
		free(pid);
		free(text);
		free(path);
	}
	free(odd);
	free(rest);
}

/* The report once, in time, after the latest onset the ranks logged. */
static void await_report(const char *repdir, const char *errpath, const struct rank_log *l,
			 char *dir, size_t size)
{
	double onset = 0, seen;
	char *err = NULL;

	for (int r = 0; r < RANKS; r++)
		onset = l[r].stalled > onset ? l[r].stalled : onset;
	while (!reports(repdir, dir, size) && wall_s() < onset + STALL_S + ALLOWED_S + 20)
		sleep_ms(POLL_MS);
	seen = wall_s();
	ck_assert_msg(reports(repdir, dir, size) == 1, "no report %.1f s after the onset",
		      seen - onset);
	printf("watch --slurm: report %.1f s after the ranks stopped (--stall %d)\n",
	       seen - onset, STALL_S);
	err = slurp(errpath);
	ck_assert_msg(seen - onset <= STALL_S + ALLOWED_S, "the report came %.1f s after the "
		      "onset, past --stall + %d s: %s", seen - onset, ALLOWED_S, err);
	free(err);
	/* No second report while they stay stopped. */
	sleep_ms(STALL_S * 1000 + 2000);
	err = slurp(errpath);
	ck_assert_msg(reports(repdir, dir, size) == 1, "%d reports", reports(repdir, dir, size));
	ck_assert_msg(count_lines_with(err, "; report: ") == 1, "not one report line: %s", err);
	check_report(err, dir, l);
	free(err);
}

/* Watch job from its start until its ranks have stopped and the report
 * is checked; then Ctrl-C, and nothing left running or stopped. */
static void watch_job(struct slurm *s, long job, const char *logdir, int ready_ms)
{
	struct rank_log l[RANKS];
	char repdir[PATH_MAX + 32], errpath[PATH_MAX + 32], dir[PATH_MAX * 2], why[1024];
	char *jobarg = xasprintf("--slurm=%ld", job), *node_arg;
	pid_t w;

	snprintf(repdir, sizeof(repdir), "%s/reports-%ld", s->dir, job);
	snprintf(errpath, sizeof(errpath), "%s/watch-%ld.err", s->dir, job);
	w = spawn_cmd_err((char *[]){ (char *)pystrobe_path(), "watch", jobarg, "--stall=4", "-D",
				      repdir, NULL }, errpath);
	ck_assert_msg(w > 0, "cannot start pystrobe watch");
	ck_assert_msg(!slurm_wait_ranks(s, job, logdir, RANKS, ready_ms, why, sizeof(why)), "%s",
		      why);
	for (int r = 0; r < RANKS; r++)
		read_log(logdir, r, &l[r]);
	await_report(repdir, errpath, l, dir, sizeof(dir));
	kill(w, SIGINT);
	ck_assert_int_eq(wait_exit(w, STOP_MS), 0);
	node_arg = xasprintf("--slurm-node=%ld", job);
	for (long long end = now_ms() + 5000; procs_with(node_arg) && now_ms() < end;)
		sleep_ms(POLL_MS);
	ck_assert_msg(!procs_with(node_arg), "a node's watcher outlived the front");
	for (int r = 0; r < RANKS; r++)
		ck_assert_msg(proc_state((pid_t)l[r].pid, 0) != 'T', "rank %d left stopped", r);
	free(node_arg);
	free(jobarg);
}

/* The light ranks' job, their logs in logdir (s->dir/ranks); times is
 * slurm_stall_ranks.py's "MOVE_S [LATE_S]". */
static long light_job(struct slurm *s, char *logdir, size_t size, const char *times)
{
	char *ranks;
	long job;

	snprintf(logdir, size, "%s/ranks", s->dir);
	ck_assert_msg(mkdir(logdir, 0755) == 0, "mkdir %s", logdir);
	ranks = xasprintf("%s %s/tests/targets/slurm_stall_ranks.py %s %s", PYTHON, test_srcdir(),
			  logdir, times);
	job = submit(s, ranks);
	free(ranks);
	return job;
}

/* The light ranks, rank 3 late by late_s seconds (a string) or not. */
static void light_case(const char *late_s)
{
	struct slurm s;
	char logdir[PATH_MAX + 8], *times = xasprintf("%s %s", MOVE_S, late_s);
	long job;

	if (!cluster_or_skip(&s)) {
		free(times);
		return;
	}
	job = light_job(&s, logdir, sizeof(logdir), times);
	watch_job(&s, job, logdir, READY_MS);
	free(times);
	slurm_down(&s);
}

START_TEST(test_light)
{
	light_case("0");
}
END_TEST

/* Rank 3 works on 5 s after the others stopped, past --stall (4 s):
 * hnode1's ranks stall first, and the job's report waits for rank 3 (a
 * rank that moves is late, not stuck, for up to one more --stall), which
 * it then names in fetch_shard.  From the others' stop, not from its
 * start: srun may start it seconds after them on a loaded machine. */
START_TEST(test_late)
{
	light_case("5");
}
END_TEST

/* The torch job: gloo ranks on the sid root's python, rank 3 in
 * fetch_shard, the others in torch's all_reduce. */
START_TEST(test_gloo)
{
	char host[PATH_MAX], inside[PATH_MAX], *cmd, *ranks;
	const struct test_interp *all, *ti;
	int nall = test_interps(&all);
	struct slurm s;
	long job;

	ti = test_interp_torch(all, nall, "watch --slurm: the gloo job");
	if (!ti || !cluster_or_skip(&s))
		return;
	test_interp_shared_dir(ti, host, inside, sizeof(host));
	cmd = slurm_python_cmd(ti, "tests/targets/slurm_gloo_train.py");
	ranks = xasprintf("%s %s", cmd, inside);
	job = submit(&s, ranks);
	watch_job(&s, job, host, GLOO_READY_MS);
	slurm_down(&s);
	rm_rf(host);
	free(ranks);
	free(cmd);
}
END_TEST

/* The pid of node's watcher of job (its environment names the node),
 * or 0. */
static pid_t node_watcher(long job, const char *node)
{
	char *arg = xasprintf("--slurm-node=%ld", job), *env = xasprintf("SLURMD_NODENAME=%s", node);
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (d && !found && (e = readdir(d))) {
		char path[300];
		char *cmd, *envs;
		size_t len = 0, clen = 0;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		cmd = read_file(path, &clen);
		snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
		envs = read_file(path, &len);
		/* argv[0] is pystrobe itself, not srun naming it. */
		if (cmd && strstr(cmd, "pystrobe") && !strstr(cmd, "srun"))
			for (size_t i = 0; envs && i < len; i += strlen(envs + i) + 1)
				if (!strcmp(envs + i, env) && memmem(cmd, clen, arg, strlen(arg)))
					found = atoi(e->d_name);
		free(cmd);
		free(envs);
	}
	if (d)
		closedir(d);
	free(arg);
	free(env);
	return found;
}

/* The first entry of dir whose name starts with prefix and ends with
 * suffix, into out; how many there are. */
static int entries(const char *dir, const char *prefix, const char *suffix, char *out,
		   size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (strncmp(e->d_name, prefix, strlen(prefix)) || len < strlen(suffix) ||
		    strcmp(e->d_name + len - strlen(suffix), suffix))
			continue;
		if (n++ == 0)
			snprintf(out, size, "%s/%s", dir, e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* The job's recording at path against the ranks' logs: each rank's
 * samples under its node, rank and pid, some in the function and at the
 * line it logged, none under the other node. */
static void check_flight(const char *path, const struct rank_log *l)
{
	char *out = xasprintf("%s.folded", path), *text;
	struct run r;

	ck_assert_int_eq(run_pystrobe(&r, "convert", "-q", "-f", "collapsed", "-o", out, path,
				      NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "convert %s: %s", path, r.err);
	run_free(&r);
	ck_assert_msg((text = slurp(out)), "no %s", out);
	for (int k = 0; k < RANKS; k++) {
		const char *base = strrchr(l[k].file, '/') ? strrchr(l[k].file, '/') + 1 : l[k].file;
		char *under = xasprintf("node=%s;rank=%d;process %ld:", l[k].node, k, l[k].pid);
		char *where = xasprintf(";%s (%s:%ld)", l[k].function, base, l[k].line);
		char *other = xasprintf("node=%s;rank=%d;", strcmp(l[k].node, "hnode1") ?
					"hnode1" : "hnode2", k);
		bool in = false, at = false;

		for (const char *p = text; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
			char *line = xasprintf("%.*s", (int)strcspn(p, "\n"), p);

			if (!strncmp(line, under, strlen(under))) {
				in = true;
				at = at || strstr(line, where);
			}
			ck_assert_msg(strncmp(line, other, strlen(other)), "rank %d under %s", k,
				      line);
			free(line);
		}
		ck_assert_msg(in, "no sample of rank %d under '%s' in %s", k, under, path);
		ck_assert_msg(at, "no sample of rank %d at '%s' in %s", k, where, path);
		free(under);
		free(where);
		free(other);
	}
	free(text);
	free(out);
}

/* What the --on-stall command wrote: once, naming the report dir, and
 * listing both nodes' dumps and the recording as it ran. */
static void check_hook(const char *hookdir, const char *dir)
{
	static const char *const want[] = { "dump-hnode1.json\n", "dump-hnode2.json\n",
					    "flight.pstrobe\n", "report.json\n" };
	char path[PATH_MAX * 2], *text, *line;

	for (long long end = now_ms() + 5000; !entries(hookdir, "hook-", ".txt", path,
						       sizeof(path)) && now_ms() < end;)
		sleep_ms(POLL_MS);
	ck_assert_int_eq(entries(hookdir, "hook-", ".txt", path, sizeof(path)), 1);
	text = slurp(path);
	line = xasprintf("report=%s kind=", dir);
	ck_assert_msg(text && strstr(text, line), "the command saw no '%s': %s", line, text);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		ck_assert_msg(strstr(text, want[i]), "the command saw no %s in the report: %s",
			      want[i], text);
	free(line);
	free(text);
}

/* --on-stall once, the job's recording in its report and on SIGUSR1. */
START_TEST(test_onstall)
{
	struct rank_log l[RANKS];
	struct slurm s;
	char logdir[PATH_MAX + 8], repdir[PATH_MAX + 32], hookdir[PATH_MAX + 32];
	char errpath[PATH_MAX + 32], dir[PATH_MAX * 2], flight[PATH_MAX * 3], why[1024];
	char *jobarg, *hook, *rec, *err;
	long long asked;
	pid_t w;
	long job;

	if (!cluster_or_skip(&s))
		return;
	job = light_job(&s, logdir, sizeof(logdir), "0");
	snprintf(repdir, sizeof(repdir), "%s/reports-%ld", s.dir, job);
	snprintf(hookdir, sizeof(hookdir), "%s/hooks", s.dir);
	snprintf(errpath, sizeof(errpath), "%s/watch-%ld.err", s.dir, job);
	ck_assert_int_eq(mkdir(hookdir, 0755), 0);
	jobarg = xasprintf("--slurm=%ld", job);
	hook = xasprintf("--on-stall={ echo \"report=$PYSTROBE_REPORT kind=$PYSTROBE_STALL_KIND\"; "
			 "ls \"$PYSTROBE_REPORT\"; } > %s/.h-$$ && mv %s/.h-$$ %s/hook-$$.txt",
			 hookdir, hookdir, hookdir);
	w = spawn_cmd_err((char *[]){ (char *)pystrobe_path(), "watch", jobarg, "--stall=4", hook,
				      "-D", repdir, NULL }, errpath);
	ck_assert_msg(w > 0, "cannot start pystrobe watch");
	ck_assert_msg(!slurm_wait_ranks(&s, job, logdir, RANKS, READY_MS, why, sizeof(why)), "%s",
		      why);
	for (int r = 0; r < RANKS; r++)
		read_log(logdir, r, &l[r]);
	await_report(repdir, errpath, l, dir, sizeof(dir));
	check_hook(hookdir, dir);
	rec = xasprintf("%s/flight.pstrobe", dir);
	check_flight(rec, l);
	free(rec);
	/* SIGUSR1: the job's recording now, in a directory of its own. */
	kill(w, SIGUSR1);
	asked = now_ms();
	while (!entries(repdir, "flight-", "", flight, sizeof(flight)) && now_ms() < asked + FLIGHT_MS)
		sleep_ms(POLL_MS);
	ck_assert_msg(entries(repdir, "flight-", "", flight, sizeof(flight)) == 1,
		      "no flight-* directory %d ms after SIGUSR1", FLIGHT_MS);
	rec = xasprintf("%s/flight.pstrobe", flight);
	while (access(rec, F_OK) != 0 && now_ms() < asked + FLIGHT_MS)
		sleep_ms(POLL_MS);
	printf("watch --slurm: the job's flight recording %.1f s after SIGUSR1\n",
	       (now_ms() - asked) / 1000.0);
	check_flight(rec, l);
	err = slurp(errpath);
	ck_assert_msg(err && strstr(err, "wrote the flight recording"), "%s", err);
	kill(w, SIGINT);
	ck_assert_int_eq(wait_exit(w, STOP_MS), 0);
	ck_assert_int_eq(entries(hookdir, "hook-", ".txt", dir, sizeof(dir)), 1);
	free(err);
	free(rec);
	free(hook);
	free(jobarg);
	slurm_down(&s);
}
END_TEST

/* A node's watcher killed: the front names that node, within its
 * --timeout and a second or two, and no other; it exits 13. */
START_TEST(test_silent)
{
	struct slurm s;
	char logdir[PATH_MAX + 8], errpath[PATH_MAX + 32], *jobarg, *err = NULL;
	long long killed;
	pid_t w, victim = 0;
	long job;

	if (!cluster_or_skip(&s))
		return;
	snprintf(errpath, sizeof(errpath), "%s/watch-silent.err", s.dir);
	job = light_job(&s, logdir, sizeof(logdir), "200");
	jobarg = xasprintf("--slurm=%ld", job);
	w = spawn_cmd_err((char *[]){ (char *)pystrobe_path(), "watch", jobarg, "--stall=60",
				      "--timeout=5", "-D", s.dir, NULL }, errpath);
	for (long long end = now_ms() + READY_MS; !victim && now_ms() < end; sleep_ms(POLL_MS))
		victim = node_watcher(job, "hnode2");
	ck_assert_msg(victim > 0, "no watcher of hnode2 started");
	sleep_ms(3000);		/* heartbeats from both */
	kill(victim, SIGKILL);
	killed = now_ms();
	for (; now_ms() < killed + 16000; sleep_ms(POLL_MS)) {
		free(err);
		err = slurp(errpath);
		if (err && strstr(err, "node hnode2: no heartbeat for 5 s"))
			break;
	}
	printf("watch --slurm: a killed node named %.1f s after (--timeout 5)\n",
	       (now_ms() - killed) / 1000.0);
	ck_assert_msg(err && strstr(err, "node hnode2: no heartbeat for 5 s"), "not named: %s",
		      err);
	ck_assert_msg(now_ms() - killed <= 5000 + 3000, "named past --timeout + 3 s");
	ck_assert_msg(!strstr(err, "node hnode1: no heartbeat"), "hnode1 named too: %s", err);
	kill(w, SIGINT);
	ck_assert_int_eq(wait_exit(w, STOP_MS), 13);
	free(err);
	free(jobarg);
	slurm_down(&s);
}
END_TEST

/* The front killed outright (SIGKILL, no chance to stop anything): srun,
 * tied to it, takes SIGTERM and cancels its step; no node's watcher is
 * left within KILLWAIT_MS (the cluster's KillWait is 5 s). */
#define KILLWAIT_MS 15000

START_TEST(test_killed)
{
	struct slurm s;
	char logdir[PATH_MAX + 8], *jobarg, *node_arg;
	long long killed;
	pid_t w;
	long job;

	if (!cluster_or_skip(&s))
		return;
	job = light_job(&s, logdir, sizeof(logdir), "200");
	jobarg = xasprintf("--slurm=%ld", job);
	node_arg = xasprintf("--slurm-node=%ld", job);
	w = spawn_cmd((char *[]){ (char *)pystrobe_path(), "watch", jobarg, "-D", s.dir, NULL });
	for (long long end = now_ms() + READY_MS;
	     (!node_watcher(job, "hnode1") || !node_watcher(job, "hnode2")) && now_ms() < end;)
		sleep_ms(POLL_MS);
	ck_assert_msg(node_watcher(job, "hnode1") && node_watcher(job, "hnode2"),
		      "the nodes' watchers did not start");
	kill_reap(w);
	killed = now_ms();
	while (procs_with(node_arg) && now_ms() < killed + KILLWAIT_MS)
		sleep_ms(POLL_MS);
	printf("watch --slurm: killed outright, its watchers gone %.1f s after\n",
	       (now_ms() - killed) / 1000.0);
	ck_assert_msg(!procs_with(node_arg), "srun or a node's watcher outlived the front");
	free(node_arg);
	free(jobarg);
	slurm_down(&s);
}
END_TEST

/* No pystrobe where --pystrobe says, on any node: each node named with
 * the hint, and exit 13, without waiting for the job to end. */
START_TEST(test_nobinary)
{
	struct slurm s;
	char logdir[PATH_MAX + 8], *jobarg;
	struct run r;
	long job;

	if (!cluster_or_skip(&s))
		return;
	job = light_job(&s, logdir, sizeof(logdir), "200");
	jobarg = xasprintf("--slurm=%ld", job);
	ck_assert_int_eq(run_cmd(&r, 60000, (char *[]){ (char *)pystrobe_path(), "watch", jobarg,
							"--pystrobe=/nonexistent/pystrobe", "-D",
							s.dir, NULL }), 0);
	ck_assert_msg(run_exit(&r) == 13, "exit %d: %s", run_exit(&r), r.err);
	for (int n = 1; n <= NODES; n++) {
		char *want = xasprintf("node hnode%d: no pystrobe to run at /nonexistent/pystrobe", n);

		ck_assert_msg(strstr(r.err, want), "no '%s': %s", want, r.err);
		free(want);
	}
	run_free(&r);
	free(jobarg);
	slurm_down(&s);
}
END_TEST

/* The replies of a node's stdout, framed as cluster/nodereply.h writes
 * them, put back together (each whole one a string in out); how many.
 * A reply whose end line's length is not its own fails the test. */
static int replies(const char *text, char **out, int max)
{
	struct strbuf cur = STRBUF_INIT;
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t len = strcspn(p, "\n");
		unsigned long declared;
		int status;

		if (*p == '=') {
			sb_add(&cur, p + 1, len - 1);
		} else if (sscanf(p, "#pystrobe-end %d %lu", &status, &declared) == 2) {
			ck_assert_msg(declared == cur.len, "a reply of %zu bytes says %lu", cur.len,
				      declared);
			if (n < max)
				out[n++] = sb_detach(&cur);
			sb_release(&cur);
		}
	}
	sb_release(&cur);
	return n;
}

/* The first reply with all of words in it, or NULL. */
static const char *reply_with(char **r, int n, const char *const *words)
{
	for (int i = 0; i < n; i++) {
		bool all = true;

		for (int k = 0; words[k] && all; k++)
			all = strstr(r[i], words[k]) != NULL;
		if (all)
			return r[i];
	}
	return NULL;
}

/* watch --slurm-node without a cluster: a process whose environment names
 * job 4242 on node fakenode, rank 5 (as Slurm sets it), deadlocks
 * (stall.py deadlock 2); the node's watcher, on "fakenode", streams framed
 * replies: heartbeats naming rank 5, the stall (a deadlock, threads left
 * and right in take_both), the node's dump with the process; SIGUSR1 ends
 * it with status 0, and the process is not left stopped. */
START_TEST(test_node)
{
	char dir[] = "/tmp/pystrobe-watch-node-XXXXXX", *r[64], *pid;
	char *script = xasprintf("%s/tests/targets/stall.py", test_srcdir());
	struct run run;
	pid_t target;
	int n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("SLURM_JOB_ID", "4242", 1);
	setenv("SLURMD_NODENAME", "fakenode", 1);
	setenv("SLURM_PROCID", "5", 1);
	target = spawn_cmd((char *[]){ PYTHON, script, "deadlock", "2", dir, NULL });
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_PROCID");
	ck_assert_msg(target > 0, "cannot start %s", script);
	ck_assert_int_eq(run_cmd_signal(&run, 40000, 15000, SIGUSR1,
					(char *[]){ (char *)pystrobe_path(), "watch",
						    "--slurm-node=4242", "--stall=2", NULL }), 0);
	unsetenv("SLURMD_NODENAME");
	n = replies(run.out, r, 64);
	pid = xasprintf("\"pid\":%d,", (int)target);
	ck_assert_msg(reply_with(r, n, (const char *[]){ "\"type\":\"heartbeat\"", "\"rank\":5",
							 "\"node\":\"fakenode\"", pid, NULL }),
		      "no heartbeat of rank 5: %s", run.out);
	ck_assert_msg(reply_with(r, n, (const char *[]){ "\"type\":\"stall\"",
							 "\"kind\":\"deadlock\"",
							 "\"name\":\"left\",\"where\":\"take_both (",
							 "\"name\":\"right\",\"where\":\"take_both (",
							 NULL }), "no stall of left and right: %s", run.out);
	ck_assert_msg(reply_with(r, n, (const char *[]){ "\"processes\":[", pid,
							 "\"function\":\"take_both\"", NULL }),
		      "no dump of %d: %s", (int)target, run.out);
	ck_assert_msg(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "status %d: %s",
		      run.status, run.err);
	ck_assert_msg(proc_state(target, 0) != 'T', "the target was left stopped");
	for (int i = 0; i < n; i++)
		free(r[i]);
	kill_reap(target);
	rm_rf(dir);
	free(pid);
	free(script);
	run_free(&run);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "node", 120, 0, 1, { test_node } },
		{ "light", 240, 0, 1, { test_light } },
		{ "late", 240, 0, 1, { test_late } },
		{ "onstall", 240, 0, 1, { test_onstall } },
		{ "silent", 180, 0, 1, { test_silent } },
		{ "nobinary", 180, 0, 1, { test_nobinary } },
		{ "killed", 180, 0, 1, { test_killed } },
		{ "gloo", 420, 0, 1, { test_gloo } },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return run_groups("watch_slurm", groups, sizeof(groups) / sizeof(groups[0]), 0, 1);
}
