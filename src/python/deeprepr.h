/* --locals=deep: the repr of a container with its first items, as
 * Python's repr() shows them, to a bounded depth and count.
 *
 * Bounds (one local's repr never reads more than this):
 *   - containers nested DEEP_MAX_DEPTH deep show their items; one deeper
 *     shows as its type and size, "<list of 3 items>";
 *   - each container shows its first DEEP_MAX_ITEMS items;
 *   - a local reads DEEP_MAX_OBJECTS objects in all;
 *   - a str or bytes item shows its first DEEP_ITEM_CHARS characters.
 * Items left out are marked with the container's whole size:
 * [0, 1, 2, … (1000 items)].  A container met again inside itself shows
 * as Python's repr() does, [...] (and (...), {...}, set(...)).  Lists,
 * tuples, dicts (not split tables: those show their size only), sets and
 * frozensets of exactly those types have items; everything else is shown
 * as py_repr() shows it.
 */
#ifndef PYSTROBE_DEEPREPR_H
#define PYSTROBE_DEEPREPR_H

#include <stddef.h>
#include <stdint.h>

#include "python/pyobj.h"

#define DEEP_MAX_DEPTH 4
#define DEEP_MAX_ITEMS 32
#define DEEP_MAX_OBJECTS 256
#define DEEP_ITEM_CHARS 128

/* Like py_repr(), containers with their items.  max_chars bounds a str or
 * bytes value that is not inside a container. */
int py_repr_deep(const struct pyctx *c, uint64_t addr, size_t max_chars, char **type,
		 char **repr);

#endif
