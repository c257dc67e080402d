/* What dump reads: the processes of a tree, each read into a snapshot.
 * `dump` reads them; `watch` lists them for each report.  Written out by
 * dump_format.h. */
#ifndef PYSTROBE_DUMP_READ_H
#define PYSTROBE_DUMP_READ_H

#include <stdbool.h>
#include <sys/types.h>

#include "process/proctree.h"
#include "cmd/snapshot.h"

/* The processes to show, parents before children: pid alone, or with
 * tree its descendants, with each one's parent (0 for pid itself).
 * Returns the count (*out is new), 0 when pid is gone. */
int dump_list_processes(pid_t pid, bool tree, struct proc_node **out);

/* Read every process into snaps (room for n); returns how many were
 * read, or status_fail(EXIT_*) when the target itself (or, with a tree,
 * every process) failed, said on stderr. */
int dump_take_all(const struct proc_node *procs, int n, const struct snapshot_opts *so,
		  bool tree, struct snapshot *snaps);

#endif
