/* Starting a command to profile and waiting until it is Python: shared by
 * record and top. */
#ifndef PYSTROBE_LAUNCH_H
#define PYSTROBE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* Start argv[0] (looked up in PATH).  It waits on a pipe until a byte is
 * written to *go_fd, so that sampling can begin with its first Python
 * instruction; if exec fails it writes its errno to *err_fd.  Under sudo it
 * runs as the user who asked.  With null_stdio its standard input, output
 * and error are /dev/null (a full-screen view owns the terminal).  Returns
 * the pid, or -1 with errno set. */
pid_t launch(char **argv, bool null_stdio, int *go_fd, int *err_fd);

/* A wait status as an exit status: the code, or 128 + the signal. */
int exit_status_of(int status);

/* Is pid a Python process whose interpreter has a thread state yet? */
bool python_ready(pid_t pid);

/* Wait until the launched child has run its command.  Returns 0, or -1
 * with the exit status to end with in *status_out when exec failed (said
 * on stderr, prefixed with who). */
int wait_for_exec(pid_t child, char **command, const char *who, int err_fd, int *status_out);

/* Wait until the launched child (through env, a shim, taskset...) is
 * Python.  Returns 0, or -1 with the exit status to end with in *status_out
 * when it exited or failed first (said on stderr, prefixed with who) or
 * *stop was set. */
int wait_for_python(pid_t child, char **command, const char *who, int err_fd,
		    volatile sig_atomic_t *stop, int *status_out);

#endif
