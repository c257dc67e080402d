#include "python/framereuse.h"
#include "python/codecache.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* How many outer frames of f[] keep last round's ids: the longest run
 * from the outermost in that matches fr frame for frame. */
static int reuse_outer(struct frame_reuse *fr, struct code_cache *cc, struct reuse_frame *f,
		       uint32_t n, uint32_t *ids)
{
	uint32_t k = 0;

	while (k < n && k < fr->n) {
		struct reuse_frame *cur = &f[n - 1 - k];
		const struct reuse_frame *old = &fr->v[fr->n - 1 - k];
		uint64_t serial;
		int rc;

		if (cur->frame != old->frame || cur->code != old->code || cur->lasti != old->lasti)
			break;
		/* The same address may hold another code object now. */
		if ((rc = code_cache_check(cc, cur->code, &serial)) < 0)
			return rc;
		if (serial != old->serial)
			break;
		cur->serial = serial;
		cur->id = old->id;
		ids[n - 1 - k] = cur->id;
		k++;
	}
	return (int)k;
}

int frame_reuse_resolve(struct frame_reuse *fr, struct code_cache *cc, struct reuse_frame *f,
			uint32_t n, uint32_t *ids)
{
	int kept = reuse_outer(fr, cc, f, n, ids), rc = 0;

	if (kept < 0) {
		rc = kept;
		goto fail;
	}
	for (uint32_t i = n - (uint32_t)kept; i-- > 0;) {
		if ((rc = code_cache_frame(cc, f[i].code, f[i].lasti, &f[i].id, &f[i].serial)) < 0)
			goto fail;
		ids[i] = f[i].id;
	}
	fr->reused += (uint64_t)kept;
	fr->decoded += n - (uint32_t)kept;
	ALLOC_GROW(fr->v, n, fr->cap);
	if (n)	/* an empty stack: fr->v may still be NULL */
		memcpy(fr->v, f, n * sizeof(*f));
	fr->n = n;
	return 0;
fail:
	fr->n = 0;
	return rc;
}

void frame_reuse_release(struct frame_reuse *fr)
{
	free(fr->v);
	memset(fr, 0, sizeof(*fr));
}
