/* asyncio tasks of a process: each task's name, state, coroutine stack, and
 * who awaits whom, read from outside.
 *
 * What is read, the tasks and who awaits whom, and its bounds are the task
 * model's: python/asynctasks.h.  Two readers fill it: asyncio.c for 3.14+,
 * through the debug offsets the _asyncio module publishes (see
 * interp/asyncio_offsets.c), and asyncio_legacy.c for 3.11-3.13; the entry
 * points below (asyncio_dispatch.c) pick the one for the target's version.
 */
#ifndef PYSTROBE_ASYNCIO_H
#define PYSTROBE_ASYNCIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "interp/layout.h"
#include "python/asynctasks.h"
#include "python/locate.h"
#include "python/pystack.h"

struct mem;

/* Find and check the target's asyncio offsets (reads its ELF files: do it
 * before pausing it).  0; ASYNCIO_NOT_IMPORTED when the target has not
 * imported asyncio (no C _asyncio module, no asyncio.tasks: not a failure,
 * the reason is in err for a note); or status_fail(EXIT_*) with a reason in
 * err (EXIT_UNSUPPORTED for a version or build we cannot read tasks of,
 * EXIT_BAD_STATE for corrupt offsets, exit_code_for_errno()'s code when
 * they cannot be read). */
#define ASYNCIO_NOT_IMPORTED 1
int asyncio_locate(pid_t pid, struct mem *m, const struct pyinterp *pi,
		   struct asyncio_layout *A, char *err, size_t errlen);
/* The same among src's mapped objects (a core's). */
int asyncio_locate_in(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		      struct asyncio_layout *A, char *err, size_t errlen);

/* Read every task of every thread and interpreter through m.  recheck
 * (NULL when the process is paused) re-reads each task uncached after its
 * frames, to drop the ones that changed meanwhile.  0, or
 * status_fail(EXIT_*) with a reason in err. */
int asyncio_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		  struct mem *recheck, struct py_tasks *out, char *err, size_t errlen);

/* The same, for a caller that reads the same process over and over
 * (record --async=all): what each pending task's name, frames and future
 * were computed from is kept in memo and re-read each time in a few
 * merged batches through memo's direct reader; a task whose bytes all
 * still hold is not decoded again (see process/readset.h). */
struct asyncio_memo;
struct asyncio_memo *asyncio_memo_new(struct mem *direct);
void asyncio_memo_free(struct asyncio_memo *memo);
int asyncio_tasks_memo(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		       struct mem *recheck, struct asyncio_memo *memo, struct py_tasks *out,
		       char *err, size_t errlen);

/* The names of the task at `task` and of the tasks awaiting it, that task
 * first and the root last (where several await one, the first found), at
 * most max (ASYNCIO_CHAIN_MAX) new strings into names.  Returns how many;
 * a cycle ends the chain where it closes. */
#define ASYNCIO_CHAIN_MAX 64
int asyncio_awaiter_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			  uint64_t task, char **names, int max);

/* The task the thread at ts runs and its coroutine's frame (to find on
 * the thread's stack): 0, or a negative errno for none. */
struct py_tstate;
int asyncio_running_task(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame);

/* --- the 3.14+ reader (asyncio.c), as asyncio_dispatch.c calls it ------- */

/* asyncio_locate() and asyncio_locate_in(), what naming the process in
 * messages. */
int asyncio314_locate(pid_t pid, const char *what, struct mem *m, const struct pyinterp *pi,
		      struct asyncio_layout *A, char *err, size_t errlen);
int asyncio314_locate_in(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
			 struct asyncio_layout *A, char *err, size_t errlen);
/* asyncio_tasks_memo() (memo NULL: asyncio_tasks()). */
int asyncio314_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     struct mem *recheck, struct asyncio_memo *memo, struct py_tasks *out,
		     char *err, size_t errlen);
int asyncio314_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     uint64_t task, char **names, int max);
int asyncio314_running(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		       const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame);

/* --- shared by the two readers (asyncio.c) ------------------------------ */

struct pyctx;
/* A task's name from its name object: a str, or (3.13+, named lazily)
 * an int n for "Task-n"; NULL if it is neither.  Caller frees. */
char *asyncio_task_name(const struct pyctx *c, uint64_t obj);
/* A frame of a task's coroutine chain, as read. */
struct coro_frame {
	uint64_t frame, code, lasti;
};
struct frame_decoder;
/* Decode a task's n frames into t->frames (innermost first; outer_first:
 * cf holds them the other way round and is turned in place), setting
 * frames_truncated where one does not decode. */
void asyncio_decode_frames(struct frame_decoder *fd, struct py_task *t, struct coro_frame *cf,
			   int n, bool outer_first);
/* What pending task t (its frames decoded, innermost first) waits in,
 * where its innermost coroutine is one of asyncio's waiting methods:
 * fills t->wait.  frames: the addresses of its two innermost frames (the
 * second read only when t has two).  For the 3.11-3.13 reader. */
void asyncio_task_wait(struct mem *m, const struct pyinterp *pi, struct py_task *t,
		       const uint64_t *frames);

#endif
