/* The native side of a sampler (record --native, top --native): each
 * sample's native stacks merged into its Python ones, as profile frames.
 *
 * The work is split around the pause so that the target is stopped only
 * while its state is read:
 *
 *	nsample_begin(ns, t_ns);	before pausing (maps re-read now and then)
 *	pause the process
 *	for each thread sampled:
 *		nsample_capture(...);	copy its registers and stack, group its
 *					Python frames
 *	release the process
 *	nsample_finish(ns, t_ns);	unwind the copies, symbolize, merge,
 *					count the stacks
 *
 * A stack that cannot be merged (an unwind that failed, frame counts that
 * disagree, a truncated Python stack) is counted with its Python frames
 * alone, and nsample_finish() says how many were: merge errors.  Never a
 * merged stack that might be wrong.  An unwind that stopped short of the
 * outer interpreter calls (JIT code without unwind tables, vfork) gives a
 * partial merge (see merge_stacks()): the outer Python frames, the frame
 * NSAMPLE_GAP_FRAME where the native frames between are unknown, then the
 * native frames found (with the Python frames they ran); nsample_gaps()
 * counts those stacks.
 *
 * The interpreter's start-up, the native frames outer to a thread's
 * outermost Python frame (_start, __libc_start_main, Py_BytesMain,
 * Py_RunMain... or clone, start_thread, thread_run), is left out unless
 * startup is asked for: the same nine frames at the root of every stack.
 * Only frames of the interpreter, its launcher (python*) and the C
 * library count as start-up: a program that embeds Python keeps its own.
 *
 * Native frames are PF_NATIVE profile frames named after the function
 * (demangled), with the source file and line where debug information has
 * them, else the object's path as the file; with no symbol at all,
 * "library.so+0xOFFSET" and no file.
 */
#ifndef PYSTROBE_NSAMPLE_H
#define PYSTROBE_NSAMPLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct mem;
struct profile;
struct pyinterp;
struct py_tstate;
struct nsample;

/* pi must outlive the result.  by_function: no line numbers in frames.
 * startup: keep the interpreter's start-up frames.  debuginfod: fetch the
 * debug files of objects without symbols (symstore.h).  marker: the
 * profile frame that marks a truncated stack. */
struct nsample *nsample_open(pid_t pid, const struct pyinterp *pi, struct profile *p,
			     bool by_function, bool startup, bool debuginfod, uint32_t marker);
void nsample_close(struct nsample *ns);

/* Before pausing for the sample taken t_ns after the start. */
void nsample_begin(struct nsample *ns, uint64_t t_ns);

/* While the threads are stopped: thread tid (0 if unknown) of profile
 * thread pthread, whose stack as the Python-only sampler would count it is
 * stack[0..depth), root first: nhead root frames (process, thread), then
 * its Python frames.  py_complete: the Python walk reached the end of the
 * frame chain (no truncation marker among them). */
void nsample_capture(struct nsample *ns, struct mem *m, const struct py_tstate *ts, pid_t tid,
		     uint32_t pthread, const uint32_t *stack, uint32_t depth, uint32_t nhead,
		     bool py_complete);

/* A thread asleep that the pause leaves running (record --native
 * --idle), counted from its last unwind:
 *
 *	before the pause: nsample_prove_still() if it ran since the last proof
 *	while the others are stopped: nsample_capture_still(), as capture
 *	once they are released: nsample_drop_still() if it ran after all
 *
 * nsample_prove_still(): its last unwind holds now (native_still_*: its
 * entry into the kernel and the stack bytes that unwind read), and it did
 * not run since the caller read run_ns and runs from sched_fd, its open
 * /proc/PID/task/TID/schedstat (proc_schedstat_read()). */
bool nsample_prove_still(struct nsample *ns, pid_t tid, int sched_fd, uint64_t run_ns,
			 uint64_t runs);
void nsample_capture_still(struct nsample *ns, struct mem *m, const struct py_tstate *ts,
			   pid_t tid, uint32_t pthread, const uint32_t *stack, uint32_t depth,
			   uint32_t nhead, bool py_complete);
/* Does tid still have the memo a proof rests on (a change of the maps
 * drops them)? */
bool nsample_still_ready(struct nsample *ns, pid_t tid);
/* tid's stack of this round is not counted; whether it had one. */
bool nsample_drop_still(struct nsample *ns, pid_t tid);

/* Once the threads run again: add every captured stack to the profile.
 * Returns how many had to fall back to their Python frames. */
unsigned nsample_finish(struct nsample *ns, uint64_t t_ns);

/* The marker frame of a partial merge's gap. */
#define NSAMPLE_GAP_FRAME "<unknown native frames>"

/* Stacks counted so far with a gap (a partial merge). */
unsigned nsample_gaps(const struct nsample *ns);

/* Why the latest merge error happened ("" if none yet), for diagnostics. */
const char *nsample_last_error(const struct nsample *ns);

/* 1 once the symbolization helper was lost (see symbolize.h), else 0. */
unsigned nsample_symbol_errors(const struct nsample *ns);

#endif
