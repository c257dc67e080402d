/* Collapsed ("folded") stacks, the input of flamegraph.pl, inferno and
 * speedscope: one line per distinct stack,
 *
 *	root;caller;...;leaf COUNT
 *
 * Those readers take the count after the last space and split the rest at
 * every ';'.  None of them has an escape syntax, and names from the target
 * can hold anything, so each frame label is escaped the way error messages
 * show names (util/escape.h): control characters (newline, CR, tab, ESC,
 * DEL, C1) and bytes that are not valid UTF-8 become "\xNN", format
 * characters (bidi overrides, zero-width) "\uXXXX", a backslash becomes
 * "\\", and on top of that ';' becomes "\x3b".  So every line is
 * one stack, every ';' separates frames, the text is valid UTF-8 that cannot
 * drive a terminal, and nothing is lost: undoing "\\" and "\xNN" gives the
 * original bytes back.  Spaces stay: the count is after the last one.
 *
 * Lines are sorted (bytewise) so the same profile always gives the same
 * file; stacks that print the same are merged.
 *
 * A differential profile (out_opts.diff_base) is written as two counts,
 *
 *	root;caller;...;leaf BEFORE AFTER
 *
 * as flamegraph.pl and inferno read differential input: one line per stack
 * of either profile, BEFORE scaled to AFTER's total (rounded) unless
 * diff_raw.
 */
#include "profile/output.h"
#include "util/util.h"
#include "util/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct line {
	char *stack;
	uint64_t count;
	uint64_t base;		/* diff mode: the count in the base */
};

static char *escape_label(const char *label)
{
	struct strbuf out = STRBUF_INIT;

	sb_add_escaped(&out, label, strlen(label), ESC_TEXT | ESC_SEMI);
	return sb_detach(&out);
}

/* Escaped labels, made on first use: most frames appear in many stacks. */
static const char *label_of(const struct profile *p, char **cache, uint32_t id, bool full)
{
	char *label;

	if (cache[id])
		return cache[id];
	label = pframe_label(&p->frames[id], full);
	cache[id] = escape_label(label);
	free(label);
	return cache[id];
}

static char *stack_text(const struct profile *p, char **cache, const struct pstack *s, bool full)
{
	struct strbuf sb = STRBUF_INIT;

	/* A line needs at least one frame to parse; record never makes an
	 * empty stack, but say so rather than write " 5". */
	if (!s->depth)
		return xstrdup("<empty stack>");
	for (uint32_t d = 0; d < s->depth; d++) {
		if (d)
			sb_putc(&sb, ';');
		sb_puts(&sb, label_of(p, cache, s->frames[d], full));
	}
	return sb_detach(&sb);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* Sort, then fold lines that print the same (frames that differ only in
 * kind) into one, as the readers would anyway. */
static uint32_t sort_and_merge(struct line *lines, uint32_t n)
{
	uint32_t out = 0;

	qsort(lines, n, sizeof(*lines), line_cmp);
	for (uint32_t i = 0; i < n; i++) {
		if (out && !strcmp(lines[out - 1].stack, lines[i].stack)) {
			lines[out - 1].count += lines[i].count;
			lines[out - 1].base += lines[i].base;
			free(lines[i].stack);
			continue;
		}
		lines[out++] = lines[i];
	}
	return out;
}

/* The lines of p's stacks, counted in count or, for the base, in base.
 * The base shares p's frame table, so labels come from p's cache. */
static uint32_t add_lines(const struct profile *p, const struct profile *from, char **cache,
			  struct line *lines, uint32_t n, bool base, bool full)
{
	for (uint32_t i = 0; i < from->nstacks; i++) {
		const struct pstack *s = &from->stacks[i];

		if (!s->count)
			continue;
		lines[n].stack = stack_text(p, cache, s, full);
		lines[n].count = base ? 0 : s->count;
		lines[n++].base = base ? s->count : 0;
	}
	return n;
}

static void write_diff_line(FILE *f, const struct line *l, const struct out_opts *o,
			    const struct profile *p)
{
	const struct profile *b = o->diff_base;
	uint64_t before = o->diff_negate ? l->count : l->base;
	uint64_t after = o->diff_negate ? l->base : l->count;
	uint64_t tb = o->diff_negate ? p->samples : b->samples;
	uint64_t ta = o->diff_negate ? b->samples : p->samples;

	if (!o->diff_raw && tb)
		before = (uint64_t)llround((double)before * ta / tb);
	fprintf(f, "%s %" PRIu64 " %" PRIu64 "\n", l->stack, before, after);
}

int out_collapsed(const struct profile *p, FILE *f, const struct out_opts *o)
{
	const struct profile *b = o->diff_base;
	uint32_t nstacks = p->nstacks + (b ? b->nstacks : 0);
	char **cache = xcalloc(p->nframes ? p->nframes : 1, sizeof(*cache));
	struct line *lines = xcalloc(nstacks ? nstacks : 1, sizeof(*lines));
	uint32_t n;

	n = add_lines(p, p, cache, lines, 0, false, o->full_filenames);
	if (b)
		n = add_lines(p, b, cache, lines, n, true, o->full_filenames);
	n = sort_and_merge(lines, n);
	for (uint32_t i = 0; i < n; i++) {
		if (b)
			write_diff_line(f, &lines[i], o, p);
		else
			fprintf(f, "%s %" PRIu64 "\n", lines[i].stack, lines[i].count);
		free(lines[i].stack);
	}
	for (uint32_t i = 0; i < p->nframes; i++)
		free(cache[i]);
	free(cache);
	free(lines);
	return out_finish(f);
}
