/* The options record and top share; see target_opts.h. */
#include "cmd/target_opts.h"
#include "util/suggest.h"
#include "util/util.h"

#include <getopt.h>
#include <stddef.h>
#include <string.h>

void target_opts_init(struct target_opts *t)
{
	memset(t, 0, sizeof(*t));
	t->so.rate_hz = 100;
}

/* Unwinding needs the threads stopped. */
static int native(void *dest, const char *arg, const char *cmd)
{
	struct target_opts *t = dest;

	if (arg && strcmp(arg, "all"))
		return usage_error(cmd, "--native takes no value or 'all', not '%s'", arg);
	t->so.native = t->so.blocking = true;
	t->so.native_startup = arg != NULL;
	return 0;
}

static int async(void *dest, const char *arg, const char *cmd)
{
	struct target_opts *t = dest;

	if (!arg || !strcmp(arg, "running"))
		t->so.async = ASYNC_RUNNING;
	else if (!strcmp(arg, "all"))
		t->so.async = ASYNC_ALL;
	else
		return usage_error(cmd, "--async takes running or all, not '%s'", arg);
	return 0;
}

/* What the training-job view needs: wall time (a thread waiting for its
 * batch is the point), the DataLoader workers and ranks, the classes and
 * the GPUs.  Not --native: it pauses the job for every sample, which the
 * user asks for knowingly. */
static int training(void *dest, const char *arg, const char *cmd)
{
	struct target_opts *t = dest;

	(void)arg;
	(void)cmd;
	t->so.idle = t->fo.subprocesses = t->waits = t->gpu = true;
	return 0;
}

int slurm_opt(void *slurm_opts, const char *arg, const char *cmd)
{
	struct slurm_opts *s = slurm_opts;

	(void)cmd;
	s->on = true;
	s->job = arg;
	return 0;
}

#define AT(member) offsetof(struct target_opts, member)

const struct opt target_options[TOPT_NR + 1] = {
	[TOPT_PID] = OPT_PID("pid", 'p', NULL, AT(pid)),
	[TOPT_RATE] = OPT_NUMBER("rate", 'r', "HZ", NULL, AT(so.rate_hz), 0.1, 100000,
		"must be between 0.1 and 100000 Hz"),
	[TOPT_IDLE] = OPT_BOOL("idle", 0, "include threads that are not running", AT(so.idle)),
	[TOPT_GIL] = OPT_BOOL("gil", 0, "only the thread holding the GIL", AT(so.gil_only)),
	[TOPT_FUNCTION] = OPT_BOOL("function", 0, "aggregate by function instead of line",
		AT(by_function)),
	[TOPT_FULL] = OPT_BOOL("full-filenames", 0, "show whole file paths", AT(full_filenames)),
	[TOPT_FULL_NAMES] = OPT_BOOL("full-names", 0, NULL, AT(full_names)),
	[TOPT_GPU] = OPT_BOOL("gpu", 0, NULL, AT(gpu)),
	[TOPT_NO_PRIORITY] = OPT_BOOL("no-priority", 0,
		"never raise pystrobe's scheduling priority (default:\n"
		"real time where permitted: samples on time on a\n"
		"busy machine)", AT(fo.no_priority)),
	[TOPT_BLOCKING] = OPT_BOOL("blocking", 0,
		"pause the threads for each sample (exact stacks)", AT(so.blocking)),
	/* py-spy's option, for its users' command lines: what we do anyway. */
	[TOPT_NONBLOCKING] = OPT_BOOL("nonblocking", 0,
		"the default: read without pausing the threads\n"
		"(py-spy's option; --blocking pauses them)", AT(nonblocking)),
	[TOPT_NATIVE] = OPT_CALL("native", 0, OPT_OPTIONAL_ARG, "all", NULL, native),
	[TOPT_ASYNC] = OPT_CALL("async", 0, OPT_OPTIONAL_ARG, "all",
		"asyncio tasks (3.11+): the running task's stack as\n"
		"the tasks awaiting it (root first), then its\n"
		"coroutine; =all: every pending task's too", async),
	[TOPT_NO_DEBUGINFOD] = OPT_BOOL("no-debuginfod", 0,
		"with --native: never fetch debug files from the\n"
		"servers DEBUGINFOD_URLS names", AT(so.no_debuginfod)),
	[TOPT_WAITS] = OPT_BOOL("waits", 0, NULL, AT(waits)),
	[TOPT_TRAINING] = OPT_CALL("training", 0, OPT_NO_ARG, NULL,
		"a training job's view: --idle -s --waits --gpu\n"
		"(add --native for the CUDA frames)", training),
	[TOPT_SUBPROCESSES] = OPT_BOOL("subprocesses", 's', NULL, AT(fo.subprocesses)),
	[TOPT_SLURM] = OPT_CALL_AT("slurm", 0, OPT_OPTIONAL_ARG, "JOB",
		"every rank of Slurm job JOB[.STEP], on every node\n"
		"(alone: the allocation this runs in)", AT(slurm), slurm_opt),
	[TOPT_SLURM_NODE] = OPT_STRING("slurm-node", 0, "JOB",
		"one node's part of --slurm (what --slurm runs there)", AT(slurm.node_job)),
	[TOPT_PYSTROBE] = OPT_STRING("pystrobe", 0, "PATH",
		"with --slurm: the pystrobe the nodes run (default:\n"
		"this one; the static binary is sent with srun --bcast)", AT(slurm.pystrobe)),
	[TOPT_TIMEOUT] = OPT_NUMBER("timeout", 0, "SECS",
		"with --slurm: how long a node may take to answer,\n"
		"past the duration (default 20)", AT(slurm.timeout_s), 1, 3600,
		"must be between 1 and 3600 seconds"),
	[TOPT_NR] = OPT_END,
};

static bool has_dashdash(char **argv)
{
	for (; *argv; argv++)
		if (!strcmp(*argv, "--"))
			return true;
	return false;
}

int slurm_id_apart(const struct slurm_opts *s, const char *cmd, int argc, char **argv)
{
	const char *w = optind < argc ? argv[optind] : "";

	if (!s->on || s->job || !*w || strspn(w, "0123456789_.") != strlen(w))
		return 0;
	return usage_error(cmd, "--slurm takes its job id after '=': --slurm=%s", w);
}

int target_opts_finish(struct target_opts *t, const struct opt_table *tab, int argc,
		       char **argv)
{
	if (slurm_id_apart(&t->slurm, tab->cmd, argc, argv) < 0)
		return status_fail(EXIT_USAGE);
	/* No program is named 17784, and a word between --async and the
	 * "--" before the command is --async's: what was meant is said
	 * rather than launched. */
	if (optind < argc && strcmp(argv[optind - 1], "--") &&
	    ((all_digits(argv[optind]) && optind + 1 == argc) ||
	     (opt_value_of_previous(tab, argv, optind) && has_dashdash(argv + optind))))
		return opt_usage_extra(tab, argv, optind, !t->pid);
	if (t->nonblocking && t->so.blocking)
		return usage_error(tab->cmd, "--nonblocking cannot be used with %s, which pauses the "
				   "threads", t->so.native ? "--native" : "--blocking");
	if (optind < argc)
		t->command = argv + optind;
	if (t->slurm.on || t->slurm.node_job) {
		if (t->pid || t->command)
			return usage_error(tab->cmd, "--slurm reads every rank of a job: it cannot "
					   "be used with --pid or a command");
		if (t->slurm.on && t->slurm.node_job)
			return usage_error(tab->cmd, "--slurm and --slurm-node cannot be used together");
		if (!t->slurm.timeout_s)
			t->slurm.timeout_s = SLURM_TIMEOUT_S;
		return 0;
	}
	if ((t->slurm.pystrobe || t->slurm.timeout_s) && !t->slurm.on)
		return usage_error(tab->cmd, "--pystrobe and --timeout go with --slurm");
	if (!!t->pid == !!t->command)
		return usage_error(tab->cmd, "give either --pid PID or -- COMMAND (see pystrobe %s "
				   "--help)", tab->cmd);
	return 0;
}

int target_node_args(const struct target_opts *t, char **argv, int n)
{
	const struct sampler_opts *so = &t->so;

	argv[n++] = xasprintf("--rate=%g", so->rate_hz);
	if (so->idle)
		argv[n++] = xstrdup("--idle");
	if (so->gil_only)
		argv[n++] = xstrdup("--gil");
	if (so->native)
		argv[n++] = xstrdup(so->native_startup ? "--native=all" : "--native");
	else if (so->blocking)
		argv[n++] = xstrdup("--blocking");
	if (so->async)
		argv[n++] = xstrdup(so->async == ASYNC_ALL ? "--async=all" : "--async");
	if (t->waits)
		argv[n++] = xstrdup("--waits");
	if (t->fo.no_priority)
		argv[n++] = xstrdup("--no-priority");
	return n;
}
