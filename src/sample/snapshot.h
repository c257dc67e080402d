/* One consistent picture of a Python process: who it is, which Python, and
 * every thread's stack, read while its threads are paused (or not, with
 * --nonblocking).  The dump command prints one per process; record and top
 * sample through sample/sampler.c instead. */
#ifndef PYSTROBE_SNAPSHOT_H
#define PYSTROBE_SNAPSHOT_H

#include <stdbool.h>
#include <sys/types.h>

#include "python/locate.h"
#include "native/mixed.h"
#include "python/pystack.h"

struct snapshot_opts {
	bool nonblocking;
	bool locals;
	bool deep_locals;	/* --locals=deep */
	bool native;		/* also unwind native stacks and merge (not with nonblocking) */
};

struct snapshot {
	pid_t pid;
	pid_t ns_pid;		/* its id in its own PID namespace (== pid outside containers) */
	char **argv;		/* command line, NULL if unreadable */
	int argc;
	struct pyinterp pi;
	struct py_thread *threads;
	int nthreads;
	struct mixed_stack *mixed;	/* with opts.native: threads[i]'s merged stack */
};

/* Returns 0, or a negative EXIT_* code with a one-line message in err.
 * The target is never left paused, whatever happens. */
int snapshot_take(pid_t pid, const struct snapshot_opts *o, struct snapshot *s,
		  char *err, size_t errlen);
void snapshot_free(struct snapshot *s);


#endif
