/* `pystrobe dump --async` against what an asyncio service says of itself.
 *
 * tests/targets/async_service.py runs named tasks in a known await graph (a
 * TaskGroup of workers, a gather, a task on an Event, two tasks deadlocked
 * on each other, short-lived tasks started every millisecond, a spinner
 * that is mostly the running task) and writes each task's name, state,
 * await chain and awaiters to truth.json; tests/compare_async.py holds
 * `dump --async --json` against it.
 *
 * On every interpreter from 3.11: the exact graph, paused and
 * --nonblocking, the tasks in name order, --group's blocks of tasks alike,
 * the spinner caught running with its thread's frames, a task shown
 * running only with its thread's frames while a loop switches tasks at
 * every sleep(0) (tests/targets/async_switch.py), the
 * tasks of a gcore read back, `record --async` of
 * tests/targets/async_split.py (three tasks sharing the CPU 60/30/10 by
 * their own thread_time) finding those shares within 3 points, and `top
 * --async=all` showing the deadlocked pair as tasks.  3.14+ reads the
 * _asyncio debug offsets; 3.11 to 3.13 the registries of asyncio.tasks,
 * where who awaits whom is derived (the target derives it the same way
 * from its own objects), and there the graph is checked again with the C
 * accelerator kept out (--pytasks: pure-Python tasks).  3.14+ also: the
 * same tasks and awaiters as the interpreter's own `python3.X -m asyncio
 * ps PID` and the cycle `pstree` reports, and (on the newest) the cost
 * with 10,000 tasks (the time printed), and the service run on uvloop
 * (where installed) dumps as right.  3.7 to 3.10: pystrobe cannot read tasks there and
 * must say so in one line with exit 6 (parked.py: the service needs
 * TaskGroup); the dump without --async still works.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define DUMPS 5
#define MANY 10000
#define SWITCH_DUMPS 20

static struct test_interp *interps;
static int ninterps;

/* Run pystrobe dump with up to five arguments (the first NULL ends them)
 * into DIR/file; 0 or -1 with a failure said. */
static int dump_to(struct target *t, const char *file, char **failures, const char *a1,
		   const char *a2, const char *a3, const char *a4, const char *a5)
{
	char path[PATH_MAX + 64], how[96];
	struct run r;
	int rc = -1;

	if (run_pystrobe(&r, "dump", a1, a2, a3, a4, a5, NULL) < 0) {
		msg_add(failures, "cannot run pystrobe");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (run_exit(&r) != 0)
		msg_add(failures, "dump %s %s %s: %s: %.1000s", a1, a2 ? a2 : "", a3 ? a3 : "",
			run_describe(&r, how, sizeof(how)), r.err);
	else if (write_file(path, r.out, r.out_len) < 0)
		msg_add(failures, "cannot write %s", path);
	else
		rc = 0;
	run_free(&r);
	return rc;
}

/* compare_async.py [opt] ARGS... ; its summary line printed.  Returns its
 * output (free it) or NULL with a failure said. */
static char *compare(struct target *t, const char *opt, const char *f1, const char *f2,
		     const char *f3, char **failures)
{
	char script[PATH_MAX], p1[PATH_MAX + 64], p2[PATH_MAX + 64], p3[PATH_MAX + 64];
	char *argv[7] = { (char *)test_python3(), script }, *out = NULL;
	int n = 2;
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/compare_async.py", test_srcdir());
	if (opt)
		argv[n++] = (char *)opt;
	snprintf(p1, sizeof(p1), "%s/%s", t->dir, f1);
	argv[n++] = f1[0] == '/' ? (char *)f1 : p1;
	snprintf(p2, sizeof(p2), "%s/%s", t->dir, f2);
	argv[n++] = p2;
	if (f3) {
		snprintf(p3, sizeof(p3), "%s/%s", t->dir, f3);
		argv[n++] = p3;
	}
	argv[n] = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run compare_async.py");
		return NULL;
	}
	printf("async: %s: %s%s%s", t->ti->label, opt ? opt : "", opt ? " " : "", r.out);
	if (run_exit(&r) != 0)
		msg_add(failures, "%s %s: %s%s", t->ti->label, opt ? opt : "", r.out, r.err);
	else
		out = strdup(r.out);
	run_free(&r);
	return out;
}

static int append_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");
	int rc;

	if (!f)
		return -1;
	rc = text ? fputs(text, f) : 0;
	return fclose(f) == 0 && rc >= 0 ? 0 : -1;
}

/* The interpreter's own view: python3.X -m asyncio ps / pstree PID.  An
 * interpreter in a root is run from here, through the root's own dynamic
 * loader and libraries, not chrooted: the tool reads /proc/PID/maps, which
 * a root need not have mounted, and needs the paths it names to open. */
static void asyncio_tool(struct target *t, const char *pid, const char *what, const char *file,
			 char **failures)
{
	const char *root = t->ti->root;
	char ld[PATH_MAX + 64], libs[2 * PATH_MAX + 64], exe[2 * PATH_MAX], home[PATH_MAX + 16];
	char path[PATH_MAX + 64], *cmd[10];
	int n = 0;
	struct run r;

	if (root[0]) {
		snprintf(ld, sizeof(ld), "%s/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
		snprintf(libs, sizeof(libs), "%s/usr/lib/x86_64-linux-gnu:%s/lib/x86_64-linux-gnu",
			 root, root);
		snprintf(home, sizeof(home), "%s/usr", root);
		cmd[n++] = ld;
		cmd[n++] = "--library-path";
		cmd[n++] = libs;
		setenv("PYTHONHOME", home, 1);
	}
	snprintf(exe, sizeof(exe), "%s%s", root, t->ti->path);
	cmd[n++] = exe;
	cmd[n++] = "-m";
	cmd[n++] = "asyncio";
	cmd[n++] = (char *)what;
	cmd[n++] = (char *)pid;
	cmd[n] = NULL;
	n = run_cmd(&r, RUN_TIMEOUT_MS, cmd);
	unsetenv("PYTHONHOME");
	if (n < 0) {
		msg_add(failures, "cannot run python -m asyncio %s", what);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	/* pstree exits 1 on a cycle, after saying which (on stderr): that
	 * is the point.  Both streams go to the file. */
	if (write_file(path, r.out, r.out_len) < 0 || append_file(path, r.err) < 0)
		msg_add(failures, "cannot write %s", path);
	run_free(&r);
}

/* churn: the --churn service (the spinner must be caught running), else
 * the --pytasks one (3.11-3.13: pure-Python tasks). */
static void check_graph(const struct test_interp *ti, bool churn, char **failures)
{
	char why[512], pid[16], file[32];
	struct target t;
	int running = 0;

	if (target_start_script_arg(&t, ti, "tests/targets/async_service.py",
				    churn ? "--churn" : "--pytasks", why, sizeof(why)) < 0) {
		msg_add(failures, "async_service.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	for (int i = 0; i < 2 * DUMPS && !*failures; i++) {
		bool nb = i % 2;
		char *out;

		snprintf(file, sizeof(file), "dump%d.json", i);
		if (dump_to(&t, file, failures, "--async", "--json", "--pid", pid,
			    nb ? "--nonblocking" : NULL) < 0)
			break;
		out = compare(&t, nb ? "--nonblocking" : NULL, t.truth, file, NULL, failures);
		running += out && strstr(out, "spinner running") != NULL;
		free(out);
	}
	if (!*failures && churn && !running)
		msg_add(failures, "the spinner was never shown running in %d dumps", 2 * DUMPS);
	if (!*failures && dump_to(&t, "text.txt", failures, "--async", "--pid", pid, NULL, NULL) == 0) {
		char path[PATH_MAX + 16], *text;

		snprintf(path, sizeof(path), "%s/text.txt", t.dir);
		text = slurp(path);
		if (!text || !strstr(text, "DEADLOCK (cycle 1):") || !strstr(text, "\"dl-a\""))
			msg_add(failures, "the text dump does not flag the deadlock:\n%.2000s",
				text ? text : "(none)");
		free(text);
	}
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* Issue 30: tests/targets/async_switch.py's loop switches task at every
 * sleep(0), beside one that holds it 0.3 ms at a time, and a dump that
 * does not pause it races the switches: every task it shows running must
 * be proved so, with its thread's frames (compare_async.py --switch), in
 * SWITCH_DUMPS dumps, one in five paused.  pytasks: pure-Python tasks
 * (3.11-3.13). */
static void check_switch(const struct test_interp *ti, bool pytasks, char **failures)
{
	char why[512], pid[16], file[32];
	struct target t;
	int running = 0;

	if (target_start_script_arg(&t, ti, "tests/targets/async_switch.py",
				    pytasks ? "--pytasks" : NULL, why, sizeof(why)) < 0) {
		msg_add(failures, "async_switch.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	for (int i = 0; i < SWITCH_DUMPS && !*failures; i++) {
		bool nb = i % 5 != 0;
		char *out;

		snprintf(file, sizeof(file), "switch%d.json", i);
		if (dump_to(&t, file, failures, "--async", "--json", "--pid", pid,
			    nb ? "--nonblocking" : NULL) < 0)
			break;
		out = compare(&t, "--switch", t.truth, file, NULL, failures);
		running += out && !strstr(out, "running: none");
		free(out);
	}
	if (!*failures)
		printf("async: %s: async_switch%s: %d dumps, a task running in %d\n", ti->label,
		       pytasks ? " --pytasks" : "", SWITCH_DUMPS, running);
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* Without the churn (the interpreter's tools would race it): the same
 * tasks and awaiters as asyncio ps, the cycle pstree names. */
static void check_ps(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16];
	struct target t;
	char *out;

	if (target_start_script(&t, ti, "tests/targets/async_service.py", why, sizeof(why)) < 0) {
		msg_add(failures, "async_service.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	asyncio_tool(&t, pid, "ps", "ps.txt", failures);
	asyncio_tool(&t, pid, "pstree", "pstree.txt", failures);
	if (!*failures && dump_to(&t, "ps.json", failures, "--async", "--json", "--pid", pid,
				  NULL) == 0) {
		out = compare(&t, "--ps", "ps.txt", "pstree.txt", "ps.json", failures);
		free(out);
	}
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* A gcore of the service, read back with dump --core --async: the same
 * tasks, names, states, frames and awaiters as the service wrote.  gdb
 * may write a thread's C stack as zeros (see check_core): pystrobe then
 * exits 11 with a note, and the tasks, which live on the heap, must still
 * be right. */
static void check_core(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16], prefix[PATH_MAX + 16], core[PATH_MAX + 32], path[PATH_MAX + 64];
	char *gcore[] = { "gcore", "-o", prefix, pid, NULL }, how[96];
	struct target t;
	struct run r;
	char *out;

	if (access("/usr/bin/gcore", X_OK) != 0) {
		printf("async: %s: --core: SKIP (no /usr/bin/gcore: Debian's gdb)\n", ti->label);
		return;
	}
	if (target_start_script(&t, ti, "tests/targets/async_service.py", why, sizeof(why)) < 0) {
		msg_add(failures, "async_service.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	snprintf(prefix, sizeof(prefix), "%s/gcore", t.dir);
	snprintf(core, sizeof(core), "%s.%d", prefix, t.py_pid);
	if (run_cmd(&r, RUN_TIMEOUT_MS, gcore) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "gcore: %.500s", r.err);
		goto out;
	}
	run_free(&r);
	if (run_pystrobe(&r, "dump", "--core", core, "--async", "--json",
			 ti->root[0] ? "--root" : NULL, ti->root, NULL) < 0) {
		msg_add(failures, "cannot run pystrobe");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/core.json", t.dir);
	if ((run_exit(&r) != 0 && run_exit(&r) != 11) || !all_lines_pystrobe(r.err))
		msg_add(failures, "dump --core --async: %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
	else if (write_file(path, r.out, r.out_len) < 0)
		msg_add(failures, "cannot write %s", path);
	else if ((out = compare(&t, "--core", t.truth, "core.json", NULL, failures)))
		free(out);
	run_free(&r);
	unlink(core);
out:
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* CPU time (user + system) of the children reaped so far, in ms. */
static long long children_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* 10,000 pending tasks: every one right.  The time taken is printed, not
 * held to a budget: on this shared machine even pystrobe's CPU time for it
 * ranges 65-95 ms with the load, and a sanitizer build takes 140 ms.
 * bench/async measures it (the aim: under 100 ms). */
static void check_many(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16], arg[32];
	struct target t;
	char *out;

	snprintf(arg, sizeof(arg), "--many=%d", MANY);
	if (target_start_script_arg(&t, ti, "tests/targets/async_service.py", arg, why,
				    sizeof(why)) < 0) {
		msg_add(failures, "async_service.py %s: %s", arg, why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	for (int i = 0; i < DUMPS && !*failures; i++) {
		long long t0 = now_ms(), c0 = children_cpu_ms(), ms;

		if (dump_to(&t, "many.json", failures, "--async", "--json", "--no-source", "--pid",
			    pid) < 0)
			break;
		ms = children_cpu_ms() - c0;
		printf("async: %s: dump --async --json, %d tasks: %lld ms CPU, %lld ms wall\n",
		       ti->label, MANY, ms, now_ms() - t0);
	}
	if (!*failures && (out = compare(&t, NULL, t.truth, "many.json", NULL, failures)))
		free(out);
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* dump --async --group: the service with 20 more tasks alike (many-N, one
 * Event) gives one block of 20, one of the 3 workers, one of gather-a and
 * -b, the rest alone; JSON's task_groups and the text's blocks both held
 * to the target's own objects (compare_async.py --group). */
static void check_group(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16];
	struct target t;

	if (target_start_script_arg(&t, ti, "tests/targets/async_service.py", "--many=20", why,
				    sizeof(why)) < 0) {
		msg_add(failures, "async_service.py --many=20: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	if (dump_to(&t, "group.json", failures, "--async", "--group", "--json", "--pid", pid) == 0 &&
	    dump_to(&t, "group.txt", failures, "--async", "--group", "--pid", pid, NULL) == 0)
		free(compare(&t, "--group", t.truth, "group.json", "group.txt", failures));
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* record --async: three tasks sharing the CPU 60/30/10 by their own
 * account are sampled in those shares, within 3 points (of their CPU or of
 * the wall time their turns took: compare_async.py --split).  --blocking:
 * on this loaded machine a non-blocking sample can straddle a task switch
 * (it is then counted outside any task), and short turns switch most.  A
 * miss while another job made the two truths part ("disturbed") is
 * recorded again, up to SPLIT_TRIES times: a sampler that gets the tasks
 * wrong misses every time. */
#define SPLIT_TRIES 3
static void check_split(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16], a0[PATH_MAX + 16], a1[PATH_MAX + 16], out[PATH_MAX + 16];
	char acct[PATH_MAX + 16], how[96], *text;
	bool again = true;
	struct target t;
	struct run r;

	if (target_start_script(&t, ti, "tests/targets/async_split.py", why, sizeof(why)) < 0) {
		msg_add(failures, "async_split.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	snprintf(a0, sizeof(a0), "%s/acct0.json", t.dir);
	snprintf(a1, sizeof(a1), "%s/acct1.json", t.dir);
	snprintf(out, sizeof(out), "%s/split.txt", t.dir);
	snprintf(acct, sizeof(acct), "%s/acct.json", t.dir);
	if (target_wait_file(&t, "acct.json", 10000, why, sizeof(why)) < 0) {
		msg_add(failures, "async_split.py: %s", why);
		goto out;
	}
	for (int try = 1; again && !*failures; try++) {
		char *miss = NULL, *res;

		again = false;
		text = slurp(acct);
		if (!text || write_file(a0, text, strlen(text)) < 0)
			msg_add(failures, "cannot copy acct.json");
		free(text);
		if (!*failures && run_pystrobe(&r, "record", "--async", "--blocking", "-d", "8",
					       "-f", "collapsed",
					       "-q", "-o", out, "--pid", pid, NULL) == 0) {
			if (run_exit(&r) != 0)
				msg_add(failures, "record --async: %s: %.500s",
					run_describe(&r, how, sizeof(how)), r.err);
			run_free(&r);
		}
		text = slurp(acct);
		if (!*failures && (!text || write_file(a1, text, strlen(text)) < 0))
			msg_add(failures, "cannot copy acct.json");
		free(text);
		if (*failures)
			break;
		res = compare(&t, "--split", a0, "acct1.json", "split.txt", &miss);
		if (miss && strstr(miss, "disturbed") && try < SPLIT_TRIES) {
			printf("async: %s: --split: disturbed, again\n", ti->label);
			again = true;
		} else if (miss) {
			msg_add(failures, "%s", miss);
		}
		free(miss);
		free(res);
	}
out:
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* top --async=all: the deadlocked pair are two pending tasks, each on the
 * other's stack. */
static void check_top(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16], how[96];
	char *argv[] = { (char *)pystrobe_path(), "top", "--async=all", "--idle", "-d", "1",
			 "--pid", pid, NULL };
	struct target t;
	struct run r;

	if (target_start_script(&t, ti, "tests/targets/async_service.py", why, sizeof(why)) < 0) {
		msg_add(failures, "async_service.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	if (run_cmd_signal(&r, RUN_TIMEOUT_MS, 2500, SIGINT, argv) < 0) {
		msg_add(failures, "cannot run pystrobe top");
	} else {
		if (!strstr(r.out, "  task dl-a\n") || !strstr(r.out, "  task dl-b\n"))
			msg_add(failures, "top --async=all (%s) does not show the tasks:\n%.3000s%s",
				run_describe(&r, how, sizeof(how)), r.out, r.err);
		else
			printf("async: %s: top --async=all shows task dl-a and task dl-b\n",
			       ti->label);
		run_free(&r);
	}
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* Can this interpreter import uvloop?  (tests/setup-sid-root.sh installs
 * Debian's python3-uvloop where the archive has it for the version.) */
static bool has_uvloop(const struct test_interp *ti)
{
	char *argv[16];
	int n = python_argv(ti, argv, 12);
	struct run r;
	bool ok;

	argv[n++] = "-c";
	argv[n++] = "import uvloop";
	argv[n] = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0)
		return false;
	ok = run_exit(&r) == 0;
	run_free(&r);
	return ok;
}

/* The same service on uvloop's loop: its tasks are asyncio's C tasks in
 * the same lists, so the same tasks, frames, awaiters, cycle and waits. */
static void check_uvloop(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16];
	struct target t;

	if (!has_uvloop(ti)) {
		printf("async: %s: uvloop: SKIP (uvloop is not installed for it)\n", ti->label);
		return;
	}
	if (target_start_script_arg(&t, ti, "tests/targets/async_service.py", "--uvloop", why,
				    sizeof(why)) < 0) {
		msg_add(failures, "async_service.py --uvloop: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	if (dump_to(&t, "uvloop.json", failures, "--async", "--json", "--pid", pid, NULL) == 0)
		free(compare(&t, "--uvloop", t.truth, "uvloop.json", NULL, failures));
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* 3.7-3.10: one line, exit 6; the plain dump is unchanged. */
static void check_unsupported(const struct test_interp *ti, char **failures)
{
	char why[512], pid[16], how[96];
	struct target t;
	struct run r;

	if (target_start_parked(&t, ti, why, sizeof(why)) < 0) {
		msg_add(failures, "parked.py: %s", why);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	if (run_pystrobe(&r, "dump", "--async", "--pid", pid, NULL) < 0) {
		msg_add(failures, "cannot run pystrobe");
	} else {
		if (run_exit(&r) != 6 || !run_one_error_line(&r) || !strstr(r.err, "asyncio"))
			msg_add(failures, "dump --async: %s, expected exit 6 and one line: %.500s",
				run_describe(&r, how, sizeof(how)), r.err);
		else
			printf("async: %s: not readable, as it says: %s", ti->label, r.err);
		run_free(&r);
	}
	dump_to(&t, "plain.txt", failures, "--pid", pid, NULL, NULL, NULL);
	kill_descendants(t.py_pid);
	target_stop(&t);
}

/* The checks of one interpreter, in order; each runs while none has
 * failed.  PYSTROBE_ASYNC_PARTS=NAME,... runs only those named (issue 30's
 * loops of the racing parts: graph-churn,switch). */
static void graph_churn(const struct test_interp *ti, char **f) { check_graph(ti, true, f); }
static void graph_pytasks(const struct test_interp *ti, char **f) { check_graph(ti, false, f); }
static void switch_c(const struct test_interp *ti, char **f) { check_switch(ti, false, f); }
static void switch_py(const struct test_interp *ti, char **f) { check_switch(ti, true, f); }

static const struct part {
	const char *name;
	void (*run)(const struct test_interp *ti, char **failures);
	int from, below;	/* the minors it runs on */
	bool newest_only;	/* on the newest interpreter alone */
} parts[] = {
	{ "graph-churn", graph_churn, 11, 99, false },
	{ "graph-pytasks", graph_pytasks, 11, 14, false },
	{ "switch", switch_c, 11, 99, false },
	{ "switch-pytasks", switch_py, 11, 14, false },
	{ "ps", check_ps, 14, 99, false },
	{ "group", check_group, 11, 99, false },
	{ "core", check_core, 11, 99, false },
	{ "split", check_split, 11, 99, false },
	{ "top", check_top, 11, 99, false },
	{ "uvloop", check_uvloop, 11, 99, false },
	{ "many", check_many, 11, 99, true },
};

/* Is part in PYSTROBE_ASYNC_PARTS (all are when it is unset)? */
static bool part_chosen(const char *name)
{
	const char *only = getenv("PYSTROBE_ASYNC_PARTS");
	size_t n = strlen(name);

	for (const char *p = only; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0))
		if (strcspn(p, ",") == n && !strncmp(p, name, n))
			return true;
	return !only || !*only;
}

START_TEST(test_async)
{
	const struct test_interp *ti = &interps[_i];
	char *failures = NULL;
	int oldest, newest;

	test_interp_span(interps, ninterps, &oldest, &newest);
	if (ti->minor < 11) {
		if (part_chosen("unsupported"))
			check_unsupported(ti, &failures);
		goto out;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(*parts) && !failures; i++) {
		const struct part *p = &parts[i];

		if (ti->minor >= p->from && ti->minor < p->below &&
		    (!p->newest_only || _i == newest) && part_chosen(p->name))
			p->run(ti, &failures);
	}
out:
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
	printf("async: %s: OK\n", ti->label);
}
END_TEST

int main(void)
{
	const struct test_interp *all;
	Suite *s = suite_create("async");
	TCase *tc;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	n = test_interps(&all);
	interps = calloc(n ? n : 1, sizeof(*interps));
	/* 3.7-3.10 only say they cannot: one of each minor is enough. */
	for (int i = 0; i < n; i++) {
		bool seen = false;

		for (int k = 0; k < ninterps && all[i].minor < 11; k++)
			seen |= interps[k].minor == all[i].minor;
		if (seen)
			printf("async: %s: not run (3.%d is checked on another build)\n",
			       all[i].label, all[i].minor);
		else
			interps[ninterps++] = all[i];
	}
	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 600);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_async, 0, ninterps);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
