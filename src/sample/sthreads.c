/* The sampler's table of the target's threads: each Python thread's OS
 * thread id (found once, through the PID namespace), its /proc stat file
 * kept open for its state, its name and root frame in the profile, and its
 * frames of the last round.  Separate from sampler.c because it is
 * bookkeeping kept across rounds, not the reading of one: a round asks it
 * for a thread state's entry (find_thread()) and, around its walks, to
 * read the states, refresh the names and forget the threads gone. */
#include "sample/sampler_int.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "process/nsmap.h"
#include "process/proc.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void read_states(struct sampler *s)
{
	for (int i = 0; i < s->threads.n; i++)
		s->threads.v[i].state = read_state(s->threads.v[i].stat_fd);
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

/* Before 3.11 the id is at an offset in the C library's thread
 * descriptor, found by checking the threads' descriptors against the
 * process's threads (pystack_tid_offset()).  A read without a pause can
 * list too few threads to tell (a list cut short by a thread that ended
 * as it was read: once only one, itself ended), so a search that fails is
 * repeated after 1, 2, 4 ... rounds, at most TID_OFFSET_RETRY_MAX apart.
 * Until TID_OFFSET_PATIENCE searches have failed, a thread is taken for
 * one whose id cannot be told yet (its stack not counted: under
 * "thread 0" it would be no thread at all); after that, threads are told
 * apart by ident alone, so that a C library whose layout is never found
 * still gets its stacks counted. */
#define TID_OFFSET_RETRY_MAX 128
#define TID_OFFSET_PATIENCE 8

static void find_tid_offset(struct sampler *s, int n)
{
	struct thread_table *tt = &s->threads;
	pid_t *tids;
	int ntids = nsmap_ns_tids(&tt->nsm, &tids);
	uint64_t idents[MAX_THREADS];
	int k = 0, wait;

	tt->tid_offset = -1;
	if (ntids >= 0) {
		/* Once per OS thread: the offset must give each a tid of its own. */
		for (int i = 0; i < n; i++)
			if (s->ts[i].nparts)
				idents[k++] = s->ts[i].ident;
		tt->tid_offset = pystack_tid_offset(s->m, idents, k, tids, ntids);
		free(tids);
	}
	if (tt->tid_offset >= 0)
		return;
	wait = tt->tid_offset_tries < 7 ? 1 << tt->tid_offset_tries : TID_OFFSET_RETRY_MAX;
	tt->tid_offset_tries++;
	tt->tid_offset_retry = s->count.rounds + (uint64_t)wait;
}

/* The OS thread id of a thread state, in the process's own PID namespace
 * (what the interpreter and its C library record): 0 when the state shows
 * none (see find_thread()), -1 when no id can be read in this process
 * (the descriptor's layout not found, after TID_OFFSET_PATIENCE tries). */
static pid_t ns_tid_of(struct sampler *s, const struct py_tstate *ts, int n)
{
	const struct thread_table *tt = &s->threads;
	int32_t tid;

	/* 3.11+ keep it in the thread state: there is no descriptor to read. */
	if (ts->tid || s->pi.layout.tstate.native_thread_id != NONE)
		return ts->tid;
	if (tt->tid_offset == -2 ||
	    (tt->tid_offset == -1 && s->count.rounds >= tt->tid_offset_retry))
		find_tid_offset(s, n);
	if (tt->tid_offset < 0)
		return ts->ident && tt->tid_offset_tries >= TID_OFFSET_PATIENCE ? -1 : 0;
	if (mem_read_i32(s->m, ts->ident + tt->tid_offset, &tid) < 0)
		return 0;
	return tid;
}

struct sthread *find_thread(struct sampler *s, const struct py_tstate *ts, int n)
{
	struct sthread *t;

	/* The thread id (pthread_t) is an address the C library hands the
	 * next thread once one ends, with its stack: a thread started
	 * between two rounds has the last one's.  Its OS thread id proves
	 * it is the same thread (from the thread state on 3.11+, else read
	 * from the C library's thread descriptor); an entry whose id differs
	 * is left unseen, and dropped.  A thread state not showing its id
	 * (a thread binding to it has set its ident, not yet its native id;
	 * or, read from the descriptor, the thread has ended since its state
	 * was listed: the kernel clears the id on exit) is the entry's thread
	 * only while that thread still exists.  Otherwise it gets an entry
	 * of its own, unproven: most such threads have ended, and are gone
	 * by the next round, but a running thread's descriptor can read 0
	 * for good (seen on 3.7 with glibc 2.36, a thread in _bootstrap
	 * holding the GIL: a detached thread's stack handed on before the
	 * kernel cleared its id?).  Its stacks count from the second round
	 * it is found so, under no id.  Where no id can be read at all (-1),
	 * the ident alone is all there is to go by. */
	pid_t ns_tid = ns_tid_of(s, ts, n);

	for (int i = 0; i < s->threads.n; i++) {
		t = &s->threads.v[i];
		if (t->ident != ts->ident)
			continue;
		if (t->ns_tid == ns_tid || (!ns_tid && read_state(t->stat_fd))) {
			if (t->ns_tid == ns_tid)
				t->id_unproven = false;
			t->desc_tid = ts->tid ? 0 : ns_tid;
			return t;
		}
	}
	ALLOC_GROW(s->threads.v, s->threads.n + 1, s->threads.cap);
	t = &s->threads.v[s->threads.n++];
	memset(t, 0, sizeof(*t));
	t->ident = ts->ident;
	t->ns_tid = ns_tid;
	t->desc_tid = ts->tid ? 0 : ns_tid;
	t->id_unproven = !ns_tid;
	t->tid = ns_tid > 0 ? nsmap_host_tid(&s->threads.nsm, ns_tid) : 0;
	t->stat_fd = t->tid ? proc_task_open(s->pid, t->tid, "stat") : -1;
	t->sched_fd = -1;
	t->pthread = profile_thread(s->p, s->pid, t->tid, NULL);
	t->root = thread_root(s, t);
	/* Not paused: its state now is as good as before the round. */
	if (!s->o.blocking)
		t->state = read_state(t->stat_fd);
	s->threads.names_stale = true;
	return t;
}

/* Forget threads that were not in this round's thread list. */
void drop_gone(struct sampler *s)
{
	int j = 0;

	for (int i = 0; i < s->threads.n; i++) {
		struct sthread *t = &s->threads.v[i];

		if (t->seen) {
			t->seen = false;
			s->threads.v[j++] = *t;
			continue;
		}
		sthread_release(t);
	}
	s->threads.n = j;
}

void sthread_release(struct sthread *t)
{
	if (t->stat_fd >= 0)
		close(t->stat_fd);
	if (t->sched_fd >= 0)
		close(t->sched_fd);
	free(t->name);
	frame_reuse_release(&t->reuse);
	recheck_ref_release(&t->proved);
}

void threads_release(struct thread_table *tt)
{
	for (int i = 0; i < tt->n; i++)
		sthread_release(&tt->v[i]);
	free(tt->v);
	nsmap_free(&tt->nsm);
}

/* Thread names are set after a thread starts: look them up when new
 * threads appear and once a second. */
void refresh_names(struct sampler *s, uint64_t t_ns)
{
	uint64_t idents[MAX_THREADS] = { 0 };
	char *names[MAX_THREADS];
	int n = s->threads.n < MAX_THREADS ? s->threads.n : MAX_THREADS;

	if (!s->threads.names_stale && t_ns < s->threads.names_due_ns)
		return;
	for (int i = 0; i < n; i++)
		idents[i] = s->threads.v[i].ident;
	pystack_names(s->m, &s->pi, idents, n, names);
	for (int i = 0; i < n; i++) {
		struct sthread *t = &s->threads.v[i];

		if (!names[i] && !t->name && t->tid == s->pid)
			names[i] = xstrdup(PY_MAIN_THREAD_NAME);
		if (names[i])
			name_thread(s, t, names[i]);
	}
	/* The first refresh at the pid's phase: see pid_phase(). */
	s->threads.names_due_ns = t_ns + (s->threads.names_due_ns ? NAME_REFRESH_NS
						  : pid_phase(s->pid, NAME_REFRESH_NS));
	s->threads.names_stale = false;
}
