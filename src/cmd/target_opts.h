/* The command-line options record and top share: what to sample and how.
 *
 * Both commands take a target (--pid PID, or -- COMMAND) and the same
 * sampling options; each adds its own (record: --duration, --output...;
 * top: --delay).  A command puts TARGET_LONGOPTS in its getopt_long table
 * and TARGET_SHORTOPTS in its option string, and hands every option its own
 * switch does not know to target_opt().
 */
#ifndef PYSTROBE_TARGET_OPTS_H
#define PYSTROBE_TARGET_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

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
	pid_t pid;
	char **command;		/* argv after "--", in launch mode */
};

/* getopt_long values of the long-only options; a command numbers its own
 * from TOPT_NEXT. */
enum {
	TOPT_IDLE = 256,
	TOPT_GIL,
	TOPT_FUNCTION,
	TOPT_FULL,
	TOPT_FULL_NAMES,
	TOPT_GPU,
	TOPT_BLOCKING,
	TOPT_NATIVE,
	TOPT_ASYNC,
	TOPT_NO_DEBUGINFOD,
	TOPT_WAITS,
	TOPT_TRAINING,
	TOPT_NEXT,
};

#define TARGET_SHORTOPTS "p:r:s"
#define TARGET_LONGOPTS \
	{ "pid", required_argument, NULL, 'p' }, \
	{ "rate", required_argument, NULL, 'r' }, \
	{ "idle", no_argument, NULL, TOPT_IDLE }, \
	{ "gil", no_argument, NULL, TOPT_GIL }, \
	{ "function", no_argument, NULL, TOPT_FUNCTION }, \
	{ "full-filenames", no_argument, NULL, TOPT_FULL }, \
	{ "full-names", no_argument, NULL, TOPT_FULL_NAMES }, \
	{ "gpu", no_argument, NULL, TOPT_GPU }, \
	{ "blocking", no_argument, NULL, TOPT_BLOCKING }, \
	{ "native", optional_argument, NULL, TOPT_NATIVE }, \
	{ "async", optional_argument, NULL, TOPT_ASYNC }, \
	{ "no-debuginfod", no_argument, NULL, TOPT_NO_DEBUGINFOD }, \
	{ "waits", no_argument, NULL, TOPT_WAITS }, \
	{ "training", no_argument, NULL, TOPT_TRAINING }, \
	{ "subprocesses", no_argument, NULL, 's' }

/* Defaults: 100 Hz. */
void target_opts_init(struct target_opts *t);

/* Option c as getopt_long returned it, with optarg arg.  Returns 0 when
 * handled, -1 when its value is bad or it is unknown (said on stderr as
 * "WHO: ..."; argv names the option). */
int target_opt(struct target_opts *t, int c, const char *arg, char **argv, const char *who,
	       const struct option *longopts);

/* After the options: the command to launch, if any, and one of --pid or
 * a command; a bare pid or an optional value given without '=' is said
 * to be one.  Returns 0, or -1 (said on stderr). */
int target_opts_finish(struct target_opts *t, int argc, char **argv, const char *who,
		       const struct option *longopts);

#endif
