/* The options record and top share; see target_opts.h. */
#include "cmd/target_opts.h"
#include "util/suggest.h"
#include "util/util.h"

#include <string.h>

void target_opts_init(struct target_opts *t)
{
	memset(t, 0, sizeof(*t));
	t->so.rate_hz = 100;
}

int target_opt(struct target_opts *t, int c, const char *arg, char **argv, const char *who,
	       const struct option *longopts)
{
	switch (c) {
	case 'p':
		if (!(t->pid = parse_pid(arg)))
			return usage_error(who, "invalid pid '%s'", arg);
		return 0;
	case 'r':
		if (parse_number(arg, 0.1, 100000, &t->so.rate_hz) < 0)
			return usage_error(who, "--rate must be between 0.1 and 100000 Hz, not '%s'",
					   arg);
		return 0;
	case TOPT_IDLE: t->so.idle = true; return 0;
	case TOPT_GIL: t->so.gil_only = true; return 0;
	case TOPT_FUNCTION: t->by_function = true; return 0;
	case TOPT_FULL: t->full_filenames = true; return 0;
	case TOPT_FULL_NAMES: t->full_names = true; return 0;
	case TOPT_GPU: t->gpu = true; return 0;
	case TOPT_BLOCKING: t->so.blocking = true; return 0;
	/* Unwinding needs the threads stopped. */
	case TOPT_NATIVE:
		if (arg && strcmp(arg, "all"))
			return usage_error(who, "--native takes no value or 'all', not '%s'", arg);
		t->so.native = t->so.blocking = true;
		t->so.native_startup = arg != NULL;
		return 0;
	case TOPT_NO_DEBUGINFOD: t->so.no_debuginfod = true; return 0;
	case TOPT_WAITS: t->waits = true; return 0;
	/* What the training-job view needs: wall time (a thread waiting for
	 * its batch is the point), the DataLoader workers and ranks, the
	 * classes and the GPUs.  Not --native: it pauses the job for every
	 * sample, which the user asks for knowingly. */
	case TOPT_TRAINING:
		t->so.idle = t->fo.subprocesses = t->waits = t->gpu = true;
		return 0;
	case 's': t->fo.subprocesses = true; return 0;
	case TOPT_ASYNC:
		if (!arg || !strcmp(arg, "running"))
			t->so.async = ASYNC_RUNNING;
		else if (!strcmp(arg, "all"))
			t->so.async = ASYNC_ALL;
		else
			return usage_error(who, "--async takes running or all, not '%s'", arg);
		return 0;
	default:
		return usage_getopt(who, c, argv, longopts);
	}
}

static bool has_dashdash(char **argv)
{
	for (; *argv; argv++)
		if (!strcmp(*argv, "--"))
			return true;
	return false;
}

int target_opts_finish(struct target_opts *t, int argc, char **argv, const char *who,
		       const struct option *longopts)
{
	/* No program is named 17784, and a word between --async and the
	 * "--" before the command is --async's: what was meant is said
	 * rather than launched. */
	if (optind < argc && strcmp(argv[optind - 1], "--") &&
	    ((all_digits(argv[optind]) && optind + 1 == argc) ||
	     (optional_value_of_previous(argv, optind, longopts) && has_dashdash(argv + optind))))
		return usage_extra(who, argv, optind, longopts, !t->pid);
	if (optind < argc)
		t->command = argv + optind;
	if (!!t->pid == !!t->command)
		return usage_error(who, "give either --pid PID or -- COMMAND (see pystrobe %s --help)",
				   who);
	return 0;
}
