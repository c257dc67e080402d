#include <errno.h>

#include "util/status.h"

/* The man pages' EXIT STATUS sections start each entry with its meaning,
 * word for word (tests/unit/check_docs holds them to this table); --help
 * prints the briefs.  Plain ASCII, no markup: the test compares the pages'
 * text, markup removed, with these strings. */
const struct exit_status exit_statuses[EXIT_NR] = {
	[EXIT_OK] = { EXIT_OK, "ok", "Success." },
	[EXIT_ERROR] = { EXIT_ERROR, "error",
			 "Any other error: an output that cannot be written, an I/O or "
			 "internal error." },
	[EXIT_USAGE] = { EXIT_USAGE, "usage",
			 "Bad command line: an unknown option, a bad value, or options "
			 "that cannot go together." },
	[EXIT_NO_PROCESS] = { EXIT_NO_PROCESS, "no such process", "No such process." },
	[EXIT_PERMISSION] = { EXIT_PERMISSION, "permission denied",
			      "Not allowed to read or trace the process." },
	[EXIT_NOT_PYTHON] = { EXIT_NOT_PYTHON, "not a Python process",
			      "No Python interpreter was found in the process." },
	[EXIT_UNSUPPORTED] = { EXIT_UNSUPPORTED, "unsupported Python version",
			       "The Python version or build cannot be read: 3.6 and older, "
			       "3.16 and newer, free-threaded builds other than 3.13t; with "
			       "--async, 3.7 to 3.10 and builds whose "
			       "asyncio task layout is not verified." },
	[EXIT_EXITED] = { EXIT_EXITED, "process exited",
			  "The process exited while it was being read." },
	[EXIT_BAD_STATE] = { EXIT_BAD_STATE, "interpreter state unreadable",
			     "The interpreter state could not be read (not initialised yet, "
			     "or corrupt)." },
	[EXIT_BAD_INPUT] = { EXIT_BAD_INPUT, "input file unreadable",
			     "An input file is missing, unreadable or not what the command "
			     "reads: a profile of diff, merge or convert, a dump of group." },
	[EXIT_BAD_CORE] = { EXIT_BAD_CORE, "core file unreadable",
			    "dump --core: not a core file (or one cut before its notes), or "
			    "it cannot be opened." },
	[EXIT_CORE_INCOMPLETE] = { EXIT_CORE_INCOMPLETE, "core incomplete",
				   "dump --core: the core is incomplete (truncated, files it maps "
				   "missing or of another build, a thread stack it holds as "
				   "zeros); what could be read was shown." },
	[EXIT_NO_JOB] = { EXIT_NO_JOB, "Slurm job unreachable",
			  "--slurm: the job does not exist or is not running, or Slurm's "
			  "commands (srun, squeue, scontrol) are not on PATH." },
	[EXIT_NODES_MISSING] = { EXIT_NODES_MISSING, "nodes missing",
				 "--slurm: some nodes of the job did not answer, or had no "
				 "pystrobe to run (each is named on standard error); what the "
				 "others sent was shown." },
};

int exit_code_for_errno(int rc)
{
	if (rc == -EPERM || rc == -EACCES)
		return EXIT_PERMISSION;
	if (rc == -ESRCH)
		return EXIT_EXITED;
	return EXIT_BAD_STATE;
}

int exit_code(int rc)
{
	if (rc >= 0)
		return EXIT_OK;
	if (is_status_fail(rc))
		return -rc - STATUS_BASE;
	return exit_code_for_errno(rc);
}
