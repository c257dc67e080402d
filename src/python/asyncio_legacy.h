/* asyncio tasks before 3.14 (3.11-3.13): no debug section and no task
 * lists in thread states, so tasks are found the way asyncio.all_tasks()
 * finds them, through Python state: the registries of the asyncio.tasks
 * module (3.11: the WeakSet _all_tasks; 3.12, 3.13: the WeakSet
 * _scheduled_tasks and the set _eager_tasks; with the C accelerator these
 * are the very objects _asyncio keeps) and _current_tasks (loop -> the
 * task it runs).  C tasks are read through the TaskObj layout verified
 * for the version (interp/asyncio_offsets.c), pure-Python ones
 * (asyncio.tasks._PyTask) through their instance attributes.
 *
 * Who awaits whom, which 3.14 records in the task, is derived: a task
 * awaits the task its _fut_waiter is, or the tasks a gather future it
 * waits on gathers (_GatheringFuture._children, nested gathers too); the
 * task that entered a TaskGroup awaits every task of the group still
 * running (the tasks whose done callback is the group's _on_task_done:
 * the group's _parent_task).  That is what 3.14 records for the same
 * program.
 */
#ifndef PYSTROBE_ASYNCIO_LEGACY_H
#define PYSTROBE_ASYNCIO_LEGACY_H

#include "python/asyncio.h"

/* Is 3.minor read this way?  Fills *A with its table (legacy.on). */
bool asyncio_legacy_version(int minor, int free_threaded, struct asyncio_layout *A);

/* With *A from asyncio_legacy_version: check the target has imported
 * asyncio (ASYNCIO_NOT_IMPORTED otherwise, with what names it) and that
 * its C Task type, when it uses one, has the size of the verified layout
 * (status_fail(EXIT_UNSUPPORTED) otherwise: never a guess). */
int asyncio_legacy_locate(struct mem *m, const struct pyinterp *pi, const char *what,
			  struct asyncio_layout *A, char *err, size_t errlen);

/* Who awaits whom through gathers is found by walking the children of
 * the gather future a task waits on, the gathers among them too, down to
 * ASYNCIO_MAX_HOPS, each gather once per task's walk.  Garbage can list a
 * gather in itself, or nest them a thousand wide: a read of n tasks looks
 * at no more than this many gathers and children, each a few reads, and
 * counts what it leaves out in edges_cut (as it does the children of a
 * gather past the first 1024). */
#define ASYNCIO_LEGACY_GATHER_VISITS(n) (65536L + 4L * (long)(n))

/* Like asyncio_tasks(). */
int asyncio_legacy_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 struct mem *recheck, struct py_tasks *out, char *err, size_t errlen);

/* The task the thread whose threading.get_ident() is ident runs (its
 * loop's _thread_id), and that task's coroutine frame: 0 or -ENOENT. */
int asyncio_legacy_running(struct mem *m, const struct pyinterp *pi,
			   const struct asyncio_layout *A, uint64_t ident, uint64_t *task,
			   uint64_t *coro_frame);

/* Like asyncio_awaiter_chain(): the graph is read whole to find who
 * awaits a task (nothing in the task says). */
int asyncio_legacy_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 uint64_t task, char **names, int max);

#endif
