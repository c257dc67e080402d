/* Code objects decoded once and re-checked on every use.
 *
 * Sampling sees the same few hundred code objects thousands of times, so
 * their names, file and line table are decoded once and kept by address.
 * Addresses are reused, though: a code object can die and another be born
 * at the same address (the fault that made other profilers show the wrong
 * function in a third of the samples).  So every lookup re-reads the code
 * object's identity -- its type and the addresses of its filename, name,
 * qualified name and line table, and its first line -- and decodes it anew
 * if any of them changed.  A new code object at the old address would need
 * all of those objects reborn at their old addresses too.
 */
#ifndef PYSTROBE_CODECACHE_H
#define PYSTROBE_CODECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "interp/layout.h"
#include "profile/profile.h"

struct mem;
struct pyctx;
struct code_cache;

/* A code object's identity: the fields that tell one code object from
 * another at one address (above), read here for every reader of code
 * objects -- this cache, the thread walk and frame_decode() (pyframe.c)
 * -- and recorded by asyncio_memo.c. */
struct code_identity {
	uint64_t type, filename, name, linetable;	/* name: the qualified one, 3.11+ */
	int32_t firstlineno;
	int64_t units;		/* 3.11+: its bytecode's length in code units */
};

/* How many bytes from a code object's start hold its identity: a reader
 * that reads more of it in one go (the walk: its locals too) reads at
 * least these and parses them with code_identity_parse(). */
uint32_t code_identity_span(const struct py_layout *L);
void code_identity_parse(const struct py_layout *L, const uint8_t *cb, struct code_identity *id);
/* Read the identity of the code object at code: 0, or a negative errno. */
int code_identity_read(struct mem *m, const struct py_layout *L, uint64_t code,
		       struct code_identity *id);
bool code_identity_same(const struct code_identity *a, const struct code_identity *b);

/* Can a frame running this code object be at byte `offset` of its
 * bytecode (as frame_offset() computes it from the frame's lasti)?  A
 * frame's code and its instruction pointer are written one after the
 * other when a frame is pushed at an address another frame just left: a
 * stack read in between pairs the new code with the old frame's pointer.
 * The recheck cannot see it for the innermost frame, whose pointer moves
 * with every instruction and so is not rechecked; this can, for 3.11+,
 * where the pointer is an address and the code's length is known.  (3.11
 * and 3.12 point one unit before the first instruction until a frame
 * starts.) */
bool code_offset_plausible(const struct py_layout *L, const struct code_identity *id,
			   int64_t offset);

/* Is the object at code, of the given type (its identity's), a code
 * object?  *code_type is PyCode_Type once learnt (0 before): from the
 * first object whose type is named "code", and every later one must have
 * exactly that type.  0, or -EINVAL. */
int code_type_check(const struct pyctx *c, uint64_t *code_type, uint64_t code, uint64_t type);

struct code_cache *code_cache_new(struct mem *m, const struct py_layout *L,
				  struct profile *p, bool by_function);
void code_cache_free(struct code_cache *cc);

/* Begin a round of samples.  A code object's identity is read once a
 * round: the frames that use it hold a reference to it, and the recheck
 * proves those frames unchanged over the round (with --blocking the target
 * is stopped), so it cannot be replaced within one.  (Before, the page
 * cache gave every read of it in a round the same copy anyway.)  A caller
 * that does not call this between rounds gets no identity check at all. */
void code_cache_round(struct code_cache *cc);

/* The profile frame id for a frame running `code` at `lasti` (as the frame
 * stores it), and (serial not NULL) the serial of the decode it came from.
 * Returns 0, or a negative errno when the code object cannot be read or is
 * not a code object, -ERANGE when lasti cannot be in it (a torn read:
 * code_offset_plausible()). */
int code_cache_frame(struct code_cache *cc, uint64_t code, uint64_t lasti, uint32_t *frame_id,
		     uint64_t *serial);

/* Prove that the code object at `code` is the one the cache holds (its
 * identity compared, once a round), decoding it anew if not.  *serial
 * names the decode: the same serial as a frame id was given with means
 * the same names, file and line table, so the same (code, lasti) gives
 * the same frame id.  0, or a negative errno. */
int code_cache_check(struct code_cache *cc, uint64_t code, uint64_t *serial);

/* Lookups served from the cache, and code objects decoded (again). */
void code_cache_stats(const struct code_cache *cc, uint64_t *hits, uint64_t *decodes);

#endif
