#include "cmd/snapshot.h"
#include "process/mem.h"
#include "process/core.h"
#include "native/unwind.h"
#include "process/pause.h"
#include "process/nsmap.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "native/symbolize.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

/* Before 3.11 thread states do not record the OS thread id. */
static void fill_tids(struct mem *m, struct py_thread *t, int n, const pid_t *tids, int ntids)
{
	uint64_t *idents = xcalloc(n ? n : 1, sizeof(*idents));
	int off;

	for (int i = 0; i < n; i++)
		idents[i] = t[i].ident;
	off = pystack_tid_offset(m, idents, n, tids, ntids);
	for (int i = 0; off >= 0 && i < n; i++) {
		int32_t tid;

		if (mem_read_i32(m, t[i].ident + off, &tid) == 0)
			t[i].tid = tid;
	}
	free(idents);
}

/* The interpreter records the ids threads have in the process's own PID
 * namespace; everything we do with a thread (its /proc entry, ptrace, the
 * native unwind) needs ours.  Before 3.11 the ids are found in struct
 * pthread, which also holds the namespace's: look for those. */
static void map_tids(struct mem *m, const struct pyinterp *pi, struct nsmap *nsm,
		     struct py_thread *t, int n, const pid_t *tids, int ntids)
{
	pid_t *ns_tids = NULL;
	int nns;

	if (pi->layout.tstate.native_thread_id == NONE) {
		nns = nsm->nested ? nsmap_ns_tids(nsm, &ns_tids) : ntids;
		fill_tids(m, t, n, ns_tids ? ns_tids : tids, nns);
		free(ns_tids);
	}
	for (int i = 0; i < n; i++) {
		t[i].ns_tid = t[i].tid;
		t[i].tid = nsmap_host_tid(nsm, t[i].tid);
	}
}

/* Is the process gone or on its way out?  An exiting process has released
 * its memory (nothing mapped) or is a zombie; ptrace then fails with EPERM
 * even for root, which must not read as a permission problem. */
static bool process_exiting(pid_t pid)
{
	char path[64], *maps;
	size_t len = 0;

	if (proc_exiting(pid))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = read_file(path, &len);
	free(maps);
	return maps && len == 0;
}

/* After a failed read, tell "it exited" apart from "it is garbage". */
static int classify_failure(pid_t pid, int rc, char *err, size_t errlen)
{
	if (is_fail(rc, EXIT_EXITED) || process_exiting(pid)) {
		snprintf(err, errlen, "process %d exited while it was being read", (int)pid);
		return status_fail(EXIT_EXITED);
	}
	if (is_fail(rc, EXIT_PERMISSION))
		permission_message(pid, err, errlen);
	return rc;
}

/* Before pausing: where the tasks are.  ASYNCIO_NOT_IMPORTED when there
 * is nothing to read (noted, not an error), 0, or status_fail(EXIT_*). */
static int async_prepare(const struct locate_src *src, struct mem *m, struct snapshot *s,
			 struct asyncio_layout *A, char *err, size_t errlen)
{
	int rc = asyncio_locate(src, m, &s->pi, A, err, errlen);

	if (rc == ASYNCIO_NOT_IMPORTED)
		s->async_note = xstrdup(err);
	return rc;
}

/* While paused (or not): the tasks, through a page cache (thousands of
 * small reads), each re-checked against the process when it runs on. */
static int async_read(struct mem *m, struct snapshot *s, const struct asyncio_layout *A,
		      bool nonblocking, char *err, size_t errlen)
{
	struct mem *cache = mem_cache_new(m);
	int rc;

	mem_cache_reset(cache);
	rc = asyncio_tasks(cache, &s->pi, A, nonblocking ? m : NULL, &s->tasks, err, errlen);
	mem_close(cache);
	return rc;
}

/* Each task's thread, from the thread state whose list holds it. */
static void task_threads(struct snapshot *s)
{
	for (int i = 0; i < s->tasks.n; i++)
		for (int k = 0; s->tasks.v[i].tstate && k < s->nthreads; k++)
			if (s->threads[k].tstate == s->tasks.v[i].tstate)
				s->tasks.v[i].tid = s->threads[k].tid;
}

/* A thread late to its stop (a machine short of CPU, an uninterruptible
 * sleep) is read where it sleeps but without native frames, which dump
 * --native is asked for: it tries again, each pause still bounded and let
 * go at once when a thread is late, the bound four times longer each try
 * (2 ms to 128 ms), and first waits as long, for the late thread to take
 * its stop and be let go. */
#define SNAPSHOT_PAUSES 4
#define SNAPSHOT_FIRST_BOUND_NS (2 * 1000 * 1000ull)

static int pause_for_snapshot(pid_t pid, struct pause *p, bool native)
{
	uint64_t bound = SNAPSHOT_FIRST_BOUND_NS;

	for (int i = 1;; i++, bound *= 4) {
		int rc = pause_process_within(pid, p, bound);

		if (rc < 0 || !native || !p->nlate || i == SNAPSHOT_PAUSES)
			return rc;
		pause_release(p);
		nanosleep(&(struct timespec){ 0, (long)bound }, NULL);
	}
}

/* Every thread's Python stack and name: how many, or a negative status. */
static int python_threads(struct mem *m, struct snapshot *s, struct walk_opts *wo,
			  char *err, size_t errlen)
{
	int n = pystack_threads(m, &s->pi, wo, &s->threads, err, errlen);

	if (n >= 0)
		pystack_thread_names(m, &s->pi, s->threads, n);
	return n;
}

/* --- from a live process ---------------------------------------------------- */

/* What reading a live process holds until it is done. */
struct live {
	pid_t pid;
	struct mem *m;
	struct locate_src src;
	struct nsmap nsm;
	struct pause pause;
	struct native_unwinder *nu;
	struct native_capture *nc;
	struct asyncio_layout A;
	bool async;
	pid_t *tids;
	char *states;		/* each of tids' scheduler state */
	int ntids;
};

/* Before pausing: the interpreter, the command line, where the tasks are,
 * and the threads' scheduler states. */
static int live_prepare(struct live *l, struct snapshot *s, char *err, size_t errlen)
{
	pid_t pid = l->pid;
	int rc = locate_python(&l->src, l->m, &s->pi, err, errlen);

	if (rc < 0) {
		if (is_fail(rc, EXIT_PERMISSION) || is_fail(rc, EXIT_EXITED))
			rc = classify_failure(pid, rc, err, errlen);
		return rc;
	}
	s->argv = proc_cmdline(pid, &s->argc);
	s->ppid = proc_parent(pid);
	/* Unreadable (another user's, without the right to trace it) is
	 * an unknown job, not a failure: the stacks are what was asked. */
	job_ident_read(pid, &s->job);
	if (l->async && (rc = async_prepare(&l->src, l->m, s, &l->A, err, errlen)) != 0) {
		if (rc < 0)
			return rc;
		l->async = false;
	}

	/* Scheduler states first: once we stop a thread it is not running. */
	l->ntids = proc_tasks(pid, &l->tids);
	if (l->ntids < 0)
		return classify_failure(pid, status_fail(EXIT_EXITED), err, errlen);
	l->states = xcalloc(l->ntids + 1, 1);
	for (int i = 0; i < l->ntids; i++)
		l->states[i] = proc_task_state(pid, l->tids[i]);
	return 0;
}

/* Paused (or not): every thread's stack, native ones with it, and the
 * tasks.  The number of threads, or a negative status. */
static int live_read(struct live *l, const struct snapshot_opts *o, struct snapshot *s,
		     char *err, size_t errlen)
{
	struct walk_opts wo = { .locals = o->locals, .deep_locals = o->deep_locals };
	int rc, n, arc = 0;

	if (!o->nonblocking) {
		rc = pause_for_snapshot(l->pid, &l->pause, o->native);
		if (rc < 0)
			return classify_failure(l->pid, rc, err, errlen);
	}
	/* Native stacks in the same stop as the Python ones, or they
	 * would not fit together. */
	if (o->native && !o->nonblocking) {
		l->nu = native_open(l->pid);
		l->nc = merge_capture_native(l->nu, &l->pause);
	}
	n = python_threads(l->m, s, &wo, err, errlen);
	if (l->nc && n >= 0)
		merge_capture_python(l->nc, l->m, &s->pi, wo.max_depth);
	if (l->async && n >= 0)
		arc = async_read(l->m, s, &l->A, o->nonblocking, err, errlen);
	pause_release(&l->pause);
	if (n < 0 && (is_fail(n, EXIT_PERMISSION) || is_fail(n, EXIT_EXITED) ||
		      proc_check(l->pid) < 0))
		return classify_failure(l->pid, n, err, errlen);
	if (n < 0)
		return n;
	s->nthreads = n;
	return arc < 0 ? arc : n;
}

/* The threads' ids as we see them, which are idle, and the native frames
 * named and merged. */
static void live_finish(struct live *l, struct snapshot *s)
{
	int n = s->nthreads;

	map_tids(l->m, &s->pi, &l->nsm, s->threads, n, l->tids, l->ntids);
	s->idle_known = true;
	for (int i = 0; i < n; i++) {
		struct py_thread *t = &s->threads[i];

		for (int j = 0; j < l->ntids; j++)
			if (l->tids[j] == t->tid)
				t->idle = l->states[j] != 'R';
		if (!t->name && t->tid == l->pid)
			t->name = xstrdup(PY_MAIN_THREAD_NAME);
	}
	task_threads(s);
	if (l->nc) {
		struct symbolizer *sym = symbolizer_new(l->pid, SYMBOLIZE_LINES);

		s->mixed = merge_finish(l->nc, sym, &s->pi, s->threads, n);
		symbolizer_free(sym);
	}
}

/* The target is never left paused, whatever happens. */
static int take_live(pid_t pid, const struct snapshot_opts *o, struct snapshot *s,
		     char *err, size_t errlen)
{
	struct live l = { .pid = pid, .m = mem_proc_open(pid), .async = o->async };
	int rc;

	s->pid = pid;
	nsmap_open(&l.nsm, NULL, pid);
	s->ns_pid = l.nsm.ns_pid;
	locate_src_live(&l.src, pid);
	rc = live_prepare(&l, s, err, errlen);
	if (rc == 0)
		rc = live_read(&l, o, s, err, errlen);
	if (rc >= 0) {
		live_finish(&l, s);
		rc = 0;
	}
	pause_release(&l.pause);
	merge_capture_free(l.nc);
	native_close(l.nu);
	free(l.states);
	free(l.tids);
	locate_src_release(&l.src);
	nsmap_free(&l.nsm);
	mem_close(l.m);
	return rc;
}

/* --- from a core ---------------------------------------------------------- */

/* The command line as the kernel kept it in the core: cut at 80 bytes, its
 * words split at spaces (one allocation, as proc_cmdline() makes). */
static char **split_args(const char *psargs, int *argc)
{
	char *buf, *save = NULL;
	char **argv = xcalloc(sizeof(((struct core_info *)0)->psargs) / 2 + 2, sizeof(*argv));
	char *w;

	while (*psargs == ' ')
		psargs++;	/* so that argv[0] is buf, which frees all */
	buf = xstrdup(psargs);
	*argc = 0;
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		argv[(*argc)++] = w;
	if (!*argc) {
		free(buf);
		free(argv);
		return NULL;
	}
	return argv;
}

/* The threads' ids: recorded by 3.11+, else found in struct pthread as
 * for a live process, among the core's threads. */
static void core_tids(struct mem *m, const struct pyinterp *pi, const struct core *c,
		      struct py_thread *t, int n)
{
	const struct core_thread *ct;
	int nct = core_threads(c, &ct);
	pid_t *tids = xcalloc(nct ? nct : 1, sizeof(*tids));

	for (int i = 0; i < nct; i++)
		tids[i] = ct[i].tid;
	if (pi->layout.tstate.native_thread_id == NONE)
		fill_tids(m, t, n, tids, nct);
	for (int i = 0; i < n; i++)
		t[i].ns_tid = t[i].tid;
	free(tids);
}

static void core_facts(struct snapshot *s, const struct core_opts *co, const struct core *c)
{
	const struct core_info *info = core_info(c);
	const char *const *notes;
	struct stat st;

	s->pid = s->ns_pid = info->pid;
	s->core = xstrdup(co->path);
	s->root = co->root ? xstrdup(co->root) : NULL;
	if (stat(co->path, &st) == 0)
		s->core_ns = (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
			     (unsigned long long)st.st_mtim.tv_nsec;
	s->argv = split_args(info->psargs, &s->argc);
	s->signo = info->signo;
	s->crash_tid = info->crash_tid;
	s->have_addr = info->have_addr;
	s->fault_addr = info->addr;
	s->nnotes = core_notes(c, &notes);
	s->notes = xcalloc(s->nnotes + 1, sizeof(*s->notes));
	for (int i = 0; i < s->nnotes; i++)
		s->notes[i] = xstrdup(notes[i]);
	s->incomplete = core_incomplete(c);
}

/* A failure in a core that misses something is more likely the missing
 * part's doing than the process's: say so, with its own exit code. */
static int core_failure(const struct core *c, const char *path, int rc, char *err, size_t errlen)
{
	const char *const *notes;
	char buf[512];

	if (!core_incomplete(c) || core_notes(c, &notes) <= 0)
		return rc;
	snprintf(buf, sizeof(buf), "%s", err);
	if (is_fail(rc, EXIT_NOT_PYTHON))
		snprintf(err, errlen, "no Python interpreter found in core %s: %s", path, notes[0]);
	else
		snprintf(err, errlen, "%s (%s)", buf, notes[0]);
	return status_fail(EXIT_CORE_INCOMPLETE);
}

static int core_io_open(void *arg, const char *path)
{
	return core_open_path(arg, path);
}

/* Every thread of the core unwound from its registers, by the live
 * path's unwinder over the core's memory and mappings. */
static struct native_capture *core_capture_native(struct core *c, struct native_unwinder **nu)
{
	const struct core_thread *ct;
	int n = core_threads(c, &ct);
	pid_t *tids = xcalloc(n ? n : 1, sizeof(*tids));
	struct user_regs_struct *regs = xcalloc(n ? n : 1, sizeof(*regs));
	char *maps = core_maps_text(c);
	struct native_capture *nc;

	for (int i = 0; i < n; i++) {
		tids[i] = ct[i].tid;
		memcpy(&regs[i], ct[i].regs, sizeof(regs[i]));
	}
	*nu = native_open_mem(core_info(c)->pid, core_mem(c), maps);
	nc = merge_capture_regs(*nu, tids, regs, n);
	free(maps);
	free(regs);
	free(tids);
	return nc;
}

/* Name the native frames through the core's files and merge. */
static void core_merge(struct snapshot *s, struct core *c, struct native_capture *nc)
{
	struct symbolize_io io = { core_io_open, c };
	struct symbolizer *sym = symbolizer_new_io(core_info(c)->pid, SYMBOLIZE_LINES, &io);

	s->mixed = merge_finish(nc, sym, &s->pi, s->threads, s->nthreads);
	symbolizer_free(sym);
}

/* --async on a core: its tasks, read as a paused process's are.  A core
 * of a process that had not imported asyncio gets the note, not an error. */
static int core_async(struct snapshot *s, const struct locate_src *src, struct mem *m,
		      char *err, size_t errlen)
{
	struct asyncio_layout A;
	int rc = async_prepare(src, m, s, &A, err, errlen);

	if (rc == ASYNCIO_NOT_IMPORTED)
		return 0;
	if (rc < 0)
		return rc;
	rc = async_read(m, s, &A, false, err, errlen);
	if (rc == 0)
		task_threads(s);
	return rc;
}

static int take_core(const struct core_opts *co, const struct snapshot_opts *o,
		     struct snapshot *s, char *err, size_t errlen)
{
	struct walk_opts wo = { .locals = o->locals, .deep_locals = o->deep_locals };
	struct native_unwinder *nu = NULL;
	struct native_capture *nc = NULL;
	struct locate_src src;
	struct core *c = NULL;
	struct mem *m;
	int rc, n;

	rc = core_open(co->path, co->root, co->exe, &c, err, errlen);
	if (rc < 0)
		return rc;
	m = core_mem(c);
	locate_src_core(&src, c, co->path);
	rc = locate_python(&src, m, &s->pi, err, errlen);
	if (rc < 0) {
		rc = core_failure(c, co->path, rc, err, errlen);
		goto out;
	}
	n = python_threads(m, s, &wo, err, errlen);
	if (n < 0) {
		rc = core_failure(c, co->path, n, err, errlen);
		goto out;
	}
	s->nthreads = n;
	core_tids(m, &s->pi, c, s->threads, n);
	if (o->async && (rc = core_async(s, &src, m, err, errlen)) < 0)
		goto out;
	if (o->native) {
		nc = core_capture_native(c, &nu);
		merge_capture_python(nc, m, &s->pi, wo.max_depth);
		core_merge(s, c, nc);
	}
	core_facts(s, co, c);	/* last: reading may have added notes */
	rc = 0;
out:
	merge_capture_free(nc);
	native_close(nu);
	locate_src_release(&src);
	core_close(c);
	return rc;
}

/* --- either ------------------------------------------------------------------ */

int snapshot_take(pid_t pid, const struct core_opts *core, const struct snapshot_opts *o,
		  struct snapshot *s, char *err, size_t errlen)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = core ? take_core(core, o, s, err, errlen) : take_live(pid, o, s, err, errlen);
	if (rc < 0)
		snapshot_free(s);
	return rc;
}

void snapshot_free(struct snapshot *s)
{
	for (int i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	free(s->core);
	free(s->root);
	for (int i = 0; s->mixed && i < s->nthreads; i++)
		mixed_stack_release(&s->mixed[i]);
	free(s->mixed);
	py_threads_free(s->threads, s->nthreads);
	py_tasks_free(&s->tasks);
	free(s->async_note);
	proc_cmdline_free(s->argv);
	pyinterp_free(&s->pi);
	memset(s, 0, sizeof(*s));
}
