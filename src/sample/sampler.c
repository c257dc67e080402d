/* One sample of one process (sampler_sample): list its threads, pause it
 * if asked, read every wanted thread's stack and count it in the profile;
 * and the sampler's life around the rounds (open, warm-up, an exec seen,
 * close).  The loop that calls it at each deadline, for a process and its
 * descendants, is fleet.c.  The parts a round asks for (a thread's stack,
 * the pause, torn stacks read again, the thread table, asyncio tasks) are
 * files of their own, listed with their state in sampler_int.h. */
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
#include "profile/loss.h"
#include "sample/taskids.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* With --idle no thread's state decides which stacks count: it is read
 * only this often (want_states()), and where nothing reads it at all
 * (states_unused) only STATE_RARE_NS. */
#define STATE_EVERY_NS 10000000ull
#define STATE_RARE_NS 1000000000ull
/* Most ranges fetch_stacks() fetches ahead in a round: two per frame. */
#define FETCH_HINTS_MAX 512

const char *serr_name(enum serr e)
{
	static const char *const names[] = {
		[SERR_TORN] = "torn stack",
		[SERR_STATE] = "interpreter state unreadable",
		[SERR_PAUSE] = "could not pause",
		[SERR_MERGE] = "merge error",
		[SERR_SYMBOLS] = "symbolization helper lost",
		[SERR_GAP] = "native gap",
		[SERR_GONE] = "thread ended while read",
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
	struct locate_src src;
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
	s->walk.m = s->m;
	recheck_reset(&s->held.rc);
	s->threads.tid_offset = -2;
	nsmap_open(&s->threads.nsm, NULL, pid);
	locate_src_live(&src, pid);
	rc = locate_python(&src, s->direct, &s->pi, err, errlen);
	if (rc == 0 && o->async)
		rc = asyncio_locate(&src, s->direct, &s->pi, &s->async.A, err, errlen);
	locate_src_release(&src);
	if (rc < 0)
		goto fail;
	s->async.ready = o->async && rc == 0;
	if (stat_exe(pid, &s->exe) < 0)
		memset(&s->exe, 0, sizeof(s->exe));
	s->cc = code_cache_new(s->m, &s->pi.layout, p, o->by_function);
	s->truncated_marker = profile_frame(p, &(struct pframe){ PF_MARKER, "<truncated>", NULL, -1, -1 });
	/* A function of its own (no file), so that top has a row for it. */
	s->gc_frame = profile_frame(p, &(struct pframe){ PF_PYTHON, "<gc>", NULL, -1, -1 });
	s->proc_root = NO_FRAME;
	s->late_marker = NO_FRAME;
	if (o->native)
		s->late_marker = profile_frame(p, &(struct pframe){ PF_MARKER, PLOSS_LATE_FRAME,
								    NULL, -1, -1 });
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
	threads_release(&s->threads);
	held_release(&s->held);
	nsample_close(s->ns);
	pausing_release(&s->pausing);
	code_cache_free(s->cc);
	async_release(&s->async);
	pyinterp_free(&s->pi);
	mem_close(s->m);
	mem_close(s->direct);
	free(s);
}

/* --- one sample ----------------------------------------------------------- */

static bool wanted(const struct sampler *s, const struct sthread *t, bool runs)
{
	/* --gil: the GIL's holder, or on a free-threaded build (3.13t),
	 * which has no GIL, every thread attached to the interpreter. */
	if (s->o.gil_only && !runs)
		return false;
	/* A thread seen for the first time has no state read before the
	 * pause: count it rather than guess it idle. */
	if (!s->o.idle && t->state && t->state != 'R')
		return false;
	return true;
}

/* Has the process run exec()?  Its memory is then another program's, and
 * every later sample would be an error.  Another executable shows in
 * /proc/PID/exe; the same one run afresh (os.execv(sys.executable, ...))
 * has its _PyRuntime elsewhere, or is not Python yet: looked for at most
 * once a second, as finding the interpreter means reading its ELF files. */
static bool replaced(struct sampler *s, uint64_t t_ns)
{
	struct locate_src src;
	struct pyinterp pi;
	struct stat st;
	char err[256];
	bool moved;
	int rc;

	if (stat_exe(s->pid, &st) < 0)
		return false;
	if (s->exe.st_ino && (st.st_dev != s->exe.st_dev || st.st_ino != s->exe.st_ino))
		return true;
	if (s->relocated_ns && t_ns - s->relocated_ns < NAME_REFRESH_NS)
		return false;
	s->relocated_ns = t_ns ? t_ns : 1;
	locate_src_live(&src, s->pid);
	rc = locate_python(&src, s->direct, &pi, err, sizeof(err));
	locate_src_release(&src);
	if (rc < 0)
		return !proc_exiting(s->pid);
	moved = pi.runtime != s->pi.runtime;
	pyinterp_free(&pi);
	return moved;
}

/* Read the threads' states this round?  Without --idle they decide which
 * stacks count; with it they only feed each sample's running mark
 * (--waits), top's active count and which threads a pause stops, for
 * which one look every STATE_EVERY_NS is plenty (each costs a /proc read
 * per thread, the largest part of a cheap round).  Where none of those
 * reads them (states_unused), a look a second: at 1 kHz on four busy
 * threads those reads were 9% of record's CPU (bench/README, "peers"). */
static bool want_states(struct sampler *s, uint64_t t_ns)
{
	uint64_t every = s->o.states_unused && !s->o.blocking ? STATE_RARE_NS : STATE_EVERY_NS;

	if (!s->o.idle)
		return true;
	if (s->states_at_ns && t_ns + 1 - s->states_at_ns < every)
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
			s->ts_thread[i] = (int)(find_thread(s, &s->ts[i], n) - s->threads.v);
	if (all)
		refresh_names(s, t_ns);
	else
		read_states(s);
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (!t || (!all && !s->o.idle && t->state && t->state != 'R'))
			continue;
		warm_stack(s, t, &s->ts[i]);
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
	pause_hint_list(&s->pausing.hint, s->pid);
	s->warm = true;
}

/* A thread the pause did not stop in time, or one started by a thread it
 * left running after its last listing, is not read as if it held still
 * (--native could not unwind it either): rather than left out, it is read
 * running once the pause is over (release()), as without --blocking.  So
 * is one the pause held where its stack could not be read (a frame half
 * pushed: sample_stack.c's walk_failed()), rather than lost.  (A still
 * one is read after the pause too: record_stills().)  Those stacks are
 * proved here as without a pause, and counted; one that stays torn, or
 * whose thread ended, is lost and counted so by count_held(), once, and
 * is no late sample.  With --native each one counted lacks its native
 * frames (PLOSS_LATE_FRAME holds their place), a loss of its thread's;
 * without, nothing is lost. */
void count_late(struct sampler *s, uint64_t t_ns)
{
	int n = 0;

	count_held(s, t_ns);
	for (int i = 0; i < s->threads.n; i++) {
		struct sthread *t = &s->threads.v[i];

		if (!t->late)
			continue;
		t->late = false;
		if (s->p->threads[t->pthread].samples == t->late_base)
			continue;
		if (s->ns) {
			n++;
			profile_lose(s->p, t->pthread, PLOSS_LATE);
		}
	}
	s->count.late += n;
	if (n > s->count.max_late)
		s->count.max_late = n;
}

/* Which of this round's n threads are read now (ts_walk[]): those wanted,
 * but for one the pause does not hold, read after it (count_late()). */
static void choose_threads(struct sampler *s, int n, const struct pause *pause, bool states)
{
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		s->ts_walk[i] = false;
		if (!t)
			continue;
		/* Unknown counts as running, as in wanted(). */
		if (states) {
			s->count.checked++;
			s->count.active += !t->state || t->state == 'R';
		}
		s->ts_walk[i] = !t->still && !t->id_unproven &&
				wanted(s, t, runs_python(&s->ts[i]));
		if (s->ts_walk[i] && s->o.blocking && !pause_holds(pause, t->tid)) {
			t->late = true;
			s->ts_walk[i] = false;
		}
	}
}

/* The ranges the threads about to be walked will read and the last round
 * did not (sample_stack.c's stack_hints()), in one batch. */
static void fetch_stacks(struct sampler *s, int n)
{
	struct mem_range r[FETCH_HINTS_MAX];
	int nr = 0;

	for (int i = 0; i < n && nr < FETCH_HINTS_MAX; i++)
		if (s->ts_walk[i])
			stack_hints(s, thread_of(s, i), &s->ts[i], r, &nr, FETCH_HINTS_MAX);
	if (nr)
		mem_cache_fetch(s->m, r, nr);
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
		if (!s->count.rounds && is_fail(n, EXIT_BAD_STATE))
			s->count.unready++;
		else
			s->count.errors[SERR_STATE]++;
		return 0;
	}
	s->count.rounds++;
	s->count.gil_rounds += gil != 0;
	s->count.ft_rounds += s->pi.layout.free_threaded;
	for (int i = 0; i < n; i++) {
		struct sthread *t;

		/* The outer parts of an OS thread's stack go with the first. */
		if (!s->ts[i].nparts)
			continue;
		/* Found once a round: its identity is proved here, and the
		 * table grows only here. */
		t = find_thread(s, &s->ts[i], n);
		s->ts_thread[i] = (int)(t - s->threads.v);
		s->count.threads++;
		s->count.attached += s->pi.layout.free_threaded && runs_python(&s->ts[i]);
		t->seen = true;
	}
	/* A new thread gets its name before its first stack is counted, so
	 * its root frame carries the name from the start. */
	if (s->threads.names_stale)
		refresh_names(s, t_ns);
	choose_threads(s, n, &pause, states);
	fetch_stacks(s, n);
	for (int i = 0; i < n; i++)
		if (s->ts_walk[i])
			record_thread(s, thread_of(s, i), &s->ts[i], t_ns);
	if (!s->o.blocking)
		count_held(s, t_ns);
	record_pending(s, n, t_ns);
	if (release(s, &pause, n, t_ns))
		count_late(s, t_ns);
	drop_gone(s);
	refresh_names(s, t_ns);
	return 0;
}

void sampler_counts(const struct sampler *s, struct sampler_counts *c)
{
	*c = s->count;
	c->nthreads = s->threads.n;
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
	return s->ns && s->count.errors[SERR_MERGE] ? nsample_last_error(s->ns) : NULL;
}

const char *sampler_python_version(const struct sampler *s)
{
	return s->pi.version;
}
