/* What the asyncio readers share and asyncio.h does not show; included by
 * src/python/asyncio*.c (and taskrun.c) only.
 *
 * The 3.14+ reader (asyncio314.c) keeps its state in struct
 * asyncio_reader, which its --async=all memo (asyncio_memo.c) and what
 * both readers decode of a task (asyncio_decode.c) work on; the 3.11-3.13
 * one (asyncio_legacy.c) in struct lreader, from which
 * asyncio_legacy_awaits.c derives who awaits whom.
 */
#ifndef PYSTROBE_ASYNCIO_INT_H
#define PYSTROBE_ASYNCIO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "python/asyncio.h"
#include "python/pyobj.h"
#include "util/hashidx.h"

#define TASK_READ_MAX 256
#define ASYNCIO_TYPE_CACHE 16
#define WAITS_SEEN 16

/* A frame of a task's coroutine chain, as read. */
struct coro_frame {
	uint64_t frame, code, lasti;
};

/* Type objects seen in this read, by address (the process is paused, or
 * the read is marked nonblocking and its tasks re-checked). */
struct type_cache {
	uint64_t addr[ASYNCIO_TYPE_CACHE];
	bool yes[ASYNCIO_TYPE_CACHE];
	int n;
};

struct asyncio_reader {
	struct mem *m;
	const struct pyinterp *pi;
	const struct py_layout *L;
	const struct asyncio_layout *A;
	struct pyctx c;
	struct frame_decoder *fd;
	struct py_tasks *out;
	size_t cap;
	struct hashidx ix;		/* task address -> index */
	/* Per task, as read: awaited_by and its is-set flag, coroutine,
	 * and the whole object for the torn check. */
	struct raw_task {
		uint64_t awaited_by, coro, waiter, running_frame;
		uint8_t is_set;
		uint8_t bytes[TASK_READ_MAX];
	} *raw;
	size_t rawcap;
	struct type_cache coro_types, fut_types;
	long resolve_left;	/* objects and set slots looked at resolving awaiters */
	struct asyncio_memo *memo;	/* NULL: no memo (see asyncio_memo_result) */
	struct mem *direct;		/* the recheck's reader, NULL when paused */
	const struct py_tstate *ts;	/* the threads, for running tasks' frames */
	int nts;
	long nodes_left;	/* list nodes visited, over all lists */
	/* The objects tasks wait in, as seen in this read: thousands of
	 * tasks often wait on one Event. */
	struct wait_seen {
		uint64_t obj;
		struct task_wait w;
	} waits_seen[WAITS_SEEN];
};

/* --- the 3.14+ reader (asyncio314.c), as asyncio_dispatch.c calls it ------- */

int asyncio314_locate(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		      struct asyncio_layout *A, char *err, size_t errlen);
/* asyncio_tasks_memo() (memo NULL: asyncio_tasks()). */
int asyncio314_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     struct mem *recheck, struct asyncio_memo *memo, struct py_tasks *out,
		     char *err, size_t errlen);
int asyncio314_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		     uint64_t task, char **names, int max);
int asyncio314_running(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		       const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame);
/* Task i's frames, into its py_task (cf: room for them).  False: a task
 * read as running whose run no read proved (taskrun.h), left out as torn. */
bool asyncio314_task_frames(struct asyncio_reader *r, int i, struct coro_frame *cf);

/* --- the memo of record --async=all (asyncio_memo.c) ----------------------- */

/* The task at task as the memo re-read it this round, or NULL. */
const uint8_t *asyncio_memo_fresh(const struct asyncio_reader *r, uint64_t task);
/* Before the lists are walked, and after. */
void asyncio_memo_prepare(struct asyncio_reader *r);
void asyncio_memo_sweep(struct asyncio_memo *memo);
/* Task i's name, frames and future, from the memo or computed.  False:
 * the task has no readable name (it is dropped as torn). */
bool asyncio_memo_result(struct asyncio_reader *r, int i, struct coro_frame *cf);
/* Forget the task at addr's result (it was torn). */
void asyncio_memo_torn(struct asyncio_reader *r, uint64_t addr);

/* --- the 3.11-3.13 reader (asyncio_legacy.c) ------------------------------ */

#define LEGACY_MAX_LOOPS 64	/* event loops running at once (_current_tasks) */
#define LEGACY_TYPE_CACHE 32

/* Per task, as read: what the torn check compares, what the graph needs. */
struct lraw {
	uint64_t type, coro, waiter, name, loop;
	int32_t state;
	bool py;		/* a pure-Python task (attributes, not fields) */
	bool unproved;		/* read as running, and no read proved it */
};

struct lreader {
	struct mem *m;
	const struct pyinterp *pi;
	const struct py_layout *L;
	const struct asyncio_layout *A;
	struct pyctx c;
	struct py_tasks *out;
	struct mem *direct;		/* the recheck's reader, NULL when paused */
	size_t cap;
	struct lraw *raw;
	size_t rawcap;
	struct hashidx ix;		/* task address -> index */
	uint64_t ctask, pytask;		/* the Task types of this interpreter, 0: none */
	struct py_tstate *ts;
	int nts;
	uint64_t running[LEGACY_MAX_LOOPS];	/* _current_tasks' values */
	int nrunning;
	/* loop -> thread state */
	uint64_t loop[LEGACY_MAX_LOOPS], loop_tstate[LEGACY_MAX_LOOPS];
	int nloops;
	/* Type names by type address, for this read only (the process is
	 * paused, or each task is read again after). */
	struct {
		uint64_t type;
		char name[48];
	} types[LEGACY_TYPE_CACHE];
	int ntypes;
};

/* An instance attribute of obj, also of an object whose C base keeps its
 * own __dict__ slot: 0, or a negative errno. */
int legacy_attr(struct lreader *r, uint64_t obj, const char *name, uint64_t *value);
/* The name of obj's type (cached for this read), or NULL. */
const char *legacy_type_name(struct lreader *r, uint64_t obj);
bool legacy_type_is(struct lreader *r, uint64_t obj, const char *name);
/* The index of the task at addr among those read, or -1. */
int legacy_task_index(const struct lreader *r, uint64_t addr);

/* Who awaits whom, derived (asyncio_legacy_awaits.c): the edges of the
 * tasks read, and each one's waiting_on. */
void asyncio_legacy_resolve(struct lreader *r);

/* --- shared by the two readers (asyncio_decode.c) ---------------------------- */

/* A task's name from its name object: a str, or (3.13+, named lazily)
 * an int n for "Task-n"; NULL if it is neither.  Caller frees. */
char *asyncio_task_name(const struct pyctx *c, uint64_t obj);
struct frame_decoder;
/* Decode a task's n frames into t->frames (innermost first; outer_first:
 * cf holds them the other way round and is turned in place), setting
 * frames_truncated where one does not decode. */
void asyncio_decode_frames(struct frame_decoder *fd, struct py_task *t, struct coro_frame *cf,
			   int n, bool outer_first);
/* What pending task t waits in, where its innermost coroutine is one of
 * asyncio's waiting methods: fills t->wait.  cf: its n decoded frames,
 * innermost first. */
void asyncio_reader_wait(struct asyncio_reader *r, struct py_task *t, const struct coro_frame *cf,
			 int n);
/* The same for the 3.11-3.13 reader.  frames: the addresses of t's two
 * innermost frames (the second read only when t has two). */
void asyncio_task_wait(struct mem *m, const struct pyinterp *pi, struct py_task *t,
		       const uint64_t *frames);

#endif
