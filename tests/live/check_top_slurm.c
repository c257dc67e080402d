/* `pystrobe top --slurm` on the tests' own Slurm cluster (tests/lib/slurm.c),
 * driven in tmux as check_top drives top: 2 nodes, a batch job of 4 light
 * ranks (tests/targets/slurm_light_rank.py, 2 a node), rank 3 stalled in
 * fetch_shard while the others wait in allreduce_wait.  The ground truth is
 * each rank's own log (rank-R.json: its node, pid, function and line),
 * never pystrobe's output.
 *
 *   - view: the header names the job, hnode[1-2], "2 of 2 nodes, 4 ranks";
 *     T steps to each node (the view of the node that rank 3's log names
 *     has fetch_shard, the other's not), then to each rank in turn, "rank R
 *     on NODE (k of 4)" with NODE from that rank's log and, as the top row,
 *     the function and line the log names; then to rank 0's main thread,
 *     by its pid (the log's) and name; hnode2's pystrobe killed, the
 *     header says "not answering: hnode2" and "1 of 2 nodes, 2 ranks"; q
 *     exits 13 (a node stopped answering), and then no pystrobe of the job
 *     runs on any node (no `--slurm-node=JOB` process) and no rank is left
 *     stopped.
 *   - snapshots: without a terminal, --duration 3 prints the job's header
 *     and rank 3's fetch_shard, and exits 0 with nothing left running.
 *   - errors: a job that does not exist is one line and exit 12.
 *   - gpu: --gpu with NVML played by the tests' stand-in (no GPU can run
 *     here: tests/stubs/nvml_stub.c, found on LD_LIBRARY_PATH, which srun
 *     carries to every node), each node playing two GPUs with figures of
 *     its own, the first running the node's first rank (by the ranks'
 *     logs), the second its second: the stand-in's figures are the truth.
 *     The header has a line per node with its GPUs, figures and ranks, and
 *     the job's mean and least busy GPU; T's node view each GPU of that
 *     node alone, T's rank view the rank's GPU alone; q exits 0; the
 *     snapshots (no terminal) have the nodes' lines too.  Then
 *     hnode2's NVML does not start (no driver): one line says so for
 *     hnode2, hnode1's figures and all 4 ranks are still shown, q exits 0.
 *
 * Root only, with slurm-wlm, munge and tmux (a SKIP naming what is missing).
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpreters.h"
#include "slurm.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

#define NODES		2
#define RANKS		4
#define STALL_RANK	3
#define PYTHON		"/usr/bin/python3"
#define READY_MS	60000
#define SCREEN_MS	30000	/* for what a key or the first replies show */
#define GONE_MS		15000	/* for every remote pystrobe to end after q */
#define MARKER		"TOP-EXIT="

struct truth {
	char node[64], function[64];
	long line, pid;
};

struct job_test {
	struct slurm s;
	long job;
	char logdir[PATH_MAX];
	char sock[PATH_MAX + 16];
	struct truth rank[RANKS];
	char *msg;		/* failures, all reported at the end */
};

/* --- the cluster and its job ---------------------------------------------- */

static void read_truth(struct job_test *t)
{
	for (int r = 0; r < RANKS; r++) {
		char *path = xasprintf("%s/rank-%d.json", t->logdir, r), *log = slurp(path);

		ck_assert_msg(log, "no log %s", path);
		json_text_str(log, "node", t->rank[r].node, sizeof(t->rank[r].node));
		json_text_str(log, "function", t->rank[r].function, sizeof(t->rank[r].function));
		t->rank[r].line = (long)json_text_num(log, "line");
		t->rank[r].pid = (long)json_text_num(log, "pid");
		printf("truth: rank %d on %s, pid %ld, in %s line %ld\n", r, t->rank[r].node,
		       t->rank[r].pid, t->rank[r].function, t->rank[r].line);
		free(log);
		free(path);
	}
}

/* The cluster up and the light job running, every rank in place; false
 * after a SKIP. */
static bool job_up(struct job_test *t)
{
	char why[1024];

	if (slurm_skip_sanitized("top --slurm"))
		return false;
	if (access(PYTHON, X_OK) != 0 || system("tmux -V >/dev/null 2>&1") != 0) {
		test_skip("top --slurm: no %s or no tmux (apt-get install python3 tmux)", PYTHON);
		return false;
	}
	if (!slurm_up_or_skip(&t->s, NODES))
		return false;
	snprintf(t->logdir, sizeof(t->logdir), "%s/light", t->s.dir);
	t->job = slurm_light_job(&t->s, NODES, RANKS, STALL_RANK, PYTHON, t->logdir, READY_MS,
				 why, sizeof(why));
	ck_assert_msg(t->job > 0, "%s", why);
	read_truth(t);
	return true;
}

/* Up to size bytes of /proc/PID/NAME into buf, NULs kept; the length. */
static size_t proc_read(const char *pid, const char *name, char *buf, size_t size)
{
	char path[300];
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	if (!(f = fopen(path, "r")))
		return 0;
	len = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[len] = 0;
	return len;
}

/* Is process pid of the job's fan-out (its command line has
 * --slurm-node=JOB), and with node, a task on that node? */
static bool fanout_proc(const struct job_test *t, const char *pid, const char *node)
{
	char buf[8192], *want = xasprintf("--slurm-node=%ld", t->job), *env;
	size_t len = proc_read(pid, "cmdline", buf, sizeof(buf));
	bool yes = memmem(buf, len, want, strlen(want)) != NULL;

	free(want);
	if (!yes || !node)
		return yes;
	env = xasprintf("SLURMD_NODENAME=%s", node);
	len = proc_read(pid, "environ", buf, sizeof(buf));
	yes = memmem(buf, len, env, strlen(env) + 1) != NULL;
	free(env);
	return yes;
}

/* Processes of the job's fan-out (srun, pystrobe) still running, on node
 * or anywhere (the nodes share this machine's /proc): their count, the
 * first in *first, "pid, ..." in what. */
static int fanout_left(const struct job_test *t, const char *node, pid_t *first, char *what,
		       size_t size)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	what[0] = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || !fanout_proc(t, e->d_name, node))
			continue;
		if (!n++)
			*first = (pid_t)atol(e->d_name);
		snprintf(what + strlen(what), size - strlen(what), "%s%s", n > 1 ? ", " : "",
			 e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* After top ended: no remote pystrobe (bounded wait), no rank stopped. */
static void check_nothing_left(struct job_test *t, const char *what)
{
	long long deadline = now_ms() + GONE_MS;
	char left[512];
	pid_t pid;

	while (fanout_left(t, NULL, &pid, left, sizeof(left)) && now_ms() < deadline)
		sleep_ms(200);
	if (fanout_left(t, NULL, &pid, left, sizeof(left)))
		msg_add(&t->msg, "%s: %d s after top ended, pystrobe still runs on the nodes: "
			"pids %s", what, GONE_MS / 1000, left);
	for (int r = 0; r < RANKS; r++) {
		char st = proc_state((pid_t)t->rank[r].pid, (pid_t)t->rank[r].pid);

		if (st == 'T' || st == 't' || st == 0)
			msg_add(&t->msg, "%s: rank %d (pid %ld) is %s after top", what, r,
				t->rank[r].pid, st ? "left stopped" : "gone");
	}
}

/* The cluster down, and the failures said. */
static void job_end(struct job_test *t, const char *what)
{
	slurm_down(&t->s);
	fail_if_any(t->msg, what);
}

/* --- tmux ------------------------------------------------------------------- */

/* tmux on the test's own server with args (NULL-ended, at most 12); its
 * standard output (to free), or NULL when it failed. */
static char *tmux_run(struct job_test *t, const char *const *args)
{
	const char *argv[20] = { "tmux", "-S", t->sock, "-f", "/dev/null" };
	struct run r;
	char *out = NULL;
	int n = 5;

	for (int i = 0; args[i] && n < 18; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (run_cmd(&r, 10000, (char *const *)argv) < 0)
		return NULL;
	if (run_exit(&r) == 0) {
		out = r.out ? r.out : xstrdup("");
		r.out = NULL;
	}
	run_free(&r);
	return out;
}

static char *pane(struct job_test *t)
{
	const char *args[] = { "capture-pane", "-p", "-t", "top", NULL };
	char *s = tmux_run(t, args);

	return s ? s : xstrdup("");
}

static void press(struct job_test *t, const char *key)
{
	const char *args[] = { "send-keys", "-t", "top", key, NULL };

	free(tmux_run(t, args));
}

/* The first table row of a screen (the line after the titles), or "". */
static void first_row(const char *s, char *out, size_t size)
{
	const char *p = strstr(s, "%Own  %Total");

	out[0] = 0;
	if (p && (p = strchr(p, '\n')))
		snprintf(out, size, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
}

/* Wait (bounded) for a screen with every one of want (NULL-ended) and
 * none of unwanted (may be NULL); the screen, to free.  A failure is
 * noted, with the last screen. */
static char *wait_screen(struct job_test *t, const char *what, const char *const *want,
			 const char *unwanted)
{
	long long deadline = now_ms() + SCREEN_MS;
	char *s = NULL;
	bool ok = false;

	while (!ok && now_ms() < deadline) {
		free(s);
		sleep_ms(200);
		s = pane(t);
		ok = !unwanted || !strstr(s, unwanted);
		for (int i = 0; want[i] && ok; i++)
			ok = strstr(s, want[i]) != NULL;
	}
	if (!ok)
		msg_add(&t->msg, "%s: not shown in %d s (want \"%s\"...%s%s); the screen:\n%s", what,
			SCREEN_MS / 1000, want[0], unwanted ? ", not " : "", unwanted ? unwanted : "",
			s);
	return s;
}

/* --- the scenarios ---------------------------------------------------------- */

/* T steps through the nodes: the view of rank 3's node has its
 * fetch_shard, the other's not. */
static void step_nodes(struct job_test *t)
{
	for (int i = 1; i <= NODES; i++) {
		char *node = xasprintf("hnode%d", i), *showing, *s;
		bool odd = !strcmp(t->rank[STALL_RANK].node, node);
		const char *want[] = { NULL, "allreduce_wait (", odd ? "fetch_shard (" : NULL, NULL };

		showing = xasprintf("Showing: node %s (%d of %d)", node, i, NODES);
		want[0] = showing;
		press(t, "T");
		s = wait_screen(t, showing, want, odd ? NULL : "fetch_shard (");
		free(s);
		free(showing);
		free(node);
	}
}

/* Then through each rank: where its log says it runs, and its log's
 * function and line as the top row. */
static void step_ranks(struct job_test *t)
{
	for (int r = 0; r < RANKS; r++) {
		char *showing = xasprintf("Showing: rank %d on %s (%d of %d)", r, t->rank[r].node,
					  r + 1, RANKS);
		char *label = xasprintf("%s (slurm_light_rank.py:%ld)", t->rank[r].function,
					t->rank[r].line);
		const char *want[] = { showing, label, NULL };
		char row[512], *s;

		press(t, "T");
		s = wait_screen(t, showing, want, NULL);
		first_row(s, row, sizeof(row));
		if (!strstr(row, label))
			msg_add(&t->msg, "%s: the top row is \"%s\", not rank %d's own %s", showing, row,
				r, label);
		printf("top: %s: %s\n", showing + 9, row);
		free(s);
		free(label);
		free(showing);
	}
}

/* And then through each thread: rank 0's main thread first, by its pid
 * and name. */
static void step_thread(struct job_test *t)
{
	char *showing = xasprintf("Showing: thread %ld \"MainThread\" of rank 0 on %s (1 of",
				  t->rank[0].pid, t->rank[0].node);
	const char *want[] = { showing, NULL };

	press(t, "T");
	free(wait_screen(t, showing, want, NULL));
	free(showing);
}

/* hnode2's pystrobe killed: the header names it and counts hnode1's
 * ranks only. */
static void kill_node(struct job_test *t)
{
	const char *want[] = { "not answering: hnode2", "1 of 2 nodes, 2 ranks", NULL };
	char pids[256];
	pid_t pid;

	if (!fanout_left(t, "hnode2", &pid, pids, sizeof(pids))) {
		msg_add(&t->msg, "no pystrobe of the job runs on hnode2");
		return;
	}
	printf("top: killing hnode2's pystrobe, pid %d\n", (int)pid);
	kill(pid, SIGKILL);
	free(wait_screen(t, "hnode2's pystrobe killed", want, NULL));
}

/* top --slurm --idle of the job in a tmux session of the test's own,
 * with env (words for env(1), or "") and more options, until the job's
 * header shows. */
static void top_start_with(struct job_test *t, const char *what, const char *env,
			   const char *more)
{
	char *cmd = xasprintf("env %s '%s' top --slurm=%ld --idle -d 0.5 %s; echo " MARKER "$?; "
			      "sleep 600", env, pystrobe_path(), t->job, more);
	char *header = xasprintf("Slurm job %ld on hnode[1-2]: 2 of 2 nodes, 4 ranks", t->job);
	const char *args[] = { "new-session", "-d", "-x", "160", "-y", "40", "-s", "top", cmd,
			       NULL };
	const char *want[] = { header, NULL };

	snprintf(t->sock, sizeof(t->sock), "%s/tmux", t->s.dir);
	free(tmux_run(t, args));
	free(wait_screen(t, what, want, NULL));
	free(header);
	free(cmd);
}

static void top_start(struct job_test *t, const char *what)
{
	top_start_with(t, what, "", "");
}

/* q: top exits with status code, nothing is left on the nodes, and the
 * tmux server goes. */
static void top_quit(struct job_test *t, int code)
{
	char *marker = xasprintf(MARKER "%d", code), *what = xasprintf("q's exit %d", code);
	const char *want[] = { marker, NULL };
	const char *args[] = { "kill-server", NULL };

	press(t, "q");
	free(wait_screen(t, what, want, NULL));
	check_nothing_left(t, "q");
	free(tmux_run(t, args));
	free(what);
	free(marker);
}

START_TEST(test_view)
{
	struct job_test t = { 0 };
	if (!job_up(&t))
		return;
	top_start(&t, "the job's header");
	step_nodes(&t);
	step_ranks(&t);
	step_thread(&t);
	kill_node(&t);
	/* A node stopped answering: 13. */
	top_quit(&t, 13);
	job_end(&t, "top --slurm in tmux");
}
END_TEST

/* Without a terminal: snapshots with the job's header and the odd rank's
 * function, until --duration; nothing left running after. */
START_TEST(test_snapshots)
{
	struct job_test t = { 0 };
	char *job, *header, *label;
	struct run r;

	if (!job_up(&t))
		return;
	job = xasprintf("--slurm=%ld", t.job);
	header = xasprintf("pystrobe top: Slurm job %ld on hnode[1-2]: 2 of 2 nodes, 4 ranks",
			   t.job);
	label = xasprintf("%s (slurm_light_rank.py:%ld)", t.rank[STALL_RANK].function,
			  t.rank[STALL_RANK].line);
	{
		char *const argv[] = { (char *)pystrobe_path(), "top", job, "--idle", "-d", "0.5",
				       "--duration", "3", NULL };

		ck_assert_int_eq(run_cmd(&r, 60000, argv), 0);
	}
	if (run_exit(&r) != 0 || !strstr(r.out, header) || !strstr(r.out, label))
		msg_add(&t.msg, "exit %d, want 0, \"%s\" and \"%s\"; stdout:\n%.3000s\nstderr: %s",
			run_exit(&r), header, label, r.out, r.err);
	run_free(&r);
	check_nothing_left(&t, "--duration");
	free(label);
	free(header);
	free(job);
	job_end(&t, "top --slurm, snapshots");
}
END_TEST

/* --- --gpu, with the stand-in NVML ------------------------------------------ */

/* The stand-in's memory total (nvml_stub.c's MEM_TOTAL_MIB). */
#define STUB_TOTAL_MIB 81559

/* What each node's stand-in plays: both its GPUs at util % with mem MiB
 * used, GPU k running the node's k-th rank. */
struct gpu_node {
	const char *name;
	unsigned util, mem;
	int rank[2];
};

/* The node's ranks, by their logs, in rank order; false (said) unless 2. */
static bool node_ranks(struct job_test *t, struct gpu_node *g)
{
	int n = 0;

	for (int r = 0; r < RANKS; r++)
		if (!strcmp(t->rank[r].node, g->name) && n++ < 2)
			g->rank[n - 1] = r;
	if (n != 2)
		msg_add(&t->msg, "gpu: %d ranks on %s by their logs, want 2", n, g->name);
	return n == 2;
}

/* The stand-in's script, for env(1): per node (NVML_STUB_<node>), with
 * no_driver, hnode2's NVML does not start. */
static char *stub_env(struct job_test *t, const struct gpu_node *g, bool no_driver)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "LD_LIBRARY_PATH='%s/tests/stubs' NVML_STUB='count=2'",
		  getenv("PYSTROBE_BUILDDIR"));
	for (int i = 0; i < NODES; i++) {
		if (no_driver && i == 1) {
			sb_printf(&sb, " NVML_STUB_%s='init=9'", g[i].name);
			continue;
		}
		sb_printf(&sb, " NVML_STUB_%s='util=%u,mem=%u,pids=%ld,pids1=%ld'", g[i].name,
			  g[i].util, g[i].mem, t->rank[g[i].rank[0]].pid, t->rank[g[i].rank[1]].pid);
	}
	return sb_detach(&sb);
}

/* A node's line in the view of all ranks, as the stand-in plays it. */
static char *node_line(const struct gpu_node *g)
{
	return xasprintf("%s: GPU 0 %u%% %.1f GiB rank %d; GPU 1 %u%% %.1f GiB rank %d", g->name,
			 g->util, g->mem / 1024.0, g->rank[0], g->util, g->mem / 1024.0, g->rank[1]);
}

/* GPU k of a node in full (the stand-in's memory busy is half its util). */
static char *gpu_line(const struct gpu_node *g, int k)
{
	return xasprintf("GPU %d (Stand-in GPU %d) on %s: %u%% busy, memory %u%% busy, %.1f of "
			 "%.1f GiB, rank %d", k, k, g->name, g->util, g->util / 2, g->mem / 1024.0,
			 STUB_TOTAL_MIB / 1024.0, g->rank[k]);
}

/* The view of all ranks: the job's line, each node's. */
static void gpu_all(struct job_test *t, const struct gpu_node *g)
{
	char *l1 = node_line(&g[0]), *l2 = node_line(&g[1]);
	char *sum = xasprintf("GPUs: 4 on 2 nodes, %u%% busy on average",
			      (g[0].util + g[1].util) / 2);
	char *least = xasprintf("least busy: GPU 0 on %s, %u%% rank %d", g[0].name, g[0].util,
				g[0].rank[0]);
	const char *want[] = { sum, least, l1, l2, NULL };
	char *s = wait_screen(t, "gpu: the view of all ranks", want, NULL);

	if (strstr(s, l1) && strstr(s, l2))
		printf("top: gpu: %s / %s\n", l1, l2);
	free(s);
	free(least);
	free(sum);
	free(l2);
	free(l1);
}

/* T: each node's view has its own two GPUs, not the other's; then rank 0's
 * has its GPU only. */
static void gpu_views(struct job_test *t, const struct gpu_node *g)
{
	for (int i = 0; i < NODES; i++) {
		char *showing = xasprintf("Showing: node %s (%d of %d)", g[i].name, i + 1, NODES);
		char *a = gpu_line(&g[i], 0), *b = gpu_line(&g[i], 1);
		char *other = xasprintf(") on %s: ", g[1 - i].name);
		const char *want[] = { showing, a, b, NULL };
		char *sc;

		press(t, "T");
		sc = wait_screen(t, showing, want, other);
		if (strstr(sc, a) && strstr(sc, b))
			printf("top: gpu: %s\n", a);
		free(sc);
		free(other);
		free(b);
		free(a);
		free(showing);
	}
	for (int i = 0; i < NODES; i++) {
		const struct gpu_node *n = &g[i];
		int k = n->rank[0] == 0 ? 0 : n->rank[1] == 0 ? 1 : -1;
		char *showing, *mine, *other;

		if (k < 0)
			continue;
		showing = xasprintf("Showing: rank 0 on %s (1 of %d)", n->name, RANKS);
		mine = gpu_line(n, k);
		other = xasprintf("GPU %d (Stand-in GPU %d) on", 1 - k, 1 - k);
		press(t, "T");
		free(wait_screen(t, showing, (const char *[]){ showing, mine, NULL }, other));
		free(other);
		free(mine);
		free(showing);
	}
}

/* Without a terminal: the snapshots have each node's line too, and
 * --duration exits 0. */
static void gpu_snapshots(struct job_test *t, const struct gpu_node *g, const char *env)
{
	char *cmd = xasprintf("env %s '%s' top --slurm=%ld --idle --gpu -d 0.5 --duration 3", env,
			      pystrobe_path(), t->job);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	char *l1 = node_line(&g[0]), *l2 = node_line(&g[1]);
	struct run r;

	ck_assert_int_eq(run_cmd(&r, 60000, argv), 0);
	if (run_exit(&r) != 0 || !strstr(r.out, l1) || !strstr(r.out, l2))
		msg_add(&t->msg, "gpu: snapshots: exit %d, want 0, \"%s\" and \"%s\"; stdout:\n"
			"%.3000s\nstderr: %s", run_exit(&r), l1, l2, r.out, r.err);
	else
		printf("top: gpu: the snapshots have both nodes' lines\n");
	run_free(&r);
	check_nothing_left(t, "gpu: --duration");
	free(l2);
	free(l1);
	free(cmd);
}

/* hnode2 without a driver: one line for it, hnode1's figures go on. */
static void gpu_no_driver(struct job_test *t, const struct gpu_node *g)
{
	char *l1 = node_line(&g[0]), *s;
	const char *why = "hnode2: no GPU figures: NVML could not start: Driver Not Loaded";
	const char *want[] = { why, l1, NULL };
	int n = 0;

	s = wait_screen(t, "gpu: hnode2 without a driver", want, NULL);
	for (const char *p = s; (p = strstr(p, "Driver Not Loaded")); p++)
		n++;
	if (n != 1)
		msg_add(&t->msg, "gpu: hnode2's missing driver said %d times, want once:\n%s", n, s);
	free(s);
	free(l1);
}

START_TEST(test_gpu)
{
	struct gpu_node g[NODES] = { { "hnode1", 37, 2048, { 0 } }, { "hnode2", 81, 3072, { 0 } } };
	struct job_test t = { 0 };
	char *env;

	if (!job_up(&t))
		return;
	if (!node_ranks(&t, &g[0]) || !node_ranks(&t, &g[1]))
		goto out;
	env = stub_env(&t, g, false);
	printf("top: gpu: the stand-in NVML plays %s\n", env);
	top_start_with(&t, "gpu: the job's header", env, "--gpu");
	gpu_all(&t, g);
	gpu_views(&t, g);
	top_quit(&t, 0);
	gpu_snapshots(&t, g, env);
	free(env);
	env = stub_env(&t, g, true);
	top_start_with(&t, "gpu: the job's header, hnode2 without a driver", env, "--gpu");
	gpu_no_driver(&t, g);
	top_quit(&t, 0);
	free(env);
out:
	job_end(&t, "top --slurm --gpu in tmux, NVML's stand-in");
}
END_TEST

/* The gloo job of slurm_gloo_train.py (the sid root's torch) instead of
 * the light ranks; false after a SKIP. */
static bool gloo_up(struct job_test *t)
{
	const struct test_interp *all, *ti;
	int nall = test_interps(&all);
	char inside[PATH_MAX], why[1024], *cmd, *text;

	if (slurm_skip_sanitized("top --slurm: the gloo job"))
		return false;
	ti = test_interp_torch(all, nall, "top --slurm: the gloo job");
	if (!ti || system("tmux -V >/dev/null 2>&1") != 0) {
		if (ti)
			test_skip("top --slurm: no tmux (apt-get install tmux)");
		return false;
	}
	if (!slurm_up_or_skip(&t->s, NODES))
		return false;
	test_interp_shared_dir(ti, t->logdir, inside, sizeof(t->logdir));
	cmd = slurm_python_cmd(ti, "tests/targets/slurm_gloo_train.py");
	text = xasprintf("#!/bin/sh\n#SBATCH -N %d -n %d --ntasks-per-node=%d\n"
			 "export STALL_RANK=%d\nexec srun %s %s\n", NODES, RANKS, RANKS / NODES,
			 STALL_RANK, cmd, inside);
	t->job = slurm_sbatch(&t->s, text, why, sizeof(why));
	free(text);
	free(cmd);
	ck_assert_msg(t->job > 0, "sbatch: %s", why);
	ck_assert_msg(!slurm_wait_ranks(&t->s, t->job, t->logdir, RANKS, 300000, why,
					sizeof(why)), "%s", why);
	read_truth(t);
	return true;
}

/* top --slurm of the gloo job in tmux: T to each rank, whose top row is
 * where its log says it waits: fetch_shard's line for rank 3, torch's
 * all_reduce for the others; q leaves nothing. */
START_TEST(test_gloo)
{
	struct job_test t = { 0 };
	if (!gloo_up(&t))
		return;
	top_start(&t, "the gloo job's header");
	for (int i = 1; i <= NODES; i++)
		press(&t, "T");
	for (int r = 0; r < RANKS; r++) {
		char *showing = xasprintf("Showing: rank %d on %s (%d of %d)", r, t.rank[r].node,
					  r + 1, RANKS);
		char *label = r == STALL_RANK ?
			      xasprintf("fetch_shard (slurm_gloo_train.py:%ld)", t.rank[r].line) :
			      xstrdup("all_reduce (torch/distributed/distributed_c10d.py:");
		const char *w[] = { showing, label, NULL };
		char row[512], *sc;

		press(&t, "T");
		sc = wait_screen(&t, showing, w, NULL);
		first_row(sc, row, sizeof(row));
		printf("top: %s: %s\n", showing + 9, row);
		if (!strstr(row, label))
			msg_add(&t.msg, "%s: the top row is \"%s\", not %s", showing, row, label);
		free(sc);
		free(label);
		free(showing);
	}
	top_quit(&t, 0);
	rm_rf(t.logdir);
	job_end(&t, "top --slurm of the gloo job in tmux");
}
END_TEST

/* No such job: one line, exit 12 (no cluster needed: squeue fails or
 * does not know it). */
START_TEST(test_no_job)
{
	char *const argv[] = { (char *)pystrobe_path(), "top", "--slurm=4242424", NULL };
	struct run r;

	ck_assert_int_eq(run_cmd(&r, 30000, argv), 0);
	ck_assert_msg(run_exit(&r) == 12 && run_one_error_line(&r),
		      "exit %d, want 12 and one line; stderr: %s", run_exit(&r), r.err);
	run_free(&r);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "view", 300, 0, 1, { test_view } },
		{ "snapshots", 240, 0, 1, { test_snapshots } },
		{ "errors", 60, 0, 1, { test_no_job } },
		{ "gpu", 300, 0, 1, { test_gpu } },
		{ "gloo", 600, 0, 1, { test_gloo } },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return run_groups("top_slurm", groups, sizeof(groups) / sizeof(groups[0]), 0, 1);
}
