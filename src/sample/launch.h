/* The command record and top launch: starting it, waiting until it is
 * Python, and ending it with its exit status. */
#ifndef PYSTROBE_LAUNCH_H
#define PYSTROBE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* A wait status as an exit status: the code, or 128 + the signal. */
int exit_status_of(int status);

/* A launched command, from its start to its exit status: record and top
 * start it, sample it and end it the same way. */
struct child {
	pid_t pid;		/* 0: none was launched */
	bool reaped;
	bool lost;		/* the wait failed: its status is unknown */
	int status;		/* its wait status, once reaped */
};

/* Start command (argv[0] looked up in PATH) and wait until it is Python,
 * or with any_program only until it has run exec: with --subprocesses the
 * Python may be further down.  It is held before exec until we are ready,
 * so sampling can begin with its first Python instruction.  Under sudo it
 * runs as the user who asked.  With null_stdio its standard input, output
 * and error are /dev/null (a full-screen view owns the terminal).  Returns
 * 0, or -1 with the exit status to end with in *status_out (said on stderr,
 * prefixed with who) when it could not start, exited first, or *stop was
 * set. */
int child_start(struct child *ch, char **command, const char *who, bool null_stdio,
		bool any_program, volatile sig_atomic_t *stop, int *status_out);

/* Reap it if it has exited, waiting up to timeout_ms for it (-1: as long as
 * it takes).  True once it is reaped. */
bool child_reap(struct child *ch, int timeout_ms);

/* Its exit status once reaped: the code, 128 + the signal, or EXIT_ERROR
 * when it could not be waited for. */
int child_exit_status(const struct child *ch);

/* End it, and return its exit status (EXIT_OK when none was launched).
 * sig is why we end: 0 when it exited or the run ended by itself, else the
 * signal to pass on.  SIGINT is not passed on at once, since a Ctrl-C
 * from the terminal reached it too.  With grace_ms >= 0 it gets that long
 * to exit (a second more after SIGINT, which it then gets) before
 * SIGKILL; with -1 it is waited for as long as it takes. */
int child_finish(struct child *ch, int sig, int grace_ms);

#endif
