/* libFuzzer harness: the JSON reader (src/util/jsonread.c), whose input is
 * a dump another machine wrote, or a file a user collected.  Input: the
 * text.  Whatever it is, a parse either fails with "byte N: ..." (N within
 * the input) or gives a tree whose every node is in bounds and whose every
 * string is NUL-free valid UTF-8 of its stated length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonread.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t n)
{
	if (strlen(s) != n)
		abort();
	for (size_t i = 0; i < n;) {
		int k = utf8_char(s + i, NULL);

		if (k <= 0)
			abort();
		i += (size_t)k;
	}
}

/* Iterative over the node array: each node once. */
static void check_tree(const struct jdoc *d)
{
	for (size_t i = 0; i < d->nv; i++) {
		const struct jv *v = &d->v[i];

		if (v->key != UINT32_MAX && (v->key >= d->nstr || !jv_key(d, v)))
			abort();
		if (v->type == JV_STR)
			check_str(jv_str(d, v), v->n);
		if ((v->type == JV_ARR || v->type == JV_OBJ) &&
		    (v->n > d->nv || v->at > d->nv - v->n || (v->n && v->at + v->n > i)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jdoc d = JDOC_INIT;
	char err[160];
	size_t at;

	if (jdoc_parse(&d, (const char *)data, size, err, sizeof(err)) == 0) {
		if (!jdoc_root(&d))
			abort();
		check_tree(&d);
	} else if (sscanf(err, "byte %zu:", &at) != 1 || at > size) {
		abort();
	}
	jdoc_release(&d);
	return 0;
}
