/* The job's processes on this node, for the node's side of record --slurm
 * and top --slurm (cmd/record_node.c, cmd/top_node.c), and what a node's
 * reply says of them, for the fronts (cmd/record_slurm.c, top_slurm.c).
 *
 * A node's processes of a job are no one process's descendants (each task
 * is its step daemon's child), so the fleet follows a list made here
 * (jobprocs_list(), process/jobenv.h) rather than a tree.  The samples go
 * back as pprof, which keeps functions, files, lines and each sample's pid
 * and tid, inside a JSON reply beside each process's job and rank.
 */
#ifndef PYSTROBE_NODEPROCS_H
#define PYSTROBE_NODEPROCS_H

#include "process/jobenv.h"
#include "profile/profile.h"
#include "sample/fleet.h"
#include "util/json.h"
#include "util/jsonread.h"

struct node_seen {
	pid_t pid, ppid;
	uint64_t start;
	struct job_ident id;
};

/* The fleet's list of the job's processes on this node, and the identity
 * of each as first seen (a pid with another start time is another
 * process). */
struct node_procs {
	char job[32], step[32], node[128];
	struct node_seen *v;
	int n, cap;
};

/* --slurm-node's JOB[.STEP] into np, and this node's name.  0, or a
 * usage_error() of cmd. */
int node_procs_init(struct node_procs *np, const char *spec, const char *cmd);
void node_procs_release(struct node_procs *np);

/* Process pid as first seen, or NULL. */
const struct node_seen *node_procs_find(const struct node_procs *np, pid_t pid);

/* The fleet follows np's list from now on. */
void node_procs_follow(struct node_procs *np, struct fleet_opts *fo);

/* "host", "node", "job" and "processes" (each with pid, ppid and job)
 * into the reply's object. */
void node_procs_json(struct json *j, const struct node_procs *np);

/* p as pprof, base64, into sb: 0, or -1. */
int node_put_pprof(struct strbuf *sb, struct profile *p);

/* record --slurm -f chrometrace: p (with its runs) as a Chrome trace,
 * gzip, base64, into sb: 0, or -1. */
int node_put_chrometrace(struct strbuf *sb, const struct profile *p);

/* The front's side: a node's reply parsed into d, and its "pprof" read
 * into p (to profile_free()).  0, or -1 with err said. */
int node_reply_profile(struct jdoc *d, const struct strbuf *json, const char *node,
		       struct profile *p, char *err, size_t errlen);

/* Process pid's object in the reply's "processes", or NULL. */
const struct jv *node_reply_process(const struct jdoc *d, pid_t pid);

/* The rank of process pid in the reply's "processes", or -1 when it has
 * none (or is not there). */
long node_reply_rank(const struct jdoc *d, pid_t pid);

#endif
