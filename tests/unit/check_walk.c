/* Tests for the interpreter walk (pystack.h: src/python/pythread.c,
 * pyframe.c, pycode.c) on synthetic memory.
 *
 * Each test runs once per layout in the table (3.7 to 3.14).  A "scene" is a
 * small interpreter built by tests/lib/fakepy.c: three threads, one of them
 * idle, with stacks whose names, files and lines are known.  Tests break one
 * thing in it at a time -- a pointer, a chain, a length, a type -- and check
 * that the walker reports that thread's problem and carries on with the
 * rest, and that it never reads without bound.  A fuzz case then throws
 * random bytes at the frames and code objects.
 *
 * The "regressions" case holds tests for bugs these tests found in the
 * readers; each comment says what was wrong.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "python/locate.h"
#include "process/mem.h"
#include "python/pystack.h"
#include "util/util.h"
#include "suite.h"

/* ---- the scene ----------------------------------------------------------- */

enum { C_MAIN, C_FOO, C_BAR, C_RUN, C_WAIT, NCODES };
enum { F_MAIN, F_FOO, F_BAR, F_RUN, F_WAIT, NFRAMES };

static const int main_lines[] = { 1, 1, 5, 7, 30 };
/* Jumps past what one table byte holds, both ways. */
static const int foo_lines[] = { 10, 11, 12, 200, 13 };
static const int bar_lines[] = { 400, 401, 150, 151 };
static const int run_lines[] = { 50, 51, 52 };
static const int wait_lines[] = { 300, 320, 1000 };

static const struct fp_code_spec code_specs[NCODES] = {
	[C_MAIN] = { .name = "<module>", .filename = "/app/main.py", .firstlineno = 1,
		     .lines = main_lines, .ninstr = 5 },
	[C_FOO] = { .name = "foo", .qualname = "Service.foo", .filename = "/app/service.py",
		    .firstlineno = 10, .lines = foo_lines, .ninstr = 5 },
	[C_BAR] = { .name = "bar", .qualname = "outer.<locals>.bar",
		    .filename = "/srv/donn\xc3\xa9" "es/\xe6\x97\xa5.py", .firstlineno = 400,
		    .lines = bar_lines, .ninstr = 4 },
	[C_RUN] = { .name = "run", .qualname = "Worker.run", .filename = "/app/worker.py",
		    .firstlineno = 50, .lines = run_lines, .ninstr = 3 },
	[C_WAIT] = { .name = "wait", .qualname = "Condition.wait",
		     .filename = "/usr/lib/python3/threading.py", .firstlineno = 300,
		     .lines = wait_lines, .ninstr = 3 },
};

/* Which instruction each frame is on, and so its line. */
static const int frame_instr[NFRAMES] = {
	[F_MAIN] = 3, [F_FOO] = 3, [F_BAR] = 2, [F_RUN] = 1, [F_WAIT] = 2,
};

static const uint64_t idents[3] = { 0x7f0000001000, 0x7f0000002000, 0x7f0000003000 };
static const uint32_t tids[3] = { 100, 101, 102 };

struct scene {
	struct fakepy *fp;
	uint64_t code[NCODES];
	uint64_t frame[NFRAMES];
	uint64_t ts[3];
	/* Results of the last walk. */
	char err[256];
	unsigned long reads;
};

/* Thread 0 runs <module> -> foo -> bar, thread 1 Worker.run -> wait and
 * holds the GIL, thread 2 has no Python frame. */
static void scene_init(struct scene *sc, int minor)
{
	const struct py_layout *L = layout_for_minor(minor);
	struct fakepy *fp;

	ck_assert_msg(L, "no layout for 3.%d", minor);
	memset(sc, 0, sizeof(*sc));
	fp = sc->fp = fp_new(L);
	for (int i = 0; i < NCODES; i++)
		sc->code[i] = fp_code(fp, &code_specs[i]);
	sc->frame[F_MAIN] = fp_frame(fp, sc->code[C_MAIN], frame_instr[F_MAIN], 0);
	sc->frame[F_FOO] = fp_frame(fp, sc->code[C_FOO], frame_instr[F_FOO], sc->frame[F_MAIN]);
	sc->frame[F_BAR] = fp_frame(fp, sc->code[C_BAR], frame_instr[F_BAR], sc->frame[F_FOO]);
	sc->frame[F_RUN] = fp_frame(fp, sc->code[C_RUN], frame_instr[F_RUN], 0);
	sc->frame[F_WAIT] = fp_frame(fp, sc->code[C_WAIT], frame_instr[F_WAIT], sc->frame[F_RUN]);
	sc->ts[0] = fp_thread(fp, sc->frame[F_BAR], idents[0], tids[0]);
	sc->ts[1] = fp_thread(fp, sc->frame[F_WAIT], idents[1], tids[1]);
	sc->ts[2] = fp_thread(fp, 0, idents[2], tids[2]);
	fp_gil(fp, sc->ts[1], true);
}

/* Make frame f thread ti's current frame, through the _PyCFrame on
 * 3.11/3.12. */
static void set_current_frame(struct scene *sc, int ti, uint64_t f)
{
	const struct py_layout *L = sc->fp->L;
	uint64_t at = sc->ts[ti] + L->tstate.frame;

	if (L->tstate.cframe_frame != NONE)
		at = fp_r64(sc->fp, at) + L->tstate.cframe_frame;
	fp_w64(sc->fp, at, f);
}

static void scene_done(struct scene *sc)
{
	fp_free(sc->fp);
}

static int walk_opts(struct scene *sc, const struct walk_opts *o, struct py_thread **t)
{
	struct pyinterp pi;
	struct mem *m = fp_mem(sc->fp);
	int n;

	fp_pyinterp(sc->fp, &pi);
	sc->err[0] = 0;
	n = pystack_threads(m, &pi, o, t, sc->err, sizeof(sc->err));
	sc->reads = mem_fake_reads(m);
	mem_close(m);
	return n;
}

static int walk(struct scene *sc, struct py_thread **t)
{
	static const struct walk_opts o = { 0 };

	return walk_opts(sc, &o, t);
}

/* What the walker calls a function: the qualified name where there is one. */
static const char *fname(const struct scene *sc, int c)
{
	const struct fp_code_spec *s = &code_specs[c];

	return sc->fp->L->minor >= 11 && s->qualname ? s->qualname : s->name;
}

static int code_line(int c, int instr)
{
	return code_specs[c].lines[instr];
}

static void check_frame(const struct scene *sc, const struct py_thread *t, int i, int c,
			int line)
{
	const struct py_frame *f;

	ck_assert_msg(i < t->nframes, "3.%d: thread %#llx has %d frames, want frame %d",
		      sc->fp->L->minor, (unsigned long long)t->tstate, t->nframes, i);
	f = &t->frames[i];
	ck_assert_uint_eq(f->code, sc->code[c]);
	ck_assert_str_eq(f->function, fname(sc, c));
	ck_assert_str_eq(f->file, code_specs[c].filename);
	ck_assert_msg(f->line == line, "3.%d: %s at line %d, want %d", sc->fp->L->minor,
		      f->function, f->line, line);
}

/* Frame i of thread t is the scene's frame fr, on its usual instruction. */
static void check_scene_frame(const struct scene *sc, const struct py_thread *t, int i,
			      int fr)
{
	static const int code_of[NFRAMES] = {
		[F_MAIN] = C_MAIN, [F_FOO] = C_FOO, [F_BAR] = C_BAR,
		[F_RUN] = C_RUN, [F_WAIT] = C_WAIT,
	};

	check_frame(sc, t, i, code_of[fr], code_line(code_of[fr], frame_instr[fr]));
}

static void check_thread0(const struct scene *sc, const struct py_thread *t)
{
	ck_assert_ptr_null(t->error);
	ck_assert_int_eq(t->nframes, 3);
	check_scene_frame(sc, t, 0, F_BAR);
	check_scene_frame(sc, t, 1, F_FOO);
	check_scene_frame(sc, t, 2, F_MAIN);
}

static void check_thread1(const struct scene *sc, const struct py_thread *t)
{
	ck_assert_ptr_null(t->error);
	ck_assert_int_eq(t->nframes, 2);
	check_scene_frame(sc, t, 0, F_WAIT);
	check_scene_frame(sc, t, 1, F_RUN);
}

static void check_thread2(const struct py_thread *t)
{
	ck_assert_ptr_null(t->error);
	ck_assert_int_eq(t->nframes, 0);
	ck_assert(!t->truncated);
}

static void check_error(const struct py_thread *t, const char *what)
{
	ck_assert_msg(t->error, "thread %#llx: no error, want \"%s\"",
		      (unsigned long long)t->tstate, what);
	ck_assert_msg(strstr(t->error, what), "thread error \"%s\", want \"%s\"", t->error, what);
}

/* ---- the normal case ----------------------------------------------------- */

START_TEST(test_three_threads)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	n = walk(&sc, &t);
	ck_assert_msg(n == 3, "3.%d: %d threads (%s)", _i, n, sc.err);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(t[i].tstate, sc.ts[i]);
		ck_assert_uint_eq(t[i].ident, idents[i]);
		/* The OS thread id is in the thread state from 3.11. */
		ck_assert_int_eq(t[i].tid, _i >= 11 ? (pid_t)tids[i] : 0);
		ck_assert(!t[i].truncated);
		ck_assert_ptr_null(t[i].name);
		ck_assert_int_eq(t[i].gil, i == 1);
	}
	check_thread0(&sc, &t[0]);
	check_thread1(&sc, &t[1]);
	check_thread2(&t[2]);
	ck_assert_ptr_null(t[0].frames[0].locals);
	ck_assert_int_eq(t[0].frames[0].nlocals, 0);
	/* A few reads per frame and thread, nothing more. */
	ck_assert_uint_lt(sc.reads, 200);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* Thread states of threads being started, not yet bound by them: one with
 * ident 0 (3.12+), one with its creator's ident (before 3.12), neither with
 * a frame.  Neither is a thread: the three threads are listed, nothing
 * more.  Thread 2, without a frame but with an ident of its own, stays. */
START_TEST(test_unbound_thread_states)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	fp_thread(sc.fp, 0, 0, 0);
	fp_thread(sc.fp, 0, idents[0], tids[0]);
	n = walk(&sc, &t);
	ck_assert_msg(n == 3, "3.%d: %d threads (%s)", _i, n, sc.err);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(t[i].tstate, sc.ts[i]);
	check_thread0(&sc, &t[0]);
	check_thread2(&t[2]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

START_TEST(test_gil)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	/* The last holder is remembered after release: not held. */
	fp_gil(sc.fp, sc.ts[1], false);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++)
		ck_assert(!t[i].gil);
	py_threads_free(t, n);

	fp_gil(sc.fp, sc.ts[2], true);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert(!t[0].gil && !t[1].gil && t[2].gil);
	py_threads_free(t, n);

	/* A holder that is no thread of ours marks none. */
	fp_gil(sc.fp, FP_UNMAPPED, true);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++)
		ck_assert(!t[i].gil);
	py_threads_free(t, n);

	/* 3.12+: the GIL state is behind a pointer, which may be bad. */
	if (sc.fp->L->interp.gil_ptr != NONE) {
		fp_gil(sc.fp, sc.ts[0], true);
		fp_w64(sc.fp, sc.fp->interp + sc.fp->L->interp.gil_ptr, FP_UNMAPPED);
		n = walk(&sc, &t);
		ck_assert_int_eq(n, 3);
		for (int i = 0; i < 3; i++)
			ck_assert(!t[i].gil);
		check_thread0(&sc, &t[0]);
		py_threads_free(t, n);
		fp_w64(sc.fp, sc.fp->interp + sc.fp->L->interp.gil_ptr, 0);
		n = walk(&sc, &t);
		ck_assert_int_eq(n, 3);
		ck_assert(!t[0].gil);
		py_threads_free(t, n);
	}
	scene_done(&sc);
}
END_TEST

/* ---- broken chains ------------------------------------------------------- */

START_TEST(test_corrupt_back)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	fp_w64(sc.fp, sc.frame[F_FOO] + L->frame.back, FP_UNMAPPED);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	/* What was read before the bad pointer is kept. */
	ck_assert_int_eq(t[0].nframes, 2);
	check_scene_frame(&sc, &t[0], 0, F_BAR);
	check_scene_frame(&sc, &t[0], 1, F_FOO);
	check_error(&t[0], "cannot read a frame");
	check_thread1(&sc, &t[1]);
	check_thread2(&t[2]);
	py_threads_free(t, n);

	/* A thread whose current frame is unreadable from the start. */
	set_current_frame(&sc, 1, FP_UNMAPPED + 8);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[1].nframes, 0);
	check_error(&t[1], "cannot read a frame");
	check_thread2(&t[2]);
	py_threads_free(t, n);

	/* 3.11/3.12: the _PyCFrame itself unreadable. */
	if (L->tstate.cframe_frame != NONE) {
		fp_w64(sc.fp, sc.ts[1] + L->tstate.frame, FP_UNMAPPED);
		n = walk(&sc, &t);
		ck_assert_int_eq(n, 3);
		check_error(&t[1], "cannot read the current frame");
		check_thread2(&t[2]);
		py_threads_free(t, n);
	}
	scene_done(&sc);
}
END_TEST

/* A frame chain that loops ends with an error (or a cut), having read only
 * a bounded amount; the frames before the loop are kept. */
static void check_loop(struct scene *sc, const struct walk_opts *o, int thread)
{
	struct py_thread *t;
	int n = walk_opts(sc, o, &t);
	int max = o->max_depth ? o->max_depth : PYSTACK_MAX_DEPTH;

	ck_assert_int_eq(n, 3);
	ck_assert_msg(t[thread].error || t[thread].truncated, "3.%d: a loop went unnoticed",
		      sc->fp->L->minor);
	if (t[thread].error)
		ck_assert_msg(strstr(t[thread].error, "loops"), "error: %s", t[thread].error);
	ck_assert_int_le(t[thread].nframes, max);
	/* Brent's algorithm notices within a few laps of a short loop. */
	ck_assert_int_le(t[thread].nframes, 16);
	ck_assert_uint_lt(sc->reads, 1000);
	check_thread2(&t[2]);
	py_threads_free(t, n);
}

START_TEST(test_frame_cycle)
{
	static const struct walk_opts deflt = { 0 }, shallow = { .max_depth = 2 };
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	/* bar -> foo -> main -> bar ... */
	fp_w64(sc.fp, sc.frame[F_MAIN] + L->frame.back, sc.frame[F_BAR]);
	check_loop(&sc, &deflt, 0);
	n = walk(&sc, &t);
	check_scene_frame(&sc, &t[0], 0, F_BAR);
	check_scene_frame(&sc, &t[0], 1, F_FOO);
	check_scene_frame(&sc, &t[0], 2, F_MAIN);
	check_thread1(&sc, &t[1]);
	py_threads_free(t, n);
	check_loop(&sc, &shallow, 0);

	/* A frame that is its own caller. */
	fp_w64(sc.fp, sc.frame[F_WAIT] + L->frame.back, sc.frame[F_WAIT]);
	check_loop(&sc, &deflt, 1);
	n = walk(&sc, &t);
	ck_assert_int_ge(t[1].nframes, 1);
	check_scene_frame(&sc, &t[1], 0, F_WAIT);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

START_TEST(test_thread_cycle)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	fp_w64(sc.fp, sc.ts[2] + L->tstate.next, sc.ts[0]);
	n = walk(&sc, &t);
	/* It ends, after a bounded number of reads (that each thread is
	 * listed once is test_thread_cycle_once). */
	ck_assert_int_ge(n, 3);
	ck_assert_int_le(n, 8);
	ck_assert_uint_lt(sc.reads, 1000);
	for (int i = 0; i < n; i++)
		ck_assert_uint_eq(t[i].tstate, sc.ts[i % 3]);
	check_thread0(&sc, &t[0]);
	check_thread1(&sc, &t[1]);
	py_threads_free(t, n);

	/* A thread state that is its own successor. */
	fp_w64(sc.fp, sc.ts[0] + L->tstate.next, sc.ts[0]);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 1);
	check_thread0(&sc, &t[0]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- depth --------------------------------------------------------------- */

enum { DEEP = 10000, DEEP_LINES = 10 };
static const int deep_lines[DEEP_LINES] = { 20, 21, 22, 23, 24, 25, 26, 27, 28, 29 };

/* Thread 2 gets a chain of `depth` frames of one function, frame i (from
 * the outermost) on instruction i % DEEP_LINES. */
static uint64_t deep_chain(struct scene *sc, int depth)
{
	static const struct fp_code_spec spec = {
		.name = "recurse", .filename = "/app/deep.py", .firstlineno = 20,
		.lines = deep_lines, .ninstr = DEEP_LINES,
	};
	uint64_t code = fp_code(sc->fp, &spec), f = 0;

	for (int i = 0; i < depth; i++)
		f = fp_frame(sc->fp, code, i % DEEP_LINES, f);
	set_current_frame(sc, 2, f);
	return code;
}

static void check_deep(struct scene *sc, int max_depth, int depth, bool truncated)
{
	struct walk_opts o = { .max_depth = max_depth };
	int max = max_depth ? max_depth : PYSTACK_MAX_DEPTH;
	int want = depth < max ? depth : max;
	struct py_thread *t;
	int n = walk_opts(sc, &o, &t);

	ck_assert_int_eq(n, 3);
	ck_assert_ptr_null(t[2].error);
	ck_assert_int_eq(t[2].nframes, want);
	ck_assert_int_eq(t[2].truncated, truncated);
	for (int i = 0; i < t[2].nframes; i += 97) {
		int instr = (depth - 1 - i) % DEEP_LINES;

		ck_assert_str_eq(t[2].frames[i].function, "recurse");
		ck_assert_int_eq(t[2].frames[i].line, deep_lines[instr]);
	}
	check_thread0(sc, &t[0]);
	/* Per frame: the frame, the code object, two names, the line table;
	 * a frame past the limit costs nothing. */
	ck_assert_msg(sc->reads < 200 + 16ul * want, "3.%d: %lu reads for %d frames",
		      sc->fp->L->minor, sc->reads, want);
	py_threads_free(t, n);
}

START_TEST(test_deep)
{
	struct scene sc;

	scene_init(&sc, _i);
	deep_chain(&sc, DEEP);
	check_deep(&sc, 100, DEEP, true);
	check_deep(&sc, 0, DEEP, true);
	check_deep(&sc, 9999, DEEP, true);
	check_deep(&sc, 10000, DEEP, false);
	scene_done(&sc);

	/* Exactly the limit is not a cut. */
	scene_init(&sc, _i);
	deep_chain(&sc, 100);
	check_deep(&sc, 100, 100, false);
	check_deep(&sc, 99, 100, true);
	scene_done(&sc);
}
END_TEST

/* ---- bad code objects and names ------------------------------------------ */

START_TEST(test_bad_code_type)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	uint64_t func, fake_code_type, imposter;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	/* foo's frame points at a function object, not its code. */
	func = fp_object(sc.fp, FP_OBJ, sc.fp->t.function, 64);
	fp_frame_set_code(sc.fp, sc.frame[F_FOO], func, 1);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[0].nframes, 1);
	check_scene_frame(&sc, &t[0], 0, F_BAR);
	check_error(&t[0], "cannot read a code object");
	check_thread1(&sc, &t[1]);
	py_threads_free(t, n);

	/* Before any real code object is seen, too. */
	fp_frame_set_code(sc.fp, sc.frame[F_BAR], func, 1);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[0].nframes, 0);
	check_error(&t[0], "cannot read a code object");
	check_thread1(&sc, &t[1]);
	py_threads_free(t, n);

	/* A second type that calls itself "code" is not PyCode_Type. */
	fp_frame_set_code(sc.fp, sc.frame[F_BAR], sc.code[C_BAR], frame_instr[F_BAR]);
	fp_frame_set_code(sc.fp, sc.frame[F_FOO], sc.code[C_FOO], frame_instr[F_FOO]);
	fake_code_type = fp_type(sc.fp, "code");
	imposter = fp_code(sc.fp, &code_specs[C_WAIT]);
	fp_w64(sc.fp, imposter + L->obj.ob_type, fake_code_type);
	fp_frame_set_code(sc.fp, sc.frame[F_WAIT], imposter, 1);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	check_thread0(&sc, &t[0]);
	ck_assert_int_eq(t[1].nframes, 0);
	check_error(&t[1], "cannot read a code object");
	py_threads_free(t, n);

	/* And a code pointer into nowhere. */
	fp_frame_set_code(sc.fp, sc.frame[F_WAIT], FP_UNMAPPED, 1);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	check_error(&t[1], "cannot read a code object");
	check_thread0(&sc, &t[0]);
	check_thread2(&t[2]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

START_TEST(test_absurd_names)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	uint64_t name, file, data;
	uint32_t cps[1] = { 'a' };
	char *want;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	/* bar's name claims 2^40 characters. */
	name = fp_code_field(sc.fp, sc.code[C_BAR],
			     L->code.qualname != NONE ? L->code.qualname : L->code.name);
	fp_str_set_length(sc.fp, name, 1ull << 40);
	/* wait's file claims 2^29 and has 8 KiB of them: cut, not read. */
	file = fp_str_cps(sc.fp, cps, 1, 1, false, false);
	data = fp_alloc(sc.fp, FP_OBJ, 8192);
	memset(fp_ptr(sc.fp, data, 8192), 'a', 8192);
	fp_w64(sc.fp, fp_str_data_slot(sc.fp, file), data);
	fp_str_set_length(sc.fp, file, 1u << 29);
	fp_w64(sc.fp, sc.code[C_WAIT] + L->code.filename, file);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[0].nframes, 0);
	check_error(&t[0], "cannot read a code object");
	ck_assert_ptr_null(t[1].error);
	ck_assert_int_eq(t[1].nframes, 2);
	want = malloc(4096 + 4);
	memset(want, 'a', 4096);
	strcpy(want + 4096, "...");
	ck_assert_str_eq(t[1].frames[0].file, want);
	free(want);
	ck_assert_uint_lt(sc.reads, 300);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- the interpreter itself ----------------------------------------------- */

static void check_bad_state(struct scene *sc, const char *what)
{
	struct py_thread *t = (struct py_thread *)1;
	int n = walk(sc, &t);

	ck_assert_msg(is_fail(n, EXIT_BAD_STATE), "3.%d: %d, want status_fail(EXIT_BAD_STATE) (%s)",
		      sc->fp->L->minor, n, sc->err);
	ck_assert_ptr_null(t);
	ck_assert_msg(sc->err[0], "no reason given");
	if (what)
		ck_assert_msg(strstr(sc->err, what), "reason \"%s\", want \"%s\"", sc->err, what);
}

START_TEST(test_no_interp)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;

	scene_init(&sc, _i);
	L = sc.fp->L;
	fp_w64(sc.fp, sc.fp->runtime + L->runtime.interpreters_head, 0);
	check_bad_state(&sc, "not initialised");

	fp_w64(sc.fp, sc.fp->runtime + L->runtime.interpreters_head, FP_UNMAPPED);
	check_bad_state(&sc, "interpreter state");

	fp_w64(sc.fp, sc.fp->runtime + L->runtime.interpreters_head, sc.fp->interp);
	fp_w64(sc.fp, sc.fp->interp + L->interp.threads_head, FP_UNMAPPED);
	check_bad_state(&sc, "thread state");

	/* No threads at all is not an error. */
	fp_w64(sc.fp, sc.fp->interp + L->interp.threads_head, 0);
	ck_assert_int_eq(walk(&sc, &t), 0);
	ck_assert_ptr_null(t);
	scene_done(&sc);
}
END_TEST

START_TEST(test_interp_mismatch)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	fp_w64(sc.fp, sc.ts[0] + L->tstate.interp, sc.fp->interp + 8);
	check_bad_state(&sc, "does not belong");

	/* Later in the list: the walk stops there, keeping what it has. */
	fp_w64(sc.fp, sc.ts[0] + L->tstate.interp, sc.fp->interp);
	fp_w64(sc.fp, sc.ts[1] + L->tstate.interp, 0);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 1);
	check_thread0(&sc, &t[0]);
	py_threads_free(t, n);

	/* A next pointer into nowhere after the first thread, likewise. */
	fp_w64(sc.fp, sc.ts[0] + L->tstate.next, FP_UNMAPPED);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 1);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- subinterpreters ----------------------------------------------------- */

#define X_IDENT 0x7f0000009000ull
#define X_TID 109u
#define SUB_ID 5

/* Frames of codes[0..n), outermost first, called from an eval call whose
 * anchor on the C stack comes next in address order: the _PyCFrame that
 * fp_thread_in() makes on 3.11/3.12, an entry shim frame made here on
 * 3.13+.  Make the inner part of a stack first: the C stack grows down.
 * Returns the innermost frame. */
static uint64_t part_stack(struct scene *sc, const int *codes, int n)
{
	const struct py_layout *L = sc->fp->L;
	uint64_t back = 0;

	if (L->frames == FRAMES_INTERP && L->tstate.cframe_frame == NONE) {
		struct fp_frame_spec s = { .code = sc->fp->none, .instr = 0,
					   .owner = fp_owner_shim(sc->fp) };

		back = fp_frame_ex(sc->fp, &s);
	}
	for (int i = 0; i < n; i++)
		back = fp_frame(sc->fp, sc->code[codes[i]], 0, back);
	return back;
}

/* Frame i of t runs code c (at its first instruction) in interpreter id. */
static void check_part_frame(const struct scene *sc, const struct py_thread *t, int i, int c,
			     int64_t id)
{
	check_frame(sc, t, i, c, code_line(c, 0));
	ck_assert_msg(t->frames[i].interp == id, "3.%d: frame %d in interpreter %lld, want %lld",
		      sc->fp->L->minor, i, (long long)t->frames[i].interp, (long long)id);
}

static const int sub_codes[] = { C_FOO, C_BAR };	/* foo -> bar in the sub */
static const int main_codes[] = { C_MAIN, C_RUN };	/* <module> -> run (exec) */

/* One OS thread, X, runs Worker.run in the main interpreter, which runs
 * foo -> bar in subinterpreter 5; the scene's three threads stay as they
 * are.  inner_sub: the subinterpreter's part is the inner one on the C
 * stack (as it always is in life); else the main one is. */
static void add_thread_x(struct scene *sc, uint64_t sub, bool inner_sub, uint64_t *xs,
			 uint64_t *xm)
{
	if (inner_sub) {
		*xs = fp_thread_in(sc->fp, sub, part_stack(sc, sub_codes, 2), X_IDENT, X_TID);
		*xm = fp_thread_in(sc->fp, sc->fp->interp, part_stack(sc, main_codes, 2), X_IDENT,
				   X_TID);
	} else {
		*xm = fp_thread_in(sc->fp, sc->fp->interp, part_stack(sc, main_codes, 2), X_IDENT,
				   X_TID);
		*xs = fp_thread_in(sc->fp, sub, part_stack(sc, sub_codes, 2), X_IDENT, X_TID);
	}
}

static void check_x(const struct scene *sc, const struct py_thread *t, bool sub_first)
{
	int s = sub_first ? 0 : 2, m = sub_first ? 2 : 0;

	ck_assert_ptr_null(t->error);
	ck_assert_int_eq(t->nframes, 4);
	ck_assert_uint_eq(t->ident, X_IDENT);
	ck_assert_int_eq(t->tid, sc->fp->L->minor >= 11 ? (pid_t)X_TID : 0);
	check_part_frame(sc, t, s, C_BAR, SUB_ID);
	check_part_frame(sc, t, s + 1, C_FOO, SUB_ID);
	check_part_frame(sc, t, m, C_RUN, 0);
	check_part_frame(sc, t, m + 1, C_MAIN, 0);
	ck_assert_int_eq(t->ninterps, 2);
	ck_assert_int_eq(t->interps[0], sub_first ? SUB_ID : 0);
	ck_assert_int_eq(t->interps[1], sub_first ? 0 : SUB_ID);
}

START_TEST(test_subinterp)
{
	struct scene sc;
	struct py_thread *t;
	struct py_tstate ts[16];
	uint64_t sub, xs, xm, gil;
	int n;

	scene_init(&sc, _i);
	sub = fp_interp(sc.fp, SUB_ID);
	add_thread_x(&sc, sub, true, &xs, &xm);
	fp_gil_in(sc.fp, sub, xs, true);
	n = walk(&sc, &t);
	ck_assert_msg(n == 4, "3.%d: %d threads (%s)", _i, n, sc.err);
	check_thread0(&sc, &t[0]);
	check_thread1(&sc, &t[1]);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(t[i].ninterps, 1);
		ck_assert_int_eq(t[i].interps[0], 0);
		for (int k = 0; k < t[i].nframes; k++)
			ck_assert_int_eq(t[i].frames[k].interp, 0);
	}
	/* Listed where the main interpreter lists it, as one thread. */
	check_x(&sc, &t[3], true);
	ck_assert_uint_eq(t[3].tstate, xs);
	/* Each interpreter its own GIL from 3.12: two holders. */
	ck_assert(t[3].gil);
	ck_assert_int_eq(t[1].gil, sc.fp->L->interp.gil_ptr != NONE);
	py_threads_free(t, n);

	/* What the sampler sees: five thread states, X's two together. */
	{
		struct mem *m = fp_mem(sc.fp);
		struct pyinterp pi;

		fp_pyinterp(sc.fp, &pi);
		n = pystack_tstates(m, &pi, ts, 16, &gil, sc.err, sizeof(sc.err));
		mem_close(m);
		ck_assert_int_eq(n, 5);
		ck_assert_int_eq(ts[3].nparts, 2);
		ck_assert_uint_eq(ts[3].addr, xs);
		ck_assert_int_eq(ts[4].nparts, 0);
		ck_assert_uint_eq(ts[4].addr, xm);
		ck_assert(gil != 0);
	}
	scene_done(&sc);
}
END_TEST

/* The C stack decides which part is inside, not the interpreter ids; before
 * 3.11 there is no C stack address to go by, and the newer interpreter
 * goes inside. */
START_TEST(test_subinterp_order)
{
	struct scene sc;
	struct py_thread *t;
	uint64_t sub, xs, xm;
	int n;

	scene_init(&sc, _i);
	sub = fp_interp(sc.fp, SUB_ID);
	add_thread_x(&sc, sub, false, &xs, &xm);
	n = walk(&sc, &t);
	ck_assert_msg(n == 4, "3.%d: %d threads (%s)", _i, n, sc.err);
	check_x(&sc, &t[3], _i < 11);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* 3.12 runs a subinterpreter on the thread state its creator made: the part
 * says it is thread A (ident and tid) though it sits on X's C stack, just
 * below X's main part and far from A's.  The stack wins. */
START_TEST(test_subinterp_borrowed_tstate)
{
	static const int a_codes[] = { C_MAIN, C_WAIT };
	const uint64_t a_ident = 0x7f000000a000ull;
	struct scene sc;
	struct py_thread *t;
	uint64_t sub, xs, xm, a;
	int n;

	scene_init(&sc, _i);
	if (_i < 11) {
		scene_done(&sc);
		return;
	}
	sub = fp_interp(sc.fp, SUB_ID);
	xs = fp_thread_in(sc.fp, sub, part_stack(&sc, sub_codes, 2), a_ident, 110);
	xm = fp_thread_in(sc.fp, sc.fp->interp, part_stack(&sc, main_codes, 2), X_IDENT, X_TID);
	a = fp_thread_in(sc.fp, sc.fp->interp, part_stack(&sc, a_codes, 2), a_ident, 110);
	n = walk(&sc, &t);
	ck_assert_msg(n == 5, "3.%d: %d threads (%s)", _i, n, sc.err);
	check_x(&sc, &t[3], true);
	ck_assert_uint_eq(t[3].tstate, xs);
	ck_assert_uint_eq(t[4].tstate, a);
	ck_assert_int_eq(t[4].nframes, 2);
	ck_assert_int_eq(t[4].ninterps, 1);
	(void)xm;
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* The interpreter list comes from the target: loops, holes and garbage in
 * `next` end it, or leave out what is not an interpreter; never a crash,
 * never an interpreter read twice. */
START_TEST(test_interp_chain)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	uint64_t sub, xs, xm, junk;
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	sub = fp_interp(sc.fp, SUB_ID);
	add_thread_x(&sc, sub, true, &xs, &xm);

	/* The main interpreter pointing back at the head: a loop. */
	fp_w64(sc.fp, sc.fp->interp + L->interp.next, sub);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 4);
	check_x(&sc, &t[3], true);
	py_threads_free(t, n);

	/* Each pointing at itself: the main one is never reached. */
	fp_w64(sc.fp, sub + L->interp.next, sub);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(t[0].nframes, 2);
	ck_assert_int_eq(t[0].frames[0].interp, SUB_ID);
	py_threads_free(t, n);

	/* Past the main one, into nowhere, or into an object that is no
	 * interpreter: what was read stands. */
	fp_w64(sc.fp, sub + L->interp.next, sc.fp->interp);
	fp_w64(sc.fp, sc.fp->interp + L->interp.next, FP_UNMAPPED);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 4);
	py_threads_free(t, n);
	junk = fp_str(sc.fp, "not an interpreter, but readable for a while");
	fp_w64(sc.fp, sc.fp->interp + L->interp.next, junk);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 4);
	check_x(&sc, &t[3], true);
	py_threads_free(t, n);

	/* The subinterpreter's threads unreadable: the main one's stay,
	 * X with its main part only. */
	fp_w64(sc.fp, sc.fp->interp + L->interp.next, 0);
	fp_w64(sc.fp, sub + L->interp.threads_head, FP_UNMAPPED);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(t[3].nframes, 2);
	ck_assert_int_eq(t[3].ninterps, 1);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* More interpreters than any pool makes, none with threads: the main one,
 * last, is still read, within the bound. */
START_TEST(test_many_interps)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	for (int i = 1; i <= 300; i++)
		fp_interp(sc.fp, i);
	n = walk(&sc, &t);
	ck_assert_msg(n == 3, "3.%d: %d threads (%s)", _i, n, sc.err);
	check_thread0(&sc, &t[0]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- frame owners -------------------------------------------------------- */

START_TEST(test_shims)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	struct fp_frame_spec s = { 0 };
	uint64_t shim1, shim2, gen, tramp;
	int n, shim;

	scene_init(&sc, _i);
	L = sc.fp->L;
	shim = fp_owner_shim(sc.fp);
	if (L->frames == FRAMES_OBJECTS || _i == 11) {
		/* No shim frames before 3.12. */
		ck_assert_int_eq(shim, 0);
		ck_assert_int_eq(L->frame.owner_shim, 255);
		scene_done(&sc);
		return;
	}
	ck_assert_int_ge(shim, 3);
	/* 3.12's entry shim runs a real code object; 3.13+ put None there. */
	tramp = fp_code(sc.fp, &code_specs[C_RUN]);
	s.code = _i == 12 ? tramp : sc.fp->none;
	s.owner = shim;
	s.back = sc.frame[F_MAIN];
	shim1 = fp_frame_ex(sc.fp, &s);
	fp_w64(sc.fp, sc.frame[F_FOO] + L->frame.back, shim1);
	/* 3.14 also marks frames owned by the interpreter (3) and the C stack
	 * (4); any owner from owner_shim up is skipped. */
	s.owner = _i >= 14 ? 4 : shim;
	s.back = sc.frame[F_FOO];
	shim2 = fp_frame_ex(sc.fp, &s);
	fp_w64(sc.fp, sc.frame[F_BAR] + L->frame.back, shim2);
	/* A generator's frame is a Python frame like any other. */
	s = (struct fp_frame_spec){ .code = sc.code[C_FOO], .instr = 1, .back = sc.frame[F_RUN],
				    .owner = FP_OWNED_BY_GENERATOR };
	gen = fp_frame_ex(sc.fp, &s);
	fp_w64(sc.fp, sc.frame[F_WAIT] + L->frame.back, gen);

	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	check_thread0(&sc, &t[0]);
	ck_assert_int_eq(t[1].nframes, 3);
	check_scene_frame(&sc, &t[1], 0, F_WAIT);
	check_frame(&sc, &t[1], 1, C_FOO, foo_lines[1]);
	check_scene_frame(&sc, &t[1], 2, F_RUN);
	py_threads_free(t, n);

	/* The shim as the innermost frame, as in a thread inside a C call. */
	set_current_frame(&sc, 0, shim2);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_null(t[0].error);
	ck_assert_int_eq(t[0].nframes, 2);
	check_scene_frame(&sc, &t[0], 0, F_FOO);
	check_scene_frame(&sc, &t[0], 1, F_MAIN);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* A frame pushed but not yet started: the interpreter does not show it on
 * 3.11/3.12; elsewhere it is at its first line. */
START_TEST(test_not_started)
{
	struct scene sc;
	struct py_thread *t;
	uint64_t f;
	int n;

	scene_init(&sc, _i);
	f = fp_frame(sc.fp, sc.code[C_FOO], -1, sc.frame[F_WAIT]);
	set_current_frame(&sc, 1, f);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_null(t[1].error);
	if (_i == 11 || _i == 12) {
		ck_assert_int_eq(t[1].nframes, 2);
		check_scene_frame(&sc, &t[1], 0, F_WAIT);
	} else {
		ck_assert_int_eq(t[1].nframes, 3);
		/* 3.13+ point at instruction 0, older versions use the def line. */
		check_frame(&sc, &t[1], 0, C_FOO, _i >= 13 ? foo_lines[0] : 10);
		check_scene_frame(&sc, &t[1], 1, F_WAIT);
	}
	check_thread0(&sc, &t[0]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- lines --------------------------------------------------------------- */

START_TEST(test_lines)
{
	/* Steps of 0, 1 and 2, long jumps both ways, a line past 2^20. */
	static const int lines[] = { 5, 5, 6, 8, 300, 2, 2, 1000000, 7, 7, 4000, 3 };
	enum { N = sizeof(lines) / sizeof(lines[0]) };
	static const struct fp_code_spec spec = {
		.name = "jumpy", .filename = "/app/jumpy.py", .firstlineno = 5,
		.lines = lines, .ninstr = N,
	};
	struct scene sc;
	struct py_thread *t;
	uint64_t code, f = 0;
	int n;

	scene_init(&sc, _i);
	code = fp_code(sc.fp, &spec);
	/* One frame per instruction, the innermost on the last. */
	for (int i = 0; i < N; i++)
		f = fp_frame(sc.fp, code, i, f);
	set_current_frame(&sc, 2, f);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_null(t[2].error);
	ck_assert_int_eq(t[2].nframes, N);
	for (int i = 0; i < N; i++)
		ck_assert_msg(t[2].frames[i].line == lines[N - 1 - i],
			      "3.%d: instruction %d at line %d, want %d", _i, N - 1 - i,
			      t[2].frames[i].line, lines[N - 1 - i]);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* 3.11+: an instruction with no location has line -1. */
START_TEST(test_no_line)
{
	static const int lines[] = { 5, -1, 6 };
	static const struct fp_code_spec spec = {
		.name = "f", .filename = "/f.py", .firstlineno = 5, .lines = lines, .ninstr = 3,
	};
	struct scene sc;
	struct py_thread *t;
	uint64_t code;
	int n;

	scene_init(&sc, _i);
	if (sc.fp->L->lines != LT_LOCATIONS) {
		scene_done(&sc);
		return;
	}
	code = fp_code(sc.fp, &spec);
	fp_frame_set_code(sc.fp, sc.frame[F_BAR], code, 1);
	fp_frame_set_code(sc.fp, sc.frame[F_FOO], code, 2);
	/* Past the end of the table. */
	fp_frame_set_code(sc.fp, sc.frame[F_MAIN], sc.code[C_MAIN], 200);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[0].nframes, 3);
	ck_assert_int_eq(t[0].frames[0].line, -1);
	ck_assert_int_eq(t[0].frames[1].line, 6);
	ck_assert_int_eq(t[0].frames[2].line, -1);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- locals -------------------------------------------------------------- */

struct want_local {
	const char *name, *type, *repr;
	bool arg;
};

static void check_locals(const struct py_frame *f, const struct want_local *w, int n)
{
	ck_assert_int_eq(f->nlocals, n);
	for (int i = 0; i < n; i++) {
		const struct py_local *l = &f->locals[i];

		ck_assert_str_eq(l->name, w[i].name);
		ck_assert_str_eq(l->type, w[i].type);
		ck_assert_str_eq(l->repr, w[i].repr);
		ck_assert_msg(l->arg == w[i].arg, "%s: arg %d", l->name, l->arg);
	}
}

START_TEST(test_locals)
{
	/* def compute(a, b, *args, k, **kw): x = 0.5; y = [..]; bad; unset;
	 * and on 3.11+ a cell and a free variable, which are not locals. */
	static const char *const names[] = { "a", "b", "k", "args", "kw", "x", "y",
					     "bad", "unset", "cellvar", "freevar" };
	static const uint8_t kinds[] = { 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
					 0x20, 0x20, FP_KIND_CELL, FP_KIND_FREE };
	static const int lines[] = { 70, 71 };
	static const struct want_local want[] = {
		{ "a", "int", "1", true },
		{ "b", "str", "'two'", true },
		{ "k", "NoneType", "None", true },
		{ "args", "tuple", "<tuple of 2 items>", true },
		{ "kw", "dict", "<dict of 0 items>", true },
		{ "x", "float", "0.5", false },
		{ "y", "list", "<list of 1 item>", false },
		{ "bad", "?", "<unreadable>", false },
	};
	struct fp_code_spec spec = {
		.name = "compute", .qualname = "Calc.compute", .filename = "/app/calc.py",
		.firstlineno = 70, .lines = lines, .ninstr = 2, .argcount = 2,
		.kwonlyargcount = 1, .flags = FP_CO_VARARGS | FP_CO_VARKEYWORDS,
		.varnames = names, .nvarnames = 9, .kinds = kinds,
	};
	struct walk_opts o = { .locals = true };
	const struct py_layout *L;
	struct scene sc;
	struct py_thread *t;
	uint64_t vals[11], code, cell, f;
	struct fp_frame_spec s = { 0 };
	int n;

	scene_init(&sc, _i);
	L = sc.fp->L;
	/* Cells and frees sit after the locals in localsplus from 3.11. */
	if (L->code.localspluskinds != NONE)
		spec.nvarnames = 11;
	code = fp_code(sc.fp, &spec);
	cell = fp_object(sc.fp, FP_OBJ, sc.fp->t.cell, 24);
	vals[0] = fp_long(sc.fp, 1);
	vals[1] = fp_str(sc.fp, "two");
	vals[2] = sc.fp->none;
	vals[3] = fp_tuple(sc.fp, (uint64_t[]){ vals[0], vals[1] }, 2);
	vals[4] = fp_dict(sc.fp, NULL, NULL, 0);
	vals[5] = fp_float(sc.fp, 0.5);
	vals[6] = fp_list(sc.fp, vals, 1);
	vals[7] = FP_UNMAPPED;
	vals[8] = 0;
	vals[9] = vals[10] = cell;
	s.code = code;
	s.instr = 1;
	s.back = sc.frame[F_FOO];
	s.locals = vals;
	s.nlocals = 11;
	s.tag = true;	/* 3.14 stack references carry tag bits */
	f = fp_frame_ex(sc.fp, &s);
	fp_w64(sc.fp, sc.frame[F_BAR] + L->frame.back, f);

	n = walk_opts(&sc, &o, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_null(t[0].error);
	ck_assert_int_eq(t[0].nframes, 4);
	ck_assert_str_eq(t[0].frames[1].function, _i >= 11 ? "Calc.compute" : "compute");
	ck_assert_int_eq(t[0].frames[1].line, 71);
	check_locals(&t[0].frames[1], want, 8);
	/* bar has no locals at all. */
	ck_assert_int_eq(t[0].frames[0].nlocals, 0);
	py_threads_free(t, n);

	/* Without --locals nothing is read or allocated. */
	n = walk(&sc, &t);
	ck_assert_int_eq(t[0].nframes, 4);
	ck_assert_ptr_null(t[0].frames[1].locals);
	ck_assert_int_eq(t[0].frames[1].nlocals, 0);
	py_threads_free(t, n);

	/* A names tuple that lies about its size is cut at LOCALS_MAX
	 * (256), and reading past the frame just ends the list. */
	fp_w64(sc.fp, fp_r64(sc.fp, code + L->code.varnames) + L->o.ob_size, 100000);
	if (L->code.nlocals != NONE)
		fp_w32(sc.fp, code + L->code.nlocals, 100000);
	n = walk_opts(&sc, &o, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[0].nframes, 4);
	ck_assert_int_le(t[0].frames[1].nlocals, 256);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* With --locals, a frame the walk decides not to show (3.11/3.12: not
 * started) must not leak its locals; run under ASan/LSan to see. */
START_TEST(test_locals_not_started)
{
	static const char *const names[] = { "a" };
	static const int lines[] = { 80 };
	static const struct fp_code_spec spec = {
		.name = "g", .filename = "/g.py", .firstlineno = 80, .lines = lines, .ninstr = 1,
		.argcount = 1, .varnames = names, .nvarnames = 1,
	};
	struct walk_opts o = { .locals = true };
	struct fp_frame_spec s = { 0 };
	struct scene sc;
	struct py_thread *t;
	uint64_t val, f;
	int n;

	scene_init(&sc, _i);
	val = fp_long(sc.fp, 5);
	s.code = fp_code(sc.fp, &spec);
	s.instr = -1;
	s.back = sc.frame[F_WAIT];
	s.locals = &val;
	s.nlocals = 1;
	f = fp_frame_ex(sc.fp, &s);
	set_current_frame(&sc, 1, f);
	n = walk_opts(&sc, &o, &t);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(t[1].nframes, _i == 11 || _i == 12 ? 2 : 3);
	if (t[1].nframes == 3) {
		ck_assert_int_eq(t[1].frames[0].nlocals, 1);
		ck_assert_str_eq(t[1].frames[0].locals[0].repr, "5");
	}
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* ---- thread names -------------------------------------------------------- */

/* sys.modules with a threading module whose _active maps the idents of
 * threads 0 and 1 to Thread objects; returns sys.modules' keys and values
 * in keys[3], vals[3]. */
static void add_threading(struct scene *sc, uint64_t *keys, uint64_t *vals)
{
	static const char *const attr_names[] = { "_target", "_name", "_daemonic" };
	uint64_t th[2], active, tmod;

	/* Thread 0 keeps its attributes in a dict, thread 1 in values shared
	 * with its class where the version has them; thread 2 is unknown to
	 * the threading module. */
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "worker-\xc3\xa9" : "MainThread";
		uint64_t v[3] = { sc->fp->none, fp_str(sc->fp, name), sc->fp->false_ };

		th[i] = fp_instance(sc->fp, i ? "Worker" : "_MainThread", attr_names, v, 3, i == 1);
		keys[i] = fp_long(sc->fp, (int64_t)idents[i]);
	}
	active = fp_dict(sc->fp, keys, th, 2);
	keys[0] = fp_str(sc->fp, "_active");
	keys[1] = fp_str(sc->fp, "_limbo");
	vals[0] = active;
	vals[1] = fp_dict(sc->fp, NULL, NULL, 0);
	tmod = fp_module(sc->fp, fp_dict(sc->fp, keys, vals, 2));
	keys[0] = fp_str(sc->fp, "sys");
	keys[1] = fp_str(sc->fp, "threading");
	keys[2] = fp_str(sc->fp, "os");
	vals[0] = fp_module(sc->fp, fp_dict(sc->fp, NULL, NULL, 0));
	vals[1] = tmod;
	vals[2] = vals[0];
	fp_set_modules(sc->fp, fp_dict(sc->fp, keys, vals, 3));
}

/* Walk sc and name its threads: the main thread gets no name. */
static void check_main_unnamed(struct scene *sc, const struct pyinterp *pi)
{
	struct py_thread *t;
	struct mem *m;
	int n;

	n = walk(sc, &t);
	m = fp_mem(sc->fp);
	pystack_thread_names(m, pi, t, n);
	ck_assert_ptr_null(t[0].name);
	mem_close(m);
	py_threads_free(t, n);
}

START_TEST(test_thread_names)
{
	struct scene sc;
	struct py_thread *t;
	struct pyinterp pi;
	struct mem *m;
	uint64_t keys[3], vals[3];
	int n;

	scene_init(&sc, _i);
	add_threading(&sc, keys, vals);

	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	m = fp_mem(sc.fp);
	fp_pyinterp(sc.fp, &pi);
	pystack_thread_names(m, &pi, t, n);
	ck_assert_str_eq(t[0].name, "MainThread");
	ck_assert_str_eq(t[1].name, "worker-\xc3\xa9");
	ck_assert_ptr_null(t[2].name);
	ck_assert_uint_lt(mem_fake_reads(m), 400);
	mem_close(m);
	py_threads_free(t, n);

	/* No sys.modules, or no threading in it: names stay unknown. */
	fp_set_modules(sc.fp, 0);
	check_main_unnamed(&sc, &pi);
	fp_set_modules(sc.fp, fp_dict(sc.fp, keys, vals, 1));
	check_main_unnamed(&sc, &pi);
	scene_done(&sc);
}
END_TEST

/* ---- fuzz ---------------------------------------------------------------- */

static uint64_t rng_state;
/* Addresses of real frames, code objects and thread states: planting
 * these makes chains that go somewhere (and loop) far more often than
 * random words do. */
static uint64_t targets[32];
static int ntargets;

static uint64_t rnd(void)
{
	/* xorshift64*: fixed seeds, so a failure is reproducible. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* A value worth planting: a pointer into some arena (often to something
 * real), a small number, zero, all ones, or noise. */
static uint64_t rnd_word(const struct fakepy *fp)
{
	int a = (int)(rnd() % FP_NARENAS);
	size_t used = fp->arena[a].used ? fp->arena[a].used : 1;

	switch (rnd() % 8) {
	case 6:
	case 7:
		return targets[rnd() % ntargets] + (rnd() % 4 ? 0 : rnd() % 64);
	case 0:
		return FP_ARENA_BASE(a) + (rnd() % used & ~(uint64_t)7);
	case 1:
		return FP_ARENA_BASE(a) + rnd() % used;
	case 2:
		return rnd() % 512;
	case 3:
		return 0;
	case 4:
		return ~(uint64_t)(rnd() % 3);
	default:
		return rnd();
	}
}

static void mutate(const struct fakepy *fp, uint8_t *buf, size_t len)
{
	int mode = (int)(rnd() % 4), count = 1 + (int)(rnd() % 16);

	if (!len)
		return;
	if (mode == 0) {
		/* Noise throughout. */
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		return;
	}
	for (int i = 0; i < count; i++) {
		size_t at = rnd() % len;

		if (mode == 1) {
			buf[at] = (uint8_t)rnd();
		} else if (len >= 8) {
			uint64_t w = rnd_word(fp);

			at = (at & ~(size_t)7) % (len - 7);
			memcpy(buf + at, &w, 8);
		}
	}
}

struct fuzz_stats {
	unsigned long max_reads, errors, frames;
};

/* One walk over a mutated copy of the arenas in `which` (a bit mask). */
static void fuzz_once(struct scene *sc, unsigned which, struct fuzz_stats *st)
{
	const struct fakepy *fp = sc->fp;
	struct walk_opts o = { .locals = rnd() & 1, .max_depth = (int)(rnd() % 3) * 32 };
	int max = o.max_depth ? o.max_depth : PYSTACK_MAX_DEPTH;
	struct mem *m = mem_fake_new();
	struct py_thread *t;
	struct pyinterp pi;
	char err[256];
	unsigned long reads, bound;
	int n;

	for (int a = 0; a < FP_NARENAS; a++) {
		size_t len = (fp->arena[a].used + 4095) & ~(size_t)4095;
		uint8_t *copy = malloc(len);

		memcpy(copy, fp->arena[a].data, len);
		if (which & (1u << a))
			mutate(fp, copy, fp->arena[a].used);
		ck_assert_int_eq(mem_fake_add(m, FP_ARENA_BASE(a), copy, len), 0);
		free(copy);
	}
	fp_pyinterp(fp, &pi);
	n = pystack_threads(m, &pi, &o, &t, err, sizeof(err));
	if (n >= 0)
		pystack_thread_names(m, &pi, t, n);
	reads = mem_fake_reads(m);
	/* The walk's own limits: at most 4 * max steps per thread, and per
	 * frame a few reads for the frame and the code object, a few for each
	 * name, and with locals a few more for each of at most 256 of them.
	 * Thread names look through two dicts of at most 2^16 entries (a few
	 * reads per entry), then one per thread. */
	bound = 64 + (n > 0 ? (unsigned long)n : 1) *
		(4ul * max * (32 + (o.locals ? 256ul * 16 : 0)) + 4ul * 65536) +
		2 * 8ul * 65536;
	ck_assert_msg(reads <= bound, "3.%d: %lu reads (bound %lu, %d threads)",
		      fp->L->minor, reads, bound, n);
	if (reads > st->max_reads)
		st->max_reads = reads;
	if (n < 0) {
		ck_assert_ptr_null(t);
		ck_assert(err[0]);
		st->errors++;
	}
	for (int i = 0; i < n; i++) {
		ck_assert_int_le(t[i].nframes, max);
		st->frames += t[i].nframes;
		for (int j = 0; j < t[i].nframes; j++) {
			ck_assert_ptr_nonnull(t[i].frames[j].function);
			ck_assert_ptr_nonnull(t[i].frames[j].file);
		}
	}
	if (n > 0)
		py_threads_free(t, n);
	mem_close(m);
}

enum { FUZZ_ITERS = 5000 };

START_TEST(test_fuzz)
{
	static const char *const names[] = { "a", "b", "c" };
	static const int lines[] = { 3, 4, 5 };
	static const struct fp_code_spec spec = {
		.name = "h", .filename = "/h.py", .firstlineno = 3, .lines = lines, .ninstr = 3,
		.argcount = 1, .varnames = names, .nvarnames = 3,
	};
	struct fuzz_stats st = { 0 };
	struct fp_frame_spec s = { 0 };
	struct scene sc;
	uint64_t vals[3], mk[3], mv[3];

	scene_init(&sc, _i);
	add_threading(&sc, mk, mv);
	/* Give thread 2 a frame with locals, so --locals has something to
	 * follow into the mutated memory. */
	vals[0] = fp_long(sc.fp, 3);
	vals[1] = fp_str(sc.fp, "x");
	vals[2] = fp_tuple(sc.fp, vals, 2);
	s.code = fp_code(sc.fp, &spec);
	s.instr = 2;
	s.locals = vals;
	s.nlocals = 3;
	fp_thread(sc.fp, fp_frame_ex(sc.fp, &s), 0x7f0000004000, 103);

	ntargets = 0;
	for (int i = 0; i < NFRAMES; i++)
		targets[ntargets++] = sc.frame[i];
	for (int i = 0; i < NCODES; i++)
		targets[ntargets++] = sc.code[i];
	for (int i = 0; i < 3; i++)
		targets[ntargets++] = sc.ts[i];
	targets[ntargets++] = s.code;
	targets[ntargets++] = sc.fp->interp;
	rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
	for (int it = 0; it < FUZZ_ITERS; it++) {
		/* Mostly frames and code; now and then objects and the
		 * interpreter's own structures too. */
		unsigned which = 1u << (rnd() & 1 ? FP_FRAME : FP_CODE);

		if (rnd() % 4 == 0)
			which |= 1u << FP_OBJ;
		if (rnd() % 8 == 0)
			which |= 1u << FP_STATE;
		if (rnd() % 4 == 0)
			which |= 1u << FP_FRAME | 1u << FP_CODE;
		fuzz_once(&sc, which, &st);
	}
	printf("fuzz 3.%d: %d walks, %lu frames, %lu refused, at most %lu reads\n", _i,
	       FUZZ_ITERS, st.frames, st.errors, st.max_reads);
	fflush(stdout);
	/* Plenty of iterations got somewhere: the fuzz is not all refusals. */
	ck_assert_uint_gt(st.frames, FUZZ_ITERS / 2);
	scene_done(&sc);
}
END_TEST

/* ---- regressions: bugs these tests found, since fixed ----------------------------------- */

/* A thread list that loops back lists each thread once.  It used to list
 * them twice: Brent's check noticed the loop only a lap later
 * (pystack_threads). */
START_TEST(test_thread_cycle_once)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	fp_w64(sc.fp, sc.ts[2] + sc.fp->L->tstate.next, sc.ts[0]);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

/* An instruction offset far past the code has no line (-1), but for lnotab,
 * which carries its last line to the end of the code.  On 3.11+ it is 4 GiB
 * past, which used to be cut to 32 bits (code_line passed (uint32_t)offset)
 * and map to a plausible line. */
START_TEST(test_lasti_wrap)
{
	struct scene sc;
	struct py_thread *t;
	int n;

	scene_init(&sc, _i);
	if (sc.fp->L->lasti == LASTI_PTR)
		fp_w64(sc.fp, sc.frame[F_BAR] + sc.fp->L->frame.lasti,
		       sc.code[C_BAR] + sc.fp->L->code.code_adaptive + (1ull << 32) + 4);
	else
		fp_w32(sc.fp, sc.frame[F_BAR] + sc.fp->L->frame.lasti, 4000);
	n = walk(&sc, &t);
	ck_assert_int_eq(n, 3);
	/* lnotab carries its last line to the end of the code; the newer
	 * tables end. */
	ck_assert_int_eq(t[0].frames[0].line, (sc.fp->L->lines == LT_LNOTAB ? 151 : -1));
	py_threads_free(t, n);
	scene_done(&sc);
}
END_TEST

int main(void)
{
	const int lo = LAYOUT_MIN_MINOR, hi = LAYOUT_MAX_MINOR + 1;
	const struct test_group groups[] = {
		{ "walk", .tests = { test_three_threads, test_unbound_thread_states, test_gil,
		                     test_shims, test_not_started, test_lines, test_no_line, test_locals, test_locals_not_started,
		                     test_thread_names, test_subinterp, test_subinterp_order,
		                     test_subinterp_borrowed_tstate } },
		{ "corrupt", .timeout = 60, .tests = { test_corrupt_back, test_frame_cycle,
		                                       test_thread_cycle, test_deep,
		                                       test_bad_code_type, test_absurd_names,
		                                       test_no_interp, test_interp_mismatch,
		                                       test_interp_chain, test_many_interps } },
		{ "fuzz", .timeout = 600, .tests = { test_fuzz } },
		{ "regressions", .tests = { test_thread_cycle_once, test_lasti_wrap } },
	};

	return run_groups("walk", groups, ARRAY_SIZE(groups), lo, hi);
}
