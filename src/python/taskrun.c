/* Proof that a task read as running is (see taskrun.h). */
#include "python/taskrun.h"
#include "python/asyncio_int.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void add_word(struct task_run *tr, uint64_t addr, uint64_t value)
{
	if (tr->nwords < TASK_RUN_WORDS) {
		tr->words[tr->nwords].addr = addr;
		tr->words[tr->nwords++].value = value;
	}
}

void task_run_words(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		    uint64_t tstate, uint64_t task, uint64_t coro_frame, struct task_run *tr)
{
	uint64_t coro = coro_frame - (A->legacy.on ? A->legacy.gen_iframe : pi->layout.gen.iframe);
	uint64_t v;

	memset(tr, 0, sizeof(*tr));
	tr->task = task;
	tr->coro_frame = coro_frame;
	if (!A->legacy.on && tstate && A->tstate.running_task != NONE)
		add_word(tr, tstate + A->tstate.running_task, task);
	/* 3.11-3.13: no word names the running task (_current_tasks is a
	 * dict); its coroutine's frame on the stack does, as only the task
	 * steps its coroutine. */
	if (A->task.coro != NONE && mem_read_u64(m, task + A->task.coro, &v) == 0 && v == coro)
		add_word(tr, task + A->task.coro, coro);
}

void task_run_recheck(struct recheck *rc, uint32_t owner, const struct task_run *tr)
{
	for (int i = 0; i < tr->nwords; i++)
		recheck_add(rc, owner, tr->words[i].addr, tr->words[i].value, 8);
}

/* One walk of a thread's stack towards a task's coroutine frame. */
struct join {
	struct mem *m;
	const struct py_layout *L;
	struct recheck *rc;	/* NULL: nothing to prove (paused) */
	uint32_t owner;
	uint64_t stop;		/* the coroutine's frame */
	uint64_t link;		/* where the walk came from (the frames it skipped) */
	struct coro_frame *cf;
	int n, seen;
	bool found, cut;
};

/* The frames the walk stepped over between from and to (shims, frames not
 * started yet) are proved too, as the sampler's are (recheck_skipped()). */
static void join_skipped(struct join *j, uint64_t from, uint64_t to)
{
	for (int steps = 0; from && from != to && steps < 4 * PYSTACK_MAX_DEPTH; steps++) {
		recheck_frame(j->rc, j->owner, j->m, j->L, from, true);
		if (mem_read_u64(j->m, from + j->L->frame.back, &from) < 0)
			return;
	}
}

static int join_visit(void *arg, uint64_t frame, const struct raw_frame *rf)
{
	struct join *j = arg;

	if (j->rc) {
		join_skipped(j, j->link, frame);
		recheck_frame_read(j->rc, j->owner, j->L, frame, rf, j->seen == 0);
		j->link = rf->back;
	}
	j->seen++;
	if (j->n < ASYNCIO_MAX_CORO_DEPTH)
		j->cf[j->n++] = (struct coro_frame){ frame, rf->code, rf->lasti };
	else
		j->cut = true;
	if (frame == j->stop) {
		j->found = true;
		return -ECANCELED;	/* the join ends here */
	}
	return 0;
}

/* The pointers that lead to a thread's innermost frame. */
static void tstate_words(struct recheck *rc, uint32_t owner, const struct py_layout *L,
			 const struct py_tstate *ts)
{
	if (ts->cframe) {
		recheck_add(rc, owner, ts->addr + L->tstate.frame, ts->cframe, 8);
		recheck_add(rc, owner, ts->cframe + L->tstate.cframe_frame, ts->frame, 8);
	} else {
		recheck_add(rc, owner, ts->addr + L->tstate.frame, ts->frame, 8);
	}
}

/* The thread states a task read as running may run on: its own, or where
 * that is not known (a loop whose thread was not found), every one. */
static int candidates(const struct py_tstate *ts, int nts, uint64_t tstate, int *cand)
{
	int n = 0;

	for (int k = 0; k < nts; k++)
		if (ts[k].addr == tstate)
			cand[n++] = k;
	if (n || tstate)
		return n;
	for (int k = 0; k < nts; k++)
		cand[n++] = k;
	return n;
}

enum { JOINED = 1, OFF_STACK = 0, UNPROVED = -1 };

/* One read: the candidates' stacks walked from what they run now (read
 * through rm), each until the coroutine's frame; then proved.  JOINED
 * (frames in cf, *which the candidate), OFF_STACK or UNPROVED. */
static int try_join(struct mem *rm, struct mem *direct, struct recheck *rc,
		    const struct py_layout *L, const struct py_tstate *ts, const int *cand,
		    int ncand, const struct task_run *tr, struct coro_frame *cf, int *n,
		    bool *cut, int *which, bool *bad)
{
	bool whole = true;
	int found = -1;

	recheck_reset(rc);
	for (int k = 0; k < ncand && found < 0; k++) {
		struct py_tstate cur = ts[cand[k]];
		struct join j = { rm, L, direct ? rc : NULL, (uint32_t)k, tr->coro_frame, 0, cf,
				  0, 0, false, false };
		enum walk_end end;
		int nf, wrc;

		if (pystack_reread_frame(rm, L, &cur) < 0) {
			whole = false;
			continue;
		}
		if (direct)
			tstate_words(rc, (uint32_t)k, L, &cur);
		j.link = cur.frame;
		end = pystack_walk(rm, L, cur.frame, PYSTACK_MAX_DEPTH, join_visit, &j, &nf, &wrc);
		if (j.found) {
			found = k;
			*n = j.n;
			*cut = j.cut;
		} else if (end != WALK_DONE) {
			whole = false;	/* cut short: its coroutine may be further out */
		} else if (direct) {
			join_skipped(&j, j.link, 0);
		}
	}
	if (found < 0 && !whole)
		return UNPROVED;
	if (direct && found >= 0)
		task_run_recheck(rc, (uint32_t)found, tr);
	memset(bad, 0, (size_t)ncand * sizeof(*bad));
	if (direct)
		recheck_run(rc, direct, bad, NULL, (uint32_t)ncand);
	if (found >= 0) {
		*which = cand[found];
		return bad[found] ? UNPROVED : JOINED;
	}
	for (int k = 0; k < ncand; k++)
		if (bad[k])
			return UNPROVED;
	return OFF_STACK;
}

int task_run_frames(struct mem *m, struct mem *direct, const struct py_layout *L,
		    const struct py_tstate *ts, int nts, const struct task_run *tr,
		    struct py_task *t, struct py_tasks *out, struct coro_frame *cf, int *n,
		    bool *cut)
{
	int *cand = xcalloc(nts > 0 ? nts : 1, sizeof(*cand));
	bool *bad = xcalloc(nts > 0 ? nts : 1, sizeof(*bad));
	int ncand = candidates(ts, nts, t->tstate, cand), which = -1, rc = UNPROVED;
	struct recheck words = { 0 };
	struct mem *fresh = NULL;

	*n = 0;
	*cut = false;
	recheck_reset(&words);
	/* A paused process holds still: one read is proof.  Else each try
	 * after the first reads afresh, not from the pages the first read
	 * cached (what the task was torn from). */
	for (int tries = 0; ncand && rc == UNPROVED && tries < (direct ? TASK_RUN_TRIES : 1);
	     tries++) {
		struct mem *rm = m;

		if (tries) {
			if (!fresh)
				fresh = mem_cache_new(direct);
			mem_cache_reset(fresh);
			rm = fresh;
		}
		rc = try_join(rm, direct, &words, L, ts, cand, ncand, tr, cf, n, cut, &which,
			      bad);
	}
	if (rc == JOINED) {
		t->joined = true;
		t->tstate = ts[which].addr;
	} else if (rc == OFF_STACK) {
		t->state = TASK_PENDING;
		out->not_running++;
		*n = 0;
	} else {
		*n = 0;
	}
	mem_close(fresh);
	recheck_release(&words);
	free(bad);
	free(cand);
	return rc;
}
