/* pystrobe diff: two profiles against each other, as a differential flame
 * graph (or two-count folded file) and a summary of what grew and shrank.
 *
 * Frames are compared by the text they show ("function (file:line)", as
 * `record -f collapsed` writes it), because that is all a folded file
 * has (a flame graph carries its stacks as folded text); pprof inputs are
 * turned into the same text.  When one profile has line numbers and the
 * other has none (recorded with --function), lines are dropped from both,
 * or nothing would match.  Thread and process roots
 * (--threads, -s) lose their ids, which no two runs share.
 *
 * Counts are compared as shares of each profile's total, so a recording of
 * 30 s and one of 60 s compare; the changes are then given in AFTER's
 * samples (BEFORE scaled to AFTER's total).  --no-normalize compares the
 * raw counts, for recordings of the same fixed amount of work.
 *
 * The summary's tables leave out functions under --min-share of the samples
 * in both profiles: a few samples of a short run's imports would otherwise
 * fill them with [new] and [gone] rows that are only sampling luck.
 */
#include "cmd/cmd.h"
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

struct diff {
	const char *path[2];		/* BEFORE, AFTER */
	const char *fname;		/* -f, or NULL */
	const struct out_format *fmt;
	struct out_opts oo;
	const char *output;
	bool by_function, quiet;
	double top;
	double min_share;	/* in percent */
};

#define DIFF_MIN_SHARE 0.5

#define AT(member) offsetof(struct diff, member)

static const struct opt diff_opts[] = {
	OPT_STRING("output", 'o', "FILE",
		"where to write (default: pystrobe-diff-DATE-TIME.EXT;\n"
		"-: standard output, without the summary; its\n"
		"ending names the format)", AT(output)),
	OPT_STRING("format", 'f', "FORMAT",
		"flamegraph (SVG, default) or collapsed (BEFORE AFTER\n"
		"counts per stack, as flamegraph.pl reads them)", AT(fname)),
	OPT_BOOL("negate", 0,
		"draw BEFORE's shape instead (shows what went away)", AT(oo.diff_negate)),
	OPT_BOOL("no-normalize", 0,
		"compare raw counts, not shares of each total", AT(oo.diff_raw)),
	OPT_BOOL("function", 0, "compare by function, ignoring line numbers", AT(by_function)),
	OPT_BOOL("full-filenames", 0,
		"whole paths for frames read from pprof", AT(oo.full_filenames)),
	OPT_NUMBER("top", 'n', "N", "rows per table in the summary (default 10, 0: none)",
		AT(top), 0, 1e6, "must be a number of rows"),
	OPT_NUMBER("min-share", 0, "PCT",
		"leave out of the tables functions under PCT% of the\n"
		"samples in both profiles (default 0.5; 0 keeps all)",
		AT(min_share), 0, 100, "must be a percentage (0 to 100)"),
	OPT_BOOL("quiet", 'q', "no summary, no messages", AT(quiet)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table diff_options = {
	.cmd = "diff",
	.head = "usage: pystrobe diff [options] BEFORE AFTER\n"
		"\n"
		"Compare two profiles (flame graphs from pystrobe record, pprof, or folded\n"
		"stacks): a differential flame graph of AFTER, each frame red where its own\n"
		"time grew and blue where it shrank, and a summary on stdout of the functions\n"
		"that changed most.\n"
		"Thread and process roots (--threads, -s) match by thread name and command\n"
		"line: their ids differ from run to run.\n"
		"\n",
	.opts = diff_opts,
	.column = 25,
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct diff *d, int argc, char **argv)
{
	char *names;
	int rc;

	d->top = 10;
	d->min_share = DIFF_MIN_SHARE;
	if ((rc = opt_parse(&diff_options, d, argc, argv)) != 0)
		return rc;
	if (out_format_choose("diff", d->fname, d->output, &d->fmt) < 0)
		return status_fail(EXIT_USAGE);
	if (!d->fmt->diff) {
		names = out_format_names(out_format_diff);
		usage_error("diff", "format '%s' cannot show a difference (%s)", d->fmt->name,
			    names);
		free(names);
		return status_fail(EXIT_USAGE);
	}
	if (argc - optind != 2)
		return usage_error("diff", "give two profiles, BEFORE and AFTER "
				   "(see pystrobe diff --help)");
	d->path[0] = argv[optind];
	d->path[1] = argv[optind + 1];
	return 0;
}

/* --- comparing ------------------------------------------------------------ */

/* Whether any frame shows a line number. */
static bool has_lines(const struct profile *p, bool full)
{
	bool found = false;

	for (uint32_t i = 0; i < p->nframes && !found; i++) {
		char *l = pframe_label(&p->frames[i], full);
		size_t n = strlen(l);

		label_strip_line(l);
		found = strlen(l) != n;
		free(l);
	}
	return found;
}

/* BEFORE and AFTER as text frames in one frame table: the same id is the
 * same frame in both, which is what the writers' diff mode needs. */
static bool align(const struct profile *before, const struct profile *after,
		  const struct append_opts *ao, struct profile *b, struct profile *a)
{
	uint32_t n;
	bool ok;

	profile_init(a, 0);
	profile_init(b, 0);
	ok = profile_append(a, after, ao);
	for (uint32_t i = 0; i < a->nframes; i++)
		profile_frame(b, &a->frames[i]);
	ok = ok && profile_append(b, before, ao);
	n = b->nframes;
	for (uint32_t i = a->nframes; i < n; i++)
		profile_frame(a, &b->frames[i]);
	return ok;
}

/* Per frame: samples with it as the leaf (self) and samples with it
 * anywhere on the stack (total, once per stack however deep the
 * recursion). */
struct counts {
	uint64_t *self, *total;
};

static void count_frames(const struct profile *p, uint32_t nframes, struct counts *c)
{
	uint32_t *seen = xcalloc(nframes ? nframes : 1, sizeof(*seen));

	c->self = xcalloc(nframes ? nframes : 1, sizeof(*c->self));
	c->total = xcalloc(nframes ? nframes : 1, sizeof(*c->total));
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];

		if (!s->count || !s->depth)
			continue;
		c->self[s->frames[s->depth - 1]] += s->count;
		for (uint32_t k = 0; k < s->depth; k++) {
			uint32_t f = s->frames[k];

			if (seen[f] == i + 1)
				continue;
			seen[f] = i + 1;
			c->total[f] += s->count;
		}
	}
	free(seen);
}

/* --- the summary ---------------------------------------------------------- */

struct row {
	uint32_t frame;
	uint64_t before, after;
	double delta;		/* in AFTER's samples */
	double pts;		/* change of the share, in percentage points */
};

struct summary {
	const struct diff *d;
	const struct profile *b, *a;	/* aligned */
	uint64_t tb, ta;		/* totals */
	struct row *rows;
	uint32_t nrows;
};

/* Under --min-share in both profiles. */
static bool noise(const struct summary *s, uint64_t before, uint64_t after)
{
	double min = s->d->min_share;

	return 100.0 * before < min * s->tb && 100.0 * after < min * s->ta;
}

static void make_rows(struct summary *s, const uint64_t *before, const uint64_t *after)
{
	uint32_t n = s->a->nframes;

	s->rows = xcalloc(n ? n : 1, sizeof(*s->rows));
	s->nrows = 0;
	for (uint32_t f = 0; f < n; f++) {
		struct row *r = &s->rows[s->nrows];

		if ((!before[f] && !after[f]) || noise(s, before[f], after[f]))
			continue;
		r->frame = f;
		r->before = before[f];
		r->after = after[f];
		r->pts = 100.0 * r->after / s->ta - 100.0 * r->before / s->tb;
		if (s->d->oo.diff_raw)
			r->delta = (double)r->after - (double)r->before;
		else
			r->delta = r->after - (double)r->before * s->ta / s->tb;
		s->nrows++;
	}
}

static int cmp_grew(const void *x, const void *y)
{
	const struct row *a = x, *b = y;

	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	return a->frame < b->frame ? -1 : a->frame > b->frame;
}

static void pct(char *buf, size_t size, uint64_t n, uint64_t total)
{
	snprintf(buf, size, "%.1f%%", total ? 100.0 * n / total : 0);
}

static void print_row(const struct summary *s, const struct row *r, const uint64_t *other)
{
	struct strbuf name = STRBUF_INIT;
	char *label = pframe_label(&s->a->frames[r->frame], true);
	char pb[16], pa[16];

	pct(pb, sizeof(pb), r->before, s->tb);
	pct(pa, sizeof(pa), r->after, s->ta);
	/* Names come from files anyone can write: never raw to a terminal. */
	sb_add_printable(&name, label);
	printf("%10llu %6s %10llu %6s %+10lld %+8.2f  %s%s\n", (unsigned long long)r->before,
	       pb, (unsigned long long)r->after, pa, (long long)llround(r->delta), r->pts,
	       name.buf ? name.buf : "", other[r->frame] ? "" :
	       r->after ? "  [new]" : "  [gone]");
	sb_release(&name);
	free(label);
}

/* `other` is the total counts of the frame on the other side, to mark
 * frames one profile does not have at all. */
static void print_table(struct summary *s, const char *what, const uint64_t *before,
			const uint64_t *after, const uint64_t *tb_any, const uint64_t *ta_any)
{
	uint32_t shown = 0;

	make_rows(s, before, after);
	qsort(s->rows, s->nrows, sizeof(*s->rows), cmp_grew);
	for (int grew = 1; grew >= 0; grew--) {
		printf("\n%s time that %s most:\n", what, grew ? "grew" : "shrank");
		printf("%17s %17s %19s  function\n", "before", "after", "delta (pts)");
		shown = 0;
		for (uint32_t k = 0; k < s->nrows && shown < s->d->top; k++) {
			const struct row *r = &s->rows[grew ? k : s->nrows - 1 - k];

			if (grew ? r->delta <= 0 : r->delta >= 0)
				break;
			print_row(s, r, r->after ? tb_any : ta_any);
			shown++;
		}
		if (!shown)
			printf("%17s\n", "(none)");
	}
	free(s->rows);
}

static void print_summary(const struct diff *d, const struct profile *b, const struct profile *a)
{
	struct summary s = { .d = d, .b = b, .a = a, .tb = b->samples, .ta = a->samples };
	struct counts cb, ca;

	count_frames(b, a->nframes, &cb);
	count_frames(a, a->nframes, &ca);
	printf("BEFORE %s: %llu samples\nAFTER  %s: %llu samples\n", d->path[0],
	       (unsigned long long)s.tb, d->path[1], (unsigned long long)s.ta);
	printf("Deltas are in AFTER's samples%s; pts: change of the share of all samples.\n",
	       d->oo.diff_raw ? " (raw counts, --no-normalize)" :
	       ", BEFORE scaled to AFTER's total");
	if (d->min_share > 0 && d->top > 0)
		printf("Left out: functions under %g%% of the samples in both (--min-share).\n",
		       d->min_share);
	if (d->top > 0) {
		print_table(&s, "Self", cb.self, ca.self, cb.total, ca.total);
		print_table(&s, "Total", cb.total, ca.total, cb.total, ca.total);
	}
	free(cb.self);
	free(cb.total);
	free(ca.self);
	free(ca.total);
}

/* --- the command ---------------------------------------------------------- */

/* Frames in some stack of `in` and in none of `out`: what one shape
 * cannot show, so the subtitle says how many there are. */
static uint32_t only_in(const struct profile *in, const struct profile *out)
{
	uint8_t *seen = xcalloc(in->nframes ? in->nframes : 1, 1);
	uint32_t n = 0;

	for (int side = 0; side < 2; side++) {
		const struct profile *p = side ? out : in;

		for (uint32_t i = 0; i < p->nstacks; i++)
			for (uint32_t k = 0; p->stacks[i].count && k < p->stacks[i].depth; k++)
				seen[p->stacks[i].frames[k]] |= 1 << side;
	}
	for (uint32_t f = 0; f < in->nframes; f++)
		n += seen[f] == 1;
	free(seen);
	return n;
}

static int write_diff(struct diff *d, const struct profile *b, const struct profile *a)
{
	char *path = d->output ? xstrdup(d->output) : out_default_name("diff", d->fmt);
	char *title = xasprintf("pystrobe diff: %s -> %s%s", d->path[0], d->path[1],
				d->oo.diff_negate ? " (BEFORE's shape)" : "");
	uint32_t hidden = d->oo.diff_negate ? only_in(a, b) : only_in(b, a);
	char *subtitle = xasprintf("BEFORE %llu samples, AFTER %llu samples; self time "
				   "red grew, blue shrank (%s); %u frame%s only in %s, not drawn%s",
				   (unsigned long long)b->samples, (unsigned long long)a->samples,
				   d->oo.diff_raw ? "raw counts" : "as shares of each total",
				   hidden, hidden == 1 ? "" : "s", d->oo.diff_negate ? "AFTER" : "BEFORE",
				   hidden && !d->oo.diff_negate ? " (see --negate)" : "");
	const struct profile *drawn = d->oo.diff_negate ? b : a;
	int rc;

	d->oo.title = title;
	d->oo.subtitle = subtitle;
	d->oo.diff_base = d->oo.diff_negate ? a : b;
	rc = out_write_file(d->fmt, drawn, &d->oo, path, "diff");
	if (rc == 0 && !d->quiet)
		errorf("diff: wrote %s", out_path_name(path));
	free(title);
	free(subtitle);
	free(path);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff d = { 0 };
	struct profile in[2], b, a;
	struct append_opts ao = { .roots_by_name = true };
	char err[PROFILE_READ_ERR];
	int rc, nread = 0;

	rc = parse_args(&d, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	for (; nread < 2; nread++) {
		rc = profile_read(d.path[nread], &in[nread], NULL, err, sizeof(err));
		if (rc < 0) {
			errorf("diff: %s", err);
			goto out;
		}
	}
	ao.by_label = true;
	ao.full_filenames = d.oo.full_filenames;
	ao.by_function = d.by_function;
	if (!ao.by_function && has_lines(&in[0], ao.full_filenames) !=
			       has_lines(&in[1], ao.full_filenames)) {
		ao.by_function = true;
		if (!d.quiet)
			errorf("diff: only one profile has line numbers (the other was recorded "
			       "with --function?): comparing by function");
	}
	if (!align(&in[0], &in[1], &ao, &b, &a)) {
		errorf("diff: the counts add up to more than 2^64");
		rc = status_fail(EXIT_BAD_INPUT);
	} else {
		/* With -o - standard output is the profile's. */
		if (!d.quiet && !(d.output && !strcmp(d.output, "-")))
			print_summary(&d, &b, &a);
		rc = fflush(stdout) ? status_fail(EXIT_ERROR) : write_diff(&d, &b, &a);
	}
	profile_free(&a);
	profile_free(&b);
out:
	while (nread-- > 0)
		profile_free(&in[nread]);
	return exit_code(rc);
}
