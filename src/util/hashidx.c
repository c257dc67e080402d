/* The hash index and hash functions; see hashidx.h. */
#include "util/hashidx.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

uint32_t hash_bytes(uint32_t h, const void *data, size_t len)
{
	const uint8_t *b = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* A word at a time, then hash_u64's mixing: a stack of frame ids is
 * hashed every sample, and byte-wise FNV over 4 bytes a frame was a
 * visible part of a round at deep stacks. */
uint32_t hash_u32s(uint32_t h, const uint32_t *v, size_t n)
{
	uint64_t x = h;

	for (size_t i = 0; i < n; i++)
		x = (x ^ v[i]) * 0x100000001b3ull;
	return hash_u64(x ^ n);
}

uint32_t hash_str(uint32_t h, const char *s)
{
	return hash_bytes(h, s, strlen(s));
}

/* The finaliser of MurmurHash3's 64-bit variant: every input bit moves
 * every output bit, so addresses that differ only in high bits (or that are
 * all 16-byte aligned) still spread over the low bits the index uses. */
uint32_t hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return (uint32_t)v;
}

static void place(uint32_t *ids, uint32_t *hashes, uint32_t size, uint32_t hash, uint32_t id)
{
	uint32_t slot = hash & (size - 1);

	while (ids[slot])
		slot = (slot + 1) & (size - 1);
	ids[slot] = id + 1;
	hashes[slot] = hash;
}

static void grow(struct hashidx *ix)
{
	uint32_t size = ix->size ? ix->size * 2 : 64;
	uint32_t *ids = xcalloc(size, sizeof(*ids));
	uint32_t *hashes = xmalloc(size * sizeof(*hashes));

	for (uint32_t i = 0; i < ix->size; i++)
		if (ix->ids[i])
			place(ids, hashes, size, ix->hashes[i], ix->ids[i] - 1);
	free(ix->ids);
	free(ix->hashes);
	ix->ids = ids;
	ix->hashes = hashes;
	ix->size = size;
}

void hashidx_add(struct hashidx *ix, uint32_t hash, uint32_t id)
{
	if ((ix->count + 1) * 2 > ix->size)
		grow(ix);
	place(ix->ids, ix->hashes, ix->size, hash, id);
	ix->count++;
}

uint32_t hashidx_next(const struct hashidx *ix, struct hashidx_pos *pos)
{
	uint32_t id;

	if (!ix->size)
		return HASHIDX_NONE;
	/* Half full at most, so an empty slot always ends the probe. */
	while ((id = ix->ids[pos->slot])) {
		uint32_t slot = pos->slot;

		pos->slot = (slot + 1) & (ix->size - 1);
		if (ix->hashes[slot] == pos->hash)
			return id - 1;
	}
	return HASHIDX_NONE;
}

uint32_t hashidx_first(const struct hashidx *ix, uint32_t hash, struct hashidx_pos *pos)
{
	pos->hash = hash;
	pos->slot = ix->size ? hash & (ix->size - 1) : 0;
	return hashidx_next(ix, pos);
}

void hashidx_clear(struct hashidx *ix)
{
	if (ix->size)
		memset(ix->ids, 0, ix->size * sizeof(*ix->ids));
	ix->count = 0;
}

void hashidx_release(struct hashidx *ix)
{
	free(ix->ids);
	free(ix->hashes);
	memset(ix, 0, sizeof(*ix));
}
