/* Ending record and top on SIGINT, SIGTERM or SIGHUP.
 *
 * The handler only notes the request; the sampling loop, the wait for a
 * launched command and the cleanup look at the flags, so every way out
 * goes through the same release of the target and the same output.
 */
#ifndef PYSTROBE_QUIT_H
#define PYSTROBE_QUIT_H

#include <signal.h>

extern volatile sig_atomic_t quit_requested;
extern volatile sig_atomic_t quit_signal;	/* the signal that asked */

void quit_on_signals(void);
/* The same, and SIGUSR1 too: a node's pystrobe under --slurm, which srun
 * passes the front's stop to as SIGUSR1 (cluster/srun.c says why). */
void quit_on_signals_node(void);

#endif
