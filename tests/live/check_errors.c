/* The ways `pystrobe dump` can fail, each with its exit code and one line on
 * stderr starting with "pystrobe: ":
 *
 *   2 usage, 3 no such process, 4 permission denied, 5 not a Python process,
 *   6 unsupported Python version (or a free-threaded build), 7 target exited
 *   during the read, 8 a _Py_DebugOffsets table that does not check out.
 *
 * A target that exits while it is being dumped is dumped many times, at
 * different moments of its life and death, on every interpreter: pystrobe
 * must never crash, hang or leave it stopped.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* Sleeps forever once it has said it is up (Python 2.7 syntax too). */
static const char sleeper_code[] =
	"import os, sys, time\n"
	"open(os.path.join(sys.argv[-1], 'ready'), 'w').close()\n"
	"while True:\n"
	"    time.sleep(3600)\n";

/* Busy threads, then exit after argv[1] seconds, abruptly (os._exit) when
 * argv[2] is "hard", else through interpreter finalization. */
static const char exiting_code[] =
	"import os, sys, threading, time\n"
	"def spin():\n"
	"    x = 0\n"
	"    while True:\n"
	"        x += 1\n"
	"for _ in range(3):\n"
	"    threading.Thread(target=spin, daemon=True).start()\n"
	"open(os.path.join(sys.argv[-1], 'ready'), 'w').close()\n"
	"time.sleep(float(sys.argv[1]))\n"
	"if sys.argv[2] == 'hard':\n"
	"    os._exit(0)\n";

/* exit code, one "pystrobe: " line, and what that line must mention. */
static void assert_error(const struct run *r, const char *what, int code,
			 const char *needle)
{
	char how[96];

	run_describe(r, how, sizeof(how));
	ck_assert_msg(run_exit(r) == code,
		      "%s: pystrobe %s, expected exit %d; stderr: %.1000s",
		      what, how, code, r->err);
	ck_assert_msg(run_one_error_line(r),
		      "%s: stderr is not one line starting with \"pystrobe: \": %.1000s",
		      what, r->err);
	if (needle)
		ck_assert_msg(strcasestr(r->err, needle),
			      "%s: message does not mention \"%s\": %s", what,
			      needle, r->err);
}

static void assert_not_stopped(pid_t pid, const char *what)
{
	char state = 0;
	pid_t tid = proc_stopped_thread(pid, &state);

	ck_assert_msg(!tid, "%s: thread %d left stopped (state %c)", what, tid,
		      state);
}

/* A target that sleeps once it is up. */
static int start_sleeper(struct target *t, const struct test_interp *ti,
			 char *why, size_t whysize)
{
	if (target_start(t, ti, why, whysize, "-c", sleeper_code, NULL) < 0)
		return -1;
	if (target_wait_file(t, "ready", TARGET_READY_MS, why, whysize) < 0) {
		target_stop(t);
		return -1;
	}
	return 0;
}

/* --- usage ---------------------------------------------------------------- */

static const char *const usage_cases[][5] = {
	{ NULL },
	{ "dump", NULL },
	{ "dump", "--pid", NULL },
	{ "dump", "--pid", "abc", NULL },
	{ "dump", "--pid", "1", "--frobnicate", NULL },
	{ "frobnicate", NULL },
};

/* pystrobe ARGS... (NULL-terminated, at most 8) must exit 2 with one line,
 * mentioning needle unless it is NULL. */
static void assert_usage(const char *const *args, const char *needle)
{
	char *argv[10], what[128] = "pystrobe";
	struct run r;
	int n = 0;

	argv[n++] = (char *)pystrobe_path();
	for (; args[n - 1]; n++) {
		argv[n] = (char *)args[n - 1];
		strncat(what, " ", sizeof(what) - strlen(what) - 1);
		strncat(what, args[n - 1], sizeof(what) - strlen(what) - 1);
	}
	argv[n] = NULL;
	ck_assert_int_eq(run_cmd(&r, RUN_TIMEOUT_MS, argv), 0);
	assert_error(&r, what, 2, needle);
	run_free(&r);
}

START_TEST(test_usage)
{
	assert_usage(usage_cases[_i], NULL);
}
END_TEST

/* A mistyped command line: exit 2 and one line naming what was meant. */
static const struct {
	const char *args[8];
	const char *says;
} hint_cases[] = {
	{ { "recrod", NULL }, "did you mean record?" },
	{ { "dupm", "--pid", "1", NULL }, "did you mean dump?" },
	{ { "17784", NULL }, "did you mean pystrobe dump --pid 17784?" },
	{ { "help", "recrod", NULL }, "did you mean record?" },
	{ { "dump", "17784", NULL }, "unexpected argument '17784' (did you mean --pid 17784?)" },
	{ { "dump", "--locals", "deep", "--pid", "1", NULL },
	  "unexpected argument 'deep' (did you mean --locals=deep?" },
	{ { "dump", "--lcoals", "--pid", "1", NULL }, "did you mean --locals?" },
	{ { "dump", "--pid", "1", "--gruop", NULL }, "did you mean --group?" },
	{ { "record", "--duraton", "1", "--pid", "1", NULL }, "did you mean --duration?" },
	{ { "record", "17784", NULL }, "did you mean --pid 17784?" },
	{ { "record", "--async", "all", "--", "true", NULL }, "did you mean --async=all?" },
	{ { "top", "--natvie", "--pid", "1", NULL }, "did you mean --native?" },
	{ { "diff", "--negtae", "a", "b", NULL }, "did you mean --negate?" },
	/* dump's node mode (what dump --slurm runs on each node). */
	{ { "dump", "--slurm-node=12x", NULL }, "--slurm-node takes JOB or JOB.STEP" },
	{ { "dump", "--slurm-node=12.0/1", NULL }, "--slurm-node takes JOB or JOB.STEP" },
	{ { "dump", "--slurm-node=12", "--pid", "1", NULL }, "not with --pid" },
	{ { "dump", "--timeout", "3", "--pid", "1", NULL }, "--timeout goes with --slurm" },
	{ { "dump", "--slurm-node=12", "--timeout", "0", NULL }, "between 0.1 and 3600" },
	/* dump and record --slurm: what they cannot go with, and the job id
	 * as a word of its own, which the optional value cannot be. */
	{ { "dump", "--slurm", "4242", NULL }, "--slurm=4242" },
	{ { "record", "--slurm", "4242", "-d", "3", NULL }, "--slurm=4242" },
	{ { "dump", "--slurm=4242", "--pid", "1", NULL }, "not with --pid" },
	{ { "dump", "--slurm=4242", "--group", NULL }, "--group is not needed" },
	{ { "dump", "--pystrobe", "/x", "--pid", "1", NULL }, "--pystrobe goes with --slurm" },
	{ { "record", "--slurm=4242", "--pid", "1", NULL }, "cannot be used with --pid" },
	{ { "record", "--slurm=4242", "--slurm-node=4242", NULL }, "cannot be used together" },
	{ { "record", "--pystrobe", "/x", "--pid", "1", NULL }, "go with --slurm" },
	{ { "record", "--slurm=4x2", NULL }, "is no Slurm job id" },
};

START_TEST(test_hints)
{
	assert_usage(hint_cases[_i].args, hint_cases[_i].says);
}
END_TEST

/* pystrobe help CMD is pystrobe CMD --help. */
START_TEST(test_help_command)
{
	const char *cmds[] = { "dump", "record", "top", "diff", "merge" };
	char want[64];
	struct run r;

	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		ck_assert_int_eq(run_pystrobe(&r, "help", cmds[i], NULL), 0);
		snprintf(want, sizeof(want), "usage: pystrobe %s ", cmds[i]);
		ck_assert_msg(run_exit(&r) == 0 && !strncmp(r.out, want, strlen(want)),
			      "pystrobe help %s: exit %d, not %s's help: %.300s", cmds[i],
			      run_exit(&r), cmds[i], r.out);
		run_free(&r);
	}
}
END_TEST

/* Root refused pid 1 (a VM's or a sandbox's init) must hear what blocks,
 * not "run as root".  Where pid 1 can be read, it is no Python: exit 5. */
START_TEST(test_root_pid1)
{
	struct run r;

	ck_assert_msg(geteuid() == 0, "this check must run as root");
	ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", "1", NULL), 0);
	if (run_exit(&r) == 4) {
		assert_error(&r, "dump --pid 1 as root", 4, "process 1");
		ck_assert_msg(!strstr(r.err, "run as root"), "root told to run as root: %s", r.err);
		printf("errors: root refused pid 1: %s", r.err);
	} else {
		assert_error(&r, "dump --pid 1 as root", 5, NULL);
	}
	run_free(&r);
}
END_TEST

/* --- processes that are not there, or not Python ------------------------- */

START_TEST(test_no_such_pid)
{
	char pid[16];
	struct run r;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	ck_assert_int_gt(gone, 0);
	waitpid(gone, NULL, 0);
	/* A pid just reaped is not reused for a long while. */
	snprintf(pid, sizeof(pid), "%d", gone);
	ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", pid, NULL), 0);
	assert_error(&r, "dump of a reaped pid", 3, pid);
	run_free(&r);
}
END_TEST

START_TEST(test_not_python)
{
	char *argv[] = { "sleep", "100", NULL };
	char pid[16];
	struct run r;
	pid_t sleeper = spawn_cmd(argv);

	ck_assert_int_gt(sleeper, 0);
	if (proc_wait_exe(sleeper, "/sleep", 10000) < 0) {
		kill_reap(sleeper);
		ck_abort_msg("sleep 100 did not start");
	}
	snprintf(pid, sizeof(pid), "%d", sleeper);
	ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", pid, NULL), 0);
	assert_not_stopped(sleeper, "dump of sleep 100");
	kill_reap(sleeper);
	assert_error(&r, "dump of sleep 100", 5, "not a Python process");
	run_free(&r);
}
END_TEST

/* A launcher's pid (sh, which forks python3): not Python, but the message
 * names the Python process below it and what to do with it. */
START_TEST(test_launcher_pid)
{
	char *argv[] = { "sh", "-c", "python3 -c 'import time; time.sleep(100)'; true", NULL };
	char pid[16], kid[32];
	struct run r = { 0 };
	pid_t sh = spawn_cmd(argv), child;
	const char *p;
	int tries;

	ck_assert_int_gt(sh, 0);
	if (proc_wait_exe(sh, "sh", 10000) < 0) {
		kill_reap(sh);
		ck_abort_msg("sh did not start");
	}
	snprintf(pid, sizeof(pid), "%d", sh);
	/* Until the child's interpreter is up, it is named by nobody. */
	for (tries = 0; tries < 100; tries++) {
		if (tries)
			run_free(&r);
		ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", pid, NULL), 0);
		if (strstr(r.err, "its Python process"))
			break;
		usleep(100 * 1000);
	}
	assert_not_stopped(sh, "dump of sh -c python3");
	/* The python3 is sh's child, not ours: end it by the pid named. */
	if ((p = strstr(r.err, "its Python process: ")) && (child = atoi(p + 20)) > 0)
		kill(child, SIGKILL);
	kill_reap(sh);
	assert_error(&r, "dump of sh -c python3", 5, "its Python process: ");
	ck_assert_msg(strstr(r.err, "give one to --pid, or add -s"), "no next step: %s", r.err);
	snprintf(kid, sizeof(kid), ": %d (", sh);
	ck_assert_msg(!strstr(r.err, kid), "names sh itself: %s", r.err);
	run_free(&r);
}
END_TEST

/* --- permission ----------------------------------------------------------- */

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out, ok = 1;
	ssize_t n;

	in = open(from, O_RDONLY);
	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (out < 0) {
		close(in);
		return -1;
	}
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, n) == n;
	close(in);
	if (close(out) != 0)
		ok = 0;
	return ok && fchmodat(AT_FDCWD, to, mode, 0) == 0 ? 0 : -1;
}

/* The build tree may sit where nobody cannot reach: give nobody a copy. */
static int pystrobe_for_nobody(char dir[32], char bin[64])
{
	snprintf(dir, 32, "/tmp/pystrobe-bin-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return -1;
	snprintf(bin, 64, "%s/pystrobe", dir);
	return copy_file(pystrobe_path(), bin, 0755);
}

/* bin CMD... (ending in NULL) as nobody. */
static void run_as_nobody(struct run *r, const char *bin, char *const *cmd)
{
	char *argv[24];
	int n = 0, have_setpriv = access("/usr/bin/setpriv", X_OK) == 0 ||
				  access("/bin/setpriv", X_OK) == 0;

	if (have_setpriv) {
		for (char *const *a = (char *const[]){ "setpriv", "--reuid=65534", "--regid=65534",
						       "--clear-groups", NULL }; *a; a++)
			argv[n++] = *a;
	} else {
		for (char *const *a = (char *const[]){ "runuser", "-u", "nobody", "--", NULL };
		     *a; a++)
			argv[n++] = *a;
	}
	argv[n++] = (char *)bin;
	while (*cmd && n < 23)
		argv[n++] = *cmd++;
	argv[n] = NULL;
	ck_assert_int_eq(run_cmd(r, RUN_TIMEOUT_MS, argv), 0);
}

/* Every command, with and without -s, refuses root's process the same
 * way: one line that says what to do, exit 4, the target untouched. */
START_TEST(test_permission)
{
	char dir[32], bin[64], pid[16], why[512];
	char *const cmds[][8] = {
		{ "dump", "--pid", pid, NULL },
		{ "dump", "-s", "--pid", pid, NULL },
		{ "record", "-d", "0.3", "--pid", pid, NULL },
		{ "record", "-s", "-d", "0.3", "--pid", pid, NULL },
		{ "top", "--pid", pid, NULL },
	};
	struct target t;
	struct run r;

	ck_assert_msg(geteuid() == 0, "this check must run as root");
	if (start_sleeper(&t, &interps[0], why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s", interps[0].label, why);
	if (pystrobe_for_nobody(dir, bin) < 0) {
		target_stop(&t);
		ck_abort_msg("cannot copy %s to a directory nobody can read",
			     pystrobe_path());
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "%s%s of root's process by nobody", cmds[i][0],
			 strcmp(cmds[i][1], "-s") ? "" : " -s");
		run_as_nobody(&r, bin, cmds[i]);
		assert_not_stopped(t.py_pid, what);
		assert_error(&r, what, 4, NULL);
		ck_assert_msg(strstr(r.err, "ptrace_scope") || strstr(r.err, "CAP_SYS_PTRACE"),
			      "%s: the message mentions neither ptrace_scope nor CAP_SYS_PTRACE: %s",
			      what, r.err);
		run_free(&r);
	}
	target_stop(&t);
	unlink(bin);
	rmdir(dir);
}
END_TEST

/* --- unsupported versions ------------------------------------------------- */

/* pyenv's 3.6 or 2.7, which pystrobe must refuse by name. */
static int old_interp(struct test_interp *ti, const char *version, int minor)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[PATH_MAX];
	glob_t g;
	int found;

	snprintf(pattern, sizeof(pattern), "%s/versions/%s.*/bin/python%s",
		 root && *root ? root : "/root/.pyenv", version, version);
	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	memset(ti, 0, sizeof(*ti));
	snprintf(ti->path, sizeof(ti->path), "%s", g.gl_pathv[g.gl_pathc - 1]);
	snprintf(ti->label, sizeof(ti->label), "%s pyenv", version);
	ti->minor = minor;
	found = access(ti->path, X_OK) == 0;
	globfree(&g);
	return found;
}

/* Start an old interpreter, dump it; returns 0 if it is not installed. */
static int dump_old(struct run *r, const char *version, int minor)
{
	struct test_interp ti;
	struct target t;
	char pid[16], why[512];

	if (!old_interp(&ti, version, minor)) {
		test_skip("errors: no pyenv Python %s: its check did not run", version);
		return 0;
	}
	if (start_sleeper(&t, &ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s", ti.label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	ck_assert_int_eq(run_pystrobe(r, "dump", "--pid", pid, NULL), 0);
	assert_not_stopped(t.py_pid, ti.label);
	target_stop(&t);
	return 1;
}

START_TEST(test_python36)
{
	struct run r;

	if (!dump_old(&r, "3.6", 6))
		return;
	assert_error(&r, "dump of Python 3.6", 6,
		     "unsupported Python version 3.6");
	run_free(&r);
}
END_TEST

START_TEST(test_python27)
{
	struct run r;

	if (!dump_old(&r, "2.7", 7))
		return;
	if (run_exit(&r) == 6)
		assert_error(&r, "dump of Python 2.7", 6,
			     "unsupported Python version 2.7");
	else
		assert_error(&r, "dump of Python 2.7", 5,
			     "not a Python process");
	run_free(&r);
}
END_TEST

/* --- a _Py_DebugOffsets pystrobe must refuse, in a live process ----------- */

/* A copy of a real 3.13+ interpreter with its _Py_DebugOffsets patched: the
 * process starts from the changed table (CPython does not read it itself),
 * so pystrobe meets an unknown version, a free-threaded flag or a broken
 * cookie in a running interpreter, and must refuse it in one line. */
struct gate_case {
	const char *what;
	unsigned pos;		/* byte within the table; 0: the thread state's size */
	uint64_t value;
	int code;
	const char *needle;
};

static const struct gate_case gate_cases[] = {
	{ "version 3.16", 8, 0x031000f0, 6,
	  "unsupported Python version 3.16 (pystrobe reads 3.7 to 3.15)" },
	{ "free-threaded flag", 16, 1, 6,
	  "t is not supported (pystrobe reads 3.13t, and 3.7 to 3.15 with the GIL)" },
	/* The cookie cannot be broken this way: CPython writes it at start. */
	{ "thread-state size", 0, 1ull << 40, 8, "implausible struct size" },
};

/* The newest interpreter whose binary holds the table (not a libpython). */
static const struct test_interp *gate_interp(char *bin, size_t size)
{
	for (int i = ninterps - 1; i >= 0; i--) {
		if (interps[i].minor < 13 || !interps[i].root[0] || strstr(interps[i].label, "dbg"))
			continue;
		snprintf(bin, size, "%s%s", interps[i].root, interps[i].path);
		return &interps[i];
	}
	return NULL;
}

/* Where the thread state's size sits in the table of version v. */
static unsigned tstate_size_pos(uint64_t v)
{
	return ((v >> 16) & 0xff) == 13 ? 152 : 176;
}

/* A whole binary file in memory (slurp stops at a NUL). */
static char *read_binary(const char *path, size_t *len)
{
	struct stat st;
	char *b = NULL;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		b = malloc(st.st_size);
		if (b && read(fd, b, st.st_size) != st.st_size) {
			free(b);
			b = NULL;
		}
		*len = st.st_size;
	}
	close(fd);
	return b;
}

/* Write bin with every _Py_DebugOffsets (cookie, then version 3.x) patched
 * to `to`; returns how many were found. */
static int patch_copy(const char *bin, const char *to, const struct gate_case *gc)
{
	size_t len = 0, found = 0;
	char *b = read_binary(bin, &len);
	int fd;

	if (!b)
		return 0;
	for (size_t i = 0; i + 24 <= len; i++) {
		uint64_t v;

		if (memcmp(b + i, "xdebugpy", 8) != 0)
			continue;
		memcpy(&v, b + i + 8, 8);
		if (v >> 24 != 3)
			continue;
		memcpy(b + i + (gc->pos ? gc->pos : tstate_size_pos(v)), &gc->value, 8);
		found++;
	}
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, b, len) != (ssize_t)len)
		found = 0;
	if (fd >= 0)
		close(fd);
	free(b);
	return (int)found;
}

START_TEST(test_gate)
{
	const struct gate_case *gc = &gate_cases[_i];
	char bin[PATH_MAX * 2], host[PATH_MAX], inside[PATH_MAX], copy[PATH_MAX * 2];
	char pid[16], why[512], what[128];
	const struct test_interp *base = gate_interp(bin, sizeof(bin));
	struct test_interp ti;
	struct target t;
	struct run r;

	if (!base) {
		test_skip("errors: no rooted Python 3.13+ (tests/setup-sid-root.sh): the patched-table checks did not run");
		return;
	}
	ti = *base;
	test_interp_shared_dir(&ti, host, inside, sizeof(host));
	snprintf(copy, sizeof(copy), "%s/python", host);
	ck_assert_msg(patch_copy(bin, copy, gc) > 0, "no _Py_DebugOffsets in %s", bin);
	snprintf(ti.path, sizeof(ti.path), "%.4000s/python", inside);
	snprintf(what, sizeof(what), "%s with its %s patched", base->label, gc->what);
	if (start_sleeper(&t, &ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s", what, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	ck_assert_int_eq(run_pystrobe(&r, "dump", "--pid", pid, NULL), 0);
	assert_not_stopped(t.py_pid, what);
	target_stop(&t);
	rm_rf(host);
	printf("errors: %s: %s", what, r.err);
	assert_error(&r, what, gc->code, gc->needle);
	run_free(&r);
}
END_TEST

/* --- a target that exits while it is dumped ------------------------------- */

#define EXIT_RUNS 20

struct reaper {
	pthread_t thread;
	struct target *t;
};

/* Reap the target the moment it exits, so that its pid vanishes under
 * pystrobe instead of lingering as a zombie. */
static void *reap_target(void *arg)
{
	struct target *t = arg;

	while (waitpid(t->pid, &t->status, 0) < 0 && errno == EINTR)
		;
	return NULL;
}

static void reaper_stop(struct reaper *rp)
{
	struct timespec limit;

	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += 30;
	if (pthread_timedjoin_np(rp->thread, NULL, &limit) != 0) {
		/* Still waiting, so the pid is still ours to kill. */
		kill(rp->t->pid, SIGKILL);
		pthread_join(rp->thread, NULL);
	}
	rp->t->reaped = 1;
}

/* One run: the target lives target_ms after it is up; we dump it after
 * dump_ms.  Returns pystrobe's exit, or adds to failures and returns -1. */
static int dump_exiting(const struct test_interp *ti, int run, char **failures)
{
	/* Spread over lifetimes, dump moments (before, at and after the exit:
	 * a dump takes a few ms), both ways of exiting, both output formats,
	 * and zombie or reaped at once. */
	int target_ms = (run % 5) * 10, dump_ms = (run * 3 % 7) * 7;
	int zombie = run % 3 == 0, json = run / 2 % 2;
	const char *mode = run % 2 ? "hard" : "finalize";
	char secs[16], pid[16], why[512], how[96];
	struct reaper rp = { .t = NULL };
	struct target t;
	char state = 0;
	pid_t stopped;
	struct run r;
	int code;

	snprintf(secs, sizeof(secs), "%.3f", target_ms / 1000.0);
	if (target_start(&t, ti, why, sizeof(why), "-c", exiting_code, secs,
			 mode, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why,
			     sizeof(why)) < 0) {
		msg_add(failures, "run %d: %s", run, why);
		target_stop(&t);
		return -1;
	}
	rp.t = &t;
	if (!zombie && pthread_create(&rp.thread, NULL, reap_target, &t))
		zombie = 1;
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	sleep_ms(dump_ms);
	code = run_pystrobe(&r, "dump", "--pid", pid,
			    json ? "--json" : NULL, NULL);
	stopped = proc_stopped_thread(t.py_pid, &state);
	if (stopped)
		msg_add(failures, "run %d: thread %d left stopped (state %c)",
			run, stopped, state);
	if (!zombie)
		reaper_stop(&rp);
	target_stop(&t);
	if (code < 0) {
		msg_add(failures, "run %d: cannot run pystrobe", run);
		run_free(&r);
		return -1;
	}

	code = run_exit(&r);
	if (code != 0 && code != 3 && code != 7)
		code = -1;
	else if (code != 0 && !run_one_error_line(&r))
		code = -1;
	if (code < 0)
		msg_add(failures,
			"run %d (lives %d ms, %s exit, dumped%s after %d ms%s): pystrobe %s; stderr: %.500s",
			run, target_ms, mode, json ? " --json" : "", dump_ms,
			zombie ? ", left a zombie" : "",
			run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	return code;
}

START_TEST(test_exiting)
{
	const struct test_interp *ti = &interps[_i];
	int counts[8] = { 0 };
	char *failures = NULL;

	for (int run = 0; run < EXIT_RUNS; run++) {
		int code = dump_exiting(ti, run, &failures);
		if (code >= 0)
			counts[code]++;
	}
	printf("errors: %s: target exiting during the dump: %d runs, exit 0 x%d, 3 x%d, 7 x%d%s\n",
	       ti->label, EXIT_RUNS, counts[0], counts[3], counts[7],
	       failures ? ", FAILED:" : "");
	if (failures) {
		printf("%s", failures);
		fflush(stdout);
	}
	ck_assert_msg(!failures, "%s: %.1500s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("errors");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);

	tc = tcase_create("usage");
	tcase_add_loop_test(tc, test_usage, 0,
			    sizeof(usage_cases) / sizeof(*usage_cases));
	tcase_add_loop_test(tc, test_hints, 0, sizeof(hint_cases) / sizeof(*hint_cases));
	tcase_add_test(tc, test_help_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("processes");
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_test(tc, test_no_such_pid);
	tcase_add_test(tc, test_root_pid1);
	tcase_add_test(tc, test_not_python);
	tcase_add_test(tc, test_launcher_pid);
	if (ninterps > 0)
		tcase_add_test(tc, test_permission);
	tcase_add_test(tc, test_python36);
	tcase_add_test(tc, test_python27);
	tcase_add_loop_test(tc, test_gate, 0, sizeof(gate_cases) / sizeof(*gate_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("exiting");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_exiting, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
