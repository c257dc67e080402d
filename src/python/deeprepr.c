#include "python/deeprepr.h"
#include "python/repr.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct deep {
	const struct pyctx *c;
	uint64_t path[DEEP_MAX_DEPTH];	/* the containers being shown, outermost first */
	int depth;
	int budget;			/* objects left to read */
};

/* What each kind looks like: open, close, empty, and met inside itself. */
static const struct shape {
	const char *open, *close, *empty, *cycle;
} shapes[] = {
	[PY_LIST] = { "[", "]", "[]", "[...]" },
	[PY_TUPLE] = { "(", ")", "()", "(...)" },
	[PY_DICT] = { "{", "}", "{}", "{...}" },
	[PY_SET] = { "{", "}", "set()", "set(...)" },
	[PY_FROZENSET] = { "frozenset({", "})", "frozenset()", "frozenset(...)" },
};

static void deep_obj(struct deep *d, uint64_t addr, size_t max_chars, struct strbuf *sb);

static bool on_path(const struct deep *d, uint64_t addr)
{
	for (int i = 0; i < d->depth; i++)
		if (d->path[i] == addr)
			return true;
	return false;
}

/* The items of one container: n of its whole, read already. */
static void deep_items(struct deep *d, enum py_container kind, const uint64_t *items,
		       const uint64_t *values, size_t n, int64_t whole, struct strbuf *sb)
{
	const struct shape *s = &shapes[kind];
	size_t i;

	sb_puts(sb, s->open);
	for (i = 0; i < n && d->budget > 0; i++) {
		if (i)
			sb_puts(sb, ", ");
		deep_obj(d, items[i], DEEP_ITEM_CHARS, sb);
		if (values) {
			sb_puts(sb, ": ");
			deep_obj(d, values[i], DEEP_ITEM_CHARS, sb);
		}
	}
	if ((int64_t)i < whole) {
		sb_puts(sb, i ? ", " : "");
		repr_cut_mark(sb, (uint64_t)whole, whole == 1 ? "item" : "items");
	} else if (kind == PY_TUPLE && whole == 1) {
		sb_putc(sb, ',');
	}
	sb_puts(sb, s->close);
}

/* Read the first items; 0, or < 0 when they cannot be had (the size is
 * shown instead). */
static int read_items(struct deep *d, uint64_t addr, enum py_container kind,
		      uint64_t *items, uint64_t *values, size_t *n)
{
	if (kind == PY_DICT)
		return py_dict_items(d->c, addr, items, values, DEEP_MAX_ITEMS, n);
	if (kind == PY_SET || kind == PY_FROZENSET)
		return py_set_items(d->c, addr, items, DEEP_MAX_ITEMS, n);
	return py_seq_items(d->c, addr, kind, items, DEEP_MAX_ITEMS, n);
}

/* 0, or < 0 when the container is unreadable. */
static int deep_container(struct deep *d, uint64_t addr, enum py_container kind,
			  const char *type, struct strbuf *sb)
{
	uint64_t items[DEEP_MAX_ITEMS], values[DEEP_MAX_ITEMS];
	int64_t whole;
	size_t n;
	int rc;

	if (on_path(d, addr)) {
		sb_puts(sb, shapes[kind].cycle);
		return 0;
	}
	if ((rc = py_container_size(d->c, addr, kind, &whole)) < 0)
		return rc;
	if (whole == 0) {
		sb_puts(sb, shapes[kind].empty);
		return 0;
	}
	if (d->depth == DEEP_MAX_DEPTH || read_items(d, addr, kind, items, values, &n) < 0)
		return py_repr_scalar(d->c, addr, type, 0, sb);
	d->path[d->depth++] = addr;
	deep_items(d, kind, items, kind == PY_DICT ? values : NULL, n, whole, sb);
	d->depth--;
	return 0;
}

static void deep_obj(struct deep *d, uint64_t addr, size_t max_chars, struct strbuf *sb)
{
	char type[128];
	enum py_container kind;
	size_t len = sb->len;
	int rc;

	d->budget--;
	if ((rc = py_type_name(d->c, addr, type, sizeof(type))) == 0) {
		kind = py_container_kind(type);
		if (kind != PY_NOT_CONTAINER)
			rc = deep_container(d, addr, kind, type, sb);
		else
			rc = py_repr_scalar(d->c, addr, type, max_chars, sb);
	}
	if (rc < 0) {
		sb->len = len;
		sb_puts(sb, "<unreadable>");
	}
}

int py_repr_deep(const struct pyctx *c, uint64_t addr, size_t max_chars, char **typep,
		 char **reprp)
{
	struct deep d = { .c = c, .budget = DEEP_MAX_OBJECTS };
	struct strbuf sb = STRBUF_INIT;
	char type[128];
	int rc;

	*typep = *reprp = NULL;
	if ((rc = py_type_name(c, addr, type, sizeof(type))) < 0)
		return rc;
	if (py_container_kind(type) == PY_NOT_CONTAINER)
		return py_repr(c, addr, max_chars, typep, reprp);
	deep_obj(&d, addr, max_chars, &sb);
	*typep = xstrdup(type);
	*reprp = sb_detach(&sb);
	return 0;
}
