#include "svg.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

#define ROW 16			/* out_flamegraph.c's FG_ROW */

/* --- flame graphs of a profile -------------------------------------------- */

void write_svg(const struct profile *p, const struct out_opts *o, char *path, size_t size)
{
	FILE *f;
	int fd;

	snprintf(path, size, "/tmp/check_flamegraph.XXXXXX.svg");
	fd = mkstemps(path, 4);
	ck_assert_msg(fd >= 0, "mkstemps: %s", strerror(errno));
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(out_flamegraph(p, f, o), 0);
	ck_assert_int_eq(fclose(f), 0);
}


void assert_wellformed(const char *path)
{
	char *cmd = xasprintf("xmllint --noout '%s'", path);

	if (system("xmllint --version >/dev/null 2>&1") != 0) {
		test_skip("no xmllint (apt-get install libxml2-utils): %s not checked as XML", path);
		goto out;
	}
	ck_assert_msg(system(cmd) == 0, "%s is not well-formed XML", path);
	test_used("xmllint");
out:
	free(cmd);
}

uint64_t frame_samples(const struct profile *p, const char *name, uint32_t *id)
{
	uint64_t n = 0;

	*id = UINT32_MAX;
	for (uint32_t i = 0; i < p->nframes; i++)
		if (!strcmp(p->frames[i].name, name))
			*id = i;
	ck_assert_msg(*id != UINT32_MAX, "no frame %s", name);
	for (uint32_t i = 0; i < p->nstacks; i++)
		for (uint32_t d = 0; d < p->stacks[i].depth; d++)
			if (p->stacks[i].frames[d] == *id) {
				n += p->stacks[i].count;
				break;
			}
	return n;
}


void percent(char *buf, size_t size, uint64_t n, uint64_t total)
{
	double pc = 100.0 * n / total;

	snprintf(buf, size, pc >= 1 ? "%.1f%%" : "%.2f%%", pc);
}


/* --- pystrobe diff's SVG, parsed ------------------------------------------ */

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

char *svg_stacks(const char *svg_text)
{
	const char *tag = strstr(svg_text, "<metadata id=\"pystrobe-stacks\""), *body, *end;

	if (!tag)
		return NULL;
	body = strchr(tag, '>');
	end = body ? strstr(body, "</metadata>") : NULL;
	ck_assert_msg(end, "the stacks of a flame graph are cut short");
	return xml_unescape(body + 1, end - body - 1);
}

char *profile_text(const char *path)
{
	char *text = test_slurp(path), *stacks;

	if (strncmp(text, "<?xml", 5))
		return text;
	stacks = svg_stacks(text);
	ck_assert_msg(stacks, "%s: a flame graph without its stacks", path);
	free(text);
	return stacks;
}

/* Each node's path: its parent is the node one row above whose samples
 * [s, s+n) hold its start. */
static void make_paths(struct svg *svg)
{
	for (size_t i = 0; i < svg->n; i++) {
		struct gnode *c = &svg->nodes[i], *parent = NULL;

		for (size_t j = 0; j < svg->n; j++) {
			struct gnode *p = &svg->nodes[j];

			if (p->y == c->y - ROW && p->s <= c->s && c->s < p->s + p->n)
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

static int cmp_y(const void *a, const void *b)
{
	return ((const struct gnode *)a)->y - ((const struct gnode *)b)->y;
}

void svg_parse(const char *text, struct svg *svg)
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
	/* Parents first (the root is at the top), so each finds its parent's
	 * path made. */
	qsort(svg->nodes, svg->n, sizeof(*svg->nodes), cmp_y);
	make_paths(svg);
}

void svg_free(struct svg *svg)
{
	for (size_t i = 0; i < svg->n; i++) {
		free(svg->nodes[i].label);
		free(svg->nodes[i].path);
	}
	free(svg->nodes);
}

const struct gnode *svg_find(const struct svg *svg, const char *label)
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

char *run_diff(const char *out, const char *before, const char *after,
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

const char *svg_path(const char *dir, bool raw, bool negate)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/diff%s%s.svg", dir, raw ? "-raw" : "",
		 negate ? "-neg" : "");
	return path;
}

void diff_and_check(const char *dir, const char *before, const char *after, bool raw,
		    bool negate, struct svg *svg)
{
	const char *out = svg_path(dir, raw, negate);
	char *tb = profile_text(before), *ta = profile_text(after), *text, *summary;
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

struct diff_files diff_files(const char *bname, const char *btext, const char *aname,
			     const char *atext)
{
	struct diff_files f = { test_tmpdir("check_diff"), NULL, NULL };

	f.b = btext ? test_file(f.dir, bname, btext) : xasprintf("%s/%s", f.dir, bname);
	f.a = atext ? test_file(f.dir, aname, atext) : xasprintf("%s/%s", f.dir, aname);
	return f;
}

void diff_files_free(struct diff_files *f)
{
	free(f->a);
	free(f->b);
	test_rmdir(f->dir);
	free(f->dir);
}


const char diff_hostile_before[] =
	"main;</text><script>alert(1)</script> 10\n"
	"main;esc \\x1b[31mred\\x1b[0m (a&b\\x3bc.py:3) 5\n"
	"main;work (app.py:12) 20\n";
const char diff_hostile_after[] =
	"main;</text><script>alert(1)</script> 30\n"
	"main;esc \\x1b[31mred\\x1b[0m (a&b\\x3bc.py:3) 5\n"
	"main;work (app.py:12) 20\n"
	"main;\"quoted\" & <tag> 7\n";

