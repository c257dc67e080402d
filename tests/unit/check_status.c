/* Tests for the error convention of src/util/status.h: a verdict that must
 * reach the user as an exit status (status_fail()) and a negative errno
 * share a function's negative int, and must never be taken for each other.
 *
 * The values: no status_fail() is any -errno; exit_code() maps each kind
 * to the status the man pages give.  The table: exit_statuses[i] is code i.
 * The sources: no file of src/ or interp/ negates an exit code by hand
 * (that gave -ENOENT for EXIT_USAGE, -EPERM for EXIT_ERROR, -EIO for
 * EXIT_NOT_PYTHON), and none sets errno to return -1 (which reads as
 * -EPERM).  A few paths that used to return such values, on fake memory,
 * with the status their callers now give.  And the output and input
 * paths end to end: the writers, the readers, and the exit status each
 * command ends with.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakepy.h"
#include "folded.h"
#include "interp/layout.h"
#include "interpreters.h"
#include "process/mem.h"
#include "process/proc.h"
#include "profile/flightrec.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "python/asyncio.h"
#include "python/locate.h"
#include "cmd/snapshot.h"
#include "sample_profile.h"
#include "target.h"
#include "util/status.h"
#include "util/util.h"
#include "suite.h"

/* The kernel's errno values stop at MAX_ERRNO. */
#define MAX_ERRNO 4095

/* --- the values ------------------------------------------------------------ */

START_TEST(test_no_collision)
{
	for (int code = 1; code < EXIT_NR; code++) {
		ck_assert_msg(status_fail(code) < 0, "status_fail(%d) = %d", code, status_fail(code));
		ck_assert_msg(is_status_fail(status_fail(code)), "status_fail(%d)", code);
		for (int e = 1; e <= MAX_ERRNO; e++)
			if (status_fail(code) == -e)
				ck_abort_msg("status_fail(%d) is -%d (%s)", code, e, strerror(e));
	}
	for (int e = 1; e <= MAX_ERRNO; e++)
		if (is_status_fail(-e))
			ck_abort_msg("-%d (%s) reads as a status_fail()", e, strerror(e));
	/* Around the range: nothing else is one. */
	ck_assert(!is_status_fail(0));
	ck_assert(!is_status_fail(1));
	ck_assert(!is_status_fail(INT_MIN));
	ck_assert(!is_status_fail(-STATUS_BASE));
	ck_assert(!is_status_fail(status_fail(EXIT_NR)));
}
END_TEST

START_TEST(test_is_fail)
{
	for (int code = 1; code < EXIT_NR; code++)
		for (int other = 1; other < EXIT_NR; other++)
			ck_assert_int_eq(is_fail(status_fail(code), other), code == other);
	/* The errno that a bare negation of the code would have been. */
	ck_assert(!is_fail(-ENOENT, EXIT_USAGE));
	ck_assert(!is_fail(-EPERM, EXIT_ERROR));
	ck_assert(!is_fail(-ESRCH, EXIT_NO_PROCESS));
	ck_assert(!is_fail(-EIO, EXIT_NOT_PYTHON));
}
END_TEST

START_TEST(test_exit_code)
{
	for (int code = 1; code < EXIT_NR; code++)
		ck_assert_int_eq(exit_code(status_fail(code)), code);
	/* The errnos, as status.h documents them. */
	ck_assert_int_eq(exit_code(-EPERM), EXIT_PERMISSION);
	ck_assert_int_eq(exit_code(-EACCES), EXIT_PERMISSION);
	ck_assert_int_eq(exit_code(-ESRCH), EXIT_EXITED);
	ck_assert_int_eq(exit_code(-EIO), EXIT_BAD_STATE);
	ck_assert_int_eq(exit_code(-EFAULT), EXIT_BAD_STATE);
	ck_assert_int_eq(exit_code(-ENOENT), EXIT_BAD_STATE);
	for (int e = 1; e <= MAX_ERRNO; e++)
		ck_assert_int_eq(exit_code(-e), exit_code_for_errno(-e));
	/* Anything not negative is success. */
	ck_assert_int_eq(exit_code(0), EXIT_OK);
	ck_assert_int_eq(exit_code(1), EXIT_OK);
	ck_assert_int_eq(exit_code(INT_MAX), EXIT_OK);
}
END_TEST

/* --- the table ------------------------------------------------------------- */

START_TEST(test_table)
{
	for (int i = 0; i < EXIT_NR; i++) {
		ck_assert_msg(exit_statuses[i].code == i, "exit_statuses[%d].code is %d", i,
			      exit_statuses[i].code);
		ck_assert_msg(exit_statuses[i].brief && exit_statuses[i].brief[0],
			      "exit status %d has no brief", i);
		ck_assert_msg(exit_statuses[i].meaning && exit_statuses[i].meaning[0],
			      "exit status %d has no meaning", i);
	}
}
END_TEST

/* --- the sources ----------------------------------------------------------- */

/* The form that must not come back, written so that this file does not
 * hold it (in case the scan ever reaches tests/). */
static const char bad[] = "-" "EXIT_";

struct scan {
	int files;
	bool saw_status_h;
	struct strbuf found;	/* "path:line: text" for each hit */
	struct strbuf errno_set;	/* the same, for errno set to return -1 */
};

/* Where a function stands in for libc's own, whose contract is -1 with
 * errno set. */
static const char *const libc_contract[] = { "/src/util/sigmask.c" };

/* "errno = X;" and, on the next line that is not blank, "return -1;":
 * the -1-with-errno convention, which reads as -EPERM to exit_code(). */
static bool sets_errno_for_minus_one(const char *path, const char *prev, const char *line)
{
	for (size_t i = 0; i < sizeof(libc_contract) / sizeof(libc_contract[0]); i++)
		if (strstr(path, libc_contract[i]))
			return false;
	return prev && strstr(prev, "errno = ") && strstr(line, "return -1;");
}

static bool build_output(const char *name)
{
	size_t n = strlen(name);

	return (n > 2 && (!strcmp(name + n - 2, ".o") || !strcmp(name + n - 2, ".a"))) ||
	       (n > 4 && !strcmp(name + n - 4, ".obj"));
}

static void scan_file(struct scan *sc, const char *path)
{
	size_t len = 0;
	char *text = read_file(path, &len), *line, *prev = NULL, *save = NULL;
	int lineno = 0;

	ck_assert_msg(text, "cannot read %s: %s", path, strerror(errno));
	sc->files++;
	if (strstr(path, "/src/util/status.h"))
		sc->saw_status_h = true;
	/* One line at a time, for the line number; a NUL ends the scan of
	 * a binary file, which has no source in it. */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (strstr(line, bad))
			sb_printf(&sc->found, "%s:%d: %s\n", path, lineno, line);
		if (sets_errno_for_minus_one(path, prev, line))
			sb_printf(&sc->errno_set, "%s:%d: %s\n", path, lineno, line);
		prev = line;
	}
	free(text);
}

static void scan_dir(struct scan *sc, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	ck_assert_msg(d, "cannot open %s: %s (is srcdir set?)", dir, strerror(errno));
	while ((e = readdir(d))) {
		char *path;
		struct stat st;

		if (e->d_name[0] == '.' || build_output(e->d_name))
			continue;	/* also .deps and .dirstamp of an in-tree build */
		path = xasprintf("%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			scan_dir(sc, path);
		else if (S_ISREG(st.st_mode))
			scan_file(sc, path);
		free(path);
	}
	closedir(d);
}

START_TEST(test_no_negated_exit_codes)
{
	static const char *const dirs[] = { "src", "interp" };
	struct scan sc = { 0, false, STRBUF_INIT, STRBUF_INIT };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *dir = xasprintf("%s/%s", test_srcdir(), dirs[i]);

		scan_dir(&sc, dir);
		free(dir);
	}
	/* A scan that found nothing to read proves nothing. */
	ck_assert_msg(sc.saw_status_h && sc.files > 50, "scanned %d files under %s, not the sources",
		      sc.files, test_srcdir());
	ck_assert_msg(sc.found.len == 0,
		      "an exit code negated by hand collides with -errno (-ENOENT, -EPERM, -EIO...): "
		      "return status_fail(EXIT_X), test is_fail(rc, EXIT_X), map with exit_code(rc):\n%s",
		      sc.found.buf);
	ck_assert_msg(sc.errno_set.len == 0,
		      "-1 with errno set reads as -EPERM: return -errno, or status_fail(EXIT_X) "
		      "once the user has been told:\n%s", sc.errno_set.buf);
	sb_release(&sc.found);
	sb_release(&sc.errno_set);
}
END_TEST

/* --- paths that used to return a negated code ------------------------------ */

/* No interpreter among the mappings: not Python, exit 5.  The value this
 * returned before was -5, which is -EIO: exit_code_for_errno() reads that
 * as unreadable state (8). */
START_TEST(test_locate_not_python)
{
	struct proc_maps none = { 0 };
	struct locate_src src = { .what = "the fake process", .maps = &none };
	struct mem *m = mem_fake_new();
	struct pyinterp pi;
	char err[256] = "";
	int rc = locate_python(&src, m, &pi, err, sizeof(err));

	ck_assert(is_fail(rc, EXIT_NOT_PYTHON));
	ck_assert_int_ne(rc, -EIO);
	ck_assert_int_eq(exit_code(rc), EXIT_NOT_PYTHON);
	ck_assert_msg(strstr(err, "not a Python process"), "%s", err);
	mem_close(m);
}
END_TEST

/* _Py_DebugOffsets that cannot be read: unreadable state, exit 8. */
START_TEST(test_debug_offsets_unreadable)
{
	struct mem *m = mem_fake_new();
	struct py_layout L;
	char err[256] = "";
	int rc = debug_offsets_layout(m, 0x7f0000001000ull, &L, err, sizeof(err));

	ck_assert_msg(is_status_fail(rc), "%d", rc);
	ck_assert_int_eq(exit_code(rc), EXIT_BAD_STATE);
	ck_assert(err[0]);
	mem_close(m);
}
END_TEST

/* No such process: exit 3.  Negated, EXIT_NO_PROCESS was -ESRCH, which
 * exit_code_for_errno() reads as a process that exited (7). */
START_TEST(test_no_process)
{
	ck_assert(is_fail(proc_check(-1), EXIT_NO_PROCESS));
	ck_assert_int_eq(exit_code(proc_check(-1)), EXIT_NO_PROCESS);
	ck_assert_int_eq(exit_code(proc_check(0)), EXIT_NO_PROCESS);
	ck_assert_int_eq(exit_code(proc_check(getpid())), EXIT_OK);
}
END_TEST

/* dump --core on what is no core: exit 10, by the mapping dump makes
 * (negated, EXIT_BAD_CORE was -ECHILD). */
START_TEST(test_core_unreadable)
{
	static const char *const paths[] = { "/nonexistent/core", "/dev/null" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct core_opts co = { .path = paths[i] };
		struct snapshot_opts so = { 0 };
		struct snapshot s;
		char err[512] = "";
		int rc = snapshot_take(0, &co, &so, &s, err, sizeof(err));

		ck_assert_msg(is_fail(rc, EXIT_BAD_CORE), "%s: %d (%s)", paths[i], rc, err);
		ck_assert_int_eq(exit_code(rc), EXIT_BAD_CORE);
		ck_assert_msg(strstr(err, paths[i]), "%s", err);
	}
}
END_TEST

/* asyncio not imported is no failure at all (it was -ENOENT, which is
 * -EXIT_USAGE): ASYNCIO_NOT_IMPORTED, with the reason for the note, on a
 * version read through the _asyncio section (3.14) and on one read
 * through asyncio.tasks (3.12). */
START_TEST(test_asyncio_not_imported)
{
	static const int minors[] = { 12, 14 };

	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		struct fakepy *fp = fp_new(layout_for_minor(minors[i]));
		struct proc_maps none = { 0 };
		struct locate_src src = { .what = "the fake process", .maps = &none };
		struct asyncio_layout A;
		struct pyinterp pi;
		struct mem *m = fp_mem(fp);
		char err[256] = "";
		int rc;

		fp_pyinterp(fp, &pi);
		rc = asyncio_locate(&src, m, &pi, &A, err, sizeof(err));
		ck_assert_msg(rc == ASYNCIO_NOT_IMPORTED, "3.%d: %d (%s)", minors[i], rc, err);
		ck_assert_msg(strstr(err, "imported asyncio"), "3.%d: %s", minors[i], err);
		mem_close(m);
		fp_free(fp);
	}
}
END_TEST

/* A version whose tasks cannot be read: unsupported, exit 6. */
START_TEST(test_asyncio_unsupported)
{
	struct fakepy *fp = fp_new(layout_for_minor(10));
	struct proc_maps none = { 0 };
	struct locate_src src = { .what = "the fake process", .maps = &none };
	struct asyncio_layout A;
	struct pyinterp pi;
	struct mem *m = fp_mem(fp);
	char err[256] = "";
	int rc;

	fp_pyinterp(fp, &pi);
	rc = asyncio_locate(&src, m, &pi, &A, err, sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_UNSUPPORTED), "%d (%s)", rc, err);
	ck_assert_int_eq(exit_code(rc), EXIT_UNSUPPORTED);
	mem_close(m);
	fp_free(fp);
}
END_TEST

/* --- the output and input paths -------------------------------------------- */

/* What the writers, the readers and the commands' file handling return:
 * -errno from a stream or a system call, status_fail() once the user has
 * been told; never -1 with errno set (-1 is -EPERM, a permission problem
 * to exit_code()).  Driven through their error paths: a full disk
 * (/dev/full), a missing directory, a directory for a file, a bad format
 * name, and every cut and damaged form of a recording and a pprof file. */

/* The profile the writers are given. */
static const struct out_opts plain = { .full_filenames = false };

START_TEST(test_writers_full_disk)
{
	struct profile p;

	sample_profile(&p, false);
	for (const struct out_format *fmt = out_formats; fmt->name; fmt++) {
		FILE *f = fopen("/dev/full", "w");
		int rc;

		ck_assert_msg(f, "/dev/full: %s", strerror(errno));
		rc = fmt->write(&p, f, &plain);
		fclose(f);
		ck_assert_msg(rc == -ENOSPC, "%s on a full disk: %d", fmt->name, rc);
	}
	profile_free(&p);
}
END_TEST

static int fill_nothing(FILE *f, void *arg)
{
	(void)f;
	return *(int *)arg;
}

/* The file the writers are given cannot be made or written: exit 1, the
 * message said. */
START_TEST(test_write_file_fails)
{
	static const char *const paths[] = { "/nonexistent-dir/p.svg", "/dev/full", "/" };
	char *dir = test_tmpdir("check_status"), *path = xasprintf("%s/p.svg", dir);
	const struct out_format *fmt = out_format_find("flamegraph");
	int eio = -EIO, ok = 0;
	struct profile p;
	DIR *d;

	sample_profile(&p, false);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int rc = out_write_file(fmt, &p, &plain, paths[i], "test");

		ck_assert_msg(is_fail(rc, EXIT_ERROR), "%s: %d", paths[i], rc);
		ck_assert_int_eq(exit_code(rc), EXIT_ERROR);
	}
	/* Beneath it, the errno itself; a fill that fails leaves nothing. */
	ck_assert_int_eq(out_write_atomic(paths[0], NULL, fill_nothing, &ok), -ENOENT);
	ck_assert_int_eq(out_write_atomic(path, NULL, fill_nothing, &eio), -EIO);
	ck_assert_int_eq(out_write_atomic("/dev/full/x", NULL, fill_nothing, &ok), -ENOTDIR);
	d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		ck_assert_msg(e->d_name[0] == '.', "%s left in %s", e->d_name, dir);
	closedir(d);
	ck_assert_int_eq(out_write_file(fmt, &p, &plain, path, "test"), 0);
	profile_free(&p);
	free(path);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* Before a recording: a path that will not take the profile is the
 * command line's mistake, exit 2. */
START_TEST(test_output_refused)
{
	const struct out_format *fmt;
	int rc;

	ck_assert_int_eq(out_probe("/nonexistent-dir/p"), -ENOENT);
	ck_assert_int_eq(out_probe("/dev/full/p"), -ENOTDIR);
	ck_assert_int_eq(out_probe("/tmp/p"), 0);
	rc = out_check_path("/nonexistent-dir/p.svg", "test");
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d", rc);
	rc = out_check_path("/", "test");
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d", rc);
	rc = out_format_choose("test", "nosuch", NULL, &fmt);
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d", rc);
	rc = out_format_choose("test", "pprof", "p.svg", &fmt);
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d", rc);
	ck_assert_int_eq(exit_code(rc), EXIT_USAGE);
	ck_assert(is_fail(usage_error("test", "a bad command line"), EXIT_USAGE));
}
END_TEST

/* Every prefix of data and every byte of it flipped: 0 (what was left
 * still reads) or a file that does not read, exit 9; nothing else. */
typedef int (*parse_fn)(const char *data, size_t len);

static void damage(const char *what, const char *data, size_t len, parse_fn parse)
{
	char *copy = xmalloc(len ? len : 1);
	int failed = 0;

	for (size_t n = 0; n < len; n++) {
		int rc = parse(data, n);

		ck_assert_msg(rc == 0 || is_fail(rc, EXIT_BAD_INPUT), "%s cut at %zu: %d", what,
			      n, rc);
		failed += rc != 0;
	}
	for (size_t i = 0; i < len; i++) {
		int rc;

		memcpy(copy, data, len);
		copy[i] ^= 0x5a;
		rc = parse(copy, len);
		ck_assert_msg(rc == 0 || is_fail(rc, EXIT_BAD_INPUT), "%s, byte %zu flipped: %d",
			      what, i, rc);
	}
	/* Proof that the error paths ran. */
	ck_assert_msg(failed > 0, "%s: no cut failed", what);
	free(copy);
}

static int parse_recording(const char *data, size_t len)
{
	struct profile p;
	char err[256];
	int rc = flightrec_parse(data, len, NULL, &p, NULL, err, sizeof(err));

	profile_free(&p);
	return rc;
}

static int parse_profile(const char *data, size_t len)
{
	struct profile p;
	char err[PROFILE_READ_ERR];
	int rc = profile_read_mem(data, len, "test", &p, NULL, err, sizeof(err));

	if (rc == 0)
		profile_free(&p);
	return rc;
}

/* A recording of a few samples, as the file holds it decompressed. */
static struct flightrec *small_recording(void)
{
	struct flightrec *fr = flightrec_new(3600ull * 1000000000, 1 << 20);
	struct pframe frames[] = {
		{ PF_PYTHON, "main", "app.py", 3, 1 },
		{ PF_PYTHON, "work", "app.py", 9, 8 },
	};

	for (int i = 0; i < 4; i++)
		flightrec_add(fr, 1700000000000000000ull + i * 10000000ull, 10, 10 + i % 2, "main",
			      "python app.py", frames, 1 + i % 2, i % 2 ? "gpu" : NULL);
	return fr;
}

START_TEST(test_recording_errors)
{
	struct flightrec *fr = small_recording();
	struct flightrec_slice none = { INT64_MIN, INT64_MIN + 1 };
	char *dir = test_tmpdir("check_status"), *path = xasprintf("%s/rec", dir), err[512];
	struct flightrec_info info;
	struct profile p;
	size_t len, rawlen;
	char *data, *raw;
	int rc;

	rc = flightrec_write(fr, "/nonexistent-dir/rec", 0, err, sizeof(err));
	ck_assert_msg(rc == -ENOENT && strstr(err, "/nonexistent-dir/rec"), "%d: %s", rc, err);
	rc = flightrec_profile(fr, 0, &none, &p);
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d", rc);
	ck_assert_int_eq(flightrec_write(fr, path, 0, err, sizeof(err)), 0);
	rc = profile_read_slice(path, &none, &info, &p, NULL, err, sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "%d: %s", rc, err);
	data = read_file(path, &len);
	ck_assert(data);
	raw = test_gunzip(data, len, &rawlen);
	damage("a recording", raw, rawlen, parse_recording);
	damage("a gzip-compressed recording", data, len, parse_profile);
	free(raw);
	free(data);
	free(path);
	test_rmdir(dir);
	free(dir);
	flightrec_free(fr);
}
END_TEST

START_TEST(test_reader_errors)
{
	static const struct { const char *data; size_t len; } inputs[] = {
		{ "", 0 },
		{ "\0\1\2binary", 9 },
		{ "main;work notanumber\n", 21 },
		{ "main;work -3\n", 13 },
		{ "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n", 47 },
		{ "{\"shared\": {\"frames\": []}}\n", 27 },
		{ "\x1f\x8b\x08\0\0\0\0\0\0\3garbage", 18 },
	};
	struct flightrec_slice all = FLIGHTREC_ALL;
	struct flightrec_info info;
	char *text = NULL, *raw, err[PROFILE_READ_ERR];
	size_t len = 0, rawlen;
	struct profile p;
	FILE *m;
	int rc;

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		rc = parse_profile(inputs[i].data, inputs[i].len);
		ck_assert_msg(is_fail(rc, EXIT_BAD_INPUT), "input %zu: %d", i, rc);
		ck_assert_int_eq(exit_code(rc), EXIT_BAD_INPUT);
	}
	rc = profile_read("/nonexistent-dir/p.svg", &p, NULL, err, sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_BAD_INPUT), "%d", rc);
	rc = profile_read("/", &p, NULL, err, sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_BAD_INPUT), "%d", rc);
	rc = profile_read_slice_mem("main;work 3\n", 12, "test", &all, &info, &p, NULL, err,
				    sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_USAGE), "a slice of folded text: %d", rc);
	/* pprof: every cut and flipped byte of one. */
	sample_profile(&p, true);
	m = open_memstream(&text, &len);
	ck_assert_int_eq(out_pprof(&p, m, &plain), 0);
	fclose(m);
	profile_free(&p);
	raw = test_gunzip(text, len, &rawlen);
	damage("a pprof profile", raw, rawlen, parse_profile);
	free(raw);
	free(text);
}
END_TEST

/* The exit statuses the commands end with, from the binary. */
START_TEST(test_command_exits)
{
	char *dir = test_tmpdir("check_status"), *in = xasprintf("%s/in.txt", dir);
	char *garbage = xasprintf("%s/bad.txt", dir), why[64];
	static const char folded[] = "main;work 3\nmain;idle 1\n";
	struct {
		const char *args[8];
		int want;
	} cases[] = {
		{ { "convert", "-q", "/nonexistent-dir/p.svg" }, EXIT_BAD_INPUT },
		{ { "convert", "-q", garbage }, EXIT_BAD_INPUT },
		{ { "convert", "-q", "-o", "/nonexistent-dir/p.svg", in }, EXIT_ERROR },
		{ { "convert", "-q", "-o", "/dev/full", in }, EXIT_ERROR },
		{ { "convert", "-q", "--from", "-1", in }, EXIT_USAGE },
		{ { "convert", "-q", "-f", "chrometrace", "-o", "-", in }, EXIT_USAGE },
		{ { "convert", "-q", "-f", "nosuch", in }, EXIT_USAGE },
		{ { "merge", "-q", "-o", "/dev/full", in, in }, EXIT_ERROR },
		{ { "merge", "-q", in, garbage }, EXIT_BAD_INPUT },
		{ { "diff", "-q", "-o", "/nonexistent-dir/d.svg", in, in }, EXIT_ERROR },
		{ { "diff", "-q", garbage, in }, EXIT_BAD_INPUT },
		{ { "record", "-o", "/nonexistent-dir/p.svg", "--pid", "1" }, EXIT_USAGE },
		{ { "watch", "-D", "/dev/full/x", "--pid", "1" }, EXIT_USAGE },
		{ { "group", garbage }, EXIT_BAD_INPUT },	/* JSON, not a dump */
		{ { "group", in }, EXIT_BAD_INPUT },		/* not JSON */
		{ { "group", "/nonexistent-dir/d.json" }, EXIT_BAD_INPUT },
		{ { "group" }, EXIT_USAGE },
		{ { "group", "--bogus", in }, EXIT_USAGE },
	};

	ck_assert_int_eq(write_file(in, folded, strlen(folded)), 0);
	ck_assert_int_eq(write_file(garbage, "{}\n", 3), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].args;
		struct run r;

		ck_assert_int_eq(run_pystrobe(&r, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
					      NULL), 0);
		ck_assert_msg(run_exit(&r) == cases[i].want, "pystrobe %s %s %s %s: %s, not exit %d:"
			      " %s", a[0], a[1], a[2], a[3] ? a[3] : "",
			      run_describe(&r, why, sizeof(why)), cases[i].want, r.err);
		ck_assert_msg(run_one_error_line(&r), "pystrobe %s %s %s: %s", a[0], a[1], a[2],
			      r.err);
		run_free(&r);
	}
	free(in);
	free(garbage);
	test_rmdir(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("values");

	tcase_add_test(tc, test_no_collision);
	tcase_add_test(tc, test_is_fail);
	tcase_add_test(tc, test_exit_code);
	tcase_add_test(tc, test_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("sources");
	tcase_add_test(tc, test_no_negated_exit_codes);
	suite_add_tcase(s, tc);
	tc = tcase_create("paths");
	tcase_add_test(tc, test_locate_not_python);
	tcase_add_test(tc, test_debug_offsets_unreadable);
	tcase_add_test(tc, test_no_process);
	tcase_add_test(tc, test_core_unreadable);
	tcase_add_test(tc, test_asyncio_not_imported);
	tcase_add_test(tc, test_asyncio_unsupported);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, test_writers_full_disk);
	tcase_add_test(tc, test_write_file_fails);
	tcase_add_test(tc, test_output_refused);
	tcase_add_test(tc, test_recording_errors);
	tcase_add_test(tc, test_reader_errors);
	tcase_add_test(tc, test_command_exits);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
