/* Merging native and Python stacks; see mixed.h. */
#include "native/mixed.h"
#include "process/mem.h"
#include "native/unwind.h"
#include "process/pause.h"
#include "python/pystack.h"
#include "native/symbolize.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

/* --- classifying native frames ------------------------------------------ */

/* CPython's call machinery, 3.7 to 3.14: what runs between a Python frame
 * and the next when one calls the other through C.  Only frames in the
 * interpreter's own object are matched, by name without the compiler's
 * clone suffixes (.constprop.0, .isra.0, .part.0, .cold, .lto_priv.0). */
static const char *plumbing[] = {
	"PyEval_EvalCode", "PyEval_EvalCodeEx", "PyEval_EvalFrame", "PyEval_EvalFrameEx",
	"_PyEval_EvalCode", "_PyEval_EvalCodeWithName", "_PyEval_EvalFrame", "_PyEval_Vector",
	"PyEval_CallObjectWithKeywords", "PyEval_CallFunction", "PyEval_CallMethod",
	"function_code_fastcall", "_PyFunction_Vectorcall", "_PyFunction_FastCall",
	"_PyFunction_FastCallDict", "_PyFunction_FastCallKeywords",
	"call_function", "do_call_core", "fast_function",
	"PyObject_Call", "_PyObject_Call", "PyObject_CallObject", "PyObject_CallFunction",
	"PyObject_CallFunctionObjArgs", "_PyObject_CallFunction_SizeT", "PyObject_CallMethod",
	"PyObject_CallMethodObjArgs", "_PyObject_CallMethod_SizeT", "_PyObject_CallMethodId",
	"_PyObject_CallMethodIdObjArgs", "_PyObject_CallMethod", "PyObject_CallOneArg",
	"PyObject_CallNoArgs", "_PyObject_CallNoArg", "_PyObject_CallNoArgs",
	"_PyObject_CallOneArg", "object_vacall", "callmethod",
	"PyObject_Vectorcall", "PyObject_VectorcallDict", "PyObject_VectorcallMethod",
	"_PyObject_Vectorcall", "_PyObject_VectorcallTstate", "_PyObject_VectorcallDictTstate",
	"_PyObject_VectorcallMethod", "_PyObject_FastCall", "_PyObject_FastCallDict",
	"_PyObject_FastCallDictTstate", "_PyObject_FastCallKeywords", "_PyObject_FastCall_Prepend",
	"_PyObject_Call_Prepend", "_PyObject_MakeTpCall", "PyVectorcall_Call",
	"_PyVectorcall_Call", "_PyObject_VectorcallPrepend",
	"_Py_VectorCallInstrumentation_StackRefSteal", "_Py_VectorCall_StackRefSteal",
	"_PyCFunction_FastCallDict", "_PyCFunction_FastCallKeywords",
	"_PyMethodDef_RawFastCallDict", "_PyMethodDef_RawFastCallKeywords",
	"_PyMethodDescr_FastCallKeywords", "PyCFunction_Call", "cfunction_call",
	"cfunction_call_varargs", "cfunction_vectorcall_FASTCALL",
	"cfunction_vectorcall_FASTCALL_KEYWORDS", "cfunction_vectorcall_FASTCALL_KEYWORDS_METHOD",
	"cfunction_vectorcall_NOARGS", "cfunction_vectorcall_O",
	"method_vectorcall", "method_call", "method_vectorcall_FASTCALL",
	"method_vectorcall_FASTCALL_KEYWORDS", "method_vectorcall_FASTCALL_KEYWORDS_METHOD",
	"method_vectorcall_NOARGS", "method_vectorcall_O", "method_vectorcall_VARARGS",
	"method_vectorcall_VARARGS_KEYWORDS", "methoddescr_call", "wrapperdescr_call",
	"wrapper_call", "type_call", "vectorcall_method", "vectorcall_unbound",
	"vectorcall_maybe", "call_unbound", "call_unbound_noarg", "call_method",
	"call_attribute", "property_descr_get", "property_descr_set",
	"_PyObject_CallFunctionVa", "_PyObject_CallMethodFormat", "PyObject_CallMethodNoArgs",
	"PyObject_CallMethodOneArg", "_PyObject_CallMethodIdNoArgs", "_PyObject_CallMethodIdOneArg",
	"gen_send_ex", "gen_send_ex2", "gen_send", "gen_iternext", "_PyGen_Send", "gen_throw",
	"_gen_throw", "coro_wrapper_send", "coro_wrapper_iternext", "PyIter_Send",
};

/* Does name, up to its first '.', equal want? */
static bool base_name_is(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (name[n] == 0 || name[n] == '.');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A sampler classifies every frame of every sample: binary search. */
static bool is_plumbing(const char *name)
{
	static bool sorted;
	char base[128];
	const char *key = base;
	size_t n = strcspn(name, ".");

	/* typeobject.c's slot_tp_* / slot_nb_* / slot_sq_* / slot_mp_*
	 * functions call a class's Python dunder methods. */
	if (!strncmp(name, "slot_", 5))
		return true;
	if (n >= sizeof(base))
		return false;
	if (!sorted) {
		qsort(plumbing, ARRAY_SIZE(plumbing), sizeof(*plumbing), cmp_str);
		sorted = true;
	}
	memcpy(base, name, n);
	base[n] = 0;
	return bsearch(&key, plumbing, ARRAY_SIZE(plumbing), sizeof(*plumbing), cmp_str) != NULL;
}

enum native_class merge_classify(const struct native_sym *ns, const char *interp_path)
{
	const char *f = ns->function;

	if (!f || !ns->path || !interp_path || strcmp(ns->path, interp_path) != 0)
		return NATIVE_OTHER;
	/* Including its .cold part, which runs in the same frame. */
	if (base_name_is(f, "_PyEval_EvalFrameDefault"))
		return NATIVE_EVAL;
	/* 3.14 built with clang's tail calls: each instruction is a function
	 * that tail-calls the next, one of them on the stack at a time, above
	 * the _PyEval_EvalFrameDefault that started them. */
	if (!strncmp(f, "_TAIL_CALL_", 11))
		return NATIVE_EVAL_PART;
	return is_plumbing(f) ? NATIVE_PLUMBING : NATIVE_OTHER;
}

/* --- grouping Python frames by eval call -------------------------------- */

/* Where eval calls begin, by version:
 *  - before 3.11 every frame has its own eval call;
 *  - 3.11: the first frame of an eval call has is_entry set;
 *  - 3.12+: an eval call links a shim frame, a local of its own, under its
 *    first frame (owner 3: CSTACK in 3.12/3.13, INTERPRETER in 3.14, whose
 *    CSTACK (4) is never set): the shim ends the group.  From 3.15 every
 *    chain also ends in the thread state's own base frame, owned by the
 *    interpreter too but no eval call's local: it ends no group. */
struct grouping {
	struct mem *m;
	const struct py_layout *L;
	uint64_t cursor;	/* next frame of the chain not looked at yet */
	uint64_t base;		/* the thread state's base frame, or 0 */
	int steps, max_steps;
	int cur;		/* frames in the group being filled */
	struct py_group *groups;
	int ngroups;
	size_t cap;
	int nframes;
};

static void close_group(struct grouping *g, uint64_t marker)
{
	ALLOC_GROW(g->groups, g->ngroups + 1, g->cap);
	g->groups[g->ngroups++] = (struct py_group){ g->cur, marker };
	g->cur = 0;
}

/* Look at the frame under the cursor: counted as a Python frame (visited
 * by the walk) or not.  Moves the cursor to the next frame. */
static int step_frame(struct grouping *g, bool visited)
{
	const struct py_layout *L = g->L;
	uint64_t frame = g->cursor, back;
	uint8_t flag = 0;

	if (++g->steps > g->max_steps)
		return -1;
	if (mem_read_u64(g->m, frame + L->frame.back, &back) < 0)
		return -1;
	if (visited) {
		g->cur++;
		g->nframes++;
	}
	if (L->frames == FRAMES_OBJECTS) {
		if (visited)
			close_group(g, 0);
	} else if (L->frame.is_entry != NONE) {
		if (mem_read_u8(g->m, frame + L->frame.is_entry, &flag) < 0)
			return -1;
		if (flag)
			close_group(g, 0);
	} else if (!visited) {
		if (mem_read_u8(g->m, frame + L->frame.owner, &flag) < 0)
			return -1;
		if (flag >= L->frame.owner_shim && frame != g->base)
			close_group(g, frame);
	}
	g->cursor = back;
	return 0;
}

static int visit(void *arg, uint64_t frame, const struct raw_frame *rf)
{
	struct grouping *g = arg;

	(void)rf;
	/* Frames the walk skipped (shims, frames not started) come first. */
	while (g->cursor && g->cursor != frame)
		if (step_frame(g, false) < 0)
			return -1;
	if (g->cursor != frame)
		return -1;
	return step_frame(g, true) < 0 ? -1 : 0;
}

/* 3.11: each eval call links a _PyCFrame, a local of its own, into the
 * thread state's chain; the last one (previous == NULL) is the thread
 * state's root_cframe, not on any stack.  Give the thread state's groups,
 * from group `first` on, one each. */
static int cframe_markers(struct grouping *g, const struct py_tstate *ts, int first)
{
	const struct py_layout *L = g->L;
	uint64_t cf, prev;
	int k = first;

	/* _PyCFrame is { int use_tracing; current_frame; previous; }. */
	if (mem_read_u64(g->m, ts->addr + L->tstate.frame, &cf) < 0)
		return -1;
	while (cf) {
		if (mem_read_u64(g->m, cf + L->tstate.cframe_frame + 8, &prev) < 0)
			return -1;
		if (!prev)
			break;	/* the root */
		if (k == g->ngroups)
			return -1;
		g->groups[k++].marker = cf;
		cf = prev;
	}
	return k == g->ngroups ? 0 : -1;
}

/* Group the frames of one thread state, after those of the parts before
 * it; max_depth frames at most for the whole thread. */
static int group_part(struct grouping *g, const struct py_tstate *ts, int max_depth)
{
	const struct py_layout *L = g->L;
	int first = g->ngroups, before = g->nframes, n, vrc;

	if (ts->frame_err < 0)
		return -1;
	if (!ts->frame)
		return 0;
	if (max_depth - before <= 0)
		return -1;
	g->base = 0;
	if (L->tstate.base_frame != NONE &&
	    mem_read_u64(g->m, ts->addr + L->tstate.base_frame, &g->base) < 0)
		return -1;
	g->cursor = ts->frame;
	if (pystack_walk(g->m, L, ts->frame, max_depth - before, visit, g, &n, &vrc) != WALK_DONE)
		return -1;
	/* The shims and unstarted frames below the last Python frame. */
	while (g->cursor)
		if (step_frame(g, false) < 0)
			return -1;
	/* Every Python frame belongs to an eval call: the outermost must
	 * close a group. */
	if (g->cur != 0 || g->nframes - before != n)
		return -1;
	if (L->frame.is_entry != NONE && L->tstate.cframe_frame != NONE)
		return cframe_markers(g, ts, first);
	return 0;
}

int merge_py_groups(struct mem *m, const struct py_layout *L, const struct py_tstate *ts,
		    int max_depth, struct py_group **groups, int *ngroups, int *nframes)
{
	struct grouping g = { .m = m, .L = L };
	int nparts = ts->nparts > 1 ? ts->nparts : 1, rc = 0;

	if (max_depth <= 0)
		max_depth = PYSTACK_MAX_DEPTH;
	/* pystack_walk allows 4 raw frames per visited one; so do we. */
	g.max_steps = 4 * max_depth + 4 * nparts;
	/* The parts of an OS thread in several interpreters are stacked on
	 * its C stack in this order too: their groups follow each other. */
	for (int p = 0; p < nparts && rc == 0; p++)
		rc = group_part(&g, &ts[p], max_depth);
	*groups = g.groups;
	*ngroups = g.ngroups;
	*nframes = g.nframes;
	return rc;
}

/* --- merging -------------------------------------------------------------- */

/* Which group each native frame's eval call runs (-1: not an eval frame),
 * from the markers: the frame whose stack holds group k's marker.  Returns
 * how many groups (from the innermost) were placed: fewer than ngroups
 * when the unwind ended below the rest's markers (it stopped early, in
 * code it could not unwind: JIT code, vfork), or -1. */
static int place_by_markers(const struct merge_native *nat, int nnative,
			    const struct py_group *groups, int ngroups, int *group_of,
			    char *err, size_t errlen)
{
	int i = 0;

	for (int k = 0; k < ngroups; k++) {
		uint64_t mk = groups[k].marker;

		/* Frame i's locals lie in [its sp, its caller's sp).  Markers
		 * go outwards as the frames do. */
		while (i + 1 < nnative && !(nat[i].sp <= mk && mk < nat[i + 1].sp))
			i++;
		if (i + 1 >= nnative) {
			/* Every eval frame has callers up to the thread's
			 * start: a marker past the last frame unwound means
			 * the unwind stopped short of it. */
			if (nnative > 0 && mk >= nat[nnative - 1].sp)
				return k;
			snprintf(err, errlen,
				 "interpreter call %d of %d not found on the native stack",
				 k + 1, ngroups);
			return -1;
		}
		if (group_of[i] >= 0) {
			snprintf(err, errlen, "two interpreter calls in one native frame");
			return -1;
		}
		group_of[i] = k;
	}
	return ngroups;
}

/* Without markers: the eval frames by name, the innermost group to the
 * innermost frame.  A unwind cut short (cut) may have fewer. */
static int place_by_names(const struct merge_native *nat, int nnative, int ngroups, bool cut,
			  int *group_of, char *err, size_t errlen)
{
	int k = 0, first = 0;

	for (int i = 0; i < nnative; i++)
		k += nat[i].cls == NATIVE_EVAL;
	/* One more: the innermost eval call has not linked its frame yet,
	 * or has unlinked it already (see unplaced_eval()). */
	if (k == ngroups + 1 && !cut)
		first = 1;
	else if (k != ngroups && !(cut && k < ngroups)) {
		snprintf(err, errlen,
			 "%d interpreter frame%s on the native stack but %d on the Python stack",
			 k, k == 1 ? "" : "s", ngroups);
		return -1;
	}
	k = 0;
	for (int i = 0; i < nnative; i++)
		if (nat[i].cls == NATIVE_EVAL && first-- <= 0)
			group_of[i] = k++;
	return k;
}

/* An eval frame that runs no group is allowed once, innermost of all
 * that do: that eval call is entering (its frame not linked yet) or
 * leaving (unlinked already, an exception unwinding in its .cold part),
 * and shows as the native frame it is.  Anywhere else the stacks do not
 * fit. */
static int unplaced_eval(const struct merge_native *nat, int nnative, const int *group_of,
			 char *err, size_t errlen)
{
	int inner = 0, outer = 0;
	bool placed = false;

	for (int i = 0; i < nnative; i++) {
		placed |= group_of[i] >= 0;
		if (nat[i].cls == NATIVE_EVAL && group_of[i] < 0)
			*(placed ? &outer : &inner) += 1;
	}
	if (outer || inner > 1) {
		snprintf(err, errlen, "an interpreter frame on the native stack runs no "
			 "Python frame");
		return -1;
	}
	return 0;
}

/* A partial merge's native frames that can be trusted: up to the first
 * anon one past the last frame a marker placed (frames beyond it were
 * found by guessing through a frame without unwind table).  Their number. */
static int vouched(const struct merge_native *nat, int nnative, const int *group_of)
{
	int last = -1;

	for (int i = 0; i < nnative; i++)
		if (group_of[i] >= 0)
			last = i;
	for (int i = last + 1; i < nnative; i++)
		if (nat[i].anon)
			return i + 1;
	return nnative;
}

int merge_stacks(const struct merge_native *nat, int nnative, bool cut,
		 const struct py_group *groups, int ngroups, int npy, struct merged_ref *out,
		 char *err, size_t errlen)
{
	int *group_of = xcalloc(nnative + 1, sizeof(*group_of));
	bool markers = ngroups > 0;
	int py = 0, n = 0, placed;

	for (int i = 0; i < nnative; i++)
		group_of[i] = -1;
	for (int k = 0; k < ngroups; k++)
		markers &= groups[k].marker != 0;
	placed = markers ? place_by_markers(nat, nnative, groups, ngroups, group_of, err, errlen)
			 : place_by_names(nat, nnative, ngroups, cut, group_of, err, errlen);
	if (placed >= 0 && unplaced_eval(nat, nnative, group_of, err, errlen) < 0)
		placed = -1;
	if (placed >= 0 && placed < ngroups)
		nnative = vouched(nat, nnative, group_of);
	for (int i = 0; placed >= 0 && i < nnative; i++) {
		if (group_of[i] >= 0) {
			for (int j = 0; j < groups[group_of[i]].nframes; j++)
				out[n++] = (struct merged_ref){ MERGED_PYTHON, py++ };
			continue;
		}
		switch (nat[i].cls) {
		case NATIVE_EVAL_PART:
			break;
		case NATIVE_PLUMBING:
			/* Hidden only with Python frames on both sides. */
			if (py > 0 && py < npy)
				break;
			/* fall through */
		case NATIVE_EVAL:	/* entering or leaving: unplaced_eval() */
		case NATIVE_OTHER:
			out[n++] = (struct merged_ref){ MERGED_NATIVE, i };
			break;
		}
	}
	free(group_of);
	if (placed < 0)
		return -1;
	/* The unwind stopped below the outer groups: their Python frames,
	 * and a gap where the native frames between are unknown. */
	if (placed < ngroups) {
		out[n++] = (struct merged_ref){ MERGED_GAP, -1 };
		while (py < npy)
			out[n++] = (struct merged_ref){ MERGED_PYTHON, py++ };
	}
	if (py != npy) {
		snprintf(err, errlen, "%d Python frames placed of %d", py, npy);
		return -1;
	}
	return n;
}

void mixed_stack_release(struct mixed_stack *ms)
{
	for (int i = 0; i < ms->nframes; i++) {
		free(ms->frames[i].function);
		free(ms->frames[i].library);
		free(ms->frames[i].file);
	}
	free(ms->frames);
	free(ms->error);
	memset(ms, 0, sizeof(*ms));
}

/* --- one stop, every thread ------------------------------------------------ */

struct captured_native {
	pid_t tid;
	struct native_pc *pcs;
	int npcs;		/* < 0: a negative errno */
	bool truncated;
};

struct captured_python {
	uint64_t tstate;
	struct py_group *groups;
	int ngroups, nframes;
	int rc;
};

struct native_capture {
	struct captured_native *nat;
	int nnat;
	struct captured_python *py;
	int npy;
};

struct native_capture *merge_capture_native(struct native_unwinder *u, const struct pause *p)
{
	struct native_capture *c = xcalloc(1, sizeof(*c));
	struct native_pc *buf = xcalloc(NATIVE_MAX_DEPTH, sizeof(*buf));

	native_begin(u);
	c->nat = xcalloc(p->n, sizeof(*c->nat));
	for (int i = 0; i < p->n; i++) {
		const struct paused_thread *pt = &p->threads[i];
		struct captured_native *cn = &c->nat[c->nnat];

		if (!pt->tid)
			continue;	/* exited while we attached */
		c->nnat++;
		cn->tid = pt->tid;
		if (!pt->stopped) {
			cn->npcs = -EAGAIN;
			continue;
		}
		cn->npcs = native_unwind(u, pt->tid, buf, NATIVE_MAX_DEPTH, &cn->truncated);
		if (cn->npcs > 0) {
			cn->pcs = xcalloc(cn->npcs, sizeof(*cn->pcs));
			memcpy(cn->pcs, buf, cn->npcs * sizeof(*buf));
		}
	}
	free(buf);
	return c;
}

struct native_capture *merge_capture_regs(struct native_unwinder *u, const pid_t *tids,
					  const struct user_regs_struct *regs, int n)
{
	struct native_capture *c = xcalloc(1, sizeof(*c));
	struct native_pc *buf = xcalloc(NATIVE_MAX_DEPTH, sizeof(*buf));

	native_begin(u);
	c->nat = xcalloc(n > 0 ? n : 1, sizeof(*c->nat));
	for (int i = 0; i < n; i++) {
		struct captured_native *cn = &c->nat[c->nnat++];

		cn->tid = tids[i];
		cn->npcs = native_unwind_regs(u, tids[i], &regs[i], buf, NATIVE_MAX_DEPTH,
					      &cn->truncated);
		if (cn->npcs > 0) {
			cn->pcs = xcalloc(cn->npcs, sizeof(*cn->pcs));
			memcpy(cn->pcs, buf, cn->npcs * sizeof(*buf));
		}
	}
	free(buf);
	return c;
}

void merge_capture_python(struct native_capture *c, struct mem *m, const struct pyinterp *pi,
			  int max_depth)
{
	struct py_tstate *ts = xcalloc(PYSTACK_MAX_THREADS, sizeof(*ts));
	char err[256];
	uint64_t gil;
	int n = pystack_tstates(m, pi, ts, PYSTACK_MAX_THREADS, &gil, err, sizeof(err));

	c->py = xcalloc(n > 0 ? n : 1, sizeof(*c->py));
	for (int i = 0; i < n; i++) {
		struct captured_python *cp;

		/* An OS thread's outer parts are grouped with its first. */
		if (!ts[i].nparts)
			continue;
		cp = &c->py[c->npy++];
		cp->tstate = ts[i].addr;
		cp->rc = merge_py_groups(m, &pi->layout, &ts[i], max_depth, &cp->groups,
					 &cp->ngroups, &cp->nframes);
	}
	free(ts);
}

static char *native_errmsg(int rc)
{
	if (rc == -EAGAIN)
		return xstrdup("the thread did not stop in time, so it could not be unwound");
	if (rc == -ESRCH)
		return xstrdup("the thread could not be unwound (it is exiting)");
	return xasprintf("libunwind could not start on the thread (%s)", strerror(-rc));
}

bool merge_has_gap(const struct merged_ref *refs, int n)
{
	for (int i = 0; i < n; i++)
		if (refs[i].kind == MERGED_GAP)
			return true;
	return false;
}

static void build_one(struct symbolizer *s, const struct pyinterp *pi, const struct py_thread *t,
		      const struct captured_native *cn, const struct captured_python *cp,
		      struct mixed_stack *ms)
{
	struct merge_native *nat;
	struct merged_ref *refs;
	const struct native_sym **syms;
	char err[256];
	int n;

	if (!cn) {
		ms->error = xstrdup("the thread was not among the stopped threads");
		return;
	}
	if (cn->npcs < 0) {
		ms->error = native_errmsg(cn->npcs);
		return;
	}
	if (t->error || t->truncated || !cp || cp->rc < 0 || cp->nframes != t->nframes) {
		ms->error = xstrdup("the Python stack is incomplete, so it cannot be merged");
		return;
	}
	ms->truncated = cn->truncated;
	nat = xcalloc(cn->npcs + 1, sizeof(*nat));
	syms = xcalloc(cn->npcs + 1, sizeof(*syms));
	refs = xcalloc(cn->npcs + t->nframes + 2, sizeof(*refs));
	for (int i = 0; i < cn->npcs; i++) {
		syms[i] = symbolize(s, cn->pcs[i].pc, cn->pcs[i].exact);
		nat[i].cls = merge_classify(syms[i], pi->path);
		nat[i].sp = cn->pcs[i].sp;
		nat[i].anon = !syms[i]->path;
	}
	n = merge_stacks(nat, cn->npcs, cn->truncated, cp->groups, cp->ngroups, t->nframes, refs,
			 err, sizeof(err));
	/* A dump shows whole merges only: a partial one is an error here. */
	if (n > 0 && merge_has_gap(refs, n)) {
		ms->error = xstrdup("the native unwind stopped before the outer interpreter calls "
				    "(code without unwind tables?)");
		n = -1;
	}
	if (n < 0) {
		if (!ms->error)
			ms->error = xstrdup(err);
	} else {
		ms->frames = xcalloc(n + 1, sizeof(*ms->frames));
		ms->nframes = n;
		for (int i = 0; i < n; i++) {
			struct mixed_frame *f = &ms->frames[i];
			const struct native_sym *ns;

			if (refs[i].kind == MERGED_PYTHON) {
				f->py = refs[i].index;
				continue;
			}
			ns = syms[refs[i].index];
			f->native = true;
			f->pc = ns->pc;
			f->function = ns->function ? xstrdup(ns->function) : NULL;
			f->library = ns->library ? xstrdup(ns->library) : NULL;
			f->offset = ns->offset;
			f->file = ns->file ? xstrdup(ns->file) : NULL;
			f->line = ns->line;
		}
	}
	free(refs);
	free(syms);
	free(nat);
}

struct mixed_stack *merge_finish(struct native_capture *c, struct symbolizer *s,
				 const struct pyinterp *pi, const struct py_thread *threads, int n)
{
	struct mixed_stack *out = xcalloc(n > 0 ? n : 1, sizeof(*out));

	for (int i = 0; i < n; i++) {
		const struct captured_native *cn = NULL;
		const struct captured_python *cp = NULL;

		for (int j = 0; j < c->nnat && threads[i].tid; j++)
			if (c->nat[j].tid == threads[i].tid)
				cn = &c->nat[j];
		for (int j = 0; j < c->npy; j++)
			if (c->py[j].tstate == threads[i].tstate)
				cp = &c->py[j];
		build_one(s, pi, &threads[i], cn, cp, &out[i]);
	}
	return out;
}

void merge_capture_free(struct native_capture *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nnat; i++)
		free(c->nat[i].pcs);
	for (int i = 0; i < c->npy; i++)
		free(c->py[i].groups);
	free(c->nat);
	free(c->py);
	free(c);
}
