/* Log-linear histogram; see hist.h. */
#include "util/hist.h"

static unsigned bucket_of(uint64_t v)
{
	unsigned e;

	if (v < 32)
		return v;
	if (v >> 36)
		return HIST_BUCKETS - 1;
	e = 63 - __builtin_clzll(v);	/* 5..35 */
	return 32 + (e - 5) * 16 + ((v >> (e - 4)) & 15);
}

/* The middle of bucket i. */
static uint64_t bucket_value(unsigned i)
{
	unsigned e, sub;

	if (i < 32)
		return i;
	e = (i - 32) / 16 + 5;
	sub = (i - 32) % 16;
	return ((uint64_t)(16 + sub) << (e - 4)) + ((uint64_t)1 << (e - 4)) / 2;
}

void hist_add(struct hist *h, uint64_t v)
{
	unsigned i = bucket_of(v);

	/* A bucket that would wrap keeps its count: 4 billion is plenty. */
	if (h->b[i] != UINT32_MAX)
		h->b[i]++;
	h->n++;
}

void hist_merge(struct hist *to, const struct hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		uint64_t s = (uint64_t)to->b[i] + from->b[i];

		to->b[i] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
	}
	to->n += from->n;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t want, seen = 0, total = 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		total += h->b[i];
	if (!total)
		return 0;
	if (q < 0)
		q = 0;
	want = (uint64_t)(q * (double)total);
	if (want >= total)
		want = total - 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return bucket_value(i);
	}
	return bucket_value(HIST_BUCKETS - 1);
}
