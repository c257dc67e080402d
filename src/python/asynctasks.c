/* The asyncio task model (see asynctasks.h): lookups, edges, cycles,
 * freeing. */
#include "python/asynctasks.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

const char *task_state_name(enum task_state s)
{
	switch (s) {
	case TASK_RUNNING: return "running";
	case TASK_DONE: return "done";
	default: return "pending";
	}
}

/* --- lookups ------------------------------------------------------------- */

int py_tasks_lookup(const struct hashidx *ix, const struct py_tasks *t, uint64_t addr)
{
	struct hashidx_pos pos;

	for (uint32_t id = hashidx_first(ix, hash_u64(addr), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(ix, &pos))
		if (t->v[id].addr == addr)
			return (int)id;
	return -1;
}

const struct py_task *py_tasks_find(const struct py_tasks *t, uint64_t addr)
{
	if (t->ix.count) {
		int k = py_tasks_lookup(&t->ix, t, addr);

		return k < 0 ? NULL : &t->v[k];
	}
	for (int i = 0; i < t->n; i++)
		if (t->v[i].addr == addr)
			return &t->v[i];
	return NULL;
}

void py_tasks_index(struct py_tasks *t)
{
	if (t->ix.count == (uint32_t)t->n)
		return;	/* indexed as read */
	hashidx_clear(&t->ix);
	for (int i = 0; i < t->n; i++)
		hashidx_add(&t->ix, hash_u64(t->v[i].addr), (uint32_t)i);
}

/* --- who awaits whom ----------------------------------------------------- */

static bool listed(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

void py_tasks_link(struct py_tasks *t, int awaiter, int awaited)
{
	struct py_task *a = &t->v[awaiter], *b = &t->v[awaited];

	/* Each edge is on both sides: the shorter says whether it is known
	 * (a TaskGroup's parent awaits every task of the group). */
	if (a->nawaiting <= b->nawaited_by ? listed(a->awaiting, a->nawaiting, b->addr)
					   : listed(b->awaited_by, b->nawaited_by, a->addr))
		return;
	if (a->nawaiting >= ASYNCIO_MAX_AWAITERS || b->nawaited_by >= ASYNCIO_MAX_AWAITERS) {
		t->edges_cut++;
		return;
	}
	a->awaiting = xrealloc(a->awaiting, (a->nawaiting + 1) * sizeof(uint64_t));
	a->awaiting[a->nawaiting++] = b->addr;
	b->awaited_by = xrealloc(b->awaited_by, (b->nawaited_by + 1) * sizeof(uint64_t));
	b->awaited_by[b->nawaited_by++] = a->addr;
}

/* --- deadlocks ----------------------------------------------------------- */

/* Tasks awaiting each other in a ring can never finish.  A depth-first
 * walk of the awaits graph: an edge back into the current path closes a
 * cycle, whose members get its number. */
static void mark_cycle(struct py_tasks *t, const int *path, int from, int len)
{
	int id = t->ncycles + 1;
	bool new = false;

	for (int i = from; i < len; i++) {
		if (!t->v[path[i]].cycle) {
			t->v[path[i]].cycle = id;
			new = true;
		}
	}
	t->ncycles += new;	/* another way round a ring already found */
}

static void find_cycles(struct py_tasks *t)
{
	uint8_t *colour = xcalloc(t->n ? t->n : 1, 1);	/* 0 new, 1 on path, 2 done */
	int *path = xcalloc(t->n ? t->n : 1, sizeof(int));
	int *edge = xcalloc(t->n ? t->n : 1, sizeof(int));

	for (int s = 0; s < t->n; s++) {
		int len = 0;

		if (colour[s])
			continue;
		path[len] = s;
		edge[len++] = 0;
		colour[s] = 1;
		while (len) {
			int u = path[len - 1], v;

			if (edge[len - 1] >= t->v[u].nawaiting) {
				colour[u] = 2;
				len--;
				continue;
			}
			v = py_tasks_lookup(&t->ix, t, t->v[u].awaiting[edge[len - 1]++]);
			if (v < 0 || colour[v] == 2)
				continue;
			if (colour[v] == 1) {
				int from = len - 1;

				while (from > 0 && path[from] != v)
					from--;
				mark_cycle(t, path, from, len);
				continue;
			}
			colour[v] = 1;
			path[len] = v;
			edge[len++] = 0;
		}
	}
	free(colour);
	free(path);
	free(edge);
}

void py_tasks_mark_cycles(struct py_tasks *t)
{
	py_tasks_index(t);
	find_cycles(t);
}

/* --- freeing ------------------------------------------------------------- */

void py_task_result_release(struct py_task *t)
{
	for (int k = 0; k < t->nframes; k++)
		py_frame_release(&t->frames[k]);
	free(t->frames);
	free(t->name);
	free(t->waiting_on);
	free(t->wait.kind);
	free(t->wait.state);
}

void py_task_release(struct py_task *t)
{
	free(t->awaiting);
	free(t->awaited_by);
	if (!t->borrowed)
		py_task_result_release(t);
}

void py_tasks_free(struct py_tasks *t)
{
	for (int i = 0; i < t->n; i++)
		py_task_release(&t->v[i]);
	hashidx_release(&t->ix);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

void py_task_free_one(struct py_task *t)
{
	py_task_release(t);
	memset(t, 0, sizeof(*t));
}
