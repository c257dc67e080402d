/* asyncio tasks of a process: each task's name, state, coroutine stack, and
 * who awaits whom, read from outside.
 *
 * What is read, the tasks and who awaits whom, and its bounds are the task
 * model's: python/asynctasks.h.  Two readers fill it: asyncio314.c for 3.14+,
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

/* Find and check the asyncio offsets of src's process (reads its ELF
 * files: do it before pausing it).  0; ASYNCIO_NOT_IMPORTED when the
 * target has not imported asyncio (no C _asyncio module, no
 * asyncio.tasks: not a failure, the reason is in err for a note); or
 * status_fail(EXIT_*) with a reason in err (EXIT_UNSUPPORTED for a version
 * or build we cannot read tasks of, EXIT_BAD_STATE for corrupt offsets,
 * exit_code_for_errno()'s code when they cannot be read). */
#define ASYNCIO_NOT_IMPORTED 1
int asyncio_locate(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
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

#endif
