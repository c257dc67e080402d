/* Tests for the 3.11-3.13 asyncio task reader (src/python/asyncio_legacy.c)
 * on synthetic memory built with tests/lib/fakepy.c, once per version.
 *
 * The scene: sys.modules holds asyncio.tasks, whose registry (a WeakSet:
 * an instance whose `data` is a set of weak references) holds "main"
 * (suspended in work() -> step() -> Event.wait(), blocked on a gather
 * future gathering "gathered"), "worker" (a TaskGroup's: its done callback
 * is the group's bound _on_task_done, the group's _parent_task is main),
 * "dl-a" and "dl-b" (each blocked on the other: a cycle), "runner" (what
 * _current_tasks says its loop runs, whose _thread_id is the thread's: its
 * frames are the thread's), "py" (a pure-Python task: attributes), a dead
 * reference; the eager set holds "eager".  Then hostile variants: a
 * future that is not a task in the registry (skipped), a task with a state
 * that is none (torn), an await chain that loops, a huge set, a Task type
 * of another size; and more awaiters than the one bound.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "python/asyncio.h"
#include "python/asyncio_legacy.h"
#include "python/locate.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "util/util.h"
#include "suite.h"
#include "tasks.h"

#define IDENT 0x1000

struct scene {
	struct fakepy *fp;
	struct asyncio_layout A;
	uint64_t code[NCODES];
	uint64_t coro_type, ctask, fut_type, wr_type, set_type, none, pytask;
	uint64_t main, worker, gathered, dla, dlb, runner, py, eager;
	uint64_t tstate;		/* the thread running runner */
	uint64_t data;			/* the WeakSet's set */
	uint64_t eager_set, loop;
	uint64_t md;			/* asyncio.tasks' dict */
};

static const char *const md_names[] = { "_CTask", "_PyTask", "_scheduled_tasks",
					"_eager_tasks", "_current_tasks" };
enum { MD_CTASK, MD_PYTASK, MD_WEAK, MD_EAGER, MD_CURRENT, MD_N };

/* A coroutine suspended on instruction instr of code, awaiting `awaits`
 * (0: a plain suspension) -- or executing when `executing`. */
static uint64_t coro(struct scene *sc, int c, int instr, uint64_t awaits, bool executing)
{
	const struct py_layout *L = sc->fp->L;
	const struct asyncio_layout *A = &sc->A;
	uint64_t g = fp_object(sc->fp, FP_OBJ, sc->coro_type, A->legacy.gen_iframe + 80 + 8 * 4);
	uint64_t f = g + A->legacy.gen_iframe;
	int8_t st = executing ? A->gen_executing :
		    awaits && !A->legacy.resume_op[0] ? A->gen_suspended_yield_from :
		    A->gen_suspended;

	fp_frame_set_code(sc->fp, f, sc->code[c], instr);
	fp_w8(sc->fp, g + A->legacy.gen_frame_state, (uint8_t)st);
	if (awaits && A->legacy.resume_op[0]) {
		/* 3.11/3.12: the next instruction says "in an await". */
		uint64_t next = fp_r64(sc->fp, f + L->frame.lasti) + 2;

		fp_w8(sc->fp, next, A->legacy.resume_op[0]);
		fp_w8(sc->fp, next + 1, 3);
	}
	fp_w32(sc->fp, f + A->legacy.stacktop, 1);
	fp_w64(sc->fp, f + L->frame.localsplus, awaits);
	return g;
}

/* A C task named name running coroutine g, blocked on waiter. */
static uint64_t task(struct scene *sc, const char *name, uint64_t g, uint64_t waiter,
		     uint64_t loop)
{
	const struct asyncio_layout *A = &sc->A;
	uint64_t t = fp_object(sc->fp, FP_OBJ, sc->ctask, A->task.size);

	fp_w64(sc->fp, t + A->task.coro, g);
	fp_w64(sc->fp, t + A->task.name, fp_str(sc->fp, name));
	fp_w64(sc->fp, t + A->task.fut_waiter, waiter ? waiter : sc->none);
	fp_w64(sc->fp, t + A->legacy.loop, loop);
	return t;
}

/* Set s holds the n objects (table of n slots, mask n - 1: n a power of
 * two). */
static void set_fill(struct scene *sc, uint64_t s, const uint64_t *items, int n)
{
	const struct py_layout *L = sc->fp->L;
	uint64_t table = fp_alloc(sc->fp, FP_OBJ, 16 * n);

	for (int i = 0; i < n; i++)
		fp_w64(sc->fp, table + 16 * i, items[i]);
	fp_w64(sc->fp, s + L->o.set_used, n);
	fp_w64(sc->fp, s + L->o.set_mask, n - 1);
	fp_w64(sc->fp, s + L->o.set_table, table);
}

static uint64_t set_of(struct scene *sc, const uint64_t *items, int n)
{
	uint64_t s = fp_object(sc->fp, FP_OBJ, sc->set_type, 200);

	set_fill(sc, s, items, n);
	return s;
}

static uint64_t weakref(struct scene *sc, uint64_t obj)
{
	uint64_t w = fp_object(sc->fp, FP_OBJ, sc->wr_type, 64);

	fp_w64(sc->fp, w + sc->A.legacy.wr_object, obj);
	return w;
}

static void make_types(struct scene *sc)
{
	struct fakepy *fp = sc->fp;

	tasks_codes(fp, sc->code, 3);
	sc->coro_type = fp_type(fp, "coroutine");
	sc->fut_type = fp_type(fp, "_asyncio.Future");
	sc->ctask = fp_type(fp, "_asyncio.Task");
	sc->wr_type = fp_type(fp, "weakref.ReferenceType");
	sc->set_type = fp_type(fp, "set");
	sc->none = fp_object(fp, FP_OBJ, fp_type(fp, "NoneType"), 16);
	fp_w64(fp, sc->ctask + sc->A.type_base, sc->fut_type);
	fp_w64(fp, sc->ctask + fp->L->obj.tp_basicsize, sc->A.task.size);
}

/* A TaskGroup's done callback, its _on_task_done bound to a group whose
 * _parent_task is parent: a task that has it is awaited by parent. */
static uint64_t group_callback(struct scene *sc, uint64_t parent)
{
	const char *const names[] = { "_parent_task" };
	uint64_t tg = fp_instance(sc->fp, "TaskGroup", names, &parent, 1, false);
	uint64_t method = fp_object(sc->fp, FP_OBJ, fp_type(sc->fp, "method"), 48);

	fp_w64(sc->fp, method + sc->A.legacy.im_self, tg);
	return method;
}

/* A gather future whose _children is list. */
static uint64_t gather(struct scene *sc, uint64_t list)
{
	const char *const children[] = { "_children" };

	return fp_instance(sc->fp, "_GatheringFuture", children, &list, 1, false);
}

/* main awaits a gather of "gathered"; worker is main's TaskGroup's. */
static void make_graph(struct scene *sc, uint64_t loop)
{
	struct fakepy *fp = sc->fp;
	uint64_t inner;

	inner = coro(sc, C_WAIT, 1, 0, false);
	inner = coro(sc, C_STEP, 1, inner, false);
	sc->main = task(sc, "main", coro(sc, C_WORK, 1, inner, false), 0, loop);
	sc->gathered = task(sc, "gathered", coro(sc, C_WAIT, 1, 0, false), 0, loop);
	fp_w64(fp, sc->main + sc->A.task.fut_waiter, gather(sc, fp_list(fp, &sc->gathered, 1)));
	sc->worker = task(sc, "worker", coro(sc, C_STEP, 0, 0, false), 0, loop);
	fp_w64(fp, sc->worker + sc->A.legacy.callback0, group_callback(sc, sc->main));
	sc->dla = task(sc, "dl-a", coro(sc, C_STEP, 1, 0, false), 0, loop);
	sc->dlb = task(sc, "dl-b", coro(sc, C_STEP, 1, 0, false), sc->dla, loop);
	fp_w64(fp, sc->dla + sc->A.task.fut_waiter, sc->dlb);
}

/* The thread runs "runner": step() called from its coroutine work(),
 * called from the loop. */
static uint64_t make_runner(struct scene *sc, uint64_t loop)
{
	struct fakepy *fp = sc->fp;
	const struct py_layout *L = fp->L;
	uint64_t loopf, stepf, g;

	loopf = fp_frame(fp, sc->code[C_LOOP], 1, 0);
	g = coro(sc, C_WORK, 1, 0, true);
	fp_w64(fp, g + sc->A.legacy.gen_iframe + L->frame.back, loopf);
	fp_w8(fp, g + sc->A.legacy.gen_iframe + L->frame.owner, FP_OWNED_BY_GENERATOR);
	stepf = fp_frame(fp, sc->code[C_STEP], 1, g + sc->A.legacy.gen_iframe);
	sc->tstate = fp_thread(fp, stepf, IDENT, 4242);
	sc->runner = task(sc, "runner", g, 0, loop);
	return fp_dict(fp, &loop, &sc->runner, 1);
}

static void build(struct scene *sc, int minor)
{
	const char *const tid[] = { "_thread_id" }, *const data[] = { "data" };
	const char *const pyattrs[] = { "_coro", "_name", "_loop", "_fut_waiter" };
	uint64_t keys[MD_N], vals[MD_N], items[8], loop, v[4];
	struct fakepy *fp;

	memset(sc, 0, sizeof(*sc));
	ck_assert(asyncio_legacy_version(minor, 0, &sc->A));
	fp = sc->fp = fp_new(layout_for_minor(minor));
	make_types(sc);
	v[0] = fp_long(fp, IDENT);
	loop = sc->loop = fp_instance(fp, "_UnixSelectorEventLoop", tid, v, 1, false);
	make_graph(sc, loop);
	vals[MD_CURRENT] = make_runner(sc, loop);
	v[0] = coro(sc, C_WAIT, 0, 0, false);
	v[1] = fp_str(fp, "py");
	v[2] = loop;
	v[3] = sc->none;
	sc->py = fp_instance(fp, "Task", pyattrs, v, 4, false);
	sc->pytask = fp_r64(fp, sc->py + fp->L->obj.ob_type);
	sc->eager = task(sc, "eager", coro(sc, C_STEP, 0, 0, false), 0, loop);
	items[0] = weakref(sc, sc->main);
	items[1] = weakref(sc, sc->gathered);
	items[2] = weakref(sc, sc->worker);
	items[3] = weakref(sc, sc->dla);
	items[4] = weakref(sc, sc->dlb);
	items[5] = weakref(sc, sc->runner);
	items[6] = weakref(sc, sc->py);
	items[7] = weakref(sc, sc->none);	/* dead */
	sc->data = set_of(sc, items, 8);
	for (int i = 0; i < MD_N; i++)
		keys[i] = fp_str(fp, md_names[i]);
	vals[MD_CTASK] = sc->ctask;
	vals[MD_PYTASK] = sc->pytask;
	vals[MD_WEAK] = fp_instance(fp, "WeakSet", data, &sc->data, 1, false);
	vals[MD_EAGER] = sc->eager_set = set_of(sc, &sc->eager, 1);
	sc->md = fp_dict(fp, keys, vals, MD_N);
	keys[0] = fp_str(fp, "asyncio.tasks");
	vals[0] = fp_module(fp, sc->md);
	fp_set_modules(fp, fp_dict(fp, keys, vals, 1));
}

/* Locate and read the tasks; *reads (when not NULL): the memory reads
 * the tasks took. */
static int read_counted(struct scene *sc, struct py_tasks *out, unsigned long *reads,
			char *err, size_t errlen)
{
	struct pyinterp pi;
	struct mem *m = fp_mem(sc->fp);
	unsigned long before;
	int rc;

	fp_pyinterp(sc->fp, &pi);
	rc = asyncio_locate(&(struct locate_src){ .what = "fake" }, m, &pi, &sc->A, err,
			       errlen);
	before = mem_fake_reads(m);
	if (rc == 0)
		rc = asyncio_tasks(m, &pi, &sc->A, NULL, out, err, errlen);
	if (reads)
		*reads = mem_fake_reads(m) - before;
	mem_close(m);
	return rc;
}

static int locate_and_read(struct scene *sc, struct py_tasks *out, char *err, size_t errlen)
{
	return read_counted(sc, out, NULL, err, errlen);
}

static bool has(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

START_TEST(test_graph)
{
	static const char *const main_fn[] = { "Event.wait", "step", "work" };
	static const int main_lines[] = { 213, 31, 21 };
	static const char *const run_fn[] = { "step", "work" };
	static const int run_lines[] = { 31, 21 };
	const struct py_task *m, *w, *g, *a, *b, *r, *p;
	struct py_tasks t;
	struct scene sc;
	char err[256];

	build(&sc, _i);
	ck_assert_msg(locate_and_read(&sc, &t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(t.n, 8);
	ck_assert_int_eq(t.torn, 0);
	tasks_scene(&t, &m, &w, &g, &a, &b, &r);
	p = tasks_named(&t, "py");
	tasks_named(&t, "eager");
	tasks_expect_frames(m, main_fn, main_lines, 3);
	ck_assert_int_eq(m->state, TASK_PENDING);
	ck_assert_int_eq(m->nawaiting, 2);
	ck_assert(has(m->awaiting, m->nawaiting, sc.gathered));
	ck_assert(has(m->awaiting, m->nawaiting, sc.worker));
	ck_assert(w->nawaited_by == 1 && w->awaited_by[0] == sc.main);
	ck_assert(g->nawaited_by == 1 && g->awaited_by[0] == sc.main);
	ck_assert(a->cycle && a->cycle == b->cycle && !m->cycle);
	ck_assert_int_eq(t.ncycles, 1);
	ck_assert_int_eq(r->state, TASK_RUNNING);
	ck_assert(r->joined);
	tasks_expect_frames(r, run_fn, run_lines, 2);
	ck_assert(r->tstate != 0 && r->tstate == m->tstate);
	ck_assert_int_eq(p->state, TASK_PENDING);
	ck_assert_int_eq(p->nframes, 1);
	ck_assert_str_eq(p->frames[0].function, "Event.wait");
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* Garbage in the registry is counted torn; an await chain that loops ends;
 * a huge set is refused, not walked. */
START_TEST(test_hostile)
{
	const struct py_layout *L;
	struct py_tasks t;
	struct scene sc;
	char err[256];
	uint64_t junk, g;

	build(&sc, _i);
	L = sc.fp->L;
	junk = fp_object(sc.fp, FP_OBJ, sc.fut_type, 200);	/* a future, not a task */
	fp_w64(sc.fp, fp_r64(sc.fp, sc.data + L->o.set_table) + 16 * 7,
	       weakref(&sc, junk));
	g = fp_r64(sc.fp, sc.dla + sc.A.task.coro);	/* dl-a's coroutine awaits itself */
	fp_w64(sc.fp, g + sc.A.legacy.gen_iframe + L->frame.localsplus, g);
	if (sc.A.legacy.resume_op[0]) {
		uint64_t next = fp_r64(sc.fp, g + sc.A.legacy.gen_iframe + L->frame.lasti) + 2;

		fp_w8(sc.fp, next, sc.A.legacy.resume_op[0]);
		fp_w8(sc.fp, next + 1, 3);
	} else {
		fp_w8(sc.fp, g + sc.A.legacy.gen_frame_state, (uint8_t)sc.A.gen_suspended_yield_from);
	}
	fp_w32(sc.fp, sc.dlb + sc.A.task.state, 7);
	ck_assert_msg(locate_and_read(&sc, &t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(t.n, 7);	/* not the future, not dl-b */
	ck_assert_int_eq(t.torn, 1);	/* dl-b's state is no state */
	ck_assert_int_eq(tasks_named(&t, "dl-a")->nframes, 1);
	py_tasks_free(&t);
	/* A set with 2^41 slots. */
	fp_w64(sc.fp, sc.data + L->o.set_mask, (1ull << 41) - 1);
	ck_assert_msg(locate_and_read(&sc, &t, err, sizeof(err)) == 0, "%s", err);
	ck_assert(t.torn >= 1);
	ck_assert_int_eq(t.n, 1 + 1);	/* the eager one and the running one */
	py_tasks_free(&t);
	fp_free(sc.fp);
}
END_TEST

/* More awaiters than the model's one bound, either way: a task that
 * TASKS_OVER tasks are blocked on, and one that as many children of its
 * TaskGroup have as their awaiter (all of them in the eager set, of 4096
 * slots).  Each keeps ASYNCIO_MAX_AWAITERS edges, the rest counted cut:
 * what check_asyncio.c asks of the 3.14+ reader. */
START_TEST(test_bound)
{
	uint64_t *eager = xcalloc(4096, sizeof(uint64_t)), hub, parent, cb;
	struct py_tasks t;
	struct scene sc;
	char err[256];
	int n = 0;

	build(&sc, _i);
	eager[n++] = sc.eager;
	hub = eager[n++] = task(&sc, "hub", coro(&sc, C_WAIT, 1, 0, false), 0, sc.loop);
	parent = eager[n++] = task(&sc, "parent", coro(&sc, C_WORK, 1, 0, false), 0, sc.loop);
	cb = group_callback(&sc, parent);
	for (int i = 0; i < TASKS_OVER; i++) {
		uint64_t child = task(&sc, "child", coro(&sc, C_STEP, 0, 0, false), 0, sc.loop);

		fp_w64(sc.fp, child + sc.A.legacy.callback0, cb);
		eager[n++] = child;
		eager[n++] = task(&sc, "awaiter", coro(&sc, C_STEP, 1, 0, false), hub, sc.loop);
	}
	set_fill(&sc, sc.eager_set, eager, 4096);
	ck_assert_msg(locate_and_read(&sc, &t, err, sizeof(err)) == 0, "%s", err);
	tasks_expect_bound(&t, 8 + 2 * TASKS_OVER + 2, hub);
	py_tasks_free(&t);
	free(eager);
	fp_free(sc.fp);
}
END_TEST

/* Hostile gathers, WIDE children each (all that is read of one). */
#define WIDE 1024
/* Memory reads one gather or child looked at takes, at the most: the
 * children's attribute and list, a type's name. */
#define READS_PER_VISIT 32

/* A list of n slots, each holding obj. */
static uint64_t list_of(struct scene *sc, uint64_t obj, size_t n)
{
	uint64_t *items = xcalloc(n, sizeof(*items)), list;

	for (size_t j = 0; j < n; j++)
		items[j] = obj;
	list = fp_list(sc->fp, items, n);
	free(items);
	return list;
}

/* A tree of gathers levels deep whose leaves gather "gathered" (WIDE
 * times; once where distinct, the most reads for the fewest children):
 * each gathers WIDE of the level below, one gather WIDE times or WIDE
 * distinct ones (that share one list).  Returns the root. */
static uint64_t gather_tree(struct scene *sc, int levels, bool distinct)
{
	uint64_t list = list_of(sc, sc->gathered, distinct ? 1 : WIDE), g = gather(sc, list);

	for (int k = 1; k < levels; k++) {
		list = list_of(sc, g, WIDE);
		if (distinct) {
			uint64_t arr = fp_r64(sc->fp, list + sc->fp->L->o.list_item);

			for (int j = 1; j < WIDE; j++)
				fp_w64(sc->fp, arr + 8 * j, fp_instance_again(sc->fp, g));
		}
		g = gather(sc, list);
	}
	return g;
}

/* main blocked on gather g: read within the gather budget's reads more
 * than plain (the scene's own), main awaiting "gathered" where linked,
 * cut awaits counted cut (-1: some). */
static void expect_gathers(struct scene *sc, uint64_t g, unsigned long plain, bool linked,
			   int cut)
{
	const struct py_task *m;
	unsigned long reads;
	struct py_tasks t;
	char err[256];

	fp_w64(sc->fp, sc->main + sc->A.task.fut_waiter, g);
	ck_assert_msg(read_counted(sc, &t, &reads, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(t.n, 8);
	ck_assert_msg(reads <= plain + READS_PER_VISIT * ASYNCIO_LEGACY_GATHER_VISITS(t.n),
		      "%lu reads (%lu without the gathers)", reads, plain);
	m = tasks_named(&t, "main");
	ck_assert(has(m->awaiting, m->nawaiting, sc->gathered) == linked);
	ck_assert_int_eq(m->nawaiting, 1 + linked);	/* and worker */
	if (cut >= 0)
		ck_assert_int_eq(t.edges_cut, cut);
	else
		ck_assert_int_gt(t.edges_cut, 0);
	py_tasks_free(&t);
}

/* Garbage gathers: one that gathers itself; trees of gathers WIDE wide,
 * of one gather at each level or of distinct ones, as deep as gathers are
 * followed (ASYNCIO_MAX_HOPS) and deeper; a list of more children than
 * are read.  Each gather is expanded once per task, the whole read stays
 * within its budget (ASYNCIO_LEGACY_GATHER_VISITS), and what is not
 * followed is counted cut. */
START_TEST(test_gathers)
{
	const struct py_layout *L;
	unsigned long plain;
	struct py_tasks t;
	struct scene sc;
	uint64_t list, g, arr;
	char err[256];

	build(&sc, _i);
	L = sc.fp->L;
	ck_assert_msg(read_counted(&sc, &t, &plain, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(t.edges_cut, 0);
	py_tasks_free(&t);
	/* Itself WIDE - 1 times, then "gathered". */
	list = list_of(&sc, sc.gathered, WIDE);
	g = gather(&sc, list);
	arr = fp_r64(sc.fp, list + L->o.list_item);
	for (int j = 0; j < WIDE - 1; j++)
		fp_w64(sc.fp, arr + 8 * j, g);
	expect_gathers(&sc, g, plain, true, 0);
	/* Hops 0 to ASYNCIO_MAX_HOPS are followed, no further: the gather
	 * one deeper is one await cut. */
	expect_gathers(&sc, gather_tree(&sc, ASYNCIO_MAX_HOPS + 1, false), plain, true, 0);
	expect_gathers(&sc, gather_tree(&sc, ASYNCIO_MAX_HOPS + 2, false), plain, false, 1);
	/* WIDE^8 distinct paths: the budget ends the walk. */
	expect_gathers(&sc, gather_tree(&sc, 8, true), plain, true, -1);
	/* WIDE + 100 children, WIDE read. */
	list = list_of(&sc, sc.gathered, WIDE);
	fp_w64(sc.fp, list + L->o.ob_size, WIDE + 100);
	expect_gathers(&sc, gather(&sc, list), plain, true, 100);
	fp_free(sc.fp);
}
END_TEST

/* A Task type of another size than the verified layout's: exit 6, and
 * one that changes after it was checked is not read. */
START_TEST(test_unverified)
{
	struct py_tasks t;
	struct scene sc;
	char err[256];

	struct pyinterp pi;
	struct mem *m;

	build(&sc, _i);
	fp_w64(sc.fp, sc.ctask + sc.fp->L->obj.tp_basicsize, sc.A.task.size + 8);
	ck_assert_int_eq(locate_and_read(&sc, &t, err, sizeof(err)),
			 status_fail(EXIT_UNSUPPORTED));
	ck_assert_msg(strstr(err, "unverified"), "%s", err);
	fp_free(sc.fp);
	/* Checked when located, another size when read: no C task is read. */
	build(&sc, _i);
	m = fp_mem(sc.fp);
	fp_pyinterp(sc.fp, &pi);
	ck_assert_int_eq(asyncio_locate(&(struct locate_src){ .what = "fake" }, m, &pi, &sc.A,
					   err, sizeof(err)), 0);
	mem_close(m);
	fp_w64(sc.fp, sc.ctask + sc.fp->L->obj.tp_basicsize, sc.A.task.size + 8);
	m = fp_mem(sc.fp);
	ck_assert_int_eq(asyncio_tasks(m, &pi, &sc.A, NULL, &t, err, sizeof(err)), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.v[0].name, "py");
	py_tasks_free(&t);
	mem_close(m);
	fp_free(sc.fp);
}
END_TEST

/* 3.13t's layout is 3.13's behind a header 16 bytes longer: every object
 * field moves by 16, the frame's stacktop and the frame states do not;
 * no other free-threaded build has one (--async refuses them). */
START_TEST(test_free_threaded)
{
#define AT(f) offsetof(struct asyncio_layout, f)
	static const size_t moved[] = {
		AT(task.size), AT(task.name), AT(task.state), AT(task.fut_waiter), AT(task.coro),
		AT(legacy.loop), AT(legacy.callback0), AT(legacy.callbacks), AT(legacy.wr_object),
		AT(legacy.im_self), AT(legacy.gen_iframe), AT(legacy.gen_frame_state),
		AT(type_base), AT(set_mask), AT(set_table),
	};
#undef AT
	struct asyncio_layout g, t;

	ck_assert(asyncio_legacy_version(13, 0, &g) && asyncio_legacy_version(13, 1, &t));
	for (size_t i = 0; i < ARRAY_SIZE(moved); i++) {
		uint32_t a, b;

		memcpy(&a, (char *)&g + moved[i], 4);
		memcpy(&b, (char *)&t + moved[i], 4);
		ck_assert_msg(b == a + 16, "field at %zu: 3.13t %u, 3.13 %u", moved[i], b, a);
	}
	ck_assert_uint_eq(t.legacy.stacktop, g.legacy.stacktop);
	ck_assert_int_eq(t.gen_suspended, g.gen_suspended);
	ck_assert_int_eq(t.gen_suspended_yield_from, g.gen_suspended_yield_from);
	ck_assert(t.legacy.on && !asyncio_legacy_version(12, 1, &t) &&
		  !asyncio_legacy_version(14, 1, &t));
}
END_TEST

/* Located and read through m, proved through direct (NULL: paused). */
static void read_proved(struct scene *sc, struct mem *m, struct mem *direct, struct py_tasks *out)
{
	struct pyinterp pi;
	char err[256];

	fp_pyinterp(sc->fp, &pi);
	ck_assert_msg(asyncio_locate(&(struct locate_src){ .what = "fake" }, m, &pi, &sc->A,
					err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(asyncio_tasks(m, &pi, &sc->A, direct, out, err, sizeof(err)) == 0, "%s",
		      err);
}

/* A task shown running is proved so in the read that gives its frames
 * (issue 30): its coroutine's frame on its thread's stack (and, a C task,
 * its coroutine pointer), re-read together.  Between two tasks (runner in
 * _current_tasks, its coroutine suspended, the thread in the loop): shown
 * pending with its own frames, and counted.  A read torn between the two
 * is made again; one that never holds is left out.  A loop whose thread
 * is not known: every thread's stack is looked at. */
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
	loopf = fp_r64(sc.fp, g + sc.A.legacy.gen_iframe + L->frame.back);
	m = fp_mem(sc.fp);

	read_proved(&sc, m, m, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_RUNNING);
	ck_assert(r->joined);
	tasks_expect_frames(r, run_fn, run_lines, 2);
	ck_assert_int_eq(t.torn, 0);
	ck_assert_int_eq(t.not_running, 0);
	py_tasks_free(&t);

	/* By the proof the thread is back in the loop. */
	tasks_thread_frame(sc.fp, sc.tstate, loopf);
	fp_w8(sc.fp, g + sc.A.legacy.gen_frame_state, (uint8_t)sc.A.gen_suspended);
	direct = fp_mem(sc.fp);
	read_proved(&sc, m, direct, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_PENDING);
	ck_assert(!r->joined);
	ck_assert_int_eq(r->nframes, 1);
	ck_assert_str_eq(r->frames[0].function, "work");
	ck_assert_int_eq(t.not_running, 1);
	ck_assert_int_eq(t.torn, 0);
	ck_assert_int_eq(t.n, 8);
	py_tasks_free(&t);

	/* Paused there: the same, from one read. */
	read_proved(&sc, direct, NULL, &t);
	ck_assert_int_eq(tasks_named(&t, "runner")->state, TASK_PENDING);
	ck_assert_int_eq(t.not_running, 1);
	py_tasks_free(&t);
	mem_close(direct);

	/* Torn every time: by the proof the thread's frame is garbage. */
	tasks_thread_frame(sc.fp, sc.tstate, 0xdead0000);
	direct = fp_mem(sc.fp);
	read_proved(&sc, m, direct, &t);
	ck_assert(!tasks_has(&t, "runner"));
	ck_assert_int_eq(t.torn, 1);
	ck_assert_int_eq(t.n, 7);
	py_tasks_free(&t);
	mem_close(direct);
	mem_close(m);
	fp_free(sc.fp);

	/* The loop's _thread_id names no thread: found on the stack of the
	 * one there is. */
	build(&sc, _i);
	fp_w64(sc.fp, sc.tstate + sc.fp->L->tstate.thread_id, IDENT + 1);
	m = fp_mem(sc.fp);
	read_proved(&sc, m, NULL, &t);
	r = tasks_named(&t, "runner");
	ck_assert_int_eq(r->state, TASK_RUNNING);
	ck_assert(r->joined);
	ck_assert_uint_eq(r->tstate, sc.tstate);
	ck_assert_uint_eq(tasks_named(&t, "main")->tstate, 0);
	py_tasks_free(&t);
	mem_close(m);
	fp_free(sc.fp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("asyncio_legacy");
	TCase *tc = tcase_create("versions");

	tcase_add_loop_test(tc, test_graph, 11, 14);
	tcase_add_loop_test(tc, test_hostile, 11, 14);
	tcase_add_loop_test(tc, test_unverified, 11, 14);
	tcase_add_loop_test(tc, test_bound, 11, 14);
	tcase_add_loop_test(tc, test_gathers, 11, 14);
	tcase_add_loop_test(tc, test_running_proved, 11, 14);
	tcase_add_test(tc, test_free_threaded);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
