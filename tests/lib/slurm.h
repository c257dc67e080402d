/* A real Slurm cluster for the live tests of --slurm (issue 38): the
 * tests' own slurmctld, slurmd and munged on this machine, started and
 * stopped by tests/slurm-cluster.sh, in a fresh directory of its own.
 *
 *	struct slurm s;
 *	char why[512];
 *	int rc = slurm_up(&s, 2, why, sizeof(why));
 *
 *	if (rc == SLURM_UNAVAILABLE) { test_skip("...: %s", why); return; }
 *	ck_assert_msg(rc == 0, "%s", why);	// or a SKIP, as the test sees fit
 *	job = slurm_sbatch(&s, "#!/bin/sh\nsrun ...\n", why, sizeof(why));
 *	...
 *	slurm_down(&s);
 *
 * slurm_up() sets SLURM_CONF in this process's environment, so that srun
 * and sbatch run from here (pystrobe's own srun too) find the cluster.
 * A cluster this process started is stopped when it exits (atexit), and,
 * should it die otherwise (a failed check's _exit, Check's SIGKILL on a
 * timeout), by the script's watchdog within a second or two.
 */
#ifndef PYSTROBE_TEST_SLURM_H
#define PYSTROBE_TEST_SLURM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SLURM_UNAVAILABLE	1	/* not root, slurm-wlm or munge missing: a SKIP */
#define SLURM_UP_MS		120000	/* the script's own bound is 30 s for the nodes */
#define SLURM_DOWN_MS		90000

struct slurm {
	char dir[PATH_MAX];		/* the cluster's directory (logs, state) */
	char conf[PATH_MAX + 16];	/* dir/slurm.conf: SLURM_CONF */
	int nodes;			/* hnode1..hnodeN */
	bool up;
	double up_s, down_s;		/* how long slurm_up() and slurm_down() took */
};

/* Start a cluster of nodes nodes (hnode1...) in a fresh directory and set
 * SLURM_CONF.  0 once every node is idle; SLURM_UNAVAILABLE with the
 * reason in why when this machine cannot run one (not root, a package
 * missing); -1 when it did not start, twice (why: what, and its log's
 * last lines; what was started is stopped). */
int slurm_up(struct slurm *s, int nodes, char *why, size_t whysize);

/* In a sanitizer build: a SKIP that says so, and true.  There, the
 * front's and the nodes' code run under the sanitizers in check_slurm
 * alone: top's and watch's cluster tests would add minutes to a CI that
 * must stay well under an hour (.ci/run), for code check_slurm and the
 * unit tests already run there. */
bool slurm_skip_sanitized(const char *what);

/* slurm_up() for a live test: false after a SKIP with the reason (this
 * machine cannot run a cluster), a failure when it can and it did not
 * start, true (and "USED: slurm") when it is up. */
bool slurm_up_or_skip(struct slurm *s, int nodes);

/* Stop it: every job cancelled, every process of it ended.  0, or -1 with
 * what outlived it in why (the directory is kept then; else removed).
 * Safe to call again, and on a cluster that did not start. */
int slurm_down_check(struct slurm *s, char *why, size_t whysize);
void slurm_down(struct slurm *s);

/* Submit a batch script (its text, "#!/bin/sh\n..." with #SBATCH lines if
 * any); its output goes to slurm_job_output().  The job id, or -1 with
 * sbatch's error in why. */
long slurm_sbatch(struct slurm *s, const char *script_text, char *why, size_t whysize);

/* The path of a job's output file (dir/job-JOB.out). */
void slurm_job_output(const struct slurm *s, long job, char *path, size_t size);

/* The job's state as squeue names it (RUNNING, PENDING, COMPLETED...), or
 * "" once squeue no longer lists it. */
void slurm_job_state(long job, char *state, size_t size);

/* Wait (bounded) until the job runs.  0, or -1 with its state and the tail
 * of its output in why (it ended, or timed out). */
int slurm_wait_running(struct slurm *s, long job, int timeout_ms, char *why, size_t whysize);

/* A process of a job, from /proc (its environment, as Slurm set it). */
struct slurm_proc {
	pid_t pid, ppid;
	long procid, localid;		/* SLURM_PROCID, SLURM_LOCALID; -1 unset */
	char step[32];			/* SLURM_STEP_ID */
	char node[64];			/* SLURMD_NODENAME */
};

/* The processes of job whose command line has word (e.g. the target's
 * file name), srun and slurmstepd not, at most max; their count. */
int slurm_job_procs(long job, const char *word, struct slurm_proc *out, int max);

/* Wait (bounded) until n ranks of job are ready: each has written
 * logdir/rank-<r>.json for r in [0, n) (the targets slurm_light_rank.py and
 * slurm_gloo_train.py do, once in place), and each pid it names is alive.
 * 0, or -1 with which rank is missing and the job's state in why. */
int slurm_wait_ranks(struct slurm *s, long job, const char *logdir, int n, int timeout_ms,
		     char *why, size_t whysize);

/* A batch job of ranks light ranks (tests/targets/slurm_light_rank.py,
 * run by python) over nodes nodes, rank stall stalled in fetch_shard,
 * their logs in logdir (made here): running, every rank ready.  The job
 * id, or -1 with why. */
long slurm_light_job(struct slurm *s, int nodes, int ranks, int stall, const char *python,
		     const char *logdir, int timeout_ms, char *why, size_t whysize);

/* What a rank's own log says (rank-<r>.json of slurm_light_rank.py and
 * slurm_gloo_train.py): its node, and the function and line it sits in. */
struct slurm_truth {
	char node[64];
	char fn[64];
	long line;
};

/* Ranks 0..n-1's logs in dir into truth.  0, or -1 with the missing one
 * in why. */
int slurm_rank_truths(const char *dir, int n, struct slurm_truth *truth, char *why,
		      size_t whysize);

/* A rank's samples in a collapsed profile of record --slurm (lines under
 * "node=NODE;rank=N;"), and in *with those with what on the stack. */
long slurm_rank_samples(const char *collapsed, const char *node, int rank, const char *what,
			long *with);

/* `pystrobe dump JOBOPT` (--slurm=JOB) of a job of ranks ranks, rank stall
 * stalled in the script named: its verdict names the stalled rank on its
 * node at its function and line as truth says, and "ranks 0-N on
 * hnode[1-2] " then others (where the others are); `dump --json`, every
 * rank with its node and rank.  What is wrong, into msg. */
void slurm_check_dump(const char *jobopt, const struct slurm_truth *truth, int ranks, int stall,
		      const char *script, const char *others, char **msg);

/* The command line that runs a target (a path in the source tree, e.g.
 * "tests/targets/slurm_gloo_train.py") with ti, as a task of srun:
 * "[env NAME=VALUE] [chroot ROOT] PYTHON SCRIPT", the script copied into
 * ti's root when it has one (the sid root's torch: `chroot ROOT python3.14
 * /tmp/pystrobe-tests/slurm_gloo_train.py`).  A new string. */
struct test_interp;
char *slurm_python_cmd(const struct test_interp *ti, const char *script);

/* The processes of the cluster still running: its daemons (their command
 * line names its directory) and every process whose environment has its
 * SLURM_CONF but this one.  Their count; "pid (command), ..." in what. */
int slurm_leftovers(const struct slurm *s, char *what, size_t size);

#endif
