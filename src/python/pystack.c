/* The interpreter walk: _PyRuntime -> interpreter -> thread states ->
 * frames -> code objects -> names and lines.
 *
 * Everything read here comes from another process that keeps running (with
 * --nonblocking) or may be corrupt, so every pointer is checked by reading
 * through it, every count is bounded, and chains are checked for cycles.
 * Version differences come only from the layout table.
 */
#include "python/pystack.h"
#include "interp/linetable.h"
#include "process/mem.h"
#include "python/codecache.h"
#include "python/pyobj.h"
#include "util/hashidx.h"
#include "python/deeprepr.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_CHARS 4096
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

struct walk {
	struct pyctx c;
	const struct pyinterp *pi;
	const struct walk_opts *o;
	uint64_t code_type;	/* PyCode_Type once seen (code_type_check()) */
	int frames_left;	/* for the whole walk: corrupt memory can
				 * otherwise make one dump take hours */
	uint64_t table_addr;	/* the last line table decoded, kept: frames */
	int table_first;	/* of one code object (recursion) share it */
	bool have_table;
	struct lt_ranges ranges;
	uint64_t table_work;	/* line-table bytes decoded so far */
};

/* Most line-table bytes one dump decodes: real dumps use well under a
 * megabyte; corrupt memory could otherwise offer a megabyte a frame. */
#define WALK_TABLE_BUDGET (64ull << 20)

/* Most frames one dump decodes, over all threads. */
#define WALK_FRAME_BUDGET 65536

/* Brent's cycle detection over a chain of addresses. */
struct cycle {
	uint64_t tortoise;
	unsigned power, lam;
};

static void cycle_init(struct cycle *cy, uint64_t first)
{
	cy->tortoise = first;
	cy->power = 1;
	cy->lam = 0;
}

static bool cycle_step(struct cycle *cy, uint64_t next)
{
	if (next == cy->tortoise)
		return true;
	if (++cy->lam == cy->power) {
		cy->tortoise = next;
		cy->power *= 2;
		cy->lam = 0;
	}
	return false;
}

/* --- code objects --------------------------------------------------------- */

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

/* Fill pf from the code object at `code`; lasti as the frame stores it. */
static int read_code(struct walk *w, uint64_t code, uint64_t lasti, uint64_t frame,
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
	pf->line = code_line(w, &id, offset);
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

/* --- frames --------------------------------------------------------------- */

/* Raw fields of one frame, whatever the model. */
struct raw_frame {
	uint64_t code, back, lasti;
	int owner;
};

static int read_raw_frame(struct mem *m, const struct py_layout *L, uint64_t frame,
			  struct raw_frame *rf)
{
	uint32_t offs[] = { L->frame.back, L->frame.code, L->frame.lasti, L->frame.owner };
	uint8_t buf[256];
	const uint8_t *fb;
	uint32_t size = layout_span(offs, ARRAY_SIZE(offs));
	int rc;

	if (size > sizeof(buf))
		return -EINVAL;
	if (!(fb = mem_peek(m, frame, size))) {
		if ((rc = mem_read(m, frame, buf, size)) < 0)
			return rc;
		fb = buf;
	}
	rf->back = field_u64(fb, L->frame.back);
	rf->code = field_u64(fb, L->frame.code);
	if (L->frame.code_tagged)
		rf->code &= ~(uint64_t)3;
	rf->lasti = L->lasti == LASTI_PTR ? field_u64(fb, L->frame.lasti)
					  : (uint64_t)(uint32_t)field_i32(fb, L->frame.lasti);
	rf->owner = L->frame.owner != NONE ? fb[L->frame.owner] : 0;
	return 0;
}

enum walk_end pystack_walk(struct mem *m, const struct py_layout *L, uint64_t frame,
			   int max, pyframe_fn fn, void *arg, int *nframes, int *rcp)
{
	struct cycle cy;
	int steps = 0, rc;

	*nframes = 0;
	*rcp = 0;
	if (max <= 0)
		max = PYSTACK_MAX_DEPTH;
	cycle_init(&cy, frame);
	while (frame) {
		struct raw_frame rf;

		/* Shims and skipped frames count too, so garbage cannot spin. */
		if (++steps > 4 * max)
			return WALK_TRUNCATED;
		if ((rc = read_raw_frame(m, L, frame, &rf)) < 0) {
			*rcp = rc;
			return WALK_READ_ERROR;
		}
		/* 3.11/3.12: a frame pushed but not started yet is not shown
		 * by the interpreter either. */
		if (L->lasti == LASTI_PTR && L->minor <= 12 &&
		    (int64_t)(rf.lasti - (rf.code + L->code.code_adaptive)) < 0)
			rf.code = 0;
		if (rf.owner < L->frame.owner_shim && rf.code) {
			if (*nframes >= max)
				return WALK_TRUNCATED;
			if ((rc = fn(arg, frame, rf.code, rf.lasti)) < 0) {
				*rcp = rc;
				return WALK_VISIT_ERROR;
			}
			++*nframes;
		}
		frame = rf.back;
		if (frame && cycle_step(&cy, frame))
			return WALK_LOOP;
	}
	return WALK_DONE;
}

void py_frame_release(struct py_frame *f)
{
	for (int k = 0; k < f->nlocals; k++) {
		free(f->locals[k].name);
		free(f->locals[k].type);
		free(f->locals[k].repr);
	}
	free(f->locals);
	free(f->function);
	free(f->file);
}

/* The dump's visitor: decode every frame in full. */
struct decode_arg {
	struct walk *w;
	struct py_thread *t;
	size_t cap;
};

static int decode_frame(void *arg, uint64_t frame, uint64_t code, uint64_t lasti)
{
	struct decode_arg *d = arg;
	struct py_thread *t = d->t;
	struct py_frame pf = { 0 };
	int rc = read_code(d->w, code, lasti, frame, &pf);

	if (rc < 0) {
		py_frame_release(&pf);
		return rc;
	}
	ALLOC_GROW(t->frames, t->nframes + 1, d->cap);
	t->frames[t->nframes++] = pf;
	return 0;
}

/* Append the frames of one thread state to t, at most max_depth in all. */
static void walk_part(struct walk *w, const struct py_tstate *ts, struct py_thread *t)
{
	struct decode_arg d = { w, t, t->nframes };
	int first = t->nframes, n, rc;
	int max = (w->o->max_depth > 0 ? w->o->max_depth : PYSTACK_MAX_DEPTH) - t->nframes;

	if (ts->frame_err < 0) {
		t->error = xasprintf("cannot read the current frame (%s)", strerror(-ts->frame_err));
		return;
	}
	if (!ts->frame)
		return;
	if (w->frames_left <= 0 || max <= 0) {
		t->truncated = true;
		return;
	}
	if (max > w->frames_left)
		max = w->frames_left;
	w->frames_left -= max;	/* given back below for what was not used */
	switch (pystack_walk(w->c.m, w->c.L, ts->frame, max, decode_frame, &d, &n, &rc)) {
	case WALK_DONE:
		break;
	case WALK_TRUNCATED:
		t->truncated = true;
		break;
	case WALK_LOOP:
		t->error = xstrdup("frame chain loops");
		break;
	case WALK_READ_ERROR:
		t->error = xasprintf("cannot read a frame (%s)", strerror(-rc));
		break;
	case WALK_VISIT_ERROR:
		t->error = xasprintf("cannot read a code object (%s)", strerror(-rc));
		break;
	}
	w->frames_left += max - (t->nframes - first);
	for (int i = first; i < t->nframes; i++)
		t->frames[i].interp = ts->interp;
}

/* One OS thread: its thread states ts[0..ts->nparts), innermost first.  A
 * part that ends early (an error, the depth limit) ends the stack there:
 * frames below a gap would be shown as called from the wrong place. */
static void walk_thread(struct walk *w, const struct py_tstate *ts, struct py_thread *t)
{
	t->tstate = ts->addr;
	t->ident = ts->ident;
	t->interps = xcalloc(ts->nparts, sizeof(*t->interps));
	for (int p = 0; p < ts->nparts; p++) {
		t->interps[t->ninterps++] = ts[p].interp;
		t->gil |= ts[p].gil;
		t->gc |= ts[p].gc;
		if (!t->tid)
			t->tid = ts[p].tid;
		if (!t->error && !t->truncated)
			walk_part(w, &ts[p], t);
	}
}

/* --- one OS thread in several interpreters -------------------------------- */

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

/* Gather each OS thread's thread states, listed interpreter by interpreter
 * (ts[0..nmain) the main one's), into runs in call order.  The main
 * interpreter lists an OS thread once, so only the others' thread states
 * are looked up: about n * (n - nmain) comparisons. */
static void pystack_stitch(struct mem *m, const struct py_layout *L, struct py_tstate *ts,
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

/* --- threads -------------------------------------------------------------- */

static bool addr_listed(const uint64_t *addrs, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (addrs[i] == addr)
			return true;
	return false;
}

/* The interpreters as _PyRuntime lists them: the newest first, the main
 * one last.  Returns their count (0 before the first is made), or a
 * negative errno when the list's head is unreadable.  The chain comes from
 * the target: an address seen twice ends it, so does max. */
static int list_interps(struct mem *m, const struct pyinterp *pi, uint64_t *out, int max)
{
	const struct py_layout *L = &pi->layout;
	uint64_t interp;
	int n = 0, rc;

	rc = mem_read_u64(m, pi->runtime + L->runtime.interpreters_head, &interp);
	if (rc < 0)
		return rc;
	while (interp && n < max && !addr_listed(out, n, interp)) {
		out[n++] = interp;
		if (mem_read_u64(m, interp + L->interp.next, &interp) < 0)
			break;
	}
	return n;
}

/* This interpreter's GIL as one read (its fields are neighbours: a copy
 * of them is of one moment): who holds it (0: nobody), who took it last,
 * and how many times a thread other than the last holder has taken it.
 * Before 3.12 the one GIL is in _PyRuntime; since, each interpreter
 * points at its own or at the main interpreter's. */
struct gil_state {
	uint64_t holder, last, switches;
	uint64_t holder_at;	/* where last was read */
	bool counted;		/* switches (and last) were read */
};

static void read_gil(struct mem *m, const struct pyinterp *pi, uint64_t interp,
		     struct gil_state *g)
{
	const struct py_layout *L = &pi->layout;
	uint32_t offs[3];
	uint64_t base = 0;
	uint8_t b[64];
	uint32_t from, size;

	memset(g, 0, sizeof(*g));
	if (L->runtime.gil_locked != NONE) {
		base = pi->runtime;
		offs[0] = L->runtime.gil_locked;
		offs[1] = L->runtime.gil_holder;
		offs[2] = L->runtime.gil_switches;
	} else if (mem_read_u64(m, interp + L->interp.gil_ptr, &base) < 0 || !base) {
		return;
	} else {
		offs[0] = L->gil.locked;
		offs[1] = L->gil.holder;
		offs[2] = L->gil.switches;
	}
	from = offs[0] < offs[1] ? offs[0] : offs[1];
	size = layout_span(offs, 3);
	if (size - from > sizeof(b) || mem_read(m, base + from, b, size - from) < 0)
		return;
	g->last = field_u64(b, offs[1] - from);
	g->holder_at = base + offs[1];
	g->holder = field_i32(b, offs[0] - from) ? g->last : 0;
	if (offs[2] != NONE) {
		g->switches = field_u64(b, offs[2] - from);
		g->counted = true;
	}
}

static bool tstate_listed(const struct py_tstate *ts, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (ts[i].addr == addr)
			return true;
	return false;
}

/* The innermost frame of a thread, from its PyThreadState's frame field
 * f. */
static int first_frame(struct mem *m, const struct py_layout *L, uint64_t f,
		       struct py_tstate *t)
{
	t->cframe = 0;
	/* 3.11 and 3.12 reach the frame through the thread's _PyCFrame. */
	if (L->tstate.cframe_frame != NONE && f) {
		t->cframe = f;
		return mem_read_u64(m, f + L->tstate.cframe_frame, &t->frame);
	}
	t->frame = f;
	return 0;
}

int pystack_reread_frame(struct mem *m, const struct py_layout *L, struct py_tstate *t)
{
	uint64_t f = 0;

	t->frame = 0;
	t->cframe = 0;
	t->frame_err = mem_read_u64(m, t->addr + L->tstate.frame, &f);
	if (t->frame_err == 0)
		t->frame_err = first_frame(m, L, f, t);
	return t->frame_err;
}

/* Is a collection under way in this interpreter (the process's one GC
 * before 3.9)?  Any value but 0 and 1 is not the int CPython keeps
 * there: read as no.  *at: where the flag was read. */
static bool gc_running(struct mem *m, const struct pyinterp *pi, uint64_t interp, uint64_t *at)
{
	const struct py_layout *L = &pi->layout;
	int32_t collecting = 0;
	int rc = -ENOENT;

	*at = 0;
	if (L->interp.gc_collecting != NONE)
		*at = interp + L->interp.gc_collecting;
	else if (L->runtime.gc_collecting != NONE)
		*at = pi->runtime + L->runtime.gc_collecting;
	if (*at)
		rc = mem_read_i32(m, *at, &collecting);
	return rc == 0 && collecting == 1;
}

/* A thread state made for a thread not running yet: start_new_thread()
 * makes it in the creating thread, and the new thread binds it to itself
 * (its ident, 3.11+ also its native id) once it runs.  Until then it is no
 * thread, and has no frame.  3.12+ leave its ident 0; before, it carries
 * its creator's (3.11 its native id too).  A dump of a process starting
 * threads showed it as a second MainThread with no frames (3.8, 3.11),
 * or as thread 0 (3.12). */
static bool unbound(const struct py_tstate *ts, int n, int i)
{
	const struct py_tstate *t = &ts[i];

	if (t->frame || t->frame_err)
		return false;
	if (!t->ident)
		return true;
	for (int j = 0; j < n; j++)
		if (j != i && ts[j].ident == t->ident && ts[j].frame)
			return true;
	return false;
}

/* Leave out of ts[0..n) the thread states of threads not running yet. */
static int drop_unbound(struct py_tstate *ts, int n)
{
	bool gone[PYSTACK_MAX_THREADS];
	int k = 0;

	if (n > PYSTACK_MAX_THREADS)
		return n;
	for (int i = 0; i < n; i++)
		gone[i] = unbound(ts, n, i);
	for (int i = 0; i < n; i++)
		if (!gone[i])
			ts[k++] = ts[i];
	return k;
}

/* The thread states of one interpreter, up to max.  Returns the count, or
 * status_fail(EXIT_*) with a reason in err when not even the first could
 * be read. */
static int interp_tstates(struct mem *m, const struct pyinterp *pi, uint64_t interp,
			  struct py_tstate *out, int max, char *err, size_t errlen)
{
	const struct py_layout *L = &pi->layout;
	uint32_t offs[] = { L->tstate.next, L->tstate.interp, L->tstate.frame,
			    L->tstate.thread_id, L->tstate.native_thread_id };
	uint32_t tsize = layout_span(offs, ARRAY_SIZE(offs));
	struct gil_state gil;
	int64_t id = -1;
	uint64_t ts, gc_at;
	bool collecting;
	struct cycle cy;
	int n = 0, rc;

	if ((rc = mem_read_u64(m, interp + L->interp.threads_head, &ts)) < 0) {
		snprintf(err, errlen, "cannot read the interpreter state");
		return status_fail(exit_code_for_errno(rc));
	}
	if (tsize > 512) {
		snprintf(err, errlen, "thread state layout too large");
		return status_fail(EXIT_BAD_STATE);
	}
	if (mem_read_u64(m, interp + L->interp.id, (uint64_t *)&id) < 0 || id < 0)
		id = -1;
	read_gil(m, pi, interp, &gil);
	collecting = gc_running(m, pi, interp, &gc_at);
	cycle_init(&cy, ts);
	while (ts && n < max) {
		uint8_t tb[512];
		struct py_tstate *t;

		if ((rc = mem_read(m, ts, tb, tsize)) < 0) {
			if (n == 0) {
				snprintf(err, errlen, "cannot read a thread state");
				return status_fail(exit_code_for_errno(rc));
			}
			break;
		}
		/* Every thread state points back at its interpreter: a cheap
		 * proof that the offsets (and the pointer) are right. */
		if (field_u64(tb, L->tstate.interp) != interp) {
			if (n == 0) {
				snprintf(err, errlen, "thread state does not belong to the interpreter "
					 "(wrong layout for Python %s?)", pi->version);
				return status_fail(EXIT_BAD_STATE);
			}
			break;
		}
		/* Brent's check sees a loop only after going round it once;
		 * never list a thread state twice. */
		if (tstate_listed(out, n, ts))
			break;
		t = &out[n++];
		memset(t, 0, sizeof(*t));
		t->addr = ts;
		t->ident = field_u64(tb, L->tstate.thread_id);
		t->tid = t->tid_read = L->tstate.native_thread_id != NONE
			 ? (pid_t)field_u64(tb, L->tstate.native_thread_id) : 0;
		t->frame_err = first_frame(m, L, field_u64(tb, L->tstate.frame), t);
		t->interp = id;
		t->gil = gil.holder && gil.holder == ts;
		t->gil_counted = gil.counted;
		t->gil_last = gil.last == ts;
		t->gil_switches = gil.switches;
		t->gc = t->gil && collecting;
		if (t->gc) {
			t->gc_at = gc_at;
			t->gil_at = gil.holder_at;
		}
		t->nparts = 1;
		ts = field_u64(tb, L->tstate.next);
		if (ts && cycle_step(&cy, ts))
			break;
	}
	return drop_unbound(out, n);
}

/* Why there is no interpreter to read: not made yet, or torn down. */
static int no_interp(struct mem *m, const struct pyinterp *pi, char *err, size_t errlen)
{
	uint64_t fin = 0;

	/* Py_Finalize has torn the interpreter down: the process is on its
	 * way out, which is not the same as not started yet. */
	if (mem_read_u64(m, pi->runtime + pi->layout.runtime.finalizing, &fin) == 0 && fin) {
		snprintf(err, errlen, "the interpreter has shut down");
		return status_fail(EXIT_EXITED);
	}
	snprintf(err, errlen, "the interpreter is not initialised yet");
	return status_fail(EXIT_BAD_STATE);
}

int pystack_tstates(struct mem *m, const struct pyinterp *pi, struct py_tstate *out, int max,
		    uint64_t *gil, char *err, size_t errlen)
{
	uint64_t interps[PYSTACK_MAX_INTERPS];
	int ni, n = 0, nmain = 0, first_rc = 0;

	*gil = 0;
	ni = list_interps(m, pi, interps, ARRAY_SIZE(interps));
	if (ni == 0)
		return no_interp(m, pi, err, errlen);
	if (ni < 0) {
		snprintf(err, errlen, "cannot read the interpreter state");
		return status_fail(exit_code_for_errno(ni));
	}
	/* The main interpreter's threads first, as before there were others.
	 * One that cannot be read is left out (a garbage `next`, one being
	 * made or destroyed), unless none can. */
	for (int i = ni - 1; i >= 0 && n < max; i--) {
		char why[256];
		int k = interp_tstates(m, pi, interps[i], out + n, max - n, why, sizeof(why));

		if (k < 0) {
			if (!first_rc) {
				first_rc = k;
				snprintf(err, errlen, "%s", why);
			}
			continue;
		}
		n += k;
		if (i == ni - 1)
			nmain = n;
	}
	if (n == 0 && first_rc)
		return first_rc;
	for (int i = 0; i < n && !*gil; i++)
		if (out[i].gil)
			*gil = out[i].addr;
	if (ni > 1)
		pystack_stitch(m, &pi->layout, out, n, nmain);
	return n;
}

int pystack_threads(struct mem *m, const struct pyinterp *pi, const struct walk_opts *o,
		    struct py_thread **threadsp, char *err, size_t errlen)
{
	struct walk w = { .c = { m, &pi->layout }, .pi = pi, .o = o,
			  .frames_left = WALK_FRAME_BUDGET };
	struct py_tstate *ts = xcalloc(PYSTACK_MAX_THREADS, sizeof(*ts));
	struct py_thread *threads;
	uint64_t holder;
	int n, nt = 0;

	*threadsp = NULL;
	n = pystack_tstates(m, pi, ts, PYSTACK_MAX_THREADS, &holder, err, errlen);
	if (n < 0) {
		free(ts);
		return n;
	}
	threads = n ? xcalloc(n, sizeof(*threads)) : NULL;
	for (int i = 0; i < n; i++)
		if (ts[i].nparts)
			walk_thread(&w, &ts[i], &threads[nt++]);
	linetable_ranges_free(&w.ranges);
	free(ts);
	*threadsp = threads;
	return nt;
}

/* threading._active of one interpreter, or 0. */
static uint64_t active_threads(struct pyctx *c, uint64_t interp)
{
	uint64_t modules, threading, md, active;

	if (mem_read_u64(c->m, interp + c->L->interp.modules, &modules) < 0 || !modules)
		return 0;
	if (py_dict_get_str(c, modules, "threading", &threading) < 0 || !threading)
		return 0;
	if (mem_read_u64(c->m, threading + c->L->o.module_dict, &md) < 0 || !md)
		return 0;
	if (py_dict_get_str(c, md, "_active", &active) < 0)
		return 0;
	return active;
}

void pystack_names(struct mem *m, const struct pyinterp *pi, const uint64_t *idents,
		   int n, char **names)
{
	struct pyctx c = { m, &pi->layout };
	uint64_t interps[PYSTACK_MAX_INTERPS];
	int ni = list_interps(m, pi, interps, ARRAY_SIZE(interps));

	for (int i = 0; i < n; i++)
		names[i] = NULL;
	for (int k = ni - 1; k >= 0; k--) {
		uint64_t active = active_threads(&c, interps[k]);

		for (int i = 0; active && i < n; i++) {
			uint64_t obj, name;

			if (names[i])
				continue;
			if (py_dict_get_int(&c, active, (int64_t)idents[i], &obj) < 0 || !obj)
				continue;
			if (py_instance_attr(&c, obj, "_name", &name) < 0 || !name)
				continue;
			py_str(&c, name, NAME_MAX_CHARS, &names[i]);
		}
	}
}

void pystack_thread_names(struct mem *m, const struct pyinterp *pi,
			  struct py_thread *threads, int n)
{
	uint64_t *idents = xcalloc(n ? n : 1, sizeof(*idents));
	char **names = xcalloc(n ? n : 1, sizeof(*names));

	for (int i = 0; i < n; i++)
		idents[i] = threads[i].ident;
	pystack_names(m, pi, idents, n, names);
	for (int i = 0; i < n; i++) {
		free(threads[i].name);
		threads[i].name = names[i];
	}
	free(names);
	free(idents);
}

/* glibc keeps the kernel thread id at this offset in struct pthread (the
 * pthread_t value) on x86-64; other C libraries are found by searching. */
#define GLIBC_PTHREAD_TID_OFFSET 0x2d0
#define PTHREAD_SEARCH_BYTES 1024

static bool in_set(const pid_t *tids, int n, pid_t tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* An offset counts if it gives most threads a tid of this process, each
 * its own.  Threads come and go while they are read: one listed that has
 * ended since reads 0 there (the kernel clears the id at exit), one
 * started after the process's threads were listed reads an id not in
 * tids, and a thread state listed twice (its ident reused by a thread
 * started since) reads the same descriptor; none of them may make the
 * offset fail, or a process whose threads come and go would never fit.
 * A wrong offset gives pointers and flags, hardly ever a tid, and two
 * descriptors never hold the same one.  glibc's own offset needs one
 * thread to show its id; one found by searching needs most of them (in a
 * process whose threads come and go, the search is repeated until they
 * do). */
static bool offset_fits(int n, const uint64_t *idents, const uint8_t (*blocks)[PTHREAD_SEARCH_BYTES],
			const pid_t *tids, int ntids, unsigned off, bool one_will_do)
{
	int matched = 0;

	for (int i = 0; i < n; i++) {
		pid_t tid;

		memcpy(&tid, blocks[i] + off, sizeof(tid));
		if (!tid || !in_set(tids, ntids, tid))
			continue;
		for (int j = 0; j < i; j++) {
			pid_t other;

			memcpy(&other, blocks[j] + off, sizeof(other));
			if (other == tid && idents[j] != idents[i])
				return false;
		}
		matched++;
	}
	return matched > 0 && (one_will_do || 2 * matched >= n);
}

int pystack_tid_offset(struct mem *m, const uint64_t *idents, int n, const pid_t *tids, int ntids)
{
	uint8_t (*blocks)[PTHREAD_SEARCH_BYTES];
	int off = -1;

	if (n == 0)
		return -1;
	blocks = xcalloc(n, sizeof(*blocks));
	/* One unreadable (an ended thread's stack unmapped) reads as zeros:
	 * an ended thread's, passed over by offset_fits(). */
	for (int i = 0; i < n; i++)
		if (idents[i] && mem_read(m, idents[i], blocks[i], PTHREAD_SEARCH_BYTES) < 0)
			memset(blocks[i], 0, sizeof(blocks[i]));
	if (offset_fits(n, idents, (const void *)blocks, tids, ntids, GLIBC_PTHREAD_TID_OFFSET,
			true)) {
		off = GLIBC_PTHREAD_TID_OFFSET;
		goto out;
	}
	for (unsigned o = 0; o < PTHREAD_SEARCH_BYTES; o += 4) {
		if (offset_fits(n, idents, (const void *)blocks, tids, ntids, o, false)) {
			off = (int)o;
			break;
		}
	}
out:
	free(blocks);
	return off;
}

void py_threads_free(struct py_thread *threads, int n)
{
	for (int i = 0; i < n; i++) {
		struct py_thread *t = &threads[i];

		for (int j = 0; j < t->nframes; j++)
			py_frame_release(&t->frames[j]);
		free(t->frames);
		free(t->interps);
		free(t->name);
		free(t->error);
	}
	free(threads);
}

/* --- frames one at a time -------------------------------------------------- */

/* Thousands of tasks suspended in the same few places decode the same
 * (code, lasti) over and over, alternating line tables the walk's
 * one-table cache cannot keep: a small direct-mapped memo, each entry
 * holding the identity of the code object it was decoded from (see
 * codecache.h).  A hit must read that identity unchanged (the same type,
 * names, file, line table and first line at the same addresses), so a
 * code object reborn at the address is decoded anew. */
#define MEMO_SLOTS 256

struct frame_memo {
	uint64_t code, lasti;
	struct code_identity id;
	char *function, *file;
	int line;
	bool used;
};

struct frame_decoder {
	struct walk w;
	struct walk_opts o;
	struct frame_memo memo[MEMO_SLOTS];
};

struct frame_decoder *frame_decoder_new(struct mem *m, const struct pyinterp *pi)
{
	struct frame_decoder *d = xcalloc(1, sizeof(*d));

	d->w = (struct walk){ .c = { m, &pi->layout }, .pi = pi, .o = &d->o,
			      .frames_left = WALK_FRAME_BUDGET };
	return d;
}

static void memo_fill(struct frame_memo *e, uint64_t code, uint64_t lasti,
		      const struct code_identity *id, const struct py_frame *pf)
{
	free(e->function);
	free(e->file);
	e->code = code;
	e->lasti = lasti;
	e->id = *id;
	e->function = xstrdup(pf->function);
	e->file = xstrdup(pf->file);
	e->line = pf->line;
	e->used = true;
}

int frame_decode(struct frame_decoder *d, uint64_t frame, uint64_t code, uint64_t lasti,
		 struct py_frame *out)
{
	struct frame_memo *e = &d->memo[hash_u64(code * 31 + lasti) % MEMO_SLOTS];
	struct code_identity id;
	bool have_id;
	int rc;

	memset(out, 0, sizeof(*out));
	have_id = code_identity_read(d->w.c.m, d->w.c.L, code, &id) == 0;
	if (have_id && e->used && e->code == code && e->lasti == lasti &&
	    code_identity_same(&e->id, &id)) {
		out->code = code;
		out->function = xstrdup(e->function);
		out->file = xstrdup(e->file);
		out->line = e->line;
		return 0;
	}
	rc = read_code(&d->w, code, lasti, frame, out);
	if (rc < 0) {
		py_frame_release(out);
		return rc;
	}
	if (have_id && out->function && out->file)
		memo_fill(e, code, lasti, &id, out);
	return 0;
}

void frame_decoder_free(struct frame_decoder *d)
{
	if (!d)
		return;
	for (int i = 0; i < MEMO_SLOTS; i++) {
		free(d->memo[i].function);
		free(d->memo[i].file);
	}
	linetable_ranges_free(&d->w.ranges);
	free(d);
}
