/* The flame graphs in a real headless Chromium, through
 * tests/browser_flamegraph.js: search ("Matched"), click to zoom and hover,
 * with hostile names, in the flame graph of record and in the differential
 * one of diff; in each, the frames fill the window's width and labels are
 * cut only where they do not fit.  The layout follows the window at two
 * sizes and through a resize, and the helper threads of a recording with
 * idle threads are drawn narrow until their box is unticked.  Chromium and node are part of the test dependencies: a
 * missing one fails the test, loudly.  What the SVGs hold is checked
 * without a browser by unit/check_flamegraph.c and unit/check_diff.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "sample_profile.h"
#include "svg.h"
#include "util/util.h"
#include "suite.h"

/* node tests/browser_flamegraph.js SVG ARGS, which must succeed. */
static void browse(const char *svg, const char *args)
{
	char *cmd;
	int rc;

	if (system("node --version >/dev/null 2>&1") != 0) {
		test_skip("browser: no node (apt-get install nodejs): %s not opened in Chromium", svg);
		return;
	}
	cmd = xasprintf("node '%s/tests/browser_flamegraph.js' '%s' %s", test_srcdir(), svg, args);
	rc = system(cmd);
	test_used("node");
	/* Exit 2: the script found no Chromium (and said so). */
	if (WIFEXITED(rc) && WEXITSTATUS(rc) == 2) {
		test_skip("browser: no chromium (apt-get install chromium): %s not opened", svg);
		free(cmd);
		return;
	}
	ck_assert_msg(rc == 0, "%s failed (status %d); see its output above", cmd, rc);
	test_used("chromium");
	free(cmd);
}

START_TEST(test_flamegraph)
{
	struct profile p;
	char path[64], work[32], main_pc[32], hostile[32], *args;
	uint32_t id;

	sample_profile(&p, true);
	write_svg(&p, NULL, path, sizeof(path));
	percent(work, sizeof(work), frame_samples(&p, "work", &id), p.samples);
	/* main contains work: a match of both counts main's samples once. */
	percent(main_pc, sizeof(main_pc), frame_samples(&p, "main", &id), p.samples);
	percent(hostile, sizeof(hostile), frame_samples(&p, SAMPLE_HOSTILE_NAME, &id), p.samples);
	args = xasprintf("--click='work (app.py:12)' "
			 "--hover='Event.wait (threading.py:655)' --hostile --ic='WORK=Matched: %s' "
			 "'^work=Matched: %s' '^(main|work)=Matched: %s' 'WORK=Matched: 0.0%%' "
			 "'alert=Matched: %s'",
			 work, work, main_pc, hostile);
	browse(path, args);
	free(args);
	unlink(path);
	profile_free(&p);
}
END_TEST

/* Open p's flame graph with args, and leave a screenshot named name in the
 * build directory for a person to look at; p is freed. */
static void browse_profile(struct profile *p, const char *args, const char *name)
{
	char path[64], *shot = xasprintf("%s/tests/%s", test_builddir(), name);
	char *all = xasprintf("%s --screenshot='%s'", args, shot);

	write_svg(p, NULL, path, sizeof(path));
	browse(path, all);
	printf("browser: screenshots in %s\n", shot);
	free(all);
	free(shot);
	unlink(path);
	profile_free(p);
}

/* What a short run of a real program looks like (a thin tower of imports
 * 60 frames deep beside the program's own frames), opened at 1400x900:
 * the program's frames must be on the first screen, and a frame clicked
 * must stay there when zoomed. */
START_TEST(test_first_screen)
{
	struct profile p;

	sample_profile(&p, false);
	import_tower(&p, 60);
	browse_profile(&p, "--viewport=1400x900 --first-screen='<module> (app.py:40)' "
		       "--first-screen='main (app.py:30)' --first-screen='work (app.py:12)' "
		       "--first-screen='Event.wait (threading.py:655)' "
		       "--first-screen='load (torch/data.py:77)' --click='work (app.py:12)'",
		       "browser-first-screen.png");
}
END_TEST

/* Opened at one size, resized to another: the frames fill each. */
START_TEST(test_window_width)
{
	struct profile p;

	sample_profile(&p, false);
	import_tower(&p, 20);
	browse_profile(&p, "--viewport=1400x900 --resize=1920x1080 --click='work (app.py:12)'",
		       "browser-resized-wider.png");
	sample_profile(&p, false);
	import_tower(&p, 20);
	browse_profile(&p, "--viewport=1920x1080 --resize=1100x700 "
		       "--click='load (torch/data.py:77)'", "browser-resized-narrower.png");
}
END_TEST

/* A training job recorded with idle threads, whose queue feeder and pool
 * result handler (92% of the samples, the standard library's only) would
 * leave its own frames a sliver: they are drawn narrow, the program gets
 * the width, and a click on the box draws them as wide as they are. */
START_TEST(test_helpers)
{
	struct profile p;

	helper_profile(&p, true);
	browse_profile(&p, "--viewport=1400x900 "
		       "--helpers='Thread._bootstrap (threading.py:1030),augment (train.py:21)' "
		       "--click='Queue._feed (multiprocessing/queues.py:251)'",
		       "browser-helpers.png");
}
END_TEST

START_TEST(test_diff)
{
	struct diff_files fs = diff_files("b.txt", diff_hostile_before, "a.txt",
					  diff_hostile_after);
	char *out = xasprintf("%s/diff.svg", fs.dir), *summary, *args;

	summary = run_diff(out, fs.b, fs.a, NULL, NULL);
	args = xasprintf("--diff --hostile --click='work (app.py:12)' --hover='work (app.py:12)' "
			 "'alert=Matched: %.1f%%' '^work=Matched: %.1f%%'",
			 100.0 * 30 / 62, 100.0 * 20 / 62);
	browse(out, args);
	free(args);
	free(summary);
	free(out);
	diff_files_free(&fs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("browser");
	TCase *tc = tcase_create("browser");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_flamegraph);
	tcase_add_test(tc, test_first_screen);
	tcase_add_test(tc, test_window_width);
	tcase_add_test(tc, test_helpers);
	tcase_add_test(tc, test_diff);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
