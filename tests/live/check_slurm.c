/* dump --slurm and record --slurm on the tests' own Slurm cluster
 * (tests/slurm-cluster.sh: slurmctld and two slurmd on this machine), with
 * a job of light ranks (tests/targets/slurm_light_rank.py: 4 ranks, 2 a
 * node, rank 3 stalled in fetch_shard, the others in allreduce_wait).  The
 * truth is each rank's own log (its rank, node, pid, function and line),
 * never pystrobe's output:
 *
 *   - dump: the verdict names rank 3, its node and its function and line
 *     as its log does, and ranks 0-2 in theirs; --json gives every rank's
 *     process with the node and rank its log names.
 *   - record: every sample of every rank under node=NODE;rank=N, NODE as
 *     its log says, rank 3's in fetch_shard, the others' in
 *     allreduce_wait; pprof carries the labels node and rank.
 *   - chrome: record --slurm -o JOB.trace.json (the format from the name)
 *     and -f chrometrace -o -: one Chrome trace of the job
 *     (tests/check_job_trace.py): each rank a process track "rank R on
 *     NODE (pid PID)" as its log says, its MainThread, its slices only
 *     in <module>, main and its log's function, nested, time only going
 *     forward, and all of them within the rank's own clock's marks
 *     (SIGUSR2 before and after the recording); speedscope's importer
 *     (tests/consumers.js) opens it without a warning.
 *   - interrupt: record --slurm with no duration, SIGINT after 3 s: the
 *     profile of both nodes is written, exit 0, no node's pystrobe left,
 *     no rank stopped.
 *   - node_gone: one node's slurmd and pystrobe killed mid-record: that
 *     node is named, the other's ranks are written, exit 13.
 *   - bcast: pystrobe-static, run from a directory the nodes cannot see (a
 *     tmpfs in a mount namespace of the front's own, as a login node's
 *     pystrobe is not on the compute nodes), sends itself with srun
 *     --bcast: the verdict is right and no node's copy is left in /tmp;
 *     the dynamically linked build run from there cannot be sent, and
 *     each node is named with the hint (exit 13), which proves the nodes
 *     cannot see the directory.  A SKIP where pystrobe-static is not in
 *     the build directory (`make pystrobe-static`; CI's phase 3 runs this
 *     case with the wheel's).
 *   - errors: a job that does not exist, no Slurm commands on PATH (exit
 *     12), a --pystrobe no node has (each node named with the hint, exit
 *     13), a job with no Python (exit 5): one line each.
 *
 * Root only, with slurm-wlm and munge (a SKIP naming them otherwise).
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
#define STALL_RANK	3
#define PYTHON		"/usr/bin/python3"
#define READY_MS	60000

struct job {
	struct slurm s;
	char logdir[PATH_MAX];
	char id[32];
	struct slurm_truth t[RANKS];	/* each rank's, from its log */
};

/* A cluster running the light job, or false after a SKIP. */
static bool job_up(struct job *j)
{
	char why[1024];
	long id;

	if (access(PYTHON, X_OK) != 0) {
		test_skip("slurm: no %s (apt-get install python3)", PYTHON);
		return false;
	}
	if (!slurm_up_or_skip(&j->s, NODES))
		return false;
	snprintf(j->logdir, sizeof(j->logdir), "%s/light", j->s.dir);
	id = slurm_light_job(&j->s, NODES, RANKS, STALL_RANK, PYTHON, j->logdir, READY_MS, why,
			     sizeof(why));
	ck_assert_msg(id > 0, "%s", why);
	snprintf(j->id, sizeof(j->id), "--slurm=%ld", id);
	ck_assert_msg(!slurm_rank_truths(j->logdir, RANKS, j->t, why, sizeof(why)), "%s", why);
	return true;
}


/* Whether NUL-separated entries (n bytes) hold one equal to want (or,
 * with prefix, starting with it). */
static bool has_entry(const char *v, size_t n, const char *want, bool prefix)
{
	for (size_t i = 0; i < n; i += strlen(v + i) + 1)
		if (prefix ? !strncmp(v + i, want, strlen(want)) : !strcmp(v + i, want))
			return true;
	return false;
}

/* A /proc file whole, NUL bytes and all; its length in *n. */
static char *proc_file(pid_t pid, const char *name, size_t *n)
{
	char path[64], *buf = xmalloc(65536);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	*n = 0;
	if ((f = fopen(path, "r"))) {
		*n = fread(buf, 1, 65535, f);
		fclose(f);
	}
	buf[*n] = 0;
	return buf;
}

/* The pids of a node's pystrobe for the job (--slurm-node=JOB in its
 * command line, node its SLURMD_NODENAME), from /proc: not another
 * cluster's, nor srun's (whose command line names it too). */
static int node_pystrobes(const struct job *j, const char *node, pid_t *pids, int max)
{
	char want[96], arg[64];
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	snprintf(want, sizeof(want), "SLURMD_NODENAME=%s", node);
	snprintf(arg, sizeof(arg), "--slurm-node=%s", j->id + strlen("--slurm="));
	while (d && (de = readdir(d)) && n < max) {
		pid_t pid = (pid_t)atoi(de->d_name);
		size_t clen, elen;
		char *cmd, *env;

		if (pid <= 0)
			continue;
		cmd = proc_file(pid, "cmdline", &clen);
		env = proc_file(pid, "environ", &elen);
		if (strstr(cmd, "pystrobe") && strncmp(cmd, "srun", 4) &&
		    has_entry(cmd, clen, arg, false) && has_entry(env, elen, want, false))
			pids[n++] = pid;
		free(cmd);
		free(env);
	}
	if (d)
		closedir(d);
	return n;
}

static void job_down(struct job *j)
{
	char why[1024];

	ck_assert_msg(slurm_down_check(&j->s, why, sizeof(why)) == 0, "%s", why);
}

static void nothing_left(const struct job *j, char **msg);

/* Rank i's pid, as its log says; 0 when it says none. */
static long rank_pid(const struct job *j, int i)
{
	char path[PATH_MAX + 32], *log;
	long pid;

	snprintf(path, sizeof(path), "%s/rank-%d.json", j->logdir, i);
	log = slurp(path);
	pid = log ? (long)json_text_num(log, "pid") : 0;
	free(log);
	return pid;
}

/* The end of every case: nothing left, the cluster down, the verdict. */
static void job_end(struct job *j, char *msg, const char *what)
{
	nothing_left(j, &msg);
	job_down(j);
	/* What each case printed, in the log also when it fails. */
	fflush(stdout);
	fail_if_any(msg, what);
}

/* No pystrobe of a node left, no rank stopped. */
static void nothing_left(const struct job *j, char **msg)
{
	pid_t pids[8];

	for (int i = 1; i <= NODES; i++) {
		char node[16];

		snprintf(node, sizeof(node), "hnode%d", i);
		if (node_pystrobes(j, node, pids, 8) > 0) {
			size_t n;
			char *cmd = proc_file(pids[0], "cmdline", &n);

			for (size_t k = 0; k + 1 < n; k++)
				cmd[k] = cmd[k] ? cmd[k] : ' ';
			msg_add(msg, "the pystrobe of %s is left: pid %d (%s)", node, (int)pids[0],
				cmd);
			free(cmd);
		}
	}
	for (int i = 0; i < RANKS; i++) {
		long pid = rank_pid(j, i);

		if (pid > 0 && proc_state((pid_t)pid, (pid_t)pid) == 't')
			msg_add(msg, "rank %d (pid %ld) is left stopped", i, pid);
	}
}

START_TEST(test_dump)
{
	struct job j = { 0 };
	char others[128], *msg = NULL;

	if (!job_up(&j))
		return;
	snprintf(others, sizeof(others), "in %s (slurm_light_rank.py:%ld)", j.t[0].fn,
		 j.t[0].line);
	slurm_check_dump(j.id, j.t, RANKS, STALL_RANK, "slurm_light_rank.py", others, &msg);
	job_end(&j, msg, "dump --slurm");
}
END_TEST

static void check_profile(const struct job *j, const char *path, char **msg)
{
	char *text = slurp(path);

	if (!text) {
		msg_add(msg, "no profile at %s", path);
		return;
	}
	for (int i = 0; i < RANKS; i++) {
		long in_fn, n = slurm_rank_samples(text, j->t[i].node, i, j->t[i].fn, &in_fn);

		printf("rank %d on %s: %ld samples, %ld in %s\n", i, j->t[i].node, n, in_fn, j->t[i].fn);
		if (n < 20 || in_fn < n * 9 / 10)
			msg_add(msg, "rank %d on %s: %ld samples, %ld of them in %s", i,
				j->t[i].node, n, in_fn, j->t[i].fn);
	}
	free(text);
}

/* record --slurm --gpu with NVML's stand-in (no GPU can run here:
 * tests/stubs/nvml_stub.c, which srun's environment carries to the
 * nodes): hnode1 plays a GPU 70% busy, hnode2 a driver that is not
 * loaded; each is said under its node, and the profile is written. */
static void check_gpu(const struct job *j, char **msg)
{
	char path[PATH_MAX + 32], stubs[PATH_MAX + 16];
	const char *want[] = { "pystrobe:   hnode1: GPU 0 (Stand-in GPU 0): 70.0% busy on average",
			       "pystrobe:   hnode2: --gpu: ", "pystrobe: each node's GPUs:" };
	struct run r;

	snprintf(stubs, sizeof(stubs), "%s/tests/stubs", test_builddir());
	snprintf(path, sizeof(path), "%s/gpu.txt", j->s.dir);
	setenv("LD_LIBRARY_PATH", stubs, 1);
	setenv("NVML_STUB", "count=1", 1);
	setenv("NVML_STUB_hnode1", "util=70,mem=1000", 1);
	setenv("NVML_STUB_hnode2", "init=9", 1);
	ck_assert_int_eq(run_pystrobe(&r, "record", j->id, "-d", "2", "--idle", "--gpu", "-o",
				      path, NULL), 0);
	unsetenv("LD_LIBRARY_PATH");
	unsetenv("NVML_STUB");
	unsetenv("NVML_STUB_hnode1");
	unsetenv("NVML_STUB_hnode2");
	printf("record --slurm --gpu (NVML's stand-in): %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(msg, "--gpu: exit %d: %s", run_exit(&r), r.err);
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		if (!r.err || !strstr(r.err, want[i]))
			msg_add(msg, "--gpu: no \"%s\" in the summary", want[i]);
	if (r.err && strstr(r.err, "hnode2: GPU 0"))
		msg_add(msg, "--gpu: hnode2 has no driver, but shows a GPU");
	run_free(&r);
	check_profile(j, path, msg);
}

START_TEST(test_record)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], *msg = NULL;
	struct run r;

	if (!job_up(&j))
		return;
	snprintf(path, sizeof(path), "%s/job.txt", j.s.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "-d", "2", "--idle", "-o", path, NULL),
			 0);
	printf("record --slurm: %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(&msg, "exit %d: %s", run_exit(&r), r.err);
	check_profile(&j, path, &msg);
	run_free(&r);
	snprintf(path, sizeof(path), "%s/job.pb.gz", j.s.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "-d", "1", "--idle", "-q", "-o", path,
				      NULL), 0);
	if (run_exit(&r) != 0)
		msg_add(&msg, "pprof: exit %d: %s", run_exit(&r), r.err);
	run_free(&r);
	{
		char *argv[] = { "python3", xasprintf("%s/tests/decode_pprof.py", test_srcdir()),
				 path, NULL };

		run_cmd(&r, 30000, argv);
		if (!r.out || !strstr(r.out, "node") || !strstr(r.out, "rank"))
			msg_add(&msg, "the pprof has no labels node and rank: %s%s", r.out, r.err);
		free(argv[1]);
		run_free(&r);
	}
	check_gpu(&j, &msg);
	job_end(&j, msg, "record --slurm");
}
END_TEST

/* Every rank's own clock marked (SIGUSR2: slurm_light_rank.py appends its
 * time.time() to rank-R.clock), and waited for until each has marks
 * lines. */
static void mark_clocks(const struct job *j, int marks)
{
	for (int i = 0; i < RANKS; i++) {
		long pid = rank_pid(j, i);

		ck_assert_msg(pid > 0 && kill((pid_t)pid, SIGUSR2) == 0, "rank %d: pid %ld not marked",
			      i, pid);
	}
	for (int i = 0; i < RANKS; i++) {
		char path[PATH_MAX + 32], *text = NULL;
		int lines = 0;

		snprintf(path, sizeof(path), "%s/rank-%d.clock", j->logdir, i);
		for (int tries = 0; tries < 100 && lines < marks; tries++) {
			free(text);
			if (tries)
				sleep_ms(100);
			text = slurp(path);
			lines = 0;
			for (const char *c = text ? text : ""; (c = strchr(c, '\n')); c++)
				lines++;
		}
		ck_assert_msg(lines >= marks, "rank %d: %d marks of its clock, not %d", i, lines,
			      marks);
		free(text);
	}
}

/* speedscope's own importer (tests/consumers.js), which check_consumers
 * opens every Chrome trace with: no warning, a profile for each rank. */
static void import_trace(const char *path, char **msg)
{
	char *js = xasprintf("%s/tests/consumers.js", test_srcdir()), *at;
	char *argv[] = { "node", js, "speedscope", (char *)path, NULL };
	struct run r;
	int ranks = 0;

	if (run_cmd(&r, 120000, argv) < 0 || run_exit(&r) == 2) {
		test_skip("slurm: chrome: node or speedscope's importer missing, the job's trace "
			  "not imported (tests/install-deps.sh): %s", r.err ? r.err : "");
	} else if (run_exit(&r) != 0 || strstr(r.out, "warning ")) {
		msg_add(msg, "speedscope on the job's trace: exit %d: %s%s", run_exit(&r), r.out,
			r.err);
	} else {
		for (at = r.out; (at = strstr(at, "\nprofile ")); at++)
			ranks += !strncmp(at + 9, "rank ", 5);
		ranks += !strncmp(r.out, "profile rank ", 13);
		printf("slurm: speedscope imports the job's trace without a warning: %d rank "
		       "profiles\n", ranks);
		if (ranks < RANKS)
			msg_add(msg, "speedscope made %d profiles of ranks, not %d: %s", ranks, RANKS,
				r.out);
	}
	run_free(&r);
	free(js);
}

/* The job's trace against the ranks' logs and clocks
 * (tests/check_job_trace.py), then imported. */
static void check_trace(const struct job *j, const char *path, char **msg)
{
	char ranks[16], *py = xasprintf("%s/tests/check_job_trace.py", test_srcdir());
	char *argv[] = { "python3", py, (char *)path, (char *)j->logdir, ranks, NULL };
	struct run r;

	snprintf(ranks, sizeof(ranks), "%d", RANKS);
	run_cmd(&r, 60000, argv);
	printf("%s%s", r.out ? r.out : "", r.err ? r.err : "");
	if (run_exit(&r) != 0)
		msg_add(msg, "check_job_trace.py: %s%s", r.out, r.err);
	run_free(&r);
	free(py);
	import_trace(path, msg);
}

START_TEST(test_chrome)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], *msg = NULL;
	struct run r;

	if (!job_up(&j))
		return;
	mark_clocks(&j, 1);
	/* No -f: the format from the name, as record infers it. */
	snprintf(path, sizeof(path), "%s/job.trace.json", j.s.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "-d", "2", "--idle", "-o", path, NULL),
			 0);
	mark_clocks(&j, 2);
	printf("record --slurm -o job.trace.json: %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(&msg, "exit %d: %s", run_exit(&r), r.err);
	run_free(&r);
	check_trace(&j, path, &msg);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "-d", "1", "--idle", "-q", "-f",
				      "chrometrace", "-o", "-", NULL), 0);
	if (run_exit(&r) != 0 || !r.out || strncmp(r.out, "{\"displayTimeUnit\"", 18))
		msg_add(&msg, "-f chrometrace -o -: exit %d: %.300s%s", run_exit(&r), r.out, r.err);
	for (int i = 0; i < RANKS && r.out; i++) {
		char want[128];

		snprintf(want, sizeof(want), "\"rank %d on %s (pid %ld)\"", i, j.t[i].node,
			 rank_pid(&j, i));
		if (!strstr(r.out, want))
			msg_add(&msg, "-f chrometrace -o -: no track %s", want);
	}
	run_free(&r);
	job_end(&j, msg, "record --slurm -f chrometrace");
}
END_TEST

/* record --slurm of the job, --idle, for duration (NULL: until stopped),
 * to path (made here) */
static void record_argv(const struct job *j, const char *duration, char *path, size_t size,
			char **argv)
{
	int n = 0;

	snprintf(path, size, "%s/job.txt", j->s.dir);
	argv[n++] = (char *)pystrobe_path();
	argv[n++] = "record";
	argv[n++] = (char *)j->id;
	if (duration) {
		argv[n++] = "-d";
		argv[n++] = (char *)duration;
	}
	argv[n++] = "--idle";
	argv[n++] = "-o";
	argv[n++] = path;
	argv[n] = NULL;
}

START_TEST(test_interrupt)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], *msg = NULL;
	char *argv[10];
	struct run r;

	if (!job_up(&j))
		return;
	record_argv(&j, NULL, path, sizeof(path), argv);
	run_cmd_signal(&r, 60000, 3000, SIGINT, argv);
	printf("record --slurm, SIGINT after 3 s: %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(&msg, "exit %d: %s", run_exit(&r), r.err);
	check_profile(&j, path, &msg);
	run_free(&r);
	job_end(&j, msg, "record --slurm interrupted");
}
END_TEST

/* The pid of node's slurmd of this cluster (its command line names the
 * node and the cluster's slurm.conf), or 0. */
static pid_t slurmd_of(const struct job *j, const char *node)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (d && !found && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		size_t len;
		char *cmd;

		if (pid <= 0)
			continue;
		cmd = proc_file(pid, "cmdline", &len);
		if (!strcmp(cmd, "slurmd") && has_entry(cmd, len, node, false) &&
		    has_entry(cmd, len, j->s.conf, false))
			found = pid;
		free(cmd);
	}
	if (d)
		closedir(d);
	return found;
}

/* The node gone mid-record: its slurmd and its pystrobe killed (slurmd
 * alone is not enough: the step's daemon runs on without it, and so does
 * the node's pystrobe, which then still answers). */
START_TEST(test_node_gone)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], errpath[PATH_MAX + 32], *msg = NULL, *argv[10];
	pid_t front, pids[8];
	int n = 0, status;

	if (!job_up(&j))
		return;
	record_argv(&j, "6", path, sizeof(path), argv);
	snprintf(errpath, sizeof(errpath), "%s/front.err", j.s.dir);
	front = spawn_cmd_err(argv, errpath);
	for (int tries = 0; tries < 100 && !n; tries++) {
		sleep_ms(100);
		n = node_pystrobes(&j, "hnode2", pids, 8);
	}
	if (!n) {
		char *err = slurp(errpath);

		ck_assert_msg(n > 0, "no pystrobe on hnode2 to kill; the front said: %s", err);
	}
	sleep_ms(1000);
	{
		pid_t slurmd = slurmd_of(&j, "hnode2");

		ck_assert_msg(slurmd > 0, "no slurmd of hnode2 found");
		printf("killing hnode2's slurmd, pid %d\n", (int)slurmd);
		kill(slurmd, SIGKILL);
	}
	for (int i = 0; i < n; i++) {
		size_t len;
		char *cmd = proc_file(pids[i], "cmdline", &len);

		for (size_t k = 0; k + 1 < len; k++)
			cmd[k] = cmd[k] ? cmd[k] : ' ';
		printf("killing %d: %s\n", (int)pids[i], cmd);
		free(cmd);
		kill(pids[i], SIGKILL);
	}
	ck_assert_int_eq(waitpid(front, &status, 0), front);
	{
		char *err = slurp(errpath);

		printf("record --slurm, hnode2's pystrobe killed: %s", err ? err : "");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 13)
			msg_add(&msg, "exit status %d, not 13",
				WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		if (!err || !strstr(err, "node hnode2: did not answer"))
			msg_add(&msg, "hnode2 is not named: %s", err);
		free(err);
	}
	{
		char *text = slurp(path);
		long in_fn;

		for (int i = 0; i < RANKS; i++) {
			long got = slurm_rank_samples(text, j.t[i].node, i, j.t[i].fn, &in_fn);

			if (!strcmp(j.t[i].node, "hnode1") ? got < 20 : got != 0)
				msg_add(&msg, "rank %d on %s: %ld samples", i, j.t[i].node, got);
		}
		free(text);
	}
	job_end(&j, msg, "record --slurm, a node's pystrobe killed");
}
END_TEST

/* Run binary (copied into a tmpfs that only the front's mount namespace
 * has) as `BINARY dump --slurm=JOB`. */
static void hidden_dump(const struct job *j, const char *binary, struct run *r)
{
	char hidden[PATH_MAX + 16];
	char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c",
			 "mount -t tmpfs pystrobe-hidden \"$1\" && cp \"$2\" \"$1/\" && "
			 "exec \"$1/${2##*/}\" dump \"$3\"",
			 "sh", hidden, (char *)binary, (char *)j->id, NULL };

	snprintf(hidden, sizeof(hidden), "%s/hidden", j->s.dir);
	mkdir(hidden, 0755);
	ck_assert_int_eq(run_cmd(r, 120000, argv), 0);
	printf("%s dump %s (hidden from the nodes): %s\n%s%s", binary, j->id,
	       run_describe(r, (char[64]){ 0 }, 64), r->out, r->err);
}

/* Copies srun --bcast left in /tmp for job (slurm_bcast_JOB.STEP_NODE). */
static int bcast_left(const char *jobopt)
{
	char prefix[64];
	struct dirent *e;
	DIR *d = opendir("/tmp");
	int n = 0;

	snprintf(prefix, sizeof(prefix), "slurm_bcast_%s.", strchr(jobopt, '=') + 1);
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

START_TEST(test_bcast)
{
	struct job j = { 0 };
	char stat_bin[PATH_MAX], want[256], *msg = NULL;
	const struct slurm_truth *t;
	struct run r;

	snprintf(stat_bin, sizeof(stat_bin), "%s/pystrobe-static", test_builddir());
	if (access(stat_bin, X_OK) != 0) {
		test_skip("slurm: bcast: no %s (`make pystrobe-static` links it; CI's phase 3 "
			  "runs this case with the wheel's)", stat_bin);
		return;
	}
	if (!job_up(&j))
		return;
	t = &j.t[STALL_RANK];
	hidden_dump(&j, stat_bin, &r);
	snprintf(want, sizeof(want), "rank %d on %s differs: in %s (slurm_light_rank.py:%ld)",
		 STALL_RANK, t->node, t->fn, t->line);
	if (run_exit(&r) != 0 || !strstr(r.out, want))
		msg_add(&msg, "pystrobe-static: not exit 0 with \"%s\"", want);
	run_free(&r);
	if (bcast_left(j.id))
		msg_add(&msg, "%d copies of srun --bcast left in /tmp", bcast_left(j.id));
	/* The control: a build that needs its libraries is not sent. */
	hidden_dump(&j, pystrobe_path(), &r);
	for (int i = 1; i <= NODES; i++) {
		snprintf(want, sizeof(want), "node hnode%d: no pystrobe to run at", i);
		if (run_exit(&r) != 13 || !strstr(r.err, want))
			msg_add(&msg, "the dynamic build: not exit 13 with \"%s\"", want);
	}
	run_free(&r);
	job_end(&j, msg, "dump --slurm with srun --bcast");
}
END_TEST

/* Each bad case: its exit status, and what its stderr must say (on one
 * line, when one). */
static void expect(struct run *r, int code, const char *says, const char *what, bool one,
		   char **msg)
{
	char buf[64];

	if (one && !run_one_error_line(r))
		msg_add(msg, "%s: not one line: %s", what, r->err);
	printf("%s: %s%s", what, r->err, r->err && *r->err ? "" : "\n");
	if (run_exit(r) != code)
		msg_add(msg, "%s: %s, not exit %d: %s", what, run_describe(r, buf, sizeof(buf)),
			code, r->err);
	if (!r->err || !strstr(r->err, says))
		msg_add(msg, "%s: stderr does not say \"%s\": %s", what, says, r->err);
	run_free(r);
}

START_TEST(test_errors)
{
	struct job j = { 0 };
	char *msg = NULL, empty[PATH_MAX + 16], *old_path;
	struct run r;

	if (!job_up(&j))
		return;
	run_pystrobe(&r, "dump", "--slurm=99999999", NULL);
	expect(&r, 12, "no such Slurm job: 99999999", "a job that is not there", true, &msg);
	run_pystrobe(&r, "dump", j.id, "--pystrobe", "/nonexistent/pystrobe", NULL);
	expect(&r, 13, "node hnode2: no pystrobe to run at /nonexistent/pystrobe", "no pystrobe",
	       false, &msg);
	/* PATH without Slurm's commands: a directory of nothing. */
	snprintf(empty, sizeof(empty), "%s/empty", j.s.dir);
	mkdir(empty, 0755);
	old_path = xstrdup(getenv("PATH"));
	setenv("PATH", empty, 1);
	run_pystrobe(&r, "dump", j.id, NULL);
	setenv("PATH", old_path, 1);
	free(old_path);
	expect(&r, 12, "no squeue on PATH", "no Slurm commands", true, &msg);
	{
		char why[512];
		long sleeper = slurm_sbatch(&j.s, "#!/bin/sh\n#SBATCH -N 2 -n 2\nexec srun sleep 300\n",
					    why, sizeof(why));
		char id[32];

		ck_assert_msg(sleeper > 0, "%s", why);
		ck_assert_msg(!slurm_wait_running(&j.s, sleeper, READY_MS, why, sizeof(why)), "%s",
			      why);
		sleep_ms(1000);
		snprintf(id, sizeof(id), "--slurm=%ld", sleeper);
		run_pystrobe(&r, "dump", id, NULL);
		expect(&r, 5, "no Python process in Slurm job", "a job of no Python", true, &msg);
	}
	job_end(&j, msg, "--slurm's errors");
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "dump", .timeout = 300, .tests = { test_dump } },
		{ "record", .timeout = 300, .tests = { test_record } },
		{ "chrome", .timeout = 300, .tests = { test_chrome } },
		{ "interrupt", .timeout = 300, .tests = { test_interrupt } },
		{ "node_gone", .timeout = 300, .tests = { test_node_gone } },
		{ "errors", .timeout = 300, .tests = { test_errors } },
		{ "bcast", .timeout = 300, .tests = { test_bcast } },
	};

	return run_groups("slurm", groups, ARRAY_SIZE(groups), 0, 1);
}
