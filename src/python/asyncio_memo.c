/* The memo of record --async=all (see asyncio.h): the 3.14+ reader's
 * results for pending tasks, kept between rounds and proved by
 * re-reading what each was computed from (process/readset.h).
 */
#include "python/asyncio_int.h"
#include "python/codecache.h"
#include "python/pyobj.h"
#include "process/mem.h"
#include "process/readset.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* A pending task's result (name, coroutine frames, the type of the future
 * it waits on) as last computed, and what it was computed from: the task's
 * own fields (key) and every other range read meanwhile (ids in the
 * readset, code objects' identities included).  Each round re-reads them
 * all in a few batches; a task whose bytes all hold gets the same result
 * without a read or a decode of its own.  A task address alone proves
 * nothing: a new task can be born where an old one died. */
struct memo_task {
	uint64_t addr;
	uint8_t key[TASK_READ_MAX];	/* the task as its result was computed */
	uint8_t now[TASK_READ_MAX];	/* as read this round */
	bool fresh;			/* now[] read this round */
	bool seen;			/* listed this round */
	bool have;			/* the result below is provable */
	uint32_t *ids;
	int nids;
	/* The result: name, waiting_on, wait, frames, nframes and
	 * frames_truncated, lent to the task read each round. */
	struct py_task res;
};

struct asyncio_memo {
	struct mem *direct;
	struct readset rs;
	struct memo_task *v;
	int n;
	size_t cap;
	struct hashidx ix;
	int hint;		/* where memo_find looks first */
	struct mem_block *b;	/* memo_prepare's buffers */
	bool *ok;
	size_t b_cap, ok_cap;
	struct merge_buf mb;
};

struct asyncio_memo *asyncio_memo_new(struct mem *direct)
{
	struct asyncio_memo *memo = xcalloc(1, sizeof(*memo));

	memo->direct = direct;
	readset_init(&memo->rs, direct);
	return memo;
}

/* The lists are walked in the order of the last round, which is the
 * memo's order: the entry after the last one found is most often it. */
static struct memo_task *memo_find(struct asyncio_memo *memo, uint64_t addr)
{
	struct hashidx_pos pos;

	for (int k = memo->hint; k < memo->hint + 2 && k < memo->n; k++)
		if (memo->v[k].addr == addr) {
			memo->hint = k;
			return &memo->v[k];
		}
	for (uint32_t id = hashidx_first(&memo->ix, hash_u64(addr), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&memo->ix, &pos))
		if (memo->v[id].addr == addr) {
			memo->hint = (int)id;
			return &memo->v[id];
		}
	return NULL;
}

const uint8_t *asyncio_memo_fresh(const struct asyncio_reader *r, uint64_t task)
{
	const struct memo_task *e = r->memo ? memo_find(r->memo, task) : NULL;

	return e && e->fresh ? e->now : NULL;
}

/* Let go of e's result (the task it was for changed or went). */
static void memo_forget(struct asyncio_memo *memo, struct memo_task *e)
{
	readset_drop(&memo->rs, e->ids, e->nids);
	free(e->ids);
	py_task_result_release(&e->res);
	memset(&e->res, 0, sizeof(e->res));
	e->ids = NULL;
	e->nids = 0;
	e->have = false;
}

void asyncio_memo_free(struct asyncio_memo *memo)
{
	if (!memo)
		return;
	for (int i = 0; i < memo->n; i++)
		memo_forget(memo, &memo->v[i]);
	free(memo->v);
	free(memo->b);
	free(memo->ok);
	merge_buf_release(&memo->mb);
	hashidx_release(&memo->ix);
	readset_release(&memo->rs);
	free(memo);
}

void asyncio_memo_torn(struct asyncio_reader *r, uint64_t addr)
{
	struct memo_task *e = r->memo ? memo_find(r->memo, addr) : NULL;

	if (e)
		memo_forget(r->memo, e);
}

/* Before the lists are walked: every task known from the last round, and
 * every range their results came from, re-read in merged batches. */
void asyncio_memo_prepare(struct asyncio_reader *r)
{
	struct asyncio_memo *memo = r->memo;
	struct mem_block *b;
	uint32_t *remap;
	bool *ok;

	if ((remap = readset_compact(&memo->rs))) {
		for (int i = 0; i < memo->n; i++)
			for (int k = 0; k < memo->v[i].nids; k++)
				memo->v[i].ids[k] = remap[memo->v[i].ids[k]];
		free(remap);
	}
	memo->rs.under = r->m;
	ALLOC_GROW(memo->b, (size_t)memo->n + 1, memo->b_cap);
	ALLOC_GROW(memo->ok, (size_t)memo->n + 1, memo->ok_cap);
	b = memo->b;
	ok = memo->ok;
	for (int i = 0; i < memo->n; i++)
		b[i] = (struct mem_block){ memo->v[i].addr, memo->v[i].now, r->A->task.size };
	mem_read_merged(memo->direct, b, memo->n, ok, &memo->mb);
	for (int i = 0; i < memo->n; i++) {
		memo->v[i].fresh = ok[i];
		memo->v[i].seen = false;
	}
	readset_check(&memo->rs, memo->direct);
}

/* After: the tasks not listed this round are gone. */
void asyncio_memo_sweep(struct asyncio_memo *memo)
{
	int kept = 0;

	for (int i = 0; i < memo->n; i++) {
		memo->v[i].fresh = false;
		if (!memo->v[i].seen) {
			memo_forget(memo, &memo->v[i]);
			continue;
		}
		memo->v[kept++] = memo->v[i];
	}
	if (kept == memo->n)
		return;	/* the index still holds */
	memo->n = kept;
	hashidx_clear(&memo->ix);
	for (int i = 0; i < kept; i++)
		hashidx_add(&memo->ix, hash_u64(memo->v[i].addr), (uint32_t)i);
}

static struct memo_task *memo_entry(struct asyncio_memo *memo, uint64_t addr)
{
	struct memo_task *e = memo_find(memo, addr);

	if (e)
		return e;
	ALLOC_GROW(memo->v, memo->n + 1, memo->cap);
	e = &memo->v[memo->n];
	memset(e, 0, sizeof(*e));
	e->addr = addr;
	hashidx_add(&memo->ix, hash_u64(addr), (uint32_t)memo->n++);
	return e;
}

/* The fields a pending task's result depends on (beyond the ranges read
 * for it): which object it is, its coroutine, name and future. */
static bool memo_key_same(const struct asyncio_reader *r, const uint8_t *a, const uint8_t *b)
{
	const struct asyncio_layout *A = r->A;
	const uint32_t offs[] = { r->L->obj.ob_type, A->task.coro, A->task.name,
				  A->task.fut_waiter };

	for (size_t k = 0; k < ARRAY_SIZE(offs); k++)
		if (field_u64(a, offs[k]) != field_u64(b, offs[k]))
			return false;
	return field_i32(a, A->task.state) == field_i32(b, A->task.state) &&
	       a[A->task.is_task] == b[A->task.is_task];
}

static void memo_lend(struct py_task *t, const struct memo_task *e)
{
	t->name = e->res.name;
	t->waiting_on = e->res.waiting_on;
	t->wait = e->res.wait;
	t->frames = e->res.frames;
	t->nframes = e->res.nframes;
	t->frames_truncated = e->res.frames_truncated;
	t->borrowed = true;
}

/* A code object's identity (what frame_decode's memo compares), read
 * through the recording reader so that the result depends on it. */
static void record_codes(struct asyncio_reader *r, const struct coro_frame *cf, int n)
{
	struct code_identity id;

	for (int k = 0; k < n; k++)
		code_identity_read(r->m, r->L, cf[k].code, &id);
}

/* Compute task i's result through the recording reader and keep it. */
static bool memo_compute(struct asyncio_reader *r, int i, struct memo_task *e,
			 struct coro_frame *cf)
{
	struct py_task *t = &r->out->v[i];
	const uint8_t *bytes = r->raw[i].bytes;
	struct mem *m = r->m;
	char type[64];

	readset_begin(&r->memo->rs);
	r->m = r->c.m = readset_mem(&r->memo->rs);
	t->name = asyncio_task_name(&r->c, field_u64(bytes, r->A->task.name));
	asyncio314_task_frames(r, i, cf);
	record_codes(r, cf, t->nframes);
	if (r->raw[i].waiter && py_type_name(&r->c, r->raw[i].waiter, type, sizeof(type)) == 0)
		t->waiting_on = xstrdup(type);
	r->m = r->c.m = m;
	e->nids = readset_end(&r->memo->rs, &e->ids);
	e->have = e->nids >= 0 && t->name;
	if (e->nids < 0)
		e->nids = 0;
	e->res = *t;	/* the memo owns the result from here on */
	memcpy(e->key, bytes, r->A->task.size);
	t->borrowed = true;
	return t->name != NULL;
}

/* Task i's name, frames and future: from the memo where all it was
 * computed from holds, else computed (and kept, for a pending task).
 * False: the task has no readable name (it is dropped as torn). */
bool asyncio_memo_result(struct asyncio_reader *r, int i, struct coro_frame *cf)
{
	struct py_task *t = &r->out->v[i];
	struct memo_task *e;

	if (t->state != TASK_PENDING) {
		t->name = asyncio_task_name(&r->c, field_u64(r->raw[i].bytes, r->A->task.name));
		return asyncio314_task_frames(r, i, cf) && t->name != NULL;
	}
	e = memo_entry(r->memo, t->addr);
	e->seen = true;
	if (e->have && e->fresh && memo_key_same(r, e->key, r->raw[i].bytes) &&
	    readset_holds(&r->memo->rs, e->ids, e->nids)) {
		memo_lend(t, e);
		t->same = true;
		return true;
	}
	memo_forget(r->memo, e);
	return memo_compute(r, i, e, cf);
}
