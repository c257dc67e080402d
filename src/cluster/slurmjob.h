/* A Slurm job, as Slurm's own commands describe it: whether it runs, and
 * on which nodes, in the order srun places one task per node. */
#ifndef PYSTROBE_SLURMJOB_H
#define PYSTROBE_SLURMJOB_H

#include <stddef.h>

struct slurm_job {
	char id[32];		/* "123", "123_4" for an array task */
	char step[16];		/* "" for the whole job, else "0", "batch" */
	char state[32];		/* squeue's %T: RUNNING */
	char nodelist[1024];	/* squeue's %N: hnode[1-2] */
	char **nodes;		/* the nodelist, expanded */
	int nnodes;
};

/* spec is "JOB" or "JOB.STEP", or NULL for the allocation this runs in
 * ($SLURM_JOB_ID).  0, or a status_fail() with one line in err:
 * EXIT_USAGE for a spec that is no job id, EXIT_NO_JOB when the job is
 * not there or not running, or Slurm's commands are not. */
int slurm_job_find(const char *spec, struct slurm_job *j, char *err, size_t errlen);
void slurm_job_release(struct slurm_job *j);
/* "123" or "123.0", as srun --jobid and the nodes are given it. */
const char *slurm_job_spec(const struct slurm_job *j, char *buf, size_t len);

#endif
