/* dump --group: threads whose stacks print the same, together.
 *
 * The caller renders each thread's stack to text (the key) and adds it
 * with a member number of its own; equal keys make one group.  Groups
 * come out largest first, ties in the order their first member was
 * added, members in the order added.
 */
#ifndef PYSTROBE_DUMP_GROUP_H
#define PYSTROBE_DUMP_GROUP_H

#include <stdint.h>

#include "util/hashidx.h"

struct dump_group {
	char *key;
	uint32_t *members;
	uint32_t n, cap;
};

struct grouping {
	struct dump_group *g;
	uint32_t n, cap;
	struct hashidx ix;
};
#define GROUPING_INIT { NULL, 0, 0, HASHIDX_INIT }

/* Add member to the group of key (copied). */
void grouping_add(struct grouping *gr, const char *key, uint32_t member);
/* Largest first (stable); the index is dropped, add no more after. */
void grouping_sort(struct grouping *gr);
void grouping_release(struct grouping *gr);

#endif
