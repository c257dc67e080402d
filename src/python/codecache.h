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
struct code_cache;

struct code_cache *code_cache_new(struct mem *m, const struct py_layout *L,
				  struct profile *p, bool by_function);
void code_cache_free(struct code_cache *cc);

/* The profile frame id for a frame running `code` at `lasti` (as the frame
 * stores it).  Returns 0, or a negative errno when the code object cannot
 * be read or is not a code object. */
int code_cache_frame(struct code_cache *cc, uint64_t code, uint64_t lasti, uint32_t *frame_id);

/* Lookups served from the cache, and code objects decoded (again). */
void code_cache_stats(const struct code_cache *cc, uint64_t *hits, uint64_t *decodes);

#endif
