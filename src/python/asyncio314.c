/* Reading asyncio tasks out of a process (3.14+).
 *
 * Where they are: every task is linked, through the llist_node inside it,
 * into the list of the thread state that created it; when a thread exits
 * its tasks move to its interpreter's list.  Each thread state also points
 * at the task it is running.
 *
 * What they await: a task's coroutine is a generator object with its frame
 * inside it; suspended in an `await`, the awaited object tops that frame's
 * value stack, and where it is a coroutine too its frame is the next one
 * in.  Who awaits a task: 3.14 records it in the task (task_awaited_by: a
 * future or a set of them) -- the awaiting task itself for `await task` and
 * TaskGroup, the _GatheringFuture for gather, which in turn records the
 * task that awaits it; so awaiters are resolved through futures to tasks.
 */
#include "python/asyncio_int.h"
#include "python/codecache.h"
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

/* Awaiters resolved, and set slots read, over the whole read (or one
 * awaiter chain): sets of futures awaited by sets of futures could
 * otherwise multiply without end. */
#define RESOLVE_BUDGET 1000000L

/* --- types ------------------------------------------------------------- */

static int type_cached(const struct type_cache *tc, uint64_t type)
{
	for (int i = 0; i < tc->n; i++)
		if (tc->addr[i] == type)
			return tc->yes[i];
	return -1;
}

static void type_remember(struct type_cache *tc, uint64_t type, bool yes)
{
	if (tc->n < ASYNCIO_TYPE_CACHE) {
		tc->addr[tc->n] = type;
		tc->yes[tc->n++] = yes;
	}
}

/* Is obj a coroutine or a generator (what an await chain is made of)? */
static bool is_coro(struct asyncio_reader *r, uint64_t obj)
{
	char name[32];
	uint64_t type;
	int k;

	if (mem_read_u64(r->m, obj + r->L->obj.ob_type, &type) < 0 || !type)
		return false;
	if ((k = type_cached(&r->coro_types, type)) >= 0)
		return k;
	k = py_type_name(&r->c, obj, name, sizeof(name)) == 0 &&
	    (!strcmp(name, "coroutine") || !strcmp(name, "generator"));
	type_remember(&r->coro_types, type, k);
	return k;
}

/* Is obj an asyncio future (a Task, a Future or a subclass of either, such
 * as gather's _GatheringFuture)?  Its type chain reaches the C types. */
static bool is_future(struct asyncio_reader *r, uint64_t obj)
{
	uint64_t type, t, name;
	char buf[32];
	int k;

	if (mem_read_u64(r->m, obj + r->L->obj.ob_type, &type) < 0 || !type)
		return false;
	if ((k = type_cached(&r->fut_types, type)) >= 0)
		return k;
	k = 0;
	t = type;
	for (int depth = 0; t && depth < 16 && !k; depth++) {
		if (mem_read_u64(r->m, t + r->L->obj.tp_name, &name) < 0 ||
		    mem_read_cstr(r->m, name, buf, sizeof(buf)) < 0)
			break;
		k = !strcmp(buf, "_asyncio.Future") || !strcmp(buf, "_asyncio.Task");
		if (mem_read_u64(r->m, t + r->A->type_base, &t) < 0)
			break;
	}
	type_remember(&r->fut_types, type, k);
	return k;
}

/* --- the task lists ------------------------------------------------------ */

static int task_index(const struct asyncio_reader *r, uint64_t addr)
{
	return py_tasks_lookup(&r->ix, r->out, addr);
}

/* Read one task; 0, -EEXIST for one read already (the list loops), or
 * -EAGAIN for one that is not (or no longer) a live task. */
static int read_task(struct asyncio_reader *r, uint64_t addr, uint64_t tstate, uint64_t running)
{
	const struct asyncio_layout *A = r->A;
	struct raw_task rt = { 0 };
	struct py_task t = { .addr = addr, .tstate = tstate };
	int32_t state;

	const uint8_t *fresh = asyncio_memo_fresh(r, addr);

	if (A->task.size > TASK_READ_MAX)
		return -EAGAIN;
	if (fresh)
		memcpy(rt.bytes, fresh, A->task.size);
	else if (mem_read(r->m, addr, rt.bytes, A->task.size) < 0)
		return -EAGAIN;
	state = field_i32(rt.bytes, A->task.state);
	if (task_index(r, addr) >= 0)
		return -EEXIST;
	if (!field_u64(rt.bytes, r->L->obj.ob_type) || rt.bytes[A->task.is_task] != 1 ||
	    state < 0 || state > 2)
		return -EAGAIN;
	rt.coro = field_u64(rt.bytes, A->task.coro);
	rt.waiter = field_u64(rt.bytes, A->task.fut_waiter);
	rt.awaited_by = field_u64(rt.bytes, A->task.awaited_by);
	rt.is_set = rt.bytes[A->task.awaited_by_is_set];
	t.state = state ? TASK_DONE : addr == running ? TASK_RUNNING : TASK_PENDING;
	/* With a memo, the name is part of the task's result (asyncio_memo_result). */
	t.name = r->memo ? NULL : asyncio_task_name(&r->c, field_u64(rt.bytes, A->task.name));
	if (!t.name && !r->memo)
		return -EAGAIN;
	ALLOC_GROW(r->out->v, r->out->n + 1, r->cap);
	ALLOC_GROW(r->raw, r->out->n + 1, r->rawcap);
	r->raw[r->out->n] = rt;
	hashidx_add(&r->ix, hash_u64(addr), (uint32_t)r->out->n);
	r->out->v[r->out->n++] = t;
	return 0;
}

/* A link of the node at node (next: 0, prev: 8), from the bytes the memo
 * read of its task this round where it has them. */
static int list_link(const struct asyncio_reader *r, uint64_t node, uint32_t which, uint64_t *out)
{
	const uint8_t *fresh = asyncio_memo_fresh(r, node - r->A->task.node);

	if (fresh) {
		*out = field_u64(fresh, r->A->task.node + which);
		return 0;
	}
	return mem_read_u64(r->m, node + which, out);
}

/* Walk one list of tasks, from its head (a struct llist_node in a thread
 * or interpreter state).  A node whose neighbour does not point back is a
 * list caught mid-change: its task is torn, and the walk stops there. */
/* Nodes in a row that are not tasks: a real list has a few (tasks freed
 * while it is read); a ring of garbage that never reaches the head, or
 * comes back to a task, would otherwise be walked for ever. */
#define MAX_BAD_NODES 64

static void walk_list(struct asyncio_reader *r, uint64_t head, uint64_t tstate, uint64_t running)
{
	uint64_t node, next, back;
	int bad = 0;

	if (mem_read_u64(r->m, head, &node) < 0)
		return;
	while (node && node != head) {
		if (r->out->n >= ASYNCIO_MAX_TASKS || --r->nodes_left < 0) {
			r->out->truncated = true;
			return;
		}
		if (bad >= MAX_BAD_NODES)
			return;	/* each already counted torn */
		if (list_link(r, node, 0, &next) < 0) {
			r->out->torn++;
			return;
		}
		switch (read_task(r, node - r->A->task.node, tstate, running)) {
		case 0:
			bad = 0;
			break;
		case -EEXIST:
			r->out->torn++;
			return;	/* a ring that does not pass the head */
		default:
			r->out->torn++;
			bad++;
		}
		if (list_link(r, next, 8, &back) < 0 || back != node) {
			r->out->torn++;
			return;
		}
		node = next;
	}
}

static void read_lists(struct asyncio_reader *r, const struct py_tstate *ts, int nts)
{
	const struct py_layout *L = r->L;
	uint64_t interp;

	for (int i = 0; i < nts; i++) {
		uint64_t running = 0;

		mem_read_u64(r->m, ts[i].addr + r->A->tstate.running_task, &running);
		walk_list(r, ts[i].addr + r->A->tstate.tasks_head, ts[i].addr, running);
	}
	if (mem_read_u64(r->m, r->pi->runtime + L->runtime.interpreters_head, &interp) < 0)
		return;
	for (int k = 0; interp && k < ASYNCIO_MAX_INTERPS; k++) {
		walk_list(r, interp + r->A->interp_tasks_head, 0, 0);
		if (mem_read_u64(r->m, interp + L->interp.next, &interp) < 0)
			break;
	}
}

/* --- who awaits whom ----------------------------------------------------- */

/* Slots of one awaited-by set read.  A set is at most 3/5 full, so one
 * of more awaiters than ASYNCIO_MAX_AWAITERS is read whole and the model
 * cuts (and counts) the edges past that bound; a larger table (a set that
 * once held some ten thousand awaiters, or garbage) is not read. */
#define SET_SLOTS_MAX (16 * ASYNCIO_MAX_AWAITERS)

/* The table of the awaited-by set at set and its number of slots, which
 * are charged to the read's budget: false where it is unreadable, too
 * large, or past the budget. */
static bool awaiter_set(struct asyncio_reader *r, uint64_t set, uint64_t *table, uint64_t *nslots)
{
	uint64_t mask;

	if (mem_read_u64(r->m, set + r->A->set_mask, &mask) < 0 ||
	    mem_read_u64(r->m, set + r->A->set_table, table) < 0 || mask >= SET_SLOTS_MAX)
		return false;
	*nslots = mask + 1;
	r->resolve_left -= (long)*nslots;
	return r->resolve_left >= 0;
}

static void resolve_field(struct asyncio_reader *r, int ti, uint64_t field, uint8_t is_set,
			  int hops);

/* obj awaits task ti: a task, or a future some task awaits. */
static void resolve_one(struct asyncio_reader *r, int ti, uint64_t obj, int hops)
{
	int k = task_index(r, obj);
	uint64_t field;
	uint8_t is_set;

	if (--r->resolve_left < 0)
		return;
	if (k >= 0) {
		py_tasks_link(r->out, k, ti);
		return;
	}
	if (hops >= ASYNCIO_MAX_HOPS || !is_future(r, obj))
		return;
	if (mem_read_u64(r->m, obj + r->A->task.awaited_by, &field) < 0 ||
	    mem_read_u8(r->m, obj + r->A->task.awaited_by_is_set, &is_set) < 0)
		return;
	resolve_field(r, ti, field, is_set, hops + 1);
}

/* A future's awaited_by: one object, or a set of them. */
static void resolve_field(struct asyncio_reader *r, int ti, uint64_t field, uint8_t is_set,
			  int hops)
{
	uint64_t nslots, table;

	if (!field)
		return;
	if (!is_set) {
		resolve_one(r, ti, field, hops);
		return;
	}
	if (!awaiter_set(r, field, &table, &nslots))
		return;
	for (uint64_t i = 0; i < nslots; i++) {
		uint64_t key;

		/* Empty slots are NULL; deleted ones hold a dummy object,
		 * which is not a future. */
		if (mem_read_u64(r->m, table + 16 * i, &key) == 0 && key)
			resolve_one(r, ti, key, hops);
	}
}

static void resolve_awaiters(struct asyncio_reader *r)
{
	for (int i = 0; i < r->out->n; i++)
		resolve_field(r, i, r->raw[i].awaited_by, r->raw[i].is_set, 0);
	/* What a task is blocked on, where it is not a task we know. */
	for (int i = 0; i < r->out->n; i++) {
		uint64_t w = r->raw[i].waiter;
		char type[64];
		int k;

		if (!w)
			continue;
		if ((k = task_index(r, w)) >= 0)
			py_tasks_link(r->out, i, k);
		if (r->memo && r->out->v[i].state == TASK_PENDING)
			continue;	/* part of the memo's result */
		if (py_type_name(&r->c, w, type, sizeof(type)) == 0)
			r->out->v[i].waiting_on = xstrdup(type);
	}
}

/* --- coroutine stacks ---------------------------------------------------- */

/* The frames of the await chain from coro inwards (outermost first). */
static int coro_chain(struct asyncio_reader *r, uint64_t coro, struct coro_frame *cf, bool *cut)
{
	const struct py_layout *L = r->L;
	const struct asyncio_layout *A = r->A;
	int n = 0;

	while (coro && is_coro(r, coro)) {
		uint64_t frame = coro + L->gen.iframe, sp, lo;
		uint8_t st;
		int8_t state;

		if (n >= ASYNCIO_MAX_CORO_DEPTH) {
			*cut = true;
			break;
		}
		if (mem_read_u8(r->m, coro + L->gen.frame_state, &st) < 0)
			break;
		state = (int8_t)st;
		if (state != A->gen_suspended && state != A->gen_suspended_yield_from &&
		    state != A->gen_executing)
			break;
		if (mem_read_u64(r->m, frame + L->frame.code, &cf[n].code) < 0 ||
		    mem_read_u64(r->m, frame + L->frame.lasti, &cf[n].lasti) < 0)
			break;
		if (L->frame.code_tagged)
			cf[n].code &= ~(uint64_t)3;
		cf[n++].frame = frame;
		if (state != A->gen_suspended_yield_from)
			break;
		/* The awaited object is near the top of the value stack
		 * (A->yield_from_slot words down), which starts at
		 * localsplus: a stack pointer below that is garbage. */
		lo = frame + L->frame.localsplus;
		if (mem_read_u64(r->m, frame + L->frame.stackpointer, &sp) < 0 ||
		    sp < lo + 8 * A->yield_from_slot || sp - lo > 8 * 65536 ||
		    mem_read_u64(r->m, sp - 8 * A->yield_from_slot, &coro) < 0)
			break;
		if (L->frame.code_tagged)
			coro &= ~(uint64_t)3;
		for (int i = 0; i < n; i++)
			if (cf[i].frame == coro + L->gen.iframe)
				coro = 0;	/* a loop: garbage */
	}
	return n;
}

/* False: a task read as running whose run no read proved (taskrun.h),
 * left out as torn. */
bool asyncio314_task_frames(struct asyncio_reader *r, int i, struct coro_frame *cf)
{
	struct py_task *t = &r->out->v[i];
	bool cut = false;
	int n = -1;

	if (t->state == TASK_RUNNING) {
		struct task_run tr;

		task_run_words(r->m, r->pi, r->A, t->tstate, t->addr,
			       r->raw[i].coro + r->L->gen.iframe, &tr);
		if (task_run_frames(r->m, r->direct, r->L, r->ts, r->nts, &tr, t, r->out, cf, &n,
				    &cut) < 0)
			return false;
	}
	if (!t->joined)
		n = coro_chain(r, r->raw[i].coro, cf, &cut);
	t->frames_truncated = cut;
	asyncio_decode_frames(r->fd, t, cf, n, !t->joined);
	if (n > 0 && !t->joined)
		asyncio_reader_wait(r, t, cf, t->nframes);
	return true;
}

/* In a process that runs on while we read, a task that finished or was
 * freed between its first read and now has frames that may not be its
 * own: the fields that say which task and where it stands must not have
 * moved.  now[] holds the task as re-read. */
static bool task_changed(const struct asyncio_reader *r, int i, const uint8_t *now)
{
	const struct asyncio_layout *A = r->A;
	const uint32_t offs[] = { r->L->obj.ob_type, A->task.state, A->task.coro, A->task.name,
				  A->task.fut_waiter, A->task.node, A->task.node + 8 };

	for (size_t k = 0; k < ARRAY_SIZE(offs); k++)
		if (field_u64(now, offs[k]) != field_u64(r->raw[i].bytes, offs[k]))
			return true;
	return false;
}

/* Re-read every task through raw in merged batches (a few system calls
 * for thousands of tasks): changed[i] set for the ones that moved or can
 * no longer be read.  A task the memo proved unchanged (same) is not:
 * every byte its result depends on was read after the task itself, this
 * round, and found as it was, so what it shows is a state the task was
 * in at that moment. */
static void recheck_tasks(const struct asyncio_reader *r, struct mem *raw, bool *changed)
{
	int n = r->out->n, k = 0;
	uint8_t *now = xcalloc(n ? n : 1, r->A->task.size);
	struct mem_block *b = xcalloc(n ? n : 1, sizeof(*b));
	bool *ok = xcalloc(n ? n : 1, sizeof(*ok));
	int *which = xcalloc(n ? n : 1, sizeof(*which));
	struct merge_buf mb = { 0 };

	for (int i = 0; i < n; i++) {
		if (r->out->v[i].same)
			continue;
		which[k] = i;
		b[k] = (struct mem_block){ r->out->v[i].addr, now + (size_t)k * r->A->task.size,
					   r->A->task.size };
		k++;
	}
	mem_read_merged(raw, b, k, ok, &mb);
	for (int j = 0; j < k; j++)
		changed[which[j]] |= !ok[j] || task_changed(r, which[j], b[j].buf);
	merge_buf_release(&mb);
	free(which);
	free(ok);
	free(b);
	free(now);
}

/* Frames of every task, dropping (and counting) the torn ones. */
static void read_frames(struct asyncio_reader *r, struct mem *recheck)
{
	struct coro_frame *cf = xcalloc(ASYNCIO_MAX_CORO_DEPTH + 1, sizeof(*cf));
	bool *changed = xcalloc(r->out->n ? r->out->n : 1, sizeof(*changed));
	int kept = 0;

	for (int i = 0; i < r->out->n; i++) {
		if (r->memo)
			changed[i] = !asyncio_memo_result(r, i, cf);
		else
			changed[i] = !asyncio314_task_frames(r, i, cf);
	}
	if (recheck)
		recheck_tasks(r, recheck, changed);
	for (int i = 0; i < r->out->n; i++) {
		if (changed[i]) {
			asyncio_memo_torn(r, r->out->v[i].addr);
			py_task_release(&r->out->v[i]);
			r->out->torn++;
			continue;
		}
		r->raw[kept] = r->raw[i];
		r->out->v[kept++] = r->out->v[i];
	}
	if (kept < r->out->n) {
		r->out->n = kept;
		hashidx_clear(&r->ix);
		for (int i = 0; i < kept; i++)
			hashidx_add(&r->ix, hash_u64(r->out->v[i].addr), (uint32_t)i);
	}
	free(changed);
	free(cf);
}

int asyncio314_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     struct mem *recheck, struct asyncio_memo *memo, struct py_tasks *out,
		     char *err, size_t errlen)
{
	struct asyncio_reader r = { .m = m, .pi = pi, .L = &pi->layout, .A = A, .memo = memo,
			    .c = { m, &pi->layout }, .out = out, .resolve_left = RESOLVE_BUDGET,
			    .nodes_left = 2L * ASYNCIO_MAX_TASKS };
	struct py_tstate *ts;
	uint64_t gil;
	int nts;

	ts = xcalloc(ASYNCIO_MAX_THREADS, sizeof(*ts));
	memset(out, 0, sizeof(*out));
	nts = pystack_tstates(m, pi, ts, ASYNCIO_MAX_THREADS, &gil, err, errlen);
	if (nts < 0) {
		free(ts);
		return nts;
	}
	r.fd = frame_decoder_new(m, pi);
	r.direct = recheck;
	r.ts = ts;
	r.nts = nts;
	if (memo)
		asyncio_memo_prepare(&r);
	read_lists(&r, ts, nts);
	read_frames(&r, recheck);
	if (memo)
		asyncio_memo_sweep(memo);

	resolve_awaiters(&r);
	out->ix = r.ix;	/* address -> index: py_tasks_find's */
	py_tasks_mark_cycles(out);
	frame_decoder_free(r.fd);
	for (int i = 0; i < WAITS_SEEN; i++) {
		free(r.waits_seen[i].w.kind);
		free(r.waits_seen[i].w.state);
	}
	free(r.raw);
	free(ts);
	return 0;
}

/* The section as read (rc from locate_section()), parsed; what names the
 * process in messages. */
static int layout_from(int rc, const char *what, const struct pyinterp *pi, const uint8_t *sec,
		       size_t len, struct asyncio_layout *A, char *err, size_t errlen)
{
	if (rc == -ENOENT) {
		/* The accelerator is what publishes the section: a process
		 * running asyncio without it looks the same from here. */
		snprintf(err, errlen, "%s has no C _asyncio module loaded (it has not "
			 "imported asyncio, or runs it without the accelerator, whose "
			 "pure-Python tasks are read on 3.11-3.13 only)", what);
		return ASYNCIO_NOT_IMPORTED;
	}
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the asyncio debug offsets (%s)", strerror(-rc));
		return status_fail(exit_code_for_errno(rc));
	}
	return asyncio_layout_parse(pi->minor, sec, len, A, err, errlen);
}

static bool readable_version(const struct pyinterp *pi, char *err, size_t errlen)
{
	if (pi->layout.gen.iframe != NONE && pi->layout.frame.stackpointer != NONE)
		return true;
	snprintf(err, errlen, "asyncio tasks are not readable on Python %s yet "
		 "(pystrobe reads them on 3.11 and later)", pi->version);
	return false;
}

int asyncio314_locate(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		      struct asyncio_layout *A, char *err, size_t errlen)
{
	uint8_t sec[ASYNCIO_SECTION_SIZE];
	size_t len = 0;
	int rc;

	if (!readable_version(pi, err, errlen))
		return status_fail(EXIT_UNSUPPORTED);
	rc = locate_section(src, m, pi, "_asyncio.", ASYNCIO_SECTION, sec, sizeof(sec), &len);
	return layout_from(rc, src->what, pi, sec, len, A, err, errlen);
}

/* --- one task's awaiters, for sampling ------------------------------------ */

/* A task awaiting obj (through futures, at most ASYNCIO_MAX_HOPS of
 * them): the first found, or 0. */
static uint64_t first_awaiter(struct asyncio_reader *r, uint64_t obj, int hops)
{
	const struct asyncio_layout *A = r->A;
	uint64_t field, nslots = 1, table = 0;
	uint8_t is_set;

	if (mem_read_u64(r->m, obj + A->task.awaited_by, &field) < 0 || !field ||
	    mem_read_u8(r->m, obj + A->task.awaited_by_is_set, &is_set) < 0)
		return 0;
	if (is_set && !awaiter_set(r, field, &table, &nslots))
		return 0;
	for (uint64_t i = 0; i < nslots; i++) {
		uint64_t cand = field, t;
		uint8_t is_task;

		if (is_set && (mem_read_u64(r->m, table + 16 * i, &cand) < 0 || !cand))
			continue;
		if (!is_future(r, cand) || mem_read_u8(r->m, cand + A->task.is_task, &is_task) < 0)
			continue;
		if (is_task == 1)
			return cand;
		if (hops < ASYNCIO_MAX_HOPS && (t = first_awaiter(r, cand, hops + 1)))
			return t;
	}
	return 0;
}

int asyncio314_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     uint64_t task, char **names, int max)
{
	struct asyncio_reader r = { .m = m, .pi = pi, .L = &pi->layout, .A = A,
			    .c = { m, &pi->layout }, .resolve_left = RESOLVE_BUDGET };
	uint64_t seen[ASYNCIO_CHAIN_MAX];
	int n = 0;

	if (max > ASYNCIO_CHAIN_MAX)
		max = ASYNCIO_CHAIN_MAX;
	while (task && n < max) {
		uint64_t name;

		for (int i = 0; i < n; i++)
			if (seen[i] == task)
				return n;	/* a cycle: each task once */
		if (mem_read_u64(m, task + A->task.name, &name) < 0 ||
		    !(names[n] = asyncio_task_name(&r.c, name)))
			break;
		seen[n++] = task;
		task = first_awaiter(&r, task, 0);
	}
	return n;
}

int asyncio314_running(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		       const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame)
{
	uint64_t coro;

	if (mem_read_u64(m, ts->addr + A->tstate.running_task, task) < 0 || !*task ||
	    mem_read_u64(m, *task + A->task.coro, &coro) < 0)
		return -ENOENT;
	*coro_frame = coro + pi->layout.gen.iframe;
	return 0;
}
