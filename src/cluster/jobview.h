/* The job-wide view of a grouped job, as text and as JSON.
 *
 * Text: a summary line, the verdict, the nodes and processes that could
 * not be read, then the groups, minority first, each a header ("ranks
 * 0-62 on hnode[1-16] (63 processes, MainThread)") and its stack as dump
 * prints one.  It grows with the distinct stacks, not with the ranks.
 * JSON: every process with its node and rank, "groups" and "verdict";
 * jobdump reads it back. */
#ifndef PYSTROBE_JOBVIEW_H
#define PYSTROBE_JOBVIEW_H

#include <stdbool.h>

#include "cluster/jobgroup.h"
#include "util/util.h"

struct jobview_opts {
	bool full_filenames;	/* whole paths, as dump --full-filenames */
	bool full_names;	/* whole C++ names */
	bool no_source;		/* without the line of source under a frame */
};

void jobview_text(struct strbuf *out, const struct job_grouping *gr,
		  const struct jobview_opts *o);
void jobview_json(struct strbuf *out, const struct job_grouping *gr);

#endif
