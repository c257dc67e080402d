#include "cmd/dump_group.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void grouping_add(struct grouping *gr, const char *key, uint32_t member)
{
	uint32_t h = hash_str(HASH_INIT, key), id;
	struct hashidx_pos pos;
	struct dump_group *g;

	for (id = hashidx_first(&gr->ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&gr->ix, &pos))
		if (!strcmp(gr->g[id].key, key))
			break;
	if (id == HASHIDX_NONE) {
		ALLOC_GROW(gr->g, gr->n + 1, gr->cap);
		id = gr->n++;
		memset(&gr->g[id], 0, sizeof(gr->g[id]));
		gr->g[id].key = xstrdup(key);
		hashidx_add(&gr->ix, h, id);
	}
	g = &gr->g[id];
	ALLOC_GROW(g->members, g->n + 1, g->cap);
	g->members[g->n++] = member;
}

/* Larger first; equal sizes by first member, i.e. the order seen. */
static int by_size(const void *a, const void *b)
{
	const struct dump_group *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->members[0] < y->members[0] ? -1 : x->members[0] > y->members[0];
}

void grouping_sort(struct grouping *gr)
{
	hashidx_release(&gr->ix);
	if (gr->n)
		qsort(gr->g, gr->n, sizeof(*gr->g), by_size);
}

void grouping_release(struct grouping *gr)
{
	for (uint32_t i = 0; i < gr->n; i++) {
		free(gr->g[i].key);
		free(gr->g[i].members);
	}
	free(gr->g);
	hashidx_release(&gr->ix);
	memset(gr, 0, sizeof(*gr));
}
