/* The tests' Slurm cluster: tests/slurm-cluster.sh driven from C (see
 * slurm.h), and what the tests read of a job's processes in /proc. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#define ENVIRON_MAX	(256 << 10)	/* of /proc/PID/environ read */
#define POLL_MS		100
#define MAX_CLUSTERS	8

/* The clusters this process has up, for the atexit() that stops them. */
static struct slurm *live[MAX_CLUSTERS];

static void down_all(void)
{
	for (int i = 0; i < MAX_CLUSTERS; i++)
		if (live[i])
			slurm_down(live[i]);
}

static void track(struct slurm *s, bool on)
{
	static bool registered;

	for (int i = 0; i < MAX_CLUSTERS; i++) {
		if (on && !live[i]) {
			live[i] = s;
			break;
		}
		if (!on && live[i] == s)
			live[i] = NULL;
	}
	if (on && !registered)
		registered = atexit(down_all) == 0;
}

static const char *script_path(void)
{
	static char path[PATH_MAX];

	if (!path[0])
		snprintf(path, sizeof(path), "%s/tests/slurm-cluster.sh", test_srcdir());
	return path;
}

/* The script's last "slurm-cluster: " line in text (at most size-1 bytes
 * of it), else its last non-empty line, into buf: the shell may add a
 * "Terminated" of its own after it. */
static void last_line(const char *text, char *buf, size_t size)
{
	const char *end = text + strlen(text), *start, *own = NULL;

	for (const char *p = text; (p = strstr(p, "slurm-cluster: ")); p++)
		if (p == text || p[-1] == '\n')
			own = p;
	if (own) {
		snprintf(buf, size, "%.*s", (int)strcspn(own, "\n"), own);
		return;
	}
	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (start = end; start > text && start[-1] != '\n'; start--)
		;
	snprintf(buf, size, "%.*s", (int)(end - start), start);
}

static int up_once(struct slurm *s, int nodes, char *why, size_t whysize)
{
	char n[16], owner[16], tmpl[] = "/tmp/pystrobe-slurm-XXXXXX", how[64];
	char *argv[] = { "sh", (char *)script_path(), "up", tmpl, n, owner, NULL };
	double t0 = now_s();
	struct run r;
	int code;

	memset(s, 0, sizeof(*s));
	if (!mkdtemp(tmpl)) {
		snprintf(why, whysize, "mkdtemp %s: %s", tmpl, strerror(errno));
		return -1;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", tmpl);
	snprintf(s->conf, sizeof(s->conf), "%s/slurm.conf", tmpl);
	snprintf(n, sizeof(n), "%d", nodes);
	snprintf(owner, sizeof(owner), "%d", (int)getpid());
	s->nodes = nodes;
	if (run_cmd(&r, SLURM_UP_MS, argv) < 0) {
		snprintf(why, whysize, "cannot run sh %s", script_path());
		rm_rf(tmpl);
		return -1;
	}
	s->up_s = now_s() - t0;
	code = run_exit(&r);
	if (code != 0) {
		char line[400];

		last_line(r.err, line, sizeof(line));
		snprintf(why, whysize, "%s (%s)", line[0] ? line : "slurm-cluster.sh up said nothing",
			 run_describe(&r, how, sizeof(how)));
		run_free(&r);
		s->up = true;		/* a timed-out up may have left some of it */
		slurm_down(s);
		return code == 77 ? SLURM_UNAVAILABLE : -1;
	}
	run_free(&r);
	s->up = true;
	track(s, true);
	setenv("SLURM_CONF", s->conf, 1);
	return 0;
}

int slurm_up(struct slurm *s, int nodes, char *why, size_t whysize)
{
	int rc = up_once(s, nodes, why, whysize);

	/* Clusters set up at once (other tests) may pick the same free port
	 * before either binds it: once more, on ports picked anew. */
	if (rc < 0) {
		fprintf(stderr, "slurm: up failed, trying once more: %s\n", why);
		rc = up_once(s, nodes, why, whysize);
	}
	return rc;
}

int slurm_down_check(struct slurm *s, char *why, size_t whysize)
{
	char *argv[] = { "sh", (char *)script_path(), "down", s->dir, NULL };
	char line[400], how[64], left[1024];
	double t0 = now_s();
	struct run r;
	int bad = 0;

	if (why && whysize)
		why[0] = 0;
	if (!s->up)
		return 0;
	if (run_cmd(&r, SLURM_DOWN_MS, argv) < 0) {
		snprintf(why, whysize, "cannot run sh %s down", script_path());
		return -1;
	}
	s->down_s = now_s() - t0;
	if (run_exit(&r) != 0) {
		last_line(r.err, line, sizeof(line));
		snprintf(why, whysize, "%s (%s)", line, run_describe(&r, how, sizeof(how)));
		bad = 1;
	} else if (slurm_leftovers(s, left, sizeof(left)) > 0) {
		snprintf(why, whysize, "slurm-cluster.sh down left running: %s", left);
		bad = 1;
	}
	run_free(&r);
	s->up = false;
	track(s, false);
	if (!strcmp(getenv("SLURM_CONF") ? getenv("SLURM_CONF") : "", s->conf))
		unsetenv("SLURM_CONF");
	if (bad)
		fprintf(stderr, "slurm: %s is kept for a look\n", s->dir);
	else
		rm_rf(s->dir);
	return bad ? -1 : 0;
}

void slurm_down(struct slurm *s)
{
	char why[1024];

	if (slurm_down_check(s, why, sizeof(why)) < 0)
		fprintf(stderr, "slurm: down: %s\n", why);
}

void slurm_job_output(const struct slurm *s, long job, char *path, size_t size)
{
	snprintf(path, size, "%s/job-%ld.out", s->dir, job);
}

long slurm_sbatch(struct slurm *s, const char *script_text, char *why, size_t whysize)
{
	static int serial;
	char path[PATH_MAX + 32], out[PATH_MAX + 32], how[64], *end;
	char *argv[] = { "sbatch", "--parsable", out, path, NULL };
	struct run r;
	long job;

	snprintf(path, sizeof(path), "%s/batch-%d.sh", s->dir, ++serial);
	snprintf(out, sizeof(out), "--output=%s/job-%%j.out", s->dir);
	if (write_file(path, script_text, strlen(script_text)) < 0 || chmod(path, 0755) < 0) {
		snprintf(why, whysize, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		snprintf(why, whysize, "cannot run sbatch");
		return -1;
	}
	job = strtol(r.out, &end, 10);
	if (run_exit(&r) != 0 || job <= 0 || (*end && *end != ';' && *end != '\n')) {
		char line[400];

		last_line(r.err, line, sizeof(line));
		snprintf(why, whysize, "sbatch %s: %s: %s", path, run_describe(&r, how, sizeof(how)),
			 line);
		job = -1;
	}
	run_free(&r);
	return job;
}

void slurm_job_state(long job, char *state, size_t size)
{
	char id[32];
	char *argv[] = { "squeue", "-h", "-j", id, "-o", "%T", NULL };
	struct run r;

	snprintf(id, sizeof(id), "%ld", job);
	state[0] = 0;
	if (run_cmd(&r, 20000, argv) < 0)
		return;
	if (run_exit(&r) == 0)
		snprintf(state, size, "%.*s", (int)strcspn(r.out, " \n"), r.out);
	run_free(&r);
}

/* "STATE; its output ends: ..." of a job, for a failure. */
static void job_story(struct slurm *s, long job, const char *state, char *why, size_t whysize)
{
	char path[PATH_MAX + 32];
	char *text, *tail;

	slurm_job_output(s, job, path, sizeof(path));
	text = slurp(path);
	tail = text ? text + strlen(text) : NULL;
	for (int lines = 0; tail && tail > text && lines < 6; tail--)
		lines += tail[-1] == '\n';
	snprintf(why, whysize, "job %ld is %s; %s: %s", job, state[0] ? state : "gone", path,
		 tail ? tail : "(none)");
	free(text);
}

int slurm_wait_running(struct slurm *s, long job, int timeout_ms, char *why, size_t whysize)
{
	long long deadline = now_ms() + timeout_ms;
	char state[32];

	for (;;) {
		slurm_job_state(job, state, sizeof(state));
		if (!strcmp(state, "RUNNING"))
			return 0;
		if (strcmp(state, "PENDING") && strcmp(state, "CONFIGURING"))
			break;
		if (now_ms() > deadline) {
			snprintf(state + strlen(state), sizeof(state) - strlen(state), " after %d s",
				 timeout_ms / 1000);
			break;
		}
		sleep_ms(POLL_MS);
	}
	job_story(s, job, state, why, whysize);
	return -1;
}

char *slurm_python_cmd(const struct test_interp *ti, const char *script)
{
	struct strbuf sb = STRBUF_INIT;
	char inside[PATH_MAX];

	test_interp_script(ti, script, inside, sizeof(inside));
	if (ti->env[0])
		sb_printf(&sb, "env %s ", ti->env);
	if (ti->root[0])
		sb_printf(&sb, "chroot %s ", ti->root);
	sb_printf(&sb, "%s %s", ti->path, inside);
	return sb_detach(&sb);
}

/* --- the job's processes in /proc ---------------------------------------- */

/* /proc/PID/NAME, at most ENVIRON_MAX bytes, NUL-terminated; its length
 * in *len.  NULL when unreadable.  free() it. */
static char *read_proc(pid_t pid, const char *name, size_t *len)
{
	char path[64], *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(ENVIRON_MAX + 1);
	while (buf && got < ENVIRON_MAX && (n = read(fd, buf + got, ENVIRON_MAX - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (buf)
		buf[got] = 0;
	*len = got;
	return buf;
}

/* The value of NAME= in a NUL-separated environment, or NULL. */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = env; p < env + len; p += strlen(p) + 1)
		if (!strncmp(p, name, nl) && p[nl] == '=')
			return p + nl + 1;
	return NULL;
}

/* Whether word is one of the NUL-separated words of a command line, or a
 * part of one. */
static bool cmdline_has(const char *cmd, size_t len, const char *word)
{
	for (const char *p = cmd; p < cmd + len; p += strlen(p) + 1)
		if (strstr(p, word))
			return true;
	return false;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], *status, *pp;
	pid_t ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status = slurp(path);
	pp = status ? strstr(status, "\nPPid:") : NULL;
	if (pp)
		ppid = (pid_t)atoi(pp + strlen("\nPPid:"));
	free(status);
	return ppid;
}

/* Alive and not a zombie. */
static bool running(pid_t pid)
{
	char st = proc_state(pid, pid);

	return st && st != 'Z' && st != 'X';
}

static long env_long(const char *env, size_t len, const char *name)
{
	const char *v = env_get(env, len, name);

	return v && *v ? strtol(v, NULL, 10) : -1;
}

/* Whether pid runs Slurm's own srun or slurmstepd (whose command lines
 * name the job's program too). */
static bool slurm_program(pid_t pid)
{
	char path[64], exe[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	return !strcmp(base, "srun") || !strcmp(base, "slurmstepd");
}

/* Fill p from pid's environment if it belongs to job and its command line
 * has word; whether it does. */
static bool job_proc(pid_t pid, long job, const char *word, struct slurm_proc *p)
{
	size_t elen, clen;
	char *env = read_proc(pid, "environ", &elen), *cmd = NULL;
	bool ok = false;

	if (!env || env_long(env, elen, "SLURM_JOB_ID") != job || slurm_program(pid))
		goto out;
	cmd = read_proc(pid, "cmdline", &clen);
	if (!cmd || !cmdline_has(cmd, clen, word) || !running(pid))
		goto out;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = parent_of(pid);
	p->procid = env_long(env, elen, "SLURM_PROCID");
	p->localid = env_long(env, elen, "SLURM_LOCALID");
	snprintf(p->step, sizeof(p->step), "%s",
		 env_get(env, elen, "SLURM_STEP_ID") ? env_get(env, elen, "SLURM_STEP_ID") : "");
	snprintf(p->node, sizeof(p->node), "%s",
		 env_get(env, elen, "SLURMD_NODENAME") ? env_get(env, elen, "SLURMD_NODENAME") : "");
	ok = true;
out:
	free(env);
	free(cmd);
	return ok;
}

int slurm_job_procs(long job, const char *word, struct slurm_proc *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && n < max && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid > 0 && pid != getpid() && job_proc(pid, job, word, &out[n]))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* Rank r's log in logdir is there and names a live pid. */
static bool rank_ready(const char *logdir, int r)
{
	char name[32];
	long pid;

	snprintf(name, sizeof(name), "rank-%d.json", r);
	pid = json_file_int(logdir, name, "pid");
	return pid > 0 && running((pid_t)pid);
}

int slurm_wait_ranks(struct slurm *s, long job, const char *logdir, int n, int timeout_ms,
		     char *why, size_t whysize)
{
	long long deadline = now_ms() + timeout_ms, checked = 0;
	char state[32] = "RUNNING";
	int r = 0;

	for (;;) {
		while (r < n && rank_ready(logdir, r))
			r++;
		if (r == n)
			return 0;
		if (now_ms() - checked > 1000) {	/* squeue is dear: once a second */
			slurm_job_state(job, state, sizeof(state));
			checked = now_ms();
			if (strcmp(state, "RUNNING") && strcmp(state, "PENDING") &&
			    strcmp(state, "CONFIGURING"))
				break;
		}
		if (now_ms() > deadline)
			break;
		sleep_ms(POLL_MS);
	}
	snprintf(why, whysize, "rank %d of %d not ready in %s after %.1f s: ", r, n, logdir,
		 timeout_ms / 1000.0);
	job_story(s, job, state, why + strlen(why), whysize - strlen(why));
	return -1;
}

/* Whether pid is this process or one of its ancestors. */
static bool self_or_ancestor(pid_t pid)
{
	for (pid_t p = getpid(), k = 0; p > 1 && k < 64; p = parent_of(p), k++)
		if (p == pid)
			return true;
	return false;
}

int slurm_leftovers(const struct slurm *s, char *what, size_t size)
{
	char conf[PATH_MAX + 32];
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	snprintf(conf, sizeof(conf), "SLURM_CONF=%s", s->conf);
	what[0] = 0;
	while (d && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		size_t elen = 0, clen = 0;
		char *env, *cmd;
		bool ours;

		if (pid <= 0 || !running(pid) || self_or_ancestor(pid))
			continue;
		env = read_proc(pid, "environ", &elen);
		cmd = read_proc(pid, "cmdline", &clen);
		ours = (cmd && cmdline_has(cmd, clen, s->dir)) ||
		       (env && env_get(env, elen, "SLURM_CONF") &&
			!strcmp(env_get(env, elen, "SLURM_CONF") - strlen("SLURM_CONF="), conf));
		if (ours && running(pid) && ++n <= 8)
			snprintf(what + strlen(what), size - strlen(what), "%s%d (%.60s)",
				 n > 1 ? ", " : "", (int)pid, cmd ? cmd : "?");
		free(env);
		free(cmd);
	}
	if (d)
		closedir(d);
	return n;
}

long slurm_light_job(struct slurm *s, int nodes, int ranks, int stall, const char *python,
		     const char *logdir, int timeout_ms, char *why, size_t whysize)
{
	char *text;
	long job;

	if (mkdir(logdir, 0755) != 0) {
		snprintf(why, whysize, "mkdir %s: %s", logdir, strerror(errno));
		return -1;
	}
	text = xasprintf("#!/bin/sh\n#SBATCH -N %d -n %d --ntasks-per-node=%d\n"
			 "export LIGHT_DIR=%s STALL_RANK=%d\n"
			 "exec srun %s %s/tests/targets/slurm_light_rank.py\n",
			 nodes, ranks, ranks / nodes, logdir, stall, python, test_srcdir());
	job = slurm_sbatch(s, text, why, whysize);
	free(text);
	if (job < 0 || slurm_wait_running(s, job, timeout_ms, why, whysize) < 0 ||
	    slurm_wait_ranks(s, job, logdir, ranks, timeout_ms, why, whysize) < 0)
		return -1;
	return job;
}

int slurm_rank_truths(const char *dir, int n, struct slurm_truth *truth, char *why,
		      size_t whysize)
{
	for (int r = 0; r < n; r++) {
		char path[PATH_MAX + 32], *log;

		snprintf(path, sizeof(path), "%s/rank-%d.json", dir, r);
		if (!(log = slurp(path))) {
			snprintf(why, whysize, "no log %s", path);
			return -1;
		}
		json_text_str(log, "node", truth[r].node, sizeof(truth[r].node));
		json_text_str(log, "function", truth[r].fn, sizeof(truth[r].fn));
		truth[r].line = (long)json_text_num(log, "line");
		free(log);
	}
	return 0;
}

long slurm_rank_samples(const char *collapsed, const char *node, int rank, const char *what,
			long *with)
{
	char prefix[128];
	long total = 0;

	snprintf(prefix, sizeof(prefix), "node=%s;rank=%d;", node, rank);
	*with = 0;
	for (const char *p = collapsed; p && *p;) {
		size_t n = strcspn(p, "\n");
		const char *sp = memrchr(p, ' ', n);
		long count = sp ? atol(sp + 1) : 0;

		if (!strncmp(p, prefix, strlen(prefix))) {
			total += count;
			if (sp && memmem(p, (size_t)(sp - p), what, strlen(what)))
				*with += count;
		}
		p += n + (p[n] == '\n');
	}
	return total;
}

void slurm_check_dump(const char *jobopt, const struct slurm_truth *truth, int ranks, int stall,
		      const char *script, const char *others, char **msg)
{
	const struct slurm_truth *t = &truth[stall];
	char want[256];
	struct run r;

	ck_assert_int_eq(run_pystrobe(&r, "dump", jobopt, NULL), 0);
	printf("dump %s:\n%s%s", jobopt, r.out, r.err);
	if (run_exit(&r) != 0)
		msg_add(msg, "exit %d: %s", run_exit(&r), r.err);
	snprintf(want, sizeof(want), "rank %d on %s differs: in %s (%s:%ld)", stall, t->node,
		 t->fn, script, t->line);
	if (!strstr(r.out, want))
		msg_add(msg, "no \"%s\" in the verdict", want);
	snprintf(want, sizeof(want), "ranks 0-%d on hnode[1-2] %s", ranks - 2, others);
	if (!strstr(r.out, want))
		msg_add(msg, "no \"%s\" in the verdict", want);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "dump", "--json", jobopt, NULL), 0);
	for (int i = 0; i < ranks; i++) {
		snprintf(want, sizeof(want), "\"node\":\"%s\",\"rank\":%d", truth[i].node, i);
		if (!strstr(r.out, want))
			msg_add(msg, "--json has no process with %s", want);
	}
	run_free(&r);
}

bool slurm_up_or_skip(struct slurm *s, int nodes)
{
	char why[1024];
	int rc = slurm_up(s, nodes, why, sizeof(why));

	if (rc == SLURM_UNAVAILABLE) {
		test_skip("slurm cluster: %s", why);
		return false;
	}
	ck_assert_msg(rc == 0, "slurm cluster did not start: %s", why);
	test_used("slurm");
	return true;
}

bool slurm_skip_sanitized(const char *what)
{
	if (!pystrobe_sanitized())
		return false;
	test_skip("%s: not in a sanitizer build (check_slurm runs the front and the nodes "
		  "under the sanitizers)", what);
	return true;
}
