/* Walking an interpreter's threads and their Python frames. */
#ifndef PYSTROBE_PYSTACK_H
#define PYSTROBE_PYSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "locate.h"

struct mem;

/* Deepest stack we walk; deeper ones are cut and marked truncated. */
#define PYSTACK_MAX_DEPTH 4096
/* Most threads we walk in one interpreter. */
#define PYSTACK_MAX_THREADS 4096

struct py_local {
	char *name;
	bool arg;
	char *type;
	char *repr;
};

struct py_frame {
	uint64_t code;		/* address of the code object */
	char *function;		/* qualified name on 3.11+ */
	char *file;
	int line;		/* -1 when unknown */
	struct py_local *locals;
	int nlocals;
};

struct py_thread {
	uint64_t tstate;
	uint64_t ident;		/* threading.get_ident() */
	pid_t tid;		/* OS thread id, 0 when unknown */
	char *name;		/* threading name, NULL when unknown */
	bool gil;
	bool idle;
	struct py_frame *frames;	/* innermost first */
	int nframes;
	bool truncated;
	char *error;		/* why this thread's walk stopped early, or NULL */
};

struct walk_opts {
	bool locals;
	int max_depth;		/* 0: PYSTACK_MAX_DEPTH */
};

/* Read every thread of the interpreter.  Returns the number of threads
 * (*threads allocated), or a negative EXIT_* code with a reason in err.
 * A thread whose stack cannot be read gets its error set; it does not fail
 * the whole walk. */
int pystack_threads(struct mem *m, const struct pyinterp *pi, const struct walk_opts *o,
		    struct py_thread **threads, char *err, size_t errlen);

/* Fill in thread names from the threading module's _active dict. */
void pystack_thread_names(struct mem *m, const struct pyinterp *pi,
			  struct py_thread *threads, int n);

void py_threads_free(struct py_thread *threads, int n);

#endif
