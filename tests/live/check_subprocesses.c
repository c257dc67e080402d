/* --subprocesses against live process trees, on every Python this machine
 * has.
 *
 * tests/targets/workers.py starts 4 workers (fork, spawn, forkserver, a
 * multiprocessing.Pool, or 3 epochs of fresh workers) that burn in
 * functions of their own, and writes down the pids, threads and CPU of
 * every process (truth.json).  tests/check_workers.py holds pystrobe's
 * output against that:
 *   record -s          a root per process, each worker's function under
 *                      its own root with the samples its CPU is worth
 *   --group-processes  the workers under one "processes: " root
 *   dump -s --json     every process and thread, parents before children
 * Every interpreter runs fork (record and dump); full_modes() ones run every
 * mode, which keeps the file within about three minutes.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define RATE		"100"
#define WORK_CPU	"0.4"	/* seconds each worker burns */
#define RUN_MS		120000	/* one recording, start to end */

static const struct test_interp *interps;
static int ninterps;

struct sub_test {
	const struct test_interp *ti;
	char script[PATH_MAX];
	char *failures;
};

static void flunk(struct sub_test *d, const char *what, const char *why, const char *detail)
{
	msg_add(&d->failures, "%s: %s: %s%s%.2000s", d->ti->label, what, why,
		detail ? "\n" : "", detail ? detail : "");
}

/* The rate pystrobe sampled at by its summary ("N samples ... in X s"),
 * at most RATE, into buf: what a worker's samples are held to.  Another
 * job on the machine can hold pystrobe below the rate it asked for, and
 * then every process gets fewer samples for its CPU time; a sampler that
 * misses one process's stacks still shows against the others'. */
static const char *achieved_rate(const char *err, char *buf, size_t size)
{
	const char *p = err ? strstr(err, "pystrobe: ") : NULL;
	unsigned long long rounds, stacks;
	double secs, rate = atof(RATE);

	for (; p; p = strstr(p + 1, "pystrobe: "))
		if (sscanf(p, "pystrobe: %llu samples from %llu rounds in %lf s", &stacks, &rounds,
			   &secs) == 3 && secs > 0) {
			if (rounds / secs < rate)
				rate = rounds / secs;
			break;
		}
	snprintf(buf, size, "%.1f", rate);
	return buf;
}

/* python3 tests/check_workers.py ARGS...: its verdict, and its report in
 * the log either way. */
static void judge(struct sub_test *d, const char *what, char *const *args)
{
	char checker[PATH_MAX];
	const char *argv[12] = { test_python3(), checker };
	struct run r;
	int n = 2;

	snprintf(checker, sizeof(checker), "%s/tests/check_workers.py", test_srcdir());
	while (*args && n < 11)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, (char *const *)argv) < 0) {
		flunk(d, what, "cannot run check_workers.py", NULL);
		return;
	}
	printf("subprocesses: %s: %s:\n%s", d->ti->label, what, r.out);
	if (run_exit(&r) != 0)
		flunk(d, what, "check_workers.py found faults", r.out);
	run_free(&r);
}

enum how { PLAIN, GROUP, SHELL };

/* pystrobe record -s [--group-processes] -- [sh -c ...] python workers.py
 * MODE OUTDIR, then judge the profile.  Through a shell, the target is a
 * process that is not Python and Python is its child. */
static void record_mode(struct sub_test *d, const char *mode, enum how how)
{
	bool group = how == GROUP;
	char what[64], out[PATH_MAX + 16], truth[PATH_MAX + 16], desc[64], rate[32];
	const char *argv[48];
	struct target t = { .ti = d->ti };
	struct run r;
	int n = 0;

	snprintf(what, sizeof(what), "record -s%s %s%s", group ? " --group-processes" : "", mode,
		 how == SHELL ? " under sh" : "");
	test_interp_shared_dir(d->ti, t.dir, t.dir_inside, sizeof(t.dir));
	if (!t.dir[0]) {
		flunk(d, what, "cannot make a shared directory", strerror(errno));
		return;
	}
	snprintf(out, sizeof(out), "%s/profile.txt", t.dir);
	snprintf(truth, sizeof(truth), "%s/truth.json", t.dir);
	for (const char *a[] = { "record", "-q", "-s", "-r", RATE, "-f", "collapsed", "-o", out },
	     **p = a; p < a + 9; p++)
		argv[n++] = *p;
	if (group)
		argv[n++] = "--group-processes";
	argv[n++] = "--";
	if (how == SHELL) {
		/* Not "exec": sh must stay, as the Python's parent. */
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = "\"$@\"; exit $?";
		argv[n++] = "sh";
	}
	n += python_argv(d->ti, (char **)argv + n, 16);
	argv[n++] = d->script;
	argv[n++] = mode;
	argv[n++] = "--cpu";
	argv[n++] = WORK_CPU;
	argv[n++] = t.dir_inside;
	argv[n] = NULL;

	memmove(argv + 1, argv, (n + 1) * sizeof(*argv));
	argv[0] = pystrobe_path();
	if (run_cmd(&r, RUN_MS, (char *const *)argv) < 0) {
		flunk(d, what, "cannot run pystrobe", NULL);
		goto out;
	}
	if (run_exit(&r) != 0) {
		flunk(d, what, run_describe(&r, desc, sizeof(desc)), r.err);
	} else if (access(truth, R_OK) != 0) {
		flunk(d, what, "workers.py wrote no truth.json", r.err);
	} else {
		judge(d, what, (char *[]){ group ? "group" : "record", (char *)mode,
					   (char *)achieved_rate(r.err, rate, sizeof(rate)), out, truth,
					   NULL });
	}
	run_free(&r);
out:
	t.pid = 0;
	target_stop(&t);
}

/* pystrobe dump -s --json of a parked tree. */
static void dump_mode(struct sub_test *d, const char *mode)
{
	char what[64], why[256], out[PATH_MAX + 16], pid[16], desc[64];
	struct target t;
	struct run r;

	snprintf(what, sizeof(what), "dump -s %s", mode);
	if (target_start(&t, d->ti, why, sizeof(why), d->script, mode, "--park", NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		flunk(d, what, why, NULL);
		kill_descendants(t.pid);
		target_stop(&t);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	snprintf(out, sizeof(out), "%s/dump.json", t.dir);
	/* The target may be env or chroot exec'd in place: t.pid is the
	 * Python process itself. */
	if (run_pystrobe(&r, "dump", "-s", "--json", "--pid", pid, NULL) < 0) {
		flunk(d, what, "cannot run pystrobe", NULL);
	} else if (run_exit(&r) != 0) {
		flunk(d, what, run_describe(&r, desc, sizeof(desc)), r.err);
	} else if (write_file(out, r.out, r.out_len) < 0) {
		flunk(d, what, "cannot write the dump", strerror(errno));
	} else {
		judge(d, what, (char *[]){ "dump", (char *)mode, out, t.truth, NULL });
	}
	if (proc_stopped_thread(t.pid, why))
		flunk(d, what, "the target was left stopped", NULL);
	run_free(&r);
	kill_descendants(t.pid);
	target_stop(&t);
}

/* top -s in its plain-text mode (stdout is a pipe): the snapshots count
 * the processes, and every worker's function makes the table. */
static void top_mode(struct sub_test *d)
{
	const char *what = "top -s fork";
	char desc[64], func[8];
	const char *argv[48] = { pystrobe_path(), "top", "-s", "-d", "0.5", "--" };
	struct target t = { .ti = d->ti };
	struct run r;
	int n = 6;

	test_interp_shared_dir(d->ti, t.dir, t.dir_inside, sizeof(t.dir));
	n += python_argv(d->ti, (char **)argv + n, 16);
	argv[n++] = d->script;
	argv[n++] = "fork";
	argv[n++] = "--cpu";
	argv[n++] = "1.0";
	argv[n++] = t.dir_inside;
	argv[n] = NULL;
	if (run_cmd(&r, RUN_MS, (char *const *)argv) < 0) {
		flunk(d, what, "cannot run pystrobe", NULL);
		goto out;
	}
	if (run_exit(&r) != 0)
		flunk(d, what, run_describe(&r, desc, sizeof(desc)), r.err);
	if (!strstr(r.out, ", 5 processes"))
		flunk(d, what, "no snapshot counts 5 processes", r.out);
	for (int i = 0; i < 4; i++) {
		snprintf(func, sizeof(func), "hot%d (", i);
		if (!strstr(r.out, func))
			flunk(d, what, "a worker's function is missing from the table", func);
	}
	run_free(&r);
out:
	target_stop(&t);
}

/* Every mode on the newest pyenv Python, Debian's static one and 3.14;
 * fork on the rest. */
static bool full_modes(int i)
{
	const struct test_interp *ti = &interps[i];

	if (getenv("PYSTROBE_STRESS") || ti->root[0] || strstr(ti->label, "debian"))
		return true;
	if (!strstr(ti->label, " pyenv") || strstr(ti->label, "shim"))
		return false;
	for (int k = i + 1; k < ninterps; k++)
		if (strstr(interps[k].label, " pyenv") && !strstr(interps[k].label, "shim"))
			return false;
	return true;
}

START_TEST(test_subprocesses)
{
	static const char *const more[] = { "spawn", "forkserver", "pool", "recreate" };
	struct sub_test d = { .ti = &interps[_i] };
	bool full = full_modes(_i);

	test_interp_script(d.ti, "tests/targets/workers.py", d.script, sizeof(d.script));
	printf("subprocesses: %s: modes: fork%s\n", d.ti->label,
	       full ? ", spawn, forkserver, pool, recreate, group, under sh, dump spawn/forkserver, top" : "");
	record_mode(&d, "fork", PLAIN);
	dump_mode(&d, "fork");
	for (size_t k = 0; full && k < sizeof(more) / sizeof(more[0]); k++)
		record_mode(&d, more[k], PLAIN);
	if (full) {
		record_mode(&d, "spawn", GROUP);
		record_mode(&d, "fork", SHELL);
		dump_mode(&d, "spawn");
		dump_mode(&d, "forkserver");
		top_mode(&d);
	}
	if (d.failures) {
		printf("subprocesses: %s: FAILED\n%s", d.ti->label, d.failures);
		fflush(stdout);
		ck_abort_msg("%.1500s", d.failures);
	}
	printf("subprocesses: %s: OK\n", d.ti->label);
}
END_TEST

/* A tree with no Python in it: one line and exit 5 (not Python), for dump
 * and record alike. */
START_TEST(test_no_python)
{
	char *const sleeper[] = { "sleep", "30", NULL };
	pid_t pid = spawn_cmd(sleeper);
	char spid[16], desc[64];
	struct run r;

	ck_assert_int_gt(pid, 0);
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	ck_assert_int_eq(run_pystrobe(&r, "dump", "-s", "--pid", spid, NULL), 0);
	ck_assert_msg(run_exit(&r) == 5 && run_one_error_line(&r), "dump -s of sleep: %s: %s",
		      run_describe(&r, desc, sizeof(desc)), r.err);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-s", "-d", "0.3", "--pid", spid, NULL), 0);
	ck_assert_msg(run_exit(&r) == 5 && run_one_error_line(&r), "record -s of sleep: %s: %s",
		      run_describe(&r, desc, sizeof(desc)), r.err);
	run_free(&r);
	kill_reap(pid);
}
END_TEST

/* record -s -- SHIM, a launcher as pyenv's are (#!/usr/bin/env bash, then
 * exec python): the profile is named after the Python program, not
 * "/usr/bin/env bash SHIM" (pprof's File: env). */
START_TEST(test_named_after_python)
{
	const struct test_interp *ti = test_interp_pick(interps, ninterps, 7);
	char dir[] = "/tmp/pystrobe-shim-XXXXXX", shim[64], script[PATH_MAX + 64], desc[64];
	struct run r;

	ck_assert_msg(ti && !ti->root[0], "no interpreter of this root to launch");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(shim, sizeof(shim), "%s/python3", dir);
	snprintf(script, sizeof(script), "#!/usr/bin/env bash\nexec %s \"$@\"\n", ti->path);
	ck_assert_int_eq(write_file(shim, script, strlen(script)), 0);
	ck_assert_int_eq(chmod(shim, 0755), 0);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-q", "-s", "-d", "1.5", "-f", "speedscope", "-o",
				      "-", "--", shim, "-c", "import time; time.sleep(5)", NULL), 0);
	unlink(shim);
	rmdir(dir);
	ck_assert_msg(r.out && strstr(r.out, "\"name\":") && !strstr(r.out, "/usr/bin/env") &&
		      strstr(r.out, ti->path), "record -s of a shim: %s, not named after %s: %.600s",
		      run_describe(&r, desc, sizeof(desc)), ti->path, r.out ? r.out : r.err);
	run_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("subprocesses");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 600);
	add_have_interps(tc, ninterps);
	tcase_add_test(tc, test_no_python);
	tcase_add_test(tc, test_named_after_python);
	tcase_add_loop_test(tc, test_subprocesses, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
