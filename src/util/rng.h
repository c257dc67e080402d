/* A small, fast pseudo-random generator: splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", 2014), 64 bits
 * of state, one add and three multiply-xorshift steps a number; it passes
 * BigCrush.  For choosing instants (the sampling clock, fleet.c), never
 * for secrets.  Seeded by the caller (tests: a fixed seed, one sequence)
 * or by rng_seed_auto() from the clocks and the pid, so two pystrobes
 * started together draw different instants. */
#ifndef PYSTROBE_RNG_H
#define PYSTROBE_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s;
};

void rng_seed(struct rng *r, uint64_t seed);
/* Seeded from CLOCK_MONOTONIC, CLOCK_REALTIME and the pid. */
void rng_seed_auto(struct rng *r);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n), 0 for n == 0.  By a multiply, not a modulo: the bias
 * is below n / 2^64, none that a clock could show. */
uint64_t rng_below(struct rng *r, uint64_t n);

#endif
