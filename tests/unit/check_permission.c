/* Tests for the permission message (src/process/permission.c): each thing
 * that can block ptrace is named for what it is, and root is never told
 * to run as root. */
#include <check.h>
#include <string.h>

#include "process/permission.h"
#include "suite.h"

#define SYS_PTRACE (1ull << 19)

static const struct {
	const char *what;
	pid_t pid;
	struct ptrace_facts f;
	const char *says;
} cases[] = {
	{ "traced already", 42, { .root = true, .our_caps = SYS_PTRACE, .tracer = 77 },
	  "process 77" },
	{ "a user, Yama 1", 42, { .yama = 1 }, "ptrace_scope" },
	{ "a user, no Yama", 42, { .yama = -1 }, "another user or is not dumpable" },
	{ "root without the capability", 42, { .root = true, .yama = -1 }, "--cap-add SYS_PTRACE" },
	{ "root, Yama 3", 42, { .root = true, .our_caps = SYS_PTRACE, .yama = 3 },
	  "ptrace_scope is 3" },
	{ "root under seccomp", 42, { .root = true, .our_caps = SYS_PTRACE, .yama = 1, .seccomp = 2 },
	  "seccomp=unconfined" },
	{ "root in a user namespace", 42,
	  { .root = true, .our_caps = SYS_PTRACE, .yama = -1, .in_userns = true },
	  "user namespace" },
	{ "root, pid 1", 1, { .root = true, .our_caps = SYS_PTRACE, .yama = -1 }, "the system's init" },
	{ "root, nothing seen", 42, { .root = true, .our_caps = SYS_PTRACE, .yama = 1 },
	  "security module" },
};

START_TEST(test_explain)
{
	char err[1024];

	permission_explain(cases[_i].pid, &cases[_i].f, err, sizeof(err));
	ck_assert_msg(!strncmp(err, "permission denied: ", 19), "%s: %s", cases[_i].what, err);
	ck_assert_msg(strstr(err, cases[_i].says), "%s: no \"%s\" in: %s", cases[_i].what,
		      cases[_i].says, err);
	ck_assert_msg(!strchr(err, '\n'), "%s: more than one line: %s", cases[_i].what, err);
	if (cases[_i].f.root)
		ck_assert_msg(!strstr(err, "run as root"), "%s: root told to run as root: %s",
			      cases[_i].what, err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("permission");
	TCase *tc = tcase_create("explain");

	tcase_add_loop_test(tc, test_explain, 0, sizeof(cases) / sizeof(*cases));
	suite_add_tcase(s, tc);
	return run_suite(s);
}
