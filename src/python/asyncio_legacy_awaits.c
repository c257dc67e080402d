/* Who awaits whom among the tasks of a 3.11-3.13 process, which nothing
 * in the task records (see asyncio_legacy.h): derived from each task's
 * _fut_waiter, the gathers it waits on, and its done callbacks.
 */
#include "python/asyncio_legacy.h"
#include "python/asyncio_int.h"
#include "python/pyobj.h"
#include "process/mem.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHILDREN 1024	/* futures one gather gathers */
#define MAX_CALLBACKS 64	/* done callbacks of one task looked at */

/* The gathers of one read's walks (see gather_edges): what is left of its
 * budget, and each gather expanded, for whose walk and how far down. */
struct gathers {
	long left;		/* gathers and children to look at */
	struct hashidx ix;	/* gather address -> seen[] */
	struct gather_seen {
		uint64_t addr;
		int walk, hops;
	} *seen;
	size_t n, cap;
};

/* n awaits left out (a gather not walked counts one), at a bound. */
static void count_cut(struct py_tasks *out, uint64_t n)
{
	out->edges_cut = n < (uint64_t)(INT_MAX - out->edges_cut) ? out->edges_cut + (int)n : INT_MAX;
}

/* Is gather fut new to task i's walk, or met nearer the task than
 * before?  Then it is marked met here and is to be expanded. */
static bool gather_first(struct gathers *g, int i, uint64_t fut, int hops)
{
	uint32_t h = hash_u64(fut), id;
	struct hashidx_pos pos;

	for (id = hashidx_first(&g->ix, h, &pos); id != HASHIDX_NONE; id = hashidx_next(&g->ix, &pos))
		if (g->seen[id].addr == fut)
			break;
	if (id == HASHIDX_NONE) {
		ALLOC_GROW(g->seen, g->n + 1, g->cap);
		id = (uint32_t)g->n++;
		g->seen[id] = (struct gather_seen){ .addr = fut, .walk = -1 };
		hashidx_add(&g->ix, h, id);
	}
	if (g->seen[id].walk == i && g->seen[id].hops <= hops)
		return false;
	g->seen[id].walk = i;
	g->seen[id].hops = hops;
	return true;
}

/* Task i waits on gather future fut: it awaits the tasks fut gathers,
 * and those of the gathers among them.  Garbage may nest gathers in
 * themselves or each other without end: each is expanded once per walk,
 * every gather and child is charged to the read's budget, and what is
 * not followed (too deep, past MAX_CHILDREN, past the budget) counted cut. */
static void gather_edges(struct lreader *r, struct gathers *g, int i, uint64_t fut, int hops)
{
	uint64_t children, *items;
	int64_t len = 0;
	size_t n = 0;

	if (!gather_first(g, i, fut, hops))
		return;
	if (hops > ASYNCIO_MAX_HOPS || g->left <= 0) {
		count_cut(r->out, 1);
		return;
	}
	g->left--;
	if (legacy_attr(r, fut, "_children", &children) < 0 || !legacy_type_is(r, children, "list"))
		return;
	items = xcalloc(MAX_CHILDREN, sizeof(*items));
	if (py_seq_items(&r->c, children, PY_LIST, items, MAX_CHILDREN, &n) < 0)
		n = 0;
	else if (n == MAX_CHILDREN && py_varsize(&r->c, children, &len) == 0 && len > (int64_t)n)
		count_cut(r->out, (uint64_t)len - n);
	for (size_t j = 0; j < n; j++) {
		int k = legacy_task_index(r, items[j]);

		if (g->left-- <= 0) {
			count_cut(r->out, n - j);
			break;
		}
		if (k >= 0)
			py_tasks_link(r->out, i, k);
		else if (legacy_type_is(r, items[j], "_GatheringFuture"))
			gather_edges(r, g, i, items[j], hops + 1);
	}
	free(items);
}

/* One done callback of task i: a TaskGroup's _on_task_done makes the
 * group's parent task await it. */
static void callback_edge(struct lreader *r, int i, uint64_t cb)
{
	uint64_t self, parent;
	int k;

	if (!legacy_type_is(r, cb, "method") ||
	    mem_read_u64(r->m, cb + r->A->legacy.im_self, &self) < 0 ||
	    !legacy_type_is(r, self, "TaskGroup") ||
	    legacy_attr(r, self, "_parent_task", &parent) < 0 ||
	    (k = legacy_task_index(r, parent)) < 0)
		return;
	py_tasks_link(r->out, k, i);
}

/* The done callbacks of task i: the C task's first one apart, then a list
 * of (callback, context) tuples. */
static void group_edges(struct lreader *r, int i)
{
	uint64_t obj = r->out->v[i].addr, first = 0, list = 0, items[MAX_CALLBACKS], cb;
	size_t n = 0;

	if (r->raw[i].py) {
		legacy_attr(r, obj, "_callbacks", &list);
	} else if (mem_read_u64(r->m, obj + r->A->legacy.callback0, &first) < 0 ||
		   mem_read_u64(r->m, obj + r->A->legacy.callbacks, &list) < 0) {
		return;
	}
	if (first)
		callback_edge(r, i, first);
	if (!legacy_type_is(r, list, "list") ||
	    py_seq_items(&r->c, list, PY_LIST, items, MAX_CALLBACKS, &n) < 0)
		return;
	for (size_t j = 0; j < n; j++)
		if (legacy_type_is(r, items[j], "tuple") &&
		    py_tuple_item(&r->c, items[j], 0, &cb) == 0)
			callback_edge(r, i, cb);
}

void asyncio_legacy_resolve(struct lreader *r)
{
	struct gathers g = { .left = ASYNCIO_LEGACY_GATHER_VISITS(r->out->n) };

	for (int i = 0; i < r->out->n; i++) {
		uint64_t w = r->raw[i].waiter;
		const char *type;
		int k;

		if (r->out->v[i].state != TASK_DONE)
			group_edges(r, i);
		if (!w || legacy_type_is(r, w, "NoneType"))
			continue;
		if ((k = legacy_task_index(r, w)) >= 0)
			py_tasks_link(r->out, i, k);
		else if (legacy_type_is(r, w, "_GatheringFuture"))
			gather_edges(r, &g, i, w, 0);
		if ((type = legacy_type_name(r, w)))
			r->out->v[i].waiting_on = xstrdup(type);
	}
	hashidx_release(&g.ix);
	free(g.seen);
}
