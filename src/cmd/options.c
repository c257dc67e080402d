/* Parsing and --help from a command's option table; see options.h. */
#include "cmd/options.h"
#include "util/status.h"
#include "util/util.h"

#include <getopt.h>
#include <string.h>
#include <sys/types.h>

/* getopt_long's value of an option with no short name: past every char. */
#define LONG_ONLY 256

/* getopt_long's tables of t. */
struct getopt_tables {
	struct option longopts[OPT_MAX + 1];
	char shortopts[2 * OPT_MAX + 3];
};

const struct opt *opt_def(const struct opt *o)
{
	return o->like ? o->like : o;
}

static void add_long(struct getopt_tables *g, int *n, const struct opt_table *t,
		     const struct opt *o)
{
	const struct opt *d = opt_def(o);
	static const int has_arg[] = {
		[OPT_NO_ARG] = no_argument,
		[OPT_ARG] = required_argument,
		[OPT_OPTIONAL_ARG] = optional_argument,
	};

	g->longopts[*n] = (struct option){ d->name, has_arg[d->arg], NULL,
					   d->short_name ? d->short_name :
					   LONG_ONLY + (int)(o - t->opts) };
	(*n)++;
}

/* The shared options first, in their own order, then the command's: a
 * mistyped option as near to two is taken for the first (util/suggest.h),
 * as it was before the tables. */
static void make_tables(const struct opt_table *t, struct getopt_tables *g)
{
	char *s = g->shortopts;
	int n = 0;

	for (const struct opt *sh = t->shared; sh && sh->name; sh++)
		for (const struct opt *o = t->opts; o->name || o->like; o++)
			if (o->like == sh)
				add_long(g, &n, t, o);
	for (const struct opt *o = t->opts; o->name || o->like; o++)
		if (!o->like)
			add_long(g, &n, t, o);
	g->longopts[n] = (struct option){ NULL, 0, NULL, 0 };
	if (t->stop_at_command)
		*s++ = '+';
	/* ':' first: a missing value is told apart from an unknown option. */
	*s++ = ':';
	for (const struct opt *o = t->opts; o->name || o->like; o++) {
		const struct opt *d = opt_def(o);

		if (!d->short_name)
			continue;
		*s++ = d->short_name;
		if (d->arg == OPT_ARG)
			*s++ = ':';
	}
	*s = '\0';
}

/* The entry getopt_long's c stands for, or NULL. */
static const struct opt *entry_of(const struct opt_table *t, int c)
{
	if (c >= LONG_ONLY)
		return &t->opts[c - LONG_ONLY];
	if (c == ':' || c == '?')
		return NULL;
	for (const struct opt *o = t->opts; o->name || o->like; o++)
		if (opt_def(o)->short_name == c)
			return o;
	return NULL;
}

static int apply(const struct opt_table *t, const struct opt *o, void *dest, const char *arg)
{
	const struct opt *d = opt_def(o);
	char *base = (char *)dest + (o->like ? t->shared_at : 0), *at = base + d->field;

	switch (d->kind) {
	case OPTK_BOOL:
		*(bool *)at = true;
		return 0;
	case OPTK_STRING:
		*(const char **)at = arg;
		return 0;
	case OPTK_NUMBER:
		if (parse_number(arg, d->min, d->max, (double *)at) < 0)
			return usage_error(t->cmd, "--%s %s, not '%s'", d->name, d->range, arg);
		return 0;
	case OPTK_PID:
		if (!(*(pid_t *)at = parse_pid(arg)))
			return usage_error(t->cmd, "invalid pid '%s'", arg);
		return 0;
	case OPTK_CALL:
		return d->call(base, arg, t->cmd);
	case OPTK_CALL_AT:
		return d->call(at, arg, t->cmd);
	case OPTK_HELP:
		opt_help(t, stdout);
		return 1;
	}
	return status_fail(EXIT_ERROR);	/* a kind this switch does not know: a bug */
}

int opt_parse(const struct opt_table *t, void *dest, int argc, char **argv)
{
	struct getopt_tables g;
	const struct opt *o;
	int c, rc;

	make_tables(t, &g);
	/* 0, not 1: getopt_long starts afresh, as for the first command line
	 * it is given (the tests parse many). */
	optind = 0;
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
		if (!(o = entry_of(t, c)))
			return usage_getopt(t->cmd, c, argv, g.longopts);
		if ((rc = apply(t, o, dest, optarg)) != 0)
			return rc;
	}
	return 0;
}

static void help_option(const struct opt_table *t, const struct opt *o, FILE *out)
{
	const struct opt *d = opt_def(o);
	const char *help = o->help ? o->help : d->help;
	struct strbuf sb = STRBUF_INIT;
	size_t n;

	if (d->short_name)
		sb_printf(&sb, "  -%c, --%s", d->short_name, d->name);
	else
		sb_printf(&sb, "      --%s", d->name);
	if (d->arg == OPT_ARG)
		sb_printf(&sb, " %s", d->arg_name);
	else if (d->arg == OPT_OPTIONAL_ARG)
		sb_printf(&sb, "[=%s]", d->arg_name);
	/* A name too long for the column gets one space (and the spaces its
	 * help begins with). */
	sb_printf(&sb, "%*s", sb.len < (size_t)t->column ? t->column - (int)sb.len : 1, "");
	while (help[(n = strcspn(help, "\n"))]) {
		sb_printf(&sb, "%.*s\n%*s", (int)n, help, t->column, "");
		help += n + 1;
	}
	sb_printf(&sb, "%s\n", help);
	fputs(sb.buf, out);
	sb_release(&sb);
}

void opt_help(const struct opt_table *t, FILE *out)
{
	fputs(t->head, out);
	for (const struct opt *o = t->opts; o->name || o->like; o++)
		help_option(t, o, out);
	if (t->tail)
		fputs(t->tail, out);
}

int opt_usage_extra(const struct opt_table *t, char **argv, int i, bool pid_hint)
{
	struct getopt_tables g;

	make_tables(t, &g);
	return usage_extra(t->cmd, argv, i, g.longopts, pid_hint);
}

bool opt_value_of_previous(const struct opt_table *t, char **argv, int i)
{
	struct getopt_tables g;

	make_tables(t, &g);
	return optional_value_of_previous(argv, i, g.longopts);
}
