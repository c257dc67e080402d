#include "python/codecache.h"
#include "interp/linetable.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_CHARS 4096
#define LINETABLE_MAX (1u << 20)
#define MAX_ENTRIES (1u << 16)

struct line_frame {
	int line;
	uint32_t frame_id;
};

struct code_entry {
	uint64_t addr;
	struct code_identity id;	/* zero after a failed decode: matches none */
	char *function, *file;
	struct lt_ranges ranges;	/* the line table, decoded once */
	struct line_frame *lines;	/* frame ids per line seen so far */
	uint32_t nlines, lines_alloc;
	int64_t last_offset;		/* memo of the last offset -> line */
	int last_line;
	uint64_t serial;		/* names this decode; 0: none */
	uint64_t checked;		/* the round its identity was last read in */
};

struct code_cache {
	struct mem *m;
	const struct py_layout *L;
	struct pyctx c;
	struct profile *p;
	bool by_function;
	uint64_t code_type;		/* PyCode_Type once seen */
	struct code_entry *entries;
	uint32_t nentries, entries_alloc;
	struct hashidx index;		/* by address */
	uint64_t hits, decodes;
	uint64_t round;			/* see code_cache_round() */
	uint32_t last;			/* entry of the last lookup, + 1 */
};

struct code_cache *code_cache_new(struct mem *m, const struct py_layout *L,
				  struct profile *p, bool by_function)
{
	struct code_cache *cc = xcalloc(1, sizeof(*cc));

	cc->m = m;
	cc->L = L;
	cc->c.m = m;
	cc->c.L = L;
	cc->p = p;
	cc->by_function = by_function;
	cc->round = 1;
	return cc;
}

static void entry_clear(struct code_entry *e)
{
	free(e->function);
	free(e->file);
	linetable_ranges_free(&e->ranges);
	free(e->lines);
	memset(e, 0, sizeof(*e));
}

static void cache_empty(struct code_cache *cc)
{
	for (uint32_t i = 0; i < cc->nentries; i++)
		entry_clear(&cc->entries[i]);
	cc->nentries = 0;
	cc->last = 0;
	hashidx_clear(&cc->index);
}

void code_cache_free(struct code_cache *cc)
{
	if (!cc)
		return;
	cache_empty(cc);
	free(cc->entries);
	hashidx_release(&cc->index);
	free(cc);
}

void code_cache_stats(const struct code_cache *cc, uint64_t *hits, uint64_t *decodes)
{
	*hits = cc->hits;
	*decodes = cc->decodes;
}

/* A stack is mostly runs of one code object (recursion, a loop calling
 * the same function): the last entry found is tried first. */
static struct code_entry *entry_find(struct code_cache *cc, uint64_t code)
{
	struct hashidx_pos pos;
	uint32_t id;

	if (cc->last && cc->entries[cc->last - 1].addr == code)
		return &cc->entries[cc->last - 1];
	for (id = hashidx_first(&cc->index, hash_u64(code), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&cc->index, &pos))
		if (cc->entries[id].addr == code) {
			cc->last = id + 1;
			return &cc->entries[id];
		}
	return NULL;
}

/* A code object's identity, for every reader of code objects (codecache.h). */

uint32_t code_identity_span(const struct py_layout *L)
{
	uint32_t offs[] = { L->obj.ob_type, L->code.filename, L->code.name, L->code.qualname,
			    L->code.linetable, L->code.firstlineno,
			    L->lasti == LASTI_PTR ? L->o.ob_size : NONE };

	return layout_span(offs, ARRAY_SIZE(offs));
}

void code_identity_parse(const struct py_layout *L, const uint8_t *cb, struct code_identity *id)
{
	memset(id, 0, sizeof(*id));
	id->type = field_u64(cb, L->obj.ob_type);
	id->filename = field_u64(cb, L->code.filename);
	id->name = field_u64(cb, L->code.qualname != NONE ? L->code.qualname : L->code.name);
	id->linetable = field_u64(cb, L->code.linetable);
	id->firstlineno = field_i32(cb, L->code.firstlineno);
	id->units = L->lasti == LASTI_PTR ? (int64_t)field_u64(cb, L->o.ob_size) : -1;
}

int code_identity_read(struct mem *m, const struct py_layout *L, uint64_t code,
		       struct code_identity *id)
{
	uint32_t size = code_identity_span(L);
	uint8_t buf[512];
	const uint8_t *cb;
	int rc;

	if (size > sizeof(buf))
		return -EINVAL;
	if (!(cb = mem_peek(m, code, size))) {
		if ((rc = mem_read(m, code, buf, size)) < 0)
			return rc;
		cb = buf;
	}
	code_identity_parse(L, cb, id);
	return 0;
}

bool code_identity_same(const struct code_identity *a, const struct code_identity *b)
{
	return a->type == b->type && a->filename == b->filename && a->name == b->name &&
	       a->linetable == b->linetable && a->firstlineno == b->firstlineno &&
	       a->units == b->units;
}

bool code_offset_plausible(const struct py_layout *L, const struct code_identity *id,
			   int64_t offset)
{
	if (L->lasti != LASTI_PTR)
		return true;
	/* Read from the target: hostile, so bounded before it is doubled. */
	if (id->units < 0 || id->units > UINT32_MAX || offset >= 2 * id->units)
		return false;
	return offset >= (L->minor <= 12 ? -2 : 0);
}

int code_type_check(const struct pyctx *c, uint64_t *code_type, uint64_t code, uint64_t type)
{
	char name[16];

	if (*code_type)
		return type == *code_type ? 0 : -EINVAL;
	if (py_type_name(c, code, name, sizeof(name)) < 0 || strcmp(name, "code") != 0)
		return -EINVAL;
	*code_type = type;
	return 0;
}

/* The line table as ranges, so that each frame's line is a binary search:
 * scanning a long table from its start for every frame of every sample
 * (deep recursion in one function, corrupt memory) was most of a sample's
 * cost.  Aggregating by function needs no lines at all. */
static int decode_lines(struct code_cache *cc, struct code_entry *e, uint64_t table)
{
	uint8_t *bytes;
	size_t len;
	int rc;

	if (cc->by_function)
		return 0;
	if ((rc = py_bytes(&cc->c, table, LINETABLE_MAX, &bytes, &len)) < 0)
		return rc;
	rc = linetable_ranges(cc->L->lines, bytes, len, e->id.firstlineno, &e->ranges);
	free(bytes);
	return rc < 0 ? -ENOMEM : 0;
}

/* Decode the code object into e.  On failure e keeps its address but can
 * never match: its identity is zeroed.  The index cannot forget an entry,
 * so the next use of the address finds this one and decodes it anew
 * rather than adding a second entry for it. */
static int decode(struct code_cache *cc, struct code_entry *e, uint64_t code,
		  const struct code_identity *id)
{
	struct code_entry ne = { 0 };
	int rc;

	cc->decodes++;
	ne.id = *id;
	if ((rc = py_str(&cc->c, id->name, NAME_MAX_CHARS, &ne.function)) < 0 ||
	    (rc = py_str(&cc->c, id->filename, NAME_MAX_CHARS, &ne.file)) < 0 ||
	    (rc = decode_lines(cc, &ne, id->linetable)) < 0) {
		entry_clear(&ne);
		entry_clear(e);
		e->addr = code;
		return rc;
	}
	entry_clear(e);
	*e = ne;
	e->addr = code;
	e->last_offset = INT64_MIN;
	e->serial = cc->decodes;
	e->checked = cc->round;
	return 0;
}

static int64_t frame_offset(const struct code_cache *cc, uint64_t code, uint64_t lasti)
{
	switch (cc->L->lasti) {
	case LASTI_BYTES:
		return (int32_t)lasti;
	case LASTI_UNITS:
		return (int32_t)lasti < 0 ? -1 : (int64_t)(int32_t)lasti * 2;
	default:
		return (int64_t)(lasti - (code + cc->L->code.code_adaptive));
	}
}

static int entry_line(struct code_cache *cc, struct code_entry *e, int64_t offset)
{
	if (cc->by_function)
		return -1;
	if (offset == e->last_offset)
		return e->last_line;
	e->last_offset = offset;
	if (offset < 0)
		e->last_line = e->id.firstlineno;
	else if (offset > UINT32_MAX)
		e->last_line = -1;
	else
		e->last_line = linetable_ranges_line(&e->ranges, (uint32_t)offset);
	return e->last_line;
}

static uint32_t entry_frame_id(struct code_cache *cc, struct code_entry *e, int line)
{
	struct pframe f;
	uint32_t id;

	for (uint32_t i = 0; i < e->nlines; i++)
		if (e->lines[i].line == line)
			return e->lines[i].frame_id;
	f.kind = PF_PYTHON;
	f.name = e->function;
	f.file = e->file;
	f.line = line;
	f.firstlineno = e->id.firstlineno;
	id = profile_frame(cc->p, &f);
	ALLOC_GROW(e->lines, e->nlines + 1, e->lines_alloc);
	e->lines[e->nlines++] = (struct line_frame){ line, id };
	return id;
}

/* A new entry for code, decoded; nothing is kept when the decode fails. */
static int entry_new(struct code_cache *cc, uint64_t code, const struct code_identity *id,
		     struct code_entry **ep)
{
	struct code_entry fresh = { 0 };
	int rc;

	/* A program making code objects without end: start over rather
	 * than grow forever. */
	if (cc->nentries >= MAX_ENTRIES)
		cache_empty(cc);
	if ((rc = decode(cc, &fresh, code, id)) < 0)
		return rc;
	ALLOC_GROW(cc->entries, cc->nentries + 1, cc->entries_alloc);
	cc->entries[cc->nentries] = fresh;
	hashidx_add(&cc->index, hash_u64(code), cc->nentries);
	cc->last = cc->nentries + 1;
	*ep = &cc->entries[cc->nentries++];
	return 0;
}

void code_cache_round(struct code_cache *cc)
{
	cc->round++;
}

/* The entry for the code object at `code`, proved to be that object this
 * round: its identity read (once a round) and compared, decoded anew if
 * it changed. */
static int entry_checked(struct code_cache *cc, uint64_t code, struct code_entry **ep)
{
	struct code_identity id;
	struct code_entry *e = entry_find(cc, code);
	int rc;

	if (e && e->serial && e->checked == cc->round) {
		cc->hits++;
		*ep = e;
		return 0;
	}
	if ((rc = code_identity_read(cc->m, cc->L, code, &id)) < 0)
		return rc;
	if ((rc = code_type_check(&cc->c, &cc->code_type, code, id.type)) < 0)
		return rc;
	if (!e)
		rc = entry_new(cc, code, &id, &e);
	else if (!code_identity_same(&e->id, &id))
		rc = decode(cc, e, code, &id);
	else
		cc->hits++;
	if (rc < 0)
		return rc;
	e->checked = cc->round;
	*ep = e;
	return 0;
}

int code_cache_check(struct code_cache *cc, uint64_t code, uint64_t *serial)
{
	struct code_entry *e;
	int rc = entry_checked(cc, code, &e);

	*serial = rc < 0 ? 0 : e->serial;
	return rc;
}

int code_cache_frame(struct code_cache *cc, uint64_t code, uint64_t lasti, uint32_t *frame_id,
		     uint64_t *serial)
{
	struct code_entry *e;
	int rc;

	int64_t offset;

	if ((rc = entry_checked(cc, code, &e)) < 0)
		return rc;
	offset = frame_offset(cc, code, lasti);
	if (!code_offset_plausible(cc->L, &e->id, offset))
		return -ERANGE;
	if (serial)
		*serial = e->serial;
	*frame_id = entry_frame_id(cc, e, entry_line(cc, e, offset));
	return 0;
}
