/* Tests for the error convention of src/util/status.h: a verdict that must
 * reach the user as an exit status (status_fail()) and a negative errno
 * share a function's negative int, and must never be taken for each other.
 *
 * The values: no status_fail() is any -errno; exit_code() maps each kind
 * to the status the man pages give.  The table: exit_statuses[i] is code i.
 * The sources: no file of src/ or interp/ negates an exit code by hand
 * (that gave -ENOENT for EXIT_USAGE, -EPERM for EXIT_ERROR, -EIO for
 * EXIT_NOT_PYTHON).  And a few paths that used to return such values,
 * on fake memory, with the status their callers now give.
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
#include "interp/layout.h"
#include "interpreters.h"
#include "process/mem.h"
#include "process/proc.h"
#include "python/asyncio.h"
#include "python/locate.h"
#include "cmd/snapshot.h"
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
};

static bool build_output(const char *name)
{
	size_t n = strlen(name);

	return (n > 2 && (!strcmp(name + n - 2, ".o") || !strcmp(name + n - 2, ".a"))) ||
	       (n > 4 && !strcmp(name + n - 4, ".obj"));
}

static void scan_file(struct scan *sc, const char *path)
{
	size_t len = 0;
	char *text = read_file(path, &len), *line, *save = NULL;
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
	struct scan sc = { 0, false, STRBUF_INIT };

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
	sb_release(&sc.found);
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
	int rc = locate_python_in(&src, m, &pi, err, sizeof(err));

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
		int rc = snapshot_core(&co, &so, &s, err, sizeof(err));

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
		rc = asyncio_locate_in(&src, m, &pi, &A, err, sizeof(err));
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
	rc = asyncio_locate_in(&src, m, &pi, &A, err, sizeof(err));
	ck_assert_msg(is_fail(rc, EXIT_UNSUPPORTED), "%d (%s)", rc, err);
	ck_assert_int_eq(exit_code(rc), EXIT_UNSUPPORTED);
	mem_close(m);
	fp_free(fp);
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
	return run_suite(s);
}
