/* dump's node mode, --slurm-node=JOB[.STEP]: what `dump --slurm` runs on
 * each node of a job (through srun), and what it writes back. */
#ifndef PYSTROBE_DUMP_NODE_H
#define PYSTROBE_DUMP_NODE_H

#include <stddef.h>

#include "cmd/dump_format.h"
#include "cmd/snapshot.h"

/* --timeout's default, seconds: a rank is read in milliseconds, or a
 * second or so with --native's first symbols; the front waits for the
 * slowest node. */
#define NODE_TIMEOUT_DEFAULT 10

/* JOB[.STEP] into job and step ("" for any step): 0, or -1 when it is
 * not a job id (digits) with an optional step (letters, digits, '_',
 * '+'). */
int dump_node_spec(const char *spec, char *job, size_t jobsize, char *step, size_t stepsize);

/* Dump every Python process of the job on this node as one JSON
 * document, framed (design: "#pystrobe-node NODE", "=PAYLOAD" lines,
 * "#pystrobe-end STATUS BYTES") on stdout, within timeout seconds.
 * Returns the exit status, the one the end line carries. */
int dump_node(const char *spec, double timeout, const struct snapshot_opts *so,
	      struct dump_opts *o);

/* The JSON document alone, of the job's processes on node, into json (o
 * as dump_node() sets it, and left as it was); the exit status. */
int dump_node_json(struct strbuf *json, const char *job, const char *step, const char *node,
		   double timeout, const struct snapshot_opts *so, struct dump_opts *o);

#endif
