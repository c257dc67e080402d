/* top --slurm: the live view of every rank of a Slurm job, on every node
 * (top_slurm.c, the front), of what each node samples of its own ranks and
 * sends every --delay (top_node.c, --slurm-node). */
#ifndef PYSTROBE_TOP_SLURM_H
#define PYSTROBE_TOP_SLURM_H

#include <stdbool.h>

#include "cmd/target_opts.h"
#include "top/model.h"

/* This node's ranks of the job t->slurm.node_job, sampled as t says, one
 * reply every delay_s until SIGUSR1 or SIGTERM; the exit status. */
int top_node(struct target_opts *t, double delay_s);

/* The front, into m (made as for one process): full screen with tty,
 * else snapshots; the exit status. */
int top_slurm(struct target_opts *t, struct top_model *m, double delay_s, bool tty);

#endif
