/* Running pystrobe once on every node of a Slurm job, through srun, and
 * taking back what each node sends (cluster/demux.h).
 *
 * Slurm does the hard part: placement, authentication, the fan-out to every
 * node, and sending the binary there (srun --bcast).  pystrobe runs one task
 * per node inside the running job (--overlap: beside its tasks, taking none
 * of their resources), and never a daemon or a protocol of its own.
 */
#ifndef PYSTROBE_SRUN_H
#define PYSTROBE_SRUN_H

#include <signal.h>
#include <stdbool.h>

#include "cluster/demux.h"
#include "cluster/runcmd.h"
#include "cluster/slurmjob.h"

/* --slurm and its company, on dump, record, top and watch. */
struct slurm_opts {
	bool on;		/* --slurm given */
	const char *job;	/* its JOB[.STEP], or NULL: $SLURM_JOB_ID */
	const char *node_job;	/* --slurm-node: this is one node's pystrobe */
	const char *pystrobe;	/* --pystrobe: the binary the nodes run */
	double timeout_s;	/* --timeout: for every node to answer */
};

/* The default --timeout, seconds: srun's start on many nodes, and a
 * node's dump of its ranks. */
#define SLURM_TIMEOUT_S 20

struct fanout {
	const struct slurm_job *job;
	const char *exe;	/* the pystrobe the nodes run (--pystrobe), or NULL: this one */
	int timeout_ms;		/* for every node to answer */
	char **args;		/* the nodes' command line after the binary, NULL-ended */
	/* What fanout_run() found: */
	bool bcast;		/* the binary was sent to the nodes */
	bool timed_out;		/* some node had not answered in time */
	bool running;		/* srun was started and not ended yet */
	struct runcmd srun;
	char ran[4096];		/* the binary, as the nodes were asked to run it */
};

/* Run it; d gets one reply per node of the job, in the job's node order.
 * 0 once srun has ended (every node answered or not: see d), -EINTR when
 * *stop was set (srun and every remote pystrobe were ended), or a
 * status_fail() with one line in err when srun cannot run. */
int fanout_run(struct fanout *f, struct demux *d, volatile sig_atomic_t *stop, char *err,
	       size_t errlen);

/* fanout_run() in its parts, for a front with more to do while the nodes
 * send (top redraws, watch judges): start srun (as fanout_run()); hand
 * what it prints to d until it ends (0), until_ns (-ETIMEDOUT) or *stop
 * (-EINTR); ask every node to stop and send what it has, taking that for
 * up to within_ms; end srun and with it every remote pystrobe. */
int fanout_start(struct fanout *f, struct demux *d, char *err, size_t errlen);
int fanout_pump(struct fanout *f, struct demux *d, uint64_t until_ns,
		volatile sig_atomic_t *stop);
void fanout_stop(struct fanout *f, struct demux *d, int within_ms);
void fanout_end(struct fanout *f, struct demux *d);

/* What to say of node i that sent no whole reply, on one line (no
 * trailing newline) into buf; NULL when its reply is whole. */
const char *fanout_failure(const struct fanout *f, const struct demux *d, int i, char *buf,
			   size_t len);

/* Each whole reply handed to take (0, or -1 with err filled); every node's
 * stderr said as its own, and each node that sent nothing usable named
 * ("node hnode2: its reply is no WHAT: ..." when take refused it), the
 * line of one that sent nothing whole handed to missed too (when not
 * NULL: dump shows it in the view).  How many nodes those were;
 * *answered, how many were taken. */
typedef int (*fanout_take_fn)(void *arg, const char *node, const struct strbuf *json, char *err,
			      size_t errlen);
typedef void (*fanout_missed_fn)(void *arg, const char *node, const char *why);
int fanout_take(const struct fanout *f, const struct demux *d, fanout_take_fn take,
		fanout_missed_fn missed, void *arg, const char *what, int *answered);

/* What a node wrote on its stderr, said line by line as that node's
 * ("pystrobe: node hnode2: ..."). */
void fanout_say(const char *node, const struct strbuf *err);
/* A NULL-ended argv whose strings were allocated. */
void fanout_args_free(char **argv);

/* Say that this binary needs no library but a glibc (pystrobe-static's
 * main() does), so that --slurm may send it to the nodes with srun
 * --bcast. */
void fanout_self_contained(void);

#endif
