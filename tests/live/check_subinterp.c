/* Subinterpreters: one OS thread in two interpreters, on every 3.12+.
 *
 * tests/targets/subinterp_target.py parks MainThread in main_leaf() and a
 * thread "sub-runner" in sub_leaf(), run by a subinterpreter through the
 * version's API (3.12 _xxsubinterpreters, 3.13 _interpreters, 3.14+
 * concurrent.interpreters).  Each interpreter reports its own stacks;
 * truth.json stitches them, each frame with its interpreter's id.
 *
 *  - dump --json (paused and --nonblocking) against truth.json with
 *    compare_dump.py --no-extra: both OS threads, each once, every frame
 *    with the right interpreter;
 *  - the text dump: the marker lines in order, sub_leaf above the
 *    subinterpreter's marker... above the main interpreter's;
 *  - record --threads --idle -f collapsed: one root per OS thread, the
 *    sub-runner's stack stitched root first (Thread.run, then the
 *    subinterpreter's <module>, sub_mid, sub_leaf at the leaf);
 *  - top's plain-text snapshot: two threads, sub_leaf and main_leaf.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define SCRIPT "tests/targets/subinterp_target.py"

static struct test_interp interps[64];
static int ninterps;

struct si_test {
	const struct test_interp *ti;
	struct target t;
	char pid[16];
	int sub_id;
	char *failures;
};

static void failf(struct si_test *d, const char *what, const char *detail)
{
	msg_add(&d->failures, "%s: %s", what, detail);
}

static int run_ok(struct si_test *d, const char *what, struct run *r)
{
	char how[96];

	if (run_exit(r) == 0)
		return 1;
	msg_add(&d->failures, "%s: pystrobe %s; stderr: %.2000s", what,
		run_describe(r, how, sizeof(how)), r->err);
	return 0;
}

/* `pystrobe dump --json [opt]` held against truth.json. */
static void check_json(struct si_test *d, const char *what, const char *opt,
		       const char *loose)
{
	char path[PATH_MAX + 32], script[PATH_MAX + 32], how[96];
	char *argv[8];
	struct run r, c;
	int n = 0;

	usleep(300 * 1000);	/* see check_dump.c's dump_to() */
	if (run_pystrobe(&r, "dump", "--json", "--pid", d->pid, opt, NULL) < 0) {
		failf(d, what, "cannot run pystrobe");
		return;
	}
	snprintf(path, sizeof(path), "%s/dump.json", d->t.dir);
	if (!run_ok(d, what, &r) || write_file(path, r.out, r.out_len) < 0)
		goto out;
	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	argv[n++] = "/usr/bin/python3";
	argv[n++] = script;
	argv[n++] = "--no-extra";
	if (loose)
		argv[n++] = (char *)loose;
	argv[n++] = d->t.truth;
	argv[n++] = path;
	argv[n] = NULL;
	if (run_cmd(&c, RUN_TIMEOUT_MS, argv) < 0) {
		failf(d, what, "cannot run compare_dump.py");
		goto out;
	}
	if (run_exit(&c) != 0)
		msg_add(&d->failures, "%s: compare_dump.py %s:\n%s%s", what,
			run_describe(&c, how, sizeof(how)), c.out, c.err);
	else
		printf("subinterp: %s: %s: %s", d->ti->label, what, c.out);
	run_free(&c);
out:
	run_free(&r);
}

/* Each of words[] in text, in this order; on failure say which. */
static int in_order(struct si_test *d, const char *what, const char *text,
		    const char *const *words, int n)
{
	const char *at = text;
	char buf[256];

	for (int i = 0; i < n; i++) {
		const char *p = strstr(at, words[i]);

		if (!p) {
			snprintf(buf, sizeof(buf), "\"%s\" not found%s%s",
				 words[i], i ? " after " : "",
				 i ? words[i - 1] : "");
			failf(d, what, buf);
			return 0;
		}
		at = p + strlen(words[i]);
	}
	return 1;
}

static void check_text(struct si_test *d)
{
	char sub_mark[64];
	const char *runner[] = { "\"sub-runner\"", sub_mark, "sub_leaf", "sub_mid",
				 "<module>", "--- interpreter 0 (main) ---",
				 "Thread.run", "Thread._bootstrap" };
	struct run r;

	snprintf(sub_mark, sizeof(sub_mark), "--- interpreter %d ---", d->sub_id);
	usleep(300 * 1000);
	if (run_pystrobe(&r, "dump", "--pid", d->pid, NULL) < 0) {
		failf(d, "text", "cannot run pystrobe");
		return;
	}
	if (run_ok(d, "text", &r)) {
		const char *main_thread = strstr(r.out, "\"MainThread\"");

		in_order(d, "text", r.out, runner, 8);
		/* MainThread never left the main interpreter: no marker. */
		if (!main_thread || !strstr(main_thread, "main_leaf"))
			failf(d, "text", "MainThread or main_leaf missing");
		else if (strstr(main_thread, "--- interpreter") &&
			 strstr(main_thread, "--- interpreter") < strstr(main_thread, "\n\nThread"))
			failf(d, "text", "a marker line in MainThread's stack");
	}
	if (d->failures)
		printf("subinterp: %s: text dump:\n%s", d->ti->label, r.out);
	run_free(&r);
}

/* One collapsed line per OS thread: its root, then its stack root first. */
static void check_record(struct si_test *d)
{
	const char *runner[] = { "\"sub-runner\";", "Thread._bootstrap", "Thread.run",
				 ";<module> (", ";sub_mid (", ";sub_leaf (" };
	const char *mainline[] = { "\"MainThread\";", "main (", ";main_leaf (" };
	char out[PATH_MAX + 32];
	char *text = NULL, *line, *save = NULL;
	int roots = 0, seen_runner = 0, seen_main = 0;
	struct run r;

	snprintf(out, sizeof(out), "%s/si.folded", d->t.dir);
	if (run_pystrobe(&r, "record", "--idle", "--threads", "-d", "1", "-q", "-f",
			 "collapsed", "-o", out, "--pid", d->pid, NULL) < 0) {
		failf(d, "record", "cannot run pystrobe");
		return;
	}
	if (!run_ok(d, "record", &r) || !(text = slurp(out)))
		goto out;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		roots++;
		if (strstr(line, "\"sub-runner\"")) {
			seen_runner++;
			in_order(d, "record: sub-runner", line, runner, 6);
			/* sub_leaf is the leaf: nothing after it but the count. */
			if (strchr(strstr(line, ";sub_leaf (") + 1, ';'))
				failf(d, "record", line);
		} else if (strstr(line, "\"MainThread\"")) {
			seen_main++;
			in_order(d, "record: MainThread", line, mainline, 3);
			if (strstr(line, "sub_"))
				failf(d, "record: subinterpreter frames under MainThread", line);
		} else {
			failf(d, "record: a line of no thread of the target", line);
		}
	}
	/* Parked threads have one stack each: one line per OS thread. */
	if (seen_runner != 1 || seen_main != 1 || roots != 2) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%d lines: %d sub-runner, %d MainThread, want 1 and 1",
			 roots, seen_runner, seen_main);
		failf(d, "record", buf);
	}
out:
	free(text);
	run_free(&r);
}

static void check_top(struct si_test *d)
{
	const char *path = pystrobe_path();
	char *argv[] = { (char *)path, "top", "--idle", "-d", "0.5", "--pid", d->pid, NULL };
	struct run r;

	if (run_cmd_signal(&r, RUN_TIMEOUT_MS, 1800, SIGINT, argv) < 0) {
		failf(d, "top", "cannot run pystrobe");
		return;
	}
	if (!strstr(r.out, "sub_leaf") || !strstr(r.out, "main_leaf"))
		failf(d, "top", "sub_leaf or main_leaf not in the snapshot");
	if (!strstr(r.out, " 2 threads"))
		failf(d, "top", "the snapshot does not count 2 threads");
	if (d->failures)
		printf("subinterp: %s: top:\n%s%s", d->ti->label, r.out, r.err);
	run_free(&r);
}

START_TEST(test_subinterp)
{
	struct si_test d = { .ti = &interps[_i] };
	char why[512], *truth;
	const char *p;

	if (target_start_script(&d.t, d.ti, SCRIPT, why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s: %s", d.ti->label, SCRIPT, why);
	snprintf(d.pid, sizeof(d.pid), "%d", d.t.py_pid);
	truth = slurp(d.t.truth);
	p = truth ? strstr(truth, "\"sub_interp\":") : NULL;
	d.sub_id = p ? atoi(p + strlen("\"sub_interp\":")) : -1;
	free(truth);

	check_json(&d, "--json", NULL, NULL);
	check_json(&d, "--json --nonblocking", "--nonblocking", "--loose-moving");
	check_text(&d);
	check_record(&d);
	check_top(&d);

	target_stop(&d.t);
	if (d.failures) {
		printf("subinterp: %s: FAILED\n%s", d.ti->label, d.failures);
		fflush(stdout);
		ck_abort_msg("%s: %.1500s", d.ti->label, d.failures);
	}
	printf("subinterp: %s: OK (sub-interpreter %d)\n", d.ti->label, d.sub_id);
	free(d.failures);
}
END_TEST

int main(void)
{
	const struct test_interp *all;
	int n = test_interps(&all);
	Suite *s = suite_create("subinterp");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Subinterpreters with an API to start them from Python: 3.12+. */
	for (int i = 0; i < n && ninterps < (int)(sizeof(interps) / sizeof(*interps)); i++)
		if (all[i].minor >= 12)
			interps[ninterps++] = all[i];
	printf("subinterp: %d interpreters of 3.12 or newer\n", ninterps);

	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_subinterp, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
