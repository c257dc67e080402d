/* The memo of each thread's last unwind, reused while the thread stands
 * still (the same registers and stack bytes: see unwind.c), and the proof,
 * without stopping it, that a thread asleep in the kernel has not moved
 * (unwind.h). */
#include "native/unwind_int.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Largest stack range a memo compares (and keeps a copy of). */
#define MEMO_MAX_BYTES (256u * 1024)

void drop_memos(struct native_unwinder *u)
{
	for (size_t i = 0; i < u->nmemos; i++) {
		free(u->memos[i].bytes);
		u->memos[i].bytes = NULL;
		u->memos[i].n = -1;
	}
}

/* The memo of thread tid, or NULL; *at gets where it is or would go. */
static struct memo *find_memo(struct native_unwinder *u, pid_t tid, size_t *at)
{
	size_t lo = 0, hi = u->nmemos;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->memos[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < u->nmemos && u->memos[lo].tid == tid ? &u->memos[lo] : NULL;
}

/* The memo of thread tid with its stack bytes, or NULL. */
static struct memo *still_memo(struct native_unwinder *u, pid_t tid)
{
	size_t at;
	struct memo *m = find_memo(u, tid, &at);

	return m && m->bytes && !u->no_memo ? m : NULL;
}

bool native_still_ready(struct native_unwinder *u, pid_t tid, uint64_t *sp, uint64_t *pc)
{
	struct memo *m = still_memo(u, tid);

	if (!m)
		return false;
	*sp = m->regs.rsp;
	*pc = m->regs.rip;
	return true;
}

bool native_still_bytes(struct native_unwinder *u, pid_t tid)
{
	struct memo *m = still_memo(u, tid);
	size_t len;
	uint8_t *now;
	bool same;

	if (!m)
		return false;
	len = m->hi - m->lo;
	ALLOC_GROW(u->scratch, len ? len : 1, u->scratch_alloc);
	now = u->scratch;
	same = mem_read(u->proc, m->lo, now, len) == 0 && !memcmp(now, m->bytes, len);
	return same;
}

int native_still_frames(struct native_unwinder *u, pid_t tid, struct native_pc *out, int max,
			bool *truncated)
{
	struct memo *m = still_memo(u, tid);

	if (!m || m->max != max)
		return -ESRCH;
	m->used = u->sample;
	memcpy(out, m->pcs, m->n * sizeof(*out));
	*truncated = m->truncated;
	u->st.reused++;
	u->st.frames += m->n;
	return m->n;
}

/* The memo of thread tid, made on first sight (which moves the memos
 * after it: a pointer to one is good until the next get_memo()). */
struct memo *get_memo(struct native_unwinder *u, pid_t tid)
{
	size_t at;
	struct memo *m = find_memo(u, tid, &at);

	if (m)
		return m;
	ALLOC_GROW(u->memos, u->nmemos + 1, u->memos_alloc);
	memmove(&u->memos[at + 1], &u->memos[at], (u->nmemos - at) * sizeof(*u->memos));
	u->nmemos++;
	m = &u->memos[at];
	memset(m, 0, sizeof(*m));
	m->tid = tid;
	m->n = -1;
	return m;
}

/* Does the thread stand where its memo says, registers and stack alike? */
bool memo_holds(const struct memo *m, const struct native_snap *s, int max)
{
	if (!m->bytes || m->max != max || memcmp(&m->regs, &s->regs, sizeof(s->regs)) != 0)
		return false;
	if (m->lo < s->lo || m->hi > s->lo + s->len)
		return false;
	return memcmp(s->bytes + (m->lo - s->lo), m->bytes, m->hi - m->lo) == 0;
}

/* Remember this unwind.  The stack bytes are kept only when the thread
 * is seen twice in a row at the same registers with the same result, so
 * that threads that run pay nothing for the memo. */
void memo_store(struct memo *m, const struct unwind_ctx *ctx,
		       const struct native_pc *pcs, int n, int max, bool truncated)
{
	const struct native_snap *s = ctx->snap;
	bool still = m->n == n && m->max == max &&
		     !memcmp(&m->regs, &ctx->regs, sizeof(ctx->regs)) &&
		     !memcmp(m->pcs, pcs, n * sizeof(*pcs));

	free(m->bytes);
	m->bytes = NULL;
	if (!still) {
		/* Never NULL, even for no frames: memcmp and memcpy take it. */
		ALLOC_GROW(m->pcs, n ? n : 1, m->pcs_alloc);
		memcpy(m->pcs, pcs, n * sizeof(*pcs));
		m->n = n;
		m->max = max;
		m->truncated = truncated;
		m->regs = ctx->regs;
		return;
	}
	/* Only snapshot reads widen [lo, hi), so it lies inside the copy. */
	if (ctx->hi <= ctx->lo || ctx->hi - ctx->lo > MEMO_MAX_BYTES)
		return;
	m->lo = ctx->lo;
	m->hi = ctx->hi;
	m->bytes = xmalloc(m->hi - m->lo);
	memcpy(m->bytes, s->bytes + (m->lo - s->lo), m->hi - m->lo);
}

void native_set_memo(struct native_unwinder *u, bool on)
{
	u->no_memo = !on;
	if (!on)
		drop_memos(u);
}

