/* One OS thread in several interpreters: its thread states found and put
 * in call order, so that its stack reads as one. */
#include "python/pystack_int.h"
#include "process/mem.h"
#include "util/util.h"

#include <stdlib.h>

/* Thread states of one OS thread: the same pthread_t, and the same kernel
 * thread id where both know it. */
static bool same_os_thread(const struct py_tstate *a, const struct py_tstate *b)
{
	if (!a->ident || a->ident != b->ident)
		return false;
	return !a->tid || !b->tid || a->tid == b->tid;
}

/* An address on the OS thread's C stack inside the innermost eval call of
 * this thread state, or 0 when there is none.  A subinterpreter's eval
 * loop runs inside the C call (exec) made by the outer interpreter's, and
 * the C stack grows down: of two parts, the one with the lower anchor is
 * the inner.  3.11 and 3.12 link a _PyCFrame that is a local of the eval
 * call; 3.13+ begin each eval call with an entry shim frame that lives on
 * the C stack.  Before 3.11 frames are heap objects: no anchor. */
static uint64_t stack_anchor(struct mem *m, const struct py_layout *L, const struct py_tstate *ts)
{
	uint64_t f = ts->frame, cf;
	bool real = false;

	if (!ts->frame || ts->frame_err < 0)
		return 0;
	if (L->tstate.cframe_frame != NONE)
		return mem_read_u64(m, ts->addr + L->tstate.frame, &cf) < 0 ? 0 : cf;
	if (L->frame.owner == NONE)
		return 0;
	for (int steps = 0; f && steps < 4 * PYSTACK_MAX_DEPTH; steps++) {
		struct raw_frame rf;

		if (read_raw_frame(m, L, f, &rf) < 0)
			return 0;
		/* The first shim after a real frame; a shim alone (3.14's
		 * base frame, inside the thread state) is no anchor. */
		if (rf.owner >= L->frame.owner_shim)
			return real ? f : 0;
		real = true;
		f = rf.back;
	}
	return 0;
}

struct part_key {
	struct py_tstate ts;
	uint64_t anchor;
	bool framed;
};

/* Does a go inside (before) b?  Parts with frames before parts without
 * (whose place shows nothing).  Then by the C stack when every framed part
 * has an anchor; else the one running (holding its GIL) innermost, then
 * the newer interpreter (higher id) inside the older, the main one
 * outermost: a subinterpreter is usually entered from the one that made
 * it. */
static bool part_before(const struct part_key *a, const struct part_key *b, bool by_stack)
{
	if (a->framed != b->framed)
		return a->framed;
	if (by_stack && a->framed)
		return a->anchor < b->anchor;
	if (a->ts.gil != b->ts.gil)
		return a->ts.gil;
	return a->ts.interp > b->ts.interp;
}

/* Put the k parts of one OS thread in call order, innermost first, and
 * give them all the identity of the OS thread: that of the outermost part
 * with frames, which the thread made for itself.  (3.12 runs a
 * subinterpreter on the thread state its creator made, whatever OS thread
 * calls run_string: that part carries the creator's ident and tid.) */
static void order_parts(struct part_key *pk, int k, struct py_tstate *out)
{
	const struct py_tstate *self = &pk[0].ts;
	bool by_stack = true;

	for (int i = 0; i < k; i++)
		if (pk[i].framed && !pk[i].anchor)
			by_stack = false;
	/* Insertion sort: k is tiny, and it stays in bounds whatever the
	 * keys (qsort need not, with an inconsistent order). */
	for (int i = 1; i < k; i++) {
		struct part_key cur = pk[i];
		int j = i;

		for (; j > 0 && part_before(&cur, &pk[j - 1], by_stack); j--)
			pk[j] = pk[j - 1];
		pk[j] = cur;
	}
	for (int i = 0; i < k; i++)
		if (pk[i].framed)
			self = &pk[i].ts;
	for (int i = 0; i < k; i++) {
		out[i] = pk[i].ts;
		out[i].ident = self->ident;
		out[i].tid = self->tid;
		out[i].nparts = i ? 0 : k;
	}
}

/* Is there, strictly between the anchors of a and b, the anchor of a thread
 * state of another OS thread than b's?  Then a and b are on different C
 * stacks, whatever their idents say. */
static bool stacks_apart(const struct part_key *pk, int n, int a, int b)
{
	uint64_t lo = pk[a].anchor, hi = pk[b].anchor;

	if (lo > hi) {
		lo = hi;
		hi = pk[a].anchor;
	}
	for (int k = 0; k < n; k++)
		if (pk[k].anchor > lo && pk[k].anchor < hi && pk[k].ts.ident != pk[b].ts.ident)
			return true;
	return false;
}

/* The thread state of another interpreter, listed before j, whose anchor
 * is the nearest above j's: the part that called into j's interpreter. */
static int caller_part(const struct part_key *pk, int j)
{
	int best = -1;

	for (int k = 0; k < j; k++) {
		if (!pk[k].anchor || pk[k].anchor <= pk[j].anchor ||
		    pk[k].ts.interp == pk[j].ts.interp)
			continue;
		if (best < 0 || pk[k].anchor < pk[best].anchor)
			best = k;
	}
	return best;
}

/* Which earlier thread state's OS thread does j belong to, or -1.  By
 * ident (and tid); where the C stack says otherwise (see order_parts), by
 * the C stack. */
static int owner_of(const struct part_key *pk, int n, const int *head, int j)
{
	int q = -1, c;

	for (int i = 0; i < j && q < 0; i++)
		if (head[i] == i && same_os_thread(&pk[i].ts, &pk[j].ts))
			q = i;
	if (q < 0 || !pk[j].anchor || !pk[q].anchor || !stacks_apart(pk, n, j, q))
		return q;
	c = caller_part(pk, j);
	return c < 0 ? -1 : head[c];
}

void pystack_stitch(struct mem *m, const struct py_layout *L, struct py_tstate *ts,
		    int n, int nmain)
{
	struct part_key *pk = xcalloc(n ? n : 1, sizeof(*pk));
	struct part_key *group = xcalloc(n ? n : 1, sizeof(*group));
	int *head = xcalloc(n ? n : 1, sizeof(*head));
	int *next = xcalloc(n ? n : 1, sizeof(*next));
	int *tail = xcalloc(n ? n : 1, sizeof(*tail));
	int k = 0;

	for (int j = 0; j < n; j++) {
		pk[j].ts = ts[j];
		pk[j].framed = ts[j].frame && ts[j].frame_err == 0;
		pk[j].anchor = pk[j].framed ? stack_anchor(m, L, &ts[j]) : 0;
		head[j] = tail[j] = j;
		next[j] = -1;
	}
	for (int j = nmain; j < n; j++) {
		int i = owner_of(pk, n, head, j);

		if (i < 0)
			continue;
		head[j] = i;
		next[tail[i]] = j;
		tail[i] = j;
	}
	for (int i = 0; i < n; i++) {
		int g = 0;

		if (head[i] != i)
			continue;
		for (int p = i; p >= 0; p = next[p])
			group[g++] = pk[p];
		order_parts(group, g, ts + k);
		k += g;
	}
	free(tail);
	free(next);
	free(head);
	free(group);
	free(pk);
}
