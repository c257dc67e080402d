/* Tests for small helpers of src/util/util.c, and base64 (util/base64.c).
 *
 * pid_phase(): every phase within its period, and the phases of
 * consecutive pids (a fleet's forked workers) spread over it, so that no
 * two of them share a round at 100 Hz: nine or sixteen in a row are at
 * least a thirtieth of the period apart, wherever the pids start.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "util/base64.h"
#include "util/util.h"
#include "suite.h"

#define PERIOD 1000000000ull

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

/* base64: RFC 4648's test vectors both ways, every byte value through and
 * back, and what is not base64 refused with the output untouched. */
START_TEST(test_base64)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					     "Zm9vYmFy" };
	static const char *const bad[] = { "Zg=", "Z===", "Zg==Zg==", "Zm9v!A==", "Zm=v",
					   "Zg\n=", "====" };
	struct strbuf sb = STRBUF_INIT, back = STRBUF_INIT;
	char all[256];

	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		sb.len = 0;
		back.len = 0;
		sb_add_base64(&sb, plain[i], strlen(plain[i]));
		sb_putc(&sb, 0);
		ck_assert_str_eq(sb.buf, coded[i]);
		ck_assert_int_eq(base64_decode(coded[i], strlen(coded[i]), &back), 0);
		ck_assert_uint_eq(back.len, strlen(plain[i]));
		ck_assert(!back.len || !memcmp(back.buf, plain[i], back.len));
	}
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	sb.len = back.len = 0;
	sb_add_base64(&sb, all, sizeof(all));
	ck_assert_int_eq(base64_decode(sb.buf, sb.len, &back), 0);
	ck_assert(back.len == sizeof(all) && !memcmp(back.buf, all, sizeof(all)));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		back.len = 0;
		sb_puts(&back, "kept");
		ck_assert_msg(base64_decode(bad[i], strlen(bad[i]), &back) < 0, "%s", bad[i]);
		ck_assert_str_eq(back.buf, "kept");
	}
	sb_release(&sb);
	sb_release(&back);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("pid_phase");

	tcase_add_test(tc, test_phase_in_period);
	tcase_add_test(tc, test_consecutive_pids_spread);
	tcase_add_test(tc, test_base64);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
