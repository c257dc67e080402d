/* Targets in PID namespaces (containers), read from outside and inside.
 *
 * Each target runs under `unshare --pid --fork --mount-proc[=ROOT/proc]
 * [chroot ROOT]`, as a container would: its own thread ids are the
 * namespace's, ours are the host's, and the kernel's NSpid lines pair
 * them (read here by the test itself and by compare_dump.py, not through
 * pystrobe's map).
 *
 *   pidns     on every interpreter, parked.py: `dump --json` has our tids,
 *             the target's own as ns_tid (threading.get_native_id()), its
 *             pid as ns_pid, and exactly its sys._current_frames() with
 *             the idle and GIL flags right; the text dump shows both ids;
 *             `record --threads --idle` labels every thread with our id.
 *   native    on every interpreter, native_stack.py's qsort callback:
 *             `dump --native` merges every thread (native_verify.py's
 *             order), `record --native` with at most one merge error.
 *   nested    a namespace in a namespace: the outermost id is ours.
 *   userns    a rootless container (unshare --user --map-root-user): read
 *             as root, exact; as nobody (a copy of pystrobe under setpriv),
 *             exit 4 and the one-line permission error.
 *   inside    pystrobe in the target's namespace: exact, with the
 *             namespace's ids; without CAP_SYS_PTRACE, exit 4 and a line
 *             that says how to grant it.
 */
#include <check.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* unshare --pid --fork --mount-proc, with /proc inside the root if any. */
static void pidns_wrapper(const struct test_interp *ti, const char *extra[], char *mount,
			  size_t size, const char *wrap[16])
{
	int n = 0;

	if (ti->root[0])
		snprintf(mount, size, "--mount-proc=%s/proc", ti->root);
	else
		snprintf(mount, size, "--mount-proc");
	wrap[n++] = "unshare";
	for (int i = 0; extra && extra[i]; i++)
		wrap[n++] = extra[i];
	wrap[n++] = "--pid";
	wrap[n++] = "--fork";
	wrap[n++] = mount;
	wrap[n] = NULL;
}

/* Our id of every thread of pid, and whether tid is one of them. */
static int is_our_tid(pid_t pid, long tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%ld", pid, tid);
	return tid > 0 && access(path, F_OK) == 0;
}

static void compare(const char *what, struct target *t, const char *dump, char **failures)
{
	char script[PATH_MAX + 32], hostpid[32], how[96];
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	snprintf(hostpid, sizeof(hostpid), "--host-pid=%d", (int)t->py_pid);
	if (run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), script, hostpid,
						    t->truth, (char *)dump, NULL }) < 0) {
		msg_add(failures, "%s: cannot run compare_dump.py", what);
		return;
	}
	if (run_exit(&r) != 0)
		msg_add(failures, "%s: compare_dump.py %s:\n%s%s", what,
			run_describe(&r, how, sizeof(how)), r.out, r.err);
	else
		printf("containers: %s: %s: %s", t->ti->label, what, r.out);
	run_free(&r);
}

/* dump --json of t into t->dir/file, compared with its truth. */
static void dump_compare(const char *what, struct target *t, const char *file, char **failures)
{
	char pid[16], path[PATH_MAX + 64], how[96];
	struct run r;

	/* Let threads woken by the previous run's release settle. */
	usleep(300 * 1000);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (run_pystrobe(&r, "dump", "--json", "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "%s: pystrobe %s: %.1000s", what,
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (write_file(path, r.out, r.out_len) == 0)
		compare(what, t, path, failures);
	run_free(&r);
}

static void check_text(struct target *t, char **failures)
{
	char pid[16], want[96];
	struct run r;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (run_pystrobe(&r, "dump", "--pid", pid, NULL) < 0)
		return;
	snprintf(want, sizeof(want), "Process %d (%d in its namespace)", (int)t->py_pid,
		 (int)t->ns_pid);
	if (!strstr(r.out, want))
		msg_add(failures, "text: no \"%s\" in:\n%.1500s", want, r.out);
	/* The main thread's ids are the process's. */
	snprintf(want, sizeof(want), "Thread %d (%d in its namespace) \"MainThread\"",
		 (int)t->py_pid, (int)t->ns_pid);
	if (!strstr(r.out, want))
		msg_add(failures, "text: no \"%s\" in:\n%.1500s", want, r.out);
	run_free(&r);
}

/* record --threads: every root is "thread TID ..." with TID ours. */
static void check_record_threads(struct target *t, char **failures)
{
	char pid[16], path[PATH_MAX + 64], how[96], *text, *line, *save = NULL;
	int roots = 0;
	struct run r;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(path, sizeof(path), "%s/threads.txt", t->dir);
	if (run_pystrobe(&r, "record", "--threads", "--idle", "-d", "0.5", "-f", "collapsed",
			 "-o", path, "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "record --threads: pystrobe %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return;
	}
	run_free(&r);
	text = slurp(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		long tid = strncmp(line, "thread ", 7) ? -1 : strtol(line + 7, NULL, 10);

		roots++;
		if (!is_our_tid(t->py_pid, tid)) {
			msg_add(failures, "record --threads: not one of our thread ids: %.200s",
				line);
			break;
		}
	}
	if (!roots)
		msg_add(failures, "record --threads: no stacks in %s", path);
	free(text);
}

static void report(const char *what, const struct test_interp *ti, char *failures)
{
	if (!failures) {
		printf("containers: %s: %s: OK\n", ti->label, what);
		return;
	}
	printf("containers: %s: %s: FAILED\n%s", ti->label, what, failures);
	fflush(stdout);
	ck_abort_msg("%s: %s: %.1500s", ti->label, what, failures);
}

START_TEST(test_pidns)
{
	const struct test_interp *ti = &interps[_i];
	const char *wrap[16];
	char mount[PATH_MAX + 32], why[512], *failures = NULL;
	struct target t;

	pidns_wrapper(ti, NULL, mount, sizeof(mount), wrap);
	target_set_wrapper(wrap);
	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked.py in a PID namespace: %s", ti->label, why);
	target_set_wrapper(NULL);
	ck_assert_int_ne(t.py_pid, t.ns_pid);
	dump_compare("dump --json", &t, "dump.json", &failures);
	check_text(&t, &failures);
	check_record_threads(&t, &failures);
	target_stop(&t);
	report("pidns", ti, failures);
	free(failures);
}
END_TEST

/* dump --native and record --native of native_stack.py's qsort callback. */
START_TEST(test_native)
{
	const struct test_interp *ti = &interps[_i];
	const char *wrap[16];
	char mount[PATH_MAX + 32], why[512], script[PATH_MAX], verify[PATH_MAX + 64];
	char pid[16], path[PATH_MAX + 64], how[96], *failures = NULL;
	struct target t;
	struct run r;

	pidns_wrapper(ti, NULL, mount, sizeof(mount), wrap);
	target_set_wrapper(wrap);
	test_interp_script(ti, "tests/targets/native_stack.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, "qsort", NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("%s: native_stack.py in a PID namespace: %s", ti->label, why);
	target_set_wrapper(NULL);
	/* native_stack.py's truth has its pid but no thread count. */
	{
		char *text = slurp(t.truth), *p = text ? strstr(text, "\"pid\":") : NULL;

		t.ns_pid = p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
		t.py_pid = target_host_pid(&t, t.ns_pid);
		free(text);
	}
	ck_assert_int_gt(t.py_pid, 0);
	ck_assert_int_ne(t.py_pid, t.pid);
	snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
	snprintf(verify, sizeof(verify), "%s/tests/targets/native_verify.py", test_srcdir());

	snprintf(path, sizeof(path), "%s/native.json", t.dir);
	if (run_pystrobe(&r, "dump", "--json", "--native", "--pid", pid, NULL) < 0 ||
	    run_exit(&r) != 0 || write_file(path, r.out, r.out_len) < 0) {
		msg_add(&failures, "dump --native: %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
	} else {
		if (strstr(r.out, "\"native_error\":\""))
			msg_add(&failures, "dump --native: a thread did not merge:\n%.3000s",
				r.out);
		run_free(&r);
		if (run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), verify,
							    "qsort", t.truth, path, NULL }) == 0 &&
		    run_exit(&r) != 0)
			msg_add(&failures, "dump --native: native_verify.py:\n%s%s", r.out, r.err);
	}
	run_free(&r);

	snprintf(path, sizeof(path), "%s/qsort.txt", t.dir);
	if (run_pystrobe(&r, "record", "--native", "--idle", "-r", "200", "-d", "0.5", "-f",
			 "collapsed", "-o", path, "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(&failures, "record --native: %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
	} else {
		const char *q = strstr(r.err, " merge error");
		long merge = 0;

		while (q && q > r.err && q[-1] >= '0' && q[-1] <= '9')
			q--;
		if (q)
			merge = strtol(q, NULL, 10);
		/* A thread slow to stop on a loaded machine: one at most. */
		if (merge > 1)
			msg_add(&failures, "record --native: %s", r.err);
		else
			printf("containers: %s: record --native: %s", ti->label, r.err);
	}
	run_free(&r);
	target_stop(&t);
	report("native", ti, failures);
	free(failures);
}
END_TEST

static const struct test_interp *pick(void)
{
	return test_interp_pick(interps, ninterps, 11);
}

/* nobody, who does not own t, reading it: exit 4 and one line.  The
 * build tree may sit where nobody cannot reach: nobody runs a copy. */
static void check_nobody(struct target *t, char **failures)
{
	char dir[] = "/tmp/check_containers.XXXXXX", bin[64], cmd[PATH_MAX + 160], pid[16];
	char how[96];
	struct run r;

	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return;
	snprintf(bin, sizeof(bin), "%s/pystrobe", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s", pystrobe_path(), bin, bin);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (system(cmd) != 0 ||
	    run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ "setpriv", "--reuid=65534", "--regid=65534",
						    "--clear-groups", bin, "dump", "--pid", pid,
						    NULL }) < 0) {
		msg_add(failures, "as nobody: cannot run pystrobe");
		rm_rf(dir);
		return;
	}
	if (run_exit(&r) != 4 || strncmp(r.err, "pystrobe: permission denied", 27) ||
	    strchr(r.err, '\n') != r.err + strlen(r.err) - 1)
		msg_add(failures, "as nobody: %s, not exit 4 and one line: %s",
			run_describe(&r, how, sizeof(how)), r.err);
	else
		printf("containers: userns, as nobody: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}

static void one_wrapped(const char *what, const char *const *wrap, bool as_nobody)
{
	const struct test_interp *ti = pick();
	char why[512], *failures = NULL;
	struct target t;

	target_set_wrapper(wrap);
	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s: parked.py: %s", ti->label, what, why);
	target_set_wrapper(NULL);
	dump_compare(what, &t, "dump.json", &failures);
	check_text(&t, &failures);
	if (as_nobody)
		check_nobody(&t, &failures);
	target_stop(&t);
	report(what, ti, failures);
	free(failures);
}

START_TEST(test_nested)
{
	static const char *const wrap[] = { "unshare", "--pid", "--fork", "--mount-proc",
					    "unshare", "--pid", "--fork", "--mount-proc", NULL };

	one_wrapped("nested", wrap, false);
}
END_TEST

/* A rootless container, read by root from the host: exact; by nobody, who
 * does not own it: refused. */
START_TEST(test_userns)
{
	static const char *const wrap[] = { "unshare", "--user", "--map-root-user", "--pid",
					    "--fork", "--mount-proc", NULL };

	one_wrapped("userns", wrap, true);
}
END_TEST

/* pystrobe in the target's namespace: the shell is 1, the target its
 * child; pystrobe reads it by the namespace's pid. */
static void run_inside(const struct test_interp *ti, struct run *r, const char *outdir,
		       const char *dropcaps)
{
	char script[PATH_MAX], cmd[4 * PATH_MAX];

	test_interp_script(ti, "tests/targets/parked.py", script, sizeof(script));
	snprintf(cmd, sizeof(cmd),
		 "env %s %s %s %s & i=0; while [ ! -e %s/truth.json ] && [ $i -lt 600 ]; do "
		 "sleep 0.1; i=$((i+1)); done; sleep 1; %s %s dump --json --pid $!",
		 ti->env[0] ? ti->env : "PYTHONDONTWRITEBYTECODE=1", ti->path, script, outdir,
		 outdir, dropcaps, pystrobe_path());
	ck_assert_int_eq(run_cmd(r, RUN_TIMEOUT_MS, (char *[]){ "unshare", "--pid", "--fork",
								"--mount-proc", "sh", "-c", cmd,
								NULL }), 0);
}

START_TEST(test_inside)
{
	char dir[] = "/tmp/check_containers.XXXXXX", truth[64], dump[64], how[96];
	char script[PATH_MAX + 32];
	const struct test_interp *ti = NULL;
	struct run r, c;

	/* pystrobe runs beside the target: not in a root of its own. */
	for (int i = 0; i < ninterps; i++)
		if (!interps[i].root[0] && (!ti || (interps[i].minor == 11 && ti->minor != 11)))
			ti = &interps[i];
	if (!ti) {
		printf("containers: inside: NOT RUN: every interpreter left runs in a root\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	run_inside(ti, &r, dir, "");
	snprintf(truth, sizeof(truth), "%s/truth.json", dir);
	snprintf(dump, sizeof(dump), "%s/dump.json", dir);
	ck_assert_msg(run_exit(&r) == 0, "inside: pystrobe %s: %s",
		      run_describe(&r, how, sizeof(how)), r.err);
	ck_assert_int_eq(write_file(dump, r.out, r.out_len), 0);
	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	ck_assert_int_eq(run_cmd(&c, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), script,
								 truth, dump, NULL }), 0);
	ck_assert_msg(run_exit(&c) == 0, "inside: compare_dump.py:\n%s%s", c.out, c.err);
	printf("containers: inside: %s", c.out);
	run_free(&c);
	run_free(&r);
	rm_rf(dir);

	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/check_containers.XXXXXX")));
	run_inside(ti, &r, dir, "setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace");
	ck_assert_msg(run_exit(&r) == 4, "inside, no CAP_SYS_PTRACE: %s, not exit 4: %s",
		      run_describe(&r, how, sizeof(how)), r.err);
	ck_assert_msg(!strncmp(r.err, "pystrobe: permission denied", 27) &&
		      strchr(r.err, '\n') == r.err + strlen(r.err) - 1 &&
		      strstr(r.err, "CAP_SYS_PTRACE") && strstr(r.err, "--cap-add SYS_PTRACE"),
		      "inside, no CAP_SYS_PTRACE: not one line saying how: %s", r.err);
	printf("containers: inside, no CAP_SYS_PTRACE: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("containers");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("containers");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_pidns, 0, ninterps);
	tcase_add_loop_test(tc, test_native, 0, ninterps);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_userns);
	tcase_add_test(tc, test_inside);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
