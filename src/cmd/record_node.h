/* record --slurm: every rank of a Slurm job, on every node, in one
 * profile (record_slurm.c, the front), of what each node records of its
 * own ranks (record_node.c, --slurm-node). */
#ifndef PYSTROBE_RECORD_NODE_H
#define PYSTROBE_RECORD_NODE_H

#include "cmd/target_opts.h"
#include "profile/output.h"

/* This node's ranks of the job t->slurm.node_job, sampled as t says, for
 * the duration or until SIGTERM, sent back as one reply (pprof, or for
 * fmt chrometrace its Chrome trace); the exit status. */
int record_node(struct target_opts *t, const struct out_format *fmt);

/* The front: the exit status. */
int record_slurm(struct target_opts *t, const struct out_format *fmt, struct out_opts *oo,
		 const char *output, bool quiet);

#endif
