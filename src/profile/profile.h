/* Aggregated samples: what `record` collects and every output format reads.
 *
 * Frames and stacks are interned as samples arrive, so memory grows with the
 * number of distinct stacks, not with the length of the recording.  For the
 * formats that show time (speedscope, Chrome trace) each thread also keeps
 * runs: consecutive samples with the same stack merge into one run.
 */
#ifndef PYSTROBE_PROFILE_H
#define PYSTROBE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/hashidx.h"

enum pframe_kind {
	PF_PYTHON,
	PF_NATIVE,
	PF_PROCESS,		/* a root frame naming a process */
	PF_THREAD,		/* a root frame naming a thread */
	PF_MARKER,		/* e.g. "<truncated>" */
	PF_LABEL,		/* a root "NAME=VALUE" naming one input of `merge` */
};

/* What a frame is drawn as, for colours. */
enum pframe_category {
	CAT_USER,		/* the program's own code */
	CAT_STDLIB,		/* the standard library */
	CAT_SITE,		/* site-packages / dist-packages */
	CAT_NATIVE,
	CAT_ROOT,		/* process and thread roots, markers */
	CAT_WAIT,		/* record --waits' "<wait:gpu>" leaves */
};

/* The names of record --waits' leaf frames start so (analysis/waitmark.h). */
#define PFRAME_WAIT_PREFIX "<wait:"

struct pframe {
	enum pframe_kind kind;
	char *name;		/* function (qualified on 3.11+), or a root's label */
	char *file;		/* as the target names it; NULL for roots */
	int line;		/* -1: unknown, or aggregated by function */
	int firstlineno;	/* the function's def line, -1 if unknown */
};

struct pstack {
	uint32_t *frames;	/* frame ids, root first */
	uint32_t depth;
	uint64_t count;		/* samples */
};

/* Why a thread's sample was lost, or counted without part of its stack
 * (profile/loss.h says what each means for the shares). */
enum ploss {
	PLOSS_TORN,		/* lost: its stack changed while it was read, re-reads too */
	PLOSS_LATE,		/* counted without native frames: not stopped in time */
	PLOSS_MERGE,		/* counted with Python frames only: the native stack did not fit */
	PLOSS_GONE,		/* lost: the thread ended while it was read */
	PLOSS_COUNT,
};

struct pthread_info {
	pid_t pid, tid;
	char *name;		/* thread name, or NULL */
	uint32_t last_run;	/* index of its latest run, or UINT32_MAX */
	bool idle;		/* its latest sample was taken while it did not run */
	uint64_t samples;	/* counted (profile_add()) */
	uint64_t loss[PLOSS_COUNT];	/* by why: profile_lose() */
};

/* A run of consecutive samples of one thread with the same stack. */
struct prun {
	uint32_t thread;
	uint32_t stack;
	uint64_t start_ns, end_ns;	/* since the profile's start */
	uint32_t samples;
};

struct pstack_thread {
	uint32_t stack, thread;
	uint64_t count;
};

/* A value measured beside the samples (a GPU's utilisation), as a series
 * of points in time: formats with a timeline draw it as a counter track
 * beside the threads. */
struct pcounter_point {
	uint64_t t_ns;		/* since the profile's start, as runs */
	double value;
};

struct pcounter {
	char *name;		/* "GPU 0 utilization" */
	char *unit;		/* "%", "MiB" */
	struct pcounter_point *points;	/* in time order */
	uint32_t npoints, points_cap;
};

struct profile {
	struct pframe *frames;
	uint32_t nframes, frames_cap;
	struct hashidx frame_index;
	uint32_t renamed;	/* profile_frame_rename() calls: labels made before are stale */

	struct pstack *stacks;
	uint32_t nstacks, stacks_cap;
	struct hashidx stack_index;

	struct pthread_info *threads;
	uint32_t nthreads, threads_cap;

	struct prun *runs;
	uint32_t nruns, runs_cap;
	/* Keep no runs: for a format that aggregates, memory then grows
	 * with the distinct stacks, not with the samples. */
	bool no_timeline;

	uint64_t samples;		/* total samples added */

	/* What was profiled, for titles and metadata. */
	char *command;			/* command line */
	pid_t pid;
	char *python_version;
	uint64_t start_unix_ns;		/* wall clock at the start */
	uint64_t duration_ns;
	/* The sampling rate asked for and its interval (1e9 / rate), as
	 * given: for the writers, never read back to drive sampling (the
	 * sampler's clock is its own, fleet.c). */
	double rate_hz;
	uint64_t interval_ns;
	uint64_t errors;		/* samples that failed */
	/* Rounds of the processes sampled, and of them those lost whole (the
	 * interpreter state unreadable, the threads not paused): every
	 * thread's alike (profile/loss.h). */
	uint64_t rounds_due, rounds_lost;
	bool wall;			/* idle threads sampled too: wall time, not CPU */

	/* Samples of a stack known to come from one thread, for profiles
	 * without runs (read from pprof, whose samples carry pid and tid, or
	 * recorded with no_timeline): one entry per (stack, thread). */
	struct pstack_thread *stack_threads;
	uint32_t nstack_threads, stack_threads_cap;
	struct hashidx stack_thread_index;

	struct pcounter *counters;
	uint32_t ncounters, counters_cap;

	/* When set, told of every sample of a thread as it is counted:
	 * watch follows each thread's stack round by round through it. */
	void (*observe)(void *arg, uint32_t thread, uint32_t stack, uint64_t t_ns);
	void *observe_arg;

	/* When set, told of every sample of a thread before it is counted,
	 * and may add frames to it (record --waits adds a "<wait:gpu>"
	 * leaf): returns the frames to count, their number in *depth. */
	const uint32_t *(*decorate)(void *arg, uint32_t thread, const uint32_t *frames,
				    uint32_t *depth);
	void *decorate_arg;
};

void profile_init(struct profile *p, double rate_hz);
void profile_free(struct profile *p);

/* Intern a frame (strings are copied); returns its id. */
uint32_t profile_frame(struct profile *p, const struct pframe *f);
/* Give frame id what f says (a native frame named once its symbols are
 * loaded): stacks holding id read the new name.  Another frame may say
 * the same; writers that go by label see one. */
void profile_frame_rename(struct profile *p, uint32_t id, const struct pframe *f);
/* Make the frames that renames left equal one frame again, so that
 * writers going by frame id (flame graph nodes, speedscope and pprof frame
 * tables) show each once: frame ids are renumbered, stacks that became
 * equal merge (their counts and per-thread counts summed), runs point at
 * the merged stacks.  Does nothing when nothing was renamed.  Call it once
 * the renames are done, before writing; never under a reader that keeps
 * frame or stack ids (`top`'s rows). */
void profile_merge_renamed(struct profile *p);
/* The frame to add innermost to a stack (frames root first), or
 * UINT32_MAX for none. */
typedef uint32_t profile_leaf_fn(void *arg, const struct profile *p, const uint32_t *frames,
				 uint32_t depth);

/* Add to each stack the leaf frame leaf() gives it: stacks that become
 * equal merge (counts summed, runs and per-thread counts pointed at the
 * merged one), as in profile_merge_renamed(), whose rules it follows. */
void profile_add_leaves(struct profile *p, profile_leaf_fn *leaf, void *arg);

/* Intern a thread of a process; returns its index. */
uint32_t profile_thread(struct profile *p, pid_t pid, pid_t tid, const char *name);
/* A thread apart from any with the same ids (another machine's: top
 * --slurm); returns its index. */
uint32_t profile_thread_new(struct profile *p, pid_t pid, pid_t tid, const char *name);
/* Intern a stack (frame ids, root first) without counting it. */
uint32_t profile_stack(struct profile *p, const uint32_t *frames, uint32_t depth);

/* Count one sample of `thread` with this stack (root first), taken t_ns
 * after the start.  weight is usually 1. */
void profile_add(struct profile *p, uint32_t thread, const uint32_t *frames,
		 uint32_t depth, uint64_t t_ns, uint32_t weight);

/* A new counter series (strings are copied); returns its index. */
uint32_t profile_counter(struct profile *p, const char *name, const char *unit);
/* Its value at t_ns (not before its latest point). */
void profile_counter_add(struct profile *p, uint32_t counter, uint64_t t_ns, double value);

/* Count samples of a stack that has no thread or time (a profile read from
 * a file).  false, adding nothing, when the total would overflow. */
bool profile_add_count(struct profile *p, const uint32_t *frames, uint32_t depth,
		       uint64_t count);

/* Note that count samples of stack came from thread (both already
 * interned), in a profile that has no runs. */
void profile_add_stack_thread(struct profile *p, uint32_t stack, uint32_t thread,
			      uint64_t count);

/* How profile_append() copies frames. */
struct append_opts {
	const struct pframe *root;	/* put below every stack, or NULL */
	/* Frames become plain text (kind PF_PYTHON, no file), so frames from
	 * a folded file and from pprof compare by what they show. */
	bool by_label;
	bool full_filenames;		/* the text with whole paths */
	bool by_function;		/* the text without line numbers */
	/* With by_label: the roots "thread 123 \"name\"" and "process 123:
	 * CMD" lose their ids, which differ from run to run, so that two
	 * recordings' threads and processes compare by name and command. */
	bool roots_by_name;
};

/* Add the stacks of src (their counts, not runs) to dst.  false when a
 * count would overflow. */
bool profile_append(struct profile *dst, const struct profile *src,
		    const struct append_opts *o);

/* profile_append(), with each stack of a thread under one more root: the
 * frame proc_root gives for the thread's process (record --slurm: its
 * rank), between o->root and the stack; NULL adds none.  src's stacks
 * come from its stack_threads (a pprof read back has them); a stack's
 * samples that no thread accounts for keep o->root alone. */
bool profile_append_by_process(struct profile *dst, const struct profile *src,
			       const struct append_opts *o,
			       const struct pframe *(*proc_root)(void *arg, pid_t pid), void *arg);

/* Drop the line number from a label "function (file:LINE)" in place, so
 * line-level and function-level profiles compare. */
void label_strip_line(char *label);

/* The runs grouped by thread, each group in time order: the runs of thread
 * t are runs[order[k]] for k from first[t] to first[t + 1].  Both arrays are
 * new; the caller frees them. */
void profile_runs_by_thread(const struct profile *p, uint32_t **first, uint32_t **order);

/* The category of a frame, from its kind and file (and, for a wait leaf,
 * its name: one read back from a folded file is a plain frame). */
enum pframe_category pframe_category(const struct pframe *f);

/* The file name to show: the whole path with full, else the path below
 * site-packages / dist-packages / lib/pythonX.Y, else the base name. */
const char *profile_display_file(const char *file, bool full);

/* "function (file:line)" or "function (file)" or the root's name, into a
 * new string. */
char *pframe_label(const struct pframe *f, bool full_filenames);

/* The label people read: pframe_label()'s, with a native frame's name
 * short (profile/shortname.h) unless full_names.  Formats with room for
 * both (tooltips, JSON, pprof) keep pframe_label() too. */
char *pframe_shown_label(const struct pframe *f, bool full_filenames, bool full_names);

#endif
