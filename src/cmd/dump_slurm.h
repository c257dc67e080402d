/* dump --slurm: every rank of a Slurm job, on every node, in one view. */
#ifndef PYSTROBE_DUMP_SLURM_H
#define PYSTROBE_DUMP_SLURM_H

#include <stdbool.h>

#include "cmd/dump_format.h"
#include "cmd/snapshot.h"
#include "cluster/srun.h"

/* Run dump on every node of the job and print the job grouped; the exit
 * status. */
int dump_slurm(const struct slurm_opts *s, const struct dump_opts *o,
	       const struct snapshot_opts *so);

#endif
