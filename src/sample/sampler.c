/* One sample of one process (sampler_sample): pause it if asked, read every
 * thread's stack, turn code objects into profile frames through the code
 * cache, and count the stack in the profile.  The loop that calls it at
 * each deadline, for a process and its descendants, is fleet.c. */
#include "sample/sampler.h"
#include "python/codecache.h"
#include "python/framereuse.h"
#include "python/recheck.h"
#include "target/mem.h"
#include "native/nsample.h"
#include "target/nsmap.h"
#include "target/pause.h"
#include "target/proc.h"
#include "python/pystack.h"
#include "python/asyncio.h"
#include "sample/taskids.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_THREADS 1024
#define NAME_REFRESH_NS 1000000000ull
/* With --idle no thread's state decides anything: it is read only this
 * often, for the share of threads running that top shows. */
#define STATE_EVERY_NS 10000000ull
#define NO_FRAME UINT32_MAX
/* A stack that fails its recheck is read again at once, from fresh
 * memory, at most this many times (see count_held()).  A thread calling
 * tiny functions in a loop (tests/targets/torn_calls.py) tears again in
 * over 80% of its first re-reads, and less with each walk kept: of its
 * torn rounds about half are still open after 3 tries, 4-8% after 8 and
 * under 1% after 12 (3.10, 3.12).  Only torn threads pay for a try: a
 * fresh read of their pages and one recheck. */
#define TORN_RETRIES 12

struct sthread {
	uint64_t ident;
	pid_t tid;
	int stat_fd;		/* /proc/PID/task/TID/stat, kept open */
	char state;		/* read before this round's pause */
	char *name;
	uint32_t pthread;	/* index in the profile's thread table */
	uint32_t root;		/* its root frame (with --threads) */
	bool seen;
	struct frame_reuse reuse;	/* its frames of the last round */
	/* Where its last proved stack (reuse) was read from: see quiet(). */
	struct {
		bool valid;
		uint64_t tstate, frame, switches;
		int64_t interp;
		enum walk_end end;
	} quiet;
};

struct pending {
	uint32_t pthread;
	size_t off;		/* its frames in pend_frames */
	uint32_t depth;
	bool failed;		/* its walk failed: never proved */
	struct redo {		/* whose it is, to read it again if torn */
		int thread;	/* in s->threads */
		int ts;		/* in s->ts */
	} who;
};

struct sampler {
	pid_t pid;
	struct sampler_opts o;
	struct mem *m;		/* through the page cache */
	struct mem *direct;
	/* The walk's reader: m, or (reading torn stacks again) fresh, a
	 * cache of its own, so that m keeps the round's pages for the next
	 * round's prefetch. */
	struct mem *wm;
	struct mem *fresh;
	struct pyinterp pi;
	struct profile *p;
	struct code_cache *cc;
	int tid_offset;		/* < 3.11: tid inside struct pthread; -2 unknown */
	struct nsmap nsm;	/* its threads' ids in its PID namespace -> ours */
	struct sthread *threads;
	int nthreads;
	size_t threads_alloc;
	bool names_stale;
	uint64_t names_at_ns;
	struct py_tstate ts[MAX_THREADS];
	uint32_t frames[PYSTACK_MAX_DEPTH + 2];	/* profile frame ids */
	struct reuse_frame raw[PYSTACK_MAX_DEPTH];	/* the frames as read */
	int nframes;
	uint64_t stacks;
	uint64_t quiet_stacks;		/* of which taken whole from the last round */
	uint64_t errors[SERR_COUNT];
	uint64_t rounds, gil_rounds, seen, active;	/* for sampler_counts() */
	uint64_t checked;		/* threads whose state was read */
	uint64_t states_at_ns;		/* when they were last read, + 1 */
	uint64_t unready;		/* rounds before the interpreter was readable */
	uint32_t truncated_marker;	/* frame id of "<truncated>" */
	uint32_t gc_frame;		/* frame id of "<gc>", the collector running */
	uint32_t proc_root;		/* root frame naming the process, or NO_FRAME */
	/* Without --blocking: the stacks of a round, counted once the
	 * recheck has proved them (see recheck.h). */
	struct recheck rc;
	struct pending *pend;
	size_t npend, pend_cap;
	uint32_t *pend_frames;
	size_t npend_frames, pend_frames_cap;
	bool *torn;
	size_t torn_cap;
	/* Reading torn stacks again: see count_held(). */
	struct redo *redo;		/* the threads none of whose stacks held */
	size_t nredo, redo_cap;
	uint8_t *settle;		/* each thread's enum settle, this round */
	size_t settle_cap;
	uint32_t *renum;		/* held stacks kept: their new numbers */
	size_t renum_cap;
	uint64_t round_ns;		/* when this round started (mono_ns()) */
	uint32_t owner;			/* the pending stack being walked */
	uint64_t link;			/* where the walk came from: see collect_frame() */
	struct nsample *ns;		/* with --native */
	uint64_t pauses, pause_ns, max_pause_ns;
	struct hist pause_hist;
	struct pause_hint pause_hint;	/* the threads the last pause stopped */
	pid_t *asleep;			/* the threads a pause leaves running */
	size_t asleep_cap;
	pid_t *keep;			/* and the Python threads it stops */
	size_t keep_cap;
	struct asyncio_layout A;	/* with o.async, once async_ready */
	bool async_ready;
	struct asyncio_memo *amemo;	/* --async=all: tasks kept across samples */
	struct task_ids *tids;
	uint64_t async_tried_ns;	/* last look for _asyncio (not loaded yet) */
	struct stat exe;		/* /proc/PID/exe at the start, to see an exec */
	uint64_t relocated_ns;		/* last look for an exec of the same program */
};

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

static int stat_exe(pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, st);
}

struct sampler *sampler_open(pid_t pid, const struct sampler_opts *o, struct profile *p,
			     int *rcp, char *err, size_t errlen)
{
	struct sampler *s = xcalloc(1, sizeof(*s));
	int rc;

	s->pid = pid;
	s->o = *o;
	/* Native stacks are read from stopped threads only. */
	s->o.blocking |= o->native;
	s->p = p;
	s->direct = mem_proc_open(pid);
	s->m = mem_cache_new(s->direct);
	s->wm = s->m;
	recheck_reset(&s->rc);
	s->tid_offset = -2;
	nsmap_open(&s->nsm, NULL, pid);
	rc = locate_python(pid, s->direct, &s->pi, err, errlen);
	if (rc < 0) {
		*rcp = -rc;
		sampler_close(s);
		return NULL;
	}
	if (o->async && (rc = asyncio_locate(pid, s->direct, &s->pi, &s->A, err, errlen)) < 0 &&
	    rc != -ENOENT) {
		*rcp = -rc;
		sampler_close(s);
		return NULL;
	}
	s->async_ready = o->async && rc == 0;
	if (stat_exe(pid, &s->exe) < 0)
		memset(&s->exe, 0, sizeof(s->exe));
	s->cc = code_cache_new(s->m, &s->pi.layout, p, o->by_function);
	s->truncated_marker = profile_frame(p, &(struct pframe){ PF_MARKER, "<truncated>", NULL, -1, -1 });
	/* A function of its own (no file), so that top has a row for it. */
	s->gc_frame = profile_frame(p, &(struct pframe){ PF_PYTHON, "<gc>", NULL, -1, -1 });
	s->proc_root = NO_FRAME;
	if (o->native)
		s->ns = nsample_open(pid, &s->pi, p, o->by_function, s->truncated_marker);
	return s;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nthreads; i++) {
		if (s->threads[i].stat_fd >= 0)
			close(s->threads[i].stat_fd);
		free(s->threads[i].name);
		frame_reuse_release(&s->threads[i].reuse);
	}
	free(s->threads);
	recheck_release(&s->rc);
	free(s->pend);
	free(s->pend_frames);
	free(s->torn);
	free(s->redo);
	free(s->settle);
	free(s->renum);
	nsample_close(s->ns);
	pause_hint_free(&s->pause_hint);
	free(s->asleep);
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

/* --- threads -------------------------------------------------------------- */

static char read_state(int fd)
{
	char buf[256], *p;
	ssize_t n;

	if (fd < 0)
		return 0;
	/* pread at 0 makes /proc generate the line afresh. */
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void read_states(struct sampler *s)
{
	for (int i = 0; i < s->nthreads; i++)
		s->threads[i].state = read_state(s->threads[i].stat_fd);
}

static uint32_t thread_root(struct sampler *s, struct sthread *t)
{
	struct pframe f = { PF_THREAD, NULL, NULL, -1, -1 };
	uint32_t id;

	if (t->name)
		f.name = xasprintf("thread %d \"%s\"", (int)t->tid, t->name);
	else
		f.name = xasprintf("thread %d", (int)t->tid);
	id = profile_frame(s->p, &f);
	free(f.name);
	return id;
}

static void name_thread(struct sampler *s, struct sthread *t, char *name)
{
	if (name && t->name && !strcmp(name, t->name)) {
		free(name);
		return;
	}
	free(t->name);
	t->name = name;
	t->pthread = profile_thread(s->p, s->pid, t->tid, t->name);
	t->root = thread_root(s, t);
}

/* The OS thread id of a thread state, in the process's own PID namespace
 * (what the interpreter and its C library record). */
static pid_t ns_tid_of(struct sampler *s, const struct py_tstate *ts, int n)
{
	int32_t tid;

	if (ts->tid)
		return ts->tid;
	if (s->tid_offset == -2) {
		pid_t *tids;
		int ntids = nsmap_ns_tids(&s->nsm, &tids);
		uint64_t idents[MAX_THREADS];
		int k = 0;

		if (ntids < 0)
			return 0;
		/* Once per OS thread: the offset must give each a tid of its own. */
		for (int i = 0; i < n; i++)
			if (s->ts[i].nparts)
				idents[k++] = s->ts[i].ident;
		s->tid_offset = pystack_tid_offset(s->m, idents, k, tids, ntids);
		free(tids);
	}
	if (s->tid_offset < 0 || mem_read_i32(s->m, ts->ident + s->tid_offset, &tid) < 0)
		return 0;
	return tid;
}

/* Ours, which its /proc entry, ptrace and the profile's thread use. */
static pid_t tid_of(struct sampler *s, const struct py_tstate *ts, int n)
{
	return nsmap_host_tid(&s->nsm, ns_tid_of(s, ts, n));
}

static struct sthread *find_thread(struct sampler *s, const struct py_tstate *ts, int n)
{
	struct sthread *t;
	char path[96];

	for (int i = 0; i < s->nthreads; i++)
		if (s->threads[i].ident == ts->ident)
			return &s->threads[i];
	ALLOC_GROW(s->threads, s->nthreads + 1, s->threads_alloc);
	t = &s->threads[s->nthreads++];
	memset(t, 0, sizeof(*t));
	t->ident = ts->ident;
	t->tid = tid_of(s, ts, n);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)s->pid, (int)t->tid);
	t->stat_fd = t->tid ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	t->pthread = profile_thread(s->p, s->pid, t->tid, NULL);
	t->root = thread_root(s, t);
	/* Not paused: its state now is as good as before the round. */
	if (!s->o.blocking)
		t->state = read_state(t->stat_fd);
	s->names_stale = true;
	return t;
}

/* Forget threads that were not in this round's thread list. */
static void drop_gone(struct sampler *s)
{
	int j = 0;

	for (int i = 0; i < s->nthreads; i++) {
		struct sthread *t = &s->threads[i];

		if (t->seen) {
			t->seen = false;
			s->threads[j++] = *t;
			continue;
		}
		if (t->stat_fd >= 0)
			close(t->stat_fd);
		free(t->name);
		frame_reuse_release(&t->reuse);
	}
	s->nthreads = j;
}

/* Thread names are set after a thread starts: look them up when new
 * threads appear and once a second. */
static void refresh_names(struct sampler *s, uint64_t t_ns)
{
	uint64_t idents[MAX_THREADS] = { 0 };
	char *names[MAX_THREADS];
	int n = s->nthreads < MAX_THREADS ? s->nthreads : MAX_THREADS;

	if (!s->names_stale && t_ns - s->names_at_ns < NAME_REFRESH_NS)
		return;
	for (int i = 0; i < n; i++)
		idents[i] = s->threads[i].ident;
	pystack_names(s->m, &s->pi, idents, n, names);
	for (int i = 0; i < n; i++) {
		struct sthread *t = &s->threads[i];

		if (!names[i] && !t->name && t->tid == s->pid)
			names[i] = xstrdup(PY_MAIN_THREAD_NAME);
		if (names[i])
			name_thread(s, t, names[i]);
	}
	s->names_stale = false;
	s->names_at_ns = t_ns;
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
	 * it held still: --native could not unwind it either. */
	if (s->o.blocking && !pause_holds(pause, t->tid))
		return false;
	/* A thread seen for the first time has no state read before the
	 * pause: count it rather than guess it idle. */
	if (!s->o.idle && t->state && t->state != 'R')
		return false;
	return true;
}

/* The pointers that lead a recheck to the innermost frame of a part. */
static void recheck_tstate(struct sampler *s, const struct py_tstate *ts)
{
	const struct py_layout *L = &s->pi.layout;

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
static enum walk_end walk_parts(struct sampler *s, const struct py_tstate *ts)
{
	enum walk_end end = WALK_DONE;
	int n, rc;

	s->nframes = 0;
	for (int p = 0; p < ts->nparts && end == WALK_DONE; p++) {
		int max = PYSTACK_MAX_DEPTH - s->nframes;

		if (ts[p].frame_err < 0)
			return WALK_READ_ERROR;
		if (!s->o.blocking)
			recheck_tstate(s, &ts[p]);
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

/* Keep a stack of this round until the recheck has proved it; a failed
 * walk (stack NULL) is kept too, for its thread to be read again. */
static void hold(struct sampler *s, const struct sthread *t, const struct py_tstate *ts,
		 const uint32_t *stack, uint32_t depth)
{
	struct pending *pd;

	ALLOC_GROW(s->pend_frames, s->npend_frames + depth, s->pend_frames_cap);
	if (depth)
		memcpy(s->pend_frames + s->npend_frames, stack, depth * sizeof(*stack));
	ALLOC_GROW(s->pend, s->npend + 1, s->pend_cap);
	pd = &s->pend[s->npend++];
	pd->pthread = t->pthread;
	pd->off = s->npend_frames;
	pd->depth = depth;
	pd->failed = !stack;
	pd->who = (struct redo){ (int)(t - s->threads), (int)(ts - s->ts) };
	s->npend_frames += depth;
}

/* --- asyncio tasks --------------------------------------------------------- */

/* "task NAME" frames for a chain of names, root first, onto stack. */
static void push_task_frames(struct sampler *s, char **names, int n, uint32_t *stack,
			     uint32_t *depth)
{
	for (int i = n - 1; i >= 0; i--) {
		char *label = xasprintf("task %s", names[i]);

		stack[(*depth)++] = profile_frame(s->p, &(struct pframe){ PF_MARKER, label, NULL,
									  -1, -1 });
		free(label);
		free(names[i]);
	}
}

/* With --async, a thread running a task: push the chain of tasks awaiting
 * it, root first, and return the index of the task's coroutine frame in
 * s->frames (the event loop's frames outside it are left out); otherwise
 * the outermost frame's index. */
static int running_task_head(struct sampler *s, const struct py_tstate *ts, uint32_t *stack,
			     uint32_t *depth)
{
	char *names[ASYNCIO_CHAIN_MAX];
	uint64_t task, cframe;
	int n, k;

	if (!s->o.async || !s->async_ready ||
	    asyncio_running_task(s->wm, &s->pi, &s->A, ts, &task, &cframe) < 0)
		return s->nframes - 1;
	for (k = s->nframes - 1; k >= 0; k--)
		if (s->raw[k].frame == cframe)
			break;
	if (k < 0)
		return s->nframes - 1;	/* not on this stack: a torn view */
	n = asyncio_awaiter_chain(s->wm, &s->pi, &s->A, task, names, ASYNCIO_CHAIN_MAX);
	push_task_frames(s, names, n, stack, depth);
	return k;
}

/* The chain of tasks awaiting t (t first), from the graph just read. */
static int pending_chain(const struct py_tasks *tasks, const struct py_task *t,
			 const struct py_task **chain)
{
	int n = 0;

	while (t && n < ASYNCIO_CHAIN_MAX) {
		for (int i = 0; i < n; i++)
			if (chain[i] == t)
				return n;	/* round a deadlock ring once */
		chain[n++] = t;
		t = t->nawaited_by ? py_tasks_find(tasks, t->awaited_by[0]) : NULL;
	}
	return n;
}

/* The thread a pending task is counted in: the one whose list holds it,
 * or the first when that one has exited. */
static struct sthread *task_thread(struct sampler *s, const struct py_task *t, int nts)
{
	for (int k = 0; k < nts; k++)
		if (s->ts[k].nparts && s->ts[k].addr == t->tstate)
			return find_thread(s, &s->ts[k], nts);
	return find_thread(s, &s->ts[0], nts);
}

static void record_task(struct sampler *s, const struct py_tasks *tasks, const struct py_task *t,
			int nts, uint64_t t_ns)
{
	uint32_t stack[ASYNCIO_MAX_CORO_DEPTH + ASYNCIO_CHAIN_MAX + 4], depth = 0;
	const struct py_task *chain[ASYNCIO_CHAIN_MAX];
	struct sthread *th = task_thread(s, t, nts);
	const uint32_t *ids;
	int n;

	if (s->proc_root != NO_FRAME)
		stack[depth++] = s->proc_root;
	if (s->o.threads)
		stack[depth++] = th->root;
	for (n = pending_chain(tasks, t, chain); n > 0; n--)
		stack[depth++] = task_ids_label(s->tids, chain[n - 1]);
	n = task_ids_frames(s->tids, t, &ids);
	memcpy(stack + depth, ids, n * sizeof(*ids));
	profile_add(s->p, th->pthread, stack, depth + n, t_ns, 1);
	s->stacks++;
}

/* With --async=all: every pending task's stack, counted in the thread
 * whose list holds it.  The tasks are read through a memo, and their
 * frames kept as profile frames, while they are proven unchanged. */
static void record_pending(struct sampler *s, int nts, uint64_t t_ns)
{
	struct py_tasks tasks;
	char err[256];

	if (s->o.async != ASYNC_ALL || !s->async_ready || !nts)
		return;
	if (!s->amemo) {
		s->amemo = asyncio_memo_new(s->direct);
		s->tids = task_ids_new(s->p, s->o.by_function);
	}
	if (asyncio_tasks_memo(s->m, &s->pi, &s->A, s->o.blocking ? NULL : s->direct, s->amemo,
			       &tasks, err, sizeof(err)) < 0)
		return;
	s->errors[SERR_TORN] += tasks.torn;
	py_tasks_index(&tasks);
	for (int i = 0; i < tasks.n; i++)
		if (tasks.v[i].state == TASK_PENDING && tasks.v[i].nframes)
			record_task(s, &tasks, &tasks.v[i], nts, t_ns);
	task_ids_sweep(s->tids);
	py_tasks_free(&tasks);
}

/* Find _asyncio's offsets: at the start, and (not loaded yet: a program
 * that imports asyncio later) once a second until found. */
static void async_prepare(struct sampler *s, uint64_t t_ns)
{
	char err[256];

	if (!s->o.async || s->async_ready ||
	    (s->async_tried_ns && t_ns - s->async_tried_ns < NAME_REFRESH_NS))
		return;
	s->async_tried_ns = t_ns ? t_ns : 1;
	s->async_ready = asyncio_locate(s->pid, s->direct, &s->pi, &s->A, err, sizeof(err)) == 0;
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
static bool quiet_kind(const struct sampler *s, const struct py_tstate *ts)
{
	return !s->ns && !s->o.async && ts->nparts == 1 && ts->gil_counted;
}

/* (The holder is the last holder: !gil_last covers it.) */
static bool quiet(const struct sampler *s, const struct sthread *t, const struct py_tstate *ts)
{
	return t->quiet.valid && quiet_kind(s, ts) && !ts->gil_last && !ts->frame_err &&
	       ts->addr == t->quiet.tstate && ts->frame == t->quiet.frame &&
	       ts->interp == t->quiet.interp && ts->gil_switches == t->quiet.switches;
}

/* The thread's last stack, as the walk and resolve_frames() leave it. */
static enum walk_end quiet_stack(struct sampler *s, struct sthread *t)
{
	s->nframes = (int)t->reuse.n;
	for (uint32_t i = 0; i < t->reuse.n; i++) {
		s->raw[i] = t->reuse.v[i];
		s->frames[i] = t->reuse.v[i].id;
	}
	s->quiet_stacks++;
	return t->quiet.end;
}

/* Remember where this round's stack of t was read from; without a pause
 * it counts once the recheck has proved it (count_held()). */
static void note_quiet(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		       enum walk_end end)
{
	t->quiet.valid = (end == WALK_DONE || end == WALK_TRUNCATED) && quiet_kind(s, ts);
	t->quiet.tstate = ts->addr;
	t->quiet.frame = ts->frame;
	t->quiet.interp = ts->interp;
	t->quiet.switches = ts->gil_switches;
	t->quiet.end = end;
}

/* Returns whether a stack (or a failed walk) was held for the recheck. */
static bool record_thread(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
			  uint64_t t_ns)
{
	uint32_t stack[PYSTACK_MAX_DEPTH + ASYNCIO_CHAIN_MAX + 4];
	uint32_t depth = 0, nhead;
	size_t words = s->rc.n;
	enum walk_end end;
	int outer;

	s->owner = (uint32_t)s->npend;
	if (quiet(s, t, ts)) {
		end = quiet_stack(s, t);
	} else {
		end = resolve_frames(s, t, walk_parts(s, ts));
		note_quiet(s, t, ts, end);
	}
	if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR) {
		s->rc.n = words;	/* only a stack that is held needs them */
		/* Read from a running thread, a walk fails when it is
		 * torn too (a frame freed, a chain changed under it): it is
		 * read again as a torn stack is, and counted if it stays
		 * so. */
		if (!s->o.blocking) {
			hold(s, t, ts, NULL, 0);
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
		nsample_capture(s->ns, s->m, ts, t->tid, t->pthread, stack, depth, nhead,
				end == WALK_DONE);
		return false;
	}
	if (!s->o.blocking) {
		hold(s, t, ts, stack, depth);
		return true;
	}
	s->stacks++;
	profile_add(s->p, t->pthread, stack, depth, t_ns, 1);
	return false;
}

/* Where a thread's stack stands in count_held(). */
enum settle {
	OPEN,		/* none of its stacks proved yet */
	SETTLED,	/* counted, or given up */
	LISTED,		/* OPEN, and in s->redo (while it is made) */
};

/* Count, for each thread not settled yet, the first of its held stacks
 * whose words all still hold. */
static void count_proved(struct sampler *s, uint64_t t_ns)
{
	ALLOC_GROW(s->torn, s->npend + 1, s->torn_cap);
	memset(s->torn, 0, (s->npend + 1) * sizeof(*s->torn));
	recheck_run(&s->rc, s->direct, s->torn, (uint32_t)s->npend);
	for (size_t i = 0; i < s->npend; i++) {
		const struct pending *pd = &s->pend[i];

		if (s->torn[i] || pd->failed || s->settle[pd->who.thread] != OPEN)
			continue;
		s->settle[pd->who.thread] = SETTLED;
		s->stacks++;
		profile_add(s->p, pd->pthread, s->pend_frames + pd->off, pd->depth, t_ns, 1);
	}
}

/* The threads still open into s->redo, keeping their held stacks (and the
 * words that prove them) for the next recheck; the others' are dropped.
 * Returns how many. */
static size_t keep_open(struct sampler *s)
{
	size_t kept = 0;

	s->nredo = 0;
	ALLOC_GROW(s->renum, s->npend + 1, s->renum_cap);
	for (size_t i = 0; i < s->npend; i++) {
		const struct pending *pd = &s->pend[i];
		uint8_t *st = &s->settle[pd->who.thread];

		s->renum[i] = UINT32_MAX;
		if (*st == SETTLED)
			continue;
		if (*st == OPEN) {
			*st = LISTED;
			ALLOC_GROW(s->redo, s->nredo + 1, s->redo_cap);
			s->redo[s->nredo++] = pd->who;
			/* Its last walk (reuse) is not proved. */
			s->threads[pd->who.thread].quiet.valid = false;
		}
		s->renum[i] = (uint32_t)kept;
		s->pend[kept++] = *pd;
	}
	recheck_renumber(&s->rc, s->renum, (uint32_t)s->npend);
	s->npend = kept;
	for (size_t i = 0; i < s->nredo; i++)
		s->settle[s->redo[i].thread] = OPEN;
	return s->nredo;
}

/* Walk the threads in s->redo again, from what they run now: the round's
 * cache holds the bytes they were torn from, so a cache of their own,
 * emptied first, reads them afresh (in one call: it prefetches what the
 * last such walk read).  A thread that now has no stack to hold (it left
 * Python) is settled. */
static void reread_torn(struct sampler *s, uint64_t t_ns)
{
	if (!s->fresh)
		s->fresh = mem_cache_new(s->direct);
	mem_cache_reset(s->fresh);
	s->wm = s->fresh;
	for (size_t i = 0; i < s->nredo; i++) {
		struct py_tstate *ts = &s->ts[s->redo[i].ts];
		struct sthread *t = &s->threads[s->redo[i].thread];

		for (int p = 0; p < ts->nparts; p++)
			pystack_reread_frame(s->fresh, &s->pi.layout, &ts[p]);
		if (!record_thread(s, t, ts, t_ns))
			s->settle[s->redo[i].thread] = SETTLED;
		/* The stack counted may be an earlier walk than the one its
		 * reuse now holds: taken whole again only once a round's
		 * own walk is proved. */
		t->quiet.valid = false;
	}
	s->wm = s->m;
}

/* Reading torn stacks again may take the round to half the interval
 * between samples, no further: re-reads alone never make the sampler fall
 * behind its rate (at 20 kHz a round whose every stack tears has time for
 * one or two, at 1 kHz for all). */
static bool retry_time_left(const struct sampler *s)
{
	if (s->o.rate_hz <= 0)
		return true;
	return (double)(mono_ns() - s->round_ns) < 0.5e9 / s->o.rate_hz;
}

/* Count the stacks held this round that the recheck proves.  Dropping the
 * torn ones would under-count the threads whose stacks change fastest (a
 * loop calling a small function tears far more often than one spinning in
 * one frame): each such thread is read again and rechecked, up to
 * TORN_RETRIES times, with its earlier walks kept, as any of them may hold
 * at the next recheck (the thread is back where it was).  A thread's first
 * stack proved is counted; one with none is counted as torn. */
static void count_held(struct sampler *s, uint64_t t_ns)
{
	ALLOC_GROW(s->settle, (size_t)s->nthreads + 1, s->settle_cap);
	memset(s->settle, OPEN, (size_t)s->nthreads + 1);
	for (int tries = 0;; tries++) {
		count_proved(s, t_ns);
		if (!keep_open(s))
			break;
		/* Also when their words no longer all fit (the walks after
		 * would go unproved), or the round's time is up. */
		if (tries == TORN_RETRIES || s->rc.overflow != UINT32_MAX ||
		    !retry_time_left(s)) {
			s->errors[SERR_TORN] += s->nredo;
			break;
		}
		reread_torn(s, t_ns);
	}
	s->npend = 0;
	s->npend_frames = 0;
	recheck_reset(&s->rc);
}

/* The threads a pause leaves running, into s->asleep: without --idle,
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
 *  - with --idle every thread is wanted, so every thread is stopped. */
static int leave_running(struct sampler *s)
{
	int n = 0, nkeep = 0;

	if (s->o.idle)
		return 0;
	for (int i = 0; i < s->nthreads; i++) {
		const struct sthread *t = &s->threads[i];

		if (!t->tid)
			return 0;
		if (!t->state || t->state == 'R') {
			ALLOC_GROW(s->keep, nkeep + 1, s->keep_cap);
			s->keep[nkeep++] = t->tid;
			continue;
		}
		ALLOC_GROW(s->asleep, n + 1, s->asleep_cap);
		s->asleep[n++] = t->tid;
	}
	pause_hint_rest(&s->pause_hint, s->pid, s->keep, nkeep, &s->asleep, &n, &s->asleep_cap);
	return n;
}

/* With --blocking: stop the target's running threads, timing the stop from
 * the first interrupt (*since) to the last thread let go (see release()). */
static int pause_target(struct sampler *s, struct pause *pause, uint64_t t_ns, uint64_t *since)
{
	int rc, n;

	if (!s->o.blocking)
		return 0;
	if (s->ns)
		nsample_begin(s->ns, t_ns);
	n = leave_running(s);
	*since = mono_ns();
	rc = pause_process_except(s->pid, pause, &s->pause_hint, s->asleep, n);
	if (rc < 0) {
		if (proc_exiting(s->pid))
			return -EXIT_EXITED;
		s->errors[SERR_PAUSE]++;
		return -1;
	}
	return 0;
}

/* Let the target go, then do what could wait: the native merge. */
static void release(struct sampler *s, struct pause *pause, uint64_t t_ns, uint64_t since)
{
	uint64_t ns;

	if (!s->o.blocking)
		return;
	pause_release(pause);
	ns = pause->released_ns - since;
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

int sampler_sample(struct sampler *s, uint64_t t_ns)
{
	struct pause pause = { 0 };
	uint64_t gil, since = 0;
	char err[256];
	bool states;
	int n, rc;

	s->round_ns = mono_ns();
	mem_cache_reset(s->m);
	code_cache_round(s->cc);
	async_prepare(s, t_ns);
	states = want_states(s, t_ns);
	if (states)
		read_states(s);
	rc = pause_target(s, &pause, t_ns, &since);
	if (rc < 0)
		return rc == -EXIT_EXITED ? rc : 0;
	n = pystack_tstates(s->m, &s->pi, s->ts, MAX_THREADS, &gil, err, sizeof(err));
	if (n < 0) {
		release(s, &pause, t_ns, since);
		if (n == -EXIT_EXITED || proc_exiting(s->pid))
			return -EXIT_EXITED;
		if (replaced(s, t_ns))
			return -EXIT_NOT_PYTHON;
		/* A worker found while its interpreter starts up is not
		 * failing: it has nothing to show yet. */
		if (!s->rounds && n == -EXIT_BAD_STATE)
			s->unready++;
		else
			s->errors[SERR_STATE]++;
		return 0;
	}
	s->rounds++;
	s->gil_rounds += gil != 0;
	for (int i = 0; i < n; i++) {
		/* The outer parts of an OS thread's stack go with the first. */
		if (!s->ts[i].nparts)
			continue;
		s->seen++;
		find_thread(s, &s->ts[i], n)->seen = true;
	}
	/* A new thread gets its name before its first stack is counted, so
	 * its root frame carries the name from the start. */
	if (s->names_stale)
		refresh_names(s, t_ns);
	for (int i = 0; i < n; i++) {
		struct sthread *t;

		if (!s->ts[i].nparts)
			continue;
		t = find_thread(s, &s->ts[i], n);
		/* Unknown counts as running, as in wanted(). */
		if (states) {
			s->checked++;
			s->active += !t->state || t->state == 'R';
		}
		if (wanted(s, t, &pause, holds_gil(&s->ts[i])))
			record_thread(s, t, &s->ts[i], t_ns);
	}
	if (!s->o.blocking)
		count_held(s, t_ns);
	record_pending(s, n, t_ns);
	release(s, &pause, t_ns, since);
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
	c->quiet_stacks = s->quiet_stacks;
	memcpy(c->errors, s->errors, sizeof(c->errors));
	c->nthreads = s->nthreads;
	c->unready = s->unready;
	c->pauses = s->pauses;
	c->pause_ns = s->pause_ns;
	c->max_pause_ns = s->max_pause_ns;
	c->pause_hist = s->pause_hist;
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
