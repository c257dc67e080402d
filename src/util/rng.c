#include "util/rng.h"

#include <time.h>
#include <unistd.h>

#include "util/util.h"

void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = seed;
}

void rng_seed_auto(struct rng *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->s = mono_ns() ^ ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	/* The pid in the high bits, where the clocks change least. */
	r->s ^= (uint64_t)getpid() << 40;
	/* A first draw mixes the seed: close seeds give unrelated sequences
	 * anyway, and this one is not the clock read back. */
	r->s = rng_next(r);
}

uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}
