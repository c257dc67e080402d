/* Tests for the flame graph SVG: well-formed XML whatever the target's
 * names hold, the expected frames with their counts, the title, the colours
 * per category, pruning of big profiles, write errors, and the stacks it
 * carries for diff and merge, C++ names short in labels and whole in
 * tooltips, labels cut with an ellipsis, the controls labelled, and the
 * helper threads of a recording with idle threads drawn narrow.  (Search,
 * zoom, hover, the layout for the window's width and the labels measured
 * in its font, in a real headless Chromium, are live/check_browser.c.)
 *
 * Expected counts and percentages are computed from the profile, not copied
 * from the writer's output.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/output.h"
#include "sample_profile.h"
#include "svg.h"
#include "util/util.h"
#include "suite.h"

static char *slurp(const char *path, size_t *len)
{
	char *s = read_file(path, len);

	ck_assert_msg(s, "%s: %s", path, strerror(errno));
	return s;
}

/* The text escaped as the SVG must have it. */
static char *xml_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		switch (*s) {
		case '&': sb_puts(&sb, "&amp;"); break;
		case '<': sb_puts(&sb, "&lt;"); break;
		case '>': sb_puts(&sb, "&gt;"); break;
		case '"': sb_puts(&sb, "&quot;"); break;
		case '\'': sb_puts(&sb, "&#39;"); break;
		default: sb_putc(&sb, *s);
		}
	}
	return sb_detach(&sb);
}

/* The <title> the writer must give the frame named name. */
static char *expected_title(const struct profile *p, const char *name)
{
	uint32_t id;
	uint64_t n = frame_samples(p, name, &id);
	char *label = pframe_label(&p->frames[id], false), *esc = xml_escape(label), pc[32], *s;

	percent(pc, sizeof(pc), n, p->samples);
	s = xasprintf("<title>%s (%llu samples, %s)</title>", esc, (unsigned long long)n, pc);
	free(esc);
	free(label);
	return s;
}

/* The fill colour of the frame whose title starts with the given text. */
static void frame_fill(const char *svg, const char *title, int rgb[3])
{
	char *key = xasprintf("<title>%s", title);
	const char *t = strstr(svg, key), *fill;

	ck_assert_msg(t, "no frame titled %s", title);
	fill = strstr(t, "fill=\"#");
	ck_assert_ptr_nonnull(fill);
	ck_assert_int_eq(sscanf(fill + 7, "%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]), 3);
	free(key);
}

START_TEST(test_wellformed_and_frames)
{
	const char *names[] = { "work", "main", "<module>", "Event.wait", "Thread.run", "load" };
	struct profile p;
	char path[64], *svg;

	sample_profile(&p, true);
	write_svg(&p, NULL, path, sizeof(path));
	assert_wellformed(path);
	svg = slurp(path, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *want = expected_title(&p, names[i]);

		ck_assert_msg(strstr(svg, want), "missing %s", want);
		free(want);
	}
	/* The numbers the brief gives, to catch a wrong expectation too. */
	ck_assert_ptr_nonnull(strstr(svg, "<title>work (app.py:12) (60 samples, 57.1%)</title>"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>all (105 samples, 100.0%)</title>"));
	ck_assert_ptr_nonnull(strstr(svg, "data-n=\"60\""));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

START_TEST(test_hostile_names)
{
	struct profile p;
	char path[64], *svg;
	size_t len;

	sample_profile(&p, true);
	write_svg(&p, NULL, path, sizeof(path));
	assert_wellformed(path);
	svg = slurp(path, &len);
	ck_assert_msg(!strstr(svg, "<script>alert"), "the hostile name is raw markup");
	ck_assert_int_eq(count(svg, "<script"), 1);
	ck_assert_int_eq(count(svg, "</script>"), 1);
	ck_assert_ptr_nonnull(strstr(svg,
		"<title>&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt; ("));
	/* The file name's quotes, newline, escape sequence and invalid UTF-8. */
	ck_assert_ptr_nonnull(strstr(svg,
		"a&lt;b&gt;&amp;&quot;c&quot;;d\\x0ae\\x1b[31m\\xff\\xfe.py:3)"));
	/* Only valid UTF-8, and no control characters but newlines. */
	for (size_t i = 0; i < len;) {
		int n = utf8_char(svg + i, NULL);

		ck_assert_msg(n > 0, "invalid UTF-8 at byte %zu", i);
		ck_assert_msg(n > 1 || svg[i] == '\n' || (unsigned char)svg[i] >= 0x20,
			      "control character 0x%02x at byte %zu", svg[i], i);
		i += n;
	}
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

/* The text of the element with this id. */
static char *element_text(const char *svg, const char *id)
{
	char *key = xasprintf("id=\"%s\"", id);
	const char *s = strstr(svg, key), *e;

	ck_assert_msg(s, "no element %s", id);
	s = strchr(s, '>') + 1;
	e = strchr(s, '<');
	free(key);
	return strndup(s, e - s);
}

/* The collapsed text of p, as record -f collapsed writes it. */
static char *collapsed_text(const struct profile *p, bool full)
{
	struct out_opts o = { .full_filenames = full };
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	ck_assert_int_eq(out_collapsed(p, f, &o), 0);
	fclose(f);
	return text;
}

/* The SVG carries every stack, as collapsed output has them (whole paths
 * with --full-filenames), and the recording's rate, duration and start;
 * a differential one carries none. */
START_TEST(test_stacks_carried)
{
	struct out_opts o = { .full_filenames = true };
	struct profile p;
	char path[64], *svg, *stacks, *want, *attrs;

	sample_profile(&p, true);
	for (int full = 0; full < 2; full++) {
		write_svg(&p, full ? &o : NULL, path, sizeof(path));
		assert_wellformed(path);
		svg = slurp(path, NULL);
		stacks = svg_stacks(svg);
		ck_assert_msg(stacks, "no stacks in the SVG");
		want = collapsed_text(&p, full);
		ck_assert_str_eq(stacks + (*stacks == '\n'), want);
		attrs = xasprintf("<metadata id=\"pystrobe-stacks\" data-duration-ns=\"%llu\" "
				  "data-start-unix-ns=\"%llu\" data-rate-hz=\"100\">",
				  (unsigned long long)p.duration_ns,
				  (unsigned long long)p.start_unix_ns);
		ck_assert_msg(strstr(svg, attrs), "no %s", attrs);
		free(attrs);
		free(want);
		free(stacks);
		free(svg);
		unlink(path);
	}
	o.diff_base = &p;
	write_svg(&p, &o, path, sizeof(path));
	svg = slurp(path, NULL);
	ck_assert_ptr_null(strstr(svg, "<metadata"));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

START_TEST(test_title)
{
	struct profile p;
	char path[64], *svg, *title, *sub, want[64];

	sample_profile(&p, false);
	write_svg(&p, NULL, path, sizeof(path));
	svg = slurp(path, NULL);
	title = element_text(svg, "title");
	sub = element_text(svg, "subtitle");
	ck_assert_str_eq(title, "pystrobe: python3 app.py --epochs 3");
	snprintf(want, sizeof(want), "pid %d,", (int)p.pid);
	ck_assert_msg(strstr(sub, want), "subtitle %s lacks %s", sub, want);
	ck_assert_msg(strstr(sub, "Python 3.12.1"), "subtitle %s", sub);
	ck_assert_msg(strstr(sub, "0.90 s"), "subtitle %s", sub);
	ck_assert_msg(strstr(sub, "100 Hz"), "subtitle %s", sub);
	snprintf(want, sizeof(want), "%llu samples", (unsigned long long)p.samples);
	ck_assert_msg(strstr(sub, want), "subtitle %s lacks %s", sub, want);
	/* The title is the first text. */
	ck_assert_ptr_eq(strstr(svg, "<text"), strstr(svg, "<text id=\"title\""));
	free(title);
	free(sub);
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

START_TEST(test_title_override)
{
	struct out_opts o = { .title = "my <run> & \"co\"\x01" };
	struct profile p;
	char path[64], *svg, *title;

	sample_profile(&p, false);
	write_svg(&p, &o, path, sizeof(path));
	assert_wellformed(path);
	svg = slurp(path, NULL);
	title = element_text(svg, "title");
	ck_assert_str_eq(title, "my &lt;run&gt; &amp; &quot;co&quot;\\x01");
	free(title);
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

START_TEST(test_full_filenames)
{
	struct out_opts o = { .full_filenames = true };
	struct profile p;
	char path[64], *svg;

	sample_profile(&p, false);
	write_svg(&p, &o, path, sizeof(path));
	svg = slurp(path, NULL);
	ck_assert_ptr_nonnull(strstr(svg, "<title>work (/home/u/app.py:12) (60 samples"));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

/* A C++ frame: its label short (data-l, the text drawn), its tooltip and
 * the stacks carried whole; with full_names no short label at all. */
START_TEST(test_cxx_names)
{
	static const char full[] = "ns::Box&lt;std::vector&lt;int&gt; &gt;::get(int) const (libx.so)";
	struct pframe f = { PF_NATIVE, "ns::Box<std::vector<int> >::get(int) const", "libx.so", -1, -1 };
	struct out_opts o = { .full_filenames = false };
	struct profile p;
	char path[64], *svg;
	uint32_t stack[1];

	profile_init(&p, 100);
	stack[0] = profile_frame(&p, &f);
	profile_add(&p, profile_thread(&p, 1, 1, NULL), stack, 1, 0, 7);
	for (int full_names = 0; full_names < 2; full_names++) {
		o.full_names = full_names;
		write_svg(&p, &o, path, sizeof(path));
		assert_wellformed(path);
		svg = slurp(path, NULL);
		ck_assert_msg(strstr(svg, "<title>ns::Box&lt;std::vector&lt;int&gt; &gt;::get(int) "
				     "const (libx.so) (7 samples"), "%s", svg);
		ck_assert_int_eq(count(svg, "data-l=\"ns::Box&lt;\xe2\x80\xa6&gt;::get (libx.so)\""),
				 !full_names);
		ck_assert_int_eq(count(svg, ">ns::Box&lt;\xe2\x80\xa6&gt;::get (libx.so)</text>"),
				 !full_names);
		ck_assert_int_eq(count(svg, "data-l="), 0 + !full_names);
		/* The tooltip and the stacks for diff and merge: whole; and the
		 * text drawn with full_names (it fits). */
		ck_assert_int_eq(count(svg, full), 2 + full_names);
		free(svg);
		unlink(path);
	}
	profile_free(&p);
}
END_TEST

START_TEST(test_colours)
{
	int user[3], user2[3], std[3], site[3], root[3], all[3];
	struct profile p;
	char path[64], *svg;

	sample_profile(&p, false);
	write_svg(&p, NULL, path, sizeof(path));
	svg = slurp(path, NULL);
	frame_fill(svg, "work (", user);
	frame_fill(svg, "main (", user2);
	frame_fill(svg, "Event.wait (", std);
	frame_fill(svg, "load (", site);
	frame_fill(svg, "process 4242", root);
	frame_fill(svg, "all (", all);
	/* user: warm, red dominant; stdlib: yellow; site-packages: aqua/green;
	 * roots: grey.  Each palette apart from the others. */
	ck_assert_msg(user[0] >= 200 && user[0] > user[1] && user[1] > user[2],
		      "user %d,%d,%d", user[0], user[1], user[2]);
	ck_assert_msg(user2[0] >= 200 && user2[0] > user2[2], "user %d,%d,%d",
		      user2[0], user2[1], user2[2]);
	ck_assert_msg(std[0] >= 180 && std[1] >= 180 && std[2] < 100,
		      "stdlib %d,%d,%d", std[0], std[1], std[2]);
	ck_assert_msg(site[1] > site[0] + 50 && site[2] > site[0],
		      "site %d,%d,%d", site[0], site[1], site[2]);
	ck_assert_msg(root[0] == root[1] && root[1] == root[2], "root %d,%d,%d",
		      root[0], root[1], root[2]);
	ck_assert_msg(all[0] == all[1] && all[1] == all[2], "all %d,%d,%d",
		      all[0], all[1], all[2]);
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

/* Colours depend on the name only: the same function in two places, and in
 * two runs, looks the same. */
START_TEST(test_colours_stable)
{
	int a[3], b[3];
	struct profile p;
	char path[64], *svg;

	sample_profile(&p, false);
	write_svg(&p, NULL, path, sizeof(path));
	svg = slurp(path, NULL);
	frame_fill(svg, "work (", a);
	free(svg);
	unlink(path);
	profile_free(&p);
	sample_profile(&p, true);
	write_svg(&p, NULL, path, sizeof(path));
	svg = slurp(path, NULL);
	frame_fill(svg, "work (", b);
	ck_assert(!memcmp(a, b, sizeof(a)));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

/* The start tag of the frame whose title starts with title. */
static char *frame_tag(const char *svg, const char *title)
{
	char *key = xasprintf("<title>%s", title);
	const char *t = strstr(svg, key), *g;

	ck_assert_msg(t, "no frame titled %s", title);
	for (g = t; g > svg && strncmp(g, "<g ", 3); g--)
		;
	free(key);
	return strndup(g, t - g);
}

/* The x and width of that frame's rect, and its text. */
static char *frame_box(const char *svg, const char *title, double *x, double *w)
{
	char *key = xasprintf("<title>%s", title);
	const char *t = strstr(svg, key), *r, *e;

	ck_assert_msg(t, "no frame titled %s", title);
	r = strstr(t, "<rect x=\"");
	ck_assert_int_eq(sscanf(r, "<rect x=\"%lf\" y=\"%*d\" width=\"%lf\"", x, w), 2);
	r = strchr(strstr(r, "<text"), '>') + 1;
	e = strstr(r, "</text>");
	free(key);
	return strndup(r, e - r);
}

#define INNER (1200 - 2 * 10)	/* the width frames are drawn in, without a script */

/* Recorded with idle threads, the threads that run only the standard
 * library (a queue feeder, a pool's result handler: 92% of the samples,
 * nearly all waiting) are drawn narrow, 5% of the width together, and the
 * program's own frames and its wait for data get the rest; the counts and
 * titles say what was recorded, and a box ticked says so.  Recorded
 * without (CPU time, where a helper thread's samples are work done), they
 * are drawn at their width. */
START_TEST(test_helpers_narrow)
{
	const uint64_t helpers = HELPER_FEED + HELPER_RESULTS;
	const char *plain[] = { "process 4300", "&lt;module&gt; (", "main (", "augment (",
				"DataLoader.__next__ (", "&lt;wait:data&gt; (" };
	struct profile p;
	char path[64], *svg, *tag, *want, *text, pc[32];
	double x, w, rest;

	for (int wall = 1; wall >= 0; wall--) {
		helper_profile(&p, wall);
		rest = (double)(p.samples - helpers);
		write_svg(&p, NULL, path, sizeof(path));
		assert_wellformed(path);
		svg = slurp(path, NULL);
		ck_assert_int_eq(count(svg, "data-h=\"1\""), wall);
		tag = frame_tag(svg, "Thread._bootstrap (");
		ck_assert_msg(!strstr(tag, "data-h=\"1\"") == !wall, "%s", tag);
		free(tag);
		tag = frame_tag(svg, "Queue._feed (");
		ck_assert_msg(!strstr(tag, "data-h=\"2\"") == !wall, "%s", tag);
		free(tag);
		for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
			tag = frame_tag(svg, plain[i]);
			ck_assert_msg(!strstr(tag, "data-h"), "%s", tag);
			free(tag);
		}
		want = expected_title(&p, "Thread._bootstrap");
		ck_assert_msg(strstr(svg, want), "missing %s", want);
		free(want);
		free(frame_box(svg, "all (", &x, &w));
		ck_assert_double_eq_tol(w, INNER, 0.11);
		free(frame_box(svg, "Thread._bootstrap (", &x, &w));
		ck_assert_double_eq_tol(w, wall ? INNER * 0.05 : INNER * (double)helpers / p.samples, 0.11);
		text = frame_box(svg, "augment (", &x, &w);
		ck_assert_double_eq_tol(w, wall ? INNER * 0.95 * 20 / rest : INNER * 20.0 / p.samples,
					0.11);
		/* Whole only where the helper threads leave it the room. */
		ck_assert_str_eq(text, wall ? "augment (train.py:21)" : "augme\xe2\x80\xa6");
		free(text);
		free(frame_box(svg, "&lt;wait:data&gt; (", &x, &w));
		ck_assert_double_eq_tol(w, wall ? INNER * 0.95 * 10 / rest : INNER * 10.0 / p.samples,
					0.11);
		percent(pc, sizeof(pc), helpers, p.samples);
		want = xasprintf("<g id=\"helpers\" class=\"btn check\" role=\"checkbox\" "
				 "aria-checked=\"true\"><title>Threads and processes that run only "
				 "the standard library");
		ck_assert_int_eq(count(svg, want), wall);
		free(want);
		pc[strcspn(pc, ".")] = 0;
		want = xasprintf(">narrow helper threads (%s%%)</text>", pc);
		ck_assert_msg(!strstr(svg, want) == !wall, "%s", want);
		free(want);
		free(svg);
		unlink(path);
		profile_free(&p);
	}
}
END_TEST

/* Drawn for a viewer with no script: FG_WIDTH wide; labels that do not fit
 * cut with an ellipsis; the ignore-case control a labelled checkbox. */
START_TEST(test_controls_and_labels)
{
	struct profile p;
	char path[64], *svg, *text;
	double x, w;

	sample_profile(&p, false);
	write_svg(&p, NULL, path, sizeof(path));
	svg = slurp(path, NULL);
	ck_assert_ptr_nonnull(strstr(svg, "<svg version=\"1.1\" width=\"1200\" height=\""));
	ck_assert_ptr_nonnull(strstr(svg, " viewBox=\"0 0 1200 "));
	ck_assert_ptr_nonnull(strstr(svg, "<g id=\"ic\" class=\"btn check\" role=\"checkbox\" "
				     "aria-checked=\"false\"><title>Ignore case when searching"));
	ck_assert_ptr_nonnull(strstr(svg, "<text x=\"1072\" y=\"66\">ignore case</text></g>"));
	ck_assert_ptr_null(strstr(svg, "id=\"helpers\""));
	/* 10 of 100 samples: 118 pixels, for 23 characters. */
	text = frame_box(svg, "load (", &x, &w);
	ck_assert_double_eq_tol(w, INNER * 10.0 / p.samples, 0.11);
	ck_assert_str_eq(text, "load (torch/d\xe2\x80\xa6");
	free(text);
	text = frame_box(svg, "work (", &x, &w);
	ck_assert_str_eq(text, "work (app.py:12)");
	free(text);
	ck_assert_ptr_null(strstr(svg, "..</text>"));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

static double now(void)
{
	return mono_ns() / 1e9;
}

START_TEST(test_big_pruned)
{
	struct profile p;
	char path[64], *svg;
	const char *s;
	double t0, t;
	size_t len;
	FILE *f;
	int fd, frames = 0;

	big_profile(&p, 1000000);
	snprintf(path, sizeof(path), "/tmp/check_flamegraph.XXXXXX.svg");
	fd = mkstemps(path, 4);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	t0 = now();
	ck_assert_int_eq(out_flamegraph(&p, f, NULL), 0);
	ck_assert_int_eq(fclose(f), 0);
	t = now() - t0;
	svg = slurp(path, &len);
	fprintf(stderr, "flamegraph: %lu samples, %u stacks: %zu bytes in %.3f s\n",
		(unsigned long)p.samples, p.nstacks, len, t);
	ck_assert_msg(len < 2000000, "SVG of %zu bytes", len);
	ck_assert_msg(t < 1.0, "writing took %.3f s", t);
	assert_wellformed(path);
	/* Nothing narrower than 0.1% of the samples is drawn. */
	for (s = svg; (s = strstr(s, "data-n=\"")); s++) {
		unsigned long long n = strtoull(s + 8, NULL, 10);

		ck_assert_msg(n * 1000 >= p.samples, "a frame of %llu samples", n);
		frames++;
	}
	ck_assert_int_gt(frames, 100);
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

START_TEST(test_empty)
{
	struct profile p;
	char path[64], *svg;

	profile_init(&p, 100);
	write_svg(&p, NULL, path, sizeof(path));
	assert_wellformed(path);
	svg = slurp(path, NULL);
	ck_assert_ptr_nonnull(strstr(svg, "No samples"));
	ck_assert_ptr_nonnull(strstr(svg, "pystrobe: (unknown command)"));
	free(svg);
	unlink(path);
	profile_free(&p);
}
END_TEST

START_TEST(test_write_error)
{
	struct profile p;
	FILE *f = fopen("/dev/full", "w");

	ck_assert_ptr_nonnull(f);
	sample_profile(&p, false);
	ck_assert_int_eq(out_flamegraph(&p, f, NULL), -ENOSPC);
	fclose(f);
	profile_free(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flamegraph");
	TCase *tc = tcase_create("svg");

	tcase_add_test(tc, test_wellformed_and_frames);
	tcase_add_test(tc, test_hostile_names);
	tcase_add_test(tc, test_stacks_carried);
	tcase_add_test(tc, test_title);
	tcase_add_test(tc, test_title_override);
	tcase_add_test(tc, test_full_filenames);
	tcase_add_test(tc, test_cxx_names);
	tcase_add_test(tc, test_colours);
	tcase_add_test(tc, test_colours_stable);
	tcase_add_test(tc, test_helpers_narrow);
	tcase_add_test(tc, test_controls_and_labels);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_write_error);
	suite_add_tcase(s, tc);
	tc = tcase_create("big");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_big_pruned);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
