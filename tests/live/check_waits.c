/* record --waits on real interpreters, against the target's own clock.
 *
 * tests/targets/waits_target.py turns between pure-Python work, a line
 * `x = v.item(0.03)` whose call blocks in C (the line rule's text), and a
 * get() on an empty multiprocessing queue (a frame rule), timing each.
 * On every interpreter, on the same target:
 *
 *   - record --idle -f collapsed without --waits: no marker frame at all;
 *   - the same with --waits: every sample on the .item( line ends in
 *     <wait:gpu>, every one in the queue's get in <wait:data>, no other
 *     sample has a marker; with the markers taken off, the stacks the
 *     target's own code makes up (its frames of waits_target.py) are those
 *     of the run without, for every such stack of 5% of the samples or
 *     more in either; the <wait:gpu> and <wait:data> shares within 0.15
 *     of the share of wall time the target's clock gives each over the
 *     recording; and the summary names the main thread's waits.
 *
 * With a real DataLoader (tests/targets/waits_loader.py, Debian's
 * python3-torch, on "3.14 sid-root" only; a SKIP where it is missing):
 * record -s --idle --waits, the main thread's <wait:data> share within
 * 0.15 of the share of wall time its own clock says it waited for a
 * batch, and no stack of a worker's _worker_loop marked <wait:data>.
 *
 * On the oldest and the newest interpreter also the flame graph: without
 * --waits no wait frame and no "waiting" legend entry, with it both; and
 * top --waits' plain text has a <wait:gpu> row.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "interpreters.h"
#include "target.h"
#include "suite.h"
#include "util/util.h"

static const struct test_interp *interps;
static int ninterps;

#define SHARE_TOLERANCE 0.15
#define SCRIPT "tests/targets/waits_target.py"

/* The number after "key": in a JSON text, NAN when absent. */
static double json_num(const char *text, const char *key)
{
	char *k = xasprintf("\"%s\":", key);
	const char *at = text ? strstr(text, k) : NULL;
	double v = at ? strtod(at + strlen(k), NULL) : NAN;

	free(k);
	return v;
}

/* The line of the script that holds needle, from the script itself. */
static int script_line(const char *needle)
{
	char *path = xasprintf("%s/%s", test_srcdir(), SCRIPT), *text = slurp(path);
	int line = 1;
	const char *at;

	ck_assert_ptr_nonnull(text);
	at = strstr(text, needle);
	ck_assert_ptr_nonnull(at);
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	free(text);
	free(path);
	return line;
}

/* A target's clock.json: waits_target.py's item and get, waits_queue.py's
 * get, waits_loader.py's wait (NAN where absent). */
struct clock {
	double wall, item, get, wait;
};

static void read_clock(const struct target *t, struct clock *c)
{
	char *path = xasprintf("%s/clock.json", t->dir), *text = slurp(path);

	c->wall = json_num(text, "wall");
	c->item = json_num(text, "item");
	c->get = json_num(text, "get");
	c->wait = json_num(text, "wait");
	free(text);
	free(path);
}

/* record --idle -d 2 into out, with --waits or not; its stderr into *err
 * (when not NULL). */
static int record(const struct target *t, const char *pid, const char *fmt, bool waits,
		  const char *out, char **err, char **failures)
{
	struct argv_buf a = { { 0 }, 0 };
	char how[96];
	struct run r;
	int rc = 0;

	args(&a, (char *const[]){ (char *)pystrobe_path(), "record", "--idle", "-d", "2",
				  "-f", (char *)fmt, "-o", (char *)out, "--pid", (char *)pid,
				  NULL });
	if (waits)
		arg(&a, "--waits");
	if (run_cmd(&r, RUN_TIMEOUT_MS, a.v) < 0) {
		msg_add(failures, "cannot run pystrobe record");
		return -1;
	}
	if (run_exit(&r) != 0) {
		msg_add(failures, "record -f %s%s: %s: %.500s", fmt, waits ? " --waits" : "",
			run_describe(&r, how, sizeof(how)), r.err);
		rc = -1;
	}
	if (err)
		*err = xstrdup(r.err);
	run_free(&r);
	(void)t;
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The stack without a last frame "<wait:...>". */
static char *without_leaf(const char *stack)
{
	const char *last = strrchr(stack, ';');

	if (last && !strncmp(last + 1, "<wait:", 6))
		return xasprintf("%.*s", (int)(last - stack), stack);
	return xstrdup(stack);
}

/* The frames of the target's own script in a stack, in order. */
static char *own_frames(const char *stack)
{
	char *copy = xstrdup(stack), *save = NULL, *tok;
	struct strbuf sb = STRBUF_INIT;

	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		if (strstr(tok, "(waits_target.py:"))
			sb_printf(&sb, "%s;", tok);
	free(copy);
	return sb_detach(&sb);
}

/* Every stack of own frames with 5% of f's samples or more is one of g's. */
static void same_stacks(const struct folded *f, const struct folded *g, const char *fname,
			const char *gname, char **failures)
{
	for (size_t i = 0; i < f->n; i++) {
		char *own = own_frames(f->stacks[i]);
		uint64_t n = 0;
		bool found = false;

		for (size_t k = 0; k < f->n; k++) {
			char *o = own_frames(f->stacks[k]);

			n += strcmp(o, own) ? 0 : f->counts[k];
			free(o);
		}
		for (size_t k = 0; k < g->n && !found; k++) {
			char *o = own_frames(g->stacks[k]);

			found = !strcmp(o, own);
			free(o);
		}
		if (n * 20 >= f->total && !found)
			msg_add(failures, "%s has '%s' (%llu of %llu samples), %s does not", fname,
				own, (unsigned long long)n, (unsigned long long)f->total, gname);
		free(own);
	}
}

static struct folded *read_folded(const char *path, char **failures)
{
	char *text = slurp(path);
	struct folded *f = xcalloc(1, sizeof(*f));

	if (!text || folded_parse(text, f) != 0 || !f->n)
		msg_add(failures, "%s: no stacks", path);
	free(text);
	return f;
}

static void check_collapsed(struct target *t, const char *pid, bool queue, char **failures)
{
	char *on_path = xasprintf("%s/on.txt", t->dir), *off_path = xasprintf("%s/off.txt", t->dir);
	char *item_leaf = xasprintf("main (waits_target.py:%d)", script_line("x = v.item(0.03)\n"));
	char *err = NULL, *off_text, *main_line;
	struct folded *on = NULL, *off = NULL;
	uint64_t gpu = 0, data = 0;
	struct clock c0, c1;
	double wall, gpu_truth, data_truth;

	read_clock(t, &c0);
	if (record(t, pid, "collapsed", true, on_path, &err, failures) < 0)
		goto out;
	read_clock(t, &c1);
	if (record(t, pid, "collapsed", false, off_path, NULL, failures) < 0)
		goto out;
	off_text = slurp(off_path);
	if (!off_text || strstr(off_text, "<wait:"))
		msg_add(failures, "without --waits: a <wait:...> frame (or no output)");
	free(off_text);
	on = read_folded(on_path, failures);
	off = read_folded(off_path, failures);
	for (size_t i = 0; i < on->n; i++) {
		const char *s = on->stacks[i];
		char *base = without_leaf(s);
		bool in_get = strstr(s, "get (multiprocessing/queues.py:") != NULL;
		bool on_item = ends_with(base, item_leaf);

		if (on_item && !ends_with(s, ";<wait:gpu>"))
			msg_add(failures, "on the .item( line, no <wait:gpu>: %s", s);
		else if (in_get && !ends_with(s, ";<wait:data>"))
			msg_add(failures, "in the queue's get, no <wait:data>: %.300s", s);
		else if (!on_item && !in_get && strstr(s, "<wait:"))
			msg_add(failures, "a marker where none belongs: %.300s", s);
		gpu += ends_with(s, ";<wait:gpu>") ? on->counts[i] : 0;
		data += ends_with(s, ";<wait:data>") ? on->counts[i] : 0;
		free(base);
	}
	same_stacks(on, off, "--waits", "the run without", failures);
	same_stacks(off, on, "the run without", "--waits", failures);
	wall = c1.wall - c0.wall;
	gpu_truth = (c1.item - c0.item) / wall;
	data_truth = (c1.get - c0.get) / wall;
	printf("waits: %s: %llu samples, <wait:gpu> %.3f (target's clock %.3f), <wait:data> "
	       "%.3f (%.3f)%s\n", t->ti->label, (unsigned long long)on->total,
	       (double)gpu / on->total, gpu_truth, (double)data / on->total, data_truth,
	       queue ? "" : "; no multiprocessing queue here");
	if (!(fabs((double)gpu / on->total - gpu_truth) <= SHARE_TOLERANCE))
		msg_add(failures, "<wait:gpu> share %.3f, the target's %.3f",
			(double)gpu / on->total, gpu_truth);
	if (queue && !(fabs((double)data / on->total - data_truth) <= SHARE_TOLERANCE))
		msg_add(failures, "<wait:data> share %.3f, the target's %.3f",
			(double)data / on->total, data_truth);
	main_line = xasprintf("pystrobe:   main thread %d: ", (int)t->py_pid);
	if (!err || !strstr(err, main_line) || !strstr(err, "waiting for the GPU"))
		msg_add(failures, "no summary line '%s... waiting for the GPU' in:\n%s", main_line,
			err ? err : "");
	free(main_line);
out:
	if (on)
		folded_free(on);
	if (off)
		folded_free(off);
	free(on);
	free(off);
	free(err);
	free(item_leaf);
	free(on_path);
	free(off_path);
}

static void check_flamegraph(struct target *t, const char *pid, char **failures)
{
	char *path = xasprintf("%s/fg.svg", t->dir), *svg;

	for (int waits = 0; waits < 2; waits++) {
		if (record(t, pid, "flamegraph", waits, path, NULL, failures) < 0)
			break;
		svg = slurp(path);
		if (!svg || (strstr(svg, "&lt;wait:gpu&gt;") != NULL) != waits ||
		    (strstr(svg, ">waiting</text>") != NULL) != waits)
			msg_add(failures, "flame graph %s --waits: wait frame or legend %s",
				waits ? "with" : "without", waits ? "missing" : "present");
		free(svg);
	}
	printf("waits: %s: flame graph with and without --waits checked\n", t->ti->label);
	free(path);
}

/* top with stdout not a terminal prints plain snapshots; SIGINT ends it. */
static void check_top(const struct target *t, const char *pid, char **failures)
{
	char *argv[] = { (char *)pystrobe_path(), "top", "--idle", "--waits", "-d", "0.5",
			 "--pid", (char *)pid, NULL };
	char how[96];
	struct run r;

	if (run_cmd_signal(&r, RUN_TIMEOUT_MS, 2000, SIGINT, argv) < 0) {
		msg_add(failures, "cannot run pystrobe top");
		return;
	}
	if (run_exit(&r) != 0 || !strstr(r.out, "  <wait:gpu>\n"))
		msg_add(failures, "top --waits (%s): no <wait:gpu> row in:\n%.1000s",
			run_describe(&r, how, sizeof(how)), r.out);
	run_free(&r);
	printf("waits: %s: top --waits checked\n", t->ti->label);
}

START_TEST(test_waits)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], pid[16], *failures = NULL, *truth;
	int oldest, newest;
	bool queue;
	struct target t;

	if (target_start_script(&t, ti, SCRIPT, why, sizeof(why)) < 0)
		ck_abort_msg("%s: waits_target.py: %s", ti->label, why);
	if (target_wait_file(&t, "clock.json", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("%s: waits_target.py: %s", ti->label, why);
	truth = slurp(t.truth);
	queue = truth && strstr(truth, "\"queue\": true");
	free(truth);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	check_collapsed(&t, pid, queue, &failures);
	test_interp_span(interps, ninterps, &oldest, &newest);
	if (_i == oldest || _i == newest) {
		check_flamegraph(&t, pid, &failures);
		check_top(&t, pid, &failures);
	}
	target_stop(&t);
	if (failures)
		printf("waits: %s FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%s: %.2000s", ti->label, failures);
}
END_TEST

/* The string after "key": in a JSON text (no escapes), or NULL. */
static char *json_str(const char *text, const char *key)
{
	char *k = xasprintf("\"%s\": \"", key);
	const char *at = text ? strstr(text, k) : NULL, *end;
	char *v = NULL;

	if (at && (end = strchr(at + strlen(k), '"')))
		v = xasprintf("%.*s", (int)(end - at - strlen(k)), at + strlen(k));
	free(k);
	return v;
}

/* The summary's line for the worker waiting for work: "thread T of P: N%
 * in Condition.wait (threading.py:L)" ("wait" before 3.11): L, or -1. */
static int worker_wait_line(const char *err, pid_t pid)
{
	char *of = xasprintf(" of %d: ", (int)pid);
	const char *at = err;
	int line = -1;

	while (at && (at = strstr(at, of)) && line < 0) {
		const char *eol = strchr(at, '\n'), *w = strstr(at, "wait (threading.py:");

		if (w && (!eol || w < eol))
			line = atoi(w + strlen("wait (threading.py:"));
		at += strlen(of);
	}
	free(of);
	return line;
}

/* The line'th line of a file, or NULL. */
static char *file_line(const char *path, int line)
{
	char *text = slurp(path), *p = text, *v = NULL;

	for (int n = 1; p && n < line; n++)
		p = (p = strchr(p, '\n')) ? p + 1 : NULL;
	if (p && line > 0)
		v = xasprintf("%.*s", (int)strcspn(p, "\n"), p);
	free(text);
	return v;
}

/* The summary names where the main thread waits for data, at the line of
 * the script's q.get() (truth.json's get_line); and the worker thread's
 * wait at the line it runs in threading.py, one that acquires (the line
 * the target's own threading.py holds), not where Condition.wait starts
 * (truth.json's wait_def). */
static void check_queue_summary(const struct target *t, const char *err, char **failures)
{
	char *truth = slurp(t->truth), *tfile = json_str(truth, "threading_file");
	char *want = xasprintf("get from next_batch (waits_queue.py:%d)",
			       (int)json_num(truth, "get_line"));
	char *main_line = xasprintf("pystrobe:   main thread %d: ", (int)t->py_pid);
	const char *at = err ? strstr(err, main_line) : NULL;
	int wait_def = (int)json_num(truth, "wait_def"), line = worker_wait_line(err, t->py_pid);
	char *path = tfile ? xasprintf("%s%s", t->ti->root, tfile) : NULL;
	char *text = path ? file_line(path, line) : NULL;

	if (!at || !strstr(at, "waiting for data in ") ||
	    strstr(at, want) > strchr(at, '\n') || !strstr(at, want))
		msg_add(failures, "no summary line '%s... waiting for data in ...%s' in:\n%s",
			main_line, want, err ? err : "");
	if (line < 0 || line == wait_def || !text || !strstr(text, "acquire("))
		msg_add(failures, "the worker's wait named at threading.py:%d ('%s'), not at a "
			"line that acquires (Condition.wait starts at %d) in:\n%s", line,
			text ? text : "", wait_def, err ? err : "");
	else
		printf("waits: %s: summary: data at waits_queue.py:%d, the worker at "
		       "threading.py:%d '%s'\n", t->ti->label, (int)json_num(truth, "get_line"),
		       line, text);
	free(text);
	free(path);
	free(main_line);
	free(want);
	free(tfile);
	free(truth);
}

/* A queue.Queue pipeline (tests/targets/waits_queue.py): the main thread's
 * <wait:data> share within SHARE_TOLERANCE of the share of wall time its
 * own clock spent in q.get(); no stack of another thread marked. */
START_TEST(test_queue)
{
	const struct test_interp *ti = &interps[_i];
	char why[512], pid[16], *failures = NULL, *err = NULL, *out;
	uint64_t all = 0, data = 0;
	struct folded *f = NULL;
	struct clock c0, c1;
	double truth = 0, share;
	struct target t;

	if (target_start_script(&t, ti, "tests/targets/waits_queue.py", why, sizeof(why)) < 0)
		ck_abort_msg("%s: waits_queue.py: %s", ti->label, why);
	if (target_wait_file(&t, "clock.json", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("%s: waits_queue.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	out = xasprintf("%s/queue.txt", t.dir);
	read_clock(&t, &c0);
	if (record(&t, pid, "collapsed", true, out, &err, &failures) == 0) {
		read_clock(&t, &c1);
		truth = (c1.get - c0.get) / (c1.wall - c0.wall);
		f = read_folded(out, &failures);
		for (size_t i = 0; i < f->n; i++) {
			bool main = !strncmp(f->stacks[i], "<module> (waits_queue.py:", 25);
			bool marked = ends_with(f->stacks[i], ";<wait:data>");

			all += main ? f->counts[i] : 0;
			data += main && marked ? f->counts[i] : 0;
			if (!main && strstr(f->stacks[i], "<wait:"))
				msg_add(&failures, "a thread not the main one marked: %.400s",
					f->stacks[i]);
		}
		share = all ? (double)data / all : 0;
		printf("waits: %s: queue.Queue: main thread %llu samples, <wait:data> %.3f "
		       "(its own clock %.3f)\n", ti->label, (unsigned long long)all, share, truth);
		if (!all || !(fabs(share - truth) <= SHARE_TOLERANCE))
			msg_add(&failures, "<wait:data> share %.3f of %llu samples, the main "
				"thread's clock %.3f", share, (unsigned long long)all, truth);
		check_queue_summary(&t, err, &failures);
	}
	target_stop(&t);
	if (f)
		folded_free(f);
	free(f);
	free(err);
	free(out);
	if (failures)
		printf("waits: %s queue FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%s: %.2000s", ti->label, failures);
}
END_TEST

/* Where the stack's first frame below the process root is the script's. */
static bool main_thread_stack(const char *stack, const char *root)
{
	const char *semi;

	if (strncmp(stack, root, strlen(root)))
		return false;
	semi = strchr(stack, ';');
	return semi && !strncmp(semi + 1, "<module> (waits_loader.py:", 26);
}

static void check_loader(struct target *t, char **failures)
{
	char *out = xasprintf("%s/loader.txt", t->dir), *root = NULL, pid[16];
	char *argv[] = { (char *)pystrobe_path(), "record", "-s", "--idle", "--waits", "-d", "3",
			 "-f", "collapsed", "-o", out, "--pid", pid, NULL };
	struct folded *f = NULL;
	uint64_t all = 0, data = 0, worker = 0;
	struct clock c0, c1;
	double truth, share;
	char how[96];
	struct run r;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	read_clock(t, &c0);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(failures, "cannot run pystrobe record");
		goto out;
	}
	read_clock(t, &c1);
	if (run_exit(&r) != 0)
		msg_add(failures, "record -s --waits: %s: %.500s", run_describe(&r, how, sizeof(how)),
			r.err);
	run_free(&r);
	f = read_folded(out, failures);
	root = xasprintf("process %d:", (int)t->py_pid);
	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->stacks[i];

		if (main_thread_stack(s, root)) {
			all += f->counts[i];
			data += ends_with(s, ";<wait:data>") ? f->counts[i] : 0;
		}
		if (strstr(s, "_worker_loop (torch/utils/data/_utils/worker.py:"))
			worker += f->counts[i];
		if (strstr(s, "_worker_loop (torch/utils/data/_utils/worker.py:") &&
		    ends_with(s, ";<wait:data>"))
			msg_add(failures, "a worker waiting for data: %.400s", s);
	}
	truth = (c1.wait - c0.wait) / (c1.wall - c0.wall);
	share = all ? (double)data / all : 0;
	printf("waits: %s: DataLoader: main thread %llu samples, <wait:data> %.3f (its own "
	       "clock %.3f); %llu samples of workers in _worker_loop, none <wait:data>\n",
	       t->ti->label, (unsigned long long)all, share, truth, (unsigned long long)worker);
	if (!all || !worker)
		msg_add(failures, "no samples of the main thread (%llu) or of the workers (%llu)",
			(unsigned long long)all, (unsigned long long)worker);
	else if (!(fabs(share - truth) <= SHARE_TOLERANCE))
		msg_add(failures, "<wait:data> share %.3f, the main thread's clock %.3f", share,
			truth);
out:
	if (f)
		folded_free(f);
	free(f);
	free(root);
	free(out);
}

START_TEST(test_loader)
{
	const struct test_interp *ti = NULL;
	char why[512], script[PATH_MAX], *failures = NULL;
	struct target t;

	for (int i = 0; i < ninterps && !ti; i++)
		if (!strcmp(interps[i].label, "3.14 sid-root"))
			ti = &interps[i];
	if (!ti) {
		test_skip("waits: no \"3.14 sid-root\" interpreter (python3-torch's)");
		return;
	}
	test_interp_script(ti, "tests/targets/waits_loader.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, NULL) < 0)
		ck_abort_msg("%s: waits_loader.py: %s", ti->label, why);
	if (target_wait_file(&t, "clock.json", 120000, why, sizeof(why)) < 0) {
		bool no_torch = t.reaped && WIFEXITED(t.status) && WEXITSTATUS(t.status) == 3;

		target_stop(&t);
		if (no_torch) {
			test_skip("waits: %s: no torch (python3-torch not installed)", ti->label);
			return;
		}
		ck_abort_msg("%s: waits_loader.py: %s", ti->label, why);
	}
	check_loader(&t, &failures);
	target_stop(&t);
	if (failures)
		printf("waits: %s DataLoader FAILED:\n%s", ti->label, failures);
	ck_assert_msg(!failures, "%s: %.2000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("waits");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	tc = tcase_create("waits");
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_waits, 0, ninterps);
	suite_add_tcase(s, tc);
	tc = tcase_create("queue");
	tcase_set_timeout(tc, 120);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_queue, 0, ninterps);
	suite_add_tcase(s, tc);
	tc = tcase_create("loader");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_loader);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
