/* record --slurm -f chrometrace: one Chrome trace of a whole job, made of
 * the trace each node writes of its own processes.
 *
 * A node sends its trace as profile/out_chrometrace.c writes it (gzip,
 * base64, "chrometrace" in its reply, cluster/nodeprocs.h), its times in
 * microseconds since "start_unix_ns", the node's CLOCK_REALTIME when its
 * sampling began.  The front puts every node on the earliest start's axis
 * (so lining up is as good as the nodes' clocks agree: NTP or PTP), gives
 * every process a pid of its own in the job's trace (two nodes' pids may
 * be the same numbers), ordered by rank, and names its track "rank 3 on
 * hnode2 (pid 1234)".  Threads keep their ids and names.
 *
 * Each trace is hostile input: it is parsed bounded (util/jsonread.h), and
 * only the events the writer makes (slices "X", thread names and counters)
 * are written back, field by field, each checked; a trace with anything
 * malformed is refused whole, so that its node is named as one that sent
 * nothing usable.
 */
#ifndef PYSTROBE_JOBTRACE_H
#define PYSTROBE_JOBTRACE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/jsonread.h"
#include "util/util.h"

struct jt_proc {
	uint32_t node;		/* index into the nodes */
	pid_t pid;		/* as its node knows it */
	long rank;		/* -1: none */
	bool worker;		/* its parent is a process of the same rank */
	uint32_t out;		/* its pid in the job's trace, from 1 */
};

struct jt_node {
	char *name;
	struct strbuf gz;	/* its trace, gzip, as it came */
	uint64_t start_ns;	/* its CLOCK_REALTIME at its times' zero */
	uint32_t first, nprocs;	/* its processes: procs[first, first + nprocs) */
};

struct job_trace {
	struct jt_node *nodes;
	uint32_t nnodes, nodes_cap;
	struct jt_proc *procs;
	uint32_t nprocs, procs_cap;
	uint64_t base_ns, end_ns;	/* the earliest start, the latest end, wall clock */
	uint64_t samples;
	/* For the file's otherData. */
	const char *command, *title;
	double rate_hz;
};

void job_trace_init(struct job_trace *jt);
void job_trace_release(struct job_trace *jt);

/* One node's reply (parsed: "chrometrace", "start_unix_ns", "samples"
 * and "processes" with each one's pid, ppid and job rank), its trace read
 * and checked.  0, or -1 with why in err (nothing of it is kept). */
int job_trace_add(struct job_trace *jt, const char *node, const struct jdoc *reply, char *err,
		  size_t errlen);

/* The job's trace onto f: 0, or -errno (the nodes' traces were checked
 * when added; one that no longer reads is -EIO). */
int job_trace_write(struct job_trace *jt, FILE *f);

/* The name of process i's track: "rank 3 on hnode2 (pid 1234)", "worker
 * of rank 3 on hnode2 (pid 1240)", "process 99 on hnode1" (a new string). */
char *job_trace_proc_name(const struct job_trace *jt, uint32_t i);

#endif
