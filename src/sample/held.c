/* Stacks read from running threads (without --blocking; with it, the late
 * threads', read once the pause is over), held until the recheck proves
 * they did not change while they were read: a round holds each stack it
 * reads, with the words that prove it (the walk adds them,
 * sample_stack.c), and counts, for each thread, the first of its stacks
 * that holds.  Separate from the round because it is a store of its own,
 * kept across the re-reads of torn stacks (reread.c); it knows nothing of
 * the sampler. */
#include "sample/sampler_int.h"
#include "python/recheck.h"
#include "process/mem.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* Where a thread stands in a round's proving: h->proof, one a thread. */
enum proof {
	OPEN,		/* none of its stacks proved yet */
	DONE,		/* one counted, or given up */
	LISTED,		/* OPEN, and in h->redo (while it is made) */
};

void held_add(struct held *h, uint32_t pthread, struct redo who, const uint32_t *stack,
	      uint32_t depth, struct recheck_ref *ref)
{
	struct pending *pd;

	ALLOC_GROW(h->pend_frames, h->npend_frames + depth, h->pend_frames_cap);
	if (depth)
		memcpy(h->pend_frames + h->npend_frames, stack, depth * sizeof(*stack));
	ALLOC_GROW(h->pend, h->npend + 1, h->pend_cap);
	pd = &h->pend[h->npend++];
	pd->pthread = pthread;
	pd->off = h->npend_frames;
	pd->depth = depth;
	pd->failed = !stack;
	pd->who = who;
	pd->ref = ref;
	h->npend_frames += depth;
}

void held_begin(struct held *h, int nthreads)
{
	ALLOC_GROW(h->proof, (size_t)nthreads + 1, h->proof_cap);
	memset(h->proof, OPEN, (size_t)nthreads + 1);
}

/* Proofs in a row, none torn, before a thread's stacks may be proved by
 * its last proved words (recheck.h) rather than read again.  Only the
 * first read of a round is so proved: a stack torn sends its thread back
 * to reading everything twice, its re-reads included, until it has held
 * this long again.  Were a thread that tears proved so, whatever it had
 * last proved would be taken at once while any other stack of it had to
 * hold still through a second read: its re-reads would lean towards the
 * stack it had last.  A thread whose stacks hold still, a loop deep in a
 * call chain, or one spinning in a few frames, keeps it. */
#define CALM_PROOFS 64

/* refs[i]: the words that may prove held stack i (its thread's, once
 * calm: CALM_PROOFS), or with all, those it is to become once proved. */
static void point_refs(struct held *h, bool all)
{
	for (size_t i = 0; i < h->npend; i++) {
		const struct pending *pd = &h->pend[i];

		h->refs[i] = pd->ref && !pd->failed &&
			     (all || pd->ref->calm >= CALM_PROOFS) ? pd->ref : NULL;
	}
}

uint64_t held_count_proved(struct held *h, struct mem *direct, struct profile *p,
			   uint64_t t_ns, uint64_t *matched)
{
	uint32_t npend = (uint32_t)h->npend;
	uint64_t n = 0;

	ALLOC_GROW(h->torn, h->npend + 1, h->torn_cap);
	ALLOC_GROW(h->known, h->npend + 1, h->known_cap);
	ALLOC_GROW(h->keep, h->npend + 1, h->keep_cap);
	ALLOC_GROW(h->refs, h->npend + 1, h->refs_cap);
	memset(h->torn, 0, (h->npend + 1) * sizeof(*h->torn));
	memset(h->keep, 0, (h->npend + 1) * sizeof(*h->keep));
	point_refs(h, false);
	recheck_match(&h->rc, h->refs, h->known, npend);	/* sets known[] whole */
	recheck_run(&h->rc, direct, h->torn, h->known, npend);
	for (size_t i = 0; i < h->npend; i++) {
		const struct pending *pd = &h->pend[i];
		struct recheck_ref *ref = pd->ref;

		if (ref && (h->torn[i] || pd->failed))
			ref->calm = 0;
		if (h->torn[i] || pd->failed || h->proof[pd->who.thread] != OPEN)
			continue;
		h->proof[pd->who.thread] = DONE;
		n++;
		profile_add(p, pd->pthread, h->pend_frames + pd->off, pd->depth, t_ns, 1);
		*matched += h->known[i];
		if (ref) {
			h->keep[i] = !h->known[i];
			ref->calm += ref->calm < UINT32_MAX;
		}
	}
	point_refs(h, true);
	recheck_keep(&h->rc, h->refs, h->keep, npend);
	return n;
}

/* The open threads' held stacks are kept (and the words that prove them)
 * for the next recheck, as any of them may hold then (the thread is back
 * where it was); the others' are dropped. */
size_t held_keep_open(struct held *h)
{
	size_t kept = 0;

	h->nredo = 0;
	ALLOC_GROW(h->renum, h->npend + 1, h->renum_cap);
	for (size_t i = 0; i < h->npend; i++) {
		const struct pending *pd = &h->pend[i];
		uint8_t *st = &h->proof[pd->who.thread];

		h->renum[i] = UINT32_MAX;
		if (*st == DONE)
			continue;
		if (*st == OPEN) {
			*st = LISTED;
			ALLOC_GROW(h->redo, h->nredo + 1, h->redo_cap);
			h->redo[h->nredo++] = pd->who;
		}
		h->renum[i] = (uint32_t)kept;
		h->pend[kept++] = *pd;
	}
	recheck_renumber(&h->rc, h->renum, (uint32_t)h->npend);
	h->npend = kept;
	for (size_t i = 0; i < h->nredo; i++)
		h->proof[h->redo[i].thread] = OPEN;
	return h->nredo;
}

void held_done(struct held *h, int thread)
{
	h->proof[thread] = DONE;
}

void held_end(struct held *h)
{
	h->npend = 0;
	h->npend_frames = 0;
	recheck_reset(&h->rc);
}

void held_release(struct held *h)
{
	recheck_release(&h->rc);
	free(h->pend);
	free(h->pend_frames);
	free(h->torn);
	free(h->redo);
	free(h->proof);
	free(h->renum);
	free(h->known);
	free(h->keep);
	free(h->refs);
	mem_close(h->fresh);
}
