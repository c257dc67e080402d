/* Code objects: a frame's function name, file and line, and its locals. */
#include "python/pystack_int.h"
#include "interp/linetable.h"
#include "process/mem.h"
#include "python/codecache.h"
#include "python/pyobj.h"
#include "python/deeprepr.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LINETABLE_MAX (1u << 20)
#define LOCALS_MAX 256
/* Characters of a str (bytes of a bytes) a local's repr shows: every
 * byte value, quoted, is 256. */
#define REPR_MAX_CHARS 1024

/* co_flags bits for *args and **kwargs. */
#define CO_VARARGS 0x04
#define CO_VARKEYWORDS 0x08
/* co_localspluskinds: a plain local (or argument). */
#define CO_FAST_LOCAL 0x20

/* Most line-table bytes one dump decodes: real dumps use well under a
 * megabyte; corrupt memory could otherwise offer a megabyte a frame. */
#define WALK_TABLE_BUDGET (64ull << 20)

static int code_line(struct walk *w, const struct code_identity *id, int64_t offset)
{
	const struct py_layout *L = w->c.L;
	int firstlineno = id->firstlineno;
	uint64_t table = id->linetable;
	uint8_t *bytes;
	size_t len;
	int rc;

	/* A frame that has not run its first instruction is at its def line. */
	if (offset < 0)
		return firstlineno;
	if (offset > UINT32_MAX)
		return -1;
	if (!w->have_table || table != w->table_addr || firstlineno != w->table_first) {
		if (w->table_work > WALK_TABLE_BUDGET)
			return -1;
		linetable_ranges_free(&w->ranges);
		w->have_table = false;
		if (py_bytes(&w->c, table, LINETABLE_MAX, &bytes, &len) < 0)
			return -1;
		w->table_work += len;
		rc = linetable_ranges(L->lines, bytes, len, firstlineno, &w->ranges);
		free(bytes);
		if (rc < 0)
			return -1;
		w->have_table = true;
		w->table_addr = table;
		w->table_first = firstlineno;
	}
	return linetable_ranges_line(&w->ranges, (uint32_t)offset);
}

static int read_locals(struct walk *w, const uint8_t *cb, uint64_t frame,
		       struct py_frame *pf);

int read_code(struct walk *w, uint64_t code, uint64_t lasti, uint64_t frame,
	      struct py_frame *pf)
{
	const struct py_layout *L = w->c.L;
	/* Its identity and what read_locals() reads, in one read. */
	uint32_t offs[] = { L->code.argcount, L->code.kwonlyargcount, L->code.nlocals,
			    L->code.flags, L->code.varnames, L->code.localspluskinds };
	uint8_t cb[512];
	uint32_t size = layout_span(offs, ARRAY_SIZE(offs));
	struct code_identity id;
	int64_t offset;
	int rc;

	if (size < code_identity_span(L))
		size = code_identity_span(L);
	if (size > sizeof(cb))
		return -EINVAL;
	if ((rc = mem_read(w->c.m, code, cb, size)) < 0)
		return rc;
	code_identity_parse(L, cb, &id);
	if ((rc = code_type_check(&w->c, &w->code_type, code, id.type)) < 0)
		return rc;
	pf->code = code;
	if ((rc = py_str(&w->c, id.name, NAME_MAX_CHARS, &pf->function)) < 0)
		return rc;
	if ((rc = py_str(&w->c, id.filename, NAME_MAX_CHARS, &pf->file)) < 0)
		return rc;
	switch (L->lasti) {
	case LASTI_BYTES:
		offset = (int32_t)lasti;
		break;
	case LASTI_UNITS:
		offset = (int32_t)lasti < 0 ? -1 : (int64_t)(int32_t)lasti * 2;
		break;
	default:
		offset = (int64_t)(lasti - (code + L->code.code_adaptive));
		break;
	}
	pf->line = code_offset_plausible(L, &id, offset) ? code_line(w, &id, offset) : -1;
	if (w->o->locals)
		read_locals(w, cb, frame, pf);
	return 0;
}

/* --- locals --------------------------------------------------------------- */

static int read_locals(struct walk *w, const uint8_t *cb, uint64_t frame,
		       struct py_frame *pf)
{
	const struct py_layout *L = w->c.L;
	uint64_t names = field_u64(cb, L->code.varnames);
	int32_t flags = field_i32(cb, L->code.flags);
	int64_t nargs = (int64_t)field_i32(cb, L->code.argcount) + field_i32(cb, L->code.kwonlyargcount);
	uint8_t kinds[LOCALS_MAX];
	int (*repr)(const struct pyctx *, uint64_t, size_t, char **, char **);
	int64_t n;
	int rc;

	nargs += !!(flags & CO_VARARGS) + !!(flags & CO_VARKEYWORDS);
	if ((rc = py_varsize(&w->c, names, &n)) < 0)
		return rc;
	if (L->code.nlocals != NONE && field_i32(cb, L->code.nlocals) < n)
		n = field_i32(cb, L->code.nlocals);
	if (n < 0)
		return -EINVAL;
	if (n > LOCALS_MAX)
		n = LOCALS_MAX;
	if (L->code.localspluskinds != NONE) {
		uint8_t *k;
		size_t klen;

		if ((rc = py_bytes(&w->c, field_u64(cb, L->code.localspluskinds), LOCALS_MAX, &k, &klen)) < 0)
			return rc;
		if ((int64_t)klen < n)
			n = (int64_t)klen;
		memcpy(kinds, k, n);
		free(k);
	} else {
		memset(kinds, CO_FAST_LOCAL, sizeof(kinds));
	}
	repr = w->o->deep_locals ? py_repr_deep : py_repr;
	pf->locals = xcalloc(n ? n : 1, sizeof(*pf->locals));
	for (int64_t i = 0; i < n; i++) {
		struct py_local *lv = &pf->locals[pf->nlocals];
		uint64_t nameobj, value;

		if (!(kinds[i] & CO_FAST_LOCAL))
			continue;
		if (mem_read_u64(w->c.m, frame + L->frame.localsplus + 8 * i, &value) < 0)
			break;
		if (L->frame.code_tagged)
			value &= ~(uint64_t)3;
		if (!value)
			continue;	/* not bound yet */
		if (py_tuple_item(&w->c, names, i, &nameobj) < 0 ||
		    py_str(&w->c, nameobj, NAME_MAX_CHARS, &lv->name) < 0)
			continue;
		if (repr(&w->c, value, REPR_MAX_CHARS, &lv->type, &lv->repr) < 0) {
			lv->type = xstrdup("?");
			lv->repr = xstrdup("<unreadable>");
		}
		lv->arg = i < nargs;
		pf->nlocals++;
	}
	return 0;
}
