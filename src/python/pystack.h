/* Walking the interpreters' threads and their Python frames. */
#ifndef PYSTROBE_PYSTACK_H
#define PYSTROBE_PYSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/locate.h"

struct mem;

/* Deepest stack we walk; deeper ones are cut and marked truncated. */
#define PYSTACK_MAX_DEPTH 4096
/* Most thread states we walk, over all interpreters. */
#define PYSTACK_MAX_THREADS 4096
/* Most interpreters we walk (an InterpreterPoolExecutor has one a worker);
 * the main one is the last of the list. */
#define PYSTACK_MAX_INTERPS 1024

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
	int64_t interp;		/* id of the interpreter running it (0: main) */
	struct py_local *locals;
	int nlocals;
};

/* One OS thread.  Where it has thread states in several interpreters (it
 * runs Interpreter.exec in one, the subinterpreter's code in another), its
 * stack is theirs stitched in call order. */
struct py_thread {
	uint64_t tstate;	/* its innermost thread state */
	uint64_t ident;		/* threading.get_ident() */
	pid_t tid;		/* OS thread id, 0 when unknown */
	/* The id the process gives it in its own PID namespace (what the
	 * interpreter records); tid is ours (see process/nsmap.h), the same
	 * outside containers.  snapshot.c sets both. */
	pid_t ns_tid;
	char *name;		/* threading name, NULL when unknown */
	bool gil;		/* holds a GIL (3.12+: each interpreter can have its own) */
	/* On a free-threaded build, which has no GIL to hold: its thread
	 * state's state (PY_ATTACHED: it may run Python code), of its
	 * innermost part; PY_STATE_UNKNOWN on other builds. */
	int8_t state;
	/* Runs the garbage collector (3.12+): its interpreter's GC state says
	 * a collection is under way, and this thread holds that interpreter's
	 * GIL.  A collection runs with the GIL held from start to end (the
	 * collector is called with it and never lets it go), so the holder is
	 * the collecting thread, unless a finalizer or gc.callbacks hook run
	 * by the collection releases the GIL (sleeps, blocks on I/O): then
	 * the thread that takes it is shown instead, for that while. */
	bool gc;
	bool idle;
	int64_t *interps;	/* interpreters it has thread states in, innermost first */
	int ninterps;
	struct py_frame *frames;	/* innermost first */
	int nframes;
	bool truncated;
	char *error;		/* why this thread's walk stopped early, or NULL */
};

struct walk_opts {
	bool locals;
	bool deep_locals;	/* with locals: containers with their items */
	int max_depth;		/* 0: PYSTACK_MAX_DEPTH */
};

/* A free-threaded build's tstate->state (_Py_THREAD_* in CPython's
 * pycore_pystate.h), and ours for a build that has none. */
enum {
	PY_STATE_UNKNOWN = -1,
	PY_DETACHED = 0,	/* in a blocking call, or C code that let go */
	PY_ATTACHED = 1,	/* may touch Python objects: runs Python code */
	PY_SUSPENDED = 2,	/* stopped by a stop-the-world pause (the GC) */
};

/* One thread state as an interpreter lists it. */
struct py_tstate {
	uint64_t addr;
	uint64_t ident;		/* threading.get_ident() */
	pid_t tid;		/* OS thread id (3.11+), else 0 */
	/* native_thread_id as this thread state holds it: tid unless
	 * order_parts() gave the part its OS thread's identity (3.12 runs a
	 * subinterpreter on its creator's thread state). */
	pid_t tid_read;
	uint64_t frame;		/* innermost frame, 0 when none */
	uint64_t cframe;	/* 3.11/3.12: the _PyCFrame it was read from */
	int frame_err;		/* < 0 when the frame pointer was unreadable */
	int64_t interp;		/* its interpreter's id (0: main), -1 if unreadable */
	bool gil;		/* holds its interpreter's GIL */
	int8_t state;		/* PY_ATTACHED etc., or PY_STATE_UNKNOWN */
	/* Its interpreter's GIL switch count, when gil_counted, and whether
	 * it was the GIL's last holder: a thread that was not, while the
	 * count stays the same, has not run Python code since (see
	 * sample_stack.c's unchanged()). */
	bool gil_counted;
	bool gil_last;
	uint64_t gil_switches;
	bool gc;		/* runs its interpreter's garbage collector (below) */
	/* With gc: where the collecting flag (1) and the GIL's holder (this
	 * thread state) were read.  They were read before the stack was: a
	 * stack read without stopping the thread is the collector's only if
	 * they still say so once it is read (sample_stack.c's recheck). */
	uint64_t gc_at, gil_at;
	/* The parts of one OS thread's stack are listed together, innermost
	 * first: nparts is their count on the first (1 for a thread in one
	 * interpreter only) and 0 on the others. */
	int nparts;
};

/* Does the thread state run Python code: hold its interpreter's GIL, or,
 * on a free-threaded build, which has none, is it attached? */
static inline bool py_tstate_runs(const struct py_tstate *t)
{
	return t->gil || t->state == PY_ATTACHED;
}

/* List up to max thread states of every interpreter, the main one's first,
 * the parts of each OS thread's stack together (see nparts).  *gil gets the
 * address of a thread state holding a GIL (0 if none).  Returns the count,
 * or status_fail(EXIT_*) with a reason in err. */
int pystack_tstates(struct mem *m, const struct pyinterp *pi, struct py_tstate *ts, int max,
		    uint64_t *gil, char *err, size_t errlen);

/* Read a thread state's innermost frame (and 3.11/3.12's _PyCFrame) again
 * into t, as pystack_tstates() read it: a stack torn while it was walked
 * is walked again from what the thread runs now.  Returns t->frame_err. */
int pystack_reread_frame(struct mem *m, const struct py_layout *L, struct py_tstate *t);

/* A frame's fields as the walk read them, at one go: code is the code
 * object (untagged), code_word the word it was read from, lasti the
 * instruction offset or pointer (a 4-byte one zero-extended), owner 3.11+'s
 * owner byte (0 before). */
struct raw_frame {
	uint64_t code, back, lasti, code_word;
	int owner;
};

/* Called for each Python frame, innermost first, with its fields (good
 * for the call only); a negative return stops the walk with that
 * error. */
typedef int (*pyframe_fn)(void *arg, uint64_t frame, const struct raw_frame *rf);

enum walk_end {
	WALK_DONE,
	WALK_TRUNCATED,		/* deeper than max_depth */
	WALK_LOOP,		/* the frame chain loops */
	WALK_READ_ERROR,	/* a frame could not be read (*rc) */
	WALK_VISIT_ERROR,	/* fn returned an error (*rc) */
};

/* Walk the Python frames from `frame` outwards, skipping shims and frames
 * not started yet, at most max_depth of them (0: PYSTACK_MAX_DEPTH). */
enum walk_end pystack_walk(struct mem *m, const struct py_layout *L, uint64_t frame,
			   int max_depth, pyframe_fn fn, void *arg, int *nframes, int *rc);

/* Read every OS thread of every interpreter.  Returns the number of threads
 * (*threads allocated), or status_fail(EXIT_*) with a reason in err.
 * A thread whose stack cannot be read gets its error set; it does not fail
 * the whole walk. */
int pystack_threads(struct mem *m, const struct pyinterp *pi, const struct walk_opts *o,
		    struct py_thread **threads, char *err, size_t errlen);

/* Names of the threads with these idents, from the threading module's
 * _active dict of each interpreter, the main one's first (it started the
 * thread that runs a subinterpreter): names[i] is a new string or NULL. */
void pystack_names(struct mem *m, const struct pyinterp *pi, const uint64_t *idents,
		   int n, char **names);

/* What Python calls the main thread.  A process that never imported
 * threading has no names to read, but its main thread (tid == pid) is
 * still this one, as threading would call it. */
#define PY_MAIN_THREAD_NAME "MainThread"

/* Fill in thread names from the threading module's _active dict. */
void pystack_thread_names(struct mem *m, const struct pyinterp *pi,
			  struct py_thread *threads, int n);

/* Before 3.11 a thread state knows only its pthread_t (the ident); the
 * OS thread id is inside the C library's struct pthread it points to.
 * Returns that offset, checked against the process's threads, or -1. */
int pystack_tid_offset(struct mem *m, const uint64_t *idents, int n, const pid_t *tids, int ntids);

/* Decoding single frames outside a thread walk (asyncio tasks): code
 * object, name, file and line of a frame running `code` at `lasti`.  One
 * decoder keeps the last line table decoded. */
struct frame_decoder;
struct frame_decoder *frame_decoder_new(struct mem *m, const struct pyinterp *pi);
/* 0 (out filled; py_frame_release() it), or a negative errno. */
int frame_decode(struct frame_decoder *d, uint64_t frame, uint64_t code, uint64_t lasti,
		 struct py_frame *out);
void frame_decoder_free(struct frame_decoder *d);
void py_frame_release(struct py_frame *f);

void py_threads_free(struct py_thread *threads, int n);

#endif
