/* pystrobe: a sampling profiler and stack dumper for running CPython
 * processes, reading them from the outside. */
#include "config.h"

#include "cluster/srun.h"
#include "cmd/cmd.h"
#include "interp/layout.h"
#include "native/symhelper.h"
#include "process/selfstop.h"
#include "cluster/runcmd.h"
#include "util/status.h"
#include "util/suggest.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* The versions come from interp/'s tables, so that a new release's table
 * is all it takes for the help to say so. */
#define QUOTE(x) #x
#define NUMBER(x) QUOTE(x)

/* How this binary was built, second line of --version: pystrobe-static
 * (Makefile.am) carries every library but the C library, so the one thing
 * a host must have is a glibc at least as new as the one it was built
 * against (configure). */
#ifdef PYSTROBE_STATIC
static const char build_note[] =
	"static: every library but the C library linked in; needs glibc " PYSTROBE_GLIBC_FLOOR
	" or newer (built against glibc " PYSTROBE_GLIBC_FLOOR " in " PYSTROBE_BUILD_SYSTEM ")\n";
#else
static const char build_note[] = "";
#endif

/* --licences: COPYING, and in pystrobe-static the licences of the
 * libraries it carries, with their Debian source packages and versions
 * (build-aux/notices.sh writes these headers from COPYING and LICENSES/;
 * a copied binary has no other file to point to). */
#ifdef PYSTROBE_STATIC
#include "licence-static.h"
static const char licence_note[] =
	"MIT licence; the licences of the libraries linked in: pystrobe --licences\n";
#else
#include "licence.h"
static const char licence_note[] = "MIT licence (pystrobe --licences)\n";
#endif

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
	"  diff      compare two profiles: a flame graph of what grew and what shrank\n"
	"  merge     combine profiles (ranks, hosts) into one, side by side or summed\n"
	"  convert   a profile or flight recording into another format, or a time slice\n"
	"  watch     follow a job for days and report the moment it stalls, and why\n"
	"  group     many hosts' dump --json files as one job: which rank differs, where\n"
	"\n"
	"Options:\n";

/* pystrobe's own options: argv[1] is one, spelt whole, or a command. */
static const struct opt main_opts[] = {
	OPT_HELP("show this help (pystrobe COMMAND --help for a command's)"),
	OPT_CALL("version", 'V', OPT_NO_ARG, NULL, "show the version", NULL),
	OPT_CALL("licences", 0, OPT_NO_ARG, NULL,
		 "show the licence, and those of the libraries linked in", NULL),
	OPT_END,
};

static const struct opt_table main_options = {
	.cmd = "pystrobe",
	.head = usage,
	.opts = main_opts,
	.column = 17,
	.tail = "\n",
};

/* The option of main_opts arg is, or NULL.  --licences is also known by
 * its other spellings. */
static const struct opt *main_option(const char *arg)
{
	if (!strcmp(arg, "--license") || !strcmp(arg, "--licenses") || !strcmp(arg, "--licence"))
		arg = "--licences";
	for (const struct opt *o = main_opts; o->name; o++)
		if ((arg[0] == '-' && arg[1] == o->short_name && !arg[2]) ||
		    (!strncmp(arg, "--", 2) && !strcmp(arg + 2, o->name)))
			return o;
	return NULL;
}

/* The help's last lines, "Exit status: 0 ok, 1 error, ...  See pystrobe(1).",
 * from the table of statuses (util/status.c), wrapped under 80 columns. */
#define HELP_WIDTH 79

/* word after sep, or at the start of a new line when the line would be
 * too long (a comma of sep stays at the end of the old one). */
static void put_word(FILE *out, int *col, const char *sep, const char *word)
{
	int n = (int)strlen(word), nsep = (int)strlen(sep);

	if (*col + nsep + n > HELP_WIDTH) {
		fputs(sep[0] == ',' ? ",\n" : "\n", out);
		*col = 0;
	} else {
		fputs(sep, out);
		*col += nsep;
	}
	fputs(word, out);
	*col += n;
}

static void print_exit_statuses(FILE *out)
{
	char word[128];
	int col = 0;

	put_word(out, &col, "", "Exit");
	put_word(out, &col, " ", "status:");
	for (int i = 0; i < EXIT_NR; i++) {
		const char *b = exit_statuses[i].brief;
		const char *end = i == EXIT_NR - 1 ? "." : "";
		int n = (int)strcspn(b, " ");

		/* The code and the first word of its brief stay together. */
		snprintf(word, sizeof(word), "%d %.*s%s", exit_statuses[i].code, n, b,
			 b[n] ? "" : end);
		put_word(out, &col, i ? ", " : " ", word);
		for (b += n; *b; b += n) {
			b++;
			n = (int)strcspn(b, " ");
			snprintf(word, sizeof(word), "%.*s%s", n, b, b[n] ? "" : end);
			put_word(out, &col, " ", word);
		}
	}
	put_word(out, &col, "  ", "See");
	put_word(out, &col, " ", "pystrobe(1).");
	fputc('\n', out);
}

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
	{ "convert", cmd_convert },
	{ "watch", cmd_watch },
	{ "group", cmd_group },
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* One line for a word that is no command, with what was likely meant. */
static int unknown_command(const char *name)
{
	const char *names[ARRAY_SIZE(commands)], *near;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		names[i] = commands[i].name;
	near = suggest(name, names, ARRAY_SIZE(names));
	if (near)
		errorf("unknown command '%s' (did you mean %s? try pystrobe --help)", name, near);
	else if (all_digits(name))
		errorf("unknown command '%s' (did you mean pystrobe dump --pid %s?)", name, name);
	else
		errorf("unknown command '%s' (try pystrobe --help)", name);
	return EXIT_USAGE;
}

/* "pystrobe help record" is "pystrobe record --help". */
static int help(int argc, char **argv)
{
	char *args[] = { argv[2], "--help", NULL };
	const struct command *c;

	if (argc < 3) {
		opt_help(&main_options, stdout);
		print_exit_statuses(stdout);
		return EXIT_OK;
	}
	c = find_command(argv[2]);
	return c ? c->run(2, args) : unknown_command(argv[2]);
}

int main(int argc, char **argv)
{
	const struct command *c;
	const struct opt *o;

	spawn_self_allow();
#ifdef PYSTROBE_STATIC
	/* Nothing but a glibc needed: --slurm may send this binary. */
	fanout_self_contained();
#endif
	if (argc < 2) {
		errorf("no command given (try pystrobe --help)");
		return EXIT_USAGE;
	}
	o = main_option(argv[1]);
	if ((o && o->kind == OPTK_HELP) || !strcmp(argv[1], "help"))
		return help(argc, argv);
	/* Not commands: pystrobe run again as its own SIGSTOP watchdog, or
	 * as the helper that reads a container's files with no privileges. */
	if (!strcmp(argv[1], SUSPEND_WATCHDOG_ARG))
		return selfstop_watchdog_main(argc, argv);
	if (!strcmp(argv[1], SYMHELPER_ARG))
		return symhelper_main(argc, argv);
	if (!strcmp(argv[1], RUNCMD_TIED_ARG))
		return runcmd_tied_main(argc, argv);
	if (o && !strcmp(o->name, "licences")) {
		for (const char *const *l = licence_text; *l; l++)
			fputs(*l, stdout);
		return EXIT_OK;
	}
	if (o) {
		printf("pystrobe %s\n%s%s", PACKAGE_VERSION, build_note, licence_note);
		return EXIT_OK;
	}
	c = find_command(argv[1]);
	return c ? c->run(argc - 1, argv + 1) : unknown_command(argv[1]);
}
