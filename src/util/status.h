/* Exit statuses, and how a failure that carries one travels back to main().
 *
 * The statuses are one table (status.c): the help's summary, the man pages'
 * EXIT STATUS sections and the tests are all held to it.
 *
 * The convention.  A function that can fail returns a negative int.  Two
 * kinds of failure share that int and must never be confused:
 *   -errno            (-ESRCH: the thread went away), from system calls and
 *                     memory reads, which callers often retry or ignore;
 *   status_fail(EXIT_*)  a verdict the user must hear as an exit status
 *                     ("not a Python process"), final.
 * status_fail() puts the verdicts at -STATUS_BASE and below, where no errno
 * lives (the kernel's errno values stop at 4095), so neither can be read
 * as the other; exit_code() maps either kind to the exit status once, at
 * the boundary.  An exit code merely negated would be -ENOENT, -EPERM or
 * -EIO (tests/unit/check_status.c keeps that form out of the sources). */
#ifndef PYSTROBE_STATUS_H
#define PYSTROBE_STATUS_H

#include <stdbool.h>

enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_NO_PROCESS = 3,
	EXIT_PERMISSION = 4,
	EXIT_NOT_PYTHON = 5,
	EXIT_UNSUPPORTED = 6,
	EXIT_EXITED = 7,
	EXIT_BAD_STATE = 8,
	EXIT_BAD_INPUT = 9,
	EXIT_BAD_CORE = 10,
	EXIT_CORE_INCOMPLETE = 11,
	EXIT_NO_JOB = 12,
	EXIT_NODES_MISSING = 13,
	EXIT_NR			/* how many there are */
};

/* What a user gave a pid that is not there does next.  A pid is of a PID
 * namespace: one read inside a container is not the host's. */
#define NO_PROCESS_HINT "`pgrep -af python` lists the Python processes here; a container's own pids are not the host's"

struct exit_status {
	int code;
	const char *brief;	/* a few words, for --help's one-line list */
	const char *meaning;	/* a sentence, for the man pages */
};

/* Indexed by code, EXIT_NR entries. */
extern const struct exit_status exit_statuses[EXIT_NR];

/* Above every errno (Linux's MAX_ERRNO is 4095). */
#define STATUS_BASE 4096

/* The failure that ends the program with exit status code (1..EXIT_NR-1). */
static inline int status_fail(int code)
{
	return -(STATUS_BASE + code);
}

/* Whether rc is a status_fail() value, and if so which. */
static inline bool is_status_fail(int rc)
{
	return rc <= -STATUS_BASE - 1 && rc > -STATUS_BASE - EXIT_NR;
}

static inline bool is_fail(int rc, int code)
{
	return rc == status_fail(code);
}

/* The exit status for a failure: a status_fail() value's own, a negative
 * errno's by exit_code_for_errno(), EXIT_OK for rc >= 0. */
int exit_code(int rc);

/* The exit code for a negative errno from a memory read or a system call:
 * -EPERM and -EACCES are a permission problem, -ESRCH a process that went
 * away, anything else is state we could not read. */
int exit_code_for_errno(int neg_errno);

#endif
