/* "Did you mean": the nearest of a few known words to a mistyped one, for
 * the one line a bad command line gets. */
#ifndef PYSTROBE_SUGGEST_H
#define PYSTROBE_SUGGEST_H

#include <stddef.h>

/* Edits (insert, delete, substitute, swap two neighbours) from a to b:
 * the optimal string alignment distance. */
int edit_distance(const char *a, const char *b);

/* The word of words[0..n) nearest to typed, if it is at most 2 edits
 * away and fewer than half of typed's letters were changed ("ab" is not
 * "a mistyped "xy""); NULL otherwise.  The first of equals wins. */
const char *suggest(const char *typed, const char *const *words, size_t n);

/* Whether s is a number, all digits: a pid typed without --pid. */
int all_digits(const char *s);

#endif
