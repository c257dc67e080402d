/* A fixed-size histogram of durations (or any non-negative counts), for
 * medians and percentiles of figures there are too many of to keep: the
 * pauses of a recording that may take millions of samples.
 *
 * Values below 32 have a bucket each; above, every power of two is split
 * in 16 buckets, so a quantile is within about 6% of the true one.
 * Values of 2^36 and more (68 s, counted in ns) share the last bucket. */
#ifndef PYSTROBE_HIST_H
#define PYSTROBE_HIST_H

#include <stdint.h>

#define HIST_BUCKETS (32 + 31 * 16)

struct hist {
	uint64_t n;
	uint32_t b[HIST_BUCKETS];
};

void hist_add(struct hist *h, uint64_t v);
void hist_merge(struct hist *to, const struct hist *from);
/* The value below which a share q (0..1) of those added lie, as the middle
 * of its bucket; 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);

#endif
