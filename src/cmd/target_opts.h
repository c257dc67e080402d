/* The command-line options record and top share: what to sample and how.
 *
 * Both commands take a target (--pid PID, or -- COMMAND) and the same
 * sampling options; each adds its own (record: --duration, --output...;
 * top: --delay).  A command's option table (cmd/options.h) takes these
 * from target_options[], and parses into a struct with a struct
 * target_opts at the table's .shared_at.
 */
#ifndef PYSTROBE_TARGET_OPTS_H
#define PYSTROBE_TARGET_OPTS_H

#include <stdbool.h>
#include <sys/types.h>

#include "cluster/srun.h"
#include "cmd/options.h"
#include "sample/fleet.h"
#include "sample/sampler.h"

struct target_opts {
	struct sampler_opts so;
	struct fleet_opts fo;
	bool gpu;		/* --gpu: NVML's figures of the tree's GPUs */
	bool by_function;	/* --function */
	bool full_filenames;
	bool full_names;	/* --full-names */
	bool waits;		/* --waits: <wait:gpu> ... leaves (analysis/waitmark.h) */
	bool nonblocking;	/* --nonblocking: py-spy's name for the default */
	pid_t pid;
	char **command;		/* argv after "--", in launch mode */
	struct slurm_opts slurm;	/* --slurm, --slurm-node, --pystrobe, --timeout */
};

/* The shared options, in the order getopt_long has them (options.c): a
 * command's entry is { TARGET_OPT(PID), ... }, with help of its own where
 * the shared one has none (those two commands say it differently). */
enum {
	TOPT_PID,
	TOPT_RATE,
	TOPT_IDLE,
	TOPT_GIL,
	TOPT_FUNCTION,
	TOPT_FULL,
	TOPT_FULL_NAMES,
	TOPT_GPU,
	TOPT_BLOCKING,
	TOPT_NONBLOCKING,
	TOPT_NATIVE,
	TOPT_ASYNC,
	TOPT_NO_DEBUGINFOD,
	TOPT_WAITS,
	TOPT_TRAINING,
	TOPT_SUBPROCESSES,
	TOPT_NO_PRIORITY,
	TOPT_SLURM,
	TOPT_SLURM_NODE,
	TOPT_PYSTROBE,
	TOPT_TIMEOUT,
	TOPT_NR,
};
extern const struct opt target_options[TOPT_NR + 1];
#define TARGET_OPT(which) .like = &target_options[TOPT_##which]

/* --slurm[=JOB], an OPT_CALL_AT on a struct slurm_opts (dump, record, top
 * and watch): alone, the allocation this runs in ($SLURM_JOB_ID). */
int slurm_opt(void *slurm_opts, const char *arg, const char *cmd);

/* "--slurm 4242": the id as a word of its own, which an optional value
 * cannot be: a usage error that shows --slurm=4242.  0 otherwise. */
int slurm_id_apart(const struct slurm_opts *s, const char *cmd, int argc, char **argv);

/* Defaults: 100 Hz. */
void target_opts_init(struct target_opts *t);

/* After the options of tab (optind at the first word that is none): the
 * command to launch, if any, and one of --pid or a command; a bare pid
 * or an optional value given without '=' is said to be one.  Returns 0,
 * or -1 (said on stderr). */
int target_opts_finish(struct target_opts *t, const struct opt_table *tab, int argc,
		       char **argv);

/* --slurm: the sampling options every node's pystrobe is given (--rate,
 * --idle, --gil, --native or --blocking, --async, --waits), allocated,
 * from argv[n] on (room for 7); the next free index. */
int target_node_args(const struct target_opts *t, char **argv, int n);

#endif
