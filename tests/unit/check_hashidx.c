/* Tests for the hash index and ALLOC_GROW (src/util): lookups through
 * collisions, growth that keeps every id, clearing, and the array macro. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashidx.h"
#include "util/util.h"
#include "suite.h"

static uint32_t find(const struct hashidx *ix, uint32_t h, const uint64_t *keys, uint64_t key)
{
	struct hashidx_pos pos;
	uint32_t id;

	for (id = hashidx_first(ix, h, &pos); id != HASHIDX_NONE; id = hashidx_next(ix, &pos))
		if (keys[id] == key)
			return id;
	return HASHIDX_NONE;
}

START_TEST(test_empty)
{
	struct hashidx ix = HASHIDX_INIT;
	struct hashidx_pos pos;

	ck_assert_uint_eq(hashidx_first(&ix, 7, &pos), HASHIDX_NONE);
	hashidx_clear(&ix);
	hashidx_release(&ix);
}
END_TEST

/* 100000 keys through many growths: each is found under its own id, and a
 * key never added is not. */
START_TEST(test_grow_keeps_every_id)
{
	enum { N = 100000 };
	struct hashidx ix = HASHIDX_INIT;
	uint64_t *keys = malloc(N * sizeof(*keys));

	for (uint32_t i = 0; i < N; i++) {
		keys[i] = (uint64_t)i << 12;	/* aligned, as addresses are */
		hashidx_add(&ix, hash_u64(keys[i]), i);
	}
	ck_assert_uint_eq(ix.count, N);
	ck_assert_uint_le(ix.count * 2, ix.size);
	for (uint32_t i = 0; i < N; i++)
		ck_assert_uint_eq(find(&ix, hash_u64(keys[i]), keys, keys[i]), i);
	ck_assert_uint_eq(find(&ix, hash_u64(12345), keys, 12345), HASHIDX_NONE);
	hashidx_release(&ix);
	free(keys);
}
END_TEST

/* Keys that share one hash are all reachable: the caller's compare tells
 * them apart. */
START_TEST(test_collisions)
{
	struct hashidx ix = HASHIDX_INIT;
	uint64_t keys[40];
	struct hashidx_pos pos;
	int seen = 0;

	for (uint32_t i = 0; i < 40; i++) {
		keys[i] = 1000 + i;
		hashidx_add(&ix, 42, i);
	}
	for (uint32_t i = 0; i < 40; i++)
		ck_assert_uint_eq(find(&ix, 42, keys, keys[i]), i);
	for (uint32_t id = hashidx_first(&ix, 42, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&ix, &pos))
		seen++;
	ck_assert_int_eq(seen, 40);
	hashidx_release(&ix);
}
END_TEST

START_TEST(test_clear)
{
	struct hashidx ix = HASHIDX_INIT;
	uint64_t keys[] = { 5, 6 };

	hashidx_add(&ix, hash_u64(5), 0);
	hashidx_clear(&ix);
	ck_assert_uint_eq(find(&ix, hash_u64(5), keys, 5), HASHIDX_NONE);
	ck_assert_uint_eq(ix.count, 0);
	hashidx_add(&ix, hash_u64(6), 1);
	ck_assert_uint_eq(find(&ix, hash_u64(6), keys, 6), 1);
	hashidx_release(&ix);
}
END_TEST

START_TEST(test_hash_functions)
{
	/* FNV-1a's published value for "a", and piecewise feeding. */
	ck_assert_uint_eq(hash_str(HASH_INIT, "a"), 0xe40c292cu);
	ck_assert_uint_eq(hash_str(hash_str(HASH_INIT, "ab"), "cd"),
			  hash_str(HASH_INIT, "abcd"));
	ck_assert_uint_ne(hash_u64(1ull << 40), hash_u64(2ull << 40));
	ck_assert_uint_ne(hash_u64(0x1000) & 63, hash_u64(0x2000) & 63);
}
END_TEST

START_TEST(test_alloc_grow)
{
	int *a = NULL;
	uint32_t alloc = 0;

	for (int i = 0; i < 1000; i++) {
		ALLOC_GROW(a, (size_t)i + 1, alloc);
		a[i] = i;
	}
	ck_assert_uint_ge(alloc, 1000);
	ck_assert_uint_lt(alloc, 2048);
	ALLOC_GROW(a, 5000, alloc);	/* a jump past twice the size */
	ck_assert_uint_eq(alloc, 5000);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(a[i], i);
	free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hashidx");
	TCase *tc = tcase_create("hashidx");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_grow_keeps_every_id);
	tcase_add_test(tc, test_collisions);
	tcase_add_test(tc, test_clear);
	tcase_add_test(tc, test_hash_functions);
	tcase_add_test(tc, test_alloc_grow);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
