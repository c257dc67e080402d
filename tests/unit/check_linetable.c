/* Tests for the line-table decoders: hand-made tables for the corners each
 * format has (expected values were confirmed with code.replace() and
 * co_lines()/findlinestarts() on the interpreters), and random bytes behind
 * guard pages for robustness.  Every offset of real code objects, against
 * what each interpreter says itself, is live/check_linetable_real.c.
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "interp/linetable.h"
#include "suite.h"

#define LINE(fmt, t, first, off) \
	linetable_line(fmt, t, sizeof(t), first, off)

/* ---- hand-made tables ------------------------------------------------- */

START_TEST(test_empty)
{
	static const uint8_t none[1];

	/* lnotab has no end marker: an empty one puts everything on the
	 * first line.  The newer formats cover nothing without entries. */
	ck_assert_int_eq(linetable_line(LT_LNOTAB, none, 0, 7, 0), 7);
	ck_assert_int_eq(linetable_line(LT_LNOTAB, none, 0, 7, 1000), 7);
	ck_assert_int_eq(linetable_line(LT_LINETABLE, none, 0, 7, 0), -1);
	ck_assert_int_eq(linetable_line(LT_LOCATIONS, none, 0, 7, 0), -1);
	ck_assert_int_eq(linetable_line(LT_LNOTAB, NULL, 0, 3, 0), 3);
	ck_assert_int_eq(linetable_line(LT_LINETABLE, NULL, 0, 3, 0), -1);
	ck_assert_int_eq(linetable_line(LT_LOCATIONS, NULL, 0, 3, 0), -1);
	ck_assert_int_eq(linetable_line(LT_LOCATIONS, NULL, 5, 3, 0), -1);
	ck_assert_int_eq(linetable_line((enum lt_format)42, none, 0, 3, 0), -1);
}
END_TEST

START_TEST(test_lnotab)
{
	/* findlinestarts on 3.8: (0,10) (6,11) (10,12) (20,13) */
	static const uint8_t t[] = { 6, 1, 4, 0xfe, 0, 3, 10, 1 };
	/* A jump of 300 lines split over pairs with no address increment. */
	static const uint8_t big[] = { 0, 127, 0, 127, 2, 46 };
	static const uint8_t odd[] = { 6, 1, 4 };

	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 0), 10);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 4), 10);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 6), 11);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 8), 11);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 10), 12);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 18), 12);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 20), 13);
	/* Past the table the last line carries on to the end of the code. */
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, 400), 13);
	ck_assert_int_eq(LINE(LT_LNOTAB, t, 10, UINT32_MAX), 13);

	ck_assert_int_eq(LINE(LT_LNOTAB, big, 1, 0), 255);
	ck_assert_int_eq(LINE(LT_LNOTAB, big, 1, 2), 301);

	ck_assert_int_eq(LINE(LT_LNOTAB, odd, 1, 0), -1);
}
END_TEST

START_TEST(test_linetable310)
{
	/* co_lines on 3.10: (0,6,11) (6,10,None) (10,12,13) */
	static const uint8_t t[] = { 6, 1, 4, 0x80, 2, 2 };
	/* Zero-length pairs carry a big delta: co_lines (0,4,265) */
	static const uint8_t big[] = { 0, 127, 0, 127, 4, 10 };
	static const uint8_t odd[] = { 6, 1, 4 };
	static const uint8_t negative[] = { 2, 0xf6 };

	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 0), 11);
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 4), 11);
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 6), -1);
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 8), -1);
	/* -128 left the running line alone. */
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 10), 13);
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, 12), -1);
	ck_assert_int_eq(LINE(LT_LINETABLE, t, 10, UINT32_MAX), -1);

	ck_assert_int_eq(LINE(LT_LINETABLE, big, 1, 0), 265);
	ck_assert_int_eq(LINE(LT_LINETABLE, big, 1, 2), 265);
	ck_assert_int_eq(LINE(LT_LINETABLE, big, 1, 4), -1);

	ck_assert_int_eq(LINE(LT_LINETABLE, odd, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LINETABLE, negative, 1, 0), -1);
}
END_TEST

START_TEST(test_locations)
{
	/* co_lines on 3.11: (0,2,20) (2,6,21) (6,8,None) (8,14,18)
	 * (14,16,118) (16,18,118) */
	static const uint8_t t[] = {
		0xd0, 0, 5,			/* one-line, +0, 1 unit */
		0xd9, 2, 7,			/* one-line, +1, 2 units */
		0xf8,				/* no location, 1 unit */
		0xea, 0x07,			/* no columns, -3, 3 units */
		0xf0, 0x48, 0x03, 0, 1, 5,	/* long, +100, 1 unit */
		0x80, 0x12,			/* short, 1 unit */
	};
	/* The line survives a no-location entry: (0,2,None) (2,4,6) */
	static const uint8_t sticky[] = { 0xf8, 0xd8, 0, 1 };

	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 0), 20);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 2), 21);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 4), 21);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 6), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 8), 18);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 12), 18);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 14), 118);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 16), 118);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, 18), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, t, 20, UINT32_MAX), -1);

	ck_assert_int_eq(LINE(LT_LOCATIONS, sticky, 5, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, sticky, 5, 2), 6);
	ck_assert_int_eq(LINE(LT_LOCATIONS, sticky, 5, 4), -1);
}
END_TEST

START_TEST(test_locations_malformed)
{
	/* A varint that says "more" and then stops. */
	static const uint8_t truncated[] = { 0xe8, 0x41 };
	static const uint8_t bare[] = { 0xe8 };
	static const uint8_t long_bare[] = { 0xf0 };
	/* One that runs into the next entry's first byte. */
	static const uint8_t runs_on[] = { 0xe8, 0x41, 0x80, 0x00 };
	/* Seven 6-bit chunks: more than any line delta needs. */
	static const uint8_t overlong[] = {
		0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00,
	};
	/* An entry must begin with the top bit set. */
	static const uint8_t headless[] = { 0x50, 0x80, 0 };
	/* Earlier entries still decode when a later one is broken. */
	static const uint8_t late[] = { 0xd0, 0, 5, 0xe8, 0x41 };
	/* A negative line is no line. */
	static const uint8_t below[] = { 0xe8, 0x15 };

	ck_assert_int_eq(LINE(LT_LOCATIONS, truncated, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, bare, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, long_bare, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, runs_on, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, runs_on, 1, 2), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, overlong, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, headless, 1, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, late, 4, 0), 4);
	ck_assert_int_eq(LINE(LT_LOCATIONS, late, 4, 2), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, below, 3, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, below, 20, 0), 10);
}
END_TEST

START_TEST(test_line_overflow)
{
	static const uint8_t lnotab[] = { 2, 127 };
	static const uint8_t lt310[] = { 2, 127 };
	static const uint8_t loc[] = { 0xe8, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03 };

	ck_assert_int_eq(LINE(LT_LNOTAB, lnotab, INT_MAX, 2), -1);
	ck_assert_int_eq(LINE(LT_LNOTAB, lnotab, INT_MAX, 0), INT_MAX);
	ck_assert_int_eq(LINE(LT_LINETABLE, lt310, INT_MAX - 127, 0), INT_MAX);
	ck_assert_int_eq(LINE(LT_LINETABLE, lt310, INT_MAX, 0), -1);
	ck_assert_int_eq(LINE(LT_LOCATIONS, loc, INT_MAX, 0), -1);
	ck_assert_int_eq(LINE(LT_LNOTAB, lnotab, -5, 0), -1);
}
END_TEST

/* ---- random input ----------------------------------------------------- */

#define FUZZ_SEED	0x9e3779b97f4a7c15ULL
#define FUZZ_ROUNDS	100000
#define FUZZ_MAX	96

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * The bytes sit flush against an inaccessible page, alternately after and
 * before them, so a read one byte out of bounds faults even without the
 * sanitizers.
 */
START_TEST(test_fuzz)
{
	static const enum lt_format fmts[] = { LT_LNOTAB, LT_LINETABLE, LT_LOCATIONS };
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map, page, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(map + 2 * page, page, PROT_NONE), 0);
	rng_state = FUZZ_SEED;

	for (int round = 0; round < FUZZ_ROUNDS; round++) {
		size_t len = rng() % (FUZZ_MAX + 1);
		uint8_t *t = round & 1 ? map + page : map + 2 * page - len;
		int first = (int)(rng() % 4096) - 16;

		for (size_t i = 0; i < len; i++)
			t[i] = (uint8_t)rng();
		/* Random bytes rarely make a location table that gets past
		 * its first few entries: half the time, give it the shape of
		 * one (entry starts with the top bit, the rest without). */
		if (round & 2) {
			for (size_t i = 0; i < len; i++)
				t[i] &= 0x7f;
			for (size_t i = 0; i < len; i += 1 + rng() % 4)
				t[i] |= 0x80;
		}
		for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
			struct lt_ranges rs;

			if (linetable_ranges(fmts[f], t, len, first, &rs) < 0)
				ck_abort_msg("linetable_ranges: out of memory");
			for (uint32_t off = 0; off <= 2 * 8 * len + 2; off += 1 + (rng() % 16)) {
				int line = linetable_line(fmts[f], t, len, first, off);
				int line_r = linetable_ranges_line(&rs, off);

				/* Not ck_assert: it reports every pass to the
				 * parent, which would dominate the run time. */
				if (line < -1 || line_r != line)
					ck_abort_msg("seed %llx round %d fmt %zu off %u: line %d, ranges %d",
						     (unsigned long long)FUZZ_SEED, round, f, off, line,
						     line_r);
			}
			if (linetable_ranges_line(&rs, UINT32_MAX) !=
			    linetable_line(fmts[f], t, len, first, UINT32_MAX))
				ck_abort_msg("round %d fmt %zu: ranges differ at UINT32_MAX", round, f);
			linetable_ranges_free(&rs);
			linetable_line(fmts[f], t, len, first, UINT32_MAX);
			linetable_line(fmts[f], t, len, INT_MAX, 0);
			linetable_line(fmts[f], t, len, INT_MIN, 0);
		}
	}
	munmap(map, 3 * page);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("linetable");
	TCase *tc;

	tc = tcase_create("tables");
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_lnotab);
	tcase_add_test(tc, test_linetable310);
	tcase_add_test(tc, test_locations);
	tcase_add_test(tc, test_locations_malformed);
	tcase_add_test(tc, test_line_overflow);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_fuzz);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
