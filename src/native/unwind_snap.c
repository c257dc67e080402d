/* Snapshots of a stopped thread: its registers and the top of its stack,
 * copied so that the unwind may run once the thread is released (see
 * unwind.c), and how much stack the next one takes. */
#include "native/unwind_int.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/ptrace.h>

/* Stack copied for a thread never unwound yet, and at least. */
#define SNAP_FIRST (256u * 1024)
#define SNAP_MIN (8u * 1024)
#define PAGE 4096u

/* How much stack the thread's next snapshot takes: half as much again as
 * this unwind needed, so that a stack that deepens a little still fits;
 * shrinking slowly, so that one shallow sample does not cut the next
 * deep one short. */
void snap_learn(struct memo *m, const struct unwind_ctx *ctx)
{
	const struct native_snap *s = ctx->snap;
	uint64_t need = 0, want;

	if (ctx->miss)
		need = ctx->miss - s->lo;
	else if (ctx->hi > ctx->lo)
		need = ctx->hi - s->lo;
	want = (need + need / 2 + PAGE + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	if (want < SNAP_MIN)
		want = SNAP_MIN;
	if (want > NATIVE_SNAP_MAX)
		want = NATIVE_SNAP_MAX;
	if (!m->want || want >= m->want)
		m->want = want;
	else
		m->want -= (m->want - want) / 16;
}

/* Copy want bytes of stack from s->regs.rsp up, page by page so that
 * the copy stops where the mapping does. */
void snap_fill(struct native_unwinder *u, struct native_snap *s, size_t want)
{
	struct mem_block b[NATIVE_SNAP_MAX / PAGE + 1];
	uint64_t at = s->regs.rsp, end;
	int n = 0, got;

	if (want > NATIVE_SNAP_MAX)
		want = NATIVE_SNAP_MAX;
	if (at > UINT64_MAX - want)
		want = UINT64_MAX - at;		/* hostile registers (fuzz) */
	if (s->cap < want) {
		free(s->bytes);
		s->bytes = xmalloc(want);
		s->cap = want;
	}
	s->lo = at;
	end = at + want;
	while (at < end) {
		uint64_t next = (at | (PAGE - 1)) + 1;

		if (next > end || next == 0)
			next = end;
		b[n++] = (struct mem_block){ at, s->bytes + (at - s->lo), next - at };
		at = next;
	}
	got = n ? mem_read_batch(u->proc, b, n) : 0;
	if (got < 0)
		got = 0;
	s->len = got == n ? want : b[got].addr - s->lo;
	s->at_end = got < n;
	u->st.snap_bytes += s->len;
}

/* How much of the stack at sp to copy: up to the end of its mapping,
 * which is where the thread's stack starts (glibc puts the thread's
 * descriptor and TLS there, a few KiB), so an unwind never needs more.
 * For a stack in a mapping we have not seen yet (a new thread), what
 * the thread's earlier unwinds needed, and s->stack_end stays 0. */
size_t snap_want(const struct native_unwinder *u, const struct memo *m,
			struct native_snap *s)
{
	uint64_t sp = s->regs.rsp;
	size_t lo = 0, hi = u->nstacks;

	s->stack_end = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp < u->stacks[mid].start) {
			hi = mid;
		} else if (sp >= u->stacks[mid].end) {
			lo = mid + 1;
		} else {
			s->stack_end = u->stacks[mid].end;
			return s->stack_end - sp;
		}
	}
	return m->want ? m->want : SNAP_FIRST;
}

int native_snap_take(struct native_unwinder *u, pid_t tid, struct native_snap *s)
{
	struct memo *m = get_memo(u, tid);

	s->tid = tid;
	s->len = 0;
	m->used = u->sample;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs) != 0)
		return -ESRCH;	/* gone, or not in a stop of ours */
	snap_fill(u, s, snap_want(u, m, s));
	return 0;
}

void native_snap_free(struct native_snap *s)
{
	free(s->bytes);
	s->bytes = NULL;
	s->cap = s->len = 0;
}

