/* Reuse of a thread's unchanged outer frames from one round to the next.
 *
 * A deep stack mostly keeps its outer part between samples: only the
 * innermost few frames change.  Each round still reads every frame (its
 * address, code pointer and instruction offset: the walk and the recheck
 * need them), but a frame whose address, code object and offset are what
 * they were last round, and whose code object the code cache proves this
 * round to be the same object (its identity, never the address alone:
 * code_cache_check()), keeps last round's profile frame id: no line-table
 * lookup, no hashing.  The match runs from the outermost frame inwards and
 * stops at the first that differs; every frame inside it is decoded anew.
 */
#ifndef PYSTROBE_FRAMEREUSE_H
#define PYSTROBE_FRAMEREUSE_H

#include <stddef.h>
#include <stdint.h>

struct code_cache;

/* One frame as the walk read it. */
struct reuse_frame {
	uint64_t frame, code, lasti;
	uint64_t serial;	/* the code cache's decode it was resolved with */
	uint32_t id;		/* its profile frame id */
};

/* One thread's frames of the last round, innermost first. */
struct frame_reuse {
	struct reuse_frame *v;
	uint32_t n;
	size_t cap;
	uint64_t reused, decoded;	/* frames, for the tests and the bench */
};

/* Resolve the n frames f[] (innermost first; frame, code and lasti set)
 * to profile frame ids in ids[], reusing what fr holds where it is proved
 * valid, and keep them in fr for the next round.  Returns 0, or the
 * negative errno of the first frame whose code object cannot be read (fr
 * is then emptied). */
int frame_reuse_resolve(struct frame_reuse *fr, struct code_cache *cc, struct reuse_frame *f,
			uint32_t n, uint32_t *ids);

void frame_reuse_release(struct frame_reuse *fr);

#endif
