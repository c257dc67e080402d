#include "python/recheck.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
/* Blocks looked back at for the page of a new word: frames of one thread
 * sit on one or two pages of its data stack, in order. */
#define LOOKBACK 8

void recheck_reset(struct recheck *rc)
{
	rc->n = 0;
	rc->nblocks = 0;
	rc->overflow = UINT32_MAX;
	rc->of = NULL;	/* a layout is one round's (its address may be reused) */
}

void recheck_release(struct recheck *rc)
{
	free(rc->w);
	free(rc->blocks);
	free(rc->buf);
	memset(rc, 0, sizeof(*rc));
}

/* Room for k more words, or NULL (and the owner unproved) past the most
 * a round keeps. */
static inline struct recheck_word *room(struct recheck *rc, uint32_t owner, size_t k)
{
	if (rc->n + k > RECHECK_MAX_WORDS) {
		if (owner < rc->overflow)
			rc->overflow = owner;
		return NULL;
	}
	ALLOC_GROW(rc->w, rc->n + k, rc->cap);
	return rc->w + rc->n;
}

void recheck_add(struct recheck *rc, uint32_t owner, uint64_t addr, uint64_t value,
		 uint16_t size)
{
	struct recheck_word *w = room(rc, owner, 1);

	if (!w)
		return;
	*w = (struct recheck_word){ addr, value, owner, size, 0 };
	rc->n++;
}

/* The field at off of a frame, as the walk's reader holds it: in place
 * when it can (the page cache), else read. */
static bool field_at(struct mem *m, uint64_t frame, uint32_t off, uint16_t size, uint64_t *v)
{
	const void *p = mem_peek(m, frame + off, size);

	*v = 0;
	if (p) {
		memcpy(v, p, size);
		return true;
	}
	return mem_read(m, frame + off, v, size) == 0;
}

/* The bytes of a frame that hold its fields, once per layout: a round
 * rechecks hundreds of frames. */
static void frame_span(struct recheck *rc, const struct py_layout *L)
{
	/* The owner byte decides whether the walk showed the frame or stepped
	 * over it as a shim: a C stack slot being made an entry frame holds
	 * the trampoline's code before it holds its owner. */
	uint32_t offs[] = { L->frame.back, L->frame.code, L->frame.lasti, L->frame.owner };
	int nf = L->frame.owner != NONE ? 4 : 3;

	rc->lo = offs[0];
	for (int i = 1; i < nf; i++)
		if (offs[i] < rc->lo)
			rc->lo = offs[i];
	rc->hi = layout_span(offs, nf);
	rc->nf = nf;
	rc->of = L;
}

void recheck_frame(struct recheck *rc, uint32_t owner, struct mem *m, const struct py_layout *L,
		   uint64_t frame, bool innermost)
{
	uint16_t lsize = L->lasti == LASTI_PTR ? 8 : 4;
	uint32_t lo, span;
	const uint8_t *p;
	uint64_t v;
	int nf;

	if (rc->of != L)
		frame_span(rc, L);
	lo = rc->lo, span = rc->hi, nf = rc->nf;
	/* The fields at once, where the walk's reader holds them: a frame's
	 * three or four words stored at one go (a round adds hundreds). */
	p = mem_peek(m, frame + lo, span - lo);
	if (p) {
		struct recheck_word *w = room(rc, owner, 2u + !innermost + (nf == 4));
		uint64_t back = 0, code = 0, lasti = 0;

		if (!w)
			return;
		memcpy(&back, p + L->frame.back - lo, 8);
		memcpy(&code, p + L->frame.code - lo, 8);
		*w++ = (struct recheck_word){ frame + L->frame.back, back, owner, 8, 0 };
		*w++ = (struct recheck_word){ frame + L->frame.code, code, owner, 8, 0 };
		if (!innermost) {
			if (lsize == 8)
				memcpy(&lasti, p + L->frame.lasti - lo, 8);
			else
				memcpy(&lasti, p + L->frame.lasti - lo, 4);
			*w++ = (struct recheck_word){ frame + L->frame.lasti, lasti, owner, lsize, 0 };
		}
		if (nf == 4)
			*w++ = (struct recheck_word){ frame + L->frame.owner,
						      p[L->frame.owner - lo], owner, 1, 0 };
		rc->n = (size_t)(w - rc->w);
		return;
	}
	if (field_at(m, frame, L->frame.back, 8, &v))
		recheck_add(rc, owner, frame + L->frame.back, v, 8);
	if (field_at(m, frame, L->frame.code, 8, &v))
		recheck_add(rc, owner, frame + L->frame.code, v, 8);
	if (!innermost && field_at(m, frame, L->frame.lasti, lsize, &v))
		recheck_add(rc, owner, frame + L->frame.lasti, v, lsize);
	if (nf == 4 && field_at(m, frame, L->frame.owner, 1, &v))
		recheck_add(rc, owner, frame + L->frame.owner, v, 1);
}

void recheck_frame_read(struct recheck *rc, uint32_t owner, const struct py_layout *L,
			uint64_t frame, const struct raw_frame *rf, bool innermost)
{
	bool has_owner = L->frame.owner != NONE;
	struct recheck_word *w = room(rc, owner, 2u + !innermost + has_owner);

	if (!w)
		return;
	*w++ = (struct recheck_word){ frame + L->frame.back, rf->back, owner, 8, 0 };
	*w++ = (struct recheck_word){ frame + L->frame.code, rf->code_word, owner, 8, 0 };
	if (!innermost)
		*w++ = (struct recheck_word){ frame + L->frame.lasti, rf->lasti, owner,
					      L->lasti == LASTI_PTR ? 8 : 4, 0 };
	if (has_owner)
		*w++ = (struct recheck_word){ frame + L->frame.owner, (uint64_t)(uint8_t)rf->owner,
					      owner, 1, 0 };
	rc->n = (size_t)(w - rc->w);
}

/* Which block (one per page, grown to the words on it) holds w: one of the
 * last few, or a new one. */
static void place(struct recheck *rc, struct recheck_word *w)
{
	uint64_t page = w->addr & ~(uint64_t)(PAGE - 1), end = w->addr + w->size;
	size_t first = rc->nblocks > LOOKBACK ? rc->nblocks - LOOKBACK : 0;
	struct mem_block *b;

	for (size_t i = rc->nblocks; i-- > first;) {
		b = &rc->blocks[i];
		if ((b->addr & ~(uint64_t)(PAGE - 1)) != page || end > page + PAGE)
			continue;
		if (w->addr < b->addr) {
			b->len += b->addr - w->addr;
			b->addr = w->addr;
		}
		if (end > b->addr + b->len)
			b->len = end - b->addr;
		w->block = (uint16_t)i;
		return;
	}
	ALLOC_GROW(rc->blocks, rc->nblocks + 1, rc->blocks_cap);
	rc->blocks[rc->nblocks] = (struct mem_block){ w->addr, NULL, w->size };
	w->block = (uint16_t)rc->nblocks++;
}

/* Most bytes read in vain to join two blocks into one run (see below). */
#define JOIN_GAP 256

/* A block and where it was before the sort. */
struct placed {
	struct mem_block b;
	uint16_t from;
};

static int cmp_placed(const void *a, const void *b)
{
	const struct placed *x = a, *y = b;

	return x->b.addr < y->b.addr ? -1 : x->b.addr > y->b.addr;
}

/* Blocks up to this many are placed on the stack: a round's dozen
 * blocks, without allocations (sorted by sort_small()). */
#define SMALL_BLOCKS SORT_SMALL_MAX

/* Put the blocks in address order, each stretched to the next when the gap
 * is small: the reader sends a run of touching blocks (a data stack's
 * pages) as one remote iovec, and the kernel's cost is mostly per iovec.
 * The gap lies between two readable blocks less than a page apart, so it
 * is mapped too. */
static void order_blocks(struct recheck *rc)
{
	struct placed small[SMALL_BLOCKS], *p = small;
	uint16_t small_to[SMALL_BLOCKS], *to = small_to;
	size_t n = rc->nblocks;
	bool moved = false;

	if (n > SMALL_BLOCKS) {
		p = xcalloc(n, sizeof(*p));
		to = xcalloc(n, sizeof(*to));
	}
	for (size_t k = 0; k < n; k++)
		p[k] = (struct placed){ rc->blocks[k], (uint16_t)k };
	sort_small(p, n, sizeof(*p), cmp_placed);
	for (size_t k = 0; k < n; k++) {
		rc->blocks[k] = p[k].b;
		to[p[k].from] = (uint16_t)k;
		moved |= p[k].from != k;
	}
	for (size_t k = 0; k + 1 < n; k++) {
		uint64_t end = rc->blocks[k].addr + rc->blocks[k].len;

		if (end <= rc->blocks[k + 1].addr && rc->blocks[k + 1].addr - end <= JOIN_GAP)
			rc->blocks[k].len = rc->blocks[k + 1].addr - rc->blocks[k].addr;
	}
	for (size_t k = 0; moved && k < rc->n; k++)
		rc->w[k].block = to[rc->w[k].block];
	if (p != small) {
		free(to);
		free(p);
	}
}

/* Read the blocks into rc->buf; a block that cannot be read gets len 0. */
static void read_blocks(struct recheck *rc, struct mem *direct)
{
	size_t total = 0, i = 0;

	for (size_t k = 0; k < rc->nblocks; k++)
		total += rc->blocks[k].len;
	if (total > rc->buf_cap) {
		free(rc->buf);
		rc->buf = xmalloc(total);
		rc->buf_cap = total;
	}
	total = 0;
	for (size_t k = 0; k < rc->nblocks; k++) {
		rc->blocks[k].buf = rc->buf + total;
		total += rc->blocks[k].len;
	}
	while (i < rc->nblocks) {
		int got = mem_read_batch(direct, rc->blocks + i, (int)(rc->nblocks - i));

		if (got < 0)
			got = 0;
		i += (size_t)got;
		if (i < rc->nblocks)
			rc->blocks[i++].len = 0;	/* unreadable: all its words fail */
	}
}

/* A word of 4 or 8 bytes (else its low `size` bytes): loads of a fixed
 * size, not a call to memcpy for each of a round's hundreds of words. */
static inline uint64_t load_word(const uint8_t *p, uint16_t size)
{
	uint64_t v = 0;

	/* The same bytes in the same place as recheck_add()'s callers put
	 * them, so that the comparison holds on any byte order. */
	if (size == 8)
		memcpy(&v, p, 8);
	else if (size == 4)
		memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	else if (size == 1)
		v = p[0];	/* a frame's owner: a byte stored into v and v
				 * loaded whole stalled the loop (no forwarding) */
#endif
	else
		memcpy(&v, p, size < 8 ? size : 8);
	return v;
}

/* Is every owner that has words among the known?  Owners come in order
 * (see owners_in_order()), so the first and last words bound them; out
 * of order, none was marked known. */
static bool all_known(const struct recheck *rc, const bool *known, uint32_t nowners)
{
	uint32_t first = rc->w[0].owner, last = rc->w[rc->n - 1].owner;

	if (!known || last >= nowners || first > last)
		return false;
	for (uint32_t o = first; o <= last; o++)
		if (!known[o])
			return false;
	return true;
}

void recheck_run(struct recheck *rc, struct mem *direct, bool *bad, const bool *known,
		 uint32_t nowners)
{
	/* Owners are numbered in order: from the first that lost a word on. */
	for (uint32_t k = rc->overflow; k < nowners; k++)
		bad[k] = true;
	if (!rc->n || all_known(rc, known, nowners))
		return;
	for (size_t k = 0; k < rc->n; k++)
		if (!known || rc->w[k].owner >= nowners || !known[rc->w[k].owner])
			place(rc, &rc->w[k]);
	order_blocks(rc);
	read_blocks(rc, direct);
	for (size_t k = 0; k < rc->n; k++) {
		const struct recheck_word *w = &rc->w[k];
		const struct mem_block *b = &rc->blocks[w->block];

		if (known && w->owner < nowners && known[w->owner])
			continue;
		if (w->addr < b->addr || w->addr + w->size > b->addr + b->len ||
		    load_word((const uint8_t *)b->buf + (w->addr - b->addr), w->size) != w->value)
			bad[w->owner] = true;
	}
}

void recheck_renumber(struct recheck *rc, const uint32_t *to, uint32_t nowners)
{
	uint32_t first = UINT32_MAX;
	size_t j = 0;

	/* Owners from the first that lost a word on stay unproved. */
	for (uint32_t k = rc->overflow; k < nowners && first == UINT32_MAX; k++)
		first = to[k];
	rc->overflow = first;
	rc->nblocks = 0;
	/* Most rounds keep no stack: every thread proved at once. */
	for (j = 0; j < nowners && to[j] == UINT32_MAX; j++)
		;
	if (j == nowners) {
		rc->n = 0;
		return;
	}
	j = 0;
	for (size_t k = 0; k < rc->n; k++) {
		uint32_t owner = rc->w[k].owner;

		if (owner >= nowners || to[owner] == UINT32_MAX)
			continue;
		rc->w[j] = rc->w[k];
		rc->w[j++].owner = to[owner];
	}
	rc->n = j;
}

/* The walks add an owner's words after the last owner's; renumbering
 * keeps that order.  Should it not hold, an owner's words could be split,
 * and a run of them would be taken for all of them. */
static bool owners_in_order(const struct recheck *rc)
{
	for (size_t k = 1; k < rc->n; k++)
		if (rc->w[k].owner < rc->w[k - 1].owner)
			return false;
	return true;
}

/* The end of the run of w[from]'s owner's words. */
static size_t run_end(const struct recheck *rc, size_t from)
{
	size_t to = from + 1;

	while (to < rc->n && rc->w[to].owner == rc->w[from].owner)
		to++;
	return to;
}

void recheck_match(const struct recheck *rc, struct recheck_ref *const *refs, bool *known,
		   uint32_t nowners)
{
	uint32_t upto = rc->overflow < nowners ? rc->overflow : nowners;
	size_t from = 0;

	memset(known, 0, nowners * sizeof(*known));
	/* One pass: each owner's run of words against its ref as it goes.  An
	 * owner at or past the overflow lost words: never matched. */
	while (from < rc->n) {
		uint32_t owner = rc->w[from].owner;
		const struct recheck_ref *ref = owner < upto ? refs[owner] : NULL;
		bool same = ref != NULL;
		size_t to = from;

		if (from && owner <= rc->w[from - 1].owner)
			goto out_of_order;
		for (; to < rc->n && rc->w[to].owner == owner; to++) {
			const struct recheck_word *w = &rc->w[to];
			size_t k = to - from;

			if (same && (k >= ref->n || w->addr != ref->w[k].addr ||
				     w->value != ref->w[k].value || w->size != ref->w[k].size))
				same = false;
		}
		if (same && to - from == ref->n)
			known[owner] = true;
		from = to;
	}
	return;
out_of_order:
	memset(known, 0, nowners * sizeof(*known));
}

void recheck_keep(const struct recheck *rc, struct recheck_ref *const *refs, const bool *keep,
		  uint32_t nowners)
{
	uint32_t upto = rc->overflow < nowners ? rc->overflow : nowners, o = 0;

	while (o < upto && !keep[o])
		o++;
	if (o == upto || !owners_in_order(rc))
		return;
	for (size_t from = 0, to; from < rc->n; from = to) {
		uint32_t owner = rc->w[from].owner;
		struct recheck_ref *ref;

		to = run_end(rc, from);
		if (owner >= upto || !keep[owner] || !(ref = refs[owner]))
			continue;
		ALLOC_GROW(ref->w, to - from, ref->cap);
		memcpy(ref->w, rc->w + from, (to - from) * sizeof(*ref->w));
		ref->n = to - from;
	}
}

void recheck_ref_release(struct recheck_ref *ref)
{
	free(ref->w);
	memset(ref, 0, sizeof(*ref));
}
