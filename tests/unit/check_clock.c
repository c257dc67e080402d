/* Tests for the sampling clock's randomised instants: the generator
 * (src/util/rng.c) and the schedule (fleet_clock_advance(), fleet.c),
 * driven by made-up times, no target.  What they prove: one round per
 * interval-long cell, at an instant spread evenly over the cell, so that
 * jobs whose period is a multiple of the interval (or any other) are
 * sampled in proportion to their phases' lengths, the rate is exact, rounds
 * are 0 to 2 intervals apart, and lag and skipped rounds are counted as on
 * a grid of deadlines.  Seeds are fixed: every run draws the same
 * numbers, so the bounds below cannot flake. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "sample/fleet.h"
#include "util/rng.h"
#include "suite.h"

#define T 10000000ull	/* 10 ms: 100 Hz */

/* splitmix64's published first outputs for seed 0 (Vigna's reference
 * splitmix64.c): this is that generator, not a look-alike. */
START_TEST(test_splitmix_reference)
{
	struct rng r;

	rng_seed(&r, 0);
	ck_assert_uint_eq(rng_next(&r), 0xe220a8397b1dcdafull);
	ck_assert_uint_eq(rng_next(&r), 0x6e789e6aa1b965f4ull);
	ck_assert_uint_eq(rng_next(&r), 0x06c45d188009454full);
}
END_TEST

START_TEST(test_same_seed_same_numbers)
{
	struct rng a, b;

	rng_seed(&a, 12345);
	rng_seed(&b, 12345);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(rng_next(&a), rng_next(&b));
}
END_TEST

/* Two automatic seeds a moment apart (two pystrobes started together)
 * give different numbers. */
START_TEST(test_auto_seeds_differ)
{
	struct rng a, b;

	rng_seed_auto(&a);
	rng_seed_auto(&b);
	ck_assert_uint_ne(a.s, b.s);
	ck_assert_uint_ne(rng_next(&a), rng_next(&b));
}
END_TEST

/* rng_below(): always below n, every value of a small range drawn, and
 * 10 buckets filled evenly (chi-square of 9 degrees of freedom under 27.9,
 * p = 0.001 for a fair generator; fixed seed). */
START_TEST(test_below_uniform)
{
	struct rng r;
	uint64_t count[10] = { 0 }, n = 100000;
	double chi = 0, want = n / 10.0;

	rng_seed(&r, 7);
	ck_assert_uint_eq(rng_below(&r, 0), 0);
	ck_assert_uint_eq(rng_below(&r, 1), 0);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = rng_below(&r, 10);

		ck_assert_uint_lt(v, 10);
		count[v]++;
	}
	for (int i = 0; i < 10; i++)
		chi += (count[i] - want) * (count[i] - want) / want;
	ck_assert_msg(chi < 27.9, "chi-square %.1f over 10 buckets", chi);
	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_uint_lt(rng_below(&r, T), T);
}
END_TEST

static void clock_at(struct fleet_clock *c, uint64_t start, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	c->interval_ns = T;
	c->start_ns = c->cell_ns = c->deadline_ns = start;
	rng_seed(&c->rng, seed);
}

/* Rounds taken on time (each ends 50 us after its instant): one in each
 * cell, the first at the start; gaps between 0 and 2 intervals; no lag;
 * and in any stretch of time the rounds are its length over the interval
 * give or take one. */
START_TEST(test_one_round_per_cell)
{
	struct fleet_clock c;
	uint64_t start = 1000000000ull, prev = start, n = 20000, min_gap = 2 * T, max_gap = 0;

	clock_at(&c, start, 1);
	for (uint64_t k = 1; k < n; k++) {
		fleet_clock_advance(&c, c.deadline_ns + 50000);
		ck_assert_uint_ge(c.deadline_ns, start + k * T);
		ck_assert_uint_lt(c.deadline_ns, start + (k + 1) * T);
		if (c.deadline_ns - prev < min_gap)
			min_gap = c.deadline_ns - prev;
		if (c.deadline_ns - prev > max_gap)
			max_gap = c.deadline_ns - prev;
		prev = c.deadline_ns;
	}
	ck_assert_uint_eq(c.rounds, n - 1);
	ck_assert_uint_eq(c.lagged, 0);
	ck_assert_uint_eq(c.skipped, 0);
	/* The spread is used: gaps near 0 and near 2 intervals both occur. */
	ck_assert_uint_lt(min_gap, T / 10);
	ck_assert_uint_gt(max_gap, 2 * T - T / 10);
}
END_TEST

/* The anti-aliasing itself: jobs of period 1, 2, 3 and 7 intervals, and
 * one of 2.5 (busy the first third of each period), are sampled in the
 * busy third a third of the time, within a point over 30000 rounds; the
 * instants' phases within a period fill 10 buckets evenly.  A fixed grid
 * of instants gives 0% or 100% for the period of 1 interval. */
START_TEST(test_periods_not_aliased)
{
	static const double periods[] = { 1, 2, 3, 7, 2.5 };

	for (size_t i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		struct fleet_clock c;
		uint64_t P = (uint64_t)(periods[i] * T), busy = 0, bucket[10] = { 0 };
		uint64_t n = 30000, start = 5 * T + 1234;

		clock_at(&c, start, 42 + i);
		for (uint64_t k = 0; k < n; k++) {
			uint64_t phase = (c.deadline_ns - start) % P;

			busy += phase < P / 3;
			bucket[phase * 10 / P]++;
			fleet_clock_advance(&c, c.deadline_ns + 20000);
		}
		ck_assert_msg(100.0 * busy / n > 32.3 && 100.0 * busy / n < 34.3,
			      "period %.1f intervals: %.1f%% busy, 33.3%% true", periods[i],
			      100.0 * busy / n);
		for (int b = 0; b < 10; b++)
			ck_assert_msg(bucket[b] > n / 10 * 0.92 && bucket[b] < n / 10 * 1.08,
				      "period %.1f intervals: bucket %d has %llu of %llu",
				      periods[i], b, (unsigned long long)bucket[b],
				      (unsigned long long)n);
	}
}
END_TEST

/* A round that ends inside the next cell, even past its instant, is no
 * lag (the next starts at once); one that ends after the whole next cell
 * lags once, skips the cells missed, and the next instant is in the cell
 * under way: rounds and skipped cells add up to the cells elapsed. */
START_TEST(test_lag_skips_whole_cells)
{
	struct fleet_clock c;
	uint64_t start = 0;

	clock_at(&c, start, 3);
	fleet_clock_advance(&c, start + T + T / 2);	/* ends half into cell 1 */
	ck_assert_uint_eq(c.lagged, 0);
	ck_assert_uint_eq(c.skipped, 0);
	ck_assert_uint_eq(c.cell_ns, start + T);
	/* Round 1 ends 3.5 intervals in: cells 2 is past, 3 under way. */
	fleet_clock_advance(&c, start + 3 * T + T / 2);
	ck_assert_uint_eq(c.lagged, 1);
	ck_assert_uint_eq(c.skipped, 1);
	ck_assert_uint_eq(c.max_lag_ns, T + T / 2);
	ck_assert_uint_eq(c.cell_ns, start + 3 * T);
	ck_assert_uint_ge(c.deadline_ns, start + 3 * T);
	ck_assert_uint_lt(c.deadline_ns, start + 4 * T);
	ck_assert_uint_eq(c.rounds + c.skipped, 3);
	/* Ten intervals stuck: nine cells skipped, lag 9.x intervals. */
	fleet_clock_advance(&c, start + 13 * T + 5);
	ck_assert_uint_eq(c.lagged, 2);
	ck_assert_uint_eq(c.skipped, 1 + 9);
	ck_assert_uint_eq(c.max_lag_ns, 9 * T + 5);
	ck_assert_uint_eq(c.cell_ns, start + 13 * T);
	ck_assert_uint_eq(c.rounds + c.skipped, 13);
}
END_TEST

/* With --duration the last instant is no later than its end. */
START_TEST(test_end_caps_the_instant)
{
	struct fleet_clock c;

	clock_at(&c, 0, 9);
	c.end_ns = 3 * T + 1;
	for (int k = 0; k < 5; k++) {
		fleet_clock_advance(&c, c.deadline_ns);
		ck_assert_uint_le(c.deadline_ns, c.end_ns);
	}
	ck_assert_uint_eq(c.deadline_ns, c.end_ns);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("clock");

	tcase_add_test(tc, test_splitmix_reference);
	tcase_add_test(tc, test_same_seed_same_numbers);
	tcase_add_test(tc, test_auto_seeds_differ);
	tcase_add_test(tc, test_below_uniform);
	tcase_add_test(tc, test_one_round_per_cell);
	tcase_add_test(tc, test_periods_not_aliased);
	tcase_add_test(tc, test_lag_skips_whole_cells);
	tcase_add_test(tc, test_end_caps_the_instant);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
