/* Proof that a task read as running is running, in the read that gives its
 * frames (issue 30).
 *
 * asyncio names a thread's running task (3.14+: the thread state's
 * running-task pointer; 3.11-3.13: _current_tasks, by event loop).  A
 * running task's frames are its thread's, from the innermost out to its
 * coroutine's own frame.  Read from a process that runs on, the name and
 * the stack are read at different moments, and a loop that switches tasks
 * every millisecond can be found naming a task that has yielded since, or
 * not yet resumed: shown "running" with its suspended coroutine's frames,
 * a read would contradict itself.
 *
 * So a task read as running is joined to its thread's stack, and what
 * makes that up is re-read in one batch (src/python/recheck.h), as the
 * sampler proves a thread's stack: the thread state's frame pointer, every
 * frame walked (back, code, and the instruction offset of all but the
 * innermost), and the words that name the task running (its thread
 * state's running-task pointer, 3.14+; its coroutine pointer, for a C
 * task).  Then one of:
 *  - its coroutine's frame is on the stack, and every word held: it runs,
 *    with those frames (joined);
 *  - the whole stack was walked, every word held, and its coroutine's
 *    frame is not on it: nothing of the task runs, it is shown pending
 *    (its coroutine's suspended frames) and counted (py_tasks.not_running):
 *    the loop was switching to it or away from it;
 *  - neither: the read is made again from fresh memory, up to
 *    TASK_RUN_TRIES times, then the task is left out and counted torn.
 * From a paused process (no direct reader) one read is proof enough.
 */
#ifndef PYSTROBE_TASKRUN_H
#define PYSTROBE_TASKRUN_H

#include <stdbool.h>
#include <stdint.h>

#include "interp/layout.h"
#include "python/asyncio.h"
#include "python/locate.h"
#include "python/pystack.h"
#include "python/recheck.h"

struct mem;
struct coro_frame;

#define TASK_RUN_TRIES 8
#define TASK_RUN_WORDS 2

/* A task read as running, and the words that say so: each must still
 * hold its value when the stack is proved. */
struct task_run {
	uint64_t task;
	uint64_t coro_frame;	/* its coroutine's frame: where a join stops */
	struct {
		uint64_t addr, value;
	} words[TASK_RUN_WORDS];
	int nwords;
};

/* The task at task, its coroutine's frame at coro_frame, read as the one
 * the thread state at tstate runs (0: unknown): what says so into *tr,
 * read through m where it must be (a C task's coroutine pointer is
 * rechecked when it reads as the coroutine; a pure-Python task's is not
 * a field).  For the readers, and for record --async's samples. */
void task_run_words(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		    uint64_t tstate, uint64_t task, uint64_t coro_frame, struct task_run *tr);

/* Add tr's words to a recheck, as owner's (record --async: they join the
 * thread's stack's words). */
void task_run_recheck(struct recheck *rc, uint32_t owner, const struct task_run *tr);

/* The frames of task t, read as running, on the stack of one of the
 * thread states ts[0..nts) (its own, or every one when its thread is not
 * known: t->tstate 0), proved as above.  m: the read's reader; direct:
 * NULL for a paused process, else the uncached reader the proof re-reads
 * through.  Returns:
 *   1  joined: its frames, innermost first, in cf[0..*n) (*cut: more
 *      than ASYNCIO_MAX_CORO_DEPTH, the innermost kept); t->joined set,
 *      and t->tstate to the thread found;
 *   0  not on the stack: t->state is now TASK_PENDING and the caller
 *      reads its coroutine's frames; out->not_running counts it;
 *  -1  no read held: the caller leaves t out, counted torn. */
int task_run_frames(struct mem *m, struct mem *direct, const struct py_layout *L,
		    const struct py_tstate *ts, int nts, const struct task_run *tr,
		    struct py_task *t, struct py_tasks *out, struct coro_frame *cf, int *n,
		    bool *cut);

#endif
