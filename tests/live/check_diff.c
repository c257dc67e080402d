/* Tests for `pystrobe diff`.
 *
 * Every number diff shows is held against the counts in its two input
 * files, parsed here (tests/lib/folded.c), not against diff's own output: for
 * each frame drawn in the SVG, the path from the root is rebuilt from the
 * layout, and its self and total counts before and after, the delta, the
 * colour and the new/gone mark must be what the inputs give.
 *
 *  - Hand-made profiles: nested and recursive stacks, frames in only one
 *    profile, normalised and raw, --negate, the two-count collapsed output.
 *  - Normalisation: the same shape at three times the length is unchanged
 *    (white, delta 0) normalised, and all red raw.
 *  - A real target (tests/targets/diff_target.py) recorded twice, the second
 *    time with one function 3x slower, one removed and one added: diff marks
 *    exactly those red, blue (in --negate) and new, on two interpreters.
 *  - Hostile names stay escaped, in the SVG (xmllint, a real Chromium) and
 *    in the summary on the terminal; broken inputs give exit 9 and one line.
 *  - A profile with line numbers against one recorded with --function.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "interpreters.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

#define ROW 16			/* out_flamegraph.c's FG_ROW */

/* --- the SVG, parsed ------------------------------------------------------ */

struct gnode {
	uint64_t s, n;
	int y;
	char *label;		/* XML entities undone */
	char *path;		/* labels from the root's child, ';'-joined */
	char mark[8];		/* "", "new", "gone" */
	unsigned rgb[3];
	uint64_t self_b, self_a, tot_b, tot_a;
	long long self_d, tot_d;
};

struct svg {
	struct gnode *nodes;
	size_t n;
};

static char *xml_unescape(const char *s, size_t len)
{
	static const char *ent[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" },
					{ "&quot;", "\"" }, { "&#39;", "'" } };
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < len;) {
		size_t k;

		for (k = 0; k < ARRAY_SIZE(ent); k++)
			if (!strncmp(s + i, ent[k][0], strlen(ent[k][0])))
				break;
		if (k < ARRAY_SIZE(ent)) {
			sb_puts(&sb, ent[k][1]);
			i += strlen(ent[k][0]);
		} else {
			sb_putc(&sb, s[i++]);
		}
	}
	return sb_detach(&sb);
}

/* "<g data-s=.. data-n=.. [data-mark=..]><title>LABEL (N samples, P%)\n
 * [new in AFTER; ]self: before B (..), after A (..), delta D (.. pts);
 * total: ...</title><rect .. y=.. fill=../>" */
static void parse_node(const char *g, struct gnode *n)
{
	const char *title = strstr(g, "<title>") + 7, *end = strstr(title, "</title>");
	const char *nl = memchr(title, '\n', end - title), *paren, *rect;
	int k;

	ck_assert_int_eq(sscanf(g, "<g data-s=\"%lu\" data-n=\"%lu\"", &n->s, &n->n), 2);
	n->mark[0] = 0;
	if (strncmp(strstr(g, "data-n=\""), "data-n=\"", 8) == 0) {
		const char *m = strstr(g, "data-mark=\"");

		if (m && m < title)
			sscanf(m, "data-mark=\"%7[a-z]\"", n->mark);
	}
	ck_assert_msg(nl, "a frame without the diff line: %.200s", g);
	for (paren = nl; paren > title && strncmp(paren, " (", 2); paren--)
		;
	n->label = xml_unescape(title, paren - title);
	if (!strncmp(nl + 1, "new in AFTER; ", 14) || !strncmp(nl + 1, "gone in AFTER; ", 15))
		nl = strchr(nl, ';') + 1;
	k = sscanf(nl + 1, "self: before %lu (%*[^)]), after %lu (%*[^)]), delta %lld (%*[^)]); "
		   "total: before %lu (%*[^)]), after %lu (%*[^)]), delta %lld",
		   &n->self_b, &n->self_a, &n->self_d, &n->tot_b, &n->tot_a, &n->tot_d);
	ck_assert_msg(k == 6, "cannot parse the diff line of %s: %.300s", n->label, nl + 1);
	rect = strstr(end, "<rect");
	ck_assert_int_eq(sscanf(strstr(rect, " y=\""), " y=\"%d\"", &n->y), 1);
	ck_assert_int_eq(sscanf(strstr(rect, "fill=\"#"), "fill=\"#%2x%2x%2x\"", &n->rgb[0],
				&n->rgb[1], &n->rgb[2]), 3);
}

/* Each node's path: its parent is the node one row below whose samples
 * [s, s+n) hold its start. */
static void make_paths(struct svg *svg)
{
	for (size_t i = 0; i < svg->n; i++) {
		struct gnode *c = &svg->nodes[i], *parent = NULL;

		for (size_t j = 0; j < svg->n; j++) {
			struct gnode *p = &svg->nodes[j];

			if (p->y == c->y + ROW && p->s <= c->s && c->s < p->s + p->n)
				parent = p;
		}
		if (!parent) {
			ck_assert_str_eq(c->label, "all");
			c->path = xstrdup("");
		} else {
			ck_assert_ptr_nonnull(parent->path);
			c->path = *parent->path ? xasprintf("%s;%s", parent->path, c->label)
						: xstrdup(c->label);
		}
	}
}

static int cmp_y_desc(const void *a, const void *b)
{
	return ((const struct gnode *)b)->y - ((const struct gnode *)a)->y;
}

static void svg_parse(const char *text, struct svg *svg)
{
	const char *p = strstr(text, "<g id=\"frames\">");
	size_t cap = 0;

	ck_assert_ptr_nonnull(p);
	memset(svg, 0, sizeof(*svg));
	while ((p = strstr(p + 1, "<g data-s=\""))) {
		if (svg->n == cap) {
			cap = cap ? cap * 2 : 64;
			svg->nodes = xrealloc(svg->nodes, cap * sizeof(*svg->nodes));
		}
		memset(&svg->nodes[svg->n], 0, sizeof(svg->nodes[0]));
		parse_node(p, &svg->nodes[svg->n++]);
	}
	ck_assert_msg(svg->n > 0, "no frames in the SVG");
	/* Parents first, so each finds its parent's path made. */
	qsort(svg->nodes, svg->n, sizeof(*svg->nodes), cmp_y_desc);
	make_paths(svg);
}

static void svg_free(struct svg *svg)
{
	for (size_t i = 0; i < svg->n; i++) {
		free(svg->nodes[i].label);
		free(svg->nodes[i].path);
	}
	free(svg->nodes);
}

static const struct gnode *svg_find(const struct svg *svg, const char *label)
{
	for (size_t i = 0; i < svg->n; i++)
		if (!strcmp(svg->nodes[i].label, label))
			return &svg->nodes[i];
	return NULL;
}

/* --- expectations from the inputs ----------------------------------------- */

struct expect {
	const struct folded *b, *a;
	bool raw, negate;
};

static double delta(const struct expect *e, uint64_t b, uint64_t a)
{
	if (e->raw)
		return (double)a - (double)b;
	return a - (double)b * e->a->total / e->b->total;
}

static bool in_profile(const struct folded *f, const char *label)
{
	uint64_t self, total;

	folded_frame(f, label, &self, &total);
	return total > 0;
}

/* The fill out_flamegraph.c must give a self change d when the largest
 * drawn is max. */
static void expected_rgb(double d, double max, unsigned rgb[3])
{
	unsigned v = (unsigned)lround(255 - 200 * (max > 0 ? fabs(d) / max : 0));

	rgb[0] = d < 0 ? v : 255;
	rgb[1] = d == 0 ? 255 : v;
	rgb[2] = d > 0 ? v : 255;
}

/* Every node of the SVG against the inputs. */
static void check_svg(const struct svg *svg, const struct expect *e)
{
	const struct folded *drawn = e->negate ? e->b : e->a, *other = e->negate ? e->a : e->b;
	double max = 0;

	for (size_t i = 0; i < svg->n; i++) {
		uint64_t sb, tb, sa, ta;

		folded_path(e->b, svg->nodes[i].path, &sb, &tb);
		folded_path(e->a, svg->nodes[i].path, &sa, &ta);
		if (*svg->nodes[i].path && fabs(delta(e, sb, sa)) > max)
			max = fabs(delta(e, sb, sa));
	}
	for (size_t i = 0; i < svg->n; i++) {
		const struct gnode *n = &svg->nodes[i];
		uint64_t sb, tb, sa, ta, sd, td;
		unsigned rgb[3];
		const char *mark = "";

		folded_path(e->b, n->path, &sb, &tb);
		folded_path(e->a, n->path, &sa, &ta);
		folded_path(drawn, n->path, &sd, &td);
		ck_assert_msg(n->n == td, "%s: width %lu, the input has %lu", n->path, n->n, td);
		ck_assert_msg(n->self_b == sb && n->self_a == sa && n->tot_b == tb && n->tot_a == ta,
			      "%s: self %lu -> %lu, total %lu -> %lu shown; the inputs have "
			      "self %lu -> %lu, total %lu -> %lu", n->path, n->self_b, n->self_a,
			      n->tot_b, n->tot_a, sb, sa, tb, ta);
		ck_assert_msg(n->self_d == llround(delta(e, sb, sa)) &&
			      n->tot_d == llround(delta(e, tb, ta)),
			      "%s: delta self %lld total %lld, want %lld and %lld", n->path,
			      n->self_d, n->tot_d, llround(delta(e, sb, sa)), llround(delta(e, tb, ta)));
		if (*n->path && !in_profile(other, n->label))
			mark = e->negate ? "gone" : "new";
		ck_assert_msg(!strcmp(n->mark, mark), "%s: marked '%s', want '%s'", n->path,
			      n->mark, mark);
		expected_rgb(*n->path ? delta(e, sb, sa) : 0, max, rgb);
		ck_assert_msg(n->rgb[0] == rgb[0] && n->rgb[1] == rgb[1] && n->rgb[2] == rgb[2],
			      "%s: fill #%02x%02x%02x, want #%02x%02x%02x (self delta %.1f of %.1f)",
			      n->path, n->rgb[0], n->rgb[1], n->rgb[2], rgb[0], rgb[1], rgb[2],
			      delta(e, sb, sa), max);
	}
}

/* --- running diff ----------------------------------------------------------- */

static void assert_wellformed(const char *path)
{
	char *cmd = xasprintf("xmllint --noout '%s'", path);

	if (system("xmllint --version >/dev/null 2>&1") != 0)
		ck_abort_msg("MISSING xmllint (libxml2-utils): cannot check the SVG");
	ck_assert_msg(system(cmd) == 0, "%s is not well-formed XML", path);
	free(cmd);
}

/* pystrobe diff [opts] -o OUT BEFORE AFTER, which must succeed; its
 * stdout (the summary) is returned. */
static char *run_diff(const char *out, const char *before, const char *after,
		      const char *opt1, const char *opt2)
{
	struct run r;
	char why[64], *summary;
	int rc;

	rc = run_pystrobe(&r, "diff", "-o", out, before, after, opt1, opt2, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(run_exit(&r) == 0, "diff %s %s: %s; stderr: %s", before, after,
		      run_describe(&r, why, sizeof(why)), r.err);
	summary = r.out;
	r.out = NULL;
	run_free(&r);
	return summary;
}

/* Where diff_and_check() writes (a string that lives until the next call). */
static const char *svg_path(const char *dir, bool raw, bool negate)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/diff%s%s.svg", dir, raw ? "-raw" : "",
		 negate ? "-neg" : "");
	return path;
}

/* Diff before and after (folded files) into an SVG and check all of it. */
static void diff_and_check(const char *dir, const char *before, const char *after, bool raw,
			   bool negate, struct svg *svg)
{
	const char *out = svg_path(dir, raw, negate);
	char *tb = test_slurp(before), *ta = test_slurp(after), *text, *summary;
	struct folded fb, fa;
	struct expect e = { &fb, &fa, raw, negate };

	ck_assert_int_eq(folded_parse(tb, &fb), 0);
	ck_assert_int_eq(folded_parse(ta, &fa), 0);
	/* The option list ends at the first NULL. */
	summary = run_diff(out, before, after, raw ? "--no-normalize" : negate ? "--negate" : NULL,
			   raw && negate ? "--negate" : NULL);
	assert_wellformed(out);
	text = test_slurp(out);
	svg_parse(text, svg);
	check_svg(svg, &e);
	folded_free(&fb);
	folded_free(&fa);
	free(summary);
	free(text);
	free(tb);
	free(ta);
}

/* --- hand-made profiles ------------------------------------------------------ */

/* A directory with BEFORE and AFTER in it (not written when text is NULL). */
struct files {
	char *dir, *b, *a;
};

static struct files files(const char *bname, const char *btext, const char *aname,
			  const char *atext)
{
	struct files f = { test_tmpdir("check_diff"), NULL, NULL };

	f.b = btext ? test_file(f.dir, bname, btext) : xasprintf("%s/%s", f.dir, bname);
	f.a = atext ? test_file(f.dir, aname, atext) : xasprintf("%s/%s", f.dir, aname);
	return f;
}

static void files_free(struct files *f)
{
	free(f->a);
	free(f->b);
	test_rmdir(f->dir);
	free(f->dir);
}

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
	struct files fs = files("before.txt", before_txt, "after.txt", after_txt);
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
	files_free(&fs);
}
END_TEST

/* pprof inputs, alone and mixed with folded ones, give the same diff: the
 * frames compare by their text.  The pprof files are made by merge. */
START_TEST(test_pprof_inputs)
{
	struct files fs = files("before.txt", before_txt, "after.txt", after_txt);
	char *pb[2], *out = xasprintf("%s/mixed.svg", fs.dir), *want, *got, *s;
	struct run r;

	for (int i = 0; i < 2; i++) {
		pb[i] = xasprintf("%s/%d.pb.gz", fs.dir, i);
		ck_assert_int_eq(run_pystrobe(&r, "merge", "-q", "-f", "pprof", "-o", pb[i],
					      i ? fs.a : fs.b, NULL), 0);
		ck_assert_int_eq(run_exit(&r), 0);
		run_free(&r);
	}
	s = run_diff(out, fs.b, fs.a, NULL, NULL);
	free(s);
	want = test_slurp(out);
	for (int k = 1; k < 4; k++) {
		s = run_diff(out, k & 1 ? pb[0] : fs.b, k & 2 ? pb[1] : fs.a, NULL, NULL);
		free(s);
		got = test_slurp(out);
		/* Only the title, which names the files, differs. */
		ck_assert_str_eq(strstr(got, "<text id=\"subtitle\""),
				 strstr(want, "<text id=\"subtitle\""));
		free(got);
	}
	free(want);
	free(pb[0]);
	free(pb[1]);
	free(out);
	files_free(&fs);
}
END_TEST

/* -f collapsed: "STACK BEFORE AFTER" for every stack of either input,
 * BEFORE scaled to AFTER's total. */
START_TEST(test_collapsed_output)
{
	struct files fs = files("before.txt", before_txt, "after.txt", after_txt);
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
	files_free(&fs);
}
END_TEST

/* The same shape, three times as long: normalised nothing changed, raw
 * everything grew threefold. */
START_TEST(test_normalize)
{
	struct files fs = files("short.txt", "main;a 100\nmain;b 50\nmain 10\n",
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
	files_free(&fs);
}
END_TEST

/* --- a real target recorded twice ----------------------------------------- */

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

	ck_assert_int_eq(run_pystrobe(&r, "record", "--function", "-r", "200", "-f", "collapsed",
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
	struct files fs = files("before.txt", NULL, "after.txt", NULL);
	char *dir = fs.dir, *b = fs.b, *a = fs.a, why[160] = "";
	struct folded fb, fa;
	struct svg svg;
	bool shows = false;

	printf("diff: recording diff_target.py on %s (%s)\n", ti->label, ti->path);
	for (int try = 1; try <= TRIES && !shows; try++) {
		char *tb, *ta;

		record(ti, b, false);
		record(ti, a, true);
		tb = test_slurp(b);
		ta = test_slurp(a);
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
	files_free(&fs);
}
END_TEST

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The summary's top rows: b grew most, c shrank most, e is new. */
START_TEST(test_summary)
{
	struct files fs = files("before.txt", before_txt, "after.txt", after_txt);
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
	files_free(&fs);
}
END_TEST

/* --- hostile names, browser ------------------------------------------------ */

static const char hostile_before[] =
	"main;</text><script>alert(1)</script> 10\n"
	"main;esc \\x1b[31mred\\x1b[0m (a&b\\x3bc.py:3) 5\n"
	"main;work (app.py:12) 20\n";
static const char hostile_after[] =
	"main;</text><script>alert(1)</script> 30\n"
	"main;esc \\x1b[31mred\\x1b[0m (a&b\\x3bc.py:3) 5\n"
	"main;work (app.py:12) 20\n"
	"main;\"quoted\" & <tag> 7\n";

START_TEST(test_hostile)
{
	struct files fs = files("b.txt", hostile_before, "a.txt", hostile_after);
	char *dir = fs.dir, *b = fs.b, *a = fs.a;
	char *out = xasprintf("%s/diff.svg", dir), *summary, *svg, *cmd;
	int rc;

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

	if (system("node --version >/dev/null 2>&1") != 0)
		ck_abort_msg("MISSING node: cannot run tests/browser_flamegraph.js");
	cmd = xasprintf("node '%s/tests/browser_flamegraph.js' '%s' --diff --hostile "
			"--click='work (app.py:12)' --hover='work (app.py:12)' "
			"'alert=Matched: %.1f%%' '^work=Matched: %.1f%%'", test_srcdir(), out,
			100.0 * 30 / 62, 100.0 * 20 / 62);
	rc = system(cmd);
	ck_assert_msg(rc == 0, "%s failed (status %d); see its output above", cmd, rc);
	free(cmd);
	free(svg);
	free(summary);
	free(out);
	files_free(&fs);
}
END_TEST

/* A line-level profile against a --function one: compared by function,
 * with a note, so nothing shows as new. */
START_TEST(test_function_vs_lines)
{
	struct files fs = files("lines.txt",
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
	files_free(&fs);
}
END_TEST

/* Roots from --threads and -s hold ids no two runs share: diff matches them
 * by thread name and command line, and leaves any other frame alone. */
START_TEST(test_roots_by_name)
{
	struct files fs = files("b.txt",
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
	files_free(&fs);
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
	char *bin = xasprintf("%s/bin", dir), *out = xasprintf("%s/o.svg", dir);

	ck_assert_int_eq(write_file(bin, "\x7f" "ELF\0\0\0", 7), 0);
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
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* Two interpreters, not all: the point is diff, not the sampler. */
static void choose_interps(void)
{
	const struct test_interp *all;
	int n = test_interps(&all);

	for (int want = 12; want >= 11 && nchosen < 2; want--)
		for (int i = 0; i < n; i++)
			if (all[i].minor == want && !all[i].root[0] && !all[i].env[0]) {
				chosen[nchosen++] = &all[i];
				break;
			}
	for (int i = 0; i < nchosen; i++)
		printf("diff: the recorded test runs on %s (%s)\n", chosen[i]->label,
		       chosen[i]->path);
}

START_TEST(test_have_interps)
{
	ck_assert_msg(nchosen > 0, "MISSING: no Python 3.11 or 3.12 to record a target with");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("files");

	setvbuf(stdout, NULL, _IOLBF, 0);
	choose_interps();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fixtures);
	tcase_add_test(tc, test_collapsed_output);
	tcase_add_test(tc, test_pprof_inputs);
	tcase_add_test(tc, test_normalize);
	tcase_add_test(tc, test_summary);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_function_vs_lines);
	tcase_add_test(tc, test_roots_by_name);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("recorded");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_have_interps);
	tcase_add_loop_test(tc, test_recorded, 0, nchosen);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
