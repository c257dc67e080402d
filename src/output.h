/* The profile output formats.  Each writer takes a finished profile and a
 * stream; the caller writes to a temporary file and renames it, so an
 * interrupted run never leaves half a file in place of a good one. */
#ifndef PYSTROBE_OUTPUT_H
#define PYSTROBE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

struct out_opts {
	bool full_filenames;
	const char *title;	/* NULL: made from the profile's metadata */
};

/* Each returns 0, or -1 when writing failed (errno set). */
int out_flamegraph(const struct profile *p, FILE *f, const struct out_opts *o);
int out_collapsed(const struct profile *p, FILE *f, const struct out_opts *o);
int out_speedscope(const struct profile *p, FILE *f, const struct out_opts *o);
int out_chrometrace(const struct profile *p, FILE *f, const struct out_opts *o);
int out_pprof(const struct profile *p, FILE *f, const struct out_opts *o);

#endif
