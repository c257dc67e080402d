/* SVGs in the tests: flame graphs written here from a profile, with the
 * counts they must show; the SVG of `pystrobe diff` parsed back frame by
 * frame and held against the counts in its two input files (parsed by
 * folded.c, not by pystrobe); xmllint over either. */
#ifndef PYSTROBE_TEST_SVG_H
#define PYSTROBE_TEST_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/output.h"
#include "profile/profile.h"

/* --- flame graphs of a profile --- */

/* Write p's flame graph to a new temporary file named in path. */
void write_svg(const struct profile *p, const struct out_opts *o, char *path, size_t size);

/* Fail the test unless xmllint finds path well-formed (a missing xmllint
 * fails it too). */
void assert_wellformed(const char *path);

/* Samples of stacks that contain the frame named name, counted once per
 * stack; *id is the frame's. */
uint64_t frame_samples(const struct profile *p, const char *name, uint32_t *id);

/* n of total as the flame graph shows it: "57.1%", "0.95%". */
void percent(char *buf, size_t size, uint64_t n, uint64_t total);

/* The folded stacks a flame graph carries (its <metadata
 * id="pystrobe-stacks">), entities undone here, not by pystrobe's reader:
 * a new string, NULL when it has none. */
char *svg_stacks(const char *svg_text);

/* The folded text of a profile file: a flame graph's stacks, or the file
 * as it is.  Fails the test for a flame graph without stacks. */
char *profile_text(const char *path);

/* --- pystrobe diff --- */

struct gnode {
	uint64_t s, n;
	int y;
	char *label;		/* XML entities undone */
	char *path;		/* labels from the root's child, ';'-joined */
	char mark[8];		/* "", "new", "gone" */
	unsigned rgb[3];
	uint64_t self_b, self_a, tot_b, tot_a;
	long long self_d, tot_d;
};

struct svg {
	struct gnode *nodes;
	size_t n;
};

/* Every frame of a diff's SVG, each with its path from the root. */
void svg_parse(const char *text, struct svg *svg);
void svg_free(struct svg *svg);
/* The first frame labelled label, NULL if none. */
const struct gnode *svg_find(const struct svg *svg, const char *label);

/* A directory with BEFORE and AFTER in it (not written when text is NULL). */
struct diff_files {
	char *dir, *b, *a;
};

struct diff_files diff_files(const char *bname, const char *btext, const char *aname,
			     const char *atext);
void diff_files_free(struct diff_files *f);

/* pystrobe diff [opts] -o OUT BEFORE AFTER, which must succeed; its
 * stdout (the summary) is returned.  The options end at the first NULL. */
char *run_diff(const char *out, const char *before, const char *after,
	       const char *opt1, const char *opt2);

/* Where diff_and_check() writes (a string that lives until the next call). */
const char *svg_path(const char *dir, bool raw, bool negate);

/* Diff before and after (folded files or flame graphs) into an SVG and
 * check all of it: every frame's counts, deltas, colour and new/gone mark. */
void diff_and_check(const char *dir, const char *before, const char *after, bool raw,
		    bool negate, struct svg *svg);

/* Two profiles whose names hold markup, quotes and an escape sequence. */
extern const char diff_hostile_before[], diff_hostile_after[];

#endif
