/* The whole job grouped: every thread of every process by its stack, and
 * the verdict on the ranks' main threads (design38.md, section 4).
 *
 * What a user of a 512-rank job reads first is the verdict, "rank 37 on
 * hnode5 differs: in load_batch (data.py:88); ranks 0-36,38-511 on
 * hnode[1-64] in all_reduce (distributed_c10d.py:2501)", then the groups,
 * the fewest ranks first: the odd ones are the story, the 510 that agree
 * are one group whatever the job's size. */
#ifndef PYSTROBE_JOBGROUP_H
#define PYSTROBE_JOBGROUP_H

#include <stdint.h>

#include "cluster/jobdump.h"
#include "util/hashidx.h"
#include "util/util.h"

/* What a process is to the job. */
enum job_role {
	ROLE_NONE,	/* no rank in its environment */
	ROLE_MAIN,	/* a rank's own process */
	ROLE_WORKER,	/* a child that inherited its parent's rank (DataLoader) */
	ROLE_LAUNCHER,	/* srun's task that started torchrun's ranks (the agent) */
};

/* Groups are kept apart by what their threads are: the verdict is about
 * the first tier alone. */
enum job_tier {
	TIER_MAIN,	/* the main thread of a rank's process */
	TIER_RANK,	/* its other threads */
	TIER_WORKER,
	TIER_LAUNCHER,
	TIER_NONE,	/* processes with no rank */
	TIER_NR
};

struct job_group {
	uint32_t stack;
	enum job_tier tier;
	uint32_t *threads;	/* indices into the dump's threads, in the order read */
	uint32_t n, alloc;
	uint32_t nprocs;
	uint32_t nranks;	/* distinct ranks (TIER_NONE: processes) */
};

struct job_grouping {
	const struct job_dump *jd;
	enum job_role *role;	/* per process */
	struct job_group *g;	/* in the order shown: by tier, fewest first */
	size_t n, alloc;
	uint32_t *unread;	/* processes that could not be read */
	size_t nunread;
	uint32_t nmain;		/* ranks with a main process */
	char *verdict;		/* one line; NULL when no process has a rank */
	struct hashidx ix;
};

/* Group jd (which must outlive gr). */
void jobgroup_build(struct job_grouping *gr, const struct job_dump *jd);
void jobgroup_release(struct job_grouping *gr);

/* Who the group's threads are: "ranks 0-62 on hnode[1-16]", "workers of
 * ranks 0-3 on hnode1", "pids 812,901 on login1" (no rank). */
void jobgroup_who(struct strbuf *sb, const struct job_grouping *gr, const struct job_group *g);
/* Where a stack is: "in fetch_shard (train.py:10)", its innermost Python
 * frame; "in native code", "with no frame". */
void jobgroup_where(struct strbuf *sb, const struct job_dump *jd, uint32_t stack);
/* The rank a process is or works for, -1 for none. */
long jobgroup_rank(const struct job_grouping *gr, uint32_t proc);

#endif
