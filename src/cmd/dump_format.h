/* What dump prints: every Python process of a tree read, and written as
 * text or JSON.  `dump` prints it; `watch` writes it into each report. */
#ifndef PYSTROBE_DUMP_FORMAT_H
#define PYSTROBE_DUMP_FORMAT_H

#include <stdbool.h>
#include <sys/types.h>

#include "process/proctree.h"
#include "cmd/snapshot.h"
#include "util/util.h"

/* What the output shows, from the command line. */
struct dump_opts {
	bool json, locals, group, no_source, async, full_filenames, full_names;
};

/* The processes to show, parents before children: pid alone, or with
 * tree its descendants, with each one's parent (0 for pid itself).
 * Returns the count (*out is new), 0 when pid is gone. */
int dump_list_processes(pid_t pid, bool tree, struct proc_node **out);

/* Read every process into snaps (room for n); returns how many were
 * read, or status_fail(EXIT_*) when the target itself (or, with a tree,
 * every process) failed, said on stderr. */
int dump_take_all(const struct proc_node *procs, int n, const struct snapshot_opts *so,
		  bool tree, struct snapshot *snaps);

/* The n snapshots as dump prints them, appended to out. */
void dump_format_all(struct strbuf *out, const struct snapshot *snaps, int n,
		     const struct proc_node *procs, int nprocs, const struct dump_opts *o);

#endif
