/* Tests for the pause histogram (src/util/hist.c): exact below 32, within
 * the promised 6% above, merging, and values past its range. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "util/hist.h"
#include "suite.h"

START_TEST(test_empty)
{
	struct hist h;

	memset(&h, 0, sizeof(h));
	ck_assert_uint_eq(hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.99), 0);
}
END_TEST

START_TEST(test_small_values_exact)
{
	struct hist h;

	memset(&h, 0, sizeof(h));
	for (uint64_t v = 0; v < 32; v++)
		hist_add(&h, v);
	ck_assert_uint_eq(h.n, 32);
	ck_assert_uint_eq(hist_quantile(&h, 0), 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.5), 16);
	ck_assert_uint_eq(hist_quantile(&h, 1), 31);
}
END_TEST

/* Every value of 1..N once: the q-quantile is q * N, give or take the
 * bucket width (1/16 of the power of two below it). */
START_TEST(test_quantiles_within_bucket)
{
	static struct hist h;
	static const double qs[] = { 0.1, 0.5, 0.9, 0.99 };
	const uint64_t n = 1000000;

	memset(&h, 0, sizeof(h));
	for (uint64_t v = 1; v <= n; v++)
		hist_add(&h, v);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double want = qs[i] * n, got = (double)hist_quantile(&h, qs[i]);

		ck_assert_msg(got > want * 0.935 && got < want * 1.065,
			      "q %.2f: %.0f, want about %.0f", qs[i], got, want);
	}
}
END_TEST

START_TEST(test_merge_is_adding)
{
	static struct hist a, b, all;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&all, 0, sizeof(all));
	for (uint64_t v = 0; v < 5000; v++) {
		hist_add(v % 3 ? &a : &b, v * 997);
		hist_add(&all, v * 997);
	}
	hist_merge(&a, &b);
	ck_assert_uint_eq(a.n, all.n);
	ck_assert_int_eq(memcmp(a.b, all.b, sizeof(a.b)), 0);
	ck_assert_uint_eq(hist_quantile(&a, 0.5), hist_quantile(&all, 0.5));
}
END_TEST

/* Values past 2^36 share the last bucket; nothing is lost or overrun. */
START_TEST(test_huge_values)
{
	struct hist h;

	memset(&h, 0, sizeof(h));
	hist_add(&h, UINT64_MAX);
	hist_add(&h, (uint64_t)1 << 40);
	hist_add(&h, 100);
	ck_assert_uint_eq(h.n, 3);
	ck_assert_uint_eq(h.b[HIST_BUCKETS - 1], 2);
	ck_assert_uint_ge(hist_quantile(&h, 1), (uint64_t)1 << 35);
	ck_assert_uint_le(hist_quantile(&h, 0), 104);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hist");
	TCase *tc = tcase_create("hist");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_small_values_exact);
	tcase_add_test(tc, test_quantiles_within_bucket);
	tcase_add_test(tc, test_merge_is_adding);
	tcase_add_test(tc, test_huge_values);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
