/* Where and in which format the profile commands write.
 *
 *  - Without -f the format is the one -o's ending stands for (.svg,
 *    .txt/.collapsed/.folded, .json/.speedscope.json, .trace.json,
 *    .pb.gz/.pprof/.pprof.gz, any case); -f that contradicts the ending is
 *    a usage error (exit 2, one line) and nothing is written; an unknown
 *    ending leaves -f or the default (flamegraph).
 *  - -o - writes the profile to standard output and no file named "-";
 *    diff then leaves its summary out.
 * Checked on out_format_choose() and on the merge, diff and record
 * commands, whose files are read back by their content.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "folded.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

START_TEST(test_settle)
{
	static const struct {
		const char *f, *path, *want;	/* want NULL: a usage error */
	} cases[] = {
		{ NULL, NULL, "flamegraph" },
		{ NULL, "-", "flamegraph" },
		{ "pprof", "-", "pprof" },
		{ NULL, "prof.pb.gz", "pprof" },
		{ NULL, "prof.PPROF", "pprof" },
		{ NULL, "prof.pprof.gz", "pprof" },
		{ NULL, "a/b.svg", "flamegraph" },
		{ NULL, "x.txt", "collapsed" },
		{ NULL, "x.folded", "collapsed" },
		{ NULL, "x.collapsed", "collapsed" },
		{ NULL, "x.json", "speedscope" },
		{ NULL, "x.speedscope.json", "speedscope" },
		{ NULL, "x.trace.json", "chrometrace" },
		{ "chrometrace", "x.json", "chrometrace" },
		{ "speedscope", "x.json", "speedscope" },
		{ "collapsed", "x.out", "collapsed" },
		{ NULL, "x.out", "flamegraph" },
		{ "pprof", "x.svg", NULL },
		{ "flamegraph", "x.pb.gz", NULL },
		{ "chrometrace", "x.speedscope.json", NULL },
		{ "speedscope", "x.trace.json", NULL },
		{ "collapsed", "x.json", NULL },
		{ "nosuch", NULL, NULL },
		/* svg is what a flame graph is, and its files' ending */
		{ "svg", NULL, "flamegraph" },
		{ "svg", "x.svg", "flamegraph" },
		{ "svg", "x.pb.gz", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const struct out_format *fmt = NULL;
		int rc = out_format_choose("test", cases[i].f, cases[i].path, &fmt);

		if (!cases[i].want) {
			ck_assert_msg(is_fail(rc, EXIT_USAGE), "-f %s -o %s: accepted as %s", cases[i].f,
				      cases[i].path, fmt ? fmt->name : "?");
			continue;
		}
		ck_assert_msg(rc == 0 && fmt && !strcmp(fmt->name, cases[i].want),
			      "-f %s -o %s: %s, not %s", cases[i].f ? cases[i].f : "(none)",
			      cases[i].path ? cases[i].path : "(none)", rc ? "refused" : fmt->name,
			      cases[i].want);
	}
}
END_TEST

/* The format a file holds, by reading it back; "svg", "speedscope" and
 * "chrometrace" by their first bytes. */
static const char *format_of(const char *data, size_t len)
{
	struct profile q;
	enum profile_format fmt;
	static char err[256];	/* returned when the file cannot be read */

	if (len > 5 && !strncmp(data, "<?xml", 5))
		return "flamegraph";
	if (len > 1 && data[0] == '{')
		return strstr(data, "traceEvents") ? "chrometrace" : "speedscope";
	if (profile_read_mem(data, len, "out", &q, &fmt, err, sizeof(err)) < 0)
		return err;
	profile_free(&q);
	if (fmt == PROFILE_PPROF)
		return len > 2 && (unsigned char)data[0] == 0x1f ? "pprof" : "raw pprof";
	return "collapsed";
}

/* A file's bytes (binary too) and their count. */
static char *read_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	ck_assert_msg(f, "%s was not written", path);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	rewind(f);
	buf = xcalloc(1, *len + 1);
	ck_assert_uint_eq(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void merge_to(const char *dir, const char *in, const char *name, const char *want)
{
	char *out = xasprintf("%s/%s", dir, name), *data, why[64];
	struct run r;
	size_t len;

	ck_assert_int_eq(run_pystrobe(&r, "merge", "-q", "-o", out, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "merge -o %s: %s; %s", name,
		      run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
	data = read_bytes(out, &len);
	ck_assert_msg(!strcmp(format_of(data, len), want), "merge -o %s wrote %s, not %s", name,
		      format_of(data, len), want);
	free(data);
	free(out);
}

START_TEST(test_format_from_name)
{
	char *dir = test_tmpdir("check_outnames");
	char *in = test_file(dir, "in.txt", "main;work 7\nmain;rest 3\n");
	char *out = xasprintf("%s/o.svg", dir), why[64];
	struct run r;

	merge_to(dir, in, "a.pb.gz", "pprof");
	merge_to(dir, in, "a.svg", "flamegraph");
	merge_to(dir, in, "a.folded", "collapsed");
	merge_to(dir, in, "a.json", "speedscope");
	merge_to(dir, in, "a.out", "flamegraph");
	/* A contradiction: one line, exit 2, nothing written. */
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "pprof", "-o", out, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 2, "%s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "contradicts"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(access(out, F_OK), -1);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-f", "pprof", "-o", out, "--pid", "1", NULL),
			 0);
	ck_assert_msg(run_exit(&r) == 2, "record: %s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "contradicts"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "diff", "-o", "x.pb.gz", in, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 2, "diff: %s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "cannot show a difference"), "%s",
		      r.err);
	run_free(&r);
	free(out);
	free(in);
	test_rmdir(dir);
	free(dir);
}
END_TEST

START_TEST(test_stdout)
{
	char *dir = test_tmpdir("check_outnames");
	char *in = test_file(dir, "in.txt", "main;work 7\nmain;rest 3\n");
	char why[64];
	struct run r;

	ck_assert_int_eq(access("-", F_OK), -1);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "collapsed", "-o", "-", in, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s; %s", run_describe(&r, why, sizeof(why)), r.err);
	ck_assert_str_eq(r.out, "main;rest 6\nmain;work 14\n");
	ck_assert_msg(strstr(r.err, "wrote standard output"), "%s", r.err);
	run_free(&r);
	ck_assert_msg(access("-", F_OK) == -1, "a file named '-' was written");
	/* diff: the SVG alone on standard output, no summary in it. */
	ck_assert_int_eq(run_pystrobe(&r, "diff", "-o", "-", in, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s; %s", run_describe(&r, why, sizeof(why)), r.err);
	ck_assert_msg(!strncmp(r.out, "<?xml", 5) && !strstr(r.out, "Deltas are in") &&
		      strstr(r.out, "</svg>"), "%.200s", r.out);
	run_free(&r);
	ck_assert_msg(access("-", F_OK) == -1, "a file named '-' was written");
	free(in);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* An output that is there and is not a plain file is written in place,
 * never replaced by a new file renamed over it (record -o /dev/null once
 * left a plain file at /dev/null): a symbolic link keeps pointing at its
 * file, a FIFO stays a FIFO and its reader gets the profile. */
START_TEST(test_in_place)
{
	char *dir = test_tmpdir("check_outnames");
	char *in = test_file(dir, "in.txt", "main;work 7\n");
	char *real = test_file(dir, "real.txt", "old\n");
	char link[PATH_MAX], fifo[PATH_MAX], got[PATH_MAX], why[64], *text;
	struct stat st;
	struct run r;
	int status;
	pid_t pid;

	snprintf(link, sizeof(link), "%s/link.txt", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(got, sizeof(got), "%s/got.txt", dir);
	ck_assert_int_eq(symlink("real.txt", link), 0);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "collapsed", "-o", link, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s; %s", run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
	ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	text = test_slurp(real);
	ck_assert_str_eq(text, "main;work 7\n");
	free(text);

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		char buf[256];
		int fd = open(fifo, O_RDONLY), out = open(got, O_WRONLY | O_CREAT, 0600);
		ssize_t n;

		while (fd >= 0 && out >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				_exit(1);
		_exit(fd < 0 || out < 0);
	}
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "collapsed", "-o", fifo, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s; %s", run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
	ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	text = test_slurp(got);
	ck_assert_str_eq(text, "main;work 7\n");
	free(text);
	free(real);
	free(in);
	test_rmdir(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outnames");
	TCase *tc = tcase_create("outnames");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_settle);
	tcase_add_test(tc, test_format_from_name);
	tcase_add_test(tc, test_stdout);
	tcase_add_test(tc, test_in_place);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
