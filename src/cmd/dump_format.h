/* What dump prints: the Python processes of a tree, read by dump_read.h,
 * written as text or JSON.  `dump` prints it; `watch` writes it into
 * each report. */
#ifndef PYSTROBE_DUMP_FORMAT_H
#define PYSTROBE_DUMP_FORMAT_H

#include <stdbool.h>
#include <sys/types.h>

#include "process/proctree.h"
#include "cmd/snapshot.h"
#include "process/jobenv.h"
#include "util/util.h"

/* A process that could not be read, shown with why (--slurm-node: the
 * node's other processes are still dumped). */
struct dump_failure {
	pid_t pid, ppid;
	struct job_ident job;
	char **argv;		/* proc_cmdline()'s, or NULL */
	int argc;
	char error[512];
};

/* What the output shows, from the command line. */
struct dump_opts {
	bool json, locals, group, no_source, async, full_filenames, full_names;
	/* --slurm-node: the node and the job, at the JSON's top level, and
	 * the processes that could not be read, after the others. */
	const char *node, *job;
	const struct dump_failure *failed;
	int nfailed;
};

/* The n snapshots as dump prints them, appended to out. */
void dump_format_all(struct strbuf *out, const struct snapshot *snaps, int n,
		     const struct proc_node *procs, int nprocs, const struct dump_opts *o);

#endif
