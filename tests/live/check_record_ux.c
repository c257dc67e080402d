/* What `pystrobe record` says and leaves behind, as a new user meets it:
 * where the profile goes, what is recorded when the command is a launcher,
 * how counts are named, how a launched run ends, the text summary.
 *
 *   output    -o in a directory that does not exist, or naming a directory,
 *             is refused before the command runs (it leaves no mark), with
 *             exit 2 and one line naming the path given; the default name,
 *             in a current directory nobody can write (/proc), goes to
 *             $TMPDIR, and a profile that cannot be written at the end
 *             (/dev/full) is written to $TMPDIR instead, exit 1.
 *
 * On one plain interpreter (a 3.12 first): none of this depends on the
 * Python.  Nothing here asserts a rate or a time.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpreters.h"
#include "suite.h"
#include "target.h"

static const struct test_interp *chosen[1];
static int nchosen;

/* Spins for a second of wall time, after writing OUTDIR/ran. */
static const char spin_code[] =
	"import os, sys, time\n"
	"open(os.path.join(sys.argv[-1], 'ran'), 'w').close()\n"
	"t = time.time()\n"
	"while time.time() - t < 1.0:\n"
	"    pass\n";

/* A fresh directory for one check; the caller rm_rf()s it. */
static void fresh_dir(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/pystrobe-ux-XXXXXX");
	ck_assert_msg(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static bool exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The name of the one file in dir that starts with prefix, or "". */
static void file_in(const char *dir, const char *prefix, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	out[0] = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			snprintf(out, size, "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
}

/* env TMPDIR=tmpdir sh -c 'cd CWD && exec "$@"' pystrobe record OPTS... --
 * python CODE dir: run in cwd (NULL: here). */
static void record_in(struct run *r, const char *cwd, const char *tmpdir, char *const *opts,
		      const char *code, const char *dir)
{
	struct argv_buf a = { .n = 0 };
	char tmp_env[PATH_MAX + 16];

	snprintf(tmp_env, sizeof(tmp_env), "TMPDIR=%s", tmpdir);
	arg(&a, "env");
	arg(&a, tmp_env);
	arg(&a, "sh");
	arg(&a, "-c");
	arg(&a, "cd \"$0\" && exec \"$@\"");
	arg(&a, cwd ? cwd : ".");
	arg(&a, pystrobe_path());
	arg(&a, "record");
	args(&a, opts);
	arg(&a, "--");
	arg_python(&a, chosen[0]);
	arg(&a, "-c");
	arg(&a, code);
	arg(&a, dir);
	ck_assert_int_eq(run_cmd(r, RUN_TIMEOUT_MS, a.v), 0);
}

static void assert_exit(const struct run *r, const char *what, int code)
{
	char how[96];

	ck_assert_msg(run_exit(r) == code, "%s: pystrobe %s, want exit %d; stderr: %.1500s",
		      what, run_describe(r, how, sizeof(how)), code, r->err);
}

/* --- output --------------------------------------------------------------- */

static void refused(const char *out, const char *what)
{
	char dir[64];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_in(&r, NULL, dir, (char *[]){ "-o", (char *)out, NULL }, spin_code, dir);
	assert_exit(&r, what, 2);
	ck_assert_msg(run_one_error_line(&r), "%s: not one line: %s", what, r.err);
	ck_assert_msg(strstr(r.err, out), "%s: the line does not name '%s': %s", what, out,
		      r.err);
	ck_assert_msg(!strstr(r.err, ".tmp."), "%s: names a temporary file: %s", what, r.err);
	ck_assert_msg(!exists_in(dir, "ran"), "%s: the command ran all the same", what);
	run_free(&r);
	rm_rf(dir);
}

START_TEST(test_output_refused)
{
	refused("/nonexistent/dir/x.svg", "-o in a missing directory");
	refused("/tmp", "-o naming a directory");
}
END_TEST

/* Recorded in cwd with opts, the profile must be in $TMPDIR under the
 * default name, said on stderr, and pystrobe exit with want. */
static void lands_in_tmpdir(const char *what, const char *cwd, char *const *opts, int want)
{
	char dir[64], found[PATH_MAX];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_in(&r, cwd, dir, opts, spin_code, dir);
	assert_exit(&r, what, want);
	file_in(dir, "pystrobe-", found, sizeof(found));
	ck_assert_msg(found[0], "%s: no profile in $TMPDIR %s; stderr: %s", what, dir, r.err);
	ck_assert_msg(strstr(r.err, found), "%s: stderr does not name %s: %s", what, found,
		      r.err);
	run_free(&r);
	rm_rf(dir);
}

/* cwd /proc: no file can be made there, even by root. */
START_TEST(test_output_default_tmpdir)
{
	lands_in_tmpdir("default name in /proc", "/proc", (char *[]){ NULL }, 0);
}
END_TEST

/* Writing fails at the end: the recording is not lost. */
START_TEST(test_output_fallback)
{
	lands_in_tmpdir("-o /dev/full", NULL, (char *[]){ "-o", "/dev/full", NULL }, 1);
}
END_TEST

START_TEST(test_interp_chosen)
{
	ck_assert_msg(nchosen > 0, "no plain interpreter to run record on");
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "output", 120, 0, 1,
		  { test_output_refused, test_output_default_tmpdir, test_output_fallback } },
	};
	const struct test_group none[] = { { "interp", 0, 0, 1, { test_interp_chosen } } };
	const struct test_interp *all;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_interps(&all);
	nchosen = test_interps_plain(chosen, 1, "record_ux");
	if (!nchosen)
		return run_groups("record_ux", none, 1, 0, 1);
	return run_groups("record_ux", groups, sizeof(groups) / sizeof(*groups), 0, 1);
}
