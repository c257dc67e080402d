/* What dump prints: the Python processes of a tree, read by dump_read.h,
 * written as text or JSON.  `dump` prints it; `watch` writes it into
 * each report. */
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

/* The n snapshots as dump prints them, appended to out. */
void dump_format_all(struct strbuf *out, const struct snapshot *snaps, int n,
		     const struct proc_node *procs, int nprocs, const struct dump_opts *o);

#endif
