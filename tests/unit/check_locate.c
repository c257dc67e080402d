/* Tests for finding the interpreter that need no interpreter: versions
 * from file names, and _Py_DebugOffsets that cannot be read.  The real
 * tables, damaged field by field, ELF load biases and a live process are
 * live/check_locate_real.c.
 */
#include <check.h>

#include "interp/layout.h"
#include "python/locate.h"
#include "process/mem.h"
#include "suite.h"

#define RUNTIME 0x7f0000001000ull

START_TEST(test_unreadable)
{
	struct mem *m = mem_fake_new();
	struct py_layout L;
	char err[256];

	ck_assert_int_lt(debug_offsets_layout(m, RUNTIME, &L, err, sizeof(err)), 0);
	mem_close(m);
}
END_TEST

START_TEST(test_version_from_filename)
{
	ck_assert_int_eq(version_from_filename("/usr/lib/libpython3.12.so.1.0"), 12);
	ck_assert_int_eq(version_from_filename("/usr/bin/python3.9"), 9);
	ck_assert_int_eq(version_from_filename("/x/libpython3.7m.so.1.0"), 7);
	ck_assert_int_eq(version_from_filename("/usr/bin/python"), -1);
	ck_assert_int_eq(version_from_filename("/opt/python3.x/bin/app"), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("locate");
	TCase *tc = tcase_create("debug_offsets");

	tcase_add_test(tc, test_unreadable);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, test_version_from_filename);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
