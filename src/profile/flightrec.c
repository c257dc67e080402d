/* The flight recorder's memory: interned tables, the ring of samples, and
 * writing it out; see flightrec.h. */
#include "profile/flightrec.h"
#include "profile/output.h"
#include "util/hashidx.h"
#include "util/status.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* --- interned tables ------------------------------------------------------ */

/* An item's key is whole words in itab.words: a string's bytes padded
 * with NULs, or ids.  From word child_from on, every word is an id in
 * the table child (NONE: none), which the item holds a reference to while
 * it is referenced itself. */
struct item {
	uint32_t off;		/* in words */
	uint32_t len;		/* in bytes */
	uint32_t refs;
};

struct itab {
	uint32_t *words;
	size_t nwords, words_cap;
	struct item *items;
	uint32_t n, cap;
	struct hashidx index;
	size_t dead;		/* bytes of the items no one references */
	struct itab *child;
	uint32_t child_from;
};

/* Key layouts, in words. */
enum { FK_KIND, FK_LINE, FK_FIRSTLINE, FK_NAME, FK_FILE, FK_WORDS };
enum { CK_PID, CK_TID, CK_NAME, CK_COMMAND, CK_WAIT, CK_ROOT,
       CK_WORDS = CK_ROOT + FLIGHTREC_ROOTS };

struct entry {
	uint64_t unix_ns;
	uint32_t stack, ctx;
};

struct flightrec {
	uint64_t keep_ns;
	size_t max_bytes;
	uint64_t interval_ns;
	bool wall;
	uint64_t newest_ns;
	uint64_t compactions;

	struct entry *ring;
	size_t head, count, cap;

	struct itab strings, frames, stacks, ctxs;
	uint32_t *key;		/* a stack's key being built */
	size_t key_cap;
	uint32_t name[FLIGHTREC_NAME_MAX / 4];	/* a string's, padded */
};

static size_t words_of(uint32_t len)
{
	return ((size_t)len + 3) / 4;
}

/* What an item costs: its slot, its key and about two hash slots (the
 * index is kept at most half full). */
static size_t item_bytes(uint32_t len)
{
	return sizeof(struct item) + 4 * words_of(len) + 2 * 2 * sizeof(uint32_t);
}

static size_t itab_bytes(const struct itab *t)
{
	return t->cap * sizeof(*t->items) + t->words_cap * sizeof(*t->words) +
	       (size_t)t->index.size * 2 * sizeof(uint32_t);
}

/* Grown by an eighth, not doubled: a doubling would overshoot the bound
 * by the size of the whole array at once.  Copying costs amortised eight
 * moves an element, which is cheap next to a sample's hashing. */
static size_t grow_to(size_t cap, size_t need)
{
	size_t n = cap + cap / 8 + 64;

	return n < need ? need : n;
}

/* Room for n and an eighth more, for an array rebuilt at its size. */
static size_t roomy(size_t n)
{
	return n + n / 8 + 1;
}

static uint32_t key_hash(const uint32_t *key, uint32_t len)
{
	return hash_u32s(HASH_INIT ^ len, key, words_of(len));
}

static bool key_eq(const struct itab *t, uint32_t id, const uint32_t *key, uint32_t len)
{
	const struct item *it = &t->items[id];

	return it->len == len && !memcmp(t->words + it->off, key, 4 * words_of(len));
}

/* The item with this key (padded to words), added unreferenced if new. */
static uint32_t itab_intern(struct itab *t, const uint32_t *key, uint32_t len)
{
	uint32_t h = key_hash(key, len), id;
	size_t nw = words_of(len);
	struct hashidx_pos pos;

	for (id = hashidx_first(&t->index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&t->index, &pos))
		if (key_eq(t, id, key, len))
			return id;
	if (t->n == t->cap) {
		t->cap = (uint32_t)grow_to(t->cap, t->n + 1);
		t->items = xreallocarray(t->items, t->cap, sizeof(*t->items));
	}
	if (t->nwords + nw > t->words_cap) {
		t->words_cap = grow_to(t->words_cap, t->nwords + nw);
		t->words = xreallocarray(t->words, t->words_cap, sizeof(*t->words));
	}
	memcpy(t->words + t->nwords, key, 4 * nw);
	id = t->n++;
	t->items[id] = (struct item){ (uint32_t)t->nwords, len, 0 };
	t->nwords += nw;
	t->dead += item_bytes(len);
	hashidx_add(&t->index, h, id);
	return id;
}

static void itab_ref(struct itab *t, uint32_t id)
{
	struct item *it = &t->items[id];

	if (it->refs++)
		return;
	t->dead -= item_bytes(it->len);
	for (size_t w = t->child_from; t->child && w < words_of(it->len); w++)
		if (t->words[it->off + w] != NONE)
			itab_ref(t->child, t->words[it->off + w]);
}

static void itab_unref(struct itab *t, uint32_t id)
{
	struct item *it = &t->items[id];

	if (--it->refs)
		return;
	t->dead += item_bytes(it->len);
	for (size_t w = t->child_from; t->child && w < words_of(it->len); w++)
		if (t->words[it->off + w] != NONE)
			itab_unref(t->child, t->words[it->off + w]);
}

static void itab_release(struct itab *t)
{
	free(t->words);
	free(t->items);
	hashidx_release(&t->index);
}

/* Each item's id once the unreferenced ones are gone (NONE for those). */
static uint32_t *itab_live_map(const struct itab *t)
{
	uint32_t *map = xmalloc((t->n ? t->n : 1) * sizeof(*map)), k = 0;

	for (uint32_t i = 0; i < t->n; i++)
		map[i] = t->items[i].refs ? k++ : NONE;
	return map;
}

/* The referenced items' child ids through the child's map. */
static void itab_remap_children(struct itab *t, const uint32_t *child_map)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct item *it = &t->items[i];

		if (!it->refs)
			continue;
		for (size_t w = t->child_from; w < words_of(it->len); w++) {
			uint32_t *c = &t->words[it->off + w];

			if (*c != NONE)
				*c = child_map[*c];
		}
	}
}

/* Keep only the referenced items, in arrays of their size and an eighth. */
static void itab_compact(struct itab *t, const uint32_t *map)
{
	struct itab old = *t;
	size_t nwords = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < old.n; i++)
		if (map[i] != NONE) {
			nwords += words_of(old.items[i].len);
			n++;
		}
	memset(&t->index, 0, sizeof(t->index));
	t->n = 0;
	t->nwords = 0;
	t->dead = 0;
	t->cap = (uint32_t)roomy(n);
	t->words_cap = roomy(nwords);
	t->items = xreallocarray(NULL, t->cap, sizeof(*t->items));
	t->words = xreallocarray(NULL, t->words_cap, sizeof(*t->words));
	for (uint32_t i = 0; i < old.n; i++) {
		const struct item *it = &old.items[i];
		uint32_t id;

		if (map[i] == NONE)
			continue;
		id = itab_intern(t, old.words + it->off, it->len);
		t->items[id].refs = it->refs;
		t->dead -= item_bytes(it->len);
	}
	itab_release(&old);
}

/* --- the recorder --------------------------------------------------------- */

struct flightrec *flightrec_new(uint64_t keep_ns, size_t max_bytes)
{
	struct flightrec *fr = xcalloc(1, sizeof(*fr));

	fr->keep_ns = keep_ns;
	fr->max_bytes = max_bytes < FLIGHTREC_MIN_BYTES ? FLIGHTREC_MIN_BYTES :
			max_bytes > FLIGHTREC_MAX_BYTES ? FLIGHTREC_MAX_BYTES : max_bytes;
	fr->wall = true;
	fr->frames.child = &fr->strings;
	fr->frames.child_from = FK_NAME;
	fr->ctxs.child = &fr->strings;
	fr->ctxs.child_from = CK_NAME;
	fr->stacks.child = &fr->frames;
	fr->stacks.child_from = 0;
	return fr;
}

void flightrec_free(struct flightrec *fr)
{
	if (!fr)
		return;
	itab_release(&fr->strings);
	itab_release(&fr->frames);
	itab_release(&fr->stacks);
	itab_release(&fr->ctxs);
	free(fr->ring);
	free(fr->key);
	free(fr);
}

void flightrec_set_sampling(struct flightrec *fr, uint64_t interval_ns, bool wall)
{
	fr->interval_ns = interval_ns;
	fr->wall = wall;
}

size_t flightrec_bytes(const struct flightrec *fr)
{
	return sizeof(*fr) + fr->cap * sizeof(*fr->ring) + fr->key_cap * sizeof(*fr->key) +
	       itab_bytes(&fr->strings) + itab_bytes(&fr->frames) + itab_bytes(&fr->stacks) +
	       itab_bytes(&fr->ctxs);
}

uint64_t flightrec_samples(const struct flightrec *fr)
{
	return fr->count;
}

uint64_t flightrec_compactions(const struct flightrec *fr)
{
	return fr->compactions;
}

/* What a compaction would give back: the unreferenced items and the
 * ring's empty slots. */
static size_t reclaimable(const struct flightrec *fr)
{
	return fr->strings.dead + fr->frames.dead + fr->stacks.dead + fr->ctxs.dead +
	       (fr->cap - fr->count) * sizeof(*fr->ring);
}

static uint32_t string_id(struct flightrec *fr, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	if (!s)
		return NONE;
	/* A target's hostile name must not take the whole budget. */
	if (len > FLIGHTREC_NAME_MAX)
		len = FLIGHTREC_NAME_MAX;
	if (len % 4)
		fr->name[len / 4] = 0;
	memcpy(fr->name, s, len);
	return itab_intern(&fr->strings, fr->name, (uint32_t)len);
}

static uint32_t *key_room(struct flightrec *fr, size_t words)
{
	if (words > fr->key_cap) {
		fr->key_cap = grow_to(fr->key_cap, words);
		fr->key = xreallocarray(fr->key, fr->key_cap, sizeof(*fr->key));
	}
	return fr->key;
}

static uint32_t frame_id(struct flightrec *fr, const struct pframe *f)
{
	uint32_t k[FK_WORDS];

	k[FK_KIND] = f->kind;
	k[FK_LINE] = (uint32_t)f->line;
	k[FK_FIRSTLINE] = (uint32_t)f->firstlineno;
	k[FK_NAME] = string_id(fr, f->name ? f->name : "?");
	k[FK_FILE] = string_id(fr, f->file);
	return itab_intern(&fr->frames, k, sizeof(k));
}

static uint32_t stack_id(struct flightrec *fr, const struct pframe *frames, uint32_t depth)
{
	static const struct pframe cut = { PF_MARKER, "<truncated>", NULL, -1, -1 };
	uint32_t *key, n = depth > FLIGHTREC_DEPTH ? FLIGHTREC_DEPTH + 1 : depth;

	/* frame_id() leaves fr->key alone. */
	key = key_room(fr, n ? n : 1);
	for (uint32_t d = 0; d < n; d++)
		key[d] = frame_id(fr, d < FLIGHTREC_DEPTH ? &frames[d] : &cut);
	return itab_intern(&fr->stacks, key, n * 4);
}

static uint32_t ctx_id(struct flightrec *fr, const struct flightrec_sample *s)
{
	uint32_t k[CK_WORDS];

	k[CK_PID] = (uint32_t)s->pid;
	k[CK_TID] = (uint32_t)s->tid;
	k[CK_NAME] = string_id(fr, s->thread_name);
	k[CK_COMMAND] = string_id(fr, s->command);
	k[CK_WAIT] = string_id(fr, s->wait_class);
	for (int i = 0; i < FLIGHTREC_ROOTS; i++)
		k[CK_ROOT + i] = string_id(fr, s->roots[i]);
	return itab_intern(&fr->ctxs, k, sizeof(k));
}

/* Older than keep_ns before the newest sample (keep_ns may be
 * UINT64_MAX: forever). */
static bool too_old(const struct flightrec *fr, uint64_t unix_ns)
{
	return unix_ns < fr->newest_ns && fr->newest_ns - unix_ns > fr->keep_ns;
}

static void drop_oldest(struct flightrec *fr)
{
	struct entry *e = &fr->ring[fr->head];

	itab_unref(&fr->stacks, e->stack);
	itab_unref(&fr->ctxs, e->ctx);
	fr->head = (fr->head + 1) % fr->cap;
	fr->count--;
}

/* Rebuild the tables from the live samples, and the ring at their size. */
static void compact(struct flightrec *fr)
{
	uint32_t *smap = itab_live_map(&fr->strings), *fmap = itab_live_map(&fr->frames);
	uint32_t *kmap = itab_live_map(&fr->stacks), *cmap = itab_live_map(&fr->ctxs);
	size_t cap = roomy(fr->count);
	struct entry *ring = xreallocarray(NULL, cap, sizeof(*ring));

	itab_remap_children(&fr->frames, smap);
	itab_remap_children(&fr->ctxs, smap);
	itab_remap_children(&fr->stacks, fmap);
	itab_compact(&fr->strings, smap);
	itab_compact(&fr->frames, fmap);
	itab_compact(&fr->stacks, kmap);
	itab_compact(&fr->ctxs, cmap);
	for (size_t i = 0; i < fr->count; i++) {
		const struct entry *e = &fr->ring[(fr->head + i) % fr->cap];

		ring[i] = (struct entry){ e->unix_ns, kmap[e->stack], cmap[e->ctx] };
	}
	free(fr->ring);
	fr->ring = ring;
	fr->cap = cap;
	fr->head = 0;
	fr->compactions++;
	free(smap);
	free(fmap);
	free(kmap);
	free(cmap);
}

/* Back under the bound: the oldest samples dropped until a compaction
 * leaves about three quarters of max_bytes (see flightrec.h), and a
 * compaction whenever half of what is held is garbage. */
static void enforce_bounds(struct flightrec *fr)
{
	size_t bytes = flightrec_bytes(fr), target = fr->max_bytes / 4 * 3;

	while (fr->count && too_old(fr, fr->ring[fr->head].unix_ns))
		drop_oldest(fr);
	if (bytes > fr->max_bytes) {
		while (fr->count > 1 && reclaimable(fr) + target < bytes)
			drop_oldest(fr);
		compact(fr);
	} else if (reclaimable(fr) > bytes / 2 && bytes > FLIGHTREC_MIN_BYTES / 2) {
		compact(fr);
	}
}

/* A slot at the ring's end: grown while the bound allows, else the
 * oldest sample's. */
static struct entry *ring_slot(struct flightrec *fr)
{
	if (fr->count == fr->cap) {
		size_t cap = grow_to(fr->cap, fr->count + 1), add = (cap - fr->cap) * sizeof(*fr->ring);

		if (fr->count && flightrec_bytes(fr) + add > fr->max_bytes) {
			drop_oldest(fr);
		} else {
			struct entry *ring = xreallocarray(NULL, cap, sizeof(*ring));

			for (size_t i = 0; i < fr->count; i++)
				ring[i] = fr->ring[(fr->head + i) % fr->cap];
			free(fr->ring);
			fr->ring = ring;
			fr->cap = cap;
			fr->head = 0;
		}
	}
	fr->count++;
	return &fr->ring[(fr->head + fr->count - 1) % fr->cap];
}

int flightrec_add_sample(struct flightrec *fr, const struct flightrec_sample *s)
{
	struct entry *e;
	uint32_t stack, ctx;

	if (too_old(fr, s->unix_ns))
		return 0;
	if (s->unix_ns > fr->newest_ns)
		fr->newest_ns = s->unix_ns;
	stack = stack_id(fr, s->frames, s->depth);
	ctx = ctx_id(fr, s);
	/* Referenced before the slot is taken: dropping the oldest sample
	 * must not free what this one holds. */
	itab_ref(&fr->stacks, stack);
	itab_ref(&fr->ctxs, ctx);
	e = ring_slot(fr);
	*e = (struct entry){ s->unix_ns, stack, ctx };
	enforce_bounds(fr);
	return 0;
}

int flightrec_add(struct flightrec *fr, uint64_t unix_ns, pid_t pid, pid_t tid,
		  const char *thread_name, const char *command,
		  const struct pframe *frames, uint32_t depth, const char *wait_class)
{
	const struct flightrec_sample s = {
		.unix_ns = unix_ns, .pid = pid, .tid = tid, .thread_name = thread_name,
		.command = command, .wait_class = wait_class, .frames = frames, .depth = depth,
	};

	return flightrec_add_sample(fr, &s);
}

/* --- writing --------------------------------------------------------------- */

static void put_v(struct strbuf *b, uint64_t v)
{
	sb_put_varint(b, v);
}

static void put_z(struct strbuf *b, int64_t v)
{
	sb_put_varint(b, (uint64_t)v << 1 ^ (uint64_t)(v >> 63));
}

static void put_strings(struct strbuf *b, const struct itab *t)
{
	put_v(b, t->n);
	for (uint32_t i = 0; i < t->n; i++) {
		put_v(b, t->items[i].len);
		sb_add(b, (const char *)(t->words + t->items[i].off), t->items[i].len);
	}
}

/* A string id + 1, 0 for none. */
static uint64_t opt_id(uint32_t id)
{
	return id == NONE ? 0 : (uint64_t)id + 1;
}

static void put_frames(struct strbuf *b, const struct itab *t)
{
	put_v(b, t->n);
	for (uint32_t i = 0; i < t->n; i++) {
		const uint32_t *k = t->words + t->items[i].off;

		put_v(b, k[FK_KIND]);
		put_v(b, k[FK_NAME]);
		put_v(b, opt_id(k[FK_FILE]));
		put_z(b, (int32_t)k[FK_LINE]);
		put_z(b, (int32_t)k[FK_FIRSTLINE]);
	}
}

static void put_stacks(struct strbuf *b, const struct itab *t)
{
	put_v(b, t->n);
	for (uint32_t i = 0; i < t->n; i++) {
		const struct item *it = &t->items[i];

		put_v(b, it->len / 4);
		for (uint32_t d = 0; d < it->len / 4; d++)
			put_v(b, t->words[it->off + d]);
	}
}

/* Whether a context has roots: the file is then version 2. */
static bool any_roots(const struct itab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		for (int r = 0; r < FLIGHTREC_ROOTS; r++)
			if (t->words[t->items[i].off + CK_ROOT + r] != NONE)
				return true;
	return false;
}

static void put_ctxs(struct strbuf *b, const struct itab *t, bool roots)
{
	put_v(b, t->n);
	for (uint32_t i = 0; i < t->n; i++) {
		const uint32_t *k = t->words + t->items[i].off;

		put_v(b, k[CK_PID]);
		put_v(b, k[CK_TID]);
		put_v(b, opt_id(k[CK_NAME]));
		put_v(b, opt_id(k[CK_COMMAND]));
		put_v(b, opt_id(k[CK_WAIT]));
		for (int r = 0; roots && r < FLIGHTREC_ROOTS; r++)
			put_v(b, opt_id(k[CK_ROOT + r]));
	}
}

/* Each context's thread, as a number from 0: contexts differ in wait
 * class and name too. */
static uint32_t *thread_of_ctx(const struct flightrec *fr)
{
	uint32_t n = fr->ctxs.n, *thread = xmalloc((n ? n : 1) * sizeof(*thread)), nthreads = 0;
	uint64_t *keys = xmalloc((n ? n : 1) * sizeof(*keys));
	struct hashidx ix = HASHIDX_INIT;

	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *k = fr->ctxs.words + fr->ctxs.items[i].off;
		uint64_t key = (uint64_t)k[CK_PID] << 32 | k[CK_TID];
		uint32_t h = hash_u64(key), t;
		struct hashidx_pos pos;

		for (t = hashidx_first(&ix, h, &pos); t != HASHIDX_NONE && keys[t] != key;
		     t = hashidx_next(&ix, &pos))
			;
		if (t == HASHIDX_NONE) {
			t = nthreads++;
			keys[t] = key;
			hashidx_add(&ix, h, t);
		}
		thread[i] = t;
	}
	hashidx_release(&ix);
	free(keys);
	return thread;
}

/* The median gap between one thread's consecutive samples, the interval
 * the recording was sampled at when no one said (10 ms with no gaps). */
static uint64_t median_gap(const struct flightrec *fr)
{
	uint64_t *gaps = xmalloc((fr->count ? fr->count : 1) * sizeof(*gaps)), g;
	uint64_t *last = xcalloc(fr->ctxs.n ? fr->ctxs.n : 1, sizeof(*last));
	uint32_t *thread = thread_of_ctx(fr);
	size_t n = 0;

	for (size_t i = 0; i < fr->count; i++) {
		const struct entry *e = &fr->ring[(fr->head + i) % fr->cap];
		uint64_t *l = &last[thread[e->ctx]];

		if (*l && e->unix_ns > *l)
			gaps[n++] = e->unix_ns - *l;
		*l = e->unix_ns;
	}
	qsort(gaps, n, sizeof(*gaps), cmp_u64);
	g = n ? gaps[n / 2] : 10000000;
	free(gaps);
	free(last);
	free(thread);
	return g;
}

/* Those within keep_ns of the newest: one that arrived late, behind
 * newer ones, is dropped only when they are, but is not written. */
static void put_samples(struct strbuf *b, const struct flightrec *fr)
{
	uint64_t prev = 0, n = 0;

	for (size_t i = 0; i < fr->count; i++)
		n += !too_old(fr, fr->ring[(fr->head + i) % fr->cap].unix_ns);
	put_v(b, n);
	for (size_t i = 0; i < fr->count; i++) {
		const struct entry *e = &fr->ring[(fr->head + i) % fr->cap];

		if (too_old(fr, e->unix_ns))
			continue;
		put_z(b, (int64_t)(e->unix_ns - prev));
		put_v(b, e->stack);
		put_v(b, e->ctx);
		prev = e->unix_ns;
	}
}

/* The whole recording, uncompressed.  Tables may hold unreferenced items
 * (until the next compaction): they are written too, which costs a little
 * room and keeps every id as it is. */
static void encode(const struct flightrec *fr, uint64_t mark, struct strbuf *b)
{
	bool roots = any_roots(&fr->ctxs);

	sb_add(b, FLIGHTREC_MAGIC, FLIGHTREC_MAGIC_LEN);
	put_v(b, roots ? 2 : 1);
	put_v(b, fr->wall ? 1 : 0);
	put_v(b, mark);
	put_v(b, fr->interval_ns ? fr->interval_ns : median_gap(fr));
	put_strings(b, &fr->strings);
	put_frames(b, &fr->frames);
	put_stacks(b, &fr->stacks);
	put_ctxs(b, &fr->ctxs, roots);
	put_samples(b, fr);
}

static int write_encoded(FILE *f, void *arg)
{
	const struct strbuf *b = arg;
	int rc = out_write_gzip(f, b->buf, b->len);

	return rc < 0 ? rc : out_finish(f);
}

int flightrec_profile(const struct flightrec *fr, uint64_t mark_unix_ns,
		      const struct flightrec_slice *slice, struct profile *p)
{
	struct strbuf b = STRBUF_INIT;
	char err[256];
	int rc;

	encode(fr, mark_unix_ns, &b);
	rc = flightrec_parse(b.buf, b.len, slice, p, NULL, err, sizeof(err));
	sb_release(&b);
	if (!rc && !p->samples) {
		profile_free(p);
		rc = status_fail(EXIT_USAGE);
	}
	return rc;
}

int flightrec_encode(const struct flightrec *fr, uint64_t mark_unix_ns, struct strbuf *out)
{
	struct strbuf b = STRBUF_INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = -errno;

	if (f) {
		encode(fr, mark_unix_ns, &b);
		rc = out_write_gzip(f, b.buf, b.len);
		if (fclose(f) != 0 && rc == 0)
			rc = -EIO;
		if (rc == 0)
			sb_add(out, buf, len);
	}
	free(buf);
	sb_release(&b);
	return rc;
}

int flightrec_write(const struct flightrec *fr, const char *path, uint64_t mark_unix_ns,
		    char *err, size_t errlen)
{
	struct strbuf b = STRBUF_INIT;
	int rc;

	encode(fr, mark_unix_ns, &b);
	rc = out_write_atomic(path, NULL, write_encoded, &b);
	if (rc < 0)
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(-rc));
	sb_release(&b);
	return rc;
}
