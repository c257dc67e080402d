/* Tests for the asyncio task reader (src/python/asyncio314.c) and the check of
 * the asyncio debug offsets (interp/asyncio_offsets.c), on synthetic
 * memory built with tests/lib/fakepy.c, once per version that has tasks
 * (3.14, 3.15).
 *
 * The scene: one thread whose list holds "main" (suspended in work() ->
 * step() -> Event.wait(), three coroutines deep), "worker" (awaited by
 * main directly, as a TaskGroup records it), "gathered" (awaited by a
 * _GatheringFuture that main awaits: awaiters are resolved through it),
 * "dl-a" and "dl-b" (each awaited by the other: a cycle) and "runner", the
 * thread's running task, whose frames are on the thread's stack; plus
 * "orphan" on the interpreter's list (its thread has exited).  Then
 * hostile variants: rings, torn links, loops, huge sets, a wrong table;
 * more awaiters than the one bound; and the memo of record --async=all
 * across changing snapshots.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "python/asyncio.h"
#include "python/locate.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "util/util.h"
#include "suite.h"
#include "tasks.h"

/* Where our fake thread and interpreter states keep the task fields: the
 * section says so, and these fit the fake states. */
#define TS_SIZE 2048
#define TS_LOOP 1500
#define TS_RUNNING 1508
#define TS_HEAD 1520
#define INTERP_HEAD 4000	/* unused, zeroed space in the fake interpreter */

struct scene {
	struct fakepy *fp;
	struct asyncio_layout A;
	uint64_t code[NCODES];
	uint64_t coro_type, gen_type, fut_type, task_type, gfut_type, set_type;
	uint64_t tstate, head;		/* the thread and its list head */
	uint64_t last;			/* its list's last node (the head when empty) */
	uint64_t main, worker, gathered, dla, dlb, runner, orphan, gfut;
};

static uint8_t section[ASYNCIO_SECTION_SIZE];

/* The section a 3.14/3.15 _asyncio carries, with our state offsets. */
static void make_section(void)
{
	const uint64_t w[13] = { 168, 136, 96, 108, 109, 128, 152,
				 8192, INTERP_HEAD, TS_SIZE, TS_LOOP, TS_RUNNING, TS_HEAD };

	memcpy(section, w, sizeof(w));
}

/* A coroutine suspended on instruction instr of code, awaiting `awaits`
 * (0: a plain suspension) -- or executing when `executing`. */
static uint64_t coro(struct scene *sc, int c, int instr, uint64_t awaits, bool executing)
{
	const struct py_layout *L = sc->fp->L;
	const struct asyncio_layout *A = &sc->A;
	uint64_t g = fp_object(sc->fp, FP_OBJ, sc->coro_type, L->gen.iframe + 88 + 8 * 4);
	uint64_t f = g + L->gen.iframe;
	uint64_t sp = f + L->frame.localsplus + 8 * 2;
	int8_t st = executing ? A->gen_executing :
		    awaits ? A->gen_suspended_yield_from : A->gen_suspended;

	fp_frame_set_code(sc->fp, f, sc->code[c], instr);
	fp_w8(sc->fp, g + L->gen.frame_state, (uint8_t)st);
	fp_w64(sc->fp, f + L->frame.stackpointer, sp);
	fp_w64(sc->fp, sp - 8 * A->yield_from_slot, awaits);
	if (A->yield_from_slot > 1)
		fp_w64(sc->fp, sp - 8, 1);	/* 3.15's null reference on top */
	return g;
}

static void link_after(struct scene *sc, uint64_t node)
{
	fp_w64(sc->fp, sc->last, node);		/* last->next */
	fp_w64(sc->fp, node + 8, sc->last);	/* node->prev */
	fp_w64(sc->fp, node, sc->head);		/* node->next */
	fp_w64(sc->fp, sc->head + 8, node);	/* head->prev */
	sc->last = node;
}

/* A task named name running coroutine g, awaited by `by` (one object or,
 * with is_set, a set), linked to the thread's list when linked. */
static uint64_t task(struct scene *sc, const char *name, uint64_t g, uint64_t by, bool is_set,
		     bool linked)
{
	const struct asyncio_layout *A = &sc->A;
	uint64_t t = fp_object(sc->fp, FP_OBJ, sc->task_type, A->task.size);

	fp_w8(sc->fp, t + A->task.is_task, 1);
	fp_w64(sc->fp, t + A->task.coro, g);
	fp_w64(sc->fp, t + A->task.name, fp_str(sc->fp, name));
	fp_w64(sc->fp, t + A->task.awaited_by, by);
	fp_w8(sc->fp, t + A->task.awaited_by_is_set, is_set);
	if (linked)
		link_after(sc, t + A->task.node);
	return t;
}

/* A set of n objects (table of n slots, mask n - 1: n a power of two). */
static uint64_t set_of(struct scene *sc, const uint64_t *items, int n)
{
	const struct asyncio_layout *A = &sc->A;
	uint64_t s = fp_object(sc->fp, FP_OBJ, sc->set_type, 200);
	uint64_t table = fp_alloc(sc->fp, FP_OBJ, 16 * n);

	for (int i = 0; i < n; i++)
		fp_w64(sc->fp, table + 16 * i, items[i]);
	fp_w64(sc->fp, s + A->set_mask, n - 1);
	fp_w64(sc->fp, s + A->set_table, table);
	return s;
}

static void build(struct scene *sc, int minor)
{
	const struct py_layout *L = layout_for_minor(minor);
	struct fakepy *fp;
	uint64_t loopf, stepf, g, inner;
	char err[256];

	memset(sc, 0, sizeof(*sc));
	make_section();
	ck_assert_int_eq(asyncio_layout_parse(minor, section, sizeof(section), &sc->A, err,
					      sizeof(err)), 0);
	fp = sc->fp = fp_new(L);
	tasks_codes(fp, sc->code, 2);
	sc->coro_type = fp_type(fp, "coroutine");
	sc->gen_type = fp_type(fp, "generator");
	sc->fut_type = fp_type(fp, "_asyncio.Future");
	sc->task_type = fp_type(fp, "_asyncio.Task");
	sc->gfut_type = fp_type(fp, "_GatheringFuture");
	sc->set_type = fp_type(fp, "set");
	fp_w64(fp, sc->task_type + sc->A.type_base, sc->fut_type);
	fp_w64(fp, sc->gfut_type + sc->A.type_base, sc->fut_type);
	fp->tstate_size = TS_SIZE;

	/* The thread runs "runner": step() called from its coroutine work(),
	 * called from the loop. */
	loopf = fp_frame(fp, sc->code[C_LOOP], 1, 0);
	g = coro(sc, C_WORK, 1, 0, true);
	fp_w64(fp, g + L->gen.iframe + L->frame.back, loopf);
	fp_w8(fp, g + L->gen.iframe + L->frame.owner, FP_OWNED_BY_GENERATOR);
	stepf = fp_frame(fp, sc->code[C_STEP], 1, g + L->gen.iframe);
	sc->tstate = fp_thread(fp, stepf, 0x1000, 4242);
	sc->head = sc->last = sc->tstate + TS_HEAD;
	fp_w64(fp, sc->head, sc->head);
	fp_w64(fp, sc->head + 8, sc->head);

	inner = coro(sc, C_WAIT, 1, 0, false);
	inner = coro(sc, C_STEP, 1, inner, false);
	sc->main = task(sc, "main", coro(sc, C_WORK, 2, inner, false), 0, false, true);
	sc->worker = task(sc, "worker", coro(sc, C_STEP, 0, 0, false), sc->main, false, true);
	sc->gfut = fp_object(fp, FP_OBJ, sc->gfut_type, sc->A.task.size);
	fp_w64(fp, sc->gfut + sc->A.task.awaited_by, set_of(sc, &sc->main, 1));
	fp_w8(fp, sc->gfut + sc->A.task.awaited_by_is_set, 1);
	sc->gathered = task(sc, "gathered", coro(sc, C_WAIT, 2, 0, false), sc->gfut, false, true);
	sc->dla = task(sc, "dl-a", coro(sc, C_STEP, 1, 0, false), 0, false, true);
	sc->dlb = task(sc, "dl-b", coro(sc, C_STEP, 1, 0, false), sc->dla, false, true);
	fp_w64(fp, sc->dla + sc->A.task.awaited_by, sc->dlb);
	sc->runner = task(sc, "runner", g, 0, false, true);
	fp_w64(fp, sc->tstate + TS_RUNNING, sc->runner);
	fp_w64(fp, sc->main + sc->A.task.fut_waiter, sc->gfut);

	/* The interpreter's list: one task of an exited thread. */
	sc->head = sc->last = fp->interp + INTERP_HEAD;
	fp_w64(fp, sc->head, sc->head);
	fp_w64(fp, sc->head + 8, sc->head);
	sc->orphan = task(sc, "orphan", coro(sc, C_WAIT, 0, 0, false), 0, false, true);
}

static int read_tasks(struct scene *sc, struct py_tasks *out, struct mem **mp)
{
	struct pyinterp pi;
	char err[256];
	struct mem *m = fp_mem(sc->fp);
	int rc;

	fp_pyinterp(sc->fp, &pi);
	rc = asyncio_tasks(m, &pi, &sc->A, NULL, out, err, sizeof(err));
	ck_assert_msg(rc == 0, "asyncio_tasks: %d %s", rc, err);
	if (mp)
		*mp = m;
	else
		mem_close(m);
	return rc;
}

START_TEST(test_graph)
{
	static const char *const main_fn[] = { "Event.wait", "step", "work" };
	static const int main_lines[] = { 213, 31, 22 };
	static const char *const run_fn[] = { "step", "work" };
	static const int run_lines[] = { 31, 21 };
	struct scene sc;
	struct py_tasks t;
	const struct py_task *m, *w, *g, *a, *b, *r, *o;

	build(&sc, _i);
	read_tasks(&sc, &t, NULL);
	ck_assert_int_eq(t.n, 7);
	ck_assert_int_eq(t.torn, 0);
	tasks_scene(&t, &m, &w, &g, &a, &b, &r);
	o = tasks_named(&t, "orphan");
	tasks_expect_frames(m, main_fn, main_lines, 3);
	ck_assert_int_eq(m->state, TASK_PENDING);
	ck_assert_int_eq(m->cycle, 0);
	ck_assert_str_eq(m->waiting_on, "_GatheringFuture");
	/* main awaits worker (directly) and gathered (through the future). */
	ck_assert_int_eq(m->nawaiting, 2);
	ck_assert_int_eq(w->nawaited_by, 1);
	ck_assert_uint_eq(w->awaited_by[0], sc.main);
	ck_assert_int_eq(g->nawaited_by, 1);
	ck_assert_uint_eq(g->awaited_by[0], sc.main);
	ck_assert_int_ne(a->cycle, 0);
	ck_assert_int_eq(a->cycle, b->cycle);
	ck_assert_int_eq(t.ncycles, 1);
	ck_assert_int_eq(r->state, TASK_RUNNING);
	ck_assert(r->joined);
	tasks_expect_frames(r, run_fn, run_lines, 2);
	ck_assert_uint_eq(r->tstate, sc.tstate);
	ck_assert_uint_eq(o->tstate, 0);
	ck_assert_int_eq(o->nframes, 1);
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* A ring of tasks that never comes back to the head: read once, stopped,
 * counted; and the walk is bounded in reads. */
START_TEST(test_ring)
{
	struct scene sc;
	struct py_tasks t;
	struct mem *m;
	uint64_t na, nb;

	build(&sc, _i);
	na = sc.dla + sc.A.task.node;
	nb = sc.dlb + sc.A.task.node;
	fp_w64(sc.fp, nb, na);		/* dl-b -> dl-a, consistently */
	fp_w64(sc.fp, na + 8, nb);
	read_tasks(&sc, &t, &m);
	ck_assert_int_ge(t.torn, 1);
	ck_assert_int_le(t.n, 7);
	ck_assert_uint_lt(mem_fake_reads(m), 5000);
	mem_close(m);
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* A link whose neighbour does not point back: the list was caught
 * changing; what follows is not trusted. */
START_TEST(test_torn_link)
{
	struct scene sc;
	struct py_tasks t;

	build(&sc, _i);
	fp_w64(sc.fp, sc.gathered + sc.A.task.node + 8, 0x1234);	/* gathered->prev */
	read_tasks(&sc, &t, NULL);
	ck_assert_int_eq(t.torn, 1);
	/* main and worker before the break, orphan on the other list. */
	ck_assert_int_eq(t.n, 3);
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* A coroutine that awaits itself, a stack pointer below its stack, a
 * set claiming a million slots, a task that is not one: all bounded. */
START_TEST(test_hostile)
{
	const struct py_layout *L;
	struct scene sc;
	struct py_tasks t;
	uint64_t g, s;

	build(&sc, _i);
	L = sc.fp->L;
	g = fp_r64(sc.fp, sc.worker + sc.A.task.coro);
	fp_w8(sc.fp, g + L->gen.frame_state, (uint8_t)sc.A.gen_suspended_yield_from);
	fp_w64(sc.fp, fp_r64(sc.fp, g + L->gen.iframe + L->frame.stackpointer) -
			      8 * sc.A.yield_from_slot, g);
	g = fp_r64(sc.fp, sc.gathered + sc.A.task.coro);
	fp_w8(sc.fp, g + L->gen.frame_state, (uint8_t)sc.A.gen_suspended_yield_from);
	fp_w64(sc.fp, g + L->gen.iframe + L->frame.stackpointer, 8);
	s = fp_r64(sc.fp, sc.gfut + sc.A.task.awaited_by);
	fp_w64(sc.fp, s + sc.A.set_mask, (1u << 20) - 1);
	fp_w8(sc.fp, sc.dlb + sc.A.task.is_task, 0);
	read_tasks(&sc, &t, NULL);
	ck_assert_int_eq(tasks_named(&t, "worker")->nframes, 1);
	ck_assert_int_eq(tasks_named(&t, "gathered")->nframes, 1);
	ck_assert_int_eq(tasks_named(&t, "gathered")->nawaited_by, 0);
	ck_assert_int_eq(t.torn, 1);	/* dl-b */
	ck_assert_int_eq(t.n, 6);
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* More awaiters than the model's one bound, either way: a task awaited by
 * a set of TASKS_OVER tasks (its table twice as large, as CPython grows
 * it), and one that a TaskGroup's as many children each record as their
 * awaiter.  Each keeps ASYNCIO_MAX_AWAITERS edges, the rest counted cut
 * (check_asyncio_legacy.c: the same of the 3.11-3.13 reader). */
START_TEST(test_bound)
{
	uint64_t *awaiters = xcalloc(2 * TASKS_OVER, sizeof(uint64_t)), set, hub, parent;
	struct scene sc;
	struct py_tasks t;

	build(&sc, _i);
	for (int i = 0; i < TASKS_OVER; i++)
		awaiters[i] = task(&sc, "awaiter", coro(&sc, C_STEP, 1, 0, false), 0, false, true);
	set = set_of(&sc, awaiters, 2048);
	hub = task(&sc, "hub", coro(&sc, C_WAIT, 1, 0, false), set, true, true);
	parent = task(&sc, "parent", coro(&sc, C_WORK, 1, 0, false), 0, false, true);
	for (int i = 0; i < TASKS_OVER; i++)
		task(&sc, "child", coro(&sc, C_STEP, 0, 0, false), parent, false, true);
	read_tasks(&sc, &t, NULL);
	tasks_expect_bound(&t, 7 + 2 * TASKS_OVER + 2, hub);
	py_tasks_free(&t);
	free(awaiters);
	fp_free(sc.fp);
}
END_TEST

/* The table: our TaskObj or nothing; state offsets inside their states. */
START_TEST(test_section)
{
	struct asyncio_layout A;
	char err[256];
	uint64_t w;

	make_section();
	ck_assert_int_eq(asyncio_layout_parse(14, section, sizeof(section), &A, err, sizeof(err)), 0);
	ck_assert_uint_eq(A.task.fut_waiter, 120);
	ck_assert_int_eq(asyncio_layout_parse(13, section, sizeof(section), &A, err, sizeof(err)),
			 status_fail(EXIT_UNSUPPORTED));
	ck_assert_int_eq(asyncio_layout_parse(14, section, 64, &A, err, sizeof(err)),
			 status_fail(EXIT_BAD_STATE));
	w = 144;	/* task_name moved: a layout we have not verified */
	memcpy(section + 8, &w, 8);
	ck_assert_int_eq(asyncio_layout_parse(15, section, sizeof(section), &A, err, sizeof(err)),
			 status_fail(EXIT_UNSUPPORTED));
	ck_assert_msg(strstr(err, "unverified"), "%s", err);
	make_section();
	w = TS_SIZE;	/* the list head past the thread state's end */
	memcpy(section + 8 * 12, &w, 8);
	ck_assert_int_eq(asyncio_layout_parse(15, section, sizeof(section), &A, err, sizeof(err)),
			 status_fail(EXIT_BAD_STATE));
}
END_TEST

/* --- the memo of record --async=all ---------------------------------------- */

/* A reader forwarding to the current snapshot (fp_mem copies). */
struct snap {
	struct mem mem;
	struct mem *cur;
};

static int snap_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return mem_read(((struct snap *)m)->cur, addr, buf, len);
}

static void snap_close(struct mem *m)
{
	(void)m;
}

/* One round through memo on a fresh snapshot of the scene. */
static void memo_round(struct scene *sc, struct snap *sn, struct asyncio_memo *memo,
		       struct py_tasks *t)
{
	struct pyinterp pi;
	char err[256];

	mem_close(sn->cur);
	sn->cur = fp_mem(sc->fp);
	fp_pyinterp(sc->fp, &pi);
	ck_assert_int_eq(asyncio_tasks_memo(&sn->mem, &pi, &sc->A, NULL, memo, t, err,
					    sizeof(err)), 0);
}

/* Overwrite the first occurrence of `from` in the str at str with `to`
 * (the same length): the same object, other contents. */
static void str_rewrite(struct scene *sc, struct mem *m, uint64_t str, const char *from,
			const char *to)
{
	char buf[128];

	ck_assert_int_eq(mem_read(m, str, buf, sizeof(buf)), 0);
	for (size_t i = 0; i + strlen(from) <= sizeof(buf); i++)
		if (!memcmp(buf + i, from, strlen(from))) {
			for (size_t k = 0; k < strlen(to); k++)
				fp_w8(sc->fp, str + i + k, (uint8_t)to[k]);
			return;
		}
	ck_abort_msg("no %s in the str", from);
}

/* A task's result is reused only while every byte it came from holds: a
 * coroutine that moved on, a name rewritten in place, a new name object
 * are each read anew, and the rest still come from the memo. */
START_TEST(test_memo)
{
	static const char *const main_fn[] = { "Event.wait", "step", "work" };
	static const int main_lines[] = { 213, 31, 22 };
	static const char *const moved_fn[] = { "step" };
	static const int moved_lines[] = { 31 };
	struct snap sn = { .mem = { .read = snap_read, .close = snap_close } };
	struct asyncio_memo *memo = asyncio_memo_new(&sn.mem);
	const struct py_layout *L;
	struct scene sc;
	struct py_tasks t;
	uint64_t g, name;

	build(&sc, _i);
	L = sc.fp->L;
	memo_round(&sc, &sn, memo, &t);
	ck_assert_int_eq(t.n, 7);
	ck_assert(!tasks_named(&t, "main")->same);
	py_tasks_free(&t);

	memo_round(&sc, &sn, memo, &t);
	ck_assert_int_eq(t.n, 7);
	ck_assert_int_eq(t.torn, 0);
	for (int i = 0; i < t.n; i++)
		ck_assert_msg(t.v[i].same == (t.v[i].state == TASK_PENDING), "%s: same %d",
			      t.v[i].name, t.v[i].same);
	tasks_expect_frames(tasks_named(&t, "main"), main_fn, main_lines, 3);
	ck_assert_int_eq(tasks_named(&t, "main")->nawaiting, 2);
	py_tasks_free(&t);

	/* worker's coroutine moves on one instruction; gathered's name is
	 * rewritten in place; dl-a gets another name object. */
	ck_assert_int_eq(mem_read_u64(sn.cur, sc.worker + sc.A.task.coro, &g), 0);
	fp_frame_set_code(sc.fp, g + L->gen.iframe, sc.code[C_STEP], 1);
	ck_assert_int_eq(mem_read_u64(sn.cur, sc.gathered + sc.A.task.name, &name), 0);
	str_rewrite(&sc, sn.cur, name, "gathered", "Gathered");
	fp_w64(sc.fp, sc.dla + sc.A.task.name, fp_str(sc.fp, "dl-z"));
	memo_round(&sc, &sn, memo, &t);
	ck_assert_int_eq(t.n, 7);
	ck_assert(!tasks_named(&t, "worker")->same);
	tasks_expect_frames(tasks_named(&t, "worker"), moved_fn, moved_lines, 1);
	ck_assert(!tasks_named(&t, "Gathered")->same);
	ck_assert(!tasks_named(&t, "dl-z")->same);
	ck_assert(tasks_named(&t, "main")->same);
	ck_assert(tasks_named(&t, "orphan")->same);
	ck_assert_int_eq(tasks_named(&t, "dl-z")->cycle, tasks_named(&t, "dl-b")->cycle);
	py_tasks_free(&t);

	/* And then they are memoized as they are now. */
	memo_round(&sc, &sn, memo, &t);
	ck_assert(tasks_named(&t, "worker")->same);
	ck_assert(tasks_named(&t, "Gathered")->same);
	py_tasks_free(&t);
	asyncio_memo_free(memo);
	mem_close(sn.cur);
	fp_free(sc.fp);
}
END_TEST

/* frame_decode()'s memo proves a hit by the code object's identity
 * (python/codecache.h): the same (code, lasti) after the code object's
 * name became another object is decoded anew, and then served by the
 * memo with one read, of that identity. */
START_TEST(test_decode_reborn)
{
	struct snap sn = { .mem = { .read = snap_read, .close = snap_close } };
	struct frame_decoder *d;
	struct pyinterp pi;
	struct py_frame f;
	struct scene sc;
	uint64_t g, frame, code, lasti;
	unsigned long reads;

	build(&sc, _i);
	g = coro(&sc, C_STEP, 1, 0, false);
	frame = g + sc.fp->L->gen.iframe;
	code = sc.code[C_STEP];
	lasti = fp_r64(sc.fp, frame + sc.fp->L->frame.lasti);
	fp_pyinterp(sc.fp, &pi);
	sn.cur = fp_mem(sc.fp);
	d = frame_decoder_new(&sn.mem, &pi);
	ck_assert_int_eq(frame_decode(d, frame, code, lasti, &f), 0);
	ck_assert_str_eq(f.function, "step");
	py_frame_release(&f);

	fp_w64(sc.fp, code + sc.fp->L->code.qualname, fp_str(sc.fp, "reborn"));
	mem_close(sn.cur);
	sn.cur = fp_mem(sc.fp);
	ck_assert_int_eq(frame_decode(d, frame, code, lasti, &f), 0);
	ck_assert_str_eq(f.function, "reborn");
	ck_assert_int_eq(f.line, 31);
	py_frame_release(&f);
	reads = mem_fake_reads(sn.cur);
	ck_assert_int_eq(frame_decode(d, frame, code, lasti, &f), 0);
	ck_assert_str_eq(f.function, "reborn");
	ck_assert_uint_eq(mem_fake_reads(sn.cur) - reads, 1);
	py_frame_release(&f);
	frame_decoder_free(d);
	mem_close(sn.cur);
	fp_free(sc.fp);
}
END_TEST

/* Read runner, the thread's running task, through m, proved through
 * direct (NULL: paused); *out as asyncio_tasks() leaves it. */
static void read_proved(struct scene *sc, struct mem *m, struct mem *direct, struct py_tasks *out)
{
	struct pyinterp pi;
	char err[256];

	fp_pyinterp(sc->fp, &pi);
	ck_assert_msg(asyncio_tasks(m, &pi, &sc->A, direct, out, err, sizeof(err)) == 0, "%s",
		      err);
}

/* A task shown running is proved so in the read that gives its frames
 * (issue 30): its coroutine's frame on its thread's stack, with the
 * thread state's running-task pointer, re-read together.  The loop between
 * two tasks (runner named running, its coroutine suspended, the thread in
 * the loop): shown pending with its own frames, and counted.  A read torn
 * between the two is made again; one that never holds is left out. */
START_TEST(test_running_proved)
{
	static const char *const run_fn[] = { "step", "work" };
	static const int run_lines[] = { 31, 21 };
	const struct py_layout *L;
	const struct py_task *r;
	struct mem *m, *direct;
	struct py_tasks t;
	struct scene sc;
	uint64_t g, loopf;

	build(&sc, _i);
	L = sc.fp->L;
	g = fp_r64(sc.fp, sc.runner + sc.A.task.coro);
	loopf = fp_r64(sc.fp, g + L->gen.iframe + L->frame.back);
	m = fp_mem(sc.fp);

	/* Running on, the same as read: proved, joined. */
	read_proved(&sc, m, m, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_RUNNING);
	ck_assert(r->joined);
	tasks_expect_frames(r, run_fn, run_lines, 2);
	ck_assert_int_eq(t.torn, 0);
	ck_assert_int_eq(t.not_running, 0);
	py_tasks_free(&t);

	/* By the proof, the thread is back in the loop and runs no task: the
	 * first read's join does not hold, the second finds the coroutine
	 * off the whole stack.  runner is pending, in its own frame. */
	tasks_thread_frame(sc.fp, sc.tstate, loopf);
	fp_w8(sc.fp, g + L->gen.frame_state, (uint8_t)sc.A.gen_suspended);
	fp_w64(sc.fp, sc.tstate + TS_RUNNING, 0);
	direct = fp_mem(sc.fp);
	read_proved(&sc, m, direct, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_PENDING);
	ck_assert(!r->joined);
	ck_assert_int_eq(r->nframes, 1);
	ck_assert_str_eq(r->frames[0].function, "work");
	ck_assert_int_eq(t.not_running, 1);
	ck_assert_int_eq(t.torn, 0);
	ck_assert_int_eq(t.n, 7);
	py_tasks_free(&t);

	/* Paused between two tasks, still named: the same, from one read. */
	fp_w64(sc.fp, sc.tstate + TS_RUNNING, sc.runner);
	mem_close(direct);
	direct = fp_mem(sc.fp);
	read_proved(&sc, direct, NULL, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_PENDING);
	ck_assert(!r->joined);
	ck_assert_int_eq(t.not_running, 1);
	py_tasks_free(&t);
	mem_close(direct);

	/* Torn every time: the stack still holds its coroutine, the pointer
	 * names no task.  Left out, counted torn; the others stand. */
	mem_close(m);
	fp_free(sc.fp);
	build(&sc, _i);
	m = fp_mem(sc.fp);
	fp_w64(sc.fp, sc.tstate + TS_RUNNING, 0);
	direct = fp_mem(sc.fp);
	read_proved(&sc, m, direct, &t);
	ck_assert(!tasks_has(&t, "runner"));
	ck_assert_int_eq(t.torn, 1);
	ck_assert_int_eq(t.not_running, 0);
	ck_assert_int_eq(t.n, 6);
	py_tasks_free(&t);
	mem_close(direct);
	mem_close(m);
	fp_free(sc.fp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("asyncio");
	TCase *tc = tcase_create("tasks");

	tcase_add_loop_test(tc, test_graph, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_ring, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_torn_link, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_hostile, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_memo, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_bound, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_decode_reborn, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_loop_test(tc, test_running_proved, 14, LAYOUT_MAX_MINOR + 1);
	tcase_add_test(tc, test_section);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
