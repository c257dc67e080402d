#include "sample/snapshot.h"
#include "target/mem.h"
#include "native/unwind.h"
#include "target/pause.h"
#include "target/nsmap.h"
#include "target/proc.h"
#include "native/symbolize.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	if (rc == -EXIT_EXITED || process_exiting(pid)) {
		snprintf(err, errlen, "process %d exited while it was being read", (int)pid);
		return -EXIT_EXITED;
	}
	if (rc == -EXIT_PERMISSION)
		permission_message(pid, err, errlen);
	return rc;
}

int snapshot_take(pid_t pid, const struct snapshot_opts *o, struct snapshot *s,
		  char *err, size_t errlen)
{
	struct walk_opts wo = { .locals = o->locals, .deep_locals = o->deep_locals };
	struct pause pause = { 0 };
	struct mem *m = mem_proc_open(pid);
	struct native_unwinder *nu = NULL;
	struct native_capture *nc = NULL;
	struct nsmap nsm;
	pid_t *tids = NULL;
	char *states = NULL;
	int ntids, rc, n;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	nsmap_open(&nsm, NULL, pid);
	s->ns_pid = nsm.ns_pid;
	rc = locate_python(pid, m, &s->pi, err, errlen);
	if (rc < 0) {
		rc = rc == -EXIT_PERMISSION || rc == -EXIT_EXITED ? classify_failure(pid, rc, err, errlen) : rc;
		goto out;
	}
	s->argv = proc_cmdline(pid, &s->argc);

	/* Scheduler states first: once we stop a thread it is not running. */
	ntids = proc_tasks(pid, &tids);
	if (ntids < 0) {
		rc = classify_failure(pid, -EXIT_EXITED, err, errlen);
		goto out;
	}
	states = xcalloc(ntids + 1, 1);
	for (int i = 0; i < ntids; i++)
		states[i] = proc_task_state(pid, tids[i]);

	if (!o->nonblocking) {
		rc = pause_process(pid, &pause);
		if (rc < 0) {
			rc = classify_failure(pid, rc, err, errlen);
			goto out;
		}
	}
	/* Native stacks in the same stop as the Python ones, or they
	 * would not fit together. */
	if (o->native && !o->nonblocking) {
		nu = native_open(pid);
		nc = merge_capture_native(nu, &pause);
	}
	n = pystack_threads(m, &s->pi, &wo, &s->threads, err, errlen);
	if (n >= 0)
		pystack_thread_names(m, &s->pi, s->threads, n);
	if (nc && n >= 0)
		merge_capture_python(nc, m, &s->pi, wo.max_depth);
	pause_release(&pause);
	if (n < 0) {
		rc = n == -EXIT_PERMISSION || n == -EXIT_EXITED || proc_check(pid) < 0
			? classify_failure(pid, n, err, errlen) : n;
		goto out;
	}
	s->nthreads = n;
	map_tids(m, &s->pi, &nsm, s->threads, n, tids, ntids);
	for (int i = 0; i < n; i++) {
		struct py_thread *t = &s->threads[i];

		for (int j = 0; j < ntids; j++)
			if (tids[j] == t->tid)
				t->idle = states[j] != 'R';
	}
	if (nc) {
		struct symbolizer *sym = symbolizer_new(pid, SYMBOLIZE_LINES);

		s->mixed = merge_finish(nc, sym, &s->pi, s->threads, n);
		symbolizer_free(sym);
	}
	rc = 0;
out:
	pause_release(&pause);
	merge_capture_free(nc);
	native_close(nu);
	free(states);
	free(tids);
	nsmap_free(&nsm);
	mem_close(m);
	if (rc < 0)
		snapshot_free(s);
	return rc;
}

void snapshot_free(struct snapshot *s)
{
	for (int i = 0; s->mixed && i < s->nthreads; i++)
		mixed_stack_release(&s->mixed[i]);
	free(s->mixed);
	py_threads_free(s->threads, s->nthreads);
	proc_cmdline_free(s->argv);
	pyinterp_free(&s->pi);
	memset(s, 0, sizeof(*s));
}
