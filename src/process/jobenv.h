/* Which job of a cluster a process belongs to, and its rank there: what
 * `dump --slurm` reads on each node (issue 38).
 *
 * The identity is read from the process's own environment, as its
 * launchers left it: Slurm's SLURM_JOB_ID, SLURM_STEP_ID, SLURMD_NODENAME,
 * and the rank torchrun set (RANK, LOCAL_RANK, WORLD_SIZE), else the one
 * Slurm set (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS).  A process whose
 * environment does not name its job and node is placed by its ancestry:
 * the nearest `slurmstepd: [JOB.STEP]` above it and that step daemon's
 * slurmd, or the nearest ancestor whose environment names them.
 */
#ifndef PYSTROBE_JOBENV_H
#define PYSTROBE_JOBENV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where a rank came from: torchrun's variables win over Slurm's, which
 * name the task, not the workers torchrun started in it. */
enum rank_from {
	RANK_FROM_NONE,
	RANK_FROM_TORCHRUN,
	RANK_FROM_SLURM,
};

struct job_ident {
	char id[32], step[32], node[128];	/* "" when unknown */
	long rank, local_rank, world_size;	/* -1 when unknown */
	enum rank_from from;
	bool in_job;		/* id is set */
};

/* "torchrun", "slurm", or NULL for RANK_FROM_NONE. */
const char *rank_from_name(enum rank_from from);

/* Whether there is anything to say of it: a job or a rank. */
bool job_ident_known(const struct job_ident *id);

/* The identity in an environment block (NAME=VALUE entries, NUL between
 * them, the last one maybe unterminated), as getenv() would see it: the
 * first of each name.  A value that is not what the launcher writes (a
 * rank that is no number, a node name with a '/') counts as absent.
 * Pure; returns 0. */
int job_ident_parse(const char *environ, size_t len, struct job_ident *out);

/* The same from /proc/PID/environ, read in blocks whatever its size:
 * 0, or -errno when it cannot be read (*out is then empty). */
int job_ident_read(pid_t pid, struct job_ident *out);

/* "slurmstepd: [JOB.STEP]", as a step daemon names itself: its job and
 * step into id (nothing else changed); false for anything else. */
bool job_stepd_parse(const char *argv0, struct job_ident *id);

/* The node a slurmd's command line serves: its -N NAME (or -NNAME), a
 * host name; false when argv is no slurmd's or names none. */
bool job_slurmd_parse(char *const *argv, int argc, char *node, size_t size);

/* pid's identity: its environment's, and where that does not name both
 * the job and the node, its ancestry's (its rank stays its own). */
void job_ident_placed(pid_t pid, struct job_ident *id);

/* The processes of job jobid (of its step, unless step is NULL) on node
 * node, by pid, ascending, into out (room for max): those whose
 * environment names them, else whose ancestry does.  Never self, nor the
 * processes of pystrobe's own step (SLURM_JOB_ID and SLURM_STEP_ID in its
 * environment), nor a step daemon.  Returns the count. */
int jobprocs_list(const char *jobid, const char *step, const char *node, pid_t self,
		  pid_t *out, int max);

/* This host's short name (up to the first '.'), as slurmd names its node
 * by default. */
void job_host_name(char *buf, size_t size);

#endif
