/* asyncio tasks in a sample (--async): the chain of tasks awaiting the
 * running one, put above its coroutine's frames, and with --async=all
 * every pending task's stack.  Separate from sampler.c because none of it
 * is needed to read a thread's stack: it is asked for the running task's
 * head once a stack is walked, and for the pending tasks once a round's
 * threads are counted. */
#include "sample/sampler_int.h"
#include "python/asyncio.h"
#include "python/taskrun.h"
#include "sample/taskids.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* "task NAME" frames for a chain of names, root first, onto stack. */
static void push_task_frames(struct sampler *s, char **names, int n, uint32_t *stack,
			     uint32_t *depth)
{
	for (int i = n - 1; i >= 0; i--) {
		char *label = xasprintf("task %s", names[i]);

		stack[(*depth)++] = profile_frame(s->p, &(struct pframe){ PF_MARKER, label, NULL,
									  -1, -1 });
		free(label);
		free(names[i]);
	}
}

/* Where the frame at cframe is on the stack just walked (s->walk.raw), or -1. */
static int coro_on_stack(const struct sampler *s, uint64_t cframe)
{
	for (int k = s->walk.nframes - 1; k >= 0; k--)
		if (s->walk.raw[k].frame == cframe)
			return k;
	return -1;
}

/* With --async, a thread running a task: push the chain of tasks awaiting
 * it, root first, and return the index of the task's coroutine frame in
 * s->walk.frames (the event loop's frames outside it are left out); otherwise
 * the outermost frame's index.  Without --blocking the words that name
 * the task running join the stack's own in the recheck (taskrun.h): a
 * stack counted in a task was that task's when it was proved. */
int running_task_head(struct sampler *s, const struct py_tstate *ts, uint32_t *stack,
		      uint32_t *depth)
{
	char *names[ASYNCIO_CHAIN_MAX];
	struct mem *rm = s->walk.m;
	uint64_t task, cframe;
	int n, k;

	if (!s->o.async || !s->async.ready)
		return s->walk.nframes - 1;
	k = asyncio_running_task(s->walk.m, &s->pi, &s->async.A, ts, &task, &cframe) < 0 ? -1 :
	    coro_on_stack(s, cframe);
	/* Running on, the task named may be an earlier one than the stack's
	 * (the name read from a page cached before the walk): named again,
	 * uncached, for a thread that runs Python code (holds the GIL, or
	 * is attached), not one waiting in its loop's select(). */
	if (k < 0 && !s->o.blocking && py_tstate_runs(ts) &&
	    asyncio_running_task(s->direct, &s->pi, &s->async.A, ts, &task, &cframe) == 0) {
		k = coro_on_stack(s, cframe);
		rm = s->direct;
	}
	if (k < 0)
		return s->walk.nframes - 1;	/* not on this stack: not running now */
	if (!s->o.blocking) {
		struct task_run tr;

		task_run_words(rm, &s->pi, &s->async.A, ts->addr, task, cframe, &tr);
		task_run_recheck(&s->held.rc, s->walk.owner, &tr);
	}
	n = asyncio_awaiter_chain(s->walk.m, &s->pi, &s->async.A, task, names, ASYNCIO_CHAIN_MAX);
	push_task_frames(s, names, n, stack, depth);
	return k;
}

/* The chain of tasks awaiting t (t first), from the graph just read. */
static int pending_chain(const struct py_tasks *tasks, const struct py_task *t,
			 const struct py_task **chain)
{
	int n = 0;

	while (t && n < ASYNCIO_CHAIN_MAX) {
		for (int i = 0; i < n; i++)
			if (chain[i] == t)
				return n;	/* round a deadlock ring once */
		chain[n++] = t;
		t = t->nawaited_by ? py_tasks_find(tasks, t->awaited_by[0]) : NULL;
	}
	return n;
}

/* The thread a pending task is counted in: the one whose list holds it,
 * or the first when that one has exited. */
static struct sthread *task_thread(struct sampler *s, const struct py_task *t, int nts)
{
	for (int k = 0; k < nts; k++)
		if (thread_of(s, k) && s->ts[k].addr == t->tstate)
			return thread_of(s, k);
	return find_thread(s, &s->ts[0], nts);
}

static void record_task(struct sampler *s, const struct py_tasks *tasks, const struct py_task *t,
			int nts, uint64_t t_ns)
{
	uint32_t stack[ASYNCIO_MAX_CORO_DEPTH + ASYNCIO_CHAIN_MAX + 4], depth = 0;
	const struct py_task *chain[ASYNCIO_CHAIN_MAX];
	struct sthread *th = task_thread(s, t, nts);
	const uint32_t *ids;
	int n;

	if (s->proc_root != NO_FRAME)
		stack[depth++] = s->proc_root;
	if (s->o.threads)
		stack[depth++] = th->root;
	for (n = pending_chain(tasks, t, chain); n > 0; n--)
		stack[depth++] = task_ids_label(s->async.tids, chain[n - 1]);
	n = task_ids_frames(s->async.tids, t, &ids);
	memcpy(stack + depth, ids, n * sizeof(*ids));
	profile_add(s->p, th->pthread, stack, depth + n, t_ns, 1);
	s->count.stacks++;
}

/* With --async=all: every pending task's stack, counted in the thread
 * whose list holds it.  The tasks are read through a memo, and their
 * frames kept as profile frames, while they are proven unchanged. */
void record_pending(struct sampler *s, int nts, uint64_t t_ns)
{
	struct py_tasks tasks;
	char err[256];

	if (s->o.async != ASYNC_ALL || !s->async.ready || !nts)
		return;
	if (!s->async.memo) {
		s->async.memo = asyncio_memo_new(s->direct);
		s->async.tids = task_ids_new(s->p, s->o.by_function);
	}
	if (asyncio_tasks_memo(s->m, &s->pi, &s->async.A, s->o.blocking ? NULL : s->direct,
			       s->async.memo, &tasks, err, sizeof(err)) < 0)
		return;
	s->count.errors[SERR_TORN] += tasks.torn;
	py_tasks_index(&tasks);
	for (int i = 0; i < tasks.n; i++)
		if (tasks.v[i].state == TASK_PENDING && tasks.v[i].nframes)
			record_task(s, &tasks, &tasks.v[i], nts, t_ns);
	task_ids_sweep(s->async.tids);
	py_tasks_free(&tasks);
}

/* Find _asyncio's offsets: at the start, and (not loaded yet: a program
 * that imports asyncio later) once a second until found. */
void async_locate_retry(struct sampler *s, uint64_t t_ns)
{
	struct locate_src src;
	char err[256];

	if (!s->o.async || s->async.ready ||
	    (s->async.tried_ns && t_ns - s->async.tried_ns < NAME_REFRESH_NS))
		return;
	s->async.tried_ns = t_ns ? t_ns : 1;
	locate_src_live(&src, s->pid);
	s->async.ready = asyncio_locate(&src, s->direct, &s->pi, &s->async.A, err,
					sizeof(err)) == 0;
	locate_src_release(&src);
}

void async_release(struct async_state *as)
{
	asyncio_memo_free(as->memo);
	task_ids_free(as->tids);
}
