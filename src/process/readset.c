/* Proving cached results by re-reading what they were computed from: see
 * readset.h. */
#include "process/readset.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Blocks at most this far apart are read as one span, through the bytes
 * between them (reading a few KiB more costs less than another iovec on
 * another page), and a span is at most SPAN_MAX long. */
#define MERGE_GAP 4096u

static const struct readset *sort_rs;	/* qsort has no argument */
#define SPAN_MAX (256u * 1024)


/* Can block b join span s? */
static bool joins(const struct span *s, const struct mem_block *b)
{
	uint64_t lo = b->addr < s->lo ? b->addr : s->lo;
	uint64_t hi = b->addr + b->len > s->hi ? b->addr + b->len : s->hi;

	if (b->addr + b->len < b->addr)
		return false;	/* wraps: hostile */
	return b->addr <= s->hi + MERGE_GAP && b->addr + b->len + MERGE_GAP >= s->lo &&
	       hi - lo <= SPAN_MAX;
}

static int make_spans(const struct mem_block *b, int n, struct span *sp)
{
	int ns = 0;

	for (int i = 0; i < n; i++) {
		struct span *s = &sp[ns - 1];

		if (ns && joins(s, &b[i])) {
			if (b[i].addr < s->lo)
				s->lo = b[i].addr;
			if (b[i].addr + b[i].len > s->hi)
				s->hi = b[i].addr + b[i].len;
			s->last = i;
			continue;
		}
		sp[ns++] = (struct span){ b[i].addr, b[i].addr + b[i].len, i, i };
	}
	return ns;
}

/* Hand a span's bytes to its blocks, or read them one by one where the
 * span could not be read (it crossed an unmapped gap). */
static void deliver(struct mem *m, const struct span *s, const uint8_t *data,
		    const struct mem_block *b, bool *ok)
{
	for (int i = s->first; i <= s->last; i++) {
		if (data) {
			memcpy(b[i].buf, data + (b[i].addr - s->lo), b[i].len);
			ok[i] = true;
		} else {
			ok[i] = b[i].len <= SPAN_MAX && mem_read(m, b[i].addr, b[i].buf, b[i].len) == 0;
		}
	}
}

void mem_read_merged(struct mem *m, const struct mem_block *b, int n, bool *ok,
		     struct merge_buf *mb)
{
	size_t total = 0;
	int ns, done = 0;

	ALLOC_GROW(mb->sp, (size_t)n + 1, mb->sp_cap);
	ns = make_spans(b, n, mb->sp);
	for (int k = 0; k < ns; k++)
		total += mb->sp[k].hi - mb->sp[k].lo;
	ALLOC_GROW(mb->buf, total + 1, mb->buf_cap);
	ALLOC_GROW(mb->sb, (size_t)ns + 1, mb->sb_cap);
	total = 0;
	for (int k = 0; k < ns; k++) {
		mb->sb[k] = (struct mem_block){ mb->sp[k].lo, mb->buf + total,
						mb->sp[k].hi - mb->sp[k].lo };
		total += mb->sb[k].len;
	}
	while (done < ns) {
		int got = mem_read_batch(m, mb->sb + done, ns - done);

		if (got < 0)
			got = 0;
		for (int k = done; k < done + got; k++)
			deliver(m, &mb->sp[k], mb->sb[k].buf, b, ok);
		done += got;
		if (done < ns)
			deliver(m, &mb->sp[done++], NULL, b, ok);
	}
}

void merge_buf_release(struct merge_buf *mb)
{
	free(mb->sp);
	free(mb->sb);
	free(mb->buf);
	memset(mb, 0, sizeof(*mb));
}

/* --- recording ------------------------------------------------------------ */

static uint32_t range_hash(uint64_t addr, uint32_t len)
{
	return hash_u64(addr * 31 + len);
}

/* The range (addr, len) holding exactly these bytes: an existing one, or
 * a new one. */
static uint32_t range_id(struct readset *rs, uint64_t addr, const void *data, uint32_t len)
{
	uint32_t h = range_hash(addr, len), id;
	struct hashidx_pos pos;

	for (id = hashidx_first(&rs->ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&rs->ix, &pos)) {
		const struct rs_range *r = &rs->v[id];

		if (r->refs && r->addr == addr && r->len == len &&
		    !memcmp(rs->bytes + r->off, data, len))
			return id;
	}
	ALLOC_GROW(rs->v, rs->n + 1, rs->cap);
	ALLOC_GROW(rs->bytes, rs->nbytes + len, rs->bytes_cap);
	memcpy(rs->bytes + rs->nbytes, data, len);
	rs->v[rs->n] = (struct rs_range){ addr, len, 0, rs->nbytes, true };
	rs->nbytes += len;
	hashidx_add(&rs->ix, h, rs->n);
	return rs->n++;
}

static void log_read(struct readset *rs, uint64_t addr, const void *buf, size_t len)
{
	uint32_t id;

	if (len > READSET_RANGE_MAX || rs->nlog >= READSET_LOG_MAX) {
		rs->overflow = true;
		return;
	}
	id = range_id(rs, addr, buf, (uint32_t)len);
	/* Taken now, so that a range new in this log is not matched as
	 * dead; readset_end() keeps it or gives it back. */
	if (!rs->v[id].refs++) {
		rs->live++;
		rs->dirty = true;
	}
	rs->log[rs->nlog++] = id;
}

static int rec_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct readset *rs = (struct readset *)m;
	int rc = mem_read(rs->under, addr, buf, len);

	if (rc == 0 && rs->recording && len)
		log_read(rs, addr, buf, len);
	return rc;
}

static void rec_close(struct mem *m)
{
	(void)m;	/* owned by its readset */
}

void readset_init(struct readset *rs, struct mem *under)
{
	memset(rs, 0, sizeof(*rs));
	rs->mem.read = rec_read;
	rs->mem.close = rec_close;
	rs->under = under;
}

void readset_release(struct readset *rs)
{
	free(rs->v);
	free(rs->bytes);
	free(rs->order);
	free(rs->now);
	free(rs->blocks);
	free(rs->okv);
	merge_buf_release(&rs->mb);
	hashidx_release(&rs->ix);
	memset(rs, 0, sizeof(*rs));
}

void readset_begin(struct readset *rs)
{
	rs->nlog = 0;
	rs->overflow = false;
	rs->recording = true;
}

/* Reads of one object's fields sit close together: they are kept as one
 * range from the first to the last (the bytes between are the object's
 * other fields), so that a round compares a range per object, not per
 * field.  COALESCE_GAP is short enough not to reach into the next object
 * often (its reference count would change all the time). */
#define COALESCE_GAP 96u
#define COALESCE_MAX 1024u

static int by_log_addr(const void *a, const void *b)
{
	uint64_t x = sort_rs->v[*(const uint32_t *)a].addr, y = sort_rs->v[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

/* Replace the log's members [from, to) (sorted by address) by one range
 * over them, read again: kept only if it still holds every member's bytes,
 * since the result was computed from those.  Returns the new log length. */
static int coalesce_group(struct readset *rs, uint32_t *log, int n, int from, int to)
{
	const struct rs_range *first = &rs->v[log[from]];
	uint64_t lo = first->addr, hi = lo;
	uint8_t buf[COALESCE_MAX];
	uint32_t id;

	for (int k = from; k < to; k++)
		if (rs->v[log[k]].addr + rs->v[log[k]].len > hi)
			hi = rs->v[log[k]].addr + rs->v[log[k]].len;
	if (mem_read(rs->under, lo, buf, hi - lo) < 0)
		return n;
	for (int k = from; k < to; k++) {
		const struct rs_range *r = &rs->v[log[k]];

		if (memcmp(buf + (r->addr - lo), rs->bytes + r->off, r->len))
			return n;	/* changed meanwhile: keep the pieces */
	}
	id = range_id(rs, lo, buf, (uint32_t)(hi - lo));
	if (!rs->v[id].refs++) {
		rs->live++;
		rs->dirty = true;
	}
	readset_drop(rs, log + from, to - from);
	log[from] = id;
	memmove(log + from + 1, log + to, (n - to) * sizeof(*log));
	return n - (to - from - 1);
}

static int coalesce(struct readset *rs, uint32_t *log, int n)
{
	sort_rs = rs;
	qsort(log, n, sizeof(*log), by_log_addr);
	for (int i = 0; i < n; i++) {
		uint64_t lo = rs->v[log[i]].addr, hi = lo + rs->v[log[i]].len;
		int j = i + 1;

		while (j < n && rs->v[log[j]].addr <= hi + COALESCE_GAP &&
		       rs->v[log[j]].addr + rs->v[log[j]].len - lo <= COALESCE_MAX) {
			if (rs->v[log[j]].addr + rs->v[log[j]].len > hi)
				hi = rs->v[log[j]].addr + rs->v[log[j]].len;
			j++;
		}
		if (j - i > 1)
			n = coalesce_group(rs, log, n, i, j);
	}
	return n;
}

int readset_end(struct readset *rs, uint32_t **ids)
{
	int n;

	rs->recording = false;
	*ids = NULL;
	if (rs->overflow) {
		readset_drop(rs, rs->log, rs->nlog);
		return -1;
	}
	n = coalesce(rs, rs->log, rs->nlog);
	*ids = xmalloc((n ? n : 1) * sizeof(**ids));
	memcpy(*ids, rs->log, n * sizeof(**ids));
	return n;
}

void readset_drop(struct readset *rs, const uint32_t *ids, int n)
{
	for (int i = 0; i < n; i++)
		if (ids[i] < rs->n && rs->v[ids[i]].refs && !--rs->v[ids[i]].refs) {
			rs->live--;
			rs->dirty = true;
		}
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = sort_rs->v[*(const uint32_t *)a].addr, y = sort_rs->v[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

/* The live ranges by address (so that near ones merge), sorted again
 * only when the set has changed. */
static void sort_live(struct readset *rs)
{
	if (!rs->dirty)
		return;
	free(rs->order);
	rs->order = xcalloc(rs->live ? rs->live : 1, sizeof(*rs->order));
	rs->norder = 0;
	for (uint32_t i = 0; i < rs->n && rs->norder < rs->live; i++)
		if (rs->v[i].refs)
			rs->order[rs->norder++] = i;
	sort_rs = rs;
	qsort(rs->order, rs->norder, sizeof(*rs->order), by_addr);
	rs->dirty = false;
}

void readset_check(struct readset *rs, struct mem *m)
{
	uint32_t n;

	sort_live(rs);
	n = rs->norder;
	rs->nbad = 0;
	if (!n)
		return;	/* (and bytes may be NULL) */
	ALLOC_GROW(rs->now, rs->nbytes + 1, rs->now_cap);
	ALLOC_GROW(rs->blocks, (size_t)n + 1, rs->blocks_cap);
	ALLOC_GROW(rs->okv, (size_t)n + 1, rs->okv_cap);
	for (uint32_t k = 0; k < n; k++) {
		const struct rs_range *r = &rs->v[rs->order[k]];

		rs->blocks[k] = (struct mem_block){ r->addr, rs->now + r->off, r->len };
	}
	mem_read_merged(m, rs->blocks, (int)n, rs->okv, &rs->mb);
	/* Most rounds nothing changed: one comparison of all the bytes
	 * (where no dead range leaves a hole in now[]). */
	if (rs->live == rs->n && !memchr(rs->okv, 0, n) && !memcmp(rs->now, rs->bytes, rs->nbytes)) {
		for (uint32_t k = 0; k < n; k++)
			rs->v[rs->order[k]].ok = true;
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct rs_range *r = &rs->v[rs->order[k]];

		r->ok = rs->okv[k] && !memcmp(rs->now + r->off, rs->bytes + r->off, r->len);
		rs->nbad += !r->ok;
	}
}

bool readset_holds(const struct readset *rs, const uint32_t *ids, int n)
{
	if (!rs->nbad)
		return true;	/* and ranges new since the check hold too */
	for (int i = 0; i < n; i++)
		if (ids[i] >= rs->n || !rs->v[ids[i]].ok)
			return false;
	return true;
}

/* Dead ranges (and their bytes) outnumber the live ones: keep only the
 * live, renumbered.  Returns the new id of each old one (UINT32_MAX: dead;
 * the caller renumbers what it holds and frees it), or NULL when there was
 * nothing worth doing. */
uint32_t *readset_compact(struct readset *rs)
{
	uint32_t *remap, n = 0;
	uint8_t *bytes;
	size_t nbytes = 0;

	if (rs->n < 1024 || rs->n - rs->live < rs->live)
		return NULL;
	remap = xmalloc(rs->n * sizeof(*remap));
	bytes = xmalloc(rs->nbytes ? rs->nbytes : 1);
	hashidx_clear(&rs->ix);
	for (uint32_t i = 0; i < rs->n; i++) {
		struct rs_range r = rs->v[i];

		remap[i] = UINT32_MAX;
		if (!r.refs)
			continue;
		memcpy(bytes + nbytes, rs->bytes + r.off, r.len);
		r.off = nbytes;
		nbytes += r.len;
		rs->v[n] = r;
		hashidx_add(&rs->ix, range_hash(r.addr, r.len), n);
		remap[i] = n++;
	}
	free(rs->bytes);
	rs->bytes = bytes;
	rs->bytes_cap = rs->nbytes ? rs->nbytes : 1;
	rs->nbytes = nbytes;
	rs->n = n;
	rs->dirty = true;
	return remap;
}
