/* pystrobe: a sampling profiler and stack dumper for running CPython
 * processes, reading them from the outside. */
#include "config.h"

#include "cmd/cmd.h"
#include "interp/layout.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* The versions come from interp/'s tables, so that a new release's table
 * is all it takes for the help to say so. */
#define QUOTE(x) #x
#define NUMBER(x) QUOTE(x)

static const char usage[] =
	"usage: pystrobe COMMAND [options]\n"
	"\n"
	"Read the state of a running Python (CPython 3." NUMBER(LAYOUT_MIN_MINOR) "-3."
	NUMBER(LAYOUT_MAX_MINOR) ") process from outside.\n"
	"\n"
	"Commands:\n"
	"  dump      print every thread's Python stack now (why is it hung?)\n"
	"  record    sample at a fixed rate into a flame graph or profile file\n"
	"  top       a live, top-like view of the functions taking the time\n"
	"  diff      compare two profiles: what grew, what shrank (differential flame graph)\n"
	"  merge     combine profiles (ranks, hosts) into one, side by side or summed\n"
	"\n"
	"Options:\n"
	"  -h, --help     show this help (pystrobe COMMAND --help for a command's)\n"
	"  -V, --version  show the version\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 usage, 3 no such process, 4 permission denied,\n"
	"5 not a Python process, 6 unsupported Python version, 7 process exited,\n"
	"8 interpreter state unreadable, 9 input profile unreadable, 10 core file\n"
	"unreadable, 11 core incomplete (files it maps missing).  See pystrobe(1).\n";

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "dump", cmd_dump },
	{ "record", cmd_record },
	{ "top", cmd_top },
	{ "diff", cmd_diff },
	{ "merge", cmd_merge },
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		errorf("no command given (try pystrobe --help)");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("pystrobe %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	errorf("unknown command '%s' (try pystrobe --help)", argv[1]);
	return EXIT_USAGE;
}
