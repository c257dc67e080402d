/* A hash index: maps a hash to the ids of items the caller keeps elsewhere
 * (usually in an array, grown with ALLOC_GROW).
 *
 * Every table in pystrobe interns things in a dense array (frames, stacks,
 * flame graph nodes, code objects) and needs a way from a key to an array
 * index.  The index holds only ids and their hashes; the caller hashes the
 * key and compares candidates, so one index serves every item type without
 * callbacks.  Open addressing with linear probing, kept at most half full;
 * the stored hash means growing never looks at the items again.
 *
 *	uint32_t h = hash_bytes(HASH_INIT, key, len), id;
 *	struct hashidx_pos pos;
 *
 *	for (id = hashidx_first(&ix, h, &pos); id != HASHIDX_NONE;
 *	     id = hashidx_next(&ix, &pos))
 *		if (same(&items[id], key))
 *			return id;
 *	id = nitems++;			(append the item)
 *	hashidx_add(&ix, h, id);
 */
#ifndef PYSTROBE_HASHIDX_H
#define PYSTROBE_HASHIDX_H

#include <stddef.h>
#include <stdint.h>

#define HASHIDX_NONE UINT32_MAX

struct hashidx {
	uint32_t *ids;		/* id + 1 per slot; 0: empty */
	uint32_t *hashes;	/* the hash of the id in the same slot */
	uint32_t size;		/* slots, a power of two (0 before the first add) */
	uint32_t count;
};
#define HASHIDX_INIT { NULL, NULL, 0, 0 }

/* Where a lookup stands, for hashidx_next(). */
struct hashidx_pos {
	uint32_t hash, slot;
};

/* The first id stored under hash (HASHIDX_NONE when none), then each
 * further one.  Different keys can share a hash: compare the items. */
uint32_t hashidx_first(const struct hashidx *ix, uint32_t hash, struct hashidx_pos *pos);
uint32_t hashidx_next(const struct hashidx *ix, struct hashidx_pos *pos);

/* Store id under hash.  Adding an id twice stores it twice: look first. */
void hashidx_add(struct hashidx *ix, uint32_t hash, uint32_t id);

/* Forget every id, keeping the memory (for caches emptied often). */
void hashidx_clear(struct hashidx *ix);
void hashidx_release(struct hashidx *ix);

/* The one hash function: FNV-1a over bytes, fed piece by piece from
 * HASH_INIT, and a 64-bit integer (an address, two packed ids) mixed down
 * to 32 bits, where FNV's byte loop would be slow and its low bits poor. */
#define HASH_INIT 2166136261u
uint32_t hash_bytes(uint32_t h, const void *data, size_t len);
/* The same for an array of words, several times faster. */
uint32_t hash_u32s(uint32_t h, const uint32_t *v, size_t n);
uint32_t hash_str(uint32_t h, const char *s);
uint32_t hash_u64(uint64_t v);

#endif
