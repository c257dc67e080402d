/* `pystrobe diff` of a real target recorded twice: tests/targets/diff_target.py,
 * the second time with one function 3x slower, one removed and one added.
 * The recordings are what `record` writes by default, flame graphs, which
 * diff reads the stacks of; the test reads them itself (tests/lib/svg.c).
 * diff must mark exactly those red, blue (in --negate) and new, and every
 * number it shows must be what the two recordings hold (tests/lib/svg.c).
 * On Python 3.12 and 3.11 only: the point is diff, not the sampler, which
 * has its own tests.  The rest of diff's tests are unit/check_diff.c.
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "interpreters.h"
#include "svg.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

#define TRIES 3
#define CHANGED_PTS 8.0	/* a share change this large is a change, not noise */

static const char *funcs[] = { "steady_a", "slowed_b", "removed_c", "added_e", "steady_d" };

static char *func_label(const char *name)
{
	return xasprintf("%s (diff_target.py)", name);
}

/* Share change of a function's self time, from the inputs, in points. */
static double pts(const struct folded *b, const struct folded *a, const char *name)
{
	char *l = func_label(name);
	uint64_t sb, tb, sa, ta;

	folded_frame(b, l, &sb, &tb);
	folded_frame(a, l, &sa, &ta);
	free(l);
	return 100.0 * sa / a->total - 100.0 * sb / b->total;
}

/* Whether the recordings show the knob's changes, and only those: on a
 * busy machine a recording can be disturbed, which is no fault of diff. */
static bool knob_shows(const struct folded *b, const struct folded *a, char *why, size_t n)
{
	double d[ARRAY_SIZE(funcs)];
	bool ok;

	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++)
		d[i] = pts(b, a, funcs[i]);
	ok = fabs(d[0]) < CHANGED_PTS && d[1] > CHANGED_PTS && d[2] < -CHANGED_PTS &&
	     d[3] > CHANGED_PTS && fabs(d[4]) < CHANGED_PTS;
	snprintf(why, n, "share changes a %+.1f b %+.1f c %+.1f e %+.1f d %+.1f", d[0], d[1],
		 d[2], d[3], d[4]);
	return ok;
}

static void record(const struct test_interp *ti, const char *out, bool after)
{
	char *script = xasprintf("%s/tests/targets/diff_target.py", test_srcdir());
	struct run r;
	char why[64];

	ck_assert_int_eq(run_pystrobe(&r, "record", "--function", "-r", "200",
				      "-q", "-o", out, "--", "env", "-u", "PYTHONPATH",
				      "PYTHONDONTWRITEBYTECODE=1", ti->path, script,
				      after ? "--after" : "--rounds", after ? "--rounds" : "25",
				      after ? "25" : NULL, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "record (%s): %s; %s", ti->label,
		      run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
	free(script);
}

/* The colour class of a function's node: +1 red, -1 blue, 0 faint (the
 * change is less than a third of the largest). */
static int colour_class(const struct svg *svg, const char *name)
{
	char *l = func_label(name);
	const struct gnode *n = svg_find(svg, l);
	int cls = 0;

	ck_assert_msg(n, "no frame %s", l);
	if (n->rgb[1] < 255 - 200 / 3)
		cls = n->rgb[0] == 255 ? 1 : -1;
	free(l);
	return cls;
}

static const struct test_interp *chosen[2];
static int nchosen;

START_TEST(test_recorded)
{
	const struct test_interp *ti = chosen[_i];
	struct diff_files fs = diff_files("before.svg", NULL, "after.svg", NULL);
	char *dir = fs.dir, *b = fs.b, *a = fs.a, why[160] = "";
	struct folded fb, fa;
	struct svg svg;
	bool shows = false;

	printf("diff: recording diff_target.py on %s (%s)\n", ti->label, ti->path);
	for (int try = 1; try <= TRIES && !shows; try++) {
		char *tb, *ta;

		record(ti, b, false);
		record(ti, a, true);
		tb = profile_text(b);
		ta = profile_text(a);
		ck_assert_int_eq(folded_parse(tb, &fb), 0);
		ck_assert_int_eq(folded_parse(ta, &fa), 0);
		shows = knob_shows(&fb, &fa, why, sizeof(why));
		printf("diff: %s, try %d: %lu and %lu samples, %s%s\n", ti->label, try,
		       fb.total, fa.total, why, shows ? "" : " (disturbed)");
		if (!shows) {
			folded_free(&fb);
			folded_free(&fa);
		}
		free(tb);
		free(ta);
	}
	ck_assert_msg(shows, "%s: %d recordings disturbed: %s", ti->label, TRIES, why);

	/* AFTER's shape: b red, e red and new, a and d faint, c not there. */
	diff_and_check(dir, b, a, false, false, &svg);
	ck_assert_int_eq(colour_class(&svg, "slowed_b"), 1);
	ck_assert_int_eq(colour_class(&svg, "added_e"), 1);
	ck_assert_int_eq(colour_class(&svg, "steady_a"), 0);
	ck_assert_int_eq(colour_class(&svg, "steady_d"), 0);
	ck_assert_str_eq(svg_find(&svg, "added_e (diff_target.py)")->mark, "new");
	ck_assert_str_eq(svg_find(&svg, "slowed_b (diff_target.py)")->mark, "");
	ck_assert_ptr_null(svg_find(&svg, "removed_c (diff_target.py)"));
	svg_free(&svg);
	/* BEFORE's shape: c blue and gone. */
	diff_and_check(dir, b, a, false, true, &svg);
	ck_assert_int_eq(colour_class(&svg, "removed_c"), -1);
	ck_assert_int_eq(colour_class(&svg, "slowed_b"), 1);
	ck_assert_str_eq(svg_find(&svg, "removed_c (diff_target.py)")->mark, "gone");
	ck_assert_ptr_null(svg_find(&svg, "added_e (diff_target.py)"));
	svg_free(&svg);
	/* Raw counts: every number is checked; the verdict only when both runs
	 * were sampled alike (the same work gave about as many samples; a
	 * sampler slowed down by a busy machine or ASan gives fewer). */
	diff_and_check(dir, b, a, true, false, &svg);
	if (fa.total * 5 > fb.total * 4 && fb.total * 5 > fa.total * 4)
		ck_assert_int_eq(colour_class(&svg, "slowed_b"), 1);
	else
		printf("diff: %s: raw verdicts not checked, %lu and %lu samples for the "
		       "same work\n", ti->label, fb.total, fa.total);
	svg_free(&svg);
	folded_free(&fb);
	folded_free(&fa);
	diff_files_free(&fs);
}
END_TEST

/* Two interpreters, not all: the point is diff, not the sampler. */
static void choose_interps(void)
{
	nchosen = test_interps_plain(chosen, 2, "diff: the recorded test");
}

START_TEST(test_have_interps)
{
	ck_assert_msg(nchosen > 0, "MISSING: no Python 3.11 or 3.12 to record a target with");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff_real");
	TCase *tc = tcase_create("recorded");

	setvbuf(stdout, NULL, _IOLBF, 0);
	choose_interps();
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_have_interps);
	tcase_add_loop_test(tc, test_recorded, 0, nchosen);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
