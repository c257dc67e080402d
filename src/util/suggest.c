#include "util/suggest.h"
#include "util/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	/* Three rows: the one before the previous is what a swap needs. */
	int *row = xcalloc(3 * (m + 1), sizeof(*row)), d;
	int *pp = row, *p = row + (m + 1), *c = row + 2 * (m + 1);

	for (size_t j = 0; j <= m; j++)
		p[j] = (int)j;
	for (size_t i = 1; i <= n; i++) {
		int *t;

		c[0] = (int)i;
		for (size_t j = 1; j <= m; j++) {
			int cost = a[i - 1] != b[j - 1], best = p[j - 1] + cost;

			if (p[j] + 1 < best)
				best = p[j] + 1;
			if (c[j - 1] + 1 < best)
				best = c[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			c[j] = best;
		}
		t = pp;
		pp = p;
		p = c;
		c = t;
	}
	d = p[m];
	free(row);
	return d;
}

const char *suggest(const char *typed, const char *const *words, size_t n)
{
	const char *best = NULL;
	int best_d = 3;
	size_t len = strlen(typed);

	for (size_t i = 0; i < n; i++) {
		int d = edit_distance(typed, words[i]);

		if (d < best_d && (size_t)d * 2 < len) {
			best = words[i];
			best_d = d;
		}
	}
	return best;
}

int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}
