/* Thread states: every interpreter's, the threads they make up and their
 * stacks, their names, and (before 3.11) their OS thread ids. */
#include "python/pystack_int.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A free-threaded build has no GIL holder to charge a collection to, nor
 * a field naming the collector: while it runs, the collector is attached
 * and, during its stop-the-world phases, every other thread suspended.  So
 * the collection is charged to the one attached thread, and to none when
 * several are (the world restarted, finalizers running beside other
 * threads): a <gc> left out, never one put on the wrong thread. */
static void gc_free_threaded(struct py_tstate *ts, int n, uint64_t gc_at)
{
	int attached = -1;

	for (int i = 0; i < n; i++) {
		if (ts[i].state != PY_ATTACHED)
			continue;
		if (attached >= 0)
			return;
		attached = i;
	}
	if (attached >= 0) {
		ts[attached].gc = true;
		ts[attached].gc_at = gc_at;
	}
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

/* A free-threaded thread state's state; anything but the three values a
 * thread state takes is no state known. */
static int8_t tstate_state(const struct py_layout *L, const uint8_t *tb)
{
	int32_t v;

	if (L->tstate.state == NONE)
		return PY_STATE_UNKNOWN;
	v = field_i32(tb, L->tstate.state);
	return v >= PY_DETACHED && v <= PY_SUSPENDED ? (int8_t)v : PY_STATE_UNKNOWN;
}

/* The thread states of one interpreter, up to max.  Returns the count, or
 * status_fail(EXIT_*) with a reason in err when not even the first could
 * be read. */
static int interp_tstates(struct mem *m, const struct pyinterp *pi, uint64_t interp,
			  struct py_tstate *out, int max, char *err, size_t errlen)
{
	const struct py_layout *L = &pi->layout;
	uint32_t offs[] = { L->tstate.next, L->tstate.interp, L->tstate.frame,
			    L->tstate.thread_id, L->tstate.native_thread_id, L->tstate.state };
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
		t->state = tstate_state(L, tb);
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
	if (collecting && pi->layout.free_threaded)
		gc_free_threaded(out, n, gc_at);
	return drop_unbound(out, n);
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
