/* A command's options as one table: it parses the command line (through
 * getopt_long, whose tables are made from it), prints --help, and is what
 * the tests hold the man pages and the shell completion to.
 *
 * An entry names the option, its value, its lines in --help and what it
 * does: set a bool, keep its value (a string, a number in a range, a pid)
 * or call a function.  The options record and top share are defined once
 * (cmd/target_opts.c); a command's entry takes one of them .like it,
 * with --help lines of its own where they differ.
 */
#ifndef PYSTROBE_OPTIONS_H
#define PYSTROBE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum opt_arg {
	OPT_NO_ARG,
	OPT_ARG,		/* --name VALUE, --name=VALUE, -x VALUE, -xVALUE */
	OPT_OPTIONAL_ARG,	/* --name or --name=VALUE; -x takes none */
};

enum opt_kind {
	OPTK_BOOL,		/* the bool at .field becomes true */
	OPTK_STRING,		/* the const char * at .field is the value */
	OPTK_NUMBER,		/* the double at .field, from .min to .max */
	OPTK_PID,		/* the pid_t at .field */
	OPTK_CALL,		/* .call() on the struct parsed into */
	OPTK_CALL_AT,		/* .call() on its member at .field */
	OPTK_HELP,		/* --help: printed, and parsing ends */
};

struct opt {
	const char *name;	/* --name */
	char short_name;	/* -x, or 0 */
	enum opt_arg arg;
	/* --help's name of the value: "PID" is "--pid PID"; for an optional
	 * one, "all" is "--native[=all]". */
	const char *arg_name;
	/* Its lines in --help, '\n' between them: the command's table
	 * indents them (struct opt_table's column). */
	const char *help;
	enum opt_kind kind;
	size_t field;		/* offset in the struct parsed into */
	double min, max;	/* OPTK_NUMBER: the range, and what a value */
	const char *range;	/* out of it is told: "--name RANGE, not 'VALUE'" */
	/* OPTK_CALL: given the struct parsed into (OPTK_CALL_AT: its member
	 * at .field, so that commands whose structs differ share one
	 * function) and the value (NULL when an optional one was not given);
	 * 0, or status_fail(EXIT_USAGE) after a usage error. */
	int (*call)(void *dest, const char *arg, const char *cmd);
	/* A shared option: everything but .help (when given) is like's, and
	 * it acts on the struct at the table's .shared offset. */
	const struct opt *like;
};

struct opt_table {
	const char *cmd;
	const char *head;	/* --help: the usage lines, down to the options */
	const char *tail;	/* and after them */
	int column;		/* where the options' help lines start */
	bool stop_at_command;	/* the first word that is no option ends them */
	const struct opt *opts;	/* in --help's order, ended by OPT_END */
	/* The options .like entries take theirs from (ended by OPT_END),
	 * and where in the struct parsed into they act. */
	const struct opt *shared;
	size_t shared_at;
};

/* A table's entries, by what they do: field is offsetof() the struct
 * parsed into, help the lines of --help. */
#define OPT_BOOL(long_name, short_name_, help_, field_) \
	{ .name = long_name, .short_name = short_name_, .help = help_, .kind = OPTK_BOOL, \
	  .field = field_ }
#define OPT_STRING(long_name, short_name_, arg_name_, help_, field_) \
	{ .name = long_name, .short_name = short_name_, .arg = OPT_ARG, .arg_name = arg_name_, \
	  .help = help_, .kind = OPTK_STRING, .field = field_ }
/* range_ says what a value must be: "must be between 1 and 10". */
#define OPT_NUMBER(long_name, short_name_, arg_name_, help_, field_, min_, max_, range_) \
	{ .name = long_name, .short_name = short_name_, .arg = OPT_ARG, .arg_name = arg_name_, \
	  .help = help_, .kind = OPTK_NUMBER, .field = field_, .min = min_, .max = max_, \
	  .range = range_ }
#define OPT_PID(long_name, short_name_, help_, field_) \
	{ .name = long_name, .short_name = short_name_, .arg = OPT_ARG, .arg_name = "PID", \
	  .help = help_, .kind = OPTK_PID, .field = field_ }
#define OPT_CALL(long_name, short_name_, arg_, arg_name_, help_, call_) \
	{ .name = long_name, .short_name = short_name_, .arg = arg_, .arg_name = arg_name_, \
	  .help = help_, .kind = OPTK_CALL, .call = call_ }
#define OPT_CALL_AT(long_name, short_name_, arg_, arg_name_, help_, field_, call_) \
	{ .name = long_name, .short_name = short_name_, .arg = arg_, .arg_name = arg_name_, \
	  .help = help_, .kind = OPTK_CALL_AT, .field = field_, .call = call_ }
#define OPT_HELP(help_) \
	{ .name = "help", .short_name = 'h', .help = help_, .kind = OPTK_HELP }
#define OPT_END { .name = NULL }

/* The most options a command has. */
#define OPT_MAX 32

/* What entry o is: its own fields, or its shared option's. */
const struct opt *opt_def(const struct opt *o);

/* Parse argv's options into dest.  Returns 0 with optind at the first
 * word that is not an option's, 1 after --help (printed on stdout),
 * status_fail(EXIT_USAGE) after a usage error (said on stderr as
 * "CMD: ..."). */
int opt_parse(const struct opt_table *t, void *dest, int argc, char **argv);

/* t's --help. */
void opt_help(const struct opt_table *t, FILE *out);

/* usage_extra() and optional_value_of_previous() (util.h) of t's
 * options. */
int opt_usage_extra(const struct opt_table *t, char **argv, int i, bool pid_hint);
bool opt_value_of_previous(const struct opt_table *t, char **argv, int i);

#endif
