/* The insides of struct sampler, shared by the files that take a sample.
 * Internal to src/sample: its callers see only sampler.h, so that struct
 * sampler can change without them.
 *
 * A sampler is a few parts, each owning its fields, each with the file of
 * the functions that touch them (and what it calls, always down this
 * list: no two of these files call each other):
 *   sampler.c       one round: list the threads, pause, read, count; open,
 *                   close, warm-up (calls every part below)
 *   reread.c        torn stacks read again until they hold (sample_stack.c,
 *                   held.c)
 *   sample_pause.c  struct pausing: which threads a pause stops, and the
 *                   still threads read as it holds (sample_stack.c)
 *   sample_stack.c  struct stack_walk: one thread's stack read, proved and
 *                   counted (held.c, sample_tasks.c)
 *   sample_tasks.c  struct async_state: asyncio tasks in a sample
 *                   (sthreads.c)
 *   held.c          struct held: stacks read without a pause, held until
 *                   the recheck proves them
 *   sthreads.c      struct thread_table: the target's threads, across
 *                   rounds
 * and the counters, a struct sampler_counts that every part adds to.
 *
 * Four ideas of a thread that does not move, one word each:
 *   idle       not running (its state is not R): counted only with --idle;
 *   unchanged  its stack taken whole from the last round, as it has not
 *              held the GIL since (sample_stack.c's unchanged()):
 *              unchanged_stacks;
 *   still      with --native --idle, asleep, left running by the pause, its
 *              native frames from its last unwind, proved by its run counts
 *              (sample_pause.c's still_thread()): still_stacks;
 *   skip       left running by the pause (pause_process_except()'s skip):
 *              a still thread, or one this round does not read. */
#ifndef PYSTROBE_SAMPLER_INT_H
#define PYSTROBE_SAMPLER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sample/sampler.h"
#include "python/asyncio.h"
#include "python/codecache.h"
#include "python/framereuse.h"
#include "python/pystack.h"
#include "python/recheck.h"
#include "process/mem.h"
#include "process/nsmap.h"
#include "process/pause.h"

#define MAX_THREADS 1024
#define NAME_REFRESH_NS 1000000000ull
#define NO_FRAME UINT32_MAX

struct sampler;

/* --- sthreads.c: the table of the target's threads ------------------------ */

struct sthread {
	uint64_t ident;
	pid_t ns_tid;		/* the thread state's own OS id (-1: none readable) */
	/* Before 3.11: the id its descriptor held when this round found it
	 * (0: none), which a stack read without a pause must still find
	 * there once it is read (sample_stack.c's recheck_tstate()). */
	pid_t desc_tid;
	pid_t tid;
	int stat_fd;		/* /proc/PID/task/TID/stat, kept open */
	char state;		/* read before this round's pause */
	char *name;
	uint32_t pthread;	/* index in the profile's thread table */
	uint32_t root;		/* its root frame (with --threads) */
	bool seen;
	/* Found with no id (see find_thread()): not counted until it is
	 * found so again a round later. */
	bool id_unproven;
	struct frame_reuse reuse;	/* its frames of the last round */
	struct recheck_ref proved;	/* the words of its last proved stack */
	/* With --native --idle, still this round: see sample_pause.c's
	 * still_thread(). */
	bool still;
	bool still_proved;	/* since the run counts below were read */
	/* With --blocking, wanted this round but not held by its pause (not
	 * stopped in time, or started since its listing), or held where its
	 * stack could not be read (sample_stack.c's walk_failed()): read
	 * running once the pause is over, as without --blocking
	 * (sample_pause.c's record_late()). */
	bool late;
	uint64_t late_base;	/* its profile thread's samples before that read */
	uint64_t walked_round;	/* the round that last walked it (count.rounds) */
	/* The pages that walk read (see stack_hints()). */
	struct mem_range pages[MEM_CACHE_LOG_MAX];
	int npages;
	uint64_t still_run_ns, still_runs;
	int sched_fd;		/* its /proc schedstat: -1 not opened yet, -2 cannot */
	/* Where its last proved stack (reuse) was read from: see
	 * sample_stack.c's unchanged(). */
	struct {
		bool valid;
		uint64_t tstate, frame, switches;
		int64_t interp;
		enum walk_end end;
	} last_read;
};

struct thread_table {
	struct sthread *v;
	int n;
	size_t cap;
	int tid_offset;		/* < 3.11: tid inside struct pthread; -2 unknown */
	uint64_t tid_offset_retry;	/* not found: the round to look again */
	int tid_offset_tries;		/* searches that found none */
	struct nsmap nsm;	/* its threads' ids in its PID namespace -> ours */
	bool names_stale;
	uint64_t names_due_ns;	/* next refresh_names() without new threads */
};

void read_states(struct sampler *s);
/* The entry of a thread state's OS thread, made if new. */
struct sthread *find_thread(struct sampler *s, const struct py_tstate *ts, int n);
void drop_gone(struct sampler *s);
void sthread_release(struct sthread *t);	/* its file, name and frames */
void threads_release(struct thread_table *tt);
void refresh_names(struct sampler *s, uint64_t t_ns);

/* --- held.c: stacks held until the recheck proves them -------------------- */

struct redo {		/* whose a held stack is, to read it again if torn */
	int thread;	/* in s->threads */
	int ts;		/* in s->ts */
};

struct pending {
	uint32_t pthread;
	size_t off;		/* its frames in pend_frames */
	uint32_t depth;
	bool failed;		/* its walk failed: never proved */
	struct redo who;
	struct recheck_ref *ref;	/* its thread's last proved words, or NULL */
};

/* Without --blocking: the stacks of a round, counted once the recheck has
 * proved them (see recheck.h), and the threads none of whose stacks held,
 * to be read again (reread.c). */
struct held {
	struct recheck rc;	/* the words that prove them, by stack */
	struct pending *pend;
	size_t npend, pend_cap;
	uint32_t *pend_frames;
	size_t npend_frames, pend_frames_cap;
	bool *torn;
	size_t torn_cap;
	struct redo *redo;	/* the threads none of whose stacks held */
	size_t nredo, redo_cap;
	uint8_t *proof;		/* each thread's enum proof (held.c), this round */
	size_t proof_cap;
	uint32_t *renum;	/* held stacks kept: their new numbers */
	size_t renum_cap;
	/* By held stack, for the recheck: proved by its thread's last
	 * proved words (recheck_match()), their thread's words, and whether
	 * to keep its own as those. */
	bool *known, *keep;
	struct recheck_ref **refs;
	size_t known_cap, keep_cap, refs_cap;
	/* A cache of its own for reading torn stacks again, so that the
	 * round's keeps its pages for the next round's prefetch. */
	struct mem *fresh;
};

/* Keep a stack of this round until the recheck has proved it; a failed
 * walk (stack NULL) is kept too, for its thread to be read again.  ref:
 * the thread's last proved words, which may prove it and which it becomes
 * once proved (NULL: none kept); it lives until held_end(). */
void held_add(struct held *h, uint32_t pthread, struct redo who, const uint32_t *stack,
	      uint32_t depth, struct recheck_ref *ref);
/* A round's proving begins: no thread of the nthreads is done. */
void held_begin(struct held *h, int nthreads);
/* Count into p, for each thread not done yet, the first of its held
 * stacks whose words all still hold (read through direct), or are its
 * thread's last proved ones (adding those to *matched).  Returns how
 * many. */
uint64_t held_count_proved(struct held *h, struct mem *direct, struct profile *p,
			   uint64_t t_ns, uint64_t *matched);
/* The threads still open into h->redo; returns how many. */
size_t held_keep_open(struct held *h);
/* A thread read again that has no stack to hold. */
void held_done(struct held *h, int thread);
/* Forget every stack held, for the next round. */
void held_end(struct held *h);
void held_release(struct held *h);

/* --- sample_tasks.c: asyncio tasks (--async) ------------------------------ */

struct async_state {
	struct asyncio_layout A;	/* once ready */
	bool ready;
	uint64_t tried_ns;		/* last look for _asyncio (not loaded yet) */
	struct asyncio_memo *memo;	/* --async=all: tasks kept across samples */
	struct task_ids *tids;
};

int running_task_head(struct sampler *s, const struct py_tstate *ts, uint32_t *stack,
		      uint32_t *depth);
void record_pending(struct sampler *s, int nts, uint64_t t_ns);
void async_locate_retry(struct sampler *s, uint64_t t_ns);
void async_release(struct async_state *as);

/* --- sample_stack.c: one thread's stack ----------------------------------- */

/* The walk of the thread being read. */
struct stack_walk {
	/* Its reader: s->m, or (reading torn stacks again) held.fresh. */
	struct mem *m;
	uint32_t frames[PYSTACK_MAX_DEPTH + 2];		/* profile frame ids */
	struct reuse_frame raw[PYSTACK_MAX_DEPTH];	/* the frames as read */
	int nframes;
	uint32_t owner;		/* the held stack it will be */
	bool live;		/* of a running thread: proved by the recheck */
	uint64_t link;		/* where the walk came from: see collect_frame() */
	/* Its thread stopped alone (reread.c): walked as a running one is,
	 * counted at once as a paused one is; failed, if its walk did. */
	bool stopped, failed;
};

/* A sample of one thread lost outright (SERR_TORN or SERR_GONE): counted
 * for the summary and as its thread's loss (profile/loss.h). */
void lose_sample(struct sampler *s, uint32_t pthread, enum serr why);

/* Add to r[*n..max) the ranges a walk of t this round would read that the
 * last round did not: t is to be walked (not unchanged) and was not walked
 * then.  The pages its last walk read say where. */
void stack_hints(const struct sampler *s, const struct sthread *t, const struct py_tstate *ts,
		 struct mem_range *r, int *n, int max);
/* Returns whether a stack (or a failed walk) was held for the recheck
 * (never when s->walk.stopped). */
bool record_thread(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		   uint64_t t_ns);
/* Walk t's stack with it running, for the code objects it decodes into
 * the cache, keeping nothing of it (sampler.c's warm_up()). */
void warm_stack(struct sampler *s, struct sthread *t, const struct py_tstate *ts);

/* --- sample_pause.c: the pause ------------------------------------------- */

struct pausing {
	struct pause_hint hint;	/* the threads the last pause stopped */
	pid_t *skip;		/* the threads a pause leaves running */
	size_t skip_cap;
	pid_t *keep;		/* and the Python threads it stops */
	size_t keep_cap;
};

/* With --blocking: stop the target's threads that this round reads.
 * Returns 0, -1 when they could not be stopped (counted), or
 * status_fail(EXIT_EXITED). */
int pause_target(struct sampler *s, struct pause *pause, uint64_t t_ns);
/* Let the target go, then do what could wait (of this round's ts[0..n)),
 * the late threads' stacks held for count_held().  Returns whether any
 * was. */
bool release(struct sampler *s, struct pause *pause, int n, uint64_t t_ns);
/* Its part after the still threads: the late threads' stacks, read
 * running and held.  Returns whether there was any. */
bool record_late(struct sampler *s, int n, uint64_t t_ns);
void pausing_release(struct pausing *pz);

/* --- reread.c ------------------------------------------------------------- */

void count_held(struct sampler *s, uint64_t t_ns);

/* --- sampler.c: the sampler ----------------------------------------------- */

/* After record_late(): the late threads' stacks proved and counted (with
 * --native each a loss of its thread's, PLOSS_LATE), and t->late
 * cleared. */
void count_late(struct sampler *s, uint64_t t_ns);

struct sampler {
	pid_t pid;
	struct sampler_opts o;
	uint64_t interval_ns;	/* sampler_interval_ns(o.rate_hz) */
	struct mem *m;		/* through the page cache */
	struct mem *direct;
	struct pyinterp pi;
	struct profile *p;
	struct code_cache *cc;
	struct nsample *ns;	/* with --native */
	/* Frames of its own in the profile. */
	uint32_t truncated_marker;	/* "<truncated>" */
	uint32_t gc_frame;		/* "<gc>", the collector running */
	uint32_t late_marker;		/* PLOSS_LATE_FRAME, with --native */
	uint32_t proc_root;		/* root frame naming the process, or NO_FRAME */
	bool warm;			/* warm_up() done */
	uint64_t states_at_ns;		/* when the states were last read, + 1 */
	struct stat exe;		/* /proc/PID/exe at the start, to see an exec */
	uint64_t relocated_ns;		/* last look for an exec of the same program */

	/* This round. */
	uint64_t round_ns;		/* when it started (mono_ns()) */
	struct py_tstate ts[MAX_THREADS];
	int ts_thread[MAX_THREADS];	/* ts[i]'s index in threads (parts' first) */
	bool ts_walk[MAX_THREADS];	/* ts[i]'s thread is read this round */

	/* The parts. */
	struct thread_table threads;
	struct stack_walk walk;
	struct held held;
	struct async_state async;
	struct pausing pausing;
	struct sampler_counts count;	/* running totals (nthreads unused) */
};

/* The entry of this round's thread state i, found by find_thread(); NULL
 * for an outer part of an OS thread's stack (it goes with the first). */
static inline struct sthread *thread_of(struct sampler *s, int i)
{
	return s->ts[i].nparts ? &s->threads.v[s->ts_thread[i]] : NULL;
}

/* Does the OS thread run Python code, in any of its interpreters: hold a
 * GIL, or on a free-threaded build be attached (what --gil keeps)? */
static inline bool runs_python(const struct py_tstate *ts)
{
	for (int p = 0; p < ts->nparts; p++)
		if (py_tstate_runs(&ts[p]))
			return true;
	return false;
}

#endif
