/* One sample of one process (sampler_sample): pause it if asked, read every
 * thread's stack, turn code objects into profile frames through the code
 * cache, and count the stack in the profile.  The loop that calls it at
 * each deadline, for a process and its descendants, is fleet.c.  The
 * table of the target's threads is sthreads.c, asyncio tasks are
 * sample_tasks.c, and the proving and re-reading of stacks read without a
 * pause is reread.c; what they share is sampler_int.h. */
#include "sample/sampler_int.h"
#include "python/asyncio.h"
#include "python/codecache.h"
#include "python/framereuse.h"
#include "python/pystack.h"
#include "python/recheck.h"
#include "native/nsample.h"
#include "process/mem.h"
#include "process/nsmap.h"
#include "process/pause.h"
#include "process/proc.h"
#include "sample/taskids.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* With --idle no thread's state decides anything: it is read only this
 * often, for the share of threads running that top shows. */
#define STATE_EVERY_NS 10000000ull

const char *serr_name(enum serr e)
{
	static const char *const names[] = {
		[SERR_TORN] = "torn stack",
		[SERR_STATE] = "interpreter state unreadable",
		[SERR_PAUSE] = "could not pause",
		[SERR_MERGE] = "merge error",
		[SERR_SYMBOLS] = "symbolization helper lost",
		[SERR_GAP] = "native gap",
	};
	return e < SERR_COUNT ? names[e] : "?";
}

/* As profile_init() records it: the clock and the profile agree. */
uint64_t sampler_interval_ns(double rate_hz)
{
	return rate_hz > 0 ? (uint64_t)(1e9 / rate_hz) : 0;
}

static int stat_exe(pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, st);
}

int sampler_open(pid_t pid, const struct sampler_opts *o, struct profile *p,
		 struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s = xcalloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	s->pid = pid;
	s->o = *o;
	/* Native stacks are read from stopped threads only. */
	s->o.blocking |= o->native;
	s->interval_ns = sampler_interval_ns(o->rate_hz);
	s->p = p;
	s->direct = mem_proc_open(pid);
	s->m = mem_cache_new(s->direct);
	s->wm = s->m;
	recheck_reset(&s->rc);
	s->tid_offset = -2;
	nsmap_open(&s->nsm, NULL, pid);
	rc = locate_python(pid, s->direct, &s->pi, err, errlen);
	if (rc < 0)
		goto fail;
	if (o->async && (rc = asyncio_locate(pid, s->direct, &s->pi, &s->A, err, errlen)) < 0)
		goto fail;
	s->async_ready = o->async && rc == 0;
	if (stat_exe(pid, &s->exe) < 0)
		memset(&s->exe, 0, sizeof(s->exe));
	s->cc = code_cache_new(s->m, &s->pi.layout, p, o->by_function);
	s->truncated_marker = profile_frame(p, &(struct pframe){ PF_MARKER, "<truncated>", NULL, -1, -1 });
	/* A function of its own (no file), so that top has a row for it. */
	s->gc_frame = profile_frame(p, &(struct pframe){ PF_PYTHON, "<gc>", NULL, -1, -1 });
	s->proc_root = NO_FRAME;
	if (o->native)
		s->ns = nsample_open(pid, &s->pi, p, o->by_function, o->native_startup,
				     !o->no_debuginfod, s->truncated_marker);
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return rc;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nthreads; i++)
		sthread_release(&s->threads[i]);
	free(s->threads);
	recheck_release(&s->rc);
	free(s->pend);
	free(s->pend_frames);
	free(s->torn);
	free(s->redo);
	free(s->proof);
	free(s->renum);
	nsample_close(s->ns);
	pause_hint_free(&s->pause_hint);
	free(s->skip);
	free(s->keep);
	code_cache_free(s->cc);
	asyncio_memo_free(s->amemo);
	task_ids_free(s->tids);
	nsmap_free(&s->nsm);
	pyinterp_free(&s->pi);
	mem_close(s->m);
	mem_close(s->fresh);
	mem_close(s->direct);
	free(s);
}

/* --- one sample ----------------------------------------------------------- */

/* The frames the walk stepped over between `from` and the visited frame
 * `to` (shims such as a C call's entry frame, frames not started yet) join
 * the visited ones: their back pointers are proved too, or a shim read at
 * the wrong moment could splice two stacks.  The walk read them through
 * the same cache, so this follows the chain it followed. */
static void recheck_skipped(struct sampler *s, uint64_t from, uint64_t to)
{
	const struct py_layout *L = &s->pi.layout;

	for (int steps = 0; from && from != to && steps < 4 * PYSTACK_MAX_DEPTH; steps++) {
		recheck_frame(&s->rc, s->owner, s->wm, L, from, true);
		if (mem_read_u64(s->wm, from + L->frame.back, &from) < 0)
			return;
	}
}

/* The walk only gathers the frames; resolve_frames() turns them into
 * profile frames once the whole stack is known, reusing last round's. */
static int collect_frame(void *arg, uint64_t frame, uint64_t code, uint64_t lasti)
{
	struct sampler *s = arg;

	if (!s->o.blocking) {
		const struct py_layout *L = &s->pi.layout;

		recheck_skipped(s, s->link, frame);
		recheck_frame(&s->rc, s->owner, s->wm, L, frame, s->nframes == 0);
		if (mem_read_u64(s->wm, frame + L->frame.back, &s->link) < 0)
			s->link = 0;
	}
	if (s->nframes < PYSTACK_MAX_DEPTH)
		s->raw[s->nframes++] = (struct reuse_frame){ frame, code, lasti, 0, 0 };
	return 0;
}

/* Does the OS thread hold a GIL, in any of its interpreters? */
static bool holds_gil(const struct py_tstate *ts)
{
	for (int p = 0; p < ts->nparts; p++)
		if (ts[p].gil)
			return true;
	return false;
}

static bool wanted(const struct sampler *s, const struct sthread *t, const struct pause *pause,
		   bool gil)
{
	if (s->o.gil_only && !gil)
		return false;
	/* A thread the pause left running (see leave_running()), or one started
	 * by such a thread after the pause's last listing, is not read as if
	 * it held still: --native could not unwind it either.  (One left
	 * running for standing still is read after the pause:
	 * record_stills().) */
	if (s->o.blocking && !pause_holds(pause, t->tid))
		return false;
	/* A thread seen for the first time has no state read before the
	 * pause: count it rather than guess it idle. */
	if (!s->o.idle && t->state && t->state != 'R')
		return false;
	return true;
}

/* The pointers that lead a recheck to the innermost frame of a part, and
 * the thread state's owner: a thread that ends frees its state, and the
 * next one, often given the same address and the same pthread_t, would
 * otherwise lend its frames to the sample of the one that ended.  Its
 * native id tells them apart (3.11+); before 3.11, the id in the thread
 * descriptor its ident names, which the next thread takes over with the
 * pthread_t (t: the OS thread's entry, for its first part).  A relay of
 * threads on 3.10 once had the descriptor read while one thread ran and
 * the stack once the next did, the same frame at the same address in
 * both: the stack went under the first one's id.  For the collector, the
 * words that made it one: a collection that ended between the listing and
 * the walk would put <gc> on whatever the thread went on to call. */
static void recheck_tstate(struct sampler *s, const struct sthread *t, const struct py_tstate *ts)
{
	const struct py_layout *L = &s->pi.layout;

	if (L->tstate.native_thread_id != NONE && ts->tid_read)
		recheck_add(&s->rc, s->owner, ts->addr + L->tstate.native_thread_id,
			    (uint64_t)ts->tid_read, 4);
	if (t && t->desc_tid > 0 && s->tid_offset >= 0) {
		recheck_add(&s->rc, s->owner, ts->addr + L->tstate.thread_id, ts->ident, 8);
		recheck_add(&s->rc, s->owner, ts->ident + (uint64_t)s->tid_offset,
			    (uint64_t)(uint32_t)t->desc_tid, 4);
	}
	if (ts->gc && ts->gc_at && ts->gil_at) {
		recheck_add(&s->rc, s->owner, ts->gc_at, 1, 4);
		recheck_add(&s->rc, s->owner, ts->gil_at, ts->addr, 8);
	}
	if (ts->cframe) {
		recheck_add(&s->rc, s->owner, ts->addr + L->tstate.frame, ts->cframe, 8);
		recheck_add(&s->rc, s->owner, ts->cframe + L->tstate.cframe_frame, ts->frame, 8);
	} else {
		recheck_add(&s->rc, s->owner, ts->addr + L->tstate.frame, ts->frame, 8);
	}
}

/* The Python frames of one OS thread into s->frames, innermost first: its
 * thread states ts[0..ts->nparts), one interpreter's after another.  A part
 * that ends early ends the stack (see pystack.c's walk_thread). */
static enum walk_end walk_parts(struct sampler *s, const struct sthread *t,
			       const struct py_tstate *ts)
{
	enum walk_end end = WALK_DONE;
	int n, rc;

	s->nframes = 0;
	for (int p = 0; p < ts->nparts && end == WALK_DONE; p++) {
		int max = PYSTACK_MAX_DEPTH - s->nframes;

		if (ts[p].frame_err < 0)
			return WALK_READ_ERROR;
		if (!s->o.blocking)
			recheck_tstate(s, p ? NULL : t, &ts[p]);
		if (!ts[p].frame)
			continue;
		s->link = ts[p].frame;
		if (max <= 0)
			return WALK_TRUNCATED;
		end = pystack_walk(s->wm, &s->pi.layout, ts[p].frame, max, collect_frame, s,
				   &n, &rc);
		/* The frames after the outermost shown: had a shim's back
		 * pointer been read as the end, outer frames would be lost. */
		if (end == WALK_DONE && !s->o.blocking)
			recheck_skipped(s, s->link, 0);
	}
	return end;
}

/* The walked frames' profile ids into s->frames; a code object that cannot
 * be read fails the stack, as it would have failed the walk. */
static enum walk_end resolve_frames(struct sampler *s, struct sthread *t, enum walk_end end)
{
	if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR) {
		t->reuse.n = 0;
		return end;
	}
	if (frame_reuse_resolve(&t->reuse, s->cc, s->raw, (uint32_t)s->nframes, s->frames) < 0)
		return WALK_VISIT_ERROR;
	return end;
}

/* Is any part of the thread running its interpreter's collector? */
static bool collecting(const struct py_tstate *ts)
{
	for (int p = 0; p < ts->nparts; p++)
		if (ts[p].gc)
			return true;
	return false;
}

/* Has the thread run no Python code since its last proved stack was read?
 * Only a thread holding its interpreter's GIL runs Python code, and the
 * GIL's switch count goes up whenever a thread other than its last holder
 * takes it (take_gil()).  So a thread that is not the last holder now,
 * with the count what it was when its stack was read, has not taken the
 * GIL since: its frames are as they were, and the code objects they hold
 * references to are alive.  The count is read before the frames in a
 * round, and a stack read without a pause is proved by the recheck after
 * them, so nothing between the two reads escapes.  Not with --native (C
 * code runs without the GIL) or --async (the running task is looked up
 * from the walk), nor for a thread in more than one interpreter. */
static bool may_be_unchanged(const struct sampler *s, const struct py_tstate *ts)
{
	return !s->ns && !s->o.async && ts->nparts == 1 && ts->gil_counted;
}

/* (The holder is the last holder: !gil_last covers it.) */
static bool unchanged(const struct sampler *s, const struct sthread *t, const struct py_tstate *ts)
{
	return t->last_read.valid && may_be_unchanged(s, ts) && !ts->gil_last && !ts->frame_err &&
	       ts->addr == t->last_read.tstate && ts->frame == t->last_read.frame &&
	       ts->interp == t->last_read.interp && ts->gil_switches == t->last_read.switches;
}

/* The thread's last stack, as the walk and resolve_frames() leave it. */
static enum walk_end unchanged_stack(struct sampler *s, struct sthread *t)
{
	s->nframes = (int)t->reuse.n;
	for (uint32_t i = 0; i < t->reuse.n; i++) {
		s->raw[i] = t->reuse.v[i];
		s->frames[i] = t->reuse.v[i].id;
	}
	s->unchanged_stacks++;
	return t->last_read.end;
}

/* Remember where this round's stack of t was read from; without a pause
 * it counts once the recheck has proved it (reread.c's count_held()). */
static void note_read(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		       enum walk_end end)
{
	t->last_read.valid = (end == WALK_DONE || end == WALK_TRUNCATED) && may_be_unchanged(s, ts);
	t->last_read.tstate = ts->addr;
	t->last_read.frame = ts->frame;
	t->last_read.interp = ts->interp;
	t->last_read.switches = ts->gil_switches;
	t->last_read.end = end;
}

/* Returns whether a stack (or a failed walk) was held for the recheck. */
bool record_thread(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		   uint64_t t_ns)
{
	uint32_t stack[PYSTACK_MAX_DEPTH + ASYNCIO_CHAIN_MAX + 4];
	uint32_t depth = 0, nhead;
	size_t words = s->rc.n;
	enum walk_end end;
	int outer;

	s->owner = (uint32_t)s->npend;
	/* For --waits: running, or waiting without a class of its own. */
	s->p->threads[t->pthread].idle = t->state && t->state != 'R';
	if (unchanged(s, t, ts)) {
		end = unchanged_stack(s, t);
	} else {
		end = resolve_frames(s, t, walk_parts(s, t, ts));
		note_read(s, t, ts, end);
	}
	if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR) {
		s->rc.n = words;	/* only a stack that is held needs them */
		/* Read from a running thread, a walk fails when it is
		 * torn too (a frame freed, a chain changed under it): it is
		 * read again as a torn stack is, and counted if it stays
		 * so. */
		if (!s->o.blocking) {
			hold_stack(s, t, ts, NULL, 0);
			return true;
		}
		s->errors[SERR_TORN]++;
		return false;
	}
	/* A thread with no Python frame (starting, or only in C) adds nothing. */
	if (s->nframes == 0) {
		s->rc.n = words;
		return false;
	}
	if (s->proc_root != NO_FRAME)
		stack[depth++] = s->proc_root;
	if (s->o.threads)
		stack[depth++] = t->root;
	nhead = depth;
	outer = running_task_head(s, ts, stack, &depth);
	if (end == WALK_TRUNCATED && outer == s->nframes - 1)
		stack[depth++] = s->truncated_marker;
	for (int i = outer; i >= 0; i--)
		stack[depth++] = s->frames[i];
	/* With --native the collector's own C functions show instead. */
	if (!s->ns && collecting(ts))
		stack[depth++] = s->gc_frame;
	/* Counted once the threads run again: see nsample.h. */
	if (s->ns) {
		s->stacks++;
		if (t->still) {
			s->still_stacks++;
			nsample_capture_still(s->ns, s->m, ts, t->tid, t->pthread, stack, depth,
					      nhead, end == WALK_DONE);
		} else {
			nsample_capture(s->ns, s->m, ts, t->tid, t->pthread, stack, depth, nhead,
					end == WALK_DONE);
		}
		return false;
	}
	if (!s->o.blocking) {
		hold_stack(s, t, ts, stack, depth);
		return true;
	}
	s->stacks++;
	profile_add(s->p, t->pthread, stack, depth, t_ns, 1);
	return false;
}

/* With --native --idle: may t be left running this round, its stack read
 * as it sleeps and its native frames taken from its last unwind?  When it
 * is asleep (S, D), that unwind holds (nsample_prove_still(): where it
 * entered the kernel and the stack bytes the unwind read), and it has not
 * run since that was proved: its run counts are what they were.  The proof
 * is made again only after the thread ran, so a thread asleep for good
 * costs a read of its schedstat a round, where a stop would wake it, wait
 * for it to be scheduled only to reach the stop (200 threads on 2 busy
 * CPUs: most of them late), copy its stack and unwind it.  That it did not
 * run during the round either is proved once the others are let go
 * (confirm_still()). */
static bool still_thread(struct sampler *s, struct sthread *t)
{
	uint64_t run_ns, runs;

	if (t->state != 'S' && t->state != 'D')
		return false;
	if (t->sched_fd == -1) {
		t->sched_fd = proc_task_open(s->pid, t->tid, "schedstat");
		if (t->sched_fd < 0)
			t->sched_fd = -2;
	}
	if (proc_schedstat_read(t->sched_fd, &run_ns, &runs) < 0)
		return false;
	/* Proved again after the thread ran, or once its memo is gone
	 * (the maps changed): its frames would come from nowhere. */
	if (!t->still_proved || run_ns != t->still_run_ns || runs != t->still_runs ||
	    !nsample_still_ready(s->ns, t->tid)) {
		t->still_run_ns = run_ns;
		t->still_runs = runs;
		t->still_proved = nsample_prove_still(s->ns, t->tid, t->sched_fd, run_ns, runs);
	}
	return t->still_proved;
}

/* The stacks of the threads of this round's ts[0..n) left running as
 * still, once the others are let go: what proves they did not move is
 * their run counts (confirm_still()), not the pause, which need not last
 * while they are read. */
static void record_stills(struct sampler *s, int n, uint64_t t_ns)
{
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (t && t->still && (!s->o.gil_only || holds_gil(&s->ts[i])))
			record_thread(s, t, &s->ts[i], t_ns);
	}
}

/* After the pause: a thread left running as still that ran during the
 * round may have moved while its stack was read; that stack is not
 * counted (it is late), and the thread is stopped again next round. */
static void confirm_still(struct sampler *s)
{
	for (int i = 0; i < s->nthreads; i++) {
		struct sthread *t = &s->threads[i];
		uint64_t run_ns, runs;

		if (!t->still)
			continue;
		t->still = false;
		if (proc_schedstat_read(t->sched_fd, &run_ns, &runs) == 0 &&
		    run_ns == t->still_run_ns && runs == t->still_runs)
			continue;
		t->still_proved = false;
		t->reuse.n = 0;
		t->last_read.valid = false;
		if (nsample_drop_still(s->ns, t->tid)) {
			s->stacks--;
			s->still_stacks--;
			s->late++;
		}
	}
}

/* The threads a pause leaves running, into s->skip: without --idle,
 * every thread but the Python threads whose state, read before the pause,
 * says they run.  wanted() records none of the others this round, so
 * their stacks need not hold still; and stopping a sleeping thread means
 * waking it and waiting until it is scheduled only to enter its stop,
 * which takes milliseconds when the job's other threads keep every CPU
 * busy.  A thread with no Python state (a C library's worker) is never
 * recorded.  What stays right:
 *  - the reads of what threads share (the interpreter's thread list, code
 *    objects) are of hostile memory anyway, as without --blocking;
 *  - a thread that wakes during the round is not recorded, as one that
 *    wakes after its state was read always was;
 *  - a thread with no state yet, or started since the last pause, is
 *    stopped; a thread the pause did not stop (one that took Python up
 *    since, or was started by one left running) is neither read as
 *    stopped nor unwound (pause_holds() in wanted());
 *  - a thread of unknown tid might be any: then every thread is stopped;
 *  - with --idle every thread is wanted, so every thread is stopped;
 *    with --native --idle, all but those proved still (still_thread()),
 *    whose stacks are read left running, and the threads with no Python
 *    state. */
static int leave_running(struct sampler *s)
{
	bool stills = s->o.idle && s->ns;
	int n = 0, nkeep = 0;

	for (int i = 0; i < s->nthreads; i++) {
		s->threads[i].still = false;
		if (!s->threads[i].tid)
			return 0;
	}
	if (s->o.idle && !stills)
		return 0;
	for (int i = 0; i < s->nthreads; i++) {
		struct sthread *t = &s->threads[i];
		bool keep = stills ? !still_thread(s, t) : !t->state || t->state == 'R';

		if (keep) {
			ALLOC_GROW(s->keep, nkeep + 1, s->keep_cap);
			s->keep[nkeep++] = t->tid;
			continue;
		}
		t->still = stills;
		ALLOC_GROW(s->skip, n + 1, s->skip_cap);
		s->skip[n++] = t->tid;
	}
	pause_hint_rest(&s->pause_hint, s->pid, s->keep, nkeep, &s->skip, &n, &s->skip_cap);
	return n;
}

/* With --blocking: stop the target's running threads, timing the stop from
 * the first interrupt (pause->began_ns) to the last thread let go (see
 * release()). */
static int pause_target(struct sampler *s, struct pause *pause, uint64_t t_ns)
{
	int rc, n;

	if (!s->o.blocking)
		return 0;
	if (s->ns)
		nsample_begin(s->ns, t_ns);
	n = leave_running(s);
	rc = pause_process_except(s->pid, pause, &s->pause_hint, s->skip, n);
	if (rc < 0) {
		if (proc_exiting(s->pid))
			return status_fail(EXIT_EXITED);
		s->errors[SERR_PAUSE]++;
		return -1;
	}
	return 0;
}

/* Let the target go, then do what could wait: the stacks of the threads
 * left running as still (of this round's ts[0..n)), and the native merge. */
static void release(struct sampler *s, struct pause *pause, int n, uint64_t t_ns)
{
	uint64_t ns;

	if (!s->o.blocking)
		return;
	s->late += pause->nlate;
	if (pause->nlate > s->max_late)
		s->max_late = pause->nlate;
	pause_release(pause);
	if (s->ns) {
		record_stills(s, n, t_ns);
		confirm_still(s);
	}
	/* A round that seized no thread (all asleep, left running) held
	 * nothing: its pause is 0, not the time spent looking. */
	ns = pause->began_ns ? pause->released_ns - pause->began_ns : 0;
	s->pauses++;
	s->pause_ns += ns;
	if (ns > s->max_pause_ns)
		s->max_pause_ns = ns;
	hist_add(&s->pause_hist, ns);
	if (s->ns) {
		s->errors[SERR_MERGE] += nsample_finish(s->ns, t_ns);
		s->errors[SERR_SYMBOLS] = nsample_symbol_errors(s->ns);
		s->errors[SERR_GAP] = nsample_gaps(s->ns);
	}
}

/* Has the process run exec()?  Its memory is then another program's, and
 * every later sample would be an error.  Another executable shows in
 * /proc/PID/exe; the same one run afresh (os.execv(sys.executable, ...))
 * has its _PyRuntime elsewhere, or is not Python yet: looked for at most
 * once a second, as finding the interpreter means reading its ELF files. */
static bool replaced(struct sampler *s, uint64_t t_ns)
{
	struct pyinterp pi;
	struct stat st;
	char err[256];
	bool moved;

	if (stat_exe(s->pid, &st) < 0)
		return false;
	if (s->exe.st_ino && (st.st_dev != s->exe.st_dev || st.st_ino != s->exe.st_ino))
		return true;
	if (s->relocated_ns && t_ns - s->relocated_ns < NAME_REFRESH_NS)
		return false;
	s->relocated_ns = t_ns ? t_ns : 1;
	if (locate_python(s->pid, s->direct, &pi, err, sizeof(err)) < 0)
		return !proc_exiting(s->pid);
	moved = pi.runtime != s->pi.runtime;
	pyinterp_free(&pi);
	return moved;
}

/* Read the threads' states this round?  Without --idle they decide which
 * stacks count; with it they only feed the active share, for which one
 * look every STATE_EVERY_NS is plenty (each costs a /proc read per
 * thread, the largest part of a cheap round). */
static bool want_states(struct sampler *s, uint64_t t_ns)
{
	if (!s->o.idle)
		return true;
	if (s->states_at_ns && t_ns + 1 - s->states_at_ns < STATE_EVERY_NS)
		return false;
	s->states_at_ns = t_ns + 1;
	return true;
}

/* A listing and walk of the threads with them running, as a round makes
 * them: each thread's entry found, the code objects decoded into the
 * cache.  all: every thread, else only those a round without --idle
 * would read (running, by the states just read). */
static void warm_walk(struct sampler *s, uint64_t t_ns, bool all)
{
	uint64_t gil;
	char err[256];
	int n = pystack_tstates(s->m, &s->pi, s->ts, MAX_THREADS, &gil, err, sizeof(err));

	for (int i = 0; i < n; i++)
		if (s->ts[i].nparts)
			s->ts_thread[i] = (int)(find_thread(s, &s->ts[i], n) - s->threads);
	if (all)
		refresh_names(s, t_ns);
	else
		read_states(s);
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (!t || (!all && !s->o.idle && t->state && t->state != 'R'))
			continue;
		resolve_frames(s, t, walk_parts(s, t, &s->ts[i]));
		t->reuse.n = 0;
		t->last_read.valid = false;
	}
}

/* Before the first pause: what costs most the first time and needs no
 * pause is done with the threads running.  Their thread states are
 * listed, their entries made and named (a name is read from the threading
 * module: slow when cold), their stacks walked once so that the code objects
 * are decoded into the cache, which proves each one's identity when it is
 * used.  Naming threads was most of a first pause that did it (bench/README,
 * "late").  Nothing read here is counted, and nothing of a stack
 * is kept: frame reuse and unchanged stacks are proved by reads under the
 * pause.
 *
 * Then the page cache is made to hold what a round reads, and only that:
 * the pages of the names and of the code objects' bodies are forgotten (in
 * the first pause's batch they were most of its reading), and a second listing
 * and walk, of the threads the first pause will read, leaves the ranges
 * it used to be fetched in one batch under that pause rather than a read
 * per page (bench/scale's 200-thread process: a page per thread state).  The
 * threads are listed for the pause too, so that the first one, like every
 * later one, leaves the threads it will not read running: stopping a
 * torch pool's spinning threads made that first pause's stop long, with
 * some of them late (bench/README, "scale"). */
static void warm_up(struct sampler *s, uint64_t t_ns)
{
	warm_walk(s, t_ns, true);
	mem_cache_forget(s->m);
	code_cache_round(s->cc);
	warm_walk(s, t_ns, false);
	mem_cache_reset(s->m);
	/* The first round proves each code object's identity afresh. */
	code_cache_round(s->cc);
	pause_hint_list(&s->pause_hint, s->pid);
	s->warm = true;
}

int sampler_sample(struct sampler *s, uint64_t t_ns)
{
	struct pause pause = { 0 };
	uint64_t gil;
	char err[256];
	bool states;
	int n, rc;

	s->round_ns = mono_ns();
	mem_cache_reset(s->m);
	code_cache_round(s->cc);
	async_locate_retry(s, t_ns);
	states = want_states(s, t_ns);
	if (s->o.blocking && !s->warm)
		warm_up(s, t_ns);
	if (states)
		read_states(s);
	rc = pause_target(s, &pause, t_ns);
	if (rc < 0)
		return is_fail(rc, EXIT_EXITED) ? rc : 0;
	n = pystack_tstates(s->m, &s->pi, s->ts, MAX_THREADS, &gil, err, sizeof(err));
	if (n < 0) {
		release(s, &pause, 0, t_ns);
		if (is_fail(n, EXIT_EXITED) || proc_exiting(s->pid))
			return status_fail(EXIT_EXITED);
		if (replaced(s, t_ns))
			return status_fail(EXIT_NOT_PYTHON);
		/* A worker found while its interpreter starts up is not
		 * failing: it has nothing to show yet. */
		if (!s->rounds && is_fail(n, EXIT_BAD_STATE))
			s->unready++;
		else
			s->errors[SERR_STATE]++;
		return 0;
	}
	s->rounds++;
	s->gil_rounds += gil != 0;
	for (int i = 0; i < n; i++) {
		struct sthread *t;

		/* The outer parts of an OS thread's stack go with the first. */
		if (!s->ts[i].nparts)
			continue;
		/* Found once a round: its identity is proved here, and the
		 * table grows only here. */
		t = find_thread(s, &s->ts[i], n);
		s->ts_thread[i] = (int)(t - s->threads);
		s->seen++;
		t->seen = true;
	}
	/* A new thread gets its name before its first stack is counted, so
	 * its root frame carries the name from the start. */
	if (s->names_stale)
		refresh_names(s, t_ns);
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (!t)
			continue;
		/* Unknown counts as running, as in wanted(). */
		if (states) {
			s->checked++;
			s->active += !t->state || t->state == 'R';
		}
		if (!t->still && !t->id_unproven && wanted(s, t, &pause, holds_gil(&s->ts[i])))
			record_thread(s, t, &s->ts[i], t_ns);
	}
	if (!s->o.blocking)
		count_held(s, t_ns);
	record_pending(s, n, t_ns);
	release(s, &pause, n, t_ns);
	drop_gone(s);
	refresh_names(s, t_ns);
	return 0;
}

void sampler_counts(const struct sampler *s, struct sampler_counts *c)
{
	c->rounds = s->rounds;
	c->gil_rounds = s->gil_rounds;
	c->threads = s->seen;
	c->active = s->active;
	c->checked = s->checked;
	c->stacks = s->stacks;
	c->unchanged_stacks = s->unchanged_stacks;
	c->still_stacks = s->still_stacks;
	memcpy(c->errors, s->errors, sizeof(c->errors));
	c->nthreads = s->nthreads;
	c->unready = s->unready;
	c->pauses = s->pauses;
	c->pause_ns = s->pause_ns;
	c->max_pause_ns = s->max_pause_ns;
	c->pause_hist = s->pause_hist;
	c->late = s->late;
	c->max_late = s->max_late;
}

void sampler_set_idle(struct sampler *s, bool idle)
{
	s->o.idle = idle;
}

void sampler_set_root(struct sampler *s, const char *label)
{
	struct pframe f = { PF_PROCESS, (char *)label, NULL, -1, -1 };

	s->proc_root = label ? profile_frame(s->p, &f) : NO_FRAME;
}

pid_t sampler_pid(const struct sampler *s)
{
	return s->pid;
}

const char *sampler_merge_error(const struct sampler *s)
{
	return s->ns && s->errors[SERR_MERGE] ? nsample_last_error(s->ns) : NULL;
}

const char *sampler_python_version(const struct sampler *s)
{
	return s->pi.version;
}
