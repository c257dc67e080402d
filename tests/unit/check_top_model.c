/* Tests for src/top/model.c, the numbers `pystrobe top` shows, with no
 * terminal and no target: samples are added to the model's profile as a
 * sampler would, and the sampling loop's totals are made up as ticks.
 *
 * At 100 Hz a sample is 10 ms.  The rows, their own and total counts and
 * shares, each sort order, the filter, by function, the views T steps
 * through (all, each process, each thread), idle threads, reset, paused,
 * the interval window and its header figures, the end of the target, the
 * hint in an empty table (every thread idle, told from nothing sampled
 * yet; in the snapshots too), and labels made printable.  top --slurm:
 * the threads of every node apart (the same pids on two nodes), the views
 * of each node, rank and thread, the header's nodes and those that do
 * not answer; with --gpu, each node's GPUs written into a reply as a node
 * writes them (cluster/nodegpu.c) and read back as the front reads them,
 * the header's lines in each view (the job's summary and its least busy
 * GPU, a line a node, each GPU of a node or of a rank, a node without
 * NVML said once), and hostile or missing figures.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/nodegpu.h"
#include "top/model.h"
#include "top/view.h"
#include "suite.h"

#define MS 1000000ull

struct fixture {
	struct top_model m;
	struct top_tick t;
	uint64_t now_ms;
};

static void setup(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	top_model_init(&fx->m, 100, 1);
	fx->now_ms = 1000;
	fx->t.now_ns = fx->now_ms * MS;
	fx->t.nprocs = 1;
	top_model_start(&fx->m, &fx->t);
}

static uint32_t py(struct top_model *m, const char *name, int line)
{
	struct pframe f = { PF_PYTHON, (char *)name, "/srv/app.py", line, 1 };

	return profile_frame(&m->p, &f);
}

/* n samples of thread with the stack of frames named by names (root
 * first, each on line 10 unless named "name:line"). */
static void sample(struct fixture *fx, uint32_t thread, int n, const char *names)
{
	uint32_t frames[16], depth = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", names);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *colon = strchr(w, ':');
		int line = colon ? atoi(colon + 1) : 10;

		if (colon)
			*colon = 0;
		frames[depth++] = py(&fx->m, w, line);
	}
	for (int i = 0; i < n; i++)
		profile_add(&fx->m.p, thread, frames, depth, fx->t.rounds * 10 * MS, 1);
	fx->t.rounds += n;
	fx->t.counts.rounds += n;
	fx->t.counts.stacks += n;
}

/* The interval ends ms after the last. */
static void interval(struct fixture *fx, uint64_t ms)
{
	fx->now_ms += ms;
	fx->t.now_ns = fx->now_ms * MS;
	top_model_interval(&fx->m, &fx->t);
	fx->t.max_lag_ns = 0;		/* as the loop zeroes its clock's */
}

static const struct top_row *row(const struct top_model *m, const char *name)
{
	size_t n = strlen(name);

	for (uint32_t i = 0; i < m->nrows; i++)
		if (!strncmp(m->rows[i].label, name, n) && m->rows[i].label[n] == ' ')
			return &m->rows[i];
	return NULL;
}

static const struct top_row *must_row(const struct top_model *m, const char *name)
{
	const struct top_row *r = row(m, name);

	ck_assert_msg(r, "no row %s", name);
	return r;
}

/* The row's samples, own and total, and its share of the interval's in
 * total. */
static void assert_total(const struct top_model *m, const char *name, uint64_t own,
			 uint64_t total, double total_pct)
{
	const struct top_row *r = must_row(m, name);

	ck_assert_uint_eq(r->own, own);
	ck_assert_uint_eq(r->total, total);
	ck_assert_double_eq_tol(top_row_total_pct(m, r), total_pct, 1e-9);
}

/* Row r's own samples, in all and in the last interval, and its own share
 * of the last. */
static void assert_own(const struct top_model *m, const struct top_row *r, uint64_t own,
		       uint64_t own_last, double own_pct)
{
	ck_assert_uint_eq(r->own, own);
	ck_assert_uint_eq(r->own_last, own_last);
	ck_assert_double_eq_tol(top_row_own_pct(m, r), own_pct, 1e-9);
}

/* The rows' function names in order, space-separated. */
static const char *order(const struct top_model *m)
{
	static char buf[512];

	buf[0] = 0;
	for (uint32_t i = 0; i < m->nrows; i++) {
		size_t len = strlen(buf);

		snprintf(buf + len, sizeof(buf) - len, "%s%.*s", i ? " " : "",
			 (int)strcspn(m->rows[i].label, " "), m->rows[i].label);
	}
	return buf;
}

static uint32_t thread(struct fixture *fx, pid_t pid, pid_t tid, const char *name)
{
	return profile_thread(&fx->m.p, pid, tid, name);
}

/* A model with one thread, of process 100. */
static uint32_t setup_one(struct fixture *fx)
{
	setup(fx);
	return thread(fx, 100, 100, NULL);
}

/* A model with one thread, of process 100, that ran batches ("count
 * stack; count stack; ...", each stack as sample() takes it) in a first
 * interval of a second. */
static uint32_t first_interval(struct fixture *fx, const char *batches)
{
	char buf[256], *save = NULL;
	uint32_t t0 = setup_one(fx);

	snprintf(buf, sizeof(buf), "%s", batches);
	for (char *b = strtok_r(buf, ";", &save); b; b = strtok_r(NULL, ";", &save)) {
		char *stack;
		long n = strtol(b, &stack, 10);

		sample(fx, t0, (int)n, stack);
	}
	interval(fx, 1000);
	return t0;
}

/* --- rows ----------------------------------------------------------------- */

START_TEST(test_rows_own_and_total)
{
	struct fixture fx;
	uint32_t a, b;
	const struct top_row *r;

	setup(&fx);
	a = thread(&fx, 100, 100, "MainThread");
	b = thread(&fx, 100, 101, "worker");
	sample(&fx, a, 6, "main work leaf");
	sample(&fx, a, 2, "main work");
	sample(&fx, b, 2, "main other");
	interval(&fx, 1000);

	ck_assert_uint_eq(fx.m.nrows, 4);
	assert_total(&fx.m, "leaf", 6, 6, 60);
	r = must_row(&fx.m, "leaf");
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, r), 60, 1e-9);
	ck_assert_double_eq_tol(top_row_own_s(&fx.m, r), 0.06, 1e-9);
	assert_total(&fx.m, "work", 2, 8, 80);
	r = must_row(&fx.m, "work");
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, r), 20, 1e-9);
	ck_assert_double_eq_tol(top_row_total_s(&fx.m, r), 0.08, 1e-9);
	/* Both threads' roots are the same line: one row. */
	assert_total(&fx.m, "main", 0, 10, 100);
	r = must_row(&fx.m, "other");
	ck_assert_uint_eq(r->own_last, 2);
	ck_assert_uint_eq(r->total_last, 2);
	ck_assert_str_eq(r->label, "other (app.py:10)");
	top_model_free(&fx.m);
}
END_TEST

/* A function is on a stack once, however deep it recurses there. */
START_TEST(test_rows_recursion_counted_once)
{
	struct fixture fx;

	first_interval(&fx, "4 main fib fib fib");
	assert_total(&fx.m, "fib", 4, 4, 100);
	top_model_free(&fx.m);
}
END_TEST

/* Roots, thread frames and markers are not rows, and add nothing. */
START_TEST(test_rows_only_functions)
{
	struct fixture fx;
	struct pframe root = { PF_PROCESS, "process 100: app", NULL, -1, -1 };
	uint32_t frames[2], a;

	a = setup_one(&fx);
	frames[0] = profile_frame(&fx.m.p, &root);
	frames[1] = py(&fx.m, "work", 10);
	profile_add(&fx.m.p, a, frames, 2, 0, 3);
	profile_add(&fx.m.p, a, frames, 1, 0, 1);
	fx.t.rounds = 4;
	interval(&fx, 1000);
	ck_assert_str_eq(order(&fx.m), "work");
	ck_assert_uint_eq(fx.m.rows[0].own, 3);
	top_model_free(&fx.m);
}
END_TEST

START_TEST(test_rows_by_function)
{
	struct fixture fx;
	const struct top_row *r;

	first_interval(&fx, "3 main work:10; 2 main work:12");
	ck_assert_uint_eq(fx.m.nrows, 3);	/* main, work:10, work:12 */

	top_model_set_by_function(&fx.m, true);
	ck_assert_uint_eq(fx.m.nrows, 2);
	r = must_row(&fx.m, "work");
	ck_assert_str_eq(r->label, "work (app.py)");
	ck_assert_uint_eq(r->own, 5);
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, r), 100, 1e-9);

	top_model_set_by_function(&fx.m, false);
	ck_assert_uint_eq(fx.m.nrows, 3);
	ck_assert_str_eq(must_row(&fx.m, "work")->label, "work (app.py:10)");
	top_model_free(&fx.m);
}
END_TEST

/* More (thread, stack) pairs than any first index holds. */
START_TEST(test_rows_many_entries)
{
	struct fixture fx;
	uint32_t th[4];
	char names[64];

	setup(&fx);
	for (int i = 0; i < 4; i++)
		th[i] = thread(&fx, 100, 100 + i, NULL);
	for (int s = 0; s < 3000; s++) {
		snprintf(names, sizeof(names), "main f:%d", s + 1);
		sample(&fx, th[s % 4], 1 + s % 3, names);
		sample(&fx, th[(s + 1) % 4], 1, names);
	}
	interval(&fx, 1000);
	ck_assert_uint_eq(fx.m.nentries, 6000);
	ck_assert_uint_eq(fx.m.nrows, 3001);
	ck_assert_uint_eq(must_row(&fx.m, "main")->total, fx.t.rounds);
	/* f:N had 1 + (N - 1) % 3 samples in one thread, and 1 in another. */
	for (uint32_t i = 0; i < fx.m.nrows; i++) {
		int line;

		if (sscanf(fx.m.rows[i].label, "f (app.py:%d)", &line) == 1)
			ck_assert_uint_eq(fx.m.rows[i].own, 2 + (line - 1) % 3);
	}
	ck_assert_str_eq(fx.m.rows[fx.m.nrows - 1].label, "main (app.py:10)");
	interval(&fx, 1000);
	ck_assert_uint_eq(fx.m.nentries, 6000);
	top_model_free(&fx.m);
}
END_TEST

/* --- sorting -------------------------------------------------------------- */

/* x ran in the first interval only, y and b in the second: each order
 * puts them differently. */
START_TEST(test_sort_orders)
{
	static const char *const want[TOP_SORT_COUNT] = {
		[TOP_SORT_OWN_PCT] = "y b x a",
		[TOP_SORT_TOTAL_PCT] = "b y a x",
		[TOP_SORT_OWN_TIME] = "x y b a",
		[TOP_SORT_TOTAL_TIME] = "x a b y",
	};
	struct fixture fx;
	uint32_t t0;

	t0 = first_interval(&fx, "10 a x");
	sample(&fx, t0, 5, "b y");
	sample(&fx, t0, 1, "b");
	interval(&fx, 1000);
	ck_assert_int_eq(fx.m.sort, TOP_SORT_OWN_TIME);	/* the default */
	for (int s = 0; s < TOP_SORT_COUNT; s++) {
		top_model_set_sort(&fx.m, (enum top_sort)s);
		ck_assert_msg(!strcmp(order(&fx.m), want[s]), "%s: %s, not %s",
			      top_sort_names[s], order(&fx.m), want[s]);
	}
	/* A new interval keeps the order chosen. */
	sample(&fx, t0, 1, "b y");
	interval(&fx, 1000);
	ck_assert_str_eq(order(&fx.m), "x a b y");
	top_model_free(&fx.m);
}
END_TEST

/* Equal counts: by label, so the order does not flicker. */
START_TEST(test_sort_ties_by_label)
{
	struct fixture fx;

	first_interval(&fx, "2 gamma; 2 alpha; 2 beta");
	ck_assert_str_eq(order(&fx.m), "alpha beta gamma");
	top_model_free(&fx.m);
}
END_TEST

/* --- the filter ----------------------------------------------------------- */

START_TEST(test_filter)
{
	struct fixture fx;

	first_interval(&fx, "3 main load_data; 2 main train_step");
	ck_assert_uint_eq(top_model_rows_shown(&fx.m), 3);
	snprintf(fx.m.filter, sizeof(fx.m.filter), "TRAIN");	/* any case */
	ck_assert_uint_eq(top_model_rows_shown(&fx.m), 1);
	ck_assert(top_row_shown(&fx.m, must_row(&fx.m, "train_step")));
	ck_assert(!top_row_shown(&fx.m, must_row(&fx.m, "load_data")));
	/* The file is part of the label too. */
	snprintf(fx.m.filter, sizeof(fx.m.filter), "app.py:10");
	ck_assert_uint_eq(top_model_rows_shown(&fx.m), 3);
	snprintf(fx.m.filter, sizeof(fx.m.filter), "nothing");
	ck_assert_uint_eq(top_model_rows_shown(&fx.m), 0);
	ck_assert_uint_eq(fx.m.nrows, 3);	/* filtered, not dropped */
	fx.m.filter[0] = 0;
	ck_assert_uint_eq(top_model_rows_shown(&fx.m), 3);
	top_model_free(&fx.m);
}
END_TEST

/* --- views: all, each process, each thread --------------------------------- */

static const char *describe(const struct top_model *m)
{
	static char buf[256];
	struct strbuf sb = STRBUF_INIT;

	top_model_describe_view(m, &sb);
	snprintf(buf, sizeof(buf), "%s", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return buf;
}

/* T pressed once a step: each step's view, described, and its rows in
 * order. */
static void assert_views(struct fixture *fx, const char *const steps[][2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		top_model_next_view(&fx->m);
		ck_assert_str_eq(describe(&fx->m), steps[i][0]);
		ck_assert_str_eq(order(&fx->m), steps[i][1]);
	}
}

/* Threads seen out of order, in two processes. */
static void two_processes(struct fixture *fx)
{
	uint32_t w = thread(fx, 200, 201, "w");
	uint32_t m1 = thread(fx, 100, 101, "second");
	uint32_t m0 = thread(fx, 100, 100, "MainThread");

	sample(fx, m0, 4, "main p100");
	sample(fx, m1, 2, "main t101");
	sample(fx, w, 3, "main p200");
	interval(fx, 1000);
}

START_TEST(test_views_threads)
{
	static const char *const steps[][2] = {
		{ "thread 100 \"MainThread\" (1 of 3)", "p100 main" },
		{ "thread 101 \"second\" (2 of 3)", "t101 main" },
		{ "thread 201 \"w\" (3 of 3)", "p200 main" },
		{ "all threads", "main p100 p200 t101" },
	};
	struct fixture fx;

	setup(&fx);
	two_processes(&fx);
	top_model_set_sort(&fx.m, TOP_SORT_TOTAL_TIME);
	ck_assert_str_eq(describe(&fx.m), "all threads");
	assert_views(&fx, steps, sizeof(steps) / sizeof(*steps));
	top_model_free(&fx.m);
}
END_TEST

/* With subprocesses, each process comes before each thread. */
START_TEST(test_views_processes)
{
	static const char *const steps[][2] = {
		{ "process 100 (1 of 2)", "main p100 t101" },
		{ "process 200 (2 of 2)", "p200 main" },
		{ "thread 100 \"MainThread\" of process 100 (1 of 3)", "p100 main" },
		{ "thread 101 \"second\" of process 100 (2 of 3)", "t101 main" },
		{ "thread 201 \"w\" of process 200 (3 of 3)", "p200 main" },
		{ "all processes", "main p100 p200 t101" },
		{ "process 100 (1 of 2)", "main p100 t101" },
	};
	struct fixture fx;
	const struct top_row *r;

	setup(&fx);
	fx.m.subprocesses = true;
	two_processes(&fx);
	top_model_set_sort(&fx.m, TOP_SORT_TOTAL_TIME);
	ck_assert_str_eq(describe(&fx.m), "all processes");
	assert_views(&fx, steps, sizeof(steps) / sizeof(*steps));
	/* The shares stay shares of the whole interval. */
	r = must_row(&fx.m, "p100");
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, r), 100.0 * 4 / 9, 1e-9);
	top_model_free(&fx.m);
}
END_TEST

/* One process: T goes straight to its threads. */
START_TEST(test_views_one_process)
{
	struct fixture fx;
	uint32_t t0;

	t0 = setup_one(&fx);
	fx.m.subprocesses = true;
	sample(&fx, t0, 1, "main");
	interval(&fx, 1000);
	top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "thread 100 of process 100 (1 of 1)");
	top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "all processes");
	top_model_free(&fx.m);
}
END_TEST

/* --- idle, reset, pause ----------------------------------------------------- */

static void assert_counted_afresh(const struct fixture *fx)
{
	ck_assert_uint_eq(fx->m.nrows, 0);
	ck_assert_uint_eq(fx->m.shown.samples, 0);
	ck_assert_uint_eq(fx->m.shown.rounds, 0);
	ck_assert(fx->m.shown.gil_pct < 0);
	ck_assert(fx->m.shown.error_pct < 0);
	ck_assert(fx->m.shown.active_pct < 0);
	ck_assert_int_eq(fx->m.shown.nthreads, 2);	/* kept until the next */
}

/* After a fresh start, n samples of "main name" in an interval of ms are
 * all that is counted. */
static void assert_counts_only(struct fixture *fx, uint32_t t0, int n, const char *name,
			       uint64_t ms)
{
	char stack[64], rows[64];

	snprintf(stack, sizeof(stack), "main %s", name);
	snprintf(rows, sizeof(rows), "%s main", name);
	sample(fx, t0, n, stack);
	interval(fx, ms);
	ck_assert_str_eq(order(&fx->m), rows);
	ck_assert_uint_eq(must_row(&fx->m, name)->own, n);
	ck_assert_uint_eq(fx->m.shown.samples, n);
	ck_assert_double_eq_tol(fx->m.shown.elapsed_s, ms / 1000.0, 1e-9);
}

START_TEST(test_idle_toggle)
{
	struct fixture fx;
	uint32_t t0;

	t0 = setup_one(&fx);
	fx.t.counts.nthreads = 2;
	sample(&fx, t0, 5, "main spin");
	interval(&fx, 1000);
	ck_assert(!fx.m.idle);
	ck_assert_uint_eq(fx.m.nrows, 2);

	/* Samples taken before the toggle are not counted after it. */
	sample(&fx, t0, 3, "main spin");
	fx.now_ms += 300;
	fx.t.now_ns = fx.now_ms * MS;
	top_model_set_idle(&fx.m, true, &fx.t);
	ck_assert(fx.m.idle);
	assert_counted_afresh(&fx);

	assert_counts_only(&fx, t0, 2, "wait", 1000);

	top_model_set_idle(&fx.m, false, &fx.t);
	ck_assert(!fx.m.idle);
	ck_assert_uint_eq(fx.m.nrows, 0);
	top_model_free(&fx.m);
}
END_TEST

START_TEST(test_reset)
{
	struct fixture fx;
	uint32_t t0;

	t0 = setup_one(&fx);
	fx.t.counts.nthreads = 2;
	sample(&fx, t0, 50, "main old");
	interval(&fx, 1000);
	sample(&fx, t0, 7, "main old");
	top_model_reset(&fx.m, &fx.t);
	assert_counted_afresh(&fx);

	assert_counts_only(&fx, t0, 4, "new", 500);
	ck_assert_uint_eq(fx.m.shown.rounds, 4);
	top_model_free(&fx.m);
}
END_TEST

START_TEST(test_paused)
{
	struct fixture fx;
	uint32_t t0;

	t0 = first_interval(&fx, "5 main first");
	top_model_set_paused(&fx.m, true);
	sample(&fx, t0, 5, "main second");
	interval(&fx, 1000);
	/* Sampling went on; the view did not. */
	ck_assert_str_eq(order(&fx.m), "first main");
	ck_assert_uint_eq(fx.m.shown.samples, 5);
	ck_assert_uint_eq(fx.m.live.samples, 10);
	top_model_set_paused(&fx.m, false);
	ck_assert_str_eq(order(&fx.m), "second first main");
	ck_assert_uint_eq(fx.m.shown.samples, 10);
	top_model_free(&fx.m);
}
END_TEST

/* --- the interval window -------------------------------------------------- */

START_TEST(test_interval_window)
{
	struct fixture fx;
	uint32_t t0;
	const struct top_row *r;

	t0 = first_interval(&fx, "80 main hot; 20 main cold");
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, must_row(&fx.m, "hot")), 80, 1e-9);

	/* The second interval: hot only, half as long. */
	sample(&fx, t0, 50, "main hot");
	interval(&fx, 500);
	r = must_row(&fx.m, "hot");
	assert_own(&fx.m, r, 130, 50, 100);
	ck_assert_double_eq_tol(top_row_own_s(&fx.m, r), 1.3, 1e-9);
	assert_own(&fx.m, must_row(&fx.m, "cold"), 20, 0, 0);	/* still a row: it has time */
	ck_assert_uint_eq(fx.m.shown.rounds, 50);
	ck_assert_uint_eq(fx.m.shown.samples, 150);
	ck_assert_double_eq_tol(fx.m.shown.interval_s, 0.5, 1e-9);
	ck_assert_double_eq_tol(fx.m.shown.elapsed_s, 1.5, 1e-9);
	top_model_free(&fx.m);
}
END_TEST

/* The header's figures are the interval's, from the samplers' totals. */
START_TEST(test_interval_figures)
{
	struct fixture fx;
	uint32_t t0;
	const struct top_stats *st = &fx.m.shown;

	t0 = setup_one(&fx);
	sample(&fx, t0, 100, "main");
	fx.t.counts.gil_rounds = 100;
	fx.t.counts.threads = 200;
	fx.t.counts.checked = 200;
	fx.t.counts.active = 200;
	fx.t.counts.errors[SERR_TORN] = 50;
	fx.t.lagged = 7;
	fx.t.max_lag_ns = 30 * MS;
	fx.t.nprocs = 3;
	fx.t.counts.nthreads = 2;
	fx.t.version = "3.12.1";
	interval(&fx, 1000);
	ck_assert_double_eq_tol(st->gil_pct, 100, 1e-9);
	ck_assert_double_eq_tol(st->active_pct, 100, 1e-9);
	ck_assert_double_eq_tol(st->error_pct, 100.0 * 50 / 150, 1e-9);
	ck_assert_double_eq_tol(st->late_pct, 0, 1e-9);
	ck_assert_uint_eq(st->lagged, 7);
	ck_assert_double_eq_tol(st->max_lag_ms, 30, 1e-9);
	ck_assert_int_eq(st->nprocs, 3);
	ck_assert_int_eq(st->nthreads, 2);
	ck_assert_str_eq(fx.m.version, "3.12.1");

	/* The next interval: only what happened in it. */
	sample(&fx, t0, 100, "main");
	fx.t.counts.gil_rounds += 25;
	fx.t.counts.threads += 200;
	fx.t.counts.checked += 200;
	fx.t.counts.active += 50;
	fx.t.counts.errors[SERR_MERGE] += 10;	/* counted with a stack too */
	fx.t.counts.late += 18;	/* --native: counted, without native frames */
	interval(&fx, 1000);
	ck_assert_double_eq_tol(st->late_pct, 100.0 * 18 / 90, 1e-9);
	ck_assert_double_eq_tol(st->gil_pct, 25, 1e-9);
	ck_assert_double_eq_tol(st->active_pct, 25, 1e-9);
	ck_assert_double_eq_tol(st->error_pct, 10, 1e-9);
	ck_assert_uint_eq(st->lagged, 0);
	ck_assert_double_eq_tol(st->max_lag_ms, 0, 1e-9);

	/* No rounds: nothing to tell. */
	interval(&fx, 1000);
	ck_assert(st->gil_pct < 0 && st->active_pct < 0 && st->error_pct < 0);
	ck_assert_uint_eq(st->rounds, 0);
	top_model_free(&fx.m);
}
END_TEST

/* The end of the target: a short last bit of an interval goes to the
 * times only, a long one is an interval of its own. */
START_TEST(test_exited)
{
	struct fixture fx;
	uint32_t t0;
	const struct top_row *r;

	t0 = first_interval(&fx, "100 main hot");
	top_model_set_paused(&fx.m, true);
	sample(&fx, t0, 10, "main hot");
	fx.t.now_ns += 100 * MS;
	top_model_exited(&fx.m, &fx.t);
	ck_assert(fx.m.exited);
	ck_assert(!fx.m.paused);
	assert_own(&fx.m, must_row(&fx.m, "hot"), 110, 100, 100);
	ck_assert_uint_eq(fx.m.shown.samples, 110);
	top_model_free(&fx.m);

	t0 = first_interval(&fx, "100 main hot");
	sample(&fx, t0, 60, "main cold");
	fx.t.now_ns += 600 * MS;
	top_model_exited(&fx.m, &fx.t);
	r = must_row(&fx.m, "cold");
	ck_assert_uint_eq(r->own_last, 60);
	ck_assert_double_eq_tol(top_row_own_pct(&fx.m, r), 100, 1e-9);
	ck_assert_uint_eq(fx.m.shown.rounds, 60);
	top_model_free(&fx.m);
}
END_TEST

/* --- the hint in the empty table ------------------------------------------ */

/* The hint as the full-screen view (keys) or the snapshots give it. */
static enum top_hint hint(const struct fixture *fx, bool keys, char *buf, size_t size)
{
	struct strbuf sb = STRBUF_INIT;
	enum top_hint h = top_model_hint(&fx->m, keys, &sb);

	snprintf(buf, size, "%s", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return h;
}

/* n rounds in which no thread ran: nothing is sampled without --idle. */
static void idle_rounds(struct fixture *fx, int n)
{
	fx->t.rounds += n;
	fx->t.counts.rounds += n;
}

static void assert_hint(const struct fixture *fx, enum top_hint want, const char *keys,
			const char *no_keys)
{
	char buf[256];

	ck_assert_int_eq(hint(fx, true, buf, sizeof(buf)), want);
	ck_assert_str_eq(buf, keys);
	ck_assert_int_eq(hint(fx, false, buf, sizeof(buf)), want);
	ck_assert_str_eq(buf, no_keys);
}

/* A hung process: rounds, no row, and a line saying why and what shows
 * them; not before the first interval, nor once I counts afresh. */
START_TEST(test_hint_all_idle)
{
	struct fixture fx;

	setup(&fx);
	thread(&fx, 100, 100, "MainThread");
	thread(&fx, 100, 101, "waiter");
	fx.t.counts.nthreads = 2;
	assert_hint(&fx, TOP_HINT_COLLECTING, "", "");
	idle_rounds(&fx, 100);
	interval(&fx, 1000);
	ck_assert_uint_eq(fx.m.nrows, 0);
	assert_hint(&fx, TOP_HINT_ALL_IDLE,
		    "none of the 2 threads ran in the last 1 s; press I to show idle threads",
		    "none of the 2 threads ran in the last 1 s; --idle shows idle threads");
	/* One line in 80 columns, from column 2. */
	ck_assert_uint_le(strlen("none of the 2 threads ran in the last 86400 s; press I to "
				 "show idle threads"), 78);

	/* I: counted afresh, nothing sampled yet: not "idle". */
	top_model_set_idle(&fx.m, true, &fx.t);
	assert_hint(&fx, TOP_HINT_COLLECTING, "", "");
	sample(&fx, 0, 100, "main stuck");
	sample(&fx, 1, 100, "run wait_forever");
	interval(&fx, 1000);
	assert_hint(&fx, TOP_HINT_NONE, "", "");
	ck_assert_str_eq(order(&fx.m), "stuck wait_forever main run");
	top_model_free(&fx.m);
}
END_TEST

/* Rows from before it hung stay (they have time), but none ran since. */
START_TEST(test_hint_hung_after_running)
{
	struct fixture fx;

	first_interval(&fx, "50 main work");
	fx.t.counts.nthreads = 1;
	assert_hint(&fx, TOP_HINT_NONE, "", "");
	/* A short interval (the last of a --duration) says how short. */
	idle_rounds(&fx, 50);
	interval(&fx, 500);
	ck_assert_uint_eq(fx.m.nrows, 2);
	assert_hint(&fx, TOP_HINT_ALL_IDLE,
		    "the only thread did not run in the last 0.5 s; press I to show idle threads",
		    "the only thread did not run in the last 0.5 s; --idle shows idle threads");
	top_model_free(&fx.m);
}
END_TEST

/* Some threads ran: how many did not, and I; none with --idle. */
START_TEST(test_hint_some_idle)
{
	struct fixture fx;
	uint32_t t0;

	t0 = setup_one(&fx);
	thread(&fx, 100, 101, "loader");
	thread(&fx, 100, 102, "checkpoint");
	fx.t.counts.nthreads = 3;
	sample(&fx, t0, 100, "main metrics");
	interval(&fx, 1000);
	assert_hint(&fx, TOP_HINT_SOME_IDLE,
		    "1 of 3 threads ran in the last 1 s; press I to show the 2 idle ones too",
		    "1 of 3 threads ran in the last 1 s; --idle shows the 2 idle ones too");
	/* The view of one thread that ran: nothing left out. */
	top_model_next_view(&fx.m);
	assert_hint(&fx, TOP_HINT_NONE, "", "");
	/* One that did not. */
	top_model_next_view(&fx.m);
	assert_hint(&fx, TOP_HINT_ALL_IDLE,
		    "thread 101 did not run in the last 1 s; press I to show idle threads",
		    "thread 101 did not run in the last 1 s; --idle shows idle threads");
	top_model_next_view(&fx.m);
	top_model_next_view(&fx.m);
	ck_assert_int_eq(fx.m.thread_sel, -1);

	top_model_set_idle(&fx.m, true, &fx.t);
	sample(&fx, t0, 100, "main metrics");
	sample(&fx, 1, 100, "load");
	sample(&fx, 2, 100, "save");
	interval(&fx, 1000);
	assert_hint(&fx, TOP_HINT_NONE, "", "");
	/* With idle threads shown, an empty interval is nothing sampled. */
	fx.t.counts.errors[SERR_TORN] += 10;
	idle_rounds(&fx, 10);
	interval(&fx, 1000);
	assert_hint(&fx, TOP_HINT_NOTHING, "nothing was sampled in the last 1 s (errors 100.0%)",
		    "nothing was sampled in the last 1 s (errors 100.0%)");
	top_model_free(&fx.m);
}
END_TEST

/* The filter, --gil, a process view, an exited target. */
START_TEST(test_hint_other_reasons)
{
	struct fixture fx;

	first_interval(&fx, "5 main work");
	fx.t.counts.nthreads = 1;
	snprintf(fx.m.filter, sizeof(fx.m.filter), "nothing");
	assert_hint(&fx, TOP_HINT_FILTERED, "no function matches the filter (Esc clears it)",
		    "no function matches the filter");
	fx.m.filter[0] = 0;

	fx.m.gil_only = true;
	idle_rounds(&fx, 10);
	interval(&fx, 1000);
	assert_hint(&fx, TOP_HINT_NO_GIL,
		    "no thread held the GIL in the last 1 s (--gil samples only its holder)",
		    "no thread held the GIL in the last 1 s (--gil samples only its holder)");
	fx.m.gil_only = false;

	fx.m.proc_sel = 100;
	assert_hint(&fx, TOP_HINT_ALL_IDLE,
		    "no thread of process 100 ran in the last 1 s; press I to show idle threads",
		    "no thread of process 100 ran in the last 1 s; --idle shows idle threads");
	fx.m.proc_sel = 0;

	/* I does nothing once the target has exited. */
	idle_rounds(&fx, 100);
	fx.t.now_ns += 1000 * MS;
	top_model_exited(&fx.m, &fx.t);
	assert_hint(&fx, TOP_HINT_NONE, "", "");
	top_model_free(&fx.m);
}
END_TEST

/* Standard output not a terminal: the snapshot says it under the titles. */
START_TEST(test_hint_snapshot)
{
	struct fixture fx;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	setup(&fx);
	thread(&fx, 100, 100, "MainThread");
	fx.t.counts.nthreads = 1;
	idle_rounds(&fx, 100);
	interval(&fx, 1000);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(top_view_snapshot(&fx.m, out), 0);
	fclose(out);
	ck_assert_msg(strstr(text, "Function (file:line)\n  (the only thread did not run in the "
				   "last 1 s; --idle shows idle threads)\n\n"), "%s", text);
	ck_assert_msg(!strstr(text, "without native frames"), "%s", text);
	free(text);
	/* Late threads under --native: the header says how many samples
	 * lack their native frames. */
	sample(&fx, 0, 50, "main");
	fx.t.counts.late += 5;
	interval(&fx, 1000);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(top_view_snapshot(&fx.m, out), 0);
	fclose(out);
	ck_assert_msg(strstr(text, ", errors 0.0%") &&
		      strstr(text, ", 10.0% without native frames (not stopped in time)"), "%s", text);
	free(text);
	top_model_free(&fx.m);
}
END_TEST

/* A free-threaded build has no GIL: no GIL share (not a meaningless 0.0%),
 * but how many threads were attached a round, in the figures, the
 * snapshot's header and --gil's hint. */
START_TEST(test_free_threaded)
{
	struct fixture fx;
	const struct top_stats *st = &fx.m.shown;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	first_interval(&fx, "5 main work");
	fx.t.counts.nthreads = 8;
	sample(&fx, 0, 100, "main");
	fx.t.counts.ft_rounds = 100;
	fx.t.counts.attached = 350;
	interval(&fx, 1000);
	ck_assert(st->gil_pct < 0);
	ck_assert_double_eq_tol(st->attached, 3.5, 1e-9);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(top_view_snapshot(&fx.m, out), 0);
	fclose(out);
	ck_assert_msg(strstr(text, ", attached 3.5, ") && !strstr(text, "GIL"), "%s", text);
	free(text);

	/* Nobody attached under --gil: said as what it is there. */
	fx.m.gil_only = true;
	idle_rounds(&fx, 10);
	fx.t.counts.ft_rounds += 10;
	interval(&fx, 1000);
	ck_assert_double_eq_tol(st->attached, 0, 1e-9);
	assert_hint(&fx, TOP_HINT_NO_GIL,
		    "no thread was attached to the interpreter in the last 1 s (--gil samples "
		    "only those on a build without a GIL)",
		    "no thread was attached to the interpreter in the last 1 s (--gil samples "
		    "only those on a build without a GIL)");

	/* A build with a GIL: no attached figure. */
	idle_rounds(&fx, 10);
	interval(&fx, 1000);
	ck_assert(st->attached < 0 && st->gil_pct == 0);
	top_model_free(&fx.m);
}
END_TEST

/* --- labels --------------------------------------------------------------- */

START_TEST(test_labels_printable)
{
	struct fixture fx;
	char *argv[] = { "python3", "-c", "print('\x1b[2J')", NULL };
	uint32_t t0;

	setup(&fx);
	t0 = thread(&fx, 100, 100, "bad\aname");
	sample(&fx, t0, 1, "odd\x1b[2J");
	interval(&fx, 1000);
	ck_assert_str_eq(fx.m.rows[0].label, "odd\\x1b[2J (app.py:10)");
	top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "thread 100 \"bad\\x07name\" (1 of 1)");

	top_model_set_target(&fx.m, 100, argv, 3);
	ck_assert_int_eq(fx.m.pid, 100);
	ck_assert_str_eq(fx.m.what, "python3 -c print('\\x1b[2J')");
	top_model_set_target(&fx.m, 100, NULL, 0);
	ck_assert_str_eq(fx.m.what, "?");
	top_model_free(&fx.m);
}
END_TEST

START_TEST(test_full_filenames)
{
	struct fixture fx;
	uint32_t t0;

	t0 = setup_one(&fx);
	fx.m.full_filenames = true;
	sample(&fx, t0, 1, "work");
	interval(&fx, 1000);
	ck_assert_str_eq(fx.m.rows[0].label, "work (/srv/app.py:10)");
	top_model_free(&fx.m);
}
END_TEST


/* --- top --slurm: a job's nodes and ranks ---------------------------------- */

/* Each node's processes: pid 100 is rank 2n, pid 200 rank 2n+1, on every
 * node alike (two nodes may use the same pids). */
static long job_rank(void *arg, pid_t pid)
{
	int node = *(int *)arg;

	return pid == 100 ? 2 * node : pid == 200 ? 2 * node + 1 : -1;
}

/* One node's reply: n samples of (pid, tid) in leaf, as a pprof read
 * back has them (stacks and per-thread counts, no runs). */
static void job_reply_named(struct fixture *fx, int node, pid_t pid, uint64_t n,
			    const char *leaf, const char *name)
{
	struct profile src;
	struct pframe f[2] = { { PF_PYTHON, "main", "/srv/train.py", 5, 1 },
			       { PF_PYTHON, (char *)leaf, "/srv/train.py", 10, 8 } };
	uint32_t frames[2], st, th;

	profile_init(&src, 100);
	frames[0] = profile_frame(&src, &f[0]);
	frames[1] = profile_frame(&src, &f[1]);
	profile_add_count(&src, frames, 2, n);
	st = profile_stack(&src, frames, 2);
	th = profile_thread(&src, pid, pid, name);
	profile_add_stack_thread(&src, st, th, n);
	top_job_add(&fx->m, node, &src, job_rank, &node);
	profile_free(&src);
}

static void job_reply(struct fixture *fx, int node, pid_t pid, uint64_t n, const char *leaf)
{
	job_reply_named(fx, node, pid, n, leaf, "MainThread");
}

/* A job on hnode1 (ranks 0 and 1) and hnode2 (ranks 2 and 3, same pids):
 * rank 3 in fetch_shard, the others in allreduce; one interval of 100
 * rounds. */
static void job_setup(struct fixture *fx)
{
	char *nodes[] = { "hnode1", "hnode2" };

	setup(fx);
	top_job_init(&fx->m, "123", "hnode[1-2]", nodes, 2);
	job_reply(fx, 0, 100, 100, "allreduce");
	job_reply(fx, 0, 200, 100, "allreduce");
	job_reply(fx, 1, 100, 100, "allreduce");
	job_reply(fx, 1, 200, 100, "fetch_shard");
	top_job_node_seen(&fx->m, 0, fx->t.now_ns, 2, 2, 2);
	top_job_node_seen(&fx->m, 1, fx->t.now_ns, 2, 2, 2);
	fx->t.rounds += 100;
	fx->t.counts.rounds += 200;
	fx->t.counts.stacks += 400;
	fx->t.nprocs = 4;
	interval(fx, 1000);
}

START_TEST(test_job_rows)
{
	struct fixture fx;

	job_setup(&fx);
	/* Four threads, one per rank, though the pids are the same twice. */
	ck_assert_uint_eq(fx.m.p.nthreads, 4);
	assert_total(&fx.m, "allreduce", 300, 300, 300);
	assert_total(&fx.m, "fetch_shard", 100, 100, 100);
	assert_total(&fx.m, "main", 0, 400, 400);
	/* The next reply of a rank adds to its thread, named anew. */
	job_reply_named(&fx, 1, 200, 50, "fetch_shard", "loader");
	fx.t.rounds += 50;
	interval(&fx, 500);
	assert_total(&fx.m, "fetch_shard", 150, 150, 100);
	ck_assert_uint_eq(fx.m.p.nthreads, 4);
	ck_assert_str_eq(fx.m.p.threads[3].name, "loader");
	ck_assert_str_eq(fx.m.p.threads[1].name, "MainThread");
	top_model_free(&fx.m);
}
END_TEST

START_TEST(test_job_views)
{
	static const char *const steps[][2] = {
		{ "node hnode1 (1 of 2)", "allreduce main" },
		{ "node hnode2 (2 of 2)", "allreduce fetch_shard main" },
		{ "rank 0 on hnode1 (1 of 4)", "allreduce main" },
		{ "rank 1 on hnode1 (2 of 4)", "allreduce main" },
		{ "rank 2 on hnode2 (3 of 4)", "allreduce main" },
		{ "rank 3 on hnode2 (4 of 4)", "fetch_shard main" },
		{ "thread 100 \"MainThread\" of rank 0 on hnode1 (1 of 4)", "allreduce main" },
		{ "thread 200 \"MainThread\" of rank 1 on hnode1 (2 of 4)", "allreduce main" },
		{ "thread 100 \"MainThread\" of rank 2 on hnode2 (3 of 4)", "allreduce main" },
		{ "thread 200 \"MainThread\" of rank 3 on hnode2 (4 of 4)", "fetch_shard main" },
		{ "all ranks", "allreduce fetch_shard main" },
		{ "node hnode1 (1 of 2)", "allreduce main" },
	};
	struct fixture fx;

	job_setup(&fx);
	top_model_set_sort(&fx.m, TOP_SORT_OWN_TIME);
	ck_assert_str_eq(describe(&fx.m), "all ranks");
	assert_views(&fx, steps, sizeof(steps) / sizeof(*steps));
	top_model_free(&fx.m);
}
END_TEST

static const char *job_text(const struct top_model *m, bool missing)
{
	static char buf[256];
	struct strbuf sb = STRBUF_INIT;

	if (missing)
		top_job_missing(m, &sb);
	else
		top_job_header(m, &sb);
	snprintf(buf, sizeof(buf), "%s", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return buf;
}

START_TEST(test_job_header)
{
	char *nodes[] = { "hnode1", "hnode2", "hnode3" };
	struct fixture fx;
	uint64_t s = 1000000000ull;

	setup(&fx);
	top_job_init(&fx.m, "123.0", "hnode[1-3]", nodes, 3);
	ck_assert_int_eq(top_job_check(&fx.m, 2 * s, s, 20 * s, 3 * s), 0);
	ck_assert_str_eq(job_text(&fx.m, false), "Slurm job 123.0 on hnode[1-3]: 0 of 3 nodes, "
			 "0 ranks");
	ck_assert_str_eq(job_text(&fx.m, true), "");
	top_job_node_seen(&fx.m, 0, 2 * s, 2, 2, 4);
	top_job_node_seen(&fx.m, 1, 2 * s, 1, 1, 1);
	ck_assert_int_eq(top_job_check(&fx.m, 3 * s, s, 20 * s, 3 * s), 0);
	ck_assert_str_eq(job_text(&fx.m, false), "Slurm job 123.0 on hnode[1-3]: 2 of 3 nodes, "
			 "3 ranks");
	/* hnode3 never answers (20 s), hnode2 stops (3 s), hnode1's
	 * pystrobe ends. */
	top_job_node_seen(&fx.m, 0, 5 * s, 2, 2, 4);
	top_job_node_gone(&fx.m, 0, false);
	ck_assert_int_eq(top_job_check(&fx.m, 22 * s, s, 20 * s, 3 * s), 3);
	ck_assert_str_eq(job_text(&fx.m, false), "Slurm job 123.0 on hnode[1-3]: 0 of 3 nodes, "
			 "0 ranks");
	ck_assert_str_eq(job_text(&fx.m, true), "stopped answering: hnode1; not answering: "
			 "hnode2; never answered: hnode3");
	/* An answer again: it is counted again. */
	top_job_node_seen(&fx.m, 1, 22 * s, 1, 1, 1);
	ck_assert_int_eq(top_job_check(&fx.m, 22 * s, s, 20 * s, 3 * s), 2);
	ck_assert_str_eq(job_text(&fx.m, true), "stopped answering: hnode1; never answered: "
			 "hnode3");
	/* A node whose ranks all ended is said apart. */
	top_job_node_gone(&fx.m, 1, true);
	ck_assert_int_eq(top_job_check(&fx.m, 22 * s, s, 20 * s, 3 * s), 3);
	ck_assert_str_eq(job_text(&fx.m, true), "the job's processes ended on: hnode2; stopped "
			 "answering: hnode1; never answered: hnode3");
	top_model_free(&fx.m);
}
END_TEST

/* A rank shown that did not run: said of the rank; a reply for a node
 * out of range is dropped. */
START_TEST(test_job_hint)
{
	struct fixture fx;
	struct strbuf sb = STRBUF_INIT;

	job_setup(&fx);
	job_reply(&fx, 2, 100, 10, "stray");
	job_reply(&fx, -1, 100, 10, "stray");
	for (int i = 0; i < 6; i++)
		top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "rank 3 on hnode2 (4 of 4)");
	job_reply(&fx, 0, 100, 100, "allreduce");
	fx.t.rounds += 100;
	interval(&fx, 1000);
	ck_assert_ptr_null(row(&fx.m, "stray"));
	ck_assert_int_eq(top_model_hint(&fx.m, true, &sb), TOP_HINT_ALL_IDLE);
	ck_assert_str_eq(sb.buf, "no thread of rank 3 on hnode2 ran in the last 1 s; press I to "
			 "show idle threads");
	sb_release(&sb);
	top_model_free(&fx.m);
}
END_TEST


/* --- top --slurm --gpu ---------------------------------------------------------- */

#define GIB_B (1024ull * 1024 * 1024)

/* A node's devices as gpuwatch_now() gives them: pct busy, used GiB of 80,
 * with pids (0-ended) on it. */
static void gpu_dev(struct gpu_now *g, unsigned index, unsigned pct, unsigned used,
		    const pid_t *pids)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	snprintf(g->name, sizeof(g->name), "Stand-in GPU %u", index);
	g->read = true;
	g->gpu_pct = pct;
	g->mem_pct = pct / 2;
	g->mem_used = used * GIB_B;
	g->mem_total = 80 * GIB_B;
	for (; pids && pids[g->npids]; g->npids++)
		g->pids[g->npids] = pids[g->npids];
	g->listed = g->npids;
}

/* Node node's reply with n devices (or, n < 0, note), written as
 * top --slurm-node writes it (its processes: pid 100 rank 2*node, 200 rank
 * 2*node+1, 300 of the job without a rank), read back as the front reads
 * it, into the model. */
static void gpu_reply(struct fixture *fx, int node, const struct gpu_now *g, int n,
		      const char *note)
{
	struct node_seen seen[3] = { { .pid = 100 }, { .pid = 200 }, { .pid = 300 } };
	struct node_procs np = { .job = "123", .node = "hnode1", .v = seen, .n = 3 };
	struct strbuf out = STRBUF_INIT;
	struct jdoc d = JDOC_INIT;
	struct top_gpu *tg;
	char err[256], why[256];
	struct json j;
	int k;

	for (int i = 0; i < 3; i++) {
		seen[i].id = (struct job_ident){ .id = "123", .in_job = true, .local_rank = -1,
						 .world_size = -1, .rank = i < 2 ? 2 * node + i : -1 };
	}
	json_init(&j, &out);
	json_obj_begin(&j);
	node_procs_json(&j, &np);
	node_gpu_json(&j, g, n, note, &np);
	json_obj_end(&j);
	ck_assert_int_eq(jdoc_parse(&d, out.buf, out.len, err, sizeof(err)), 0);
	k = node_reply_gpus(&d, &tg, why, sizeof(why));
	ck_assert_int_eq(k, n < 0 ? -1 : n);
	top_job_node_gpus(&fx->m, node, tg, k, why);
	top_gpus_free(tg, k);
	jdoc_release(&d);
	sb_release(&out);
}

/* The header's GPU lines, '\n'-joined. */
static const char *gpu_text(const struct top_model *m)
{
	static char buf[2048];
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < m->ngpu; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? "\n" : "", m->gpu[i]);
	return buf;
}

/* job_setup()'s job with --gpu: hnode1's GPU 0 runs rank 0 and a process
 * of someone else, its GPU 1 rank 1 and the job's rankless pid 300;
 * hnode2 has no NVML. */
static void gpu_setup(struct fixture *fx)
{
	const pid_t on0[] = { 100, 4242, 0 }, on1[] = { 200, 300, 0 };
	struct gpu_now *g = calloc(2, sizeof(*g));

	job_setup(fx);
	fx->m.job->gpu = true;
	top_job_gpu_lines(&fx->m);
	ck_assert_str_eq(gpu_text(&fx->m), "GPUs: none on the nodes that answer\n"
			 "hnode1: no GPU figures yet\nhnode2: no GPU figures yet");
	gpu_dev(&g[0], 0, 37, 2, on0);
	gpu_dev(&g[1], 1, 81, 3, on1);
	gpu_reply(fx, 0, g, 2, NULL);
	gpu_reply(fx, 1, NULL, -1, "NVML could not start: Driver Not Loaded");
	free(g);
	top_job_gpu_lines(&fx->m);
}

/* Each view's GPU lines: the job's, then T's node, rank and thread. */
START_TEST(test_job_gpu_views)
{
	static const char *const steps[][2] = {
		{ "node hnode1 (1 of 2)",
		  "GPU 0 (Stand-in GPU 0) on hnode1: 37% busy, memory 18% busy, 2.0 of 80.0 GiB, "
		  "rank 0, 1 other\n"
		  "GPU 1 (Stand-in GPU 1) on hnode1: 81% busy, memory 40% busy, 3.0 of 80.0 GiB, "
		  "rank 1, 1 process of the job" },
		{ "node hnode2 (2 of 2)",
		  "hnode2: no GPU figures: NVML could not start: Driver Not Loaded" },
		{ "rank 0 on hnode1 (1 of 4)",
		  "GPU 0 (Stand-in GPU 0) on hnode1: 37% busy, memory 18% busy, 2.0 of 80.0 GiB, "
		  "rank 0, 1 other" },
		{ "rank 1 on hnode1 (2 of 4)",
		  "GPU 1 (Stand-in GPU 1) on hnode1: 81% busy, memory 40% busy, 3.0 of 80.0 GiB, "
		  "rank 1, 1 process of the job" },
		{ "rank 2 on hnode2 (3 of 4)",
		  "hnode2: no GPU figures: NVML could not start: Driver Not Loaded" },
	};
	struct fixture fx;

	gpu_setup(&fx);
	ck_assert_str_eq(gpu_text(&fx.m),
			 "GPUs: 2 on 1 node, 59% busy on average, 5.0 of 160.0 GiB used; least "
			 "busy: GPU 0 on hnode1, 37% rank 0\n"
			 "hnode1: GPU 0 37% 2.0 GiB rank 0; GPU 1 81% 3.0 GiB rank 1\n"
			 "hnode2: no GPU figures: NVML could not start: Driver Not Loaded");
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		top_model_next_view(&fx.m);
		ck_assert_str_eq(describe(&fx.m), steps[i][0]);
		ck_assert_str_eq(gpu_text(&fx.m), steps[i][1]);
	}
	/* hnode1 stops answering: its figures are not shown as current. */
	top_job_node_gone(&fx.m, 0, false);
	for (int i = 0; i < 6; i++)
		top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "all ranks");
	ck_assert_str_eq(gpu_text(&fx.m), "GPUs: none on the nodes that answer\n"
			 "hnode1: no GPU figures (the node does not answer)\n"
			 "hnode2: no GPU figures: NVML could not start: Driver Not Loaded");
	top_model_free(&fx.m);
}
END_TEST

/* What a node sends is hostile: names made printable, figures out of
 * range dropped, a lost device, one with no reading and an old reading
 * said; the pids
 * NVML lists past what a reply carries count as the job's rankless. */
START_TEST(test_job_gpu_hostile)
{
	pid_t many[GPUWATCH_NOW_PIDS + 1];
	struct gpu_now *g = calloc(3, sizeof(*g));
	struct fixture fx;

	for (int i = 0; i < GPUWATCH_NOW_PIDS; i++)
		many[i] = 100;
	many[GPUWATCH_NOW_PIDS] = 0;
	job_setup(&fx);
	fx.m.job->gpu = true;
	gpu_dev(&g[0], 0, 50, 1, many);
	snprintf(g[0].name, sizeof(g[0].name), "evil\033[2J");
	gpu_dev(&g[1], 1, 50, 1, NULL);
	g[1].lost = true;
	snprintf(g[1].lost_why, sizeof(g[1].lost_why), "GPU is lost");
	gpu_dev(&g[2], 7, 0, 0, NULL);
	g[2].read = false;
	gpu_reply(&fx, 0, g, 3, NULL);
	top_model_next_view(&fx.m);
	ck_assert_str_eq(gpu_text(&fx.m),
			 "GPU 0 (evil\\x1b[2J) on hnode1: 50% busy, memory 25% busy, 1.0 of 80.0 "
			 "GiB, rank 0, 192 processes of the job\n"
			 "GPU 1 (Stand-in GPU 1) on hnode1: lost (GPU is lost), idle\n"
			 "GPU 7 (Stand-in GPU 7) on hnode1: no reading yet, idle");
	/* Not the node's own lie either: a figure past 100% is none. */
	g[0].gpu_pct = 250;
	g[0].npids = 0;
	gpu_reply(&fx, 0, g, 1, NULL);
	top_job_gpu_lines(&fx.m);
	ck_assert_str_eq(gpu_text(&fx.m), "GPU 0 (evil\\x1b[2J) on hnode1: no reading yet, "
			 "256 others");
	/* A driver that hangs: the node's reading gets old, and says so. */
	g[0].gpu_pct = 50;
	g[0].age_ns = 7000 * MS;
	gpu_reply(&fx, 0, g, 1, NULL);
	top_job_gpu_lines(&fx.m);
	ck_assert_str_eq(gpu_text(&fx.m), "GPU 0 (evil\\x1b[2J) on hnode1: 50% busy, memory 25% "
			 "busy, 1.0 of 80.0 GiB (no answer for 7 s), 256 others");
	for (int i = 0; i < 10; i++)
		top_model_next_view(&fx.m);
	ck_assert_str_eq(describe(&fx.m), "all ranks");
	ck_assert_str_eq(fx.m.gpu[1], "hnode1: GPU 0 50% 1.0 GiB (7 s old)");
	free(g);
	top_model_free(&fx.m);
}
END_TEST

/* Many nodes: the view of all ranks has as many lines as the header
 * allows, the last one saying T shows the rest; without --gpu, none. */
START_TEST(test_job_gpu_many_nodes)
{
	char *nodes[12], *want;
	struct gpu_now g;
	struct fixture fx;

	setup(&fx);
	for (int i = 0; i < 12; i++)
		nodes[i] = xasprintf("n%02d", i);
	top_job_init(&fx.m, "9", "n[00-11]", nodes, 12);
	top_job_gpu_lines(&fx.m);
	ck_assert_int_eq(fx.m.ngpu, 0);
	fx.m.job->gpu = true;
	for (int i = 0; i < 12; i++) {
		gpu_dev(&g, 0, (unsigned)(90 - i), 1, (const pid_t[]){ 100, 0 });
		top_job_node_seen(&fx.m, i, fx.t.now_ns, 1, 1, 1);
		gpu_reply(&fx, i, &g, 1, NULL);
	}
	top_job_gpu_lines(&fx.m);
	ck_assert_int_eq(fx.m.ngpu, TOP_GPU_LINES);
	ck_assert_str_eq(fx.m.gpu[0], "GPUs: 12 on 12 nodes, 84% busy on average, 12.0 of 960.0 "
			 "GiB used; least busy: GPU 0 on n11, 79% rank 22");
	ck_assert_str_eq(fx.m.gpu[1], "n00: GPU 0 90% 1.0 GiB rank 0");
	want = xasprintf("and %d more nodes: T shows each node's GPUs", 12 - (TOP_GPU_LINES - 2));
	ck_assert_str_eq(fx.m.gpu[TOP_GPU_LINES - 1], want);
	free(want);
	for (int i = 0; i < 12; i++)
		free(nodes[i]);
	top_model_free(&fx.m);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "rows", .tests = { test_rows_own_and_total, test_rows_recursion_counted_once,
		                     test_rows_only_functions, test_rows_by_function,
		                     test_rows_many_entries } },
		{ "sort and filter", .tests = { test_sort_orders, test_sort_ties_by_label,
		                                test_filter } },
		{ "views", .tests = { test_views_threads, test_views_processes,
		                      test_views_one_process } },
		{ "counting", .tests = { test_idle_toggle, test_reset, test_paused,
		                         test_interval_window, test_interval_figures,
		                         test_exited } },
		{ "hint", .tests = { test_hint_all_idle, test_hint_hung_after_running,
		                     test_hint_some_idle, test_hint_other_reasons,
		                     test_hint_snapshot, test_free_threaded } },
		{ "labels", .tests = { test_labels_printable, test_full_filenames } },
		{ "job", .tests = { test_job_rows, test_job_views, test_job_header,
		                    test_job_hint } },
		{ "job gpu", .tests = { test_job_gpu_views, test_job_gpu_hostile,
		                        test_job_gpu_many_nodes } },
	};

	return run_groups("top_model", groups, ARRAY_SIZE(groups), 0, 1);
}
