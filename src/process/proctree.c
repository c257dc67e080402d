/* Walking a process tree through /proc.
 *
 * /proc/PID/task/TID/children lists the children each thread forked.  It
 * costs one read per thread of the processes already in the tree, where a
 * scan of all of /proc costs one per process on the machine, so it is
 * used when the kernel has it (CONFIG_PROC_CHILDREN, as Debian's does).
 * It may miss a child forked during the read; the next walk, tens of
 * milliseconds later, finds it.
 */
#include "process/proctree.h"
#include "util/util.h"


#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fields of /proc/PID/stat after the command name, which may itself hold
 * spaces and parentheses: hence from the last ')'.  NULL if unreadable. */
static const char *stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strrchr(buf, ')');
}

static int read_stat(pid_t pid, struct proc_node *node)
{
	char buf[1024], state;
	const char *p = stat_fields(pid, buf, sizeof(buf));
	unsigned long long st, code, stack;
	int ppid;

	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads
	 * itrealvalue starttime vsize rss rsslim startcode endcode
	 * startstack */
	if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u"
			 " %*d %*d %*d %*d %*d %*d %llu %*u %*d %*u %llu %*u %llu",
			 &state, &ppid, &st, &code, &stack) != 5)
		return -1;
	/* A zombie has finished: nothing to sample, and its children have
	 * been handed to another parent already. */
	if (state == 'Z' || state == 'X')
		return -1;
	*node = (struct proc_node){ pid, ppid, st, code, stack };
	return 0;
}

int proc_node_read(pid_t pid, struct proc_node *node)
{
	return read_stat(pid, node);
}

pid_t proc_parent(pid_t pid)
{
	struct proc_node node;

	return read_stat(pid, &node) < 0 ? 0 : node.ppid;
}

uint64_t proc_start_time(pid_t pid)
{
	struct proc_node node;

	return read_stat(pid, &node) < 0 ? 0 : node.start;
}

static bool have_children_files(void)
{
	static int have = -1;
	char path[64];

	if (have < 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
		have = access(path, R_OK) == 0;
	}
	return have;
}

static bool listed(const struct proc_node *v, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (v[i].pid == pid)
			return true;
	return false;
}

static int add(struct proc_node *out, int n, int max, pid_t pid, pid_t ppid)
{
	if (n >= max || listed(out, n, pid))
		return n;
	/* Gone already, or reparented since the list was read. */
	if (read_stat(pid, &out[n]) < 0 || (ppid && out[n].ppid != ppid))
		return n;
	return n + 1;
}

/* The children that the threads of pid forked, appended to out. */
static int add_children(pid_t pid, struct proc_node *out, int n, int max)
{
	char path[320], buf[4096];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return n;
	while ((d = readdir(dir)) && n < max) {
		char *p, *end;
		ssize_t len;
		int fd;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, d->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		/* A thread with more children than fit in one read is
		 * read on: the file is a plain list. */
		while ((len = read(fd, buf, sizeof(buf) - 1)) > 0 && n < max) {
			buf[len] = 0;
			for (p = buf;; p = end) {
				long c = strtol(p, &end, 10);

				if (end == p)
					break;
				if (c > 0)
					n = add(out, n, max, (pid_t)c, pid);
			}
			/* A number split across two reads: rare enough (4 kB of
			 * children) to leave to the next walk. */
		}
		close(fd);
	}
	closedir(dir);
	return n;
}

/* Without children files: every process on the machine, by parent. */
static int scan_all(struct proc_node *out, int max)
{
	struct proc_node *all = NULL;
	size_t nall = 0, cap = 0;
	int n = 1;
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return 1;
	while ((d = readdir(dir))) {
		struct proc_node node;
		pid_t pid = atoi(d->d_name);

		if (pid <= 0 || read_stat(pid, &node) < 0)
			continue;
		ALLOC_GROW(all, nall + 1, cap);
		all[nall++] = node;
	}
	closedir(dir);
	/* Breadth first from the root: parents before children. */
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < nall && n < max; k++)
			if (all[k].ppid == out[i].pid && !listed(out, n, all[k].pid))
				out[n++] = all[k];
	free(all);
	return n;
}

int proctree_list(pid_t root, struct proc_node *out, int max)
{
	int n;

	if (max < 1 || (n = add(out, 0, max, root, 0)) == 0)
		return 0;
	if (!have_children_files())
		return scan_all(out, max);
	/* out doubles as the queue: breadth first, parents before children. */
	for (int i = 0; i < n && n < max; i++)
		n = add_children(out[i].pid, out, n, max);
	return n;
}

/* --- CPU time of a tree ----------------------------------------------------- */

/* utime + stime and cutime + cstime of pid, in clock ticks; a zombie's
 * too (a launched command that has exited but is not reaped yet). */
static int read_cpu(pid_t pid, uint64_t *self, uint64_t *waited)
{
	char buf[1024];
	const char *p = stat_fields(pid, buf, sizeof(buf));
	unsigned long long ut, st, cut, cst;

	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			 &ut, &st, &cut, &cst) != 4)
		return -1;
	*self = ut + st;
	*waited = cut + cst;
	return 0;
}

int proctree_cpu(pid_t root, struct tree_cpu *c)
{
	struct proc_node *v = xcalloc(PROCTREE_MAX, sizeof(*v));
	double ns_per_tick = 1e9 / sysconf(_SC_CLK_TCK);
	uint64_t self, others;
	int n;

	if (read_cpu(root, &self, &others) < 0) {
		free(v);
		return -1;
	}
	/* The live descendants; those gone were waited for, by root or by
	 * one of them, and are in its cutime. */
	n = proctree_list(root, v, PROCTREE_MAX);
	for (int i = 1; i < n; i++) {
		uint64_t s, w;

		if (read_cpu(v[i].pid, &s, &w) == 0)
			others += s + w;
	}
	free(v);
	c->self_ns = (uint64_t)(self * ns_per_tick);
	c->others_ns = (uint64_t)(others * ns_per_tick);
	return 0;
}
