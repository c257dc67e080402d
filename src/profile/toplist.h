/* The functions a profile spent its samples in, as a short text table: what
 * `record` prints after its summary, so that a profile on a headless box
 * can be read without copying a file anywhere. */
#ifndef PYSTROBE_TOPLIST_H
#define PYSTROBE_TOPLIST_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"

/* The n functions with the most samples of their own, each with its own
 * share (samples whose innermost frame is in it) and total share (samples
 * with it anywhere on the stack, counted once however deep it recurses),
 * as a table on f.  Functions are told apart by name and file, whatever
 * the line (native names short unless full_names, as the flame graph shows
 * them); root frames (processes, threads) are not functions.  Prints
 * nothing when the profile has no samples.  Each line starts with prefix. */
void toplist_print(const struct profile *p, int n, bool full_filenames, bool full_names,
		   const char *prefix, FILE *f);

#endif
