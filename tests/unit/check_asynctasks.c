/* Tests for the asyncio task model (src/python/asynctasks.c), through its
 * API alone, with tasks made by hand: an edge is recorded on both sides
 * once; the one bound of the graph, ASYNCIO_MAX_AWAITERS, holds either
 * way and counts what it leaves out; cycles are numbered, once each; and
 * lookups work with and without the index.  check_asyncio.c and
 * check_asyncio_legacy.c prove that both readers keep the same bound.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "python/asynctasks.h"
#include "util/util.h"
#include "suite.h"

/* n tasks at 0x1000, 0x2000...: none awaits another yet. */
static void make(struct py_tasks *t, int n)
{
	*t = (struct py_tasks){ .v = xcalloc(n, sizeof(struct py_task)), .n = n };
	for (int i = 0; i < n; i++)
		t->v[i].addr = 0x1000 * (uint64_t)(i + 1);
}

START_TEST(test_link_once)
{
	struct py_tasks t;

	make(&t, 2);
	py_tasks_link(&t, 0, 1);
	py_tasks_link(&t, 0, 1);
	ck_assert_int_eq(t.v[0].nawaiting, 1);
	ck_assert_uint_eq(t.v[0].awaiting[0], t.v[1].addr);
	ck_assert_int_eq(t.v[1].nawaited_by, 1);
	ck_assert_uint_eq(t.v[1].awaited_by[0], t.v[0].addr);
	ck_assert_int_eq(t.v[0].nawaited_by + t.v[1].nawaiting, 0);
	ck_assert_int_eq(t.edges_cut, 0);
	py_tasks_free(&t);
}
END_TEST

/* Task 0 awaited by every other task, and task 1 awaiting every other:
 * each side stops at the bound, each edge past it counted once, and an
 * edge already there is not one past it. */
START_TEST(test_bound)
{
	enum { EXTRA = 5, N = ASYNCIO_MAX_AWAITERS + EXTRA + 2 };
	struct py_tasks t;

	make(&t, N);
	for (int i = 1; i < N; i++)
		py_tasks_link(&t, i, 0);
	ck_assert_int_eq(t.v[0].nawaited_by, ASYNCIO_MAX_AWAITERS);
	ck_assert_int_eq(t.edges_cut, N - 1 - ASYNCIO_MAX_AWAITERS);
	py_tasks_link(&t, 1, 0);	/* known: not cut */
	ck_assert_int_eq(t.edges_cut, N - 1 - ASYNCIO_MAX_AWAITERS);
	t.edges_cut = 0;
	for (int i = 2; i < N; i++)
		py_tasks_link(&t, 1, i);
	ck_assert_int_eq(t.v[1].nawaiting, ASYNCIO_MAX_AWAITERS);
	ck_assert_int_eq(t.edges_cut, N - 2 - (ASYNCIO_MAX_AWAITERS - 1));
	for (int i = 2; i < N; i++)
		ck_assert_int_le(t.v[i].nawaited_by, 1);
	py_tasks_free(&t);
}
END_TEST

/* 0 -> 1 -> 2 -> 0 and 3 <-> 4, with 5 awaiting into the first ring from
 * outside it and 6 awaiting nothing: two cycles, the tasks outside none. */
START_TEST(test_cycles)
{
	static const int edges[][2] = { { 0, 1 }, { 1, 2 }, { 2, 0 }, { 3, 4 }, { 4, 3 },
					{ 5, 0 } };
	struct py_tasks t;

	make(&t, 7);
	for (size_t i = 0; i < ARRAY_SIZE(edges); i++)
		py_tasks_link(&t, edges[i][0], edges[i][1]);
	py_tasks_mark_cycles(&t);
	ck_assert_int_eq(t.ncycles, 2);
	ck_assert_int_ne(t.v[0].cycle, 0);
	ck_assert_int_eq(t.v[1].cycle, t.v[0].cycle);
	ck_assert_int_eq(t.v[2].cycle, t.v[0].cycle);
	ck_assert_int_ne(t.v[3].cycle, 0);
	ck_assert_int_ne(t.v[3].cycle, t.v[0].cycle);
	ck_assert_int_eq(t.v[4].cycle, t.v[3].cycle);
	ck_assert_int_eq(t.v[5].cycle + t.v[6].cycle, 0);
	py_tasks_free(&t);
}
END_TEST

START_TEST(test_find)
{
	struct py_tasks t;

	make(&t, 40);
	ck_assert_ptr_eq(py_tasks_find(&t, 0x3000), &t.v[2]);
	ck_assert_ptr_null(py_tasks_find(&t, 0x3001));
	py_tasks_index(&t);
	ck_assert_uint_eq(t.ix.count, 40);
	ck_assert_ptr_eq(py_tasks_find(&t, 0x28000), &t.v[39]);
	ck_assert_ptr_null(py_tasks_find(&t, 0));
	ck_assert_int_eq(py_tasks_lookup(&t.ix, &t, 0x1000), 0);
	py_tasks_free(&t);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "edges", .tests = { test_link_once, test_bound } },
		{ "graph", .tests = { test_cycles, test_find } },
	};

	return run_groups("asynctasks", groups, ARRAY_SIZE(groups), 0, 1);
}
