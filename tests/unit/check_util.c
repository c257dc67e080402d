/* Tests for small helpers of src/util/util.c.
 *
 * pid_phase(): every phase within its period, and the phases of
 * consecutive pids (a fleet's forked workers) spread over it, so that no
 * two of them share a round at 100 Hz: nine or sixteen in a row are at
 * least a thirtieth of the period apart, wherever the pids start.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/util.h"
#include "suite.h"

#define PERIOD 1000000000ull

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The smallest distance, around the period, between the phases of pids
 * first .. first + n - 1. */
static uint64_t min_gap(pid_t first, int n)
{
	uint64_t v[64], gap = PERIOD;

	for (int i = 0; i < n; i++)
		v[i] = pid_phase(first + i, PERIOD);
	qsort(v, (size_t)n, sizeof(v[0]), cmp_u64);
	for (int i = 0; i < n; i++) {
		uint64_t d = i + 1 < n ? v[i + 1] - v[i] : v[0] + PERIOD - v[i];

		if (d < gap)
			gap = d;
	}
	return gap;
}

START_TEST(test_phase_in_period)
{
	static const pid_t pids[] = { 1, 2, 300, 32767, 32768, 4194303 };

	for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
		ck_assert_uint_lt(pid_phase(pids[i], PERIOD), PERIOD);
		ck_assert_uint_lt(pid_phase(pids[i], 10), 10);
		ck_assert_uint_eq(pid_phase(pids[i], 0), 0);
	}
}
END_TEST

START_TEST(test_consecutive_pids_spread)
{
	static const pid_t firsts[] = { 2, 1000, 16255, 32760, 98304, 4194000 };

	for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
		ck_assert_uint_ge(min_gap(firsts[i], 9), PERIOD / 30);
		ck_assert_uint_ge(min_gap(firsts[i], 16), PERIOD / 30);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("pid_phase");

	tcase_add_test(tc, test_phase_in_period);
	tcase_add_test(tc, test_consecutive_pids_spread);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
