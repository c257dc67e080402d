/* The per-thread wait summary; see waitsum.h. */
#include "analysis/waitsum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

/* Where a thread was: its most frequent places, counted in a table of
 * WHERE_MAX that keeps the heavy ones (a worker's augment, seen after
 * the dozens of functions of its start-up, must still be found). */
#define WHERE_MAX 16

/* The classes shown, in the order of a line's parts when shares tie. */
enum share {
	SH_DATA,
	SH_GPU,
	SH_COLLECTIVE,
	SH_RUNNING,
	SH_IDLE,
	SH_COUNT,
};

static const char *const share_text[SH_COUNT] = {
	[SH_DATA] = "waiting for data",
	[SH_GPU] = "waiting for the GPU",
	[SH_COLLECTIVE] = "waiting for the other ranks",
	[SH_RUNNING] = "running",
	[SH_IDLE] = "idle otherwise",
};

/* The lines a place was seen running, the most frequent kept as places
 * are (count_where()). */
#define LINES_MAX 4

struct wline {
	int line;
	uint64_t n;
};

/* A place and the share its samples counted in: a waiting one, or
 * SH_RUNNING for running and idle both (a worker's augment is mostly
 * running, now and then off the CPU: one place). */
struct where {
	enum share share;
	char *via, *function, *file;
	int firstline;
	uint64_t n;
	uint64_t over;		/* of n, inherited from the place it replaced */
	struct wline lines[LINES_MAX];
	unsigned nlines;
};

struct wthread {
	pid_t pid, tid;
	uint64_t n, by[SH_COUNT];
	struct where where[WHERE_MAX];
	unsigned nwhere;
	bool printed;		/* in waitsum_write(): on a line already */
};

struct waitsum {
	struct wthread *t;
	size_t n, cap;
};

struct waitsum *waitsum_new(void)
{
	return xcalloc(1, sizeof(struct waitsum));
}

static void where_release(struct where *w)
{
	free(w->via);
	free(w->function);
	free(w->file);
}

void waitsum_free(struct waitsum *ws)
{
	if (!ws)
		return;
	for (size_t i = 0; i < ws->n; i++)
		for (unsigned k = 0; k < ws->t[i].nwhere; k++)
			where_release(&ws->t[i].where[k]);
	free(ws->t);
	free(ws);
}

static struct wthread *thread_of(struct waitsum *ws, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < ws->n; i++)
		if (ws->t[i].pid == pid && ws->t[i].tid == tid)
			return &ws->t[i];
	ALLOC_GROW(ws->t, ws->n + 1, ws->cap);
	memset(&ws->t[ws->n], 0, sizeof(ws->t[ws->n]));
	ws->t[ws->n].pid = pid;
	ws->t[ws->n].tid = tid;
	return &ws->t[ws->n++];
}

static enum share share_of(enum wait_class cls, bool idle)
{
	switch (cls) {
	case WC_DATA: return SH_DATA;
	case WC_GPU: return SH_GPU;
	case WC_COLLECTIVE: return SH_COLLECTIVE;
	default: return idle ? SH_IDLE : SH_RUNNING;
	}
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool is_place(const struct where *w, enum share share, const struct waitsum_place *pl)
{
	return w->share == share && w->firstline == pl->firstline &&
	       same_str(w->function, pl->function) && same_str(w->file, pl->file) &&
	       same_str(w->via, pl->via);
}

static bool same_place(const struct where *a, const struct where *b)
{
	return is_place(a, b->share, &(struct waitsum_place){ b->via, b->function, b->file,
							     b->firstline, -1 });
}

/* The line counted as the places are (below), in a table of LINES_MAX. */
static void count_line(struct where *w, int line)
{
	unsigned k, least = 0;

	for (k = 0; k < w->nlines && w->lines[k].line != line; k++)
		;
	if (k == LINES_MAX) {
		for (k = 1; k < LINES_MAX; k++)
			if (w->lines[k].n < w->lines[least].n)
				least = k;
		k = least;
		w->lines[k].line = line;
	} else if (k == w->nlines) {
		w->lines[w->nlines++] = (struct wline){ line, 0 };
	}
	w->lines[k].n++;
}

/* Space-saving counting: a place not in a full table takes the slot of
 * the least counted one and its count, plus one.  Any place with more
 * than 1/WHERE_MAX of the samples is then in the table, its count over
 * by at most that of the slot it took (kept, and taken off when shown):
 * the top place is the true one whenever one place dominates, which is
 * when the summary names it. */
static void count_where(struct wthread *t, enum share share, const struct waitsum_place *pl)
{
	unsigned k;

	for (k = 0; k < t->nwhere && !is_place(&t->where[k], share, pl); k++)
		;
	if (k == t->nwhere) {
		uint64_t over = 0;

		if (t->nwhere == WHERE_MAX) {
			for (unsigned j = k = 0; j < WHERE_MAX; j++)
				if (t->where[j].n < t->where[k].n)
					k = j;
			over = t->where[k].n;
			where_release(&t->where[k]);
		} else {
			t->nwhere++;
		}
		t->where[k] = (struct where){ .share = share, .firstline = pl->firstline,
					      .via = pl->via ? xstrdup(pl->via) : NULL,
					      .function = xstrdup(pl->function),
					      .file = xstrdup(pl->file), .n = over, .over = over };
	}
	t->where[k].n++;
	count_line(&t->where[k], pl->line);
}

void waitsum_add(struct waitsum *ws, pid_t pid, pid_t tid, enum wait_class cls, bool idle,
		 const struct waitsum_place *at)
{
	struct wthread *t = thread_of(ws, pid, tid);
	enum share share = share_of(cls, idle);

	t->n++;
	t->by[share]++;
	if (at)
		count_where(t, share == SH_IDLE ? SH_RUNNING : share, at);
}

static unsigned percent(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned)((part * 100 + whole / 2) / whole) : 0;
}

/* Waits for none of the three classes in at least 1% of its samples. */
static bool never_waits(const struct wthread *t)
{
	return percent(t->by[SH_DATA] + t->by[SH_GPU] + t->by[SH_COLLECTIVE], t->n) == 0;
}

/* The most counted place of a share (SH_RUNNING: running or idle). */
static const struct where *top_where(const struct wthread *t, enum share share)
{
	const struct where *best = NULL;

	for (unsigned k = 0; k < t->nwhere; k++)
		if (t->where[k].share == share && (!best || t->where[k].n > best->n))
			best = &t->where[k];
	return best;
}

/* "Queue.get from next_batch (job.py:48)": the place, at the line the
 * places w[0..n) (one place, of one thread or of several) ran most. */
static void put_place(struct strbuf *sb, const struct where *const *w, size_t n)
{
	int line = -1;
	uint64_t most = 0;

	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < w[i]->nlines; k++) {
			uint64_t sum = 0;

			for (size_t j = 0; j < n; j++)
				for (unsigned m = 0; m < w[j]->nlines; m++)
					sum += w[j]->lines[m].line == w[i]->lines[k].line ?
					       w[j]->lines[m].n : 0;
			if (sum > most) {
				most = sum;
				line = w[i]->lines[k].line;
			}
		}
	/* The names are the target's: escaped on their way to a terminal. */
	if (w[0]->via) {
		sb_add_escaped(sb, w[0]->via, strlen(w[0]->via), ESC_TEXT);
		sb_puts(sb, " from ");
	}
	sb_add_escaped(sb, w[0]->function, strlen(w[0]->function), ESC_TEXT);
	sb_puts(sb, " (");
	sb_add_escaped(sb, w[0]->file, strlen(w[0]->file), ESC_TEXT);
	if (line >= 0)
		sb_printf(sb, ":%d", line);
	sb_putc(sb, ')');
}

static void put_name(struct strbuf *sb, const struct wthread *t)
{
	if (t->tid == t->pid)
		sb_printf(sb, "main thread %d", (int)t->pid);
	else
		sb_printf(sb, "thread %d of %d", (int)t->tid, (int)t->pid);
}

/* "main thread 485: 81% waiting for data in Queue.get from next_batch
 * (job.py:48), 19% running": the shares of 1% or more, largest first, a
 * wait's with where it waited most. */
static void put_thread(struct strbuf *sb, const struct wthread *t)
{
	bool done[SH_COUNT] = { false };
	const char *sep = ": ";
	const struct where *w;

	sb_puts(sb, "  ");
	put_name(sb, t);
	for (int k = 0; k < SH_COUNT; k++) {
		int best = -1;

		for (int j = 0; j < SH_COUNT; j++)
			if (!done[j] && (best < 0 || t->by[j] > t->by[best]))
				best = j;
		done[best] = true;
		if (percent(t->by[best], t->n) == 0)
			break;
		sb_printf(sb, "%s%u%% %s", sep, percent(t->by[best], t->n), share_text[best]);
		if (best < SH_RUNNING && (w = top_where(t, (enum share)best))) {
			sb_puts(sb, " in ");
			put_place(sb, &w, 1);
		}
		sep = ", ";
	}
	sb_putc(sb, '\n');
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Ids sorted, runs of consecutive ones as "514–517". */
static void put_ids(struct strbuf *sb, pid_t *ids, size_t n)
{
	qsort(ids, n, sizeof(*ids), cmp_pid);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		sb_printf(sb, "%s%d", i ? ", " : "", (int)ids[i]);
		if (j > i)
			sb_printf(sb, "\xe2\x80\x93%d", (int)ids[j]);
		i = j + 1;
	}
}

/* A group's name: "workers 514–517" when each is a process's main thread
 * (a DataLoader's workers, a Pool), else "threads 23346–23347 of 22319",
 * or "threads 23346, 23376 of 2 processes".  pids[k] is tids[k]'s. */
static void put_members(struct strbuf *sb, pid_t *tids, const pid_t *pids, size_t n)
{
	bool mains = true;
	size_t nprocs = 0;

	for (size_t i = 0; i < n; i++) {
		bool again = false;

		mains &= tids[i] == pids[i];
		for (size_t j = 0; j < i && !again; j++)
			again = pids[j] == pids[i];
		nprocs += !again;
	}
	sb_puts(sb, mains ? "  workers " : "  threads ");
	put_ids(sb, tids, n);
	if (mains)
		return;
	if (nprocs == 1)
		sb_printf(sb, " of %d", (int)pids[0]);
	else
		sb_printf(sb, " of %zu processes", nprocs);
}

/* The threads from first on that never wait and whose top place is that
 * of first, on one line: "workers 514–517: 85% in augment (job.py:23)";
 * their ids are their processes' when each is a process's main thread. */
static void put_group(struct strbuf *sb, struct wthread *t, size_t first, size_t n)
{
	const struct where *place = top_where(&t[first], SH_RUNNING);
	const struct where **ws = xmalloc(n * sizeof(*ws));
	uint64_t in = 0, all = 0;
	pid_t *tids = xmalloc(n * sizeof(*tids)), *pids = xmalloc(n * sizeof(*pids));
	size_t nids = 0;

	for (size_t i = first; i < n; i++) {
		const struct where *w;

		if (t[i].printed || !never_waits(&t[i]) || !(w = top_where(&t[i], SH_RUNNING)) ||
		    !same_place(w, place))
			continue;
		t[i].printed = true;
		in += w->n - w->over;
		all += t[i].n;
		ws[nids] = w;
		pids[nids] = t[i].pid;
		tids[nids++] = t[i].tid;
	}
	if (nids == 1) {
		sb_puts(sb, "  ");
		put_name(sb, &t[first]);
	} else {
		put_members(sb, tids, pids, nids);
	}
	sb_printf(sb, ": %u%% in ", percent(in, all));
	put_place(sb, ws, nids);
	sb_putc(sb, '\n');
	free(ws);
	free(tids);
	free(pids);
}

void waitsum_write(const struct waitsum *ws, struct strbuf *sb)
{
	struct wthread *t;

	if (!ws->n)
		return;
	/* A copy to mark the threads put on a line. */
	t = xmalloc(ws->n * sizeof(*t));
	memcpy(t, ws->t, ws->n * sizeof(*t));
	for (size_t i = 0; i < ws->n; i++)
		t[i].printed = false;
	/* The threads that wait for the GPU, data or ranks first: the
	 * answer the summary is for; then the rest, grouped. */
	for (size_t i = 0; i < ws->n; i++) {
		if (!t[i].n || never_waits(&t[i]))
			continue;
		t[i].printed = true;
		put_thread(sb, &t[i]);
	}
	for (size_t i = 0; i < ws->n; i++) {
		if (t[i].printed || !t[i].n)
			continue;
		if (top_where(&t[i], SH_RUNNING)) {
			put_group(sb, t, i, ws->n);
		} else {
			t[i].printed = true;
			put_thread(sb, &t[i]);
		}
	}
	free(t);
}
