/* The option tables (src/cmd/options.c) and every command's.
 *
 * One parser: --name=VALUE, --name VALUE, -x VALUE, -xVALUE, bundled
 * flags, abbreviations, an optional value only after '=', the first word
 * that is no option ending them (or not), "--"; a value out of range, an
 * unknown option and a missing value said in one line each.  --help: the
 * names, their values, the column, continuation lines.  Every command's
 * table: names and letters once, help for each entry, a value named, and
 * -f's help naming exactly the formats the command writes (the format
 * table's .diff and .times_only).  py-spy's --nonblocking, the default of
 * record and top: taken, and refused beside --blocking or --native.
 */
#include <check.h>
#include <ctype.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/target_opts.h"
#include "profile/output.h"
#include "suite.h"
#include "target.h"
#include "util/status.h"
#include "util/util.h"

struct args {
	bool flag, other;
	const char *str;
	double num;
	pid_t pid;
	const char *opt;	/* --opt's value, "(none)" without one */
	int calls;
};

static int opt_call(void *dest, const char *arg, const char *cmd)
{
	struct args *a = dest;

	(void)cmd;
	a->opt = arg ? arg : "(none)";
	a->calls++;
	return 0;
}

#define AT(member) offsetof(struct args, member)

static const struct opt test_opts[] = {
	OPT_BOOL("flag", 'a', "a flag", AT(flag)),
	OPT_BOOL("other", 'b', "another\nwith a second line", AT(other)),
	OPT_STRING("string", 's', "TEXT", "a string", AT(str)),
	OPT_NUMBER("number", 'n', "N", "a number", AT(num), 1, 10, "must be from 1 to 10"),
	OPT_PID("pid", 'p', "a pid", AT(pid)),
	OPT_CALL("optional", 0, OPT_OPTIONAL_ARG, "all", "called", opt_call),
	OPT_BOOL("a-very-long-option-name", 0, "  two spaces", AT(other)),
	OPT_HELP("show this help"),
	OPT_END,
};

static const struct opt_table test_table = {
	.cmd = "test",
	.head = "usage: test\n\n",
	.opts = test_opts,
	.column = 20,
	.tail = "\nthe end\n",
	.stop_at_command = true,
};

static const struct opt_table test_permuting = {
	.cmd = "test",
	.head = "",
	.opts = test_opts,
	.column = 20,
};

/* Parse the words of line (argv[0] first) into a; returns opt_parse()'s
 * result, and what it said on stderr in err (room for size). */
static int parse(const struct opt_table *t, struct args *a, const char *line, char *err,
		 size_t size, int *end, char ***argvp)
{
	static char buf[512];
	static char *argv[32];
	FILE *tmp = tmpfile();
	int argc = 0, saved = dup(2), rc;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	memset(a, 0, sizeof(*a));
	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = opt_parse(t, a, argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, size - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	if (end)
		*end = optind;
	if (argvp)
		*argvp = argv;
	return rc;
}

START_TEST(test_forms)
{
	struct args a;
	char err[512], **argv;
	int end;

	ck_assert_int_eq(parse(&test_table, &a, "t --string=x --number 3 -p7 -ab", err,
			       sizeof(err), &end, NULL), 0);
	ck_assert(a.flag && a.other && !strcmp(a.str, "x") && a.num == 3 && a.pid == 7);
	ck_assert_int_eq(end, 6);
	ck_assert_int_eq(parse(&test_table, &a, "t -s y -n4 --num=5 --str z", err, sizeof(err),
			       NULL, NULL), 0);
	ck_assert(!strcmp(a.str, "z") && a.num == 5);
	/* An optional value goes after '=' only: the next word is none. */
	ck_assert_int_eq(parse(&test_table, &a, "t --optional all", err, sizeof(err), &end,
			       &argv), 0);
	ck_assert_str_eq(a.opt, "(none)");
	ck_assert_int_eq(end, 2);
	ck_assert(opt_value_of_previous(&test_table, argv, end));
	ck_assert_int_eq(parse(&test_table, &a, "t --optional=all", err, sizeof(err), NULL,
			       NULL), 0);
	ck_assert(!strcmp(a.opt, "all") && a.calls == 1);
	/* The first word that is no option ends them, or "--" does. */
	ck_assert_int_eq(parse(&test_table, &a, "t -a cmd -b", err, sizeof(err), &end, NULL), 0);
	ck_assert(a.flag && !a.other && end == 2);
	ck_assert_int_eq(parse(&test_table, &a, "t -a -- -b", err, sizeof(err), &end, &argv), 0);
	ck_assert(!a.other && end == 3 && !strcmp(argv[end - 1], "--"));
	/* Unless the table takes options anywhere. */
	ck_assert_int_eq(parse(&test_permuting, &a, "t file -b", err, sizeof(err), &end, &argv),
			 0);
	ck_assert(a.other && end == 2 && !strcmp(argv[end], "file"));
}
END_TEST

START_TEST(test_errors)
{
	static const struct {
		const char *line, *said;
	} cases[] = {
		{ "t --number 11", "pystrobe: test: --number must be from 1 to 10, not '11'\n" },
		{ "t -nx", "pystrobe: test: --number must be from 1 to 10, not 'x'\n" },
		{ "t --pid=0", "pystrobe: test: invalid pid '0'\n" },
		{ "t -s", "pystrobe: test: -s needs a value (see pystrobe test --help)\n" },
		{ "t --string", "pystrobe: test: --string needs a value (see pystrobe test --help)\n" },
		{ "t --flga", "pystrobe: test: unknown option '--flga' (did you mean --flag? see "
			      "pystrobe test --help)\n" },
		{ "t --zzz", "pystrobe: test: unknown option '--zzz' (see pystrobe test --help)\n" },
		/* An abbreviation of two. */
		{ "t --o", "pystrobe: test: unknown option '--o' (see pystrobe test --help)\n" },
		{ "t -z", "pystrobe: test: unknown option '-z' (see pystrobe test --help)\n" },
		{ "t --flag=1", "pystrobe: test: unknown option '--flag=1' (did you mean --flag? see "
				"pystrobe test --help)\n" },
	};
	struct args a;
	char err[512];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int rc = parse(&test_table, &a, cases[i].line, err, sizeof(err), NULL, NULL);

		ck_assert_msg(is_fail(rc, EXIT_USAGE), "%s: not refused (%d)", cases[i].line, rc);
		ck_assert_msg(!strcmp(err, cases[i].said), "%s: said '%s', not '%s'", cases[i].line,
			      err, cases[i].said);
	}
}
END_TEST

START_TEST(test_help)
{
	static const char want[] =
		"usage: test\n"
		"\n"
		"  -a, --flag        a flag\n"
		"  -b, --other       another\n"
		"                    with a second line\n"
		"  -s, --string TEXT a string\n"
		"  -n, --number N    a number\n"
		"  -p, --pid PID     a pid\n"
		"      --optional[=all] called\n"
		"      --a-very-long-option-name   two spaces\n"
		"  -h, --help        show this help\n"
		"\n"
		"the end\n";
	char *buf = NULL, err[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct args a;

	opt_help(&test_table, f);
	fclose(f);
	ck_assert_str_eq(buf, want);
	free(buf);
	ck_assert_int_eq(parse(&test_table, &a, "t -a -h --bogus", err, sizeof(err), NULL, NULL),
			 1);
}
END_TEST

static const struct opt_table *const tables[] = {
	&dump_options, &record_options, &top_options, &diff_options,
	&merge_options, &convert_options, &watch_options, &group_options,
};

/* Names and letters once, every entry with help and a named value. */
START_TEST(test_tables)
{
	char *msg = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(tables); i++) {
		const struct opt_table *t = tables[i];
		int n = 0;

		for (const struct opt *o = t->opts; o->name || o->like; o++, n++) {
			const struct opt *d = opt_def(o);

			if (!(o->help ? o->help : d->help))
				msg_add(&msg, "%s --%s: no help", t->cmd, d->name);
			if (d->arg != OPT_NO_ARG && !d->arg_name)
				msg_add(&msg, "%s --%s: its value has no name", t->cmd, d->name);
			if (o->like && !t->shared)
				msg_add(&msg, "%s --%s: shared, but the table has none", t->cmd, d->name);
			for (const struct opt *p = t->opts; p < o; p++) {
				if (!strcmp(opt_def(p)->name, d->name))
					msg_add(&msg, "%s: --%s twice", t->cmd, d->name);
				if (d->short_name && opt_def(p)->short_name == d->short_name)
					msg_add(&msg, "%s: -%c twice", t->cmd, d->short_name);
			}
		}
		if (n > OPT_MAX)
			msg_add(&msg, "%s: %d options, OPT_MAX is %d", t->cmd, n, OPT_MAX);
	}
	ck_assert_msg(!msg, "%s", msg);
}
END_TEST

/* Whether text names format as a word ("flamegraph.pl" is not one). */
static bool names_format(const char *text, const char *format)
{
	size_t n = strlen(format);

	for (const char *p = text; (p = strstr(p, format)); p++)
		if ((p == text || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]) &&
		    p[n] != '.')
			return true;
	return false;
}

/* -f's help names what the command writes, no more, no less. */
START_TEST(test_format_help)
{
	static const struct {
		const struct opt_table *t;
		bool (*pick)(const struct out_format *f);
	} writers[] = {
		{ &record_options, NULL },
		{ &convert_options, NULL },
		{ &diff_options, out_format_diff },
		{ &merge_options, out_format_mergeable },
	};
	char *msg = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(writers); i++) {
		const struct opt *o = writers[i].t->opts;

		while ((o->name || o->like) && strcmp(opt_def(o)->name, "format"))
			o++;
		ck_assert_msg(o->name, "%s: no --format", writers[i].t->cmd);
		for (const struct out_format *f = out_formats; f->name; f++) {
			bool writes = !writers[i].pick || writers[i].pick(f);

			if (writes != names_format(o->help, f->name))
				msg_add(&msg, "%s --format: its help %s %s", writers[i].t->cmd,
					writes ? "does not name" : "names", f->name);
		}
	}
	ck_assert_msg(!msg, "%s", msg);
}
END_TEST

/* --nonblocking, py-spy's name for what record and top do anyway: parsed
 * into the shared options, nothing paused; with --blocking or --native
 * (which pause) one line and exit 2. */
START_TEST(test_nonblocking)
{
	const struct opt_table *both[] = { &record_options, &top_options };
	char why[64];
	struct run r;

	for (size_t i = 0; i < ARRAY_SIZE(both); i++) {
		const struct opt_table *t = both[i];
		/* Only the shared options are parsed: room for them is enough. */
		char *dest = xcalloc(1, t->shared_at + sizeof(struct target_opts));
		struct target_opts *o = (struct target_opts *)(dest + t->shared_at);
		char *argv[] = { (char *)t->cmd, "--nonblocking", "--pid", "7", NULL };
		int rc;

		optind = 0;
		rc = opt_parse(t, dest, 4, argv);
		ck_assert_msg(rc == 0, "%s --nonblocking: %d", t->cmd, rc);
		ck_assert_msg(target_opts_finish(o, t, 4, argv) == 0, "%s: refused", t->cmd);
		ck_assert_msg(o->nonblocking && !o->so.blocking && o->pid == 7, "%s: not parsed",
			      t->cmd);
		free(dest);
		ck_assert_int_eq(run_pystrobe(&r, t->cmd, "--nonblocking", "--blocking", "--pid",
					      "1", NULL), 0);
		ck_assert_msg(run_exit(&r) == 2 && run_one_error_line(&r) &&
			      strstr(r.err, "--nonblocking cannot be used with --blocking"),
			      "%s --nonblocking --blocking: %s: %s", t->cmd,
			      run_describe(&r, why, sizeof(why)), r.err);
		run_free(&r);
		ck_assert_int_eq(run_pystrobe(&r, t->cmd, "--native", "--nonblocking", "--pid", "1",
					      NULL), 0);
		ck_assert_msg(run_exit(&r) == 2 && strstr(r.err, "with --native"),
			      "%s --native --nonblocking: %s: %s", t->cmd,
			      run_describe(&r, why, sizeof(why)), r.err);
		run_free(&r);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, test_forms);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_tables);
	tcase_add_test(tc, test_format_help);
	tcase_add_test(tc, test_nonblocking);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
