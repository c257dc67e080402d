/* pystrobe convert: one profile into another format; a flight recording
 * (what `watch` writes on a stall) into any format, whole or a time slice
 * of it relative to its mark (the stall).
 *
 * A recording is the one input that keeps sample times, so it is the one
 * that converts to a Chrome trace and to speedscope's time order, and the
 * one --from and --until apply to.  Slices are half-open, from <= t <
 * until, so that consecutive slices hold every sample exactly once.
 */
#include "cmd/cmd.h"
#include "profile/flightrec.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "profile/profile_read.h"
#include "util/util.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct convert {
	const char *fname;	/* -f, or NULL */
	const struct out_format *fmt;
	struct out_opts oo;
	const char *output;
	const char *input;
	struct flightrec_slice slice;
	bool sliced;
	bool quiet;
};

/* SECONDS of --from or --until, as ns. */
static int parse_seconds(const char *opt, const char *arg, int64_t *ns)
{
	double s;

	/* A billion seconds is 31 years: anything past it is a typo. */
	if (parse_number(arg, -1e9, 1e9, &s) < 0)
		return usage_error("convert", "%s takes seconds relative to the recording's mark "
				   "(-120: two minutes before it), not '%s'", opt, arg);
	*ns = llround(s * 1e9);
	return 0;
}

static int from(void *dest, const char *arg, const char *cmd)
{
	struct convert *c = dest;

	(void)cmd;
	c->sliced = true;
	return parse_seconds("--from", arg, &c->slice.from_ns);
}

static int until(void *dest, const char *arg, const char *cmd)
{
	struct convert *c = dest;

	(void)cmd;
	c->sliced = true;
	return parse_seconds("--until", arg, &c->slice.until_ns);
}

#define AT(member) offsetof(struct convert, member)

static const struct opt convert_opts[] = {
	OPT_STRING("output", 'o', "FILE",
		"where to write (default: pystrobe-convert-DATE-TIME.EXT;\n"
		"-: standard output; its ending names the format)", AT(output)),
	OPT_STRING("format", 'f', "FORMAT",
		"flamegraph (SVG, default), collapsed, speedscope,\n"
		"chrometrace (recordings only) or pprof", AT(fname)),
	OPT_CALL("from", 0, OPT_ARG, "SECONDS",
		"only samples from SECONDS after the recording's mark\n"
		"(the stall; negative: before it), or after its last\n"
		"sample when it has no mark (default: its start)", from),
	OPT_CALL("until", 0, OPT_ARG, "SECONDS",
		"only samples before SECONDS after the mark (default:\n"
		"its end)", until),
	OPT_BOOL("full-filenames", 0, "whole paths in frames", AT(oo.full_filenames)),
	OPT_BOOL("quiet", 'q', "no messages", AT(quiet)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table convert_options = {
	.cmd = "convert",
	.head = "usage: pystrobe convert [options] FILE\n"
		"\n"
		"Write a profile in another format: a flight recording (pystrobe watch) whole\n"
		"or a time slice of it, or a flame graph, pprof or folded stacks file.\n"
		"\n",
	.opts = convert_opts,
	.column = 25,
	.tail = "\n"
		"  pystrobe convert --from -120 --until 0 -o before.svg stall.pstrobe\n",
	/* Not stop_at_command: the file may come first. */
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct convert *c, int argc, char **argv)
{
	int rc;

	c->slice = (struct flightrec_slice)FLIGHTREC_ALL;
	/* "-120" is a value, not an option: '-' values need no '='. */
	if ((rc = opt_parse(&convert_options, c, argc, argv)) != 0)
		return rc;
	if (out_format_choose("convert", c->fname, c->output, &c->fmt) < 0)
		return status_fail(EXIT_USAGE);
	if (c->slice.from_ns >= c->slice.until_ns)
		return usage_error("convert", "--from must come before --until");
	if (optind != argc - 1)
		return argc - optind > 1 ?
			       opt_usage_extra(&convert_options, argv, optind + 1, false) :
			       usage_error("convert", "give the file to convert (see pystrobe convert "
					   "--help)");
	c->input = argv[optind];
	return 0;
}

static void seconds(char *buf, size_t size, int64_t ns)
{
	if (ns == INT64_MIN || ns == INT64_MAX)
		snprintf(buf, size, "%s", ns < 0 ? "its start" : "its end");
	else
		snprintf(buf, size, "%+.1f s", (double)ns / 1e9);
}

/* "N samples from -120.0 s until +0.0 s of the mark (of M)", for the
 * subtitle and the message. */
static char *describe(const struct convert *c, const struct profile *p,
		      const struct flightrec_info *info, enum profile_format fmt)
{
	char from[32], until[32];

	if (fmt != PROFILE_RECORDING)
		return xasprintf("%llu samples", (unsigned long long)p->samples);
	if (!c->sliced)
		return xasprintf("flight recording, %llu samples", (unsigned long long)p->samples);
	seconds(from, sizeof(from), c->slice.from_ns);
	seconds(until, sizeof(until), c->slice.until_ns);
	return xasprintf("flight recording, %llu samples from %s until %s of the %s (of %llu)",
			 (unsigned long long)p->samples, from, until,
			 info->mark_unix_ns ? "mark" : "last sample",
			 (unsigned long long)info->samples);
}

int cmd_convert(int argc, char **argv)
{
	struct convert c = { 0 };
	struct flightrec_info info;
	enum profile_format fmt = PROFILE_FOLDED;
	struct profile p;
	char err[PROFILE_READ_ERR], *path = NULL, *what = NULL;
	int rc;

	rc = parse_args(&c, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	rc = profile_read_slice(c.input, c.sliced ? &c.slice : NULL, &info, &p, &fmt, err,
				sizeof(err));
	if (rc < 0) {
		/* A slice that missed, or one of a file without times, is
		 * the command line's mistake; anything else the file's. */
		errorf("convert: %s", err);
		return exit_code(rc);
	}
	if (c.fmt->times_only && !p.nruns) {
		errorf("convert: %s has no sample times, which a Chrome trace is made of: only "
		       "flight recordings (pystrobe watch) convert to chrometrace", c.input);
		rc = status_fail(EXIT_USAGE);
		goto out;
	}
	path = c.output ? xstrdup(c.output) : out_default_name("convert", c.fmt);
	what = describe(&c, &p, &info, fmt);
	c.oo.title = p.command;
	c.oo.subtitle = what;
	rc = out_write_file(c.fmt, &p, &c.oo, path, "convert");
	if (rc == 0 && !c.quiet)
		errorf("convert: %s; wrote %s", what, out_path_name(path));
out:
	profile_free(&p);
	free(path);
	free(what);
	return exit_code(rc);
}
