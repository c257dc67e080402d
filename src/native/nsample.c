/* Native stacks for the sampler; see nsample.h. */
#include "native/dbghint.h"
#include "native/nsample.h"
#include "python/locate.h"
#include "native/mixed.h"
#include "native/unwind.h"
#include "profile/loss.h"
#include "profile/profile.h"
#include "python/pystack.h"
#include "native/symstore.h"
#include "process/proc.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often the maps are read again: libraries loaded or unloaded. */
#define REFRESH_NS 1000000000ull

/* One thread's capture, waiting for the threads to be released. */
struct pending {
	uint32_t pthread;
	uint32_t *stack;	/* the Python-only stack, root first */
	uint32_t depth, nhead;
	struct native_pc *pcs;
	int npcs;		/* < 0: no native stack (negative errno) */
	bool native_truncated;
	struct py_group *groups;
	int ngroups;
	bool mergeable;		/* Python frames complete and grouped */
	bool snapped;		/* snaps[i] holds the thread's registers and stack */
	pid_t still;		/* this thread's memo instead (not stopped) */
	bool dropped;		/* it moved after all: no sample */
};

/* What a code address is to the profile, once looked up. */
struct pcinfo {
	uint64_t key;		/* pc << 1 | exact */
	uint32_t frame;
	enum native_class cls;
	bool anon;		/* in no object: JIT code */
	bool startup;		/* in the interpreter, its launcher or libc */
	bool provisional;	/* named library+0xOFFSET until its symbols load */
	const void *obj;	/* the object it was found in (symview_lookup) */
};

struct nsample {
	const struct pyinterp *pi;
	struct profile *p;
	pid_t pid;
	bool by_function;
	bool keep_startup;
	/* How the first object seen without symbols would get them
	 * (dbghint.h), said at the end; tried once, while it runs. */
	char *symbols_hint;
	bool hint_tried;
	uint32_t marker;
	uint32_t gap;		/* the frame of a partial merge's gap */
	unsigned gaps;		/* stacks merged with a gap */
	struct native_unwinder *u;
	struct symview *view;	/* symbols shared by build ID (symstore.h) */
	uint32_t nprovisional;	/* pcinfo entries to name once loaded */
	uint64_t refresh_due_ns;	/* 0: not sampled yet */
	struct native_pc buf[NATIVE_MAX_DEPTH];

	struct pending *pend;
	int npend;
	size_t pend_cap;
	/* pend[i]'s snapshot, buffers kept from one sample to the next. */
	struct native_snap *snaps;
	int nsnaps;
	size_t snaps_cap;

	/* Names, classes and frame ids are worked out once per code
	 * address, not once per sample. */
	struct pcinfo *pcinfo;
	uint32_t npcinfo, pcinfo_alloc;
	struct hashidx pc_index;

	/* Scratch for the merge, grown as needed. */
	struct merge_native *nat;
	struct merged_ref *refs;
	uint32_t *out;
	size_t nat_cap, refs_cap, out_cap;

	char last_error[256];
};

struct nsample *nsample_open(pid_t pid, const struct pyinterp *pi, struct profile *p,
			     bool by_function, bool startup, bool debuginfod, uint32_t marker)
{
	struct nsample *ns = xcalloc(1, sizeof(*ns));

	ns->pid = pid;
	ns->pi = pi;
	ns->p = p;
	ns->by_function = by_function;
	ns->keep_startup = startup;
	ns->marker = marker;
	ns->gap = profile_frame(p, &(struct pframe){ PF_MARKER, NSAMPLE_GAP_FRAME, NULL, -1, -1 });
	ns->u = native_open(pid);
	ns->view = symview_open(pid, SYMBOLIZE_LINES | (debuginfod ? SYMBOLIZE_DEBUGINFOD : 0));
	/* Before the first pause: merging needs the interpreter's names at
	 * once; every other object loads in the background. */
	symview_load_object(ns->view, pi->path);
	return ns;
}

static void drop_pending(struct nsample *ns)
{
	for (int i = 0; i < ns->npend; i++) {
		free(ns->pend[i].stack);
		free(ns->pend[i].pcs);
		free(ns->pend[i].groups);
	}
	ns->npend = 0;
}

static void name_provisional(struct nsample *ns);

/* Has this run said note already?  The forked workers of `record -s` map
 * the same libraries: nine torch processes said the same line about
 * libc nine times.  (Called from the thread that closes samplers only.) */
static bool said_before(const char *note)
{
	static char *said[16];
	static int nsaid;

	for (int i = 0; i < nsaid; i++)
		if (!strcmp(said[i], note))
			return true;
	if (nsaid < (int)ARRAY_SIZE(said))
		said[nsaid++] = xstrdup(note);
	return false;
}

void nsample_close(struct nsample *ns)
{
	if (!ns)
		return;
	drop_pending(ns);
	/* Frames still named library+0xOFFSET get their names now, before
	 * the profile is written. */
	if (ns->nprovisional) {
		symview_finish_loading(ns->view);
		name_provisional(ns);
	}
	if (ns->symbols_hint && !said_before(ns->symbols_hint))
		errorf("%s", ns->symbols_hint);
	free(ns->symbols_hint);
	free(ns->pend);
	for (int i = 0; i < ns->nsnaps; i++)
		native_snap_free(&ns->snaps[i]);
	free(ns->snaps);
	free(ns->pcinfo);
	hashidx_release(&ns->pc_index);
	free(ns->nat);
	free(ns->refs);
	free(ns->out);
	symview_close(ns->view);
	native_close(ns->u);
	free(ns);
}

/* --- code addresses to frames ---------------------------------------------- */

static void pc_clear(struct nsample *ns)
{
	uint32_t keep = 0;

	/* Frames still to be named stay, out of the index: named once their
	 * object loads, if their address is still in that object. */
	hashidx_clear(&ns->pc_index);
	for (uint32_t i = 0; i < ns->npcinfo; i++)
		if (ns->pcinfo[i].provisional)
			ns->pcinfo[keep++] = ns->pcinfo[i];
	ns->npcinfo = keep;
	ns->nprovisional = keep;
}

/* The profile frame of a symbolized address.  Without a symbol the name
 * says where the code is (what addr2line -e needs); with one, the file is
 * the source where debug information knows it, else the object, so that
 * a label reads "qsort (libc.so.6)". */
static void native_pframe(struct nsample *ns, const struct native_sym *sym, struct pframe *pf)
{
	struct pframe f = { PF_NATIVE, NULL, NULL, -1, -1 };
	char *name;

	if (sym->function)
		name = xstrdup(sym->function);
	else if (sym->library)
		name = xasprintf("%s+0x%llx", sym->library, (unsigned long long)sym->offset);
	else
		name = xasprintf("0x%llx", (unsigned long long)sym->pc);
	f.name = name;
	if (sym->function && sym->file) {
		f.file = (char *)sym->file;
		f.line = ns->by_function ? -1 : sym->line;
	} else if (sym->function) {
		f.file = (char *)sym->path;
	}
	*pf = f;
}

/* Code that starts the interpreter or a thread of it: the interpreter's
 * object, the python launcher (pyenv's python3 over libpython) and the C
 * library and loader (_start, __libc_start_main, clone, start_thread). */
static bool startup_object(const char *path, const char *interp)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	if (!path)
		return false;
	if (!strcmp(path, interp))
		return true;
	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libc.so", 7) ||
	       !strncmp(base, "libc-", 5) || !strncmp(base, "ld-linux", 8) ||
	       !strncmp(base, "ld-musl", 7);
}

/* A frame named lib+0xOFFSET for want of symbols: the first such object
 * gets its hint. */
static void note_unnamed(struct nsample *ns, const struct native_sym *sym, bool ready)
{
	char note[1024];

	if (ns->hint_tried || !ready || sym->function || !sym->path)
		return;
	ns->hint_tried = true;
	if (dbg_hint(ns->pid, sym->path, note, sizeof(note)))
		ns->symbols_hint = xstrdup(note);
}

static const struct pcinfo *pc_info(struct nsample *ns, const struct native_pc *pc)
{
	uint64_t key = pc->pc << 1 | pc->exact;
	uint32_t h = hash_u64(key), id;
	struct native_sym sym;
	struct hashidx_pos pos;
	struct pcinfo *info;
	const void *obj;
	struct pframe f;
	bool ready;

	for (id = hashidx_first(&ns->pc_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&ns->pc_index, &pos))
		if (ns->pcinfo[id].key == key)
			return &ns->pcinfo[id];
	sym = symview_lookup(ns->view, pc->pc, pc->exact, &ready, &obj);
	ALLOC_GROW(ns->pcinfo, ns->npcinfo + 1, ns->pcinfo_alloc);
	id = ns->npcinfo++;
	info = &ns->pcinfo[id];
	info->key = key;
	info->cls = merge_classify(&sym, ns->pi->path);
	info->anon = !sym.path;
	info->startup = startup_object(sym.path, ns->pi->path);
	note_unnamed(ns, &sym, ready);
	native_pframe(ns, &sym, &f);
	/* A provisional name is this object's alone: another object of the
	 * same name, named later, must not rename this frame's stacks. */
	if (!ready)
		f.file = (char *)sym.path;
	info->frame = profile_frame(ns->p, &f);
	free(f.name);
	info->provisional = !ready;
	info->obj = obj;
	ns->nprovisional += !ready;
	hashidx_add(&ns->pc_index, h, id);
	return info;
}

/* Name the frames of addresses whose objects have loaded since: the
 * stacks already counted with them read the name too.  Before a pause. */
static void name_provisional(struct nsample *ns)
{
	for (uint32_t i = 0; i < ns->npcinfo && ns->nprovisional; i++) {
		struct pcinfo *info = &ns->pcinfo[i];
		struct native_sym sym;
		struct pframe f;
		const void *obj;
		bool ready;

		if (!info->provisional)
			continue;
		sym = symview_lookup(ns->view, info->key >> 1, info->key & 1, &ready, &obj);
		if (!ready)
			continue;
		info->provisional = false;
		ns->nprovisional--;
		/* Another object there now: this frame keeps its offset. */
		if (obj != info->obj)
			continue;
		info->cls = merge_classify(&sym, ns->pi->path);
		info->startup = startup_object(sym.path, ns->pi->path);
		note_unnamed(ns, &sym, ready);
		native_pframe(ns, &sym, &f);
		profile_frame_rename(ns->p, info->frame, &f);
		free(f.name);
	}
}

/* --- one sample ------------------------------------------------------------- */

void nsample_begin(struct nsample *ns, uint64_t t_ns)
{
	drop_pending(ns);
	/* Outside the pause: reading the maps takes a while. */
	if (ns->nprovisional)
		name_provisional(ns);
	if (!ns->refresh_due_ns) {
		ns->refresh_due_ns = t_ns + 1 + pid_phase(ns->pid, REFRESH_NS);
	} else if (t_ns >= ns->refresh_due_ns) {
		/* The symbols' view of the maps is read again only when the
		 * unwinder's changed: that costs a round trip to the
		 * symbolization helper of a container, several times the
		 * cost of reading the maps once (bench/README, "scale").
		 * Otherwise only a lost helper is looked for. */
		if (native_refresh(ns->u) ? symview_refresh(ns->view) : symview_check(ns->view))
			pc_clear(ns);	/* an address may be another object's */
		ns->refresh_due_ns = t_ns + REFRESH_NS;
	}
	native_begin(ns->u);
}

/* A pending entry for a stack, its native part to come from a snapshot
 * (snap) or from the thread's memo. */
static void capture(struct nsample *ns, struct mem *m, const struct py_tstate *ts, pid_t tid,
		    uint32_t pthread, const uint32_t *stack, uint32_t depth, uint32_t nhead,
		    bool py_complete, bool snap)
{
	struct pending *pd;
	int npy;

	ALLOC_GROW(ns->pend, ns->npend + 1, ns->pend_cap);
	pd = &ns->pend[ns->npend++];
	memset(pd, 0, sizeof(*pd));
	pd->pthread = pthread;
	pd->depth = depth;
	pd->nhead = nhead;
	pd->stack = xmalloc((depth ? depth : 1) * sizeof(*pd->stack));
	memcpy(pd->stack, stack, depth * sizeof(*stack));
	pd->npcs = -ESRCH;
	if (ns->npend > ns->nsnaps) {
		ALLOC_GROW(ns->snaps, ns->npend, ns->snaps_cap);
		memset(&ns->snaps[ns->nsnaps], 0, sizeof(ns->snaps[0]));
		ns->nsnaps++;
	}
	/* Unwound once the threads run again: nsample_finish(). */
	if (snap)
		pd->snapped = tid && native_snap_take(ns->u, tid, &ns->snaps[ns->npend - 1]) == 0;
	else
		pd->still = tid;
	if (!py_complete || (!pd->snapped && !pd->still))
		return;
	/* The same walk as the caller's, so frame i is frame i. */
	pd->mergeable = merge_py_groups(m, &ns->pi->layout, ts, PYSTACK_MAX_DEPTH, &pd->groups,
					&pd->ngroups, &npy) == 0 &&
			npy == (int)(depth - nhead);
}

void nsample_capture(struct nsample *ns, struct mem *m, const struct py_tstate *ts, pid_t tid,
		     uint32_t pthread, const uint32_t *stack, uint32_t depth, uint32_t nhead,
		     bool py_complete)
{
	capture(ns, m, ts, tid, pthread, stack, depth, nhead, py_complete, true);
}

void nsample_capture_still(struct nsample *ns, struct mem *m, const struct py_tstate *ts,
			   pid_t tid, uint32_t pthread, const uint32_t *stack, uint32_t depth,
			   uint32_t nhead, bool py_complete)
{
	capture(ns, m, ts, tid, pthread, stack, depth, nhead, py_complete, false);
}

/* Do two readings of the thread's entry into the kernel agree, and with
 * its memo? */
static bool same_entry(const struct task_entry *a, const struct task_entry *b)
{
	return a->nr == b->nr && a->sp == b->sp && a->pc == b->pc &&
	       !memcmp(a->args, b->args, sizeof(a->args));
}

bool nsample_prove_still(struct nsample *ns, pid_t tid, int sched_fd, uint64_t run_ns,
			 uint64_t runs)
{
	struct task_entry before, after;
	uint64_t sp, pc, rt, n;

	if (!native_still_ready(ns->u, tid, &sp, &pc))
		return false;
	if (proc_task_entry(ns->pid, tid, &before) < 0 || before.sp != sp || before.pc != pc)
		return false;
	if (!native_still_bytes(ns->u, tid))
		return false;
	if (proc_task_entry(ns->pid, tid, &after) < 0 || !same_entry(&before, &after))
		return false;
	return proc_schedstat_read(sched_fd, &rt, &n) == 0 && rt == run_ns && n == runs;
}

bool nsample_still_ready(struct nsample *ns, pid_t tid)
{
	uint64_t sp, pc;

	return native_still_ready(ns->u, tid, &sp, &pc);
}

bool nsample_drop_still(struct nsample *ns, pid_t tid)
{
	for (int i = 0; i < ns->npend; i++) {
		if (ns->pend[i].still == tid && !ns->pend[i].dropped) {
			ns->pend[i].dropped = true;
			return true;
		}
	}
	return false;
}

static const char *pending_problem(const struct pending *pd)
{
	if (pd->npcs == -ESRCH)
		return "the thread could not be unwound (not stopped, or exiting)";
	if (pd->npcs == -EAGAIN)
		return "the stack needed more than its snapshot held (the next one is longer)";
	if (pd->npcs < 0)
		return "libunwind could not start on the thread";
	if (pd->npcs == 0)
		return "no native frames";
	if (!pd->mergeable)
		return "the Python stack is incomplete or does not group by eval call";
	return NULL;
}

/* How many of the n merged refs, outermost first, are start-up frames
 * below a Python frame, to leave out.  Not in a stack cut short: its
 * outermost frames are not the start. */
static int startup_refs(struct nsample *ns, const struct pending *pd, int n)
{
	int k = n;

	if (ns->keep_startup || pd->native_truncated)
		return 0;
	while (k > 0 && ns->refs[k - 1].kind == MERGED_NATIVE &&
	       pc_info(ns, &pd->pcs[ns->refs[k - 1].index])->startup)
		k--;
	return k > 0 && ns->refs[k - 1].kind == MERGED_PYTHON ? n - k : 0;
}

/* The merged stack of pd, root first, into ns->out.  Returns its depth, or
 * -1 with the reason in ns->last_error. */
static int merge_one(struct nsample *ns, const struct pending *pd)
{
	int npy = pd->depth - pd->nhead, n;
	const char *why = pending_problem(pd);
	uint32_t depth = 0;
	char err[200];
	bool gap;

	if (why) {
		snprintf(ns->last_error, sizeof(ns->last_error), "%s", why);
		return -1;
	}
	ALLOC_GROW(ns->nat, pd->npcs, ns->nat_cap);
	ALLOC_GROW(ns->refs, pd->npcs + npy + 1, ns->refs_cap);
	for (int i = 0; i < pd->npcs; i++) {
		const struct pcinfo *info = pc_info(ns, &pd->pcs[i]);

		ns->nat[i].cls = info->cls;
		ns->nat[i].anon = info->anon;
		ns->nat[i].sp = pd->pcs[i].sp;
	}
	n = merge_stacks(ns->nat, pd->npcs, pd->native_truncated, pd->groups, pd->ngroups, npy,
			 ns->refs, err, sizeof(err));
	if (n < 0) {
		snprintf(ns->last_error, sizeof(ns->last_error), "%s", err);
		return -1;
	}
	ALLOC_GROW(ns->out, pd->nhead + 1 + n, ns->out_cap);
	for (uint32_t i = 0; i < pd->nhead; i++)
		ns->out[depth++] = pd->stack[i];
	gap = merge_has_gap(ns->refs, n);
	ns->gaps += gap;
	/* With a gap the outer frames are the Python ones: nothing is
	 * missing at the root. */
	if (pd->native_truncated && !gap)
		ns->out[depth++] = ns->marker;
	/* refs are innermost first; Python frame j (innermost first) is
	 * stack[depth - 1 - j]. */
	for (int i = n - 1 - startup_refs(ns, pd, n); i >= 0; i--) {
		const struct merged_ref *r = &ns->refs[i];

		if (r->kind == MERGED_GAP)
			ns->out[depth++] = ns->gap;
		else if (r->kind == MERGED_NATIVE)
			ns->out[depth++] = pc_info(ns, &pd->pcs[r->index])->frame;
		else
			ns->out[depth++] = pd->stack[pd->depth - 1 - r->index];
	}
	return depth;
}

/* The native stack of pend[i], from its snapshot. */
static void unwind_pending(struct nsample *ns, int i)
{
	struct pending *pd = &ns->pend[i];

	if (pd->still)
		pd->npcs = native_still_frames(ns->u, pd->still, ns->buf, NATIVE_MAX_DEPTH,
					       &pd->native_truncated);
	else if (pd->snapped)
		pd->npcs = native_unwind_snap(ns->u, &ns->snaps[i], ns->buf, NATIVE_MAX_DEPTH,
					      &pd->native_truncated);
	else
		return;
	if (pd->npcs > 0) {
		pd->pcs = xmalloc(pd->npcs * sizeof(*pd->pcs));
		memcpy(pd->pcs, ns->buf, pd->npcs * sizeof(*pd->pcs));
	}
}

unsigned nsample_finish(struct nsample *ns, uint64_t t_ns)
{
	unsigned errors = 0;

	for (int i = 0; i < ns->npend; i++) {
		const struct pending *pd = &ns->pend[i];
		int depth;

		if (pd->dropped)
			continue;
		unwind_pending(ns, i);
		depth = merge_one(ns, pd);

		if (depth < 0) {
			errors++;
			profile_lose(ns->p, pd->pthread, PLOSS_MERGE);
			profile_add(ns->p, pd->pthread, pd->stack, pd->depth, t_ns, 1);
			continue;
		}
		profile_add(ns->p, pd->pthread, ns->out, depth, t_ns, 1);
	}
	drop_pending(ns);
	return errors;
}

const char *nsample_last_error(const struct nsample *ns)
{
	return ns->last_error;
}

unsigned nsample_gaps(const struct nsample *ns)
{
	return ns->gaps;
}

unsigned nsample_symbol_errors(const struct nsample *ns)
{
	return symview_errors(ns->view);
}
