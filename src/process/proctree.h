/* The descendants of a process: what --subprocesses follows.
 *
 * A DataLoader or a multiprocessing pool starts its workers from whichever
 * thread runs the pool (Pool's worker handler, a forkserver), sometimes
 * through a process that is not Python (a shell, a launcher), so the tree
 * is walked through every thread of every process in it.
 */
#ifndef PYSTROBE_PROCTREE_H
#define PYSTROBE_PROCTREE_H

#include <stdint.h>
#include <sys/types.h>

/* At most this many processes are followed: a fork bomb in the target
 * must not become one in the profiler. */
#define PROCTREE_MAX 4096

struct proc_node {
	pid_t pid;
	pid_t ppid;
	/* Start time in clock ticks since boot (/proc/PID/stat field 22):
	 * with the pid, it names a process; a pid alone can be reused. */
	uint64_t start;
	/* Where its code and its stack start (fields 26 and 28): the kernel
	 * picks both anew at exec (under ASLR), so they change when the
	 * process runs another program or a fresh interpreter. */
	uint64_t code, stack;
};

/* root and every process below it, parents before children, into out
 * (room for max).  Returns the count: 0 when root itself is gone. */
int proctree_list(pid_t root, struct proc_node *out, int max);

/* pid's node (its parent, start time, code and stack): 0, or -1 when it
 * is gone or a zombie. */
int proc_node_read(pid_t pid, struct proc_node *node);

/* The parent of pid (/proc/PID/stat), or 0 when it is gone or a zombie. */
pid_t proc_parent(pid_t pid);

/* The start time of pid, or 0 when it is gone. */
uint64_t proc_start_time(pid_t pid);

/* CPU time, user and system, that a process has used itself and that its
 * descendants have (the live ones, and those that were waited for). */
struct tree_cpu {
	uint64_t self_ns;
	uint64_t others_ns;
};

/* root's, also when it has exited and is not reaped yet.  Returns 0, or
 * -1 when root is gone. */
int proctree_cpu(pid_t root, struct tree_cpu *c);

#endif
