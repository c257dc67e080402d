/* Where and in which format the profile commands write.
 *
 *  - Without -f the format is the one -o's ending stands for (.svg,
 *    .txt/.collapsed/.folded, .json/.speedscope.json, .trace.json,
 *    .pb.gz/.pprof/.pprof.gz, any case); -f that contradicts the ending is
 *    a usage error (exit 2, one line) and nothing is written; no ending,
 *    or one that names no format (x.out), leaves -f or the default
 *    (flamegraph), which a line then says (not with -f, -o -, /dev/null);
 *    an ending of a file of another kind (.png, .html, .py...) is refused
 *    with -f or without, in one line that lists our formats' endings.
 *  - A path no file can be made in is refused with the real reason: no
 *    such directory, a file system that makes none (/proc: ENOENT, /sys:
 *    EACCES even for root), no permission (a directory of root's, for
 *    nobody), not a directory.
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

/* What stderr gets from here to capture_end(). */
struct capture {
	FILE *tmp;
	int saved;
};

static void capture_start(struct capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	ck_assert(c->tmp);
	c->saved = dup(2);
	dup2(fileno(c->tmp), 2);
}

/* What was said, a new string. */
static char *capture_end(struct capture *c)
{
	char *buf = xcalloc(1, 4096);

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->tmp);
	buf[fread(buf, 1, 4095, c->tmp)] = '\0';
	fclose(c->tmp);
	return buf;
}

START_TEST(test_settle)
{
	static const struct {
		const char *f, *path, *want;	/* want NULL: a usage error */
		/* In what is said: for a usage error, in its one line; else
		 * in the one line that says the format was not chosen (NULL:
		 * nothing may be said). */
		const char *said;
	} cases[] = {
		{ NULL, NULL, "flamegraph", NULL },
		{ NULL, "-", "flamegraph", NULL },
		{ "pprof", "-", "pprof", NULL },
		{ NULL, "prof.pb.gz", "pprof", NULL },
		{ NULL, "prof.PPROF", "pprof", NULL },
		{ NULL, "prof.pprof.gz", "pprof", NULL },
		{ NULL, "a/b.svg", "flamegraph", NULL },
		{ NULL, "x.txt", "collapsed", NULL },
		{ NULL, "x.folded", "collapsed", NULL },
		{ NULL, "x.collapsed", "collapsed", NULL },
		{ NULL, "x.json", "speedscope", NULL },
		{ NULL, "x.speedscope.json", "speedscope", NULL },
		{ NULL, "x.trace.json", "chrometrace", NULL },
		{ "chrometrace", "x.json", "chrometrace", NULL },
		{ "speedscope", "x.json", "speedscope", NULL },
		{ "collapsed", "x.out", "collapsed", NULL },
		{ "pprof", "x.svg", NULL, "contradicts" },
		{ "flamegraph", "x.pb.gz", NULL, "contradicts" },
		{ "chrometrace", "x.speedscope.json", NULL, NULL },
		{ "speedscope", "x.trace.json", NULL, NULL },
		{ "collapsed", "x.json", NULL, NULL },
		{ "nosuch", NULL, NULL, "unknown format" },
		/* svg is what a flame graph is, and its files' ending */
		{ "svg", NULL, "flamegraph", NULL },
		{ "svg", "x.svg", "flamegraph", NULL },
		{ "svg", "x.pb.gz", NULL, NULL },
		/* No ending, or one that names no format: a flame graph, said;
		 * -f names it, silently. */
		{ NULL, "x.out", "flamegraph", ".out names no format, written as a flame graph" },
		{ NULL, "profile", "flamegraph", "no ending, written as a flame graph (SVG)" },
		{ NULL, "a.d/profile", "flamegraph", "-o a.d/profile: no ending" },
		{ NULL, "a/.profile", "flamegraph", "no ending" },
		{ "flamegraph", "profile", "flamegraph", NULL },
		{ "collapsed", "profile", "collapsed", NULL },
		/* There and no plain file: nobody opens it by its name. */
		{ NULL, "/dev/null", "flamegraph", NULL },
		/* A file of another kind: refused, -f or not, with our endings. */
		{ NULL, "x.png", NULL, "cannot write 'x.png': .png is an image" },
		{ NULL, "x.PNG", NULL, "an image, not a format pystrobe writes" },
		{ "flamegraph", "x.png", NULL, "an image" },
		{ NULL, "x.pdf", NULL, "a document" },
		{ NULL, "x.html", NULL, "flamegraph .svg, collapsed .collapsed .folded .txt" },
		{ "collapsed", "train.py", NULL, "Python source" },
		{ NULL, "p.prof", NULL, "pprof .pb.gz .pprof.gz .pprof" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *f = cases[i].f ? cases[i].f : "(none)";
		const char *path = cases[i].path ? cases[i].path : "(none)";
		const struct out_format *fmt = NULL;
		struct capture c;
		char *said;
		int rc;

		capture_start(&c);
		rc = out_format_choose("test", cases[i].f, cases[i].path, &fmt);
		said = capture_end(&c);
		if (!cases[i].want) {
			ck_assert_msg(is_fail(rc, EXIT_USAGE), "-f %s -o %s: accepted as %s", f, path,
				      fmt ? fmt->name : "?");
			ck_assert_msg(!strncmp(said, "pystrobe: test: ", 16) &&
				      strchr(said, '\n') == said + strlen(said) - 1,
				      "-f %s -o %s: not one line: %s", f, path, said);
		} else {
			ck_assert_msg(rc == 0 && fmt && !strcmp(fmt->name, cases[i].want),
				      "-f %s -o %s: %s, not %s", f, path, rc ? "refused" : fmt->name,
				      cases[i].want);
			ck_assert_msg(cases[i].said || !said[0], "-f %s -o %s: said %s", f, path, said);
		}
		ck_assert_msg(!cases[i].said || strstr(said, cases[i].said),
			      "-f %s -o %s: '%s' not said: %s", f, path, cases[i].said, said);
		free(said);
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
	char *out = xasprintf("%s/o.svg", dir), why[64], *png;
	char *noend = xasprintf("%s/profile2", dir);
	struct run r;

	merge_to(dir, in, "a.pb.gz", "pprof");
	merge_to(dir, in, "a.svg", "flamegraph");
	merge_to(dir, in, "a.folded", "collapsed");
	merge_to(dir, in, "a.json", "speedscope");
	merge_to(dir, in, "a.out", "flamegraph");
	merge_to(dir, in, "profile", "flamegraph");
	/* A contradiction: one line, exit 2, nothing written. */
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "pprof", "-o", out, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 2, "%s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "contradicts"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(access(out, F_OK), -1);
	/* An ending of another kind: refused with the list, nothing written. */
	png = xasprintf("%s/o.png", dir);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-o", png, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 2, "merge -o o.png: %s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "is an image") &&
		      strstr(r.err, "flamegraph .svg"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(access(png, F_OK), -1);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-o", png, "--pid", "1", NULL), 0);
	ck_assert_msg(run_exit(&r) == 2, "record -o o.png: %s", run_describe(&r, why,
										sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "is an image"), "%s", r.err);
	run_free(&r);
	free(png);
	/* No ending: a flame graph, and said so (merge_to() read it). */
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-o", noend, in, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0 && strstr(r.err, "no ending, written as a flame graph"),
		      "merge -o profile: %s: %s", run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
	free(noend);
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

/* out_check_path(path): refused, in one line that holds want. */
static void refused_for(const char *path, const char *want)
{
	struct capture c;
	char *said;
	int rc;

	capture_start(&c);
	rc = out_check_path(path, "test");
	said = capture_end(&c);
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%s: not refused", path);
	ck_assert_msg(strstr(said, want) && strchr(said, '\n') == said + strlen(said) - 1,
		      "-o %s: '%s' not said in one line: %s", path, want, said);
	free(said);
}

/* In a child as nobody (root drops to it): a directory that is not its to
 * write.  Exits 0 when the reason was given, 1 when not, 2 when it could
 * not become nobody. */
static int refused_as_nobody(const char *dir)
{
	char *path = xasprintf("%s/x.svg", dir);
	struct capture c;
	char *said;
	int rc;

	if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
		return 2;
	capture_start(&c);
	rc = out_check_path(path, "test");
	said = capture_end(&c);
	if (!is_fail(rc, EXIT_USAGE) || !strstr(said, "no permission to create a file in") ||
	    strstr(said, "there is no directory")) {
		fprintf(stderr, "as nobody: %s", said);
		return 1;
	}
	return 0;
}

START_TEST(test_unwritable)
{
	char *dir = test_tmpdir("check_outnames"), *sub = xasprintf("%s/ro", dir);
	int status;
	pid_t pid;

	/* ENOENT from mkstemp(), but /proc is there: not "no directory". */
	refused_for("/proc/x.svg", "'/proc' is in the proc file system, where no file can be "
		    "made");
	refused_for("/sys/x.svg", "'/sys' is in the sysfs file system");
	refused_for("/nonexistent-dir/x.svg", "there is no directory '/nonexistent-dir'");
	refused_for("/dev/null/x.svg", "'/dev/null' is not a directory");
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(chmod(sub, 0555), 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0)
		_exit(refused_as_nobody(sub));
	ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		test_skip("cannot become nobody: EACCES is not checked");
	else
		ck_assert_msg(WEXITSTATUS(status) == 0, "a directory not ours to write: the "
			      "reason is not given");
	chmod(sub, 0755);
	free(sub);
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
	tcase_add_test(tc, test_unwritable);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
