#include "process/nsmap.h"
#include "process/proc.h"
#include "util/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel nests PID namespaces at most 32 deep: an NSpid line longer
 * than that is not the kernel's. */
#define MAX_NS_LEVELS 33

int nsmap_parse_status(const char *text, pid_t *first, pid_t *last)
{
	const char *p = text;
	int n = 0;

	if (strncmp(p, "NSpid:", 6) != 0) {
		p = strstr(text, "\nNSpid:");
		if (!p)
			return 0;
		p++;
	}
	p += 6;
	while (n < MAX_NS_LEVELS) {
		char *end;
		long v;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		v = strtol(p, &end, 10);
		if (v <= 0 || v > INT_MAX)
			return 0;
		if (!n)
			*first = (pid_t)v;
		*last = (pid_t)v;
		n++;
		p = end;
	}
	return n;
}

/* The NSpid ids of one thread: 0, or -1 when unreadable or not there. */
static int read_ids(struct nsmap *m, pid_t tid, pid_t *host, pid_t *ns)
{
	char path[PATH_MAX], *text;
	int n;

	snprintf(path, sizeof(path), "%s/%d/task/%d/status", m->proc, (int)m->pid, (int)tid);
	text = read_file(path, NULL);
	if (!text)
		return -1;
	m->status_reads++;
	n = nsmap_parse_status(text, host, ns);
	free(text);
	return n > 0 ? 0 : -1;
}

int nsmap_open(struct nsmap *m, const char *proc, pid_t pid)
{
	pid_t first, last;

	memset(m, 0, sizeof(*m));
	m->proc = xstrdup(proc ? proc : "/proc");
	m->pid = pid;
	m->ns_pid = pid;
	if (read_ids(m, pid, &first, &last) < 0)
		return -1;
	/* Our id first: one that is not the pid we were given means the
	 * line is not what we think it is; trust it no further. */
	if (first != pid)
		return 0;
	m->ns_pid = last;
	m->nested = first != last;
	return 0;
}

void nsmap_free(struct nsmap *m)
{
	free(m->proc);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* Read the task list again: threads already known are kept as they are,
 * new ones get their status read, gone ones are dropped.  Both lists are
 * sorted by our id, so this is one merge. */
static void refresh(struct nsmap *m)
{
	struct nsmap_entry *old = m->v, *v = NULL;
	size_t nold = m->n, i = 0, n = 0, alloc = 0;
	pid_t *tids;
	int ntids = proc_tasks_under(m->proc, m->pid, &tids);

	for (int k = 0; k < ntids; k++) {
		struct nsmap_entry e = { 0 };

		while (i < nold && old[i].host < tids[k])
			i++;
		if (i < nold && old[i].host == tids[k])
			e = old[i];
		else if (read_ids(m, tids[k], &e.host, &e.ns) < 0 || e.host != tids[k])
			continue;
		ALLOC_GROW(v, n + 1, alloc);
		v[n++] = e;
	}
	if (ntids >= 0)
		free(tids);
	free(old);
	m->v = v;
	m->n = n;
	m->alloc = alloc;
}

static struct nsmap_entry *find_ns(struct nsmap *m, pid_t ns_tid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].ns == ns_tid)
			return &m->v[i];
	return NULL;
}

/* Is the thread e names still that thread?  Once it has exited, its
 * namespace id can be given to a new thread with another id of ours. */
static bool still_true(struct nsmap *m, const struct nsmap_entry *e)
{
	pid_t host, ns;

	return read_ids(m, e->host, &host, &ns) == 0 && host == e->host && ns == e->ns;
}

pid_t nsmap_host_tid(struct nsmap *m, pid_t ns_tid)
{
	struct nsmap_entry *e;

	if (!m->nested || ns_tid <= 0)
		return ns_tid;
	e = find_ns(m, ns_tid);
	if (e && still_true(m, e))
		return e->host;
	refresh(m);
	e = find_ns(m, ns_tid);
	return e ? e->host : 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int nsmap_ns_tids(struct nsmap *m, pid_t **tidsp)
{
	pid_t *tids;

	if (!m->nested)
		return proc_tasks_under(m->proc, m->pid, tidsp);
	refresh(m);
	tids = xcalloc(m->n + 1, sizeof(*tids));
	for (size_t i = 0; i < m->n; i++)
		tids[i] = m->v[i].ns;
	qsort(tids, m->n, sizeof(*tids), cmp_pid);
	*tidsp = tids;
	return (int)m->n;
}
