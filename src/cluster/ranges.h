/* Many ranks and nodes in a few characters: "0-62,64" and Slurm's
 * hostlists, "hnode[1-16,20],gpu7".
 *
 * A 512-rank job's groups must be read at a glance: a list of numbers or
 * names grows with the job, its ranges with the number of gaps. */
#ifndef PYSTROBE_RANGES_H
#define PYSTROBE_RANGES_H

#include <stddef.h>

#include "util/util.h"

/* The n numbers of v (any order, repeats allowed) as "0-62,64"; nothing
 * for n == 0.  v is sorted in place. */
void ranges_format(struct strbuf *sb, long *v, size_t n);

/* The n names as a hostlist, as Slurm writes them: names that differ
 * only in a number at their end share "prefix[...]"; a number with
 * leading zeros keeps its width (node[01-16]; node10 is of that width
 * too), and joins only numbers of that width.  Repeats are written once;
 * groups in the order of their prefix. */
void hostlist_format(struct strbuf *sb, const char *const *names, size_t n);

#endif
