/* Profile frames of asyncio tasks, kept while the tasks are unchanged: see
 * taskids.h. */
#include "sample/taskids.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

struct task_entry {
	uint64_t addr;
	uint32_t label;		/* NO_LABEL: not made yet */
	uint32_t *ids;		/* coroutine frames, outermost first */
	int n;			/* -1: not made yet */
	bool seen;
};

#define NO_LABEL UINT32_MAX

struct task_ids {
	struct profile *p;
	bool by_function;
	struct task_entry *v;
	int n;
	size_t cap;
	struct hashidx ix;
};

struct task_ids *task_ids_new(struct profile *p, bool by_function)
{
	struct task_ids *ti = xcalloc(1, sizeof(*ti));

	ti->p = p;
	ti->by_function = by_function;
	return ti;
}

void task_ids_free(struct task_ids *ti)
{
	if (!ti)
		return;
	for (int i = 0; i < ti->n; i++)
		free(ti->v[i].ids);
	free(ti->v);
	hashidx_release(&ti->ix);
	free(ti);
}

/* t's entry; emptied unless t is proven the same as when it was made. */
static struct task_entry *entry(struct task_ids *ti, const struct py_task *t)
{
	struct hashidx_pos pos;
	struct task_entry *e;

	for (uint32_t id = hashidx_first(&ti->ix, hash_u64(t->addr), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&ti->ix, &pos)) {
		e = &ti->v[id];
		if (e->addr != t->addr)
			continue;
		if (!t->same && !e->seen) {
			free(e->ids);
			e->ids = NULL;
			e->n = -1;
			e->label = NO_LABEL;
		}
		e->seen = true;
		return e;
	}
	ALLOC_GROW(ti->v, ti->n + 1, ti->cap);
	e = &ti->v[ti->n];
	*e = (struct task_entry){ t->addr, NO_LABEL, NULL, -1, true };
	hashidx_add(&ti->ix, hash_u64(t->addr), (uint32_t)ti->n++);
	return e;
}

uint32_t task_ids_label(struct task_ids *ti, const struct py_task *t)
{
	struct task_entry *e = entry(ti, t);
	char *label;

	if (e->label != NO_LABEL)
		return e->label;
	label = xasprintf("task %s", t->name);
	e->label = profile_frame(ti->p, &(struct pframe){ PF_MARKER, label, NULL, -1, -1 });
	free(label);
	return e->label;
}

int task_ids_frames(struct task_ids *ti, const struct py_task *t, const uint32_t **ids)
{
	struct task_entry *e = entry(ti, t);

	if (e->n < 0) {
		e->ids = xcalloc(t->nframes ? t->nframes : 1, sizeof(*e->ids));
		for (int k = t->nframes - 1, n = 0; k >= 0; k--) {
			const struct py_frame *f = &t->frames[k];
			struct pframe pf = { PF_PYTHON, f->function, f->file,
					     ti->by_function ? -1 : f->line, -1 };

			e->ids[n++] = profile_frame(ti->p, &pf);
		}
		e->n = t->nframes;
	}
	*ids = e->ids;
	return e->n;
}

void task_ids_sweep(struct task_ids *ti)
{
	int kept = 0;

	for (int i = 0; i < ti->n; i++) {
		if (!ti->v[i].seen) {
			free(ti->v[i].ids);
			continue;
		}
		ti->v[kept] = ti->v[i];
		ti->v[kept++].seen = false;
	}
	if (kept == ti->n)
		return;	/* the index still holds */
	ti->n = kept;
	hashidx_clear(&ti->ix);
	for (int i = 0; i < kept; i++)
		hashidx_add(&ti->ix, hash_u64(ti->v[i].addr), (uint32_t)i);
}
