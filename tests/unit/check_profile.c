/* Tests for src/profile/profile.c: interning of frames, stacks and threads, runs,
 * display file names, categories and labels, settling renamed frames, and a
 * long recording's worth
 * of samples to show that memory follows the distinct stacks, not the
 * samples.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/util.h"
#include "sample_profile.h"
#include "suite.h"

#define MS 1000000ull

static struct pframe py(const char *name, const char *file, int line)
{
	return (struct pframe){ PF_PYTHON, (char *)name, (char *)file, line, 1 };
}

static uint32_t intern_py(struct profile *p, const char *name, const char *file,
			  int line)
{
	struct pframe f = py(name, file, line);

	return profile_frame(p, &f);
}

/* --- frames --------------------------------------------------------------- */

START_TEST(test_frame_same_and_different)
{
	struct profile p;
	struct pframe native = { PF_NATIVE, "work", "app.py", 10, -1 };
	uint32_t a, b, c, d, e, f;

	profile_init(&p, 100);
	a = intern_py(&p, "work", "app.py", 10);
	b = intern_py(&p, "work", "app.py", 10);
	ck_assert_uint_eq(a, b);
	ck_assert_uint_eq(p.nframes, 1);

	c = intern_py(&p, "work", "app.py", 11);
	ck_assert_uint_ne(a, c);
	/* By function: line -1 is a frame of its own. */
	d = intern_py(&p, "work", "app.py", -1);
	ck_assert_uint_ne(d, a);
	ck_assert_uint_ne(d, c);
	e = intern_py(&p, "work", "lib.py", 10);
	ck_assert_uint_ne(e, a);
	/* Same strings, other kind: not the same frame. */
	f = profile_frame(&p, &native);
	ck_assert_uint_ne(f, a);
	ck_assert_uint_eq(p.nframes, 5);

	/* Asking again finds each one. */
	ck_assert_uint_eq(intern_py(&p, "work", "app.py", 11), c);
	ck_assert_uint_eq(intern_py(&p, "work", "app.py", -1), d);
	ck_assert_uint_eq(profile_frame(&p, &native), f);
	ck_assert_uint_eq(p.nframes, 5);
	ck_assert_int_eq(p.frames[c].line, 11);
	ck_assert_int_eq(p.frames[f].kind, PF_NATIVE);
	profile_free(&p);
}
END_TEST

/* A root has no file; NULL and "" are not the same file. */
START_TEST(test_frame_null_strings)
{
	struct profile p;
	struct pframe root = { PF_THREAD, "thread 7 \"main\"", NULL, -1, -1 };
	struct pframe noname = { PF_PYTHON, NULL, "x.py", 1, 1 };
	uint32_t r, e, n;

	profile_init(&p, 100);
	r = profile_frame(&p, &root);
	ck_assert_ptr_null(p.frames[r].file);
	ck_assert_uint_eq(profile_frame(&p, &root), r);
	root.file = "";
	e = profile_frame(&p, &root);
	ck_assert_uint_ne(e, r);
	ck_assert_str_eq(p.frames[e].file, "");
	/* A frame without a name gets a placeholder, never a NULL name. */
	n = profile_frame(&p, &noname);
	ck_assert_str_eq(p.frames[n].name, "?");
	profile_free(&p);
}
END_TEST

/* The profile keeps its own copies: the sampler's buffers are reused. */
START_TEST(test_frame_strings_copied)
{
	struct profile p;
	char name[32], file[32];
	struct pframe f;
	uint32_t id, id2;

	profile_init(&p, 100);
	strcpy(name, "handler");
	strcpy(file, "/srv/app/views.py");
	f = py(name, file, 42);
	id = profile_frame(&p, &f);
	ck_assert_ptr_ne(p.frames[id].name, name);
	ck_assert_ptr_ne(p.frames[id].file, file);

	memset(name, 'X', sizeof(name) - 1);
	memset(file, 'Y', sizeof(file) - 1);
	name[sizeof(name) - 1] = file[sizeof(file) - 1] = 0;
	ck_assert_str_eq(p.frames[id].name, "handler");
	ck_assert_str_eq(p.frames[id].file, "/srv/app/views.py");
	ck_assert_int_eq(p.frames[id].line, 42);
	ck_assert_int_eq(p.frames[id].firstlineno, 1);

	/* The changed buffer is a different frame now, the old one is
	 * found from fresh strings. */
	id2 = profile_frame(&p, &f);
	ck_assert_uint_ne(id2, id);
	ck_assert_uint_eq(intern_py(&p, "handler", "/srv/app/views.py", 42), id);
	profile_free(&p);
}
END_TEST

/* Enough frames to grow the table many times: ids stay put. */
START_TEST(test_frame_growth)
{
	enum { N = 20000 };
	struct profile p;
	char name[32];
	static uint32_t ids[N];

	profile_init(&p, 100);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ids[i] = intern_py(&p, name, "m.py", i % 7);
		ck_assert_uint_eq(ids[i], (uint32_t)i);
	}
	for (int i = N - 1; i >= 0; i--) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_uint_eq(intern_py(&p, name, "m.py", i % 7), ids[i]);
		ck_assert_str_eq(p.frames[ids[i]].name, name);
	}
	ck_assert_uint_eq(p.nframes, N);
	/* Open addressing at most half full. */
	ck_assert_uint_ge(p.frame_index.size, 2 * N);
	profile_free(&p);
}
END_TEST

/* --- stacks --------------------------------------------------------------- */

START_TEST(test_stack_interning)
{
	struct profile p;
	uint32_t f[4], s1, s2, s3, s4, s5, s6;

	profile_init(&p, 100);
	f[0] = intern_py(&p, "main", "app.py", 1);
	f[1] = intern_py(&p, "run", "app.py", 5);
	f[2] = intern_py(&p, "work", "app.py", 9);
	f[3] = f[2];

	s1 = profile_stack(&p, f, 3);
	s2 = profile_stack(&p, (uint32_t[]){ f[0], f[1], f[2] }, 3);
	ck_assert_uint_eq(s1, s2);
	/* A prefix, an extension, another order: all different stacks. */
	s3 = profile_stack(&p, f, 2);
	s4 = profile_stack(&p, f, 4);
	s5 = profile_stack(&p, (uint32_t[]){ f[1], f[0], f[2] }, 3);
	ck_assert_uint_ne(s3, s1);
	ck_assert_uint_ne(s4, s1);
	ck_assert_uint_ne(s5, s1);
	ck_assert_uint_ne(s3, s4);
	/* Empty is a stack too, and only one. */
	s6 = profile_stack(&p, f, 0);
	ck_assert_uint_eq(profile_stack(&p, &f[2], 0), s6);
	ck_assert_uint_eq(p.nstacks, 5);

	/* Interning does not count, and copies the frames. */
	for (uint32_t i = 0; i < p.nstacks; i++)
		ck_assert_uint_eq(p.stacks[i].count, 0);
	ck_assert_uint_eq(p.samples, 0);
	f[2] = f[0];
	ck_assert_uint_eq(p.stacks[s1].depth, 3);
	ck_assert_uint_eq(p.stacks[s1].frames[2], intern_py(&p, "work", "app.py", 9));
	ck_assert_uint_eq(p.stacks[s4].depth, 4);
	profile_free(&p);
}
END_TEST

START_TEST(test_stack_counts)
{
	struct profile p;
	uint32_t t, f[3], a, b;

	profile_init(&p, 100);
	t = profile_thread(&p, 100, 100, "MainThread");
	f[0] = intern_py(&p, "main", "app.py", 1);
	f[1] = intern_py(&p, "a", "app.py", 2);
	f[2] = intern_py(&p, "b", "app.py", 3);

	profile_add(&p, t, f, 2, 0, 1);
	profile_add(&p, t, f, 2, 10 * MS, 1);
	profile_add(&p, t, (uint32_t[]){ f[0], f[2] }, 2, 20 * MS, 1);
	profile_add(&p, t, f, 2, 30 * MS, 5);
	a = profile_stack(&p, f, 2);
	b = profile_stack(&p, (uint32_t[]){ f[0], f[2] }, 2);
	ck_assert_uint_eq(p.nstacks, 2);
	ck_assert_uint_eq(p.stacks[a].count, 7);
	ck_assert_uint_eq(p.stacks[b].count, 1);
	ck_assert_uint_eq(p.samples, 8);

	/* A thread index the profile does not know: counted, no run. */
	profile_add(&p, 99, f, 2, 40 * MS, 1);
	ck_assert_uint_eq(p.stacks[a].count, 8);
	ck_assert_uint_eq(p.samples, 9);
	for (uint32_t i = 0; i < p.nruns; i++)
		ck_assert_uint_eq(p.runs[i].thread, t);
	profile_free(&p);
}
END_TEST

/* Many stacks: the hash chains are rebuilt as the table grows. */
START_TEST(test_stack_growth)
{
	enum { N = 50000 };
	struct profile p;
	uint32_t f[3];

	profile_init(&p, 100);
	for (uint32_t i = 0; i < N; i++) {
		f[0] = i / 1000;
		f[1] = i % 1000;
		f[2] = i;
		ck_assert_uint_eq(profile_stack(&p, f, 3), i);
	}
	for (uint32_t i = 0; i < N; i++) {
		f[0] = i / 1000;
		f[1] = i % 1000;
		f[2] = i;
		ck_assert_uint_eq(profile_stack(&p, f, 3), i);
	}
	ck_assert_uint_eq(p.nstacks, N);
	profile_free(&p);
}
END_TEST

/* --- threads -------------------------------------------------------------- */

START_TEST(test_threads)
{
	struct profile p;
	uint32_t a, b, c;

	profile_init(&p, 100);
	a = profile_thread(&p, 10, 10, NULL);
	ck_assert_ptr_null(p.threads[a].name);
	ck_assert_uint_eq(p.threads[a].last_run, UINT32_MAX);
	b = profile_thread(&p, 10, 11, "worker");
	c = profile_thread(&p, 20, 10, NULL);	/* same tid, other process */
	ck_assert_uint_ne(a, b);
	ck_assert_uint_ne(a, c);
	ck_assert_uint_ne(b, c);
	ck_assert_uint_eq(p.nthreads, 3);
	ck_assert_int_eq(p.threads[c].pid, 20);
	ck_assert_int_eq(p.threads[c].tid, 10);

	/* Found again, and named late: threading names a thread after it
	 * has started. */
	ck_assert_uint_eq(profile_thread(&p, 10, 10, "MainThread"), a);
	ck_assert_str_eq(p.threads[a].name, "MainThread");
	/* Renamed. */
	ck_assert_uint_eq(profile_thread(&p, 10, 11, "pool-1"), b);
	ck_assert_str_eq(p.threads[b].name, "pool-1");
	/* No name given is not a rename to nothing. */
	ck_assert_uint_eq(profile_thread(&p, 10, 11, NULL), b);
	ck_assert_str_eq(p.threads[b].name, "pool-1");
	ck_assert_uint_eq(p.nthreads, 3);
	profile_free(&p);
}
END_TEST

START_TEST(test_thread_name_copied)
{
	struct profile p;
	char name[16] = "worker-1";
	uint32_t t;

	profile_init(&p, 100);
	t = profile_thread(&p, 1, 2, name);
	strcpy(name, "clobbered");
	ck_assert_str_eq(p.threads[t].name, "worker-1");
	profile_free(&p);
}
END_TEST

/* Enough threads to grow the table: indexes stay put. */
START_TEST(test_thread_growth)
{
	struct profile p;
	char name[16];

	profile_init(&p, 100);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_uint_eq(profile_thread(&p, 5, 1000 + i, name), (uint32_t)i);
	}
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_uint_eq(profile_thread(&p, 5, 1000 + i, NULL), (uint32_t)i);
		ck_assert_str_eq(p.threads[i].name, name);
	}
	profile_free(&p);
}
END_TEST

/* --- runs ----------------------------------------------------------------- */

START_TEST(test_init_interval)
{
	struct profile p;

	profile_init(&p, 100);
	ck_assert_uint_eq(p.interval_ns, 10 * MS);
	ck_assert(p.rate_hz == 100);
	profile_init(&p, 250);
	ck_assert_uint_eq(p.interval_ns, 4 * MS);
	profile_init(&p, 3);
	ck_assert_uint_eq(p.interval_ns, 333333333);
	/* No rate: still a sensible interval, never 0 (runs divide by it). */
	profile_init(&p, 0);
	ck_assert_uint_eq(p.interval_ns, 10 * MS);
	ck_assert_uint_eq(p.nframes + p.nstacks + p.nthreads + p.nruns, 0);
	profile_free(&p);
}
END_TEST

START_TEST(test_runs_merge)
{
	struct profile p;
	uint32_t t, f[2], s;
	const struct prun *r;

	profile_init(&p, 100);	/* 10 ms */
	t = profile_thread(&p, 1, 1, NULL);
	f[0] = intern_py(&p, "main", "app.py", 1);
	f[1] = intern_py(&p, "work", "app.py", 2);
	for (int i = 0; i < 5; i++)
		profile_add(&p, t, f, 2, i * 10 * MS, 1);
	s = profile_stack(&p, f, 2);
	ck_assert_uint_eq(p.nruns, 1);
	r = &p.runs[0];
	ck_assert_uint_eq(r->thread, t);
	ck_assert_uint_eq(r->stack, s);
	ck_assert_uint_eq(r->start_ns, 0);
	/* A sample stands for the interval after it. */
	ck_assert_uint_eq(r->end_ns, 50 * MS);
	ck_assert_uint_eq(r->samples, 5);
	ck_assert_uint_eq(p.threads[t].last_run, 0);

	/* A late sample, but within half an interval: still the same run. */
	profile_add(&p, t, f, 2, 54 * MS, 1);
	ck_assert_uint_eq(p.nruns, 1);
	ck_assert_uint_eq(p.runs[0].end_ns, 64 * MS);
	ck_assert_uint_eq(p.runs[0].samples, 6);
	/* Rounds at random instants of their intervals are up to two
	 * intervals apart, and may be late: two and a half, still the same
	 * run. */
	profile_add(&p, t, f, 2, 79 * MS, 1);
	ck_assert_uint_eq(p.nruns, 1);
	ck_assert_uint_eq(p.runs[0].samples, 7);
	profile_free(&p);
}
END_TEST

START_TEST(test_runs_split)
{
	struct profile p;
	uint32_t t, f[2], a, b;

	profile_init(&p, 100);
	t = profile_thread(&p, 1, 1, NULL);
	f[0] = intern_py(&p, "main", "app.py", 1);
	f[1] = intern_py(&p, "work", "app.py", 2);
	a = profile_stack(&p, f, 2);
	b = profile_stack(&p, f, 1);

	profile_add(&p, t, f, 2, 0, 1);
	profile_add(&p, t, f, 2, 10 * MS, 1);
	/* Another stack: a new run. */
	profile_add(&p, t, f, 1, 20 * MS, 1);
	/* Back to the first stack: a third run, not the first extended. */
	profile_add(&p, t, f, 2, 30 * MS, 1);
	/* Missed samples (a gap of more than two and a half intervals,
	 * the most two rounds at random instants of their intervals and
	 * late leave): a fourth. */
	profile_add(&p, t, f, 2, 56 * MS, 1);
	/* More than one and a half intervals past the run's end: a fifth. */
	profile_add(&p, t, f, 2, 82 * MS, 1);
	ck_assert_uint_eq(p.nruns, 5);

	ck_assert_uint_eq(p.runs[0].stack, a);
	ck_assert_uint_eq(p.runs[0].start_ns, 0);
	ck_assert_uint_eq(p.runs[0].end_ns, 20 * MS);
	ck_assert_uint_eq(p.runs[0].samples, 2);
	ck_assert_uint_eq(p.runs[1].stack, b);
	ck_assert_uint_eq(p.runs[1].start_ns, 20 * MS);
	ck_assert_uint_eq(p.runs[1].end_ns, 30 * MS);
	ck_assert_uint_eq(p.runs[2].stack, a);
	ck_assert_uint_eq(p.runs[2].start_ns, 30 * MS);
	ck_assert_uint_eq(p.runs[2].end_ns, 40 * MS);
	ck_assert_uint_eq(p.runs[3].start_ns, 56 * MS);
	ck_assert_uint_eq(p.runs[4].start_ns, 82 * MS);
	ck_assert_uint_eq(p.runs[4].end_ns, 92 * MS);
	ck_assert_uint_eq(p.threads[t].last_run, 4);
	ck_assert_uint_eq(p.stacks[a].count, 5);
	ck_assert_uint_eq(p.stacks[b].count, 1);
	profile_free(&p);
}
END_TEST

START_TEST(test_runs_weight)
{
	struct profile p;
	uint32_t t, f[1];

	profile_init(&p, 100);
	t = profile_thread(&p, 1, 1, NULL);
	f[0] = intern_py(&p, "main", "app.py", 1);
	profile_add(&p, t, f, 1, 0, 3);
	profile_add(&p, t, f, 1, 10 * MS, 4);
	ck_assert_uint_eq(p.nruns, 1);
	ck_assert_uint_eq(p.runs[0].samples, 7);
	ck_assert_uint_eq(p.stacks[0].count, 7);
	ck_assert_uint_eq(p.samples, 7);
	profile_free(&p);
}
END_TEST

/* Each thread has its own runs, even with the same stack at the same time. */
START_TEST(test_runs_per_thread)
{
	struct profile p;
	uint32_t t1, t2, f[1];

	profile_init(&p, 100);
	t1 = profile_thread(&p, 1, 1, "a");
	t2 = profile_thread(&p, 1, 2, "b");
	f[0] = intern_py(&p, "spin", "app.py", 3);
	for (int i = 0; i < 4; i++) {
		profile_add(&p, t1, f, 1, i * 10 * MS, 1);
		profile_add(&p, t2, f, 1, i * 10 * MS, 1);
	}
	ck_assert_uint_eq(p.nruns, 2);
	ck_assert_uint_eq(p.runs[0].thread, t1);
	ck_assert_uint_eq(p.runs[1].thread, t2);
	ck_assert_uint_eq(p.runs[0].samples, 4);
	ck_assert_uint_eq(p.runs[1].samples, 4);
	ck_assert_uint_eq(p.threads[t1].last_run, 0);
	ck_assert_uint_eq(p.threads[t2].last_run, 1);
	ck_assert_uint_eq(p.stacks[0].count, 8);
	/* t2 goes quiet (idle, filtered) while t1 goes on: its next sample
	 * is a new run, t1's is not. */
	profile_add(&p, t1, f, 1, 40 * MS, 1);
	profile_add(&p, t1, f, 1, 50 * MS, 1);
	profile_add(&p, t1, f, 1, 60 * MS, 1);
	profile_add(&p, t2, f, 1, 60 * MS, 1);
	ck_assert_uint_eq(p.nruns, 3);
	ck_assert_uint_eq(p.runs[0].samples, 7);
	ck_assert_uint_eq(p.runs[2].thread, t2);
	ck_assert_uint_eq(p.runs[2].start_ns, 60 * MS);
	profile_free(&p);
}
END_TEST

/* Without a timeline, a long run of changing stacks keeps no runs (memory
 * grows with the distinct stacks only), and each stack still knows its
 * threads and their counts, for pprof's labels. */
START_TEST(test_no_timeline)
{
	struct profile p;
	uint32_t t1, t2, f[2];

	profile_init(&p, 1000);
	p.no_timeline = true;
	t1 = profile_thread(&p, 1, 1, "a");
	t2 = profile_thread(&p, 1, 2, "b");
	f[0] = intern_py(&p, "spin", "app.py", 3);
	f[1] = intern_py(&p, "step", "app.py", 7);
	for (int i = 0; i < 100000; i++) {
		profile_add(&p, t1, f, 1 + i % 2, i * MS, 1);
		if (i % 3 == 0)
			profile_add(&p, t2, f, 1, i * MS, 1);
	}
	ck_assert_uint_eq(p.nruns, 0);
	ck_assert_ptr_null(p.runs);
	ck_assert_uint_eq(p.nstacks, 2);
	/* One count per (stack, thread), the order of first sight. */
	ck_assert_uint_eq(p.nstack_threads, 3);
	ck_assert_uint_eq(p.stack_threads[0].stack, 0);
	ck_assert_uint_eq(p.stack_threads[0].thread, t1);
	ck_assert_uint_eq(p.stack_threads[0].count, 50000);
	ck_assert_uint_eq(p.stack_threads[1].stack, 0);
	ck_assert_uint_eq(p.stack_threads[1].thread, t2);
	ck_assert_uint_eq(p.stack_threads[1].count, 33334);
	ck_assert_uint_eq(p.stack_threads[2].stack, 1);
	ck_assert_uint_eq(p.stack_threads[2].thread, t1);
	ck_assert_uint_eq(p.stack_threads[2].count, 50000);
	ck_assert_uint_eq(p.stacks[0].count, 50000 + 33334);
	ck_assert_uint_eq(p.samples, 100000 + 33334);
	profile_free(&p);
}
END_TEST

/* --- file names, categories, labels --------------------------------------- */

struct file_case {
	const char *file;
	const char *shown;
};

START_TEST(test_display_file)
{
	static const struct file_case cases[] = {
		/* site-packages and dist-packages: the package path. */
		{ "/root/.pyenv/versions/3.12.1/lib/python3.12/site-packages/requests/api.py",
		  "requests/api.py" },
		{ "/usr/lib/python3/dist-packages/apt/cache.py", "apt/cache.py" },
		{ "/usr/local/lib/python3.11/dist-packages/numpy/core/numeric.py",
		  "numpy/core/numeric.py" },
		/* A venv inside a tree that has a site-packages of its own:
		 * the last one counts. */
		{ "/opt/site-packages/proj/.venv/lib/python3.12/site-packages/flask/app.py",
		  "flask/app.py" },
		/* The standard library: the path below lib/python3.X. */
		{ "/root/.pyenv/versions/3.12.1/lib/python3.12/threading.py", "threading.py" },
		{ "/usr/lib/python3.11/json/decoder.py", "json/decoder.py" },
		{ "/usr/lib/python3.14/concurrent/futures/thread.py",
		  "concurrent/futures/thread.py" },
		{ "/usr/lib/python3.13t/asyncio/events.py", "asyncio/events.py" },
		/* The program's own code: the base name. */
		{ "/home/me/proj/app/main.py", "main.py" },
		{ "/tmp/pystrobe-tests/burn.py", "burn.py" },
		{ "main.py", "main.py" },
		{ "./run.py", "run.py" },
		/* Not files at all. */
		{ "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>" },
		{ "<string>", "<string>" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		ck_assert_msg(!strcmp(profile_display_file(cases[i].file, false), cases[i].shown),
			      "%s: got \"%s\", want \"%s\"", cases[i].file,
			      profile_display_file(cases[i].file, false), cases[i].shown);
		/* --full-filenames: the path as the target names it. */
		ck_assert_str_eq(profile_display_file(cases[i].file, true), cases[i].file);
	}
	ck_assert_str_eq(profile_display_file(NULL, false), "");
	ck_assert_str_eq(profile_display_file(NULL, true), "");
}
END_TEST

struct cat_case {
	enum pframe_kind kind;
	const char *file;
	enum pframe_category cat;
};

START_TEST(test_category)
{
	static const struct cat_case cases[] = {
		{ PF_PYTHON, "/home/me/app.py", CAT_USER },
		{ PF_PYTHON, "app.py", CAT_USER },
		{ PF_PYTHON, NULL, CAT_USER },
		{ PF_PYTHON, "/usr/lib/python3.11/json/decoder.py", CAT_STDLIB },
		{ PF_PYTHON, "/root/.pyenv/versions/3.7.16/lib/python3.7/threading.py", CAT_STDLIB },
		{ PF_PYTHON, "<frozen importlib._bootstrap>", CAT_STDLIB },
		{ PF_PYTHON, "<frozen runpy>", CAT_STDLIB },
		{ PF_PYTHON, "/usr/lib/python3/dist-packages/apt/cache.py", CAT_SITE },
		/* site-packages lives below lib/python3.X: site wins. */
		{ PF_PYTHON, "/venv/lib/python3.12/site-packages/flask/app.py", CAT_SITE },
		{ PF_PYTHON, "<string>", CAT_USER },
		/* Kinds decide before files do. */
		{ PF_NATIVE, "/usr/lib/libc.so.6", CAT_NATIVE },
		{ PF_NATIVE, NULL, CAT_NATIVE },
		{ PF_PROCESS, NULL, CAT_ROOT },
		{ PF_THREAD, NULL, CAT_ROOT },
		{ PF_MARKER, NULL, CAT_ROOT },
		{ PF_THREAD, "/usr/lib/python3.11/x.py", CAT_ROOT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct pframe f = { cases[i].kind, "f", (char *)cases[i].file, 1, 1 };

		ck_assert_msg(pframe_category(&f) == cases[i].cat,
			      "case %zu (kind %d, %s): category %d, want %d", i,
			      cases[i].kind, cases[i].file ? cases[i].file : "NULL",
			      pframe_category(&f), cases[i].cat);
	}
}
END_TEST

struct label_case {
	struct pframe f;
	bool full;
	const char *label;
};

START_TEST(test_label)
{
	static const struct label_case cases[] = {
		{ { PF_PYTHON, "burn_a", "/tmp/x/burn.py", 12, 10 }, false, "burn_a (burn.py:12)" },
		{ { PF_PYTHON, "burn_a", "/tmp/x/burn.py", 12, 10 }, true, "burn_a (/tmp/x/burn.py:12)" },
		/* --function: no line. */
		{ { PF_PYTHON, "burn_a", "/tmp/x/burn.py", -1, 10 }, false, "burn_a (burn.py)" },
		{ { PF_PYTHON, "burn_a", "/tmp/x/burn.py", -1, 10 }, true, "burn_a (/tmp/x/burn.py)" },
		{ { PF_PYTHON, "<module>", "/tmp/x/burn.py", 0, 1 }, false, "<module> (burn.py:0)" },
		{ { PF_PYTHON, "Thread.run", "/usr/lib/python3.12/threading.py", 1010, 1000 }, false,
		  "Thread.run (threading.py:1010)" },
		{ { PF_PYTHON, "get", "/v/lib/python3.12/site-packages/requests/api.py", 73, 62 }, false,
		  "get (requests/api.py:73)" },
		{ { PF_PYTHON, "_find_and_load", "<frozen importlib._bootstrap>", 1360, 1349 }, false,
		  "_find_and_load (<frozen importlib._bootstrap>:1360)" },
		/* No file: the name alone. */
		{ { PF_PYTHON, "mystery", NULL, 5, 1 }, false, "mystery" },
		/* Roots and markers are their names. */
		{ { PF_THREAD, "thread 4242 \"MainThread\"", NULL, -1, -1 }, false,
		  "thread 4242 \"MainThread\"" },
		{ { PF_PROCESS, "process 77 \"python3 app.py\"", NULL, -1, -1 }, true,
		  "process 77 \"python3 app.py\"" },
		{ { PF_MARKER, "<truncated>", NULL, -1, -1 }, false, "<truncated>" },
		/* Native frames: source and line from debug information, else
		 * the object; an unnamed address says where it is already. */
		{ { PF_NATIVE, "strobe_descend", "/src/ext/strobe_ext.c", 45, -1 }, false,
		  "strobe_descend (strobe_ext.c:45)" },
		{ { PF_NATIVE, "qsort", "/usr/lib/x86_64-linux-gnu/libc.so.6", -1, -1 }, false,
		  "qsort (libc.so.6)" },
		{ { PF_NATIVE, "strobe_ext.so+0x1139", NULL, -1, -1 }, false,
		  "strobe_ext.so+0x1139" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *l = pframe_label(&cases[i].f, cases[i].full);

		ck_assert_msg(!strcmp(l, cases[i].label), "case %zu: got \"%s\", want \"%s\"",
			      i, l, cases[i].label);
		free(l);
	}
}
END_TEST

/* --- a long recording ----------------------------------------------------- */

static uint64_t rng_state;

static uint32_t rng(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

/* 10^6 samples of four threads over a few thousand distinct stacks, each
 * thread staying on a stack for a while as real ones do.  The profile must
 * hold exactly the distinct stacks with exactly the counts, its tables sized
 * by those and not by the samples, and one run per change of stack. */
START_TEST(test_stress)
{
	enum { NSTACKS = 3000, NFRAMES = 400, MAXDEPTH = 40, NTHREADS = 4,
	       SAMPLES = 1000000 };
	static uint32_t frames[NSTACKS][MAXDEPTH], depth[NSTACKS];
	static uint64_t want[NSTACKS];
	static uint32_t id_of[NSTACKS];
	uint32_t fids[NFRAMES], threads[NTHREADS], cur[NTHREADS];
	uint32_t prev[NTHREADS], distinct = 0, changes = 0;
	uint64_t total = 0;
	struct profile p;
	char name[32];

	rng_state = 12345;
	profile_init(&p, 1000);
	for (int i = 0; i < NFRAMES; i++) {
		snprintf(name, sizeof(name), "func_%d", i);
		fids[i] = intern_py(&p, name, "/srv/app/mod.py", i);
	}
	/* Stack i is a distinct sequence: its last frame encodes i. */
	for (int i = 0; i < NSTACKS; i++) {
		depth[i] = 2 + rng() % (MAXDEPTH - 2);
		for (uint32_t d = 0; d < depth[i] - 2; d++)
			frames[i][d] = fids[rng() % NFRAMES];
		frames[i][depth[i] - 2] = fids[i / NFRAMES];
		frames[i][depth[i] - 1] = fids[i % NFRAMES];
		id_of[i] = UINT32_MAX;
	}
	for (int t = 0; t < NTHREADS; t++) {
		threads[t] = profile_thread(&p, 1, 100 + t, NULL);
		cur[t] = rng() % NSTACKS;
		prev[t] = UINT32_MAX;
	}
	for (int n = 0; n < SAMPLES; n++) {
		int t = n % NTHREADS;
		uint64_t t_ns = (uint64_t)(n / NTHREADS) * p.interval_ns;
		uint32_t s;

		/* Stay on a stack for ~8 samples on average. */
		if (rng() % 8 == 0)
			cur[t] = rng() % NSTACKS;
		s = cur[t];
		if (s != prev[t])
			changes++;
		prev[t] = s;
		if (!want[s]++)
			distinct++;
		profile_add(&p, threads[t], frames[s], depth[s], t_ns, 1);
	}

	ck_assert_uint_eq(p.samples, SAMPLES);
	ck_assert_uint_eq(p.nstacks, distinct);
	ck_assert_uint_eq(p.nframes, NFRAMES);
	ck_assert_uint_eq(p.nthreads, NTHREADS);
	/* Memory follows the distinct stacks: the array at most doubles
	 * them, the index (at most half full) at most quadruples them. */
	ck_assert_uint_le(p.stacks_cap, 2 * distinct + 256);
	ck_assert_uint_le(p.stack_index.size, 4 * distinct + 64);
	/* Counts, stack by stack, and the stacks' frames intact. */
	for (int i = 0; i < NSTACKS; i++) {
		const struct pstack *st;

		if (!want[i])
			continue;
		id_of[i] = profile_stack(&p, frames[i], depth[i]);
		ck_assert_uint_lt(id_of[i], p.nstacks);
		st = &p.stacks[id_of[i]];
		ck_assert_uint_eq(st->count, want[i]);
		ck_assert_uint_eq(st->depth, depth[i]);
		ck_assert(!memcmp(st->frames, frames[i], depth[i] * sizeof(uint32_t)));
		total += st->count;
	}
	ck_assert_uint_eq(total, SAMPLES);
	ck_assert_uint_eq(p.nstacks, distinct);
	/* Samples come at every interval: runs end only on a change. */
	ck_assert_uint_eq(p.nruns, changes);
	total = 0;
	for (uint32_t i = 0; i < p.nruns; i++)
		total += p.runs[i].samples;
	ck_assert_uint_eq(total, SAMPLES);
	profile_free(&p);
	ck_assert_uint_eq(p.nstacks, 0);
	ck_assert_ptr_null(p.stacks);
}
END_TEST

/* --- settling renamed frames ------------------------------------------------ */

/* The id of a frame already in p; interning it must add nothing. */
static uint32_t existing(struct profile *p, enum pframe_kind kind, const char *name,
			 const char *file, int line)
{
	struct pframe f = { kind, (char *)name, (char *)file, line, line > 1 ? line - 1 : 1 };
	uint32_t n = p->nframes, id = profile_frame(p, &f);

	ck_assert_msg(p->nframes == n, "frame %s is not in the profile", name);
	return id;
}

static uint32_t named_frames(const struct profile *p, const char *name)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nframes; i++)
		n += !strcmp(p->frames[i].name, name);
	return n;
}

/* The stacks of renamed_profile() once settled: main's two stacks are one,
 * under the one frame both offsets were renamed to. */
START_TEST(test_settle_merges)
{
	bool timeline = _i;
	uint32_t proc, tmain, tload, main_f, f, load, merged, other;
	struct pframe old_name;
	struct profile p;

	renamed_profile(&p, timeline, true);
	ck_assert_uint_eq(p.nframes, 7);
	ck_assert_uint_eq(p.nstacks, 3);
	ck_assert_uint_eq(named_frames(&p, RENAMED_NAME), 2);
	profile_merge_renamed(&p);
	ck_assert_uint_eq(p.renamed, 0);

	/* Frame ids are dense again: the frames after the duplicate moved. */
	ck_assert_uint_eq(p.nframes, 6);
	ck_assert_uint_eq(named_frames(&p, RENAMED_NAME), 1);
	proc = existing(&p, PF_PROCESS, "process 4242: python3 app.py", NULL, -1);
	tmain = existing(&p, PF_THREAD, "thread 4242 \"MainThread\"", NULL, -1);
	main_f = existing(&p, PF_PYTHON, "main", "/home/u/app.py", 30);
	f = existing(&p, PF_NATIVE, RENAMED_NAME, RENAMED_FILE, -1);
	tload = existing(&p, PF_THREAD, "thread 4250 \"loader\"", NULL, -1);
	load = existing(&p, PF_PYTHON, "load", "/home/u/data.py", 77);
	ck_assert_uint_eq(load, 5);

	ck_assert_uint_eq(p.nstacks, 2);
	merged = profile_stack(&p, (uint32_t[]){ proc, tmain, main_f, f }, 4);
	other = profile_stack(&p, (uint32_t[]){ proc, tload, load }, 3);
	ck_assert_uint_eq(p.nstacks, 2);
	ck_assert_uint_eq(p.stacks[merged].count, 7);
	ck_assert_uint_eq(p.stacks[other].count, 2);
	ck_assert_uint_eq(p.samples, 9);

	if (timeline) {
		/* Runs keep their places; both of main's point at the merge. */
		ck_assert_uint_eq(p.nruns, 3);
		ck_assert_uint_eq(p.runs[0].stack, merged);
		ck_assert_uint_eq(p.runs[1].stack, merged);
		ck_assert_uint_eq(p.runs[2].stack, other);
		ck_assert_uint_eq(p.threads[0].last_run, 1);
		ck_assert_uint_eq(p.threads[1].last_run, 2);
		ck_assert_uint_eq(p.nstack_threads, 0);
	} else {
		ck_assert_uint_eq(p.nruns, 0);
		ck_assert_uint_eq(p.nstack_threads, 2);
		ck_assert_uint_eq(p.stack_threads[0].stack, merged);
		ck_assert_uint_eq(p.stack_threads[0].thread, 0);
		ck_assert_uint_eq(p.stack_threads[0].count, 7);
		ck_assert_uint_eq(p.stack_threads[1].stack, other);
		ck_assert_uint_eq(p.stack_threads[1].count, 2);
		/* The index was rebuilt: adding finds the merged entry. */
		profile_add_stack_thread(&p, merged, 0, 1);
		ck_assert_uint_eq(p.nstack_threads, 2);
		ck_assert_uint_eq(p.stack_threads[0].count, 8);
	}
	/* An old name is no frame now: it gets the next dense id. */
	old_name = (struct pframe){ PF_NATIVE, "lib.so+0x20", NULL, -1, -1 };
	ck_assert_uint_eq(profile_frame(&p, &old_name), 6);
	profile_free(&p);
}
END_TEST

/* Nothing renamed, or renames that made no two frames equal: nothing moves. */
START_TEST(test_settle_unrenamed)
{
	struct pframe g = { PF_NATIVE, "g", RENAMED_FILE, -1, -1 };
	struct profile p, q;

	renamed_profile(&p, true, false);
	renamed_profile(&q, true, false);
	if (_i)
		profile_frame_rename(&p, 3, &g), profile_frame_rename(&q, 3, &g);
	profile_merge_renamed(&p);
	ck_assert_uint_eq(p.renamed, 0);
	ck_assert_uint_eq(p.nframes, q.nframes);
	for (uint32_t i = 0; i < p.nframes; i++) {
		ck_assert_str_eq(p.frames[i].name, q.frames[i].name);
		ck_assert_int_eq(p.frames[i].kind, q.frames[i].kind);
	}
	ck_assert_uint_eq(p.nstacks, q.nstacks);
	for (uint32_t i = 0; i < p.nstacks; i++) {
		ck_assert_uint_eq(p.stacks[i].count, q.stacks[i].count);
		ck_assert_uint_eq(p.stacks[i].depth, q.stacks[i].depth);
		ck_assert_mem_eq(p.stacks[i].frames, q.stacks[i].frames,
				 p.stacks[i].depth * sizeof(uint32_t));
	}
	ck_assert_uint_eq(p.nruns, q.nruns);
	for (uint32_t i = 0; i < p.nruns; i++) {
		ck_assert_uint_eq(p.runs[i].stack, q.runs[i].stack);
		ck_assert_uint_eq(p.runs[i].samples, q.runs[i].samples);
	}
	profile_free(&p);
	profile_free(&q);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "frames", .tests = { test_frame_same_and_different, test_frame_null_strings,
		                       test_frame_strings_copied, test_frame_growth } },
		{ "stacks", .tests = { test_stack_interning, test_stack_counts,
		                       test_stack_growth } },
		{ "threads", .tests = { test_threads, test_thread_name_copied,
		                        test_thread_growth } },
		{ "runs", .tests = { test_init_interval, test_runs_merge, test_runs_split,
		                     test_runs_weight, test_runs_per_thread, test_no_timeline } },
		{ "names", .tests = { test_display_file, test_category, test_label } },
		{ "settle", .lo = 0, .hi = 2, .tests = { test_settle_merges,
		                                         test_settle_unrenamed } },
		/* Under ASan/valgrind a million samples take a while. */
		{ "stress", .timeout = 300, .tests = { test_stress } },
	};

	return run_groups("profile", groups, ARRAY_SIZE(groups), 0, 1);
}
