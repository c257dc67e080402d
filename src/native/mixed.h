/* Merging a thread's native stack with its Python stack.
 *
 * Each call of the interpreter's eval loop (_PyEval_EvalFrameDefault) on
 * the native stack ran some Python frames: exactly one before 3.11; since
 * 3.11 one "entry" frame and every frame called from it by Python-to-Python
 * calls, which need no C recursion.  So the Python frames fall into groups,
 * one per eval call, and the merged stack replaces the k-th eval frame
 * (innermost first) by the k-th group.
 *
 * Native frames of CPython's call machinery (PyObject_Call, vectorcall
 * trampolines...) that sit between two Python frames say nothing the
 * Python frames do not, and are hidden.  C functions that Python code
 * called (time.sleep, a lock, ctypes, numpy) stay, as does everything
 * above the innermost and below the outermost Python frame.
 *
 * An unwind that stopped early (in JIT code, which has no unwind tables,
 * or in vfork) gives a partial merge: the frames it found, a gap marked as
 * such, and the outer Python frames.  When the stacks truly disagree (a
 * custom eval function, frames out of order) there is no merged stack:
 * callers fall back to the Python stack and count a merge error.  A stack
 * that looks right but is not would be worse than none.
 */
#ifndef PYSTROBE_MIXED_H
#define PYSTROBE_MIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "interp/layout.h"

struct mem;
struct native_sym;

enum native_class {
	NATIVE_OTHER,		/* shown */
	NATIVE_EVAL,		/* an eval loop call: replaced by its Python frames */
	NATIVE_EVAL_PART,	/* part of an eval call (3.14 tail-call handlers): hidden */
	NATIVE_PLUMBING,	/* CPython call machinery: hidden between Python frames */
};

/* What a native frame is, from its symbol; interp_path is the object that
 * holds the interpreter (struct pyinterp.path): only code in it counts as
 * CPython's own. */
enum native_class merge_classify(const struct native_sym *ns, const char *interp_path);

/* The Python frames run by one eval call. */
struct py_group {
	int nframes;		/* can be 0: an eval call whose frame has not started */
	/* An address on the C stack inside that eval call's native frame
	 * (3.11: its _PyCFrame; 3.12+: its entry shim frame), or 0 before
	 * 3.11.  It finds the eval frame even where the binary is stripped
	 * or the loop lives in an unnamed .cold part. */
	uint64_t marker;
};

struct py_tstate;

/* The Python frames of one thread in eval-call groups, innermost first.
 * Walks the frames from ts->frame exactly as pystack_walk() does with
 * max_depth, so frame i here is frame i of the thread's walk; with
 * ts->nparts > 1 (an OS thread in several interpreters) the parts
 * ts[0..nparts) one after the other, as the dump and the sampler do.  *nframes
 * gets the number of Python frames.  Returns 0, or -1 when the walk did
 * not reach the end of the chain or the chain does not fall into groups
 * (no grouping can be trusted).  *groups is allocated (free() it) even on
 * error. */
int merge_py_groups(struct mem *m, const struct py_layout *L, const struct py_tstate *ts,
		    int max_depth, struct py_group **groups, int *ngroups, int *nframes);

/* One native frame as the merge sees it. */
struct merge_native {
	enum native_class cls;
	uint64_t sp;		/* see struct native_pc */
	/* Code in no object (JIT): no unwind table, so the frames outer
	 * to it are libunwind's frame-pointer guesses. */
	bool anon;
};

/* One frame of a merged stack: Python frame `index` of the thread, native
 * frame `index` of the unwound stack, or the gap of a partial merge. */
enum merged_kind { MERGED_PYTHON, MERGED_NATIVE, MERGED_GAP };

struct merged_ref {
	enum merged_kind kind;
	int index;		/* -1 for the gap */
};

/* Merge nat[0..nnative) (innermost first) with the groups from
 * merge_py_groups() (npy frames in all).  With markers, the eval frames are
 * the native frames holding them, in order; without, they are the frames
 * named so, and their count must be ngroups.  cut: the unwinder says it
 * stopped before the stack's end.
 *
 * The innermost eval frame may run no group (the call is entering or
 * leaving: its frame is not in the chain): it is kept as a native frame.
 *
 * A partial merge when the unwind stopped short of the outer eval calls
 * (their markers lie beyond its last frame; without markers, cut and too
 * few eval frames): the frames unwound are merged with the inner groups,
 * then come one MERGED_GAP, where the native frames are unknown, and the
 * Python frames of the outer groups.  Nothing is guessed: the gap says
 * the join is unknown, and native frames found through an anon frame
 * past the last eval frame placed (which no marker vouches for) are left
 * in the gap too.
 *
 * out must have room for nnative + npy + 1 entries.  Returns the number of
 * merged frames, or -1 with the reason in err when the stacks do not fit
 * together. */
int merge_stacks(const struct merge_native *nat, int nnative, bool cut,
		 const struct py_group *groups, int ngroups, int npy, struct merged_ref *out,
		 char *err, size_t errlen);

/* Is there a MERGED_GAP among refs[0..n)? */
bool merge_has_gap(const struct merged_ref *refs, int n);

/* --- a merged stack as the dump keeps it -------------------------------- */

struct mixed_frame {
	bool native;
	int py;			/* !native: index into py_thread.frames */
	/* native: */
	uint64_t pc;
	char *function;		/* NULL when unknown */
	char *library;		/* base name of the object, NULL when none */
	uint64_t offset;	/* in the object's link-time addresses */
	char *file;		/* source, NULL when unknown */
	int line;
};

struct mixed_stack {
	struct mixed_frame *frames;	/* innermost first; NULL when there is no merged stack */
	int nframes;
	bool truncated;		/* the native unwind stopped before the stack's end */
	char *error;		/* why there is no merged stack, or NULL */
};

void mixed_stack_release(struct mixed_stack *ms);

#endif

/* --- one stop, every thread: the glue the dump uses ---------------------- */

struct native_unwinder;
struct symbolizer;
struct pause;
struct pyinterp;
struct py_thread;
struct native_capture;

/* While the threads are stopped: unwind every thread p stopped. */
struct native_capture *merge_capture_native(struct native_unwinder *u, const struct pause *p);

/* The same for threads whose registers are known (a core's): thread tids[i]
 * from regs[i]. */
struct user_regs_struct;
struct native_capture *merge_capture_regs(struct native_unwinder *u, const pid_t *tids,
					  const struct user_regs_struct *regs, int n);

/* While the threads are stopped, after pystack_threads(): group each
 * thread's Python frames by eval call (walked with max_depth, as they
 * were). */
void merge_capture_python(struct native_capture *c, struct mem *m, const struct pyinterp *pi,
			  int max_depth);

/* Once the threads run again: the merged stack of each of threads[0..n)
 * (the OS thread ids filled in), an array of n to release with
 * mixed_stack_release() and free().  A thread whose stacks cannot be
 * merged gets error set and no frames. */
struct mixed_stack *merge_finish(struct native_capture *c, struct symbolizer *s,
				 const struct pyinterp *pi, const struct py_thread *threads, int n);

void merge_capture_free(struct native_capture *c);
