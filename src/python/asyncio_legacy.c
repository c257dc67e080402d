/* Reading asyncio tasks out of a 3.11-3.13 process (see asyncio_legacy.h).
 *
 * Everything here is read from a process that may run on: each registry,
 * set and list is read bounded, every object is checked to be what it
 * should be (a task's type derives from the Task type its module names,
 * its state is one of three), and with a recheck memory each task's
 * fields are read again after its frames, a task that moved meanwhile
 * dropped and counted as torn.
 */
#include "python/asyncio_legacy.h"
#include "python/asyncio_int.h"
#include "python/pyobj.h"
#include "python/taskrun.h"
#include "process/mem.h"
#include "process/readset.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYPE_DEPTH 16		/* tp_base links from a type to Task */

bool asyncio_legacy_version(int minor, int free_threaded, struct asyncio_layout *A)
{
	return asyncio_legacy_layout(minor, free_threaded, A) == 0;
}

struct by_addr {
	uint64_t addr;
	int i;
};

static int by_addr_cmp(const void *a, const void *b)
{
	const struct by_addr *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* --- objects ------------------------------------------------------------- */

/* An instance attribute, also of an object whose C base keeps its own
 * __dict__ slot (a Python subclass of the 3.11/3.12 C Future, such as
 * _GatheringFuture: tp_dictoffset > 0, no managed dict).  A type with a
 * managed dict says so with a negative tp_dictoffset; 0 is no __dict__ at
 * all (a C object, such as uvloop's loop). */
int legacy_attr(struct lreader *r, uint64_t obj, const char *name, uint64_t *value)
{
	uint64_t type, dict;
	int64_t off;

	*value = 0;
	if (mem_read_u64(r->m, obj + r->L->obj.ob_type, &type) < 0 || !type ||
	    mem_read(r->m, type + r->L->obj.tp_dictoffset, &off, 8) < 0)
		return -EFAULT;
	if (off < 0)
		return py_instance_attr(&r->c, obj, name, value);
	if (!off || off > 4096 || mem_read_u64(r->m, obj + off, &dict) < 0 || !dict)
		return -ENOENT;
	return py_dict_get_str(&r->c, dict, name, value);
}

/* The name of the type at address type (cached for this read). */
static const char *type_name_at(struct lreader *r, uint64_t type)
{
	uint64_t tp_name;
	char buf[48];
	int i;

	if (!type)
		return NULL;
	for (i = 0; i < r->ntypes; i++)
		if (r->types[i].type == type)
			return r->types[i].name;
	if (i == LEGACY_TYPE_CACHE)
		i = LEGACY_TYPE_CACHE - 1;	/* full: the last slot turns over */
	if (mem_read_u64(r->m, type + r->L->obj.tp_name, &tp_name) < 0 ||
	    mem_read_cstr(r->m, tp_name, buf, sizeof(buf)) < 0)
		return NULL;
	memcpy(r->types[i].name, buf, sizeof(buf));
	r->types[i].type = type;
	if (r->ntypes < LEGACY_TYPE_CACHE)
		r->ntypes++;
	return r->types[i].name;
}

const char *legacy_type_name(struct lreader *r, uint64_t obj)
{
	uint64_t type;

	if (!obj || mem_read_u64(r->m, obj + r->L->obj.ob_type, &type) < 0)
		return NULL;
	return type_name_at(r, type);
}

bool legacy_type_is(struct lreader *r, uint64_t obj, const char *name)
{
	const char *t = legacy_type_name(r, obj);

	return t && !strcmp(t, name);
}

/* Which Task obj is an instance of: 1 the C one, 2 the Python one, 0
 * neither (its type and its bases, a bounded walk). */
static int task_kind(struct lreader *r, uint64_t obj, uint64_t *typep)
{
	uint64_t t;

	if (mem_read_u64(r->m, obj + r->L->obj.ob_type, &t) < 0 || !t)
		return 0;
	*typep = t;
	for (int depth = 0; t && depth < TYPE_DEPTH; depth++) {
		if (t == r->ctask && r->A->legacy.c_task)
			return 1;
		if (t == r->pytask)
			return 2;
		if (mem_read_u64(r->m, t + r->A->type_base, &t) < 0)
			break;
	}
	return 0;
}

/* A pure-Python task's _state: a str, on the instance once it is done
 * (the class says PENDING until then). */
static int32_t py_state(struct lreader *r, uint64_t obj)
{
	uint64_t s;
	char *v = NULL;
	int32_t st;
	int rc = legacy_attr(r, obj, "_state", &s);

	if (rc < 0 && rc != -ENOENT)
		return -1;
	if (rc < 0 || !s)
		return 0;
	if (py_str(&r->c, s, 16, &v) < 0)
		return -1;
	st = !strcmp(v, "PENDING") ? 0 : !strcmp(v, "CANCELLED") ? 1 :
	     !strcmp(v, "FINISHED") ? 2 : -1;
	free(v);
	return st;
}

/* A C task's fields from its struct's bytes b; 0 or -EAGAIN. */
static int c_fields(const struct asyncio_layout *A, const uint8_t *b, struct lraw *raw)
{
	raw->state = field_i32(b, A->task.state);
	raw->coro = field_u64(b, A->task.coro);
	raw->name = field_u64(b, A->task.name);
	raw->waiter = field_u64(b, A->task.fut_waiter);
	raw->loop = field_u64(b, A->legacy.loop);
	return raw->state < 0 || raw->state > 2 || !raw->name ? -EAGAIN : 0;
}

/* The fields of task obj of the given kind into *raw; 0 or -EAGAIN. */
static int read_fields(struct lreader *r, uint64_t obj, int kind, struct lraw *raw)
{
	const struct asyncio_layout *A = r->A;
	uint8_t b[256];

	if (kind == 2) {
		raw->py = true;
		raw->state = py_state(r, obj);
		if (legacy_attr(r, obj, "_coro", &raw->coro) < 0 ||
		    legacy_attr(r, obj, "_name", &raw->name) < 0 ||
		    legacy_attr(r, obj, "_loop", &raw->loop) < 0)
			return -EAGAIN;
		legacy_attr(r, obj, "_fut_waiter", &raw->waiter);
		return raw->state < 0 || raw->state > 2 || !raw->name ? -EAGAIN : 0;
	}
	if (A->task.size > sizeof(b) || mem_read(r->m, obj, b, A->task.size) < 0)
		return -EAGAIN;
	return c_fields(A, b, raw);
}

/* --- threads ----------------------------------------------------------- */

/* The thread state of the thread running loop (its _thread_id, set while
 * it runs), or 0. */
static uint64_t loop_tstate(struct lreader *r, uint64_t loop)
{
	uint64_t id = 0, ts = 0;
	int64_t ident;

	for (int i = 0; i < r->nloops; i++)
		if (r->loop[i] == loop)
			return r->loop_tstate[i];
	if (loop && legacy_attr(r, loop, "_thread_id", &id) == 0 && id &&
	    legacy_type_is(r, id, "int") && py_long(&r->c, id, &ident) == 0)
		for (int k = 0; k < r->nts && !ts; k++)
			if (r->ts[k].nparts && r->ts[k].ident == (uint64_t)ident)
				ts = r->ts[k].addr;
	if (r->nloops < LEGACY_MAX_LOOPS) {
		r->loop[r->nloops] = loop;
		r->loop_tstate[r->nloops++] = ts;
	}
	return ts;
}

/* --- finding the tasks ---------------------------------------------------- */

int legacy_task_index(const struct lreader *r, uint64_t addr)
{
	return py_tasks_lookup(&r->ix, r->out, addr);
}

static bool is_running(const struct lreader *r, uint64_t obj)
{
	for (int i = 0; i < r->nrunning; i++)
		if (r->running[i] == obj)
			return true;
	return false;
}

/* Add the task at obj (once).  An object of another class (a task class
 * derived from neither Task, registered by hand) is skipped; a task whose
 * fields are not a task's is counted torn. */
static void add_task(struct lreader *r, uint64_t obj, const uint8_t *b)
{
	struct lraw raw = { 0 };
	struct py_task t = { .addr = obj };
	int kind, rc;

	if (!obj || legacy_task_index(r, obj) >= 0)
		return;
	if (r->out->n >= ASYNCIO_MAX_TASKS) {
		r->out->truncated = true;
		return;
	}
	/* Its struct already read (b): the C Task's own instances need no
	 * more reads to be known as tasks. */
	if (b && r->ctask && (raw.type = field_u64(b, r->L->obj.ob_type)) == r->ctask)
		kind = 1;
	else if (!(kind = task_kind(r, obj, &raw.type)))
		return;
	rc = b && kind == 1 ? c_fields(r->A, b, &raw) : read_fields(r, obj, kind, &raw);
	if (rc < 0 ||
	    !(t.name = asyncio_task_name(&r->c, raw.name))) {
		r->out->torn++;
		return;
	}
	t.state = raw.state ? TASK_DONE : is_running(r, obj) ? TASK_RUNNING : TASK_PENDING;
	t.tstate = loop_tstate(r, raw.loop);
	ALLOC_GROW(r->out->v, r->out->n + 1, r->cap);
	ALLOC_GROW(r->raw, r->out->n + 1, r->rawcap);
	r->raw[r->out->n] = raw;
	hashidx_add(&r->ix, hash_u64(obj), (uint32_t)r->out->n);
	r->out->v[r->out->n++] = t;
}

/* Read blocks of len bytes at v[0..n) into bytes (block i at i * len) in
 * a few merged reads, in address order; ok[i]: block i was read. */
static void read_blocks(struct mem *m, const uint64_t *v, size_t n, size_t len,
			uint8_t *bytes, bool *ok)
{
	struct by_addr *s = xcalloc(n + 1, sizeof(*s));
	struct mem_block *b = xcalloc(n + 1, sizeof(*b));
	bool *got = xcalloc(n + 1, sizeof(*got));
	struct merge_buf mb = { 0 };

	for (size_t i = 0; i < n; i++)
		s[i] = (struct by_addr){ v[i], (int)i };
	qsort(s, n, sizeof(*s), by_addr_cmp);
	for (size_t k = 0; k < n; k++)
		b[k] = (struct mem_block){ s[k].addr, bytes + (size_t)s[k].i * len, len };
	mem_read_merged(m, b, (int)n, got, &mb);
	for (size_t k = 0; k < n; k++)
		ok[s[k].i] = got[k];
	merge_buf_release(&mb);
	free(got);
	free(b);
	free(s);
}

/* Weak references to what they refer to (0: unreadable, or dead: a dead
 * one refers to None), all read at once. */
static void referents(struct lreader *r, uint64_t *items, size_t n)
{
	uint64_t *at = xcalloc(n + 1, sizeof(*at));
	bool *ok = xcalloc(n + 1, sizeof(*ok));

	for (size_t i = 0; i < n; i++)
		at[i] = items[i] + r->A->legacy.wr_object;
	read_blocks(r->m, at, n, 8, (uint8_t *)items, ok);
	for (size_t i = 0; i < n; i++)
		if (!ok[i])
			items[i] = 0;
	free(ok);
	free(at);
}

/* The tasks at objs, their structs read at once (None and objects
 * that are no tasks skipped). */
static void add_tasks(struct lreader *r, const uint64_t *objs, size_t n)
{
	size_t size = r->A->task.size;
	uint8_t *bytes = xcalloc(n + 1, size);
	bool *ok = xcalloc(n + 1, sizeof(*ok));

	read_blocks(r->m, objs, n, size, bytes, ok);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = ok[i] ? bytes + i * size : NULL;
		const char *t = b ? type_name_at(r, field_u64(b, r->L->obj.ob_type))
				  : legacy_type_name(r, objs[i]);

		if (objs[i] && !(t && !strcmp(t, "NoneType")))
			add_task(r, objs[i], b);
	}
	free(ok);
	free(bytes);
}

/* The tasks of a set (of tasks, or of weak references to them). */
static void add_set(struct lreader *r, uint64_t set, bool weak)
{
	uint64_t used = 0, *items;
	size_t n = 0, max;

	/* Room for what it holds now and some more added while it is read. */
	if (!set || mem_read_u64(r->m, set + r->L->o.set_used, &used) < 0)
		return;
	max = used + 64 < ASYNCIO_MAX_TASKS ? used + 64 : ASYNCIO_MAX_TASKS;
	items = xcalloc(max, sizeof(*items));
	if (py_set_items(&r->c, set, items, max, &n) < 0)
		r->out->torn++;	/* resized while read */
	if (weak)
		referents(r, items, n);
	add_tasks(r, items, n);
	free(items);
}

/* Where the last lookups found asyncio.tasks and its names, for the first
 * few interpreters: each sample proves an entry (py_dict_slot_holds: the
 * few words that lead to it, as found) before it uses it, instead of
 * scanning sys.modules and the module's dict again.  Only a hint, so one
 * per thread, whatever process it was found in. */
#define WHERE_INTERPS 4
enum { W_CURRENT, W_CTASK, W_PYTASK, W_ALL, W_SCHEDULED, W_EAGER, W_N };
static const char *const where_key[W_N] = {
	"_current_tasks", "_CTask", "_PyTask", "_all_tasks", "_scheduled_tasks", "_eager_tasks"
};
struct where {
	uint64_t interp, md;
	struct py_dict_slot mods;	/* sys.modules["asyncio.tasks"] */
	struct py_dict_slot slot[W_N];	/* md[where_key[i]] */
};
static _Thread_local struct where where_cache[WHERE_INTERPS];

static struct where *where_of(int k)
{
	return k < WHERE_INTERPS ? &where_cache[k] : NULL;
}

/* md[where_key[w]] (0 when absent): proved where it was last, else
 * looked up (and remembered in wh, if any). */
static int md_get(struct lreader *r, struct where *wh, uint64_t md, int w, uint64_t *value)
{
	struct py_dict_slot one, *s = wh ? &wh->slot[w] : &one;
	int rc;

	if (wh && s->dict == md && py_dict_slot_holds(&r->c, s, where_key[w])) {
		*value = s->value;
		return 0;
	}
	rc = py_dict_slot_str(&r->c, md, where_key[w], s);
	*value = s->value;
	return rc;
}

/* The asyncio.tasks module's dict in interpreter interp, or 0. */
static uint64_t tasks_module(struct lreader *r, uint64_t interp, struct where *wh)
{
	struct py_dict_slot one, *s = wh ? &wh->mods : &one;
	uint64_t modules, md;

	if (mem_read_u64(r->m, interp + r->L->interp.modules, &modules) < 0 || !modules)
		return 0;
	if (wh && wh->interp == interp && s->dict == modules &&
	    py_dict_slot_holds(&r->c, s, "asyncio.tasks") &&
	    mem_read_u64(r->m, s->value + r->L->o.module_dict, &md) == 0 && md == wh->md)
		return md;
	if (py_dict_slot_str(&r->c, modules, "asyncio.tasks", s) < 0 || !s->value ||
	    mem_read_u64(r->m, s->value + r->L->o.module_dict, &md) < 0) {
		memset(s, 0, sizeof(*s));
		return 0;
	}
	if (wh) {
		wh->interp = interp;
		wh->md = md;
	}
	return md;
}

/* _current_tasks: the running task of each running loop. */
static void read_running(struct lreader *r, struct where *wh, uint64_t md)
{
	uint64_t cur, keys[LEGACY_MAX_LOOPS];
	size_t n = 0;

	if (md_get(r, wh, md, W_CURRENT, &cur) < 0 || !cur ||
	    py_dict_items(&r->c, cur, keys, r->running, LEGACY_MAX_LOOPS, &n) < 0)
		n = 0;
	r->nrunning = (int)n;
}

/* The Task types asyncio.tasks (md, its dict) names: the C one only while
 * it has the verified layout's size (what was checked when located may
 * not be what the module holds now).  -1 when they cannot be read. */
static int task_types(struct lreader *r, struct where *wh, uint64_t md)
{
	uint64_t size = 0;

	if (md_get(r, wh, md, W_CTASK, &r->ctask) < 0 ||
	    md_get(r, wh, md, W_PYTASK, &r->pytask) < 0)
		return -1;
	if (r->ctask && (mem_read_u64(r->m, r->ctask + r->L->obj.tp_basicsize, &size) < 0 ||
			 size != r->A->task.size))
		r->ctask = 0;
	return 0;
}

static void read_registries(struct lreader *r, struct where *wh, uint64_t md)
{
	static const int weak[] = { W_ALL, W_SCHEDULED };
	uint64_t obj, data;

	if (task_types(r, wh, md) < 0)
		return;
	read_running(r, wh, md);
	for (size_t i = 0; i < ARRAY_SIZE(weak); i++)
		if (md_get(r, wh, md, weak[i], &obj) == 0 && obj &&
		    legacy_attr(r, obj, "data", &data) == 0)
			add_set(r, data, true);
	if (md_get(r, wh, md, W_EAGER, &obj) == 0 && obj)
		add_set(r, obj, false);
	/* A running task is registered too; this finds one that is not yet
	 * (or no longer) in a set, such as an eager task being started. */
	for (int i = 0; i < r->nrunning; i++)
		add_task(r, r->running[i], NULL);
}

static void read_interps(struct lreader *r)
{
	uint64_t interp, md;

	if (mem_read_u64(r->m, r->pi->runtime + r->L->runtime.interpreters_head, &interp) < 0)
		return;
	for (int k = 0; interp && k < ASYNCIO_MAX_INTERPS; k++) {
		if ((md = tasks_module(r, interp, where_of(k))))
			read_registries(r, where_of(k), md);
		if (mem_read_u64(r->m, interp + r->L->interp.next, &interp) < 0)
			break;
	}
}

/* --- coroutine stacks ---------------------------------------------------- */

/* Suspended in an await?  3.13 says so in the frame state; 3.11 and 3.12
 * in the instruction after the one it stopped at (what _PyGen_yf reads). */
static bool in_await(struct lreader *r, int8_t state, uint64_t lasti)
{
	const struct asyncio_layout *A = r->A;
	uint16_t next;
	uint8_t op;

	if (!A->legacy.resume_op[0])
		return state == A->gen_suspended_yield_from;
	if (state != A->gen_suspended || mem_read(r->m, lasti + 2, &next, 2) < 0)
		return false;
	op = next & 0xff;
	return (op == A->legacy.resume_op[0] || op == A->legacy.resume_op[1]) && next >> 8 >= 2;
}

/* The frames of the await chain from coro inwards (outermost first). */
static int coro_chain(struct lreader *r, uint64_t coro, struct coro_frame *cf, bool *cut)
{
	const struct py_layout *L = r->L;
	const struct asyncio_layout *A = r->A;
	int n = 0;

	while (coro &&
	       (legacy_type_is(r, coro, "coroutine") || legacy_type_is(r, coro, "generator"))) {
		uint64_t frame = coro + A->legacy.gen_iframe;
		int32_t top;
		int8_t st;

		if (n >= ASYNCIO_MAX_CORO_DEPTH) {
			*cut = true;
			break;
		}
		if (mem_read(r->m, coro + A->legacy.gen_frame_state, &st, 1) < 0 ||
		    (st != A->gen_suspended && st != A->gen_suspended_yield_from &&
		     st != A->gen_executing) ||
		    mem_read_u64(r->m, frame + L->frame.code, &cf[n].code) < 0 ||
		    mem_read_u64(r->m, frame + L->frame.lasti, &cf[n].lasti) < 0)
			break;
		cf[n++].frame = frame;
		if (!in_await(r, st, cf[n - 1].lasti))
			break;
		/* The awaited object tops the frame's value stack. */
		if (mem_read(r->m, frame + A->legacy.stacktop, &top, 4) < 0 ||
		    top < (int32_t)A->yield_from_slot || top > 65536 ||
		    mem_read_u64(r->m, frame + L->frame.localsplus +
				 8 * (uint64_t)(top - A->yield_from_slot), &coro) < 0)
			break;
		for (int i = 0; i < n; i++)
			if (cf[i].frame == coro + A->legacy.gen_iframe)
				coro = 0;	/* a loop: garbage */
	}
	return n;
}

static void task_frames(struct lreader *r, struct frame_decoder *fd, int i, struct coro_frame *cf)
{
	struct py_task *t = &r->out->v[i];
	bool cut = false;
	int n = -1;

	/* Running: its thread's frames, innermost out to its own, proved
	 * (taskrun.h); else it is left out as torn (drop_torn()). */
	if (t->state == TASK_RUNNING) {
		struct task_run tr;

		task_run_words(r->m, r->pi, r->A, t->tstate, t->addr,
			       r->raw[i].coro + r->A->legacy.gen_iframe, &tr);
		if (task_run_frames(r->m, r->direct, r->L, r->ts, r->nts, &tr, t, r->out, cf, &n,
				    &cut) < 0) {
			r->raw[i].unproved = true;
			return;
		}
	}
	if (!t->joined)
		n = coro_chain(r, r->raw[i].coro, cf, &cut);
	t->frames_truncated = cut;
	asyncio_decode_frames(fd, t, cf, n, !t->joined);
	if (t->nframes > 0 && !t->joined) {
		uint64_t inner[2] = { cf[0].frame, t->nframes > 1 ? cf[1].frame : 0 };

		asyncio_task_wait(r->m, r->pi, t, inner);
	}
}

/* --- torn tasks ------------------------------------------------------------ */

/* The structs of the C tasks among r's, read again through m in a few
 * merged reads: task i's at bytes + i * task.size, ok[i] saying whether
 * it was read. */
static void reread_structs(struct lreader *r, struct mem *m, uint8_t *bytes, bool *ok)
{
	size_t size = r->A->task.size, n = (size_t)r->out->n + 1, nc = 0;
	uint64_t *addr = xcalloc(n, sizeof(*addr));
	int *which = xcalloc(n, sizeof(*which));
	uint8_t *got_bytes = xcalloc(n, size);
	bool *got = xcalloc(n, sizeof(*got));

	for (int i = 0; i < r->out->n; i++)
		if (!r->raw[i].py) {
			which[nc] = i;
			addr[nc++] = r->out->v[i].addr;
		}
	read_blocks(m, addr, nc, size, got_bytes, got);
	for (size_t k = 0; k < nc; k++) {
		memcpy(bytes + (size_t)which[k] * size, got_bytes + k * size, size);
		ok[which[k]] = got[k];
	}
	free(got);
	free(got_bytes);
	free(which);
	free(addr);
}

/* Is task i (read again: a C task's struct in b, when ok) what it was
 * read as?  Its type the same and still a Task's, its fields unmoved. */
static bool still_same(struct lreader *again, int i, const uint8_t *b, bool ok)
{
	const struct lraw *was = &again->raw[i];
	uint64_t addr = again->out->v[i].addr;
	struct lraw now = { 0 };
	int kind;

	if (was->py) {
		if ((kind = task_kind(again, addr, &now.type)) != 2 ||
		    read_fields(again, addr, kind, &now) < 0)
			return false;
	} else {
		/* The C Task itself was proved this round (task_types). */
		if (!ok || (now.type = field_u64(b, again->L->obj.ob_type)) != was->type ||
		    (now.type != again->ctask && task_kind(again, addr, &now.type) != 1) ||
		    c_fields(again->A, b, &now) < 0)
			return false;
	}
	return now.type == was->type && now.state == was->state && now.coro == was->coro &&
	       now.name == was->name && now.waiter == was->waiter;
}

/* Read every task again through recheck (the process runs on): one whose
 * type or fields moved finished or went meanwhile, and its frames may not
 * be its own.  Dropped and counted, as is one whose run was not proved
 * (also paused: recheck NULL).  The C tasks' structs are read in a few
 * merged reads, not one call per field. */
static void drop_torn(struct lreader *r, struct mem *recheck)
{
	struct lreader again = *r;
	size_t size = r->A->task.size;
	uint8_t *bytes = xcalloc((size_t)r->out->n + 1, size);
	bool *ok = xcalloc((size_t)r->out->n + 1, sizeof(*ok));
	int kept = 0;

	again.m = recheck;
	again.c.m = recheck;
	if (recheck)
		reread_structs(r, recheck, bytes, ok);
	for (int i = 0; i < r->out->n; i++) {
		if (r->raw[i].unproved ||
		    (recheck && !still_same(&again, i, bytes + (size_t)i * size, ok[i]))) {
			py_task_free_one(&r->out->v[i]);
			r->out->torn++;
			continue;
		}
		r->raw[kept] = r->raw[i];
		r->out->v[kept++] = r->out->v[i];
	}
	r->out->n = kept;
	free(bytes);
	free(ok);
	hashidx_clear(&r->ix);
	for (int i = 0; i < kept; i++)
		hashidx_add(&r->ix, hash_u64(r->out->v[i].addr), (uint32_t)i);
}
/* --- entry points -------------------------------------------------------- */

static int read_all(struct lreader *r, bool frames, struct mem *recheck, char *err,
		    size_t errlen)
{
	bool unproved = false;
	uint64_t gil;

	r->direct = recheck;
	r->ts = xcalloc(ASYNCIO_MAX_THREADS, sizeof(*r->ts));
	r->nts = pystack_tstates(r->m, r->pi, r->ts, ASYNCIO_MAX_THREADS, &gil, err, errlen);
	if (r->nts < 0)
		return r->nts;
	read_interps(r);
	if (frames) {
		struct frame_decoder *fd = frame_decoder_new(r->m, r->pi);
		struct coro_frame *cf = xcalloc(ASYNCIO_MAX_CORO_DEPTH + 1, sizeof(*cf));

		for (int i = 0; i < r->out->n; i++) {
			task_frames(r, fd, i, cf);
			unproved |= r->raw[i].unproved;
		}
		free(cf);
		frame_decoder_free(fd);
	}
	if (recheck || unproved)
		drop_torn(r, recheck);
	asyncio_legacy_resolve(r);
	py_tasks_mark_cycles(r->out);
	return 0;
}

static void reader_init(struct lreader *r, struct mem *m, const struct pyinterp *pi,
			const struct asyncio_layout *A, struct py_tasks *out)
{
	memset(r, 0, sizeof(*r));
	memset(out, 0, sizeof(*out));
	*r = (struct lreader){ .m = m, .pi = pi, .L = &pi->layout, .A = A,
			       .c = { m, &pi->layout }, .out = out };
}

static void reader_release(struct lreader *r)
{
	hashidx_release(&r->ix);
	free(r->raw);
	free(r->ts);
}

int asyncio_legacy_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 struct mem *recheck, struct py_tasks *out, char *err, size_t errlen)
{
	struct lreader r;
	int rc;

	reader_init(&r, m, pi, A, out);
	rc = read_all(&r, true, recheck, err, errlen);
	reader_release(&r);
	return rc;
}

static bool listed(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

int asyncio_legacy_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 uint64_t task, char **names, int max)
{
	uint64_t seen[ASYNCIO_CHAIN_MAX];
	const struct py_task *t;
	struct py_tasks tasks;
	struct lreader r;
	char err[256];
	int n = 0;

	reader_init(&r, m, pi, A, &tasks);
	if (max > ASYNCIO_CHAIN_MAX)
		max = ASYNCIO_CHAIN_MAX;
	t = read_all(&r, false, NULL, err, sizeof(err)) == 0 ? py_tasks_find(&tasks, task) : NULL;
	while (t && n < max && !listed(seen, n, t->addr)) {
		seen[n] = t->addr;	/* round a deadlock ring once */
		names[n++] = xstrdup(t->name);
		t = t->nawaited_by ? py_tasks_find(&tasks, t->awaited_by[0]) : NULL;
	}
	reader_release(&r);
	py_tasks_free(&tasks);
	return n;
}

/* The running task of the loop that thread ident runs. */
int asyncio_legacy_running(struct mem *m, const struct pyinterp *pi,
			   const struct asyncio_layout *A, uint64_t ident, uint64_t *task,
			   uint64_t *coro_frame)
{
	struct py_tasks none;
	struct lreader r;
	uint64_t interp, md, keys[LEGACY_MAX_LOOPS], loops[LEGACY_MAX_LOOPS];
	int rc = -ENOENT;

	reader_init(&r, m, pi, A, &none);
	if (mem_read_u64(m, pi->runtime + r.L->runtime.interpreters_head, &interp) < 0)
		return -ENOENT;
	for (int k = 0; interp && k < ASYNCIO_MAX_INTERPS && rc < 0; k++) {
		struct where *wh = where_of(k);

		if ((md = tasks_module(&r, interp, wh)) && task_types(&r, wh, md) == 0) {
			size_t n = 0;
			uint64_t cur = 0;

			if (md_get(&r, wh, md, W_CURRENT, &cur) < 0 || !cur ||
			    py_dict_items(&r.c, cur, loops, keys, LEGACY_MAX_LOOPS, &n) < 0)
				n = 0;
			for (size_t i = 0; i < n && rc < 0; i++) {
				struct lraw raw = { 0 };
				uint64_t id = 0;
				int64_t v;
				int kind;

				if (legacy_attr(&r, loops[i], "_thread_id", &id) < 0 ||
				    !legacy_type_is(&r, id, "int") || py_long(&r.c, id, &v) < 0 ||
				    (uint64_t)v != ident || !(kind = task_kind(&r, keys[i], &raw.type)) ||
				    read_fields(&r, keys[i], kind, &raw) < 0)
					continue;
				*task = keys[i];
				*coro_frame = raw.coro + A->legacy.gen_iframe;
				rc = 0;
			}
		}
		if (mem_read_u64(m, interp + r.L->interp.next, &interp) < 0)
			break;
	}
	return rc;
}

int asyncio_legacy_locate(struct mem *m, const struct pyinterp *pi, const char *what,
			  struct asyncio_layout *A, char *err, size_t errlen)
{
	struct py_tasks none;
	struct lreader r;
	uint64_t interp, md, size = 0, tpname;
	char name[32];
	bool found = false;

	reader_init(&r, m, pi, A, &none);
	A->legacy.c_task = 0;
	if (mem_read_u64(m, pi->runtime + r.L->runtime.interpreters_head, &interp) < 0)
		interp = 0;
	for (int k = 0; interp && k < ASYNCIO_MAX_INTERPS; k++) {
		if ((md = tasks_module(&r, interp, NULL)) &&
		    py_dict_get_str(&r.c, md, "_CTask", &r.ctask) == 0) {
			found = true;
			if (r.ctask && (mem_read_u64(m, r.ctask + r.L->obj.tp_basicsize, &size) < 0 ||
					mem_read_u64(m, r.ctask + r.L->obj.tp_name, &tpname) < 0 ||
					mem_read_cstr(m, tpname, name, sizeof(name)) < 0 ||
					strcmp(name, "_asyncio.Task") || size != A->task.size)) {
				snprintf(err, errlen, "the asyncio task layout of this build is "
					 "unverified (its _asyncio.Task is %llu bytes, expected %u)",
					 (unsigned long long)size, A->task.size);
				return status_fail(EXIT_UNSUPPORTED);
			}
			A->legacy.c_task |= r.ctask != 0;
		}
		if (mem_read_u64(m, interp + r.L->interp.next, &interp) < 0)
			break;
	}
	if (!found) {
		snprintf(err, errlen, "%s has not imported asyncio", what);
		return ASYNCIO_NOT_IMPORTED;
	}
	return 0;
}
