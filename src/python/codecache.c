#include "python/codecache.h"
#include "interp/linetable.h"
#include "target/mem.h"
#include "python/pyobj.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_CHARS 4096
#define LINETABLE_MAX (1u << 20)
#define MAX_ENTRIES (1u << 16)

/* The fields that tell one code object from another. */
struct code_identity {
	uint64_t type, filename, name, linetable;
	int32_t firstlineno;
};

struct line_frame {
	int line;
	uint32_t frame_id;
};

struct code_entry {
	uint64_t addr;			/* 0: empty slot */
	struct code_identity id;
	char *function, *file;
	struct lt_ranges ranges;	/* the line table, decoded once */
	struct line_frame *lines;	/* frame ids per line seen so far */
	uint32_t nlines;
	int64_t last_offset;		/* memo of the last offset -> line */
	int last_line;
};

struct code_cache {
	struct mem *m;
	const struct py_layout *L;
	struct pyctx c;
	struct profile *p;
	bool by_function;
	uint64_t code_type;		/* PyCode_Type once seen */
	struct code_entry *slots;
	uint32_t nslots, used;
	uint64_t hits, decodes;
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
	cc->nslots = 1024;
	cc->slots = xcalloc(cc->nslots, sizeof(*cc->slots));
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

void code_cache_free(struct code_cache *cc)
{
	if (!cc)
		return;
	for (uint32_t i = 0; i < cc->nslots; i++)
		entry_clear(&cc->slots[i]);
	free(cc->slots);
	free(cc);
}

void code_cache_stats(const struct code_cache *cc, uint64_t *hits, uint64_t *decodes)
{
	*hits = cc->hits;
	*decodes = cc->decodes;
}

static uint32_t addr_hash(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 33;
	return (uint32_t)a;
}

/* The slot for addr: its entry, or the empty slot where it would go.
 * Linear probing in a table kept at most half full. */
static struct code_entry *slot_for(struct code_cache *cc, uint64_t addr)
{
	uint32_t i = addr_hash(addr) & (cc->nslots - 1);

	while (cc->slots[i].addr && cc->slots[i].addr != addr)
		i = (i + 1) & (cc->nslots - 1);
	return &cc->slots[i];
}

static void grow(struct code_cache *cc)
{
	struct code_entry *old = cc->slots;
	uint32_t n = cc->nslots;

	cc->nslots *= 2;
	cc->slots = xcalloc(cc->nslots, sizeof(*cc->slots));
	for (uint32_t i = 0; i < n; i++)
		if (old[i].addr)
			*slot_for(cc, old[i].addr) = old[i];
	free(old);
}

static int read_identity(struct code_cache *cc, uint64_t code, struct code_identity *id)
{
	const struct py_layout *L = cc->L;
	uint32_t offs[] = { L->obj.ob_type, L->code.filename, L->code.name, L->code.qualname,
			    L->code.linetable, L->code.firstlineno };
	uint32_t size = layout_span(offs, ARRAY_SIZE(offs));
	uint8_t buf[512];
	const uint8_t *cb;
	int rc;

	if (size > sizeof(buf))
		return -EINVAL;
	if (!(cb = mem_peek(cc->m, code, size))) {
		if ((rc = mem_read(cc->m, code, buf, size)) < 0)
			return rc;
		cb = buf;
	}
	memset(id, 0, sizeof(*id));
	id->type = field_u64(cb, L->obj.ob_type);
	id->filename = field_u64(cb, L->code.filename);
	id->name = field_u64(cb, L->code.qualname != NONE ? L->code.qualname : L->code.name);
	id->linetable = field_u64(cb, L->code.linetable);
	id->firstlineno = field_i32(cb, L->code.firstlineno);
	return 0;
}

static bool same_identity(const struct code_identity *a, const struct code_identity *b)
{
	return a->type == b->type && a->filename == b->filename && a->name == b->name &&
	       a->linetable == b->linetable && a->firstlineno == b->firstlineno;
}

static int check_type(struct code_cache *cc, uint64_t code, uint64_t type)
{
	char name[16];

	if (cc->code_type)
		return type == cc->code_type ? 0 : -EINVAL;
	if (py_type_name(&cc->c, code, name, sizeof(name)) < 0 || strcmp(name, "code") != 0)
		return -EINVAL;
	cc->code_type = type;
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

/* Decode the code object into slot e.  On failure an occupied slot stays
 * occupied -- emptying it would cut the linear-probing chain and lose the
 * entries behind it -- but can never match: its identity is zeroed. */
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
		uint64_t addr = e->addr;

		entry_clear(&ne);
		entry_clear(e);
		e->addr = addr;
		return rc;
	}
	entry_clear(e);
	*e = ne;
	e->addr = code;
	e->last_offset = INT64_MIN;
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
	e->lines = xrealloc(e->lines, (e->nlines + 1) * sizeof(*e->lines));
	e->lines[e->nlines++] = (struct line_frame){ line, id };
	return id;
}

int code_cache_frame(struct code_cache *cc, uint64_t code, uint64_t lasti, uint32_t *frame_id)
{
	struct code_identity id;
	struct code_entry *e;
	int rc;

	if ((rc = read_identity(cc, code, &id)) < 0)
		return rc;
	if ((rc = check_type(cc, code, id.type)) < 0)
		return rc;
	e = slot_for(cc, code);
	if (e->addr == code && same_identity(&e->id, &id)) {
		cc->hits++;
	} else {
		if (!e->addr) {
			if (cc->used >= MAX_ENTRIES) {
				/* A program making code objects without end:
				 * start over rather than grow forever. */
				for (uint32_t i = 0; i < cc->nslots; i++)
					entry_clear(&cc->slots[i]);
				cc->used = 0;
				e = slot_for(cc, code);
			}
			if ((cc->used + 1) * 2 > cc->nslots) {
				grow(cc);
				e = slot_for(cc, code);
			}
			cc->used++;
		}
		if ((rc = decode(cc, e, code, &id)) < 0) {
			/* A new slot stays empty; keep the count honest. */
			if (!e->addr)
				cc->used--;
			return rc;
		}
	}
	*frame_id = entry_frame_id(cc, e, entry_line(cc, e, frame_offset(cc, code, lasti)));
	return 0;
}
