/* The asyncio task model: the tasks of a process as read, who awaits whom,
 * and the deadlock cycles among them.  Both task readers fill it (asyncio314.c
 * for 3.14+, asyncio_legacy.c for 3.11-3.13 and pure-Python tasks); dump,
 * record and the sampler read it.  Nothing here reads the target.
 *
 * Everything is bounded: tasks per process, coroutines per chain, tasks
 * one task awaits or is awaited by, futures between two tasks.  A task
 * that changes or goes while it is read (it finished in between: only
 * possible when the process is not paused) is dropped and counted as
 * torn, never shown with a stack that is not its own.
 */
#ifndef PYSTROBE_ASYNCTASKS_H
#define PYSTROBE_ASYNCTASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/pystack.h"
#include "util/hashidx.h"

#define ASYNCIO_MAX_TASKS 100000
#define ASYNCIO_MAX_CORO_DEPTH 256	/* coroutines awaiting coroutines */
/* Most tasks one task awaits, and most tasks awaiting one: the one bound
 * of the awaits graph, for both readers, kept by py_tasks_link(). */
#define ASYNCIO_MAX_AWAITERS 1024
#define ASYNCIO_MAX_HOPS 8		/* futures between a task and its awaiter */
#define ASYNCIO_MAX_THREADS 4096
#define ASYNCIO_MAX_INTERPS 64

enum task_state { TASK_PENDING, TASK_RUNNING, TASK_DONE };

struct py_task {
	uint64_t addr;
	char *name;
	enum task_state state;
	uint64_t tstate;	/* thread state whose list holds it; 0: the
				 * interpreter's (its thread has exited) */
	pid_t tid;		/* that thread (snapshot.c fills it), 0: none */
	char *waiting_on;	/* type of the future it is blocked on, or NULL */
	/* Where visible, the synchronization object it waits in (its
	 * innermost coroutine is Lock.acquire, Event.wait, Queue.get...,
	 * whose `self` it is): type ("asyncio.Lock"), address and state
	 * ("locked", "set", "value 0"...; NULL when not read).  kind NULL:
	 * none seen. */
	struct task_wait {
		char *kind, *state;
		uint64_t addr;
	} wait;
	uint64_t *awaiting;	/* tasks it awaits */
	int nawaiting;
	uint64_t *awaited_by;	/* tasks awaiting it */
	int nawaited_by;
	struct py_frame *frames;	/* innermost first */
	int nframes;
	bool frames_truncated;
	bool joined;		/* running: frames from its thread's stack */
	int cycle;		/* > 0: in deadlock cycle number `cycle` */
	/* Read with a memo: name, frames and waiting_on belong to the memo
	 * (good until its next use), and same says they are what the
	 * previous read through it gave for this task. */
	bool borrowed, same;
};

struct py_tasks {
	struct py_task *v;
	int n;
	int torn;		/* tasks dropped because they changed under us */
	int not_running;	/* named running, off their thread's stack: shown
				 * pending (python/taskrun.h) */
	bool truncated;		/* more than ASYNCIO_MAX_TASKS */
	int ncycles;
	/* Awaits left out at a bound: ASYNCIO_MAX_AWAITERS; on 3.11-3.13
	 * also the children of gathers not read (asyncio_legacy.h). */
	int edges_cut;
	struct hashidx ix;	/* address -> index, once py_tasks_index() */
};

const char *task_state_name(enum task_state s);

/* The task at addr among t, or NULL: by hash once t is indexed (it is as
 * read; whoever reorders t->v must hashidx_clear(&t->ix) and index it
 * again), else one by one. */
const struct py_task *py_tasks_find(const struct py_tasks *t, uint64_t addr);
void py_tasks_index(struct py_tasks *t);

void py_tasks_free(struct py_tasks *t);
/* Free what one task holds (the task itself is left zeroed). */
void py_task_free_one(struct py_task *t);
/* The same, the task left as it is: its links, and its result unless
 * borrowed. */
void py_task_release(struct py_task *t);
/* What a task's result owns: name, frames, what it waits on (a reader's
 * memo frees the results it lent this way). */
void py_task_result_release(struct py_task *t);
/* Task t->v[awaiter] awaits t->v[awaited]: the edge recorded on both
 * (awaiting, awaited_by), once.  Where either already has
 * ASYNCIO_MAX_AWAITERS, it is left out and counted in t->edges_cut. */
void py_tasks_link(struct py_tasks *t, int awaiter, int awaited);
/* Number the deadlock cycles of t's awaits graph (each task's cycle,
 * t->ncycles), indexing t first (py_tasks_index). */
void py_tasks_mark_cycles(struct py_tasks *t);
/* The index in t->v of the task at addr, or -1: ix indexes t->v by
 * hash_u64 of each task's address (t->ix, or a reader's own while it
 * fills t). */
int py_tasks_lookup(const struct hashidx *ix, const struct py_tasks *t, uint64_t addr);

#endif
