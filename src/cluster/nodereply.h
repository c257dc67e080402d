/* A node's side of --slurm: what pystrobe on one node of a job writes
 * back to the front through srun (the front's side is cluster/demux.h). */
#ifndef PYSTROBE_NODEREPLY_H
#define PYSTROBE_NODEREPLY_H

#include <stddef.h>
#include <stdio.h>

#include "process/jobenv.h"
#include "util/json.h"

/* The longest line of a reply, '=' and newline included: srun carries a
 * task's output in messages of a bounded size (a 5000-byte line comes
 * back in labelled pieces of 1024, tests/live/check_slurm_cluster), and
 * a line that fits one is never cut. */
#define NODE_LINE_MAX 400

/* How long a node waits after its reply before it exits (nodereply.c
 * says why). */
#define NODE_LINGER_MS 300

/* This node's name as Slurm knows it: $SLURMD_NODENAME (set in every task
 * of a step), else the host's short name. */
const char *node_name(char *buf, size_t len);

/* When this binary is a copy srun --bcast made for this step
 * (slurm_bcast_JOB.STEP_NODE in the directory --slurm gives), remove it:
 * it runs on from its open inode, and a node keeps no litter. */
void node_unlink_bcast(void);

/* The reply: json (len bytes) framed as cluster/demux.c reads it, with
 * the node's exit status.  0, or -EIO when out cannot be written. */
int node_reply_write(FILE *out, const char *node, int status, const char *json, size_t len);

/* "job": a process's job and rank (process/jobenv.h), or null when its
 * environment names neither: what every JSON dump carries per process,
 * and what the front groups the whole job by. */
void json_job_ident(struct json *j, const struct job_ident *id);

#endif
