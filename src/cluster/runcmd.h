/* Running Slurm's own commands (srun, squeue, scontrol) and reading what
 * they print, with a deadline.
 *
 * The child runs in a process group of its own, so that the terminal's
 * Ctrl-C reaches pystrobe alone: pystrobe then ends srun itself, in the one
 * way that ends every remote task too (runcmd_end()).
 */
#ifndef PYSTROBE_RUNCMD_H
#define PYSTROBE_RUNCMD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/util.h"

struct runcmd {
	pid_t pid;
	int fd[2];		/* its stdout and stderr; -1 once ended */
	int wstatus;		/* once reaped */
	bool reaped;
};

typedef void (*runcmd_feed_fn)(void *arg, int stream, const char *buf, size_t n);

/* Start argv[0], looked up on PATH.  0, -ENOENT when it is not there,
 * or another -errno.  In pystrobe (spawn_self_allowed()) it is tied to
 * this process: SIGTERM reaches it when pystrobe dies, SIGKILL included
 * (srun then cancels its step, and every remote pystrobe ends). */
int runcmd_start(struct runcmd *c, char *const *argv);

/* The tie: pystrobe run again as `pystrobe RUNCMD_TIED_ARG PPID CMD
 * ARGS...` asks for SIGTERM when its parent PPID dies (PR_SET_PDEATHSIG,
 * which outlives the exec) and becomes CMD.  127 when it cannot. */
#define RUNCMD_TIED_ARG "--internal-tied"
int runcmd_tied_main(int argc, char **argv);
/* Hand what it prints to feed until both streams end (0), the monotonic
 * deadline passes (-ETIMEDOUT), or *stop is set (-EINTR). */
int runcmd_pump(struct runcmd *c, uint64_t deadline_ns, volatile sig_atomic_t *stop,
		runcmd_feed_fn feed, void *arg);
/* End it: SIGTERM (srun passes it on to every task), then SIGKILL after
 * grace_ms; reap it.  Its wait status. */
int runcmd_end(struct runcmd *c, int grace_ms);
/* Wait for it to exit, up to deadline, else end it.  Its wait status. */
int runcmd_wait(struct runcmd *c, uint64_t deadline_ns);

/* Run argv to the end within timeout_ms, its stdout in out and stderr in
 * err (each cut at 1 MiB).  Its wait status, -ENOENT when argv[0] is not
 * on PATH, -ETIMEDOUT. */
int runcmd_capture(char *const *argv, int timeout_ms, struct strbuf *out, struct strbuf *err);

#endif
