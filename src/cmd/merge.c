/* pystrobe merge: many profiles (of the ranks of a training job, the hosts
 * of a service) as one.
 *
 * Without labels the stacks are summed.  With labels each input gets a
 * root frame "NAME=VALUE" (rank=3, host=web1), so one flame graph shows
 * the inputs side by side, and pprof output carries NAME as a sample
 * label that Pyroscope and Parca filter by.
 *
 * pprof inputs keep their functions, files and lines; when folded and pprof
 * inputs are mixed every frame becomes its text, the only thing a folded
 * file has, so that the same frame from both kinds of file is one frame.
 */
#include "cmd/cmd.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "profile/profile_read.h"
#include "util/util.h"

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct input {
	const char *path;
	const char *value;	/* from FILE=VALUE, or NULL */
	struct profile p;
	enum profile_format fmt;
};

struct merge {
	const char *fname;	/* -f, or NULL */
	const struct out_format *fmt;
	struct out_opts oo;
	const char *output;
	const char *label;	/* label name, NULL: no labels */
	bool quiet;
	struct input *in;
	int nin;
};

/* FILE=VALUE, unless the whole argument names a file: file names with '='
 * exist too. */
static void split_input(struct input *in, char *arg)
{
	char *eq = strrchr(arg, '=');

	in->path = arg;
	in->value = NULL;
	if (!eq || eq == arg || access(arg, F_OK) == 0)
		return;
	*eq = 0;
	in->value = eq + 1;
}

static int label(void *dest, const char *arg, const char *cmd)
{
	struct merge *m = dest;

	(void)arg;
	(void)cmd;
	if (!m->label)
		m->label = "input";
	return 0;
}

static int label_from(void *dest, const char *arg, const char *cmd)
{
	struct merge *m = dest;

	if (!*arg || strpbrk(arg, "=;"))
		return usage_error(cmd, "--label-from needs a name without '=' or ';', not '%s'",
				   arg);
	m->label = arg;
	return 0;
}

#define AT(member) offsetof(struct merge, member)

static const struct opt merge_opts[] = {
	OPT_STRING("output", 'o', "FILE",
		"where to write (default: pystrobe-merge-DATE-TIME.EXT;\n"
		"-: standard output; its ending names the format)", AT(output)),
	OPT_STRING("format", 'f', "FORMAT",
		"flamegraph (SVG, default), collapsed, speedscope or pprof", AT(fname)),
	OPT_CALL("label", 'l', OPT_NO_ARG, NULL,
		"a root frame per input, input=VALUE, VALUE the file's\n"
		"name or the one given as FILE=VALUE", label),
	OPT_CALL("label-from", 0, OPT_ARG, "NAME",
		"a root frame per input, NAME=VALUE, VALUE the one given\n"
		"as FILE=VALUE, else the input's position (0, 1, ...)", label_from),
	OPT_BOOL("full-filenames", 0,
		"whole paths for frames read from pprof", AT(oo.full_filenames)),
	OPT_BOOL("quiet", 'q', "no messages", AT(quiet)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table merge_options = {
	.cmd = "merge",
	.head = "usage: pystrobe merge [options] FILE[=VALUE]...\n"
		"\n"
		"Combine profiles (flame graphs from pystrobe record, pprof, or folded stacks)\n"
		"into one.\n"
		"\n",
	.opts = merge_opts,
	.column = 25,
	.tail = "\n"
		"Without labels the stacks are summed.\n",
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct merge *m, int argc, char **argv)
{
	bool values = false;
	char *names;
	int rc;

	if ((rc = opt_parse(&merge_options, m, argc, argv)) != 0)
		return rc;
	if (out_format_choose("merge", m->fname, m->output, &m->fmt) < 0)
		return status_fail(EXIT_USAGE);
	/* Files keep no sample times, and a trace is made of them. */
	if (m->fmt->times_only) {
		names = out_format_names(out_format_mergeable);
		usage_error("merge", "format '%s' cannot be merged into (%s)", m->fmt->name, names);
		free(names);
		return status_fail(EXIT_USAGE);
	}
	m->nin = argc - optind;
	if (m->nin < 1)
		return usage_error("merge", "give the profiles to merge (see pystrobe merge --help)");
	m->in = xcalloc(m->nin, sizeof(*m->in));
	for (int i = 0; i < m->nin; i++) {
		split_input(&m->in[i], argv[optind + i]);
		values |= m->in[i].value != NULL;
	}
	/* A value given is a label asked for. */
	if (values && !m->label)
		m->label = "input";
	return 0;
}

/* The root frame's text for input i. */
static char *root_text(const struct merge *m, int i)
{
	const struct input *in = &m->in[i];
	const char *base = strrchr(in->path, '/');

	if (in->value)
		return xasprintf("%s=%s", m->label, in->value);
	if (strcmp(m->label, "input"))
		return xasprintf("%s=%d", m->label, i);
	return xasprintf("%s=%s", m->label, base ? base + 1 : in->path);
}

/* What the merged profile says about where it came from: the inputs' rate
 * when they agree (pprof values are counts times the interval); the sum
 * of the durations, which the summed samples were taken over (pprof shows
 * the samples as a share of it); the earliest start; wall time when every
 * input is. */
static void merge_metadata(struct merge *m, struct profile *out)
{
	struct strbuf cmd = STRBUF_INIT;
	bool same_rate = true;

	out->wall = true;
	for (int i = 0; i < m->nin; i++) {
		const struct profile *p = &m->in[i].p;

		out->duration_ns += p->duration_ns;
		if (p->start_unix_ns && (!out->start_unix_ns || p->start_unix_ns < out->start_unix_ns))
			out->start_unix_ns = p->start_unix_ns;
		out->wall &= p->wall;
		if (p->rate_hz != m->in[0].p.rate_hz)
			same_rate = false;
		sb_printf(&cmd, "%s%s", i ? " " : "pystrobe merge ", m->in[i].path);
	}
	if (same_rate && m->in[0].p.rate_hz > 0) {
		out->rate_hz = m->in[0].p.rate_hz;
		out->interval_ns = m->in[0].p.interval_ns;
	}
	out->command = sb_detach(&cmd);
}

static int merge_inputs(struct merge *m, struct profile *out)
{
	struct append_opts ao = { .full_filenames = m->oo.full_filenames };
	bool folded = false, pprof = false;

	for (int i = 0; i < m->nin; i++) {
		folded |= m->in[i].fmt == PROFILE_FOLDED;
		pprof |= m->in[i].fmt != PROFILE_FOLDED;
	}
	ao.by_label = folded && pprof;
	profile_init(out, 0);
	for (int i = 0; i < m->nin; i++) {
		struct pframe root = { PF_LABEL, NULL, NULL, -1, -1 };
		bool ok;

		if (m->label) {
			root.name = root_text(m, i);
			ao.root = &root;
		}
		ok = profile_append(out, &m->in[i].p, &ao);
		free(root.name);
		if (!ok) {
			errorf("merge: the counts add up to more than 2^64");
			return status_fail(EXIT_BAD_INPUT);
		}
	}
	merge_metadata(m, out);
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	struct merge m = { 0 };
	struct profile out;
	char err[PROFILE_READ_ERR], *path = NULL, *subtitle = NULL;
	int rc, nread = 0;

	rc = parse_args(&m, argc, argv);
	if (rc) {
		free(m.in);
		return rc > 0 ? EXIT_OK : exit_code(rc);
	}
	for (; nread < m.nin; nread++) {
		struct input *in = &m.in[nread];

		rc = profile_read(in->path, &in->p, &in->fmt, err, sizeof(err));
		if (rc < 0) {
			errorf("merge: %s", err);
			goto out;
		}
	}
	if ((rc = merge_inputs(&m, &out)) < 0)
		goto free_out;
	path = m.output ? xstrdup(m.output) : out_default_name("merge", m.fmt);
	subtitle = xasprintf("%d profile%s merged%s, %llu samples", m.nin, m.nin == 1 ? "" : "s",
			     m.label ? ", a root per input" : "",
			     (unsigned long long)out.samples);
	m.oo.title = out.command;
	m.oo.subtitle = subtitle;
	rc = out_write_file(m.fmt, &out, &m.oo, path, "merge");
	if (rc == 0 && !m.quiet)
		errorf("merge: %d profile%s, %llu samples; wrote %s", m.nin,
		       m.nin == 1 ? "" : "s", (unsigned long long)out.samples, out_path_name(path));
free_out:
	profile_free(&out);
out:
	while (nread-- > 0)
		profile_free(&m.in[nread].p);
	free(m.in);
	free(path);
	free(subtitle);
	return exit_code(rc);
}
