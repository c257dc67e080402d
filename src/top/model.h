/* What `pystrobe top` shows, computed from samples: the rows of the table,
 * the figures of the header, and the choices that shape them (sort, lines
 * or functions, which thread or process, the filter, pause).
 *
 * The sampler adds samples to the model's profile; at the end of each
 * interval the model takes them from the profile's runs, which carry the
 * thread, and drops the runs, so memory does not grow with the length of
 * the session: each (thread, stack) pair keeps a cumulative count and the
 * count of the last interval.  The rows are computed from those: a
 * function's own samples are the stacks it is the leaf of, its total
 * samples the stacks it is on (counted once per stack, however deep it
 * recurses).
 *
 * No terminal and no target here: the sampling loop hands the model its
 * totals as a struct top_tick, so tests drive it with a profile they fill
 * themselves.  Every label the model gives out went through
 * sb_add_printable(): a name from the target cannot drive a terminal.
 */
#ifndef PYSTROBE_TOP_MODEL_H
#define PYSTROBE_TOP_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sample/sampler.h"
#include "util/hashidx.h"
#include "util/util.h"

/* Header lines for the GPUs at most (a machine has eight). */
#define TOP_GPU_LINES 8

enum top_sort {
	TOP_SORT_OWN_PCT,
	TOP_SORT_TOTAL_PCT,
	TOP_SORT_OWN_TIME,
	TOP_SORT_TOTAL_TIME,
	TOP_SORT_COUNT,
};

/* The column titles, by enum top_sort. */
extern const char *const top_sort_names[TOP_SORT_COUNT];

struct top_row {
	const char *label;	/* printable; owned by the model's label caches */
	uint64_t own, total;	/* samples since the start or the reset */
	uint64_t own_last, total_last;	/* in the last interval */
};

/* The figures of the header, as of the end of an interval. */
struct top_stats {
	double elapsed_s;	/* since the start or the reset */
	uint64_t samples;	/* sampling rounds since then */
	double interval_s;	/* length of the interval */
	uint64_t rounds;	/* sampling rounds in it */
	uint64_t lagged;	/* rounds in it that started late */
	double max_lag_ms;
	double error_pct, gil_pct, active_pct;	/* < 0: nothing to tell */
	/* A free-threaded build, which has no GIL (gil_pct < 0 there): how
	 * many threads were attached to the interpreter (ran Python code
	 * at once), a round on average; < 0 on a build with a GIL. */
	double attached;
	/* Samples counted without native frames, their thread not stopped
	 * in time (--native): of those of the interval, 0 for none. */
	double late_pct;
	int nthreads;
	int nprocs;		/* processes sampled now */
};

/* What the sampling loop tells the model: its totals so far. */
struct top_tick {
	uint64_t now_ns;		/* mono_ns() */
	uint64_t rounds;		/* sampling rounds since the start */
	uint64_t lagged;		/* ... that started late */
	uint64_t max_lag_ns;		/* the longest lag since the last interval */
	struct sampler_counts counts;	/* the samplers' totals */
	int nprocs;			/* processes sampled now */
	const char *version;		/* the Python version, or NULL */
};

/* Samples of one thread with one stack. */
struct top_entry {
	uint32_t thread, stack;
	uint64_t cum;		/* since the start or the reset */
	uint64_t last;		/* in the last interval */
};

/* Printable labels of frames of one profile, made when first asked for. */
struct top_labels {
	char **label;
	uint32_t n;
};

/* top --slurm --gpu: one GPU of a node, as the node's latest reply said. */
struct top_gpu {
	unsigned index;		/* NVML's, on its node */
	char *name;		/* printable */
	int gpu_pct, mem_pct;	/* -1: no reading yet */
	uint64_t mem_used, mem_total;	/* bytes */
	unsigned age_s;		/* how old the reading was when the node replied */
	char *lost;		/* why it stopped answering (printable), or NULL */
	long *ranks;		/* the job's ranks whose processes are on it, sorted */
	int nranks;
	int unranked;		/* the job's processes on it that have no rank */
	int others;		/* processes on it that are not the job's */
};

/* top --slurm: one node of the job. */
struct top_node {
	char *name;		/* printable */
	uint64_t last_ns;	/* its latest reply, 0 for none yet */
	int ranks, procs, threads;	/* as its latest reply said */
	bool late;		/* no reply for a while (top_job_check()) */
	bool gone;		/* its pystrobe ended */
	bool ended;		/* ... for the job's processes there had */
	/* --gpu: its GPUs as its latest reply said, or why it has none
	 * (no NVML there, printable); gpu_known once a reply said either. */
	struct top_gpu *gpus;
	int ngpus;
	char *gpu_note;
	bool gpu_known;
};

/* Where a thread of the model's profile runs, under --slurm. */
struct top_place {
	int node;		/* index in nodes */
	long rank;		/* its process's rank, or -1 */
};

/* top --slurm: a job over many nodes (model_job.c).  Each thread of the
 * model's profile is of one node and, where its process has one, of one
 * rank; the same pid and tid on two nodes are two threads. */
struct top_job {
	char *spec;		/* "123" or "123.0", printable */
	char *nodelist;		/* Slurm's "hnode[1-2]", printable */
	struct top_node *nodes;
	int nnodes;
	struct top_place *place;	/* by thread of the profile */
	uint32_t nplace, place_alloc;
	struct hashidx index;	/* (node, pid, tid) -> thread */
	int node_sel;		/* -1: every node, else the one shown */
	long rank_sel;		/* -1: every rank, else the one shown */
	bool gpu;		/* --gpu: the header has the nodes' GPUs */
};

struct top_model {
	struct profile p;	/* the sampler adds here; the model takes the runs */
	struct top_job *job;	/* top --slurm, else NULL */

	/* What is watched, for the header; printable. */
	pid_t pid;
	char *what;		/* its command line */
	char *version;		/* the Python version, or NULL until known */
	bool subprocesses;	/* processes are sampled, and viewed, apart */
	bool full_filenames;
	bool full_names;	/* native names whole, not short */
	bool idle;		/* idle threads are sampled */
	bool gil_only;		/* --gil: only the thread holding the GIL is */
	double delay_s;		/* the interval asked for */
	bool exited;		/* the target is gone: the last view stays */
	int exit_status;	/* then a launched command's, or -1 */
	/* --gpu: a header line per GPU the target uses, or one saying why
	 * there is none; printable. */
	char *gpu[TOP_GPU_LINES];
	int ngpu;

	/* How the rows are made. */
	enum top_sort sort;
	bool by_function;
	int thread_sel;		/* -1: all threads, else a profile thread */
	pid_t proc_sel;		/* 0: all processes, else the one shown */
	bool paused;		/* the rows and stats shown stay as they are */
	char filter[256];	/* UTF-8: rows containing it (any case); "": all */

	struct top_row *rows;
	uint32_t nrows, rows_alloc;
	struct top_stats live;	/* as of the latest interval */
	struct top_stats shown;	/* as of the interval shown */
	uint32_t ran;		/* threads with rows in the interval shown */

	/* The interval under way, and the reset: the tick's totals then. */
	uint64_t iv_start_ns, iv_rounds, iv_lagged;
	struct sampler_counts iv_base;
	uint64_t reset_ns, reset_rounds;

	/* (thread, stack) -> samples */
	struct top_entry *entries;
	uint32_t nentries, entries_alloc;
	struct hashidx entry_index;

	/* Labels of lines, and of functions: funcs interns the functions
	 * (its frames have line -1) and func_of maps a frame to one. */
	struct top_labels frame_labels, func_labels;
	struct profile funcs;
	uint32_t *func_of;
	uint32_t nfunc_of;
	uint32_t seen_renamed;	/* p.renamed when they were made */
};

/* An empty model sampled at rate_hz, refreshed every delay_s. */
void top_model_init(struct top_model *m, double rate_hz, double delay_s);
void top_model_free(struct top_model *m);

/* What is watched: its pid and command line (made printable here; NULL
 * or empty: "?"). */
void top_model_set_target(struct top_model *m, pid_t pid, char **argv, int argc);

/* The GPUs' lines (gpusample_current()'s text, '\n'-ended lines): from
 * now on the header's. */
void top_model_set_gpu(struct top_model *m, const char *text);

/* The sampling starts: intervals count from t. */
void top_model_start(struct top_model *m, const struct top_tick *t);

/* An interval ends: take its samples and figures, and show them unless
 * paused. */
void top_model_interval(struct top_model *m, const struct top_tick *t);

/* The target is gone: take what is left, and keep that view. */
void top_model_exited(struct top_model *m, const struct top_tick *t);

/* Count afresh from t: R, and a change of what is sampled. */
void top_model_reset(struct top_model *m, const struct top_tick *t);

/* Idle threads are sampled from now on, or not: the counts with and
 * without them do not add up, so they start again. */
void top_model_set_idle(struct top_model *m, bool idle, const struct top_tick *t);

void top_model_set_sort(struct top_model *m, enum top_sort sort);
void top_model_set_by_function(struct top_model *m, bool by_function);
void top_model_set_paused(struct top_model *m, bool paused);

/* Show the next of: all threads, each process (with subprocesses, when
 * there are several), each thread, by process and thread id; then all
 * again. */
void top_model_next_view(struct top_model *m);

/* Which of them is shown: "all threads", "process 12 (1 of 2)",
 * "thread 14 \"name\" (2 of 3)"... */
void top_model_describe_view(const struct top_model *m, struct strbuf *sb);

/* Does the filter let the row through, and how many rows does it? */
bool top_row_shown(const struct top_model *m, const struct top_row *r);
uint32_t top_model_rows_shown(const struct top_model *m);

/* What the space below the rows says, htop's hint where a table is
 * empty: why there are no rows (or none of the interval shown), and the
 * key that shows them. */
enum top_hint {
	TOP_HINT_NONE,		/* rows of the last interval are shown */
	TOP_HINT_COLLECTING,	/* no interval has ended since the start or
				 * the reset: nothing was sampled yet (the
				 * state line says so; no hint) */
	TOP_HINT_FILTERED,	/* there are rows, the filter lets none by */
	TOP_HINT_ALL_IDLE,	/* rounds were taken, but no thread shown ran:
				 * idle threads are hidden */
	TOP_HINT_SOME_IDLE,	/* some threads ran, the others are hidden */
	TOP_HINT_NO_GIL,	/* --gil, and no thread held it */
	TOP_HINT_NOTHING,	/* idle threads shown, and still no sample */
};

/* Which hint, and its line (printable) in sb: with keys, the key that
 * helps (the full-screen view), else the option (the snapshots). */
enum top_hint top_model_hint(const struct top_model *m, bool keys, struct strbuf *sb);

/* --- top --slurm (model_job.c) ------------------------------------------ */

/* The model shows the job spec running on nodes (nodelist as Slurm says
 * it, nnodes names in srun's order). */
void top_job_init(struct top_model *m, const char *spec, const char *nodelist,
		  char *const *nodes, int nnodes);

/* One node's samples since its last reply: the stacks of src, per thread
 * (its stack_threads, as a pprof read back has them), as runs of the
 * model's profile, each thread of node node and of the rank rank_of()
 * gives its process (-1: none).  They are taken at the next interval. */
void top_job_add(struct top_model *m, int node, const struct profile *src,
		 long (*rank_of)(void *arg, pid_t pid), void *arg);

/* Node node replied at now: its ranks, processes and threads. */
void top_job_node_seen(struct top_model *m, int node, uint64_t now, int ranks, int procs,
		       int threads);
/* Its pystrobe ended; with ended, because the job's processes there did. */
void top_job_node_gone(struct top_model *m, int node, bool ended);

/* --gpu: node's GPUs as its reply gave them (n of them; the strings are
 * copied and made printable, the ranks sorted), or with n < 0, why it has
 * none (note: no NVML there).  From now on the header's. */
void top_job_node_gpus(struct top_model *m, int node, const struct top_gpu *gpus, int n,
		       const char *note);
/* n GPUs made by a reader (their strings and ranks allocated), freed. */
void top_gpus_free(struct top_gpu *g, int n);

/* The model's GPU lines (m->gpu) from the nodes' GPUs, for the view
 * shown: all ranks: the job's GPUs in one line (their mean, the least
 * busy and its ranks), then one line per node; a node, a rank, a thread:
 * a line per GPU of that node (of the rank's, those it is on), with its
 * figures and ranks.  A node without NVML is one line saying why.
 * Nothing without --gpu (job->gpu). */
void top_job_gpu_lines(struct top_model *m);

/* Mark late the nodes with no reply for late_ns before now, and those
 * with none yet first_ns after the start (srun's start on many nodes is
 * slower than an interval).  How many nodes are late or gone. */
int top_job_check(struct top_model *m, uint64_t now, uint64_t start, uint64_t first_ns,
		  uint64_t late_ns);

/* The header's: "Slurm job 123 on hnode[1-2]: 2 of 2 nodes, 4 ranks";
 * and the nodes that do not answer, "" when every node does. */
void top_job_header(const struct top_model *m, struct strbuf *sb);
void top_job_missing(const struct top_model *m, struct strbuf *sb);

/* With a job, T steps through all, each node (when there are several),
 * each rank, each thread (by node, rank, pid and tid), then all again. */
bool top_job_narrowed(const struct top_model *m);

/* For model.c: whether the view shows thread t, T's next view, the
 * view's name (false: not a job's own view), and the end. */
bool top_job_shows(const struct top_model *m, uint32_t t);
void top_job_next_view(struct top_model *m);
bool top_job_describe(const struct top_model *m, bool position, struct strbuf *sb);
void top_job_free(struct top_model *m);

/* A row's share of the interval shown (100: one thread all the time),
 * and its time in seconds since the start or the reset. */
double top_row_own_pct(const struct top_model *m, const struct top_row *r);
double top_row_total_pct(const struct top_model *m, const struct top_row *r);
double top_row_own_s(const struct top_model *m, const struct top_row *r);
double top_row_total_s(const struct top_model *m, const struct top_row *r);

#endif
