/* Tests for merge_stacks() (src/native/mixed.c) on stacks shaped as the
 * ones bench/dataloader's merges failed on: an unwind that ended in JIT
 * code below every interpreter call, one that ended between two of them,
 * an eval call leaving with its frame already unlinked; and the cases
 * that must stay errors; and the debug package dbghint.c names. */
#include <check.h>
#include <stdbool.h>
#include <string.h>

#include "native/dbghint.h"
#include "native/mixed.h"
#include "suite.h"

#define E NATIVE_EVAL
#define O NATIVE_OTHER
#define P NATIVE_PLUMBING

/* Frame i's sp is 0x1000 + 0x100 * i: its locals lie in
 * [0x1000 + 0x100 * i, 0x1100 + 0x100 * i).  The marker of a call run by
 * frame i lies inside. */
#define SP(i) (0x1000u + 0x100u * (i))
#define IN(i) (SP(i) + 0x40)

static int merge(const enum native_class *cls, const bool *anon, int n, bool cut,
		 const struct py_group *g, int ng, struct merged_ref *out, char *err)
{
	struct merge_native nat[32];
	int npy = 0;

	for (int i = 0; i < n; i++)
		nat[i] = (struct merge_native){ cls[i], SP(i), anon ? anon[i] : false };
	for (int k = 0; k < ng; k++)
		npy += g[k].nframes;
	err[0] = 0;
	return merge_stacks(nat, n, cut, g, ng, npy, out, err, 200);
}

static void expect(const struct merged_ref *got, int n, const struct merged_ref *want, int nwant)
{
	ck_assert_int_eq(n, nwant);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(got[i].kind == want[i].kind && got[i].index == want[i].index,
			      "frame %d: kind %d index %d, want kind %d index %d", i,
			      got[i].kind, got[i].index, want[i].kind, want[i].index);
	}
}

#define PY(j) { MERGED_PYTHON, j }
#define NAT(i) { MERGED_NATIVE, i }
#define GAP { MERGED_GAP, -1 }

/* The torch case: one JIT frame unwound, seven calls' markers above it. */
START_TEST(test_jit_below_everything)
{
	static const enum native_class cls[] = { O };
	static const bool anon[] = { true };
	struct py_group g[] = { { 2, IN(5) }, { 1, IN(9) }, { 2, IN(14) } };
	struct merged_ref out[16];
	static const struct merged_ref want[] = { NAT(0), GAP, PY(0), PY(1), PY(2), PY(3),
						  PY(4) };
	char err[200];
	int n = merge(cls, anon, 1, false, g, 3, out, err);

	expect(out, n, want, 7);
	ck_assert(merge_has_gap(out, n));
}
END_TEST

/* Stopped between two calls: the inner call merges as usual (the
 * plumbing above it stays hidden, a Python frame lies on each side). */
START_TEST(test_stopped_between_calls)
{
	static const enum native_class cls[] = { O, O, E, P, O };
	struct py_group g[] = { { 2, IN(2) }, { 1, IN(12) } };
	struct merged_ref out[16];
	static const struct merged_ref want[] = { NAT(0), NAT(1), PY(0), PY(1), NAT(4), GAP,
						  PY(2) };
	char err[200];
	int n = merge(cls, NULL, 5, true, g, 2, out, err);

	expect(out, n, want, 7);
}
END_TEST

/* Frames past an anon one that no marker vouches for are guesses. */
START_TEST(test_guesses_left_in_the_gap)
{
	static const enum native_class cls[] = { O, O, O, O };
	static const bool anon[] = { false, true, false, false };
	struct py_group g[] = { { 3, IN(20) } };
	struct merged_ref out[16];
	static const struct merged_ref want[] = { NAT(0), NAT(1), GAP, PY(0), PY(1), PY(2) };
	char err[200];
	int n = merge(cls, anon, 4, false, g, 1, out, err);

	expect(out, n, want, 6);
}
END_TEST

/* A whole merge is unchanged: no gap. */
START_TEST(test_whole_merge)
{
	static const enum native_class cls[] = { O, E, P, E, O };
	struct py_group g[] = { { 1, IN(1) }, { 2, IN(3) } };
	struct merged_ref out[16];
	static const struct merged_ref want[] = { NAT(0), PY(0), PY(1), PY(2), NAT(4) };
	char err[200];
	int n = merge(cls, NULL, 5, false, g, 2, out, err);

	expect(out, n, want, 5);
	ck_assert(!merge_has_gap(out, n));
}
END_TEST

/* The innermost eval call is leaving (its frame unlinked, in .cold): it
 * shows as a native frame.  One further out with no call is an error. */
START_TEST(test_eval_entering_or_leaving)
{
	static const enum native_class inner[] = { E, P, E, O };
	static const enum native_class outer[] = { O, E, P, E, O };
	struct py_group g[] = { { 2, IN(2) } };
	struct py_group g2[] = { { 2, IN(1) } };
	struct merged_ref out[16];
	static const struct merged_ref want[] = { NAT(0), NAT(1), PY(0), PY(1), NAT(3) };
	char err[200];
	int n = merge(inner, NULL, 4, false, g, 1, out, err);

	expect(out, n, want, 5);
	ck_assert_int_eq(merge(outer, NULL, 5, false, g2, 1, out, err), -1);
	ck_assert_msg(strstr(err, "runs no Python frame"), "%s", err);
}
END_TEST

/* Markers that lie below the stack unwound (not past its end) do not fit. */
START_TEST(test_marker_below_stays_an_error)
{
	static const enum native_class cls[] = { O, E, O };
	struct py_group g[] = { { 1, SP(0) - 0x10 } };
	struct merged_ref out[16];
	char err[200];

	ck_assert_int_eq(merge(cls, NULL, 3, false, g, 1, out, err), -1);
	ck_assert_msg(strstr(err, "not found"), "%s", err);
}
END_TEST

/* Before 3.11 (no markers): the unwinder's cut allows fewer eval frames
 * than calls; without it the counts must agree, save one innermost eval
 * call not linked (shown, with the plumbing under it: no Python frame
 * lies inside it). */
START_TEST(test_names)
{
	static const enum native_class two[] = { O, E, P, E, O };
	struct py_group g3[] = { { 1, 0 }, { 1, 0 }, { 1, 0 } };
	struct py_group g1[] = { { 1, 0 } };
	struct merged_ref out[16];
	static const struct merged_ref cut[] = { NAT(0), PY(0), PY(1), NAT(4), GAP, PY(2) };
	static const struct merged_ref one[] = { NAT(0), NAT(1), NAT(2), PY(0), NAT(4) };
	char err[200];
	int n = merge(two, NULL, 5, true, g3, 3, out, err);

	expect(out, n, cut, 6);
	ck_assert_int_eq(merge(two, NULL, 5, false, g3, 3, out, err), -1);
	ck_assert_msg(strstr(err, "2 interpreter frames"), "%s", err);
	n = merge(two, NULL, 5, false, g1, 1, out, err);
	expect(out, n, one, 5);
}
END_TEST

/* The package a stripped object's debug file is in, from its name alone. */
START_TEST(test_debug_package)
{
	static const char *const cases[][2] = {
		{ "python3.11", "python3.11-dbg" },
		{ "python3.13t", "python3.13-dbg" },
		{ "libpython3.12.so.1.0", "python3.12-dbg" },
		{ "libc.so.6", "libc6-dbg" },
		{ "python3", NULL },
		{ "libfoo.so", NULL },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *got = dbg_package(cases[i][0], buf, sizeof(buf));

		ck_assert_msg(cases[i][1] ? got && !strcmp(got, cases[i][1]) : !got,
			      "%s: %s, want %s", cases[i][0], got ? got : "none",
			      cases[i][1] ? cases[i][1] : "none");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mixed");
	TCase *tc = tcase_create("merge_stacks");

	tcase_add_test(tc, test_jit_below_everything);
	tcase_add_test(tc, test_stopped_between_calls);
	tcase_add_test(tc, test_guesses_left_in_the_gap);
	tcase_add_test(tc, test_whole_merge);
	tcase_add_test(tc, test_eval_entering_or_leaving);
	tcase_add_test(tc, test_marker_below_stays_an_error);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_debug_package);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
