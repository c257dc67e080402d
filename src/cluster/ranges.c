/* Compact ranges of ranks and Slurm-style hostlists (ranges.h). */
#include "cluster/ranges.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Runs of consecutive numbers as "a-b", a run of one as "a". */
static void put_runs(struct strbuf *sb, const long *v, size_t n, int width)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		if (i)
			sb_putc(sb, ',');
		sb_printf(sb, "%0*ld", width, v[i]);
		if (j > i)
			sb_printf(sb, "-%0*ld", width, v[j]);
		i = j + 1;
	}
}

static size_t sort_unique(long *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_long);
	for (size_t i = 0; i < n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

void ranges_format(struct strbuf *sb, long *v, size_t n)
{
	if (n)
		put_runs(sb, v, sort_unique(v, n), 0);
}

/* A name split into its prefix and the number at its end.  Numbers of
 * more than 9 digits stay part of the name: a range of them is nothing
 * a cluster has, and they would not fit a long everywhere. */
struct host {
	const char *name;
	size_t plen;		/* the prefix's length; the whole name when no number */
	int width;		/* digits of a zero-padded number, else 0 */
	long num;		/* -1: no number */
};

static struct host split(const char *name)
{
	size_t len = strlen(name), p = len;
	struct host h = { name, len, 0, -1 };

	while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9')
		p--;
	if (p == len || len - p > 9)
		return h;
	h.plen = p;
	h.num = strtol(name + p, NULL, 10);
	if (name[p] == '0' && len - p > 1)
		h.width = (int)(len - p);
	return h;
}

static bool same_group(const struct host *a, const struct host *b)
{
	return a->num >= 0 && b->num >= 0 && a->plen == b->plen && a->width == b->width &&
	       !memcmp(a->name, b->name, a->plen);
}

static int cmp_prefix(const struct host *x, const struct host *y)
{
	int c = memcmp(x->name, y->name, x->plen < y->plen ? x->plen : y->plen);

	return c ? c : (x->plen > y->plen) - (x->plen < y->plen);
}

/* Prefix, width, number: a group's members are neighbours. */
static int cmp_host(const void *a, const void *b)
{
	const struct host *x = a, *y = b;
	int c = cmp_prefix(x, y);

	if (c)
		return c;
	if (x->width != y->width)
		return x->width - y->width;
	if (x->num != y->num)
		return (x->num > y->num) - (x->num < y->num);
	return strcmp(x->name, y->name);
}

/* node01..node16: node10 has no leading zero, but is of the width of the
 * padded numbers beside it, as Slurm reads node[01-16].  hs is sorted by
 * prefix: each prefix's padded widths, then its unpadded numbers of one
 * of those lengths take it. */
static void widen(struct host *hs, size_t n)
{
	size_t i = 0;

	while (i < n) {
		bool padded[10] = { false };
		size_t j = i;

		while (j < n && !cmp_prefix(&hs[i], &hs[j]))
			padded[hs[j++].width] = true;
		for (size_t k = i; k < j; k++) {
			size_t len = strlen(hs[k].name) - hs[k].plen;

			if (hs[k].num >= 0 && !hs[k].width && len < 10 && padded[len])
				hs[k].width = (int)len;
		}
		i = j;
	}
}

/* The numbers of hosts[i..] in one group; how many hosts it took. */
static size_t put_group(struct strbuf *sb, const struct host *hs, size_t n, long *nums)
{
	size_t k = 1, m;

	nums[0] = hs[0].num;
	while (k < n && same_group(&hs[0], &hs[k])) {
		nums[k] = hs[k].num;
		k++;
	}
	sb_add(sb, hs[0].name, hs[0].plen);
	m = sort_unique(nums, k);
	if (m == 1) {
		sb_printf(sb, "%0*ld", hs[0].width, nums[0]);
		return k;
	}
	sb_putc(sb, '[');
	put_runs(sb, nums, m, hs[0].width);
	sb_putc(sb, ']');
	return k;
}

void hostlist_format(struct strbuf *sb, const char *const *names, size_t n)
{
	struct host *hs = xcalloc(n ? n : 1, sizeof(*hs));
	long *nums = xcalloc(n ? n : 1, sizeof(*nums));
	size_t i = 0, m = 0;

	for (size_t k = 0; k < n; k++)
		hs[k] = split(names[k]);
	qsort(hs, n, sizeof(*hs), cmp_host);
	widen(hs, n);
	qsort(hs, n, sizeof(*hs), cmp_host);
	for (size_t k = 0; k < n; k++)	/* repeats once */
		if (!m || strcmp(hs[k].name, hs[m - 1].name))
			hs[m++] = hs[k];
	while (i < m) {
		if (i)
			sb_putc(sb, ',');
		if (hs[i].num < 0) {
			sb_puts(sb, hs[i].name);
			i++;
			continue;
		}
		i += put_group(sb, hs + i, m - i, nums);
	}
	free(nums);
	free(hs);
}
