/* The command record and top launch: starting it, waiting until it is
 * Python, and ending it with its exit status. */
#ifndef PYSTROBE_LAUNCH_H
#define PYSTROBE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "util/util.h"

/* A wait status as an exit status: the code, or 128 + the signal. */
int exit_status_of(int status);

/* A launched command, from its start to its exit status: record and top
 * start it, sample it and end it the same way. */
struct child {
	pid_t pid;		/* 0: none was launched */
	bool reaped;
	bool lost;		/* the wait failed: its status is unknown */
	int status;		/* its wait status, once reaped */
	bool ended;		/* child_finish() signalled it before it exited */
	int sent;		/* ... and the last signal it sent */
	pid_t pgid;		/* its own process group, or 0 */
	int tty_fd;		/* the terminal it was given, or -1 */
	/* It is not Python but started a Python process, this one, first
	 * found: what it runs is recorded through its descendants. */
	pid_t python_below;
	const char *who;	/* the command that launched it, for what is said */
	char **command;		/* what was launched */
};

/* Ending a launched command: SIGINT to its group, then SIGTERM after
 * CHILD_INT_GRACE_MS, then SIGKILL after CHILD_TERM_GRACE_MS more.  The
 * man page's "Stopping a launched command" says so. */
#define CHILD_INT_GRACE_MS	5000
#define CHILD_TERM_GRACE_MS	2000
/* Still there this long after SIGINT, it is said at once what comes next
 * (a KeyboardInterrupt ends a Python program in milliseconds; the rest of
 * the 5 s in silence looked like a hang). */
#define CHILD_INT_SAY_MS	1000

/* child_start()'s out_fd, besides a descriptor: the command has our
 * standard input, output and error; or ours but its standard output goes
 * to our standard error (record -o -: the profile alone is on ours). */
#define CHILD_OUT_OURS		(-1)
#define CHILD_OUT_TO_STDERR	(-2)

/* The Python processes below root (root itself left out) whose
 * interpreter has a thread state, up to max into out; how many.  For a
 * launcher, or a --pid that is not Python, they are what to record. */
int python_descendants(pid_t root, pid_t *out, int max);

/* pid (a --pid) is not Python: when a process below it is, say on stderr
 * that those are followed (prefixed with who) and return true; the caller
 * then records the tree as with -s. */
bool follow_pid_below(pid_t pid, const char *who);

/* Start command (argv[0] looked up in PATH) in a process group of its own
 * and wait until it is Python, or has started a Python process
 * (ch->python_below),
 * or with any_program only until it has run exec: with --subprocesses the
 * Python may be further down.  It is held before exec until we are ready,
 * so sampling can begin with its first Python instruction.  Under sudo it
 * runs as the user who asked.  With out_fd >= 0 its standard input is
 * /dev/null and its output and error go to out_fd (a full-screen view owns
 * the terminal); with CHILD_OUT_OURS (-1) it has ours, with
 * CHILD_OUT_TO_STDERR ours but its output goes to our standard error; with
 * either, if we are in the foreground of a terminal, its group is made the foreground
 * until it ends (it can read the terminal, Ctrl-C reaches it) and it
 * ignores SIGTSTP.  Returns 0, or -1 with the exit status to end with in *status_out (said on stderr,
 * prefixed with who) when it could not start, exited first, or *stop was
 * set. */
int child_start(struct child *ch, char **command, const char *who, int out_fd,
		bool any_program, volatile sig_atomic_t *stop, int *status_out);

/* Reap it if it has exited, waiting up to timeout_ms for it (-1: as long as
 * it takes).  True once it is reaped. */
bool child_reap(struct child *ch, int timeout_ms);

/* Its exit status once reaped: the code, 128 + the signal, or EXIT_ERROR
 * when it could not be waited for. */
int child_exit_status(const struct child *ch);

/* How it ended, once reaped, for a line about it: "exited with status
 * 3", "ended by SIGINT"... */
void child_describe_end(const struct child *ch, struct strbuf *sb);

/* End it, and return its exit status (EXIT_OK when none was launched).
 * Without stop it has exited (or will, by itself) and is reaped.  With
 * stop its process group gets SIGINT, as from a terminal's Ctrl-C, and
 * CHILD_INT_GRACE_MS to end (the command and every process left in its
 * group), then SIGTERM and CHILD_TERM_GRACE_MS, then SIGKILL; still there
 * CHILD_INT_SAY_MS after SIGINT, a line on stderr says what comes next. */
int child_finish(struct child *ch, bool stop);

/* Whether the command (not what it started) ignores sig now (SIG_IGN, as
 * /proc says): held the terminal, a Ctrl-C reaches it alone, and then
 * nothing at all. */
bool child_ignores(const struct child *ch, int sig);

/* The command launched, quoted, in at most about 100 characters:
 * "'python3 train.py --epochs 3'". */
void child_name(const struct child *ch, struct strbuf *sb);

#endif
