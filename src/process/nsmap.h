/* Thread and process ids across PID namespaces.
 *
 * A process in a container has two ids for each of its threads: the one we
 * see (the host's: /proc, ptrace, waitpid) and the one it sees itself, in
 * its own PID namespace, which is what CPython records in its thread
 * states (native_thread_id, struct pthread's tid).  The kernel lists both
 * on the NSpid line of /proc/PID/task/TID/status, ours first, then one per
 * nested namespace, the thread's own last.
 *
 * A map is kept per process and re-read lazily: a lookup that misses, or
 * whose answer is no longer true (the thread it named is gone), reads the
 * task list again, and the status file only of threads not known yet.
 * For a process in our own namespace (one id on its NSpid line, or a
 * kernel without NSpid) every id maps to itself and nothing is read.
 */
#ifndef PYSTROBE_NSMAP_H
#define PYSTROBE_NSMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct nsmap_entry {
	pid_t host;		/* our id of the thread */
	pid_t ns;		/* its id in its own (innermost) namespace */
};

struct nsmap {
	char *proc;		/* "/proc", or a fake tree (tests) */
	pid_t pid;		/* the process, by our id */
	pid_t ns_pid;		/* the process in its own namespace */
	bool nested;		/* in another PID namespace than ours */
	struct nsmap_entry *v;	/* sorted by host id */
	size_t n, alloc;
	unsigned long status_reads;	/* status files read: for tests */
};

/* Start a map of process pid as seen under proc ("/proc" when NULL).
 * Returns 0, or -1 when the process's status cannot be read (then the map
 * is the identity: still safe to use and to free). */
int nsmap_open(struct nsmap *m, const char *proc, pid_t pid);
void nsmap_free(struct nsmap *m);

/* Our id of the thread the process calls ns_tid, 0 if it has none. */
pid_t nsmap_host_tid(struct nsmap *m, pid_t ns_tid);

/* The ids of every thread of the process as it sees them, sorted; returns
 * the count (*tids allocated), or -1. */
int nsmap_ns_tids(struct nsmap *m, pid_t **tids);

/* From a status file's text: the first and the last id of its NSpid line.
 * Returns the number of ids on it (0: no such line). */
int nsmap_parse_status(const char *text, pid_t *first, pid_t *last);

#endif
