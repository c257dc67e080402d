/* The insides of struct sampler, shared by the files that take a sample:
 * sampler.c (one round: pause, walk each thread, count), sthreads.c (the
 * table of the target's threads), sample_tasks.c (asyncio tasks in a
 * sample) and reread.c (stacks read from running threads: held until the
 * recheck proves them, torn ones read again).  Internal to src/sample: its
 * callers see only sampler.h, so that struct sampler can change without
 * them.
 *
 * Four ideas of a thread that does not move, one word each:
 *   idle       not running (its state is not R): counted only with --idle;
 *   unchanged  its stack taken whole from the last round, as it has not
 *              held the GIL since (sampler.c's unchanged()): unchanged_stacks;
 *   still      with --native --idle, asleep, left running by the pause, its
 *              native frames from its last unwind, proved by its run counts
 *              (sampler.c's still_thread()): still_stacks;
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

struct sthread {
	uint64_t ident;
	pid_t ns_tid;		/* the thread state's own OS id (-1: none readable) */
	/* Before 3.11: the id its descriptor held when this round found it
	 * (0: none), which a stack read without a pause must still find
	 * there once it is read (sampler.c's recheck_tstate()). */
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
	/* With --native --idle, asleep and left running this round, counted
	 * from its last unwind: see sampler.c's still_thread(). */
	bool still;
	bool still_proved;	/* since the run counts below were read */
	uint64_t still_run_ns, still_runs;
	int sched_fd;		/* its /proc schedstat: -1 not opened yet, -2 cannot */
	/* Where its last proved stack (reuse) was read from: see sampler.c's
	 * unchanged(). */
	struct {
		bool valid;
		uint64_t tstate, frame, switches;
		int64_t interp;
		enum walk_end end;
	} last_read;
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
	uint64_t interval_ns;	/* sampler_interval_ns(o.rate_hz) */
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
	uint64_t tid_offset_retry;	/* not found: the round to look again */
	int tid_offset_tries;		/* searches that found none */
	struct nsmap nsm;	/* its threads' ids in its PID namespace -> ours */
	struct sthread *threads;
	int nthreads;
	size_t threads_alloc;
	bool names_stale;
	bool warm;			/* warm_up() done (see sampler.c) */
	uint64_t names_due_ns;		/* next refresh_names() without new threads */
	struct py_tstate ts[MAX_THREADS];
	int ts_thread[MAX_THREADS];	/* this round: ts[i]'s index in threads (parts' first) */
	uint32_t frames[PYSTACK_MAX_DEPTH + 2];	/* profile frame ids */
	struct reuse_frame raw[PYSTACK_MAX_DEPTH];	/* the frames as read */
	int nframes;
	uint64_t stacks;
	uint64_t unchanged_stacks;	/* of which taken whole from the last round */
	uint64_t still_stacks;		/* of which a thread's left running (still) */
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
	/* Reading torn stacks again: see reread.c's count_held(). */
	struct redo *redo;		/* the threads none of whose stacks held */
	size_t nredo, redo_cap;
	uint8_t *proof;			/* each thread's enum proof, this round */
	size_t proof_cap;
	uint32_t *renum;		/* held stacks kept: their new numbers */
	size_t renum_cap;
	uint64_t round_ns;		/* when this round started (mono_ns()) */
	uint32_t owner;			/* the pending stack being walked */
	uint64_t link;			/* where the walk came from: see collect_frame() */
	struct nsample *ns;		/* with --native */
	uint64_t pauses, pause_ns, max_pause_ns;
	struct hist pause_hist;
	uint64_t late;			/* see struct sampler_counts */
	int max_late;
	struct pause_hint pause_hint;	/* the threads the last pause stopped */
	pid_t *skip;			/* the threads a pause leaves running */
	size_t skip_cap;
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

/* sampler.c */
bool record_thread(struct sampler *s, struct sthread *t, const struct py_tstate *ts,
		   uint64_t t_ns);

/* sthreads.c */
void read_states(struct sampler *s);
/* The entry of a thread state's OS thread, made if new. */
struct sthread *find_thread(struct sampler *s, const struct py_tstate *ts, int n);
/* The entry of this round's thread state i, found by find_thread(); NULL
 * for an outer part of an OS thread's stack (it goes with the first). */
static inline struct sthread *thread_of(struct sampler *s, int i)
{
	return s->ts[i].nparts ? &s->threads[s->ts_thread[i]] : NULL;
}
void drop_gone(struct sampler *s);
void sthread_release(struct sthread *t);	/* its file, name and frames */
void refresh_names(struct sampler *s, uint64_t t_ns);

/* sample_tasks.c */
int running_task_head(struct sampler *s, const struct py_tstate *ts, uint32_t *stack,
		      uint32_t *depth);
void record_pending(struct sampler *s, int nts, uint64_t t_ns);
void async_locate_retry(struct sampler *s, uint64_t t_ns);

/* reread.c */
void hold_stack(struct sampler *s, const struct sthread *t, const struct py_tstate *ts,
		const uint32_t *stack, uint32_t depth);
void count_held(struct sampler *s, uint64_t t_ns);

#endif
