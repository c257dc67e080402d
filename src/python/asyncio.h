/* asyncio tasks of a process: each task's name, state, coroutine stack, and
 * who awaits whom, read from outside (3.14+, through the debug offsets the
 * _asyncio module publishes; see interp/asyncio_offsets.c).
 *
 * Everything is bounded: tasks per process, coroutines per chain, entries
 * per awaited-by set, futures between two tasks.  A task that changes or
 * goes while it is read (it finished in between: only possible when the
 * process is not paused) is dropped and counted as torn, never shown with
 * a stack that is not its own.
 */
#ifndef PYSTROBE_ASYNCIO_H
#define PYSTROBE_ASYNCIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "interp/layout.h"
#include "python/locate.h"
#include "python/pystack.h"
#include "util/hashidx.h"

struct mem;

#define ASYNCIO_MAX_TASKS 100000
#define ASYNCIO_MAX_CORO_DEPTH 256	/* coroutines awaiting coroutines */
#define ASYNCIO_MAX_AWAITERS 1024	/* entries of one awaited-by set */
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
	struct hashidx ix;	/* address -> index, once py_tasks_index() */
};

/* Find and check the target's asyncio offsets (reads its ELF files: do it
 * before pausing it).  0, or a negative EXIT_* code with a reason in err
 * (-EXIT_UNSUPPORTED for a version or build we cannot read tasks of). */
int asyncio_locate(pid_t pid, struct mem *m, const struct pyinterp *pi,
		   struct asyncio_layout *A, char *err, size_t errlen);
/* The same among src's mapped objects (a core's). */
int asyncio_locate_in(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		      struct asyncio_layout *A, char *err, size_t errlen);

/* Read every task of every thread and interpreter through m.  recheck
 * (NULL when the process is paused) re-reads each task uncached after its
 * frames, to drop the ones that changed meanwhile.  0, or a negative
 * EXIT_* code with a reason in err. */
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

/* The task at addr among t, or NULL: by hash once t is indexed (it is as
 * read; whoever reorders t->v must hashidx_clear(&t->ix) and index it
 * again), else one by one. */
const struct py_task *py_tasks_find(const struct py_tasks *t, uint64_t addr);
void py_tasks_index(struct py_tasks *t);

void py_tasks_free(struct py_tasks *t);
/* Free what one task holds (the task itself is left zeroed). */
void py_task_free_one(struct py_task *t);
/* Number the deadlock cycles of t's awaits graph (each task's cycle,
 * t->ncycles). */
void py_tasks_mark_cycles(struct py_tasks *t);
/* The index in t->v of the task at addr, or -1: ix indexes t->v by
 * hash_u64 of each task's address (t->ix, or a reader's own while it
 * fills t). */
int py_tasks_lookup(const struct hashidx *ix, const struct py_tasks *t, uint64_t addr);
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

/* The task the thread at ts runs and its coroutine's frame (to find on
 * the thread's stack): 0, or a negative errno for none. */
struct py_tstate;
int asyncio_running_task(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame);

const char *task_state_name(enum task_state s);

#endif
