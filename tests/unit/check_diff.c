/* Tests for `pystrobe diff`, on profiles written here.
 *
 * Every number diff shows is held against the counts in its two input
 * files, parsed by tests/lib/folded.c, not against diff's own output: for
 * each frame drawn in the SVG, the path from the root is rebuilt from the
 * layout, and its self and total counts before and after, the delta, the
 * colour and the new/gone mark must be what the inputs give (tests/lib/svg.c).
 *
 *  - Hand-made profiles: nested and recursive stacks, frames in only one
 *    profile, normalised and raw, --negate, the two-count collapsed output.
 *  - Normalisation: the same shape at three times the length is unchanged
 *    (white, delta 0) normalised, and all red raw.
 *  - Hostile names stay escaped, in the SVG (xmllint) and in the summary on
 *    the terminal; broken inputs give exit 9 and one line.
 *  - A profile with line numbers against one recorded with --function.
 *  - Flame graphs (what record writes by default) as inputs, alone and
 *    mixed with folded ones, give the same diff.
 *  - The summary's tables leave out functions under --min-share (0.5%) in
 *    both profiles.
 *
 * A real target recorded twice is live/check_diff_real.c; the hostile SVG
 * in a real Chromium, live/check_browser.c.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "svg.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

/* --- hand-made profiles ------------------------------------------------------ */

static const char before_txt[] =
	"main;parse;tokenize 40\n"
	"main;parse 10\n"
	"main;solve;step;step 25\n"
	"main;solve;old_cache 15\n"
	"main;report 10\n";
static const char after_txt[] =
	"main;parse;tokenize 80\n"
	"main;parse 10\n"
	"main;solve;step;step 20\n"
	"main;solve;new_index 30\n"
	"main;report 10\n"
	"main;solve 5\n";

START_TEST(test_fixtures)
{
	struct diff_files fs = diff_files("before.txt", before_txt, "after.txt", after_txt);
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	const struct gnode *n;
	struct svg svg;

	for (int raw = 0; raw < 2; raw++) {
		char *text;

		diff_and_check(dir, b, a, raw, false, &svg);
		/* What AFTER's shape cannot show is counted in the subtitle. */
		text = test_slurp(svg_path(dir, raw, false));
		ck_assert_ptr_nonnull(strstr(text, "; 1 frame only in BEFORE, not drawn (see --negate)</text>"));
		free(text);
		ck_assert_ptr_nonnull(n = svg_find(&svg, "new_index"));
		ck_assert_str_eq(n->mark, "new");
		ck_assert_ptr_null(svg_find(&svg, "old_cache"));
		svg_free(&svg);
		diff_and_check(dir, b, a, raw, true, &svg);
		text = test_slurp(svg_path(dir, raw, true));
		ck_assert_ptr_nonnull(strstr(text, "; 1 frame only in AFTER, not drawn</text>"));
		free(text);
		ck_assert_ptr_nonnull(n = svg_find(&svg, "old_cache"));
		ck_assert_str_eq(n->mark, "gone");
		ck_assert_msg(n->rgb[2] == 255 && n->rgb[0] < 255, "old_cache is not blue");
		ck_assert_ptr_null(svg_find(&svg, "new_index"));
		svg_free(&svg);
	}
	diff_files_free(&fs);
}
END_TEST

/* BEFORE and AFTER converted by merge (-f format, NULL for its default,
 * the flame graph) into conv[], new paths; the diff of the converted files,
 * alone and each mixed with an original, must be the diff of the
 * originals. */
static void same_diff_converted(const struct diff_files *fs, const char *format,
				const char *ext, char *conv[2])
{
	char *out = xasprintf("%s/mixed.svg", fs->dir), *want, *got, *s;
	struct run r;

	for (int i = 0; i < 2; i++) {
		conv[i] = xasprintf("%s/%d%s", fs->dir, i, ext);
		ck_assert_int_eq(run_pystrobe(&r, "merge", "-q", "-o", conv[i], i ? fs->a : fs->b,
					      format ? "-f" : NULL, format, NULL), 0);
		ck_assert_int_eq(run_exit(&r), 0);
		run_free(&r);
	}
	s = run_diff(out, fs->b, fs->a, NULL, NULL);
	free(s);
	want = test_slurp(out);
	for (int k = 1; k < 4; k++) {
		s = run_diff(out, k & 1 ? conv[0] : fs->b, k & 2 ? conv[1] : fs->a, NULL, NULL);
		free(s);
		got = test_slurp(out);
		/* Only the title, which names the files, differs. */
		ck_assert_str_eq(strstr(got, "<text id=\"subtitle\""),
				 strstr(want, "<text id=\"subtitle\""));
		free(got);
	}
	free(want);
	free(out);
}

/* pprof inputs, alone and mixed with folded ones, give the same diff: the
 * frames compare by their text. */
START_TEST(test_pprof_inputs)
{
	struct diff_files fs = diff_files("before.txt", before_txt, "after.txt", after_txt);
	char *pb[2];

	same_diff_converted(&fs, "pprof", ".pb.gz", pb);
	free(pb[0]);
	free(pb[1]);
	diff_files_free(&fs);
}
END_TEST

/* Flame graphs (what record writes by default) as inputs, alone and mixed
 * with folded ones: the same diff, checked number by number against the
 * stacks they carry. */
START_TEST(test_flamegraph_inputs)
{
	struct diff_files fs = diff_files("before.txt", before_txt, "after.txt", after_txt);
	char *svg[2];
	struct svg parsed;

	same_diff_converted(&fs, NULL, ".svg", svg);
	diff_and_check(fs.dir, svg[0], svg[1], false, false, &parsed);
	svg_free(&parsed);
	free(svg[0]);
	free(svg[1]);
	diff_files_free(&fs);
}
END_TEST

/* -f collapsed: "STACK BEFORE AFTER" for every stack of either input,
 * BEFORE scaled to AFTER's total. */
START_TEST(test_collapsed_output)
{
	struct diff_files fs = diff_files("before.txt", before_txt, "after.txt", after_txt);
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/diff.txt", dir), *text, *summary;
	struct folded fb, fa, fd;
	struct run r;

	folded_parse(before_txt, &fb);
	folded_parse(after_txt, &fa);
	for (int raw = 0; raw < 2; raw++) {
		ck_assert_int_eq(run_pystrobe(&r, "diff", "-q", "-f", "collapsed", "-o", out, b, a,
					      raw ? "--no-normalize" : NULL, NULL), 0);
		ck_assert_int_eq(run_exit(&r), 0);
		ck_assert_str_eq(r.out, "");
		run_free(&r);
		text = test_slurp(out);
		ck_assert_int_eq(folded_parse(text, &fd), 0);
		ck_assert_uint_eq(fd.total2, fa.total);
		for (size_t i = 0; i < fd.n; i++) {
			uint64_t before = folded_count(&fb, fd.stacks[i]);
			double want = raw ? before : (double)before * fa.total / fb.total;

			ck_assert_uint_eq(fd.counts[i], (uint64_t)llround(want));
			ck_assert_uint_eq(fd.counts2[i], folded_count(&fa, fd.stacks[i]));
		}
		ck_assert_uint_eq(fd.n, 7);	/* the union of both stacks */
		folded_free(&fd);
		free(text);
	}
	summary = run_diff(out, b, a, "-f", "collapsed");
	free(summary);
	folded_free(&fb);
	folded_free(&fa);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* The same shape, three times as long: normalised nothing changed, raw
 * everything grew threefold. */
START_TEST(test_normalize)
{
	struct diff_files fs = diff_files("short.txt", "main;a 100\nmain;b 50\nmain 10\n",
					  "long.txt", "main;a 300\nmain;b 150\nmain 30\n");
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/diff.svg", dir), *summary;
	struct svg svg;

	diff_and_check(dir, b, a, false, false, &svg);
	for (size_t i = 0; i < svg.n; i++) {
		ck_assert_msg(svg.nodes[i].self_d == 0 && svg.nodes[i].tot_d == 0,
			      "%s changed normalised", svg.nodes[i].path);
		ck_assert_uint_eq(svg.nodes[i].rgb[0] & svg.nodes[i].rgb[1] & svg.nodes[i].rgb[2], 255);
	}
	svg_free(&svg);
	diff_and_check(dir, b, a, true, false, &svg);
	ck_assert_int_eq(svg_find(&svg, "a")->self_d, 200);
	ck_assert_int_eq(svg_find(&svg, "b")->self_d, 100);
	ck_assert_uint_eq(svg_find(&svg, "a")->rgb[1], 55);	/* the largest: full red */
	svg_free(&svg);
	/* The summary: nothing grew or shrank normalised. */
	summary = run_diff(out, b, a, NULL, NULL);
	ck_assert_msg(strstr(summary, "BEFORE ") && strstr(summary, ": 160 samples") &&
		      strstr(summary, ": 480 samples"), "%s", summary);
	ck_assert_msg(!strstr(summary, "  a\n") && !strstr(summary, "  b\n"),
		      "normalised, a and b did not change:\n%s", summary);
	free(summary);
	summary = run_diff(out, b, a, "--no-normalize", NULL);
	ck_assert_msg(strstr(summary, "       100  62.5%        300  62.5%       +200    +0.00  a\n"),
		      "%s", summary);
	free(summary);
	free(out);
	diff_files_free(&fs);
}
END_TEST

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The summary's top rows: b grew most, c shrank most, e is new. */
START_TEST(test_summary)
{
	struct diff_files fs = diff_files("before.txt", before_txt, "after.txt", after_txt);
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/d.svg", dir), *s = run_diff(out, b, a, NULL, NULL);
	const char *grew = strstr(s, "Self time that grew most:"), *shrank, *row;

	ck_assert_ptr_nonnull(grew);
	shrank = strstr(grew, "Self time that shrank most:");
	ck_assert_ptr_nonnull(shrank);
	/* new_index: 0 -> 30 of 155, +30, first; tokenize: 40 of 100 -> 80
	 * of 155, +18 normalised, second. */
	row = strchr(strchr(grew, '\n') + 1, '\n') + 1;
	ck_assert_msg(starts(row, "         0   0.0%         30  19.4%        +30   +19.35  "
			       "new_index  [new]\n"), "%s", s);
	row = strchr(row, '\n') + 1;
	ck_assert_msg(starts(row, "        40  40.0%         80  51.6%        +18   +11.61  "
			       "tokenize\n"), "%s", s);
	/* old_cache: 15 -> 0, -23; step;step 25 -> 20, -19. */
	row = strchr(strchr(shrank, '\n') + 1, '\n') + 1;
	ck_assert_msg(starts(row, "        15  15.0%          0   0.0%        -23   -15.00  "
			       "old_cache  [gone]\n"), "%s", s);
	row = strchr(row, '\n') + 1;
	ck_assert_msg(strstr(row, "step\n") == strchr(row, '\n') - 4, "%s", s);
	free(s);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* A short run's imports, a sample here and there, are not what changed:
 * under 0.5% in both they stay out of the tables, unless --min-share says
 * otherwise; a function at 0.5% in one of them is in. */
START_TEST(test_min_share)
{
	struct diff_files fs = diff_files("before.txt",
				"main;work 900\nmain;idle 96\nmain;_find_and_load;old_import 4\n",
				"after.txt",
				"main;work 800\nmain;idle 194\nmain;_find_and_load;new_import 1\n"
				"main;grown 5\n");
	char *out = xasprintf("%s/d.svg", fs.dir), *s;

	s = run_diff(out, fs.b, fs.a, NULL, NULL);
	ck_assert_msg(strstr(s, "Left out: functions under 0.5% of the samples in both "
			     "(--min-share).\n"), "%s", s);
	ck_assert_msg(!strstr(s, "import"), "noise in the tables:\n%s", s);
	ck_assert_msg(strstr(s, "  idle\n") && strstr(s, "  work\n"), "%s", s);
	ck_assert_msg(strstr(s, "  grown  [new]\n"), "0.5%% in AFTER left out:\n%s", s);
	free(s);
	s = run_diff(out, fs.b, fs.a, "--min-share", "0");
	ck_assert_msg(strstr(s, "  new_import  [new]\n") && strstr(s, "  old_import  [gone]\n") &&
		      !strstr(s, "Left out"), "%s", s);
	free(s);
	s = run_diff(out, fs.b, fs.a, "--min-share", "20");
	ck_assert_msg(strstr(s, "under 20% of") && !strstr(s, "  idle\n") &&
		      strstr(s, "  work\n"), "%s", s);
	free(s);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* --- hostile names --------------------------------------------------------- */

START_TEST(test_hostile)
{
	struct diff_files fs = diff_files("b.txt", diff_hostile_before, "a.txt",
					  diff_hostile_after);
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/diff.svg", dir), *summary, *svg;

	summary = run_diff(out, b, a, NULL, NULL);
	assert_wellformed(out);
	svg = test_slurp(out);
	ck_assert_msg(!strstr(svg, "<script>alert"), "the hostile name is raw markup");
	ck_assert_ptr_nonnull(strstr(svg, "&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt; ("));
	ck_assert_ptr_nonnull(strstr(svg, "&quot;quoted&quot; &amp; &lt;tag&gt; ("));
	ck_assert_ptr_nonnull(strstr(svg, "esc \\x1b[31mred\\x1b[0m (a&amp;b;c.py:3)"));
	ck_assert_ptr_null(strchr(svg, '\x1b'));
	ck_assert_ptr_null(strchr(summary, '\x1b'));
	ck_assert_ptr_nonnull(strstr(summary, "esc \\x1b[31mred\\x1b[0m (a&b;c.py:3)"));

	free(svg);
	free(summary);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* A line-level profile against a --function one: compared by function,
 * with a note, so nothing shows as new. */
START_TEST(test_function_vs_lines)
{
	struct diff_files fs = diff_files("lines.txt",
				"<module> (app.py:30);main (app.py:20);work (app.py:12) 30\n"
				"<module> (app.py:30);main (app.py:20);work (app.py:13) 10\n"
				"<module> (app.py:30);main (app.py:21);idle (app.py:5) 60\n",
				"funcs.txt",
				"<module> (app.py);main (app.py);work (app.py) 80\n"
				"<module> (app.py);main (app.py);idle (app.py) 20\n");
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/d.svg", dir), *text;
	struct run r;
	struct svg svg;

	ck_assert_int_eq(run_pystrobe(&r, "diff", "-o", out, b, a, NULL), 0);
	ck_assert_int_eq(run_exit(&r), 0);
	ck_assert_msg(strstr(r.err, "comparing by function"), "%s", r.err);
	run_free(&r);
	text = test_slurp(out);
	svg_parse(text, &svg);
	for (size_t i = 0; i < svg.n; i++)
		ck_assert_msg(!svg.nodes[i].mark[0], "%s marked %s", svg.nodes[i].path,
			      svg.nodes[i].mark);
	ck_assert_uint_eq(svg_find(&svg, "work (app.py)")->self_b, 40);
	ck_assert_uint_eq(svg_find(&svg, "work (app.py)")->self_a, 80);
	svg_free(&svg);
	free(text);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* Roots from --threads and -s hold ids no two runs share: diff matches them
 * by thread name and command line, and leaves any other frame alone. */
START_TEST(test_roots_by_name)
{
	struct diff_files fs = diff_files("b.txt",
				"process 100: python train.py;thread 100 \"MainThread\";main (t.py:9) 30\n"
				"process 101: python train.py;thread 101 \"MainThread\";load (t.py:5) 20\n"
				"thread 7;spin (s.py:2) 10\n"
				"thread 12 (evil.py:1) 5\n",
				"a.txt",
				"process 200: python train.py;thread 200 \"MainThread\";main (t.py:9) 30\n"
				"process 201: python train.py;thread 201 \"MainThread\";load (t.py:5) 60\n"
				"thread 8;spin (s.py:2) 10\n"
				"thread 13 (evil.py:1) 5\n");
	char *out = xasprintf("%s/d.svg", fs.dir), *text;
	const struct gnode *n;
	struct run r;
	struct svg svg;

	ck_assert_int_eq(run_pystrobe(&r, "diff", "-q", "--no-normalize", "-o", out, fs.b, fs.a,
				      NULL), 0);
	ck_assert_int_eq(run_exit(&r), 0);
	run_free(&r);
	text = test_slurp(out);
	svg_parse(text, &svg);
	/* The two workers are one process root; their threads one thread. */
	ck_assert_ptr_nonnull(n = svg_find(&svg, "process: python train.py"));
	ck_assert_str_eq(n->mark, "");
	ck_assert_uint_eq(n->tot_b, 50);
	ck_assert_uint_eq(n->tot_a, 90);
	ck_assert_ptr_nonnull(n = svg_find(&svg, "thread \"MainThread\""));
	ck_assert_str_eq(n->mark, "");
	ck_assert_ptr_nonnull(n = svg_find(&svg, "load (t.py:5)"));
	ck_assert_uint_eq(n->self_b, 20);
	ck_assert_uint_eq(n->self_a, 60);
	ck_assert_ptr_nonnull(n = svg_find(&svg, "thread"));
	ck_assert_str_eq(n->mark, "");
	ck_assert_ptr_null(svg_find(&svg, "process 200: python train.py"));
	/* A Python frame that merely starts like a root keeps its text. */
	ck_assert_ptr_nonnull(n = svg_find(&svg, "thread 13 (evil.py:1)"));
	ck_assert_str_eq(n->mark, "new");
	svg_free(&svg);
	free(text);
	free(out);
	diff_files_free(&fs);
}
END_TEST

/* --- errors ----------------------------------------------------------------- */

static void expect_error(int code, const char *needle, const char *a1, const char *a2,
			 const char *a3, const char *a4)
{
	struct run r;
	char why[64];

	ck_assert_int_eq(run_pystrobe(&r, "diff", a1, a2, a3, a4, NULL), 0);
	ck_assert_msg(run_exit(&r) == code, "diff %s %s %s: %s, want exit %d; %s", a1, a2,
		      a3 ? a3 : "", run_describe(&r, why, sizeof(why)), code, r.err);
	ck_assert_msg(run_one_error_line(&r), "not one error line: '%s'", r.err);
	ck_assert_msg(strstr(r.err, needle), "'%s' does not say '%s'", r.err, needle);
	run_free(&r);
}

START_TEST(test_errors)
{
	char *dir = test_tmpdir("check_diff");
	char *good = test_file(dir, "good.txt", "a;b 3\n");
	char *nocount = test_file(dir, "nocount.txt", "a;b 3\na;c\n");
	char *frac = test_file(dir, "frac.txt", "a;b 1.5\n");
	char *empty = test_file(dir, "empty.txt", "\n\n");
	char *foreign = test_file(dir, "other.svg", "<?xml version=\"1.0\"?>\n<svg/>\n");
	char *bin = xasprintf("%s/bin", dir), *out = xasprintf("%s/o.svg", dir);

	ck_assert_int_eq(write_file(bin, "\x7f" "ELF\0\0\0", 7), 0);
	/* What is not read says what is, and how to get it. */
	expect_error(9, "other.svg: an SVG or XML file without pystrobe's stack data",
		     "-o", out, foreign, good);
	expect_error(9, "read the flame graphs (.svg) pystrobe record writes by default, pprof "
		     "(record -f pprof), folded stacks (record -f collapsed) and flight "
		     "recordings (watch)", "-o", out, good, foreign);
	expect_error(2, "--min-share must be a percentage", "--min-share", "x", good, good);
	expect_error(9, "No such file", "-o", out, "/nonexistent/x.txt", good);
	expect_error(9, "line 2: no sample count", "-o", out, good, nocount);
	expect_error(9, "'1.5' is not a sample count", "-o", out, frac, good);
	expect_error(9, "no samples", "-o", out, good, empty);
	expect_error(9, "binary data", "-o", out, bin, good);
	expect_error(2, "two profiles", "-o", out, good, NULL);
	expect_error(2, "cannot show a difference", "-f", "pprof", good, good);
	expect_error(2, "unknown option", "--frobnicate", good, good, NULL);
	expect_error(1, "cannot create", "-o", "/nonexistent/dir/o.svg", good, good);
	ck_assert_int_eq(access(out, F_OK), -1);
	free(bin);
	free(out);
	free(good);
	free(nocount);
	free(frac);
	free(empty);
	free(foreign);
	test_rmdir(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("files");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fixtures);
	tcase_add_test(tc, test_collapsed_output);
	tcase_add_test(tc, test_pprof_inputs);
	tcase_add_test(tc, test_flamegraph_inputs);
	tcase_add_test(tc, test_normalize);
	tcase_add_test(tc, test_summary);
	tcase_add_test(tc, test_min_share);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_function_vs_lines);
	tcase_add_test(tc, test_roots_by_name);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
