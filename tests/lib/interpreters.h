/* The Python interpreters the tests run against.
 *
 * Tests run on every interpreter this machine has, and say which: a missing
 * one is reported loudly, never skipped in silence.
 */
#ifndef PYSTROBE_TEST_INTERPRETERS_H
#define PYSTROBE_TEST_INTERPRETERS_H

#include <limits.h>
#include <sys/types.h>

struct test_interp {
	char label[96];		/* e.g. "3.12.1 pyenv", "3.11 debian-static" */
	char path[PATH_MAX];	/* the program to run (inside root when root is set) */
	char root[PATH_MAX];	/* "" or the root directory it runs in (chroot) */
	char env[128];		/* "" or one NAME=VALUE added to its environment */
	int minor;		/* 3.minor */
};

/* Find every interpreter present: pyenv 3.7+, Debian's /usr/bin/python3.11,
 * Debian's 3.14, 3.15 and their debug builds in a debootstrap root of sid
 * (built on first use by tests/setup-sid-root.sh), a free-threaded 3.13t
 * (built on first use by tests/setup-ft-python.sh; a SKIP that says so
 * when it cannot be), a venv, a pyenv shim.  Prints the list, and what
 * is missing, to stderr.  Returns the count; *out is static storage. */
int test_interps(const struct test_interp **out);

/* Up to max plain interpreters (no root, no venv or shim), a 3.12 first,
 * then a 3.11, for tests whose point is not the sampler but what it
 * writes.  Prints them after who ("diff: ..."); returns how many. */
int test_interps_plain(const struct test_interp **chosen, int max, const char *who);

/* The indexes of the oldest and the newest interpreter among n (the
 * first found of each minor version); 0 and 0 when n is 0. */
void test_interp_span(const struct test_interp *ti, int n, int *oldest, int *newest);

/* Make `script` (a path in the source tree) runnable by `ti`: for a rooted
 * interpreter it is copied into the root.  Writes the path the interpreter
 * should be given (as seen from inside its root) into buf. */
void test_interp_script(const struct test_interp *ti, const char *script,
			char *buf, size_t size);

/* A directory for files both the test and the target see: for a rooted
 * interpreter, `host` is where the test reads it and `inside` is the same
 * directory as the target names it. */
void test_interp_shared_dir(const struct test_interp *ti, char *host,
			    char *inside, size_t size);

/* Start the interpreter on argv (argv[0] is ignored and replaced by the
 * interpreter).  stdout/stderr go to /dev/null unless keep_output. */
pid_t test_interp_spawn(const struct test_interp *ti, char *const argv[],
			int keep_output);

/* The same through a wrapper command (NULL-terminated, e.g. unshare --pid
 * --fork --mount-proc): `wrap... [chroot ROOT] interpreter args...`, the
 * root entered by the chroot command after the wrapper, as a container
 * would.  wrap NULL: test_interp_spawn(). */
pid_t test_interp_spawn_wrapped(const struct test_interp *ti, const char *const *wrap,
				char *const argv[], int keep_output);

/* For a test that runs on one interpreter: pyenv 3.<minor> (a shared
 * libpython with debug info, the common case), else the first of all[0..n),
 * NULL when n is 0. */
const struct test_interp *test_interp_pick(const struct test_interp *all, int n, int minor);

/* The interpreter with Debian's python3-torch among all[0..n): the sid
 * root's 3.14.  NULL when there is none, after a SKIP that says that what
 * (e.g. "watch: the torch stalls") did not run, and how to get it. */
const struct test_interp *test_interp_torch(const struct test_interp *all, int n,
					    const char *what);

/* Source directory (for tests/targets/...) and build directory. */
const char *test_srcdir(void);
const char *test_builddir(void);

/* A python3 for the tests' own scripts (compare_dump.py, decode_pprof.py,
 * ...), which read files on the test's side: not an interpreter under test.
 * The first python3 in PATH that this user may run and that is not a
 * script starting another (a pyenv shim), else the first script; when
 * there is none, says MISSING on stderr and returns "python3", which then
 * fails to run. */
const char *test_python3(void);

#endif
