/* What proving a stack costs pystrobe itself, without the kernel: the
 * recheck of one thread's frames (src/python/recheck.c) read through the
 * page cache (src/process/mem_cache.c), as a round does it, over a fake
 * target's memory.
 *
 *   bench/recheck [ROUNDS]
 *
 * For stacks of 5, 60 and 100 frames laid out as on 3.14's data stack (one
 * frame every 160 bytes): each round empties the cache, adds every frame's
 * words (recheck_frame(), the fields peeked in the cache) and runs the
 * recheck (recheck_run(): the words gathered by page, read again, compared).
 * Prints the CPU time a round, the least of five batches of ROUNDS
 * (100,000): on a shared machine the least is the one the others disturbed
 * least.  The fake reader's copies are in it (a few hundred ns for 16 kB);
 * the real reader's system calls are not (bench/peers measures those). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp/layout.h"
#include "process/mem.h"
#include "python/recheck.h"

#define FRAME 160u
#define BASE 0x7f0000100000ull
#define BATCHES 5

/* CPU time, not wall time: on a shared machine the wall clock measures
 * the others. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A stack of n frames, innermost last, each pointing back at the one
 * before. */
static struct mem *fake_stack(const struct py_layout *L, int n)
{
	struct mem *m = mem_fake_new();
	uint8_t *buf = calloc((size_t)n, FRAME);

	for (int i = 0; i < n; i++) {
		uint64_t back = i ? BASE + (uint64_t)(i - 1) * FRAME : 0, code = 0x5000 + 64u * i;
		uint64_t lasti = code + 0x40;

		memcpy(buf + (size_t)i * FRAME + L->frame.back, &back, 8);
		memcpy(buf + (size_t)i * FRAME + L->frame.code, &code, 8);
		memcpy(buf + (size_t)i * FRAME + L->frame.lasti, &lasti, 8);
		buf[(size_t)i * FRAME + L->frame.owner] = 0;
	}
	if (mem_fake_add(m, BASE, buf, (size_t)n * FRAME) < 0) {
		fprintf(stderr, "bench/recheck: no memory for the fake target\n");
		exit(1);
	}
	free(buf);
	return m;
}

/* The least CPU time a round over BATCHES batches of `rounds`, in us. */
static double per_round(const struct py_layout *L, int n, long rounds)
{
	struct mem *under = fake_stack(L, n), *cache = mem_cache_new(under);
	struct recheck rc = { 0 };
	double best = -1;

	recheck_reset(&rc);
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now(), t;

		for (long r = 0; r < rounds; r++) {
			bool bad = false;

			mem_cache_reset(cache);
			recheck_reset(&rc);
			for (int i = n - 1; i >= 0; i--)
				recheck_frame(&rc, 0, cache, L, BASE + (uint64_t)i * FRAME, i == n - 1);
			recheck_run(&rc, under, &bad, 1);
			if (bad) {
				fprintf(stderr, "bench/recheck: a stack that did not change failed "
					"its recheck\n");
				exit(1);
			}
		}
		t = (now() - t0) / (double)rounds * 1e6;
		if (best < 0 || t < best)
			best = t;
	}
	recheck_release(&rc);
	mem_close(cache);
	mem_close(under);
	return best;
}

int main(int argc, char **argv)
{
	static const int depths[] = { 5, 60, 100 };
	const struct py_layout *L = layout_for_minor(14);
	long rounds = argc > 1 ? atol(argv[1]) : 100000;

	if (rounds <= 0 || !L) {
		fprintf(stderr, "bench/recheck: ROUNDS is a positive number of rounds a batch\n");
		return 2;
	}
	printf("frames  cpu_us/round  ns/frame   (least of %d batches of %ld rounds)\n", BATCHES,
	       rounds);
	for (size_t k = 0; k < sizeof(depths) / sizeof(*depths); k++) {
		double us = per_round(L, depths[k], rounds);

		printf("%6d  %12.2f  %8.0f\n", depths[k], us, us * 1e3 / depths[k]);
	}
	return 0;
}
