/* The whole job as read from JSON dumps: nodes, processes, threads, and
 * their stacks, interned.
 *
 * Every document (a plain `dump --json`, a node's `--slurm-node` one, a
 * job-wide `dump --slurm --json`) adds its processes.  Strings, frames and
 * stacks are interned as they are read: 4,096 ranks of one training script
 * share a few hundred frames and a few dozen stacks, so memory grows with
 * the threads, not with their frames, and grouping compares stack ids.
 *
 * What is read is hostile (another machine wrote it): a field of the wrong
 * type reads as absent, numbers are range-checked, counts are bounded. */
#ifndef PYSTROBE_JOBDUMP_H
#define PYSTROBE_JOBDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hashidx.h"
#include "util/jsonread.h"

/* A document may hold at most this many of each: a node runs a few dozen
 * Python processes, a process a few hundred threads, a stack a few
 * thousand frames (dump's own bounds are lower). */
#define JOB_MAX_PROCS (1 << 16)
#define JOB_MAX_THREADS (1 << 14)
#define JOB_MAX_FRAMES (1 << 14)	/* a longer stack is cut */
#define JOB_MAX_ARGS 1024

enum job_frame_kind { JF_PYTHON, JF_NATIVE, JF_GC };

/* One frame; strings are interned (jobdump's), NULL when unknown. */
struct job_frame {
	enum job_frame_kind kind;
	const char *function;
	const char *file;	/* python: the file; native: the source file */
	const char *library;	/* native */
	const char *source;	/* python: the line's text, as the node read it */
	long line;		/* -1: unknown */
	uint64_t offset;	/* native: within library */
};

/* A process's identity in the job as its dump wrote it (design38.md,
 * section 1): -1 is unset.  Not process/jobenv.h's struct job_ident,
 * which is read from /proc: these strings are interned, and hostile. */
struct jobdump_ident {
	bool present;		/* "job" was an object, not null */
	const char *id, *step, *node, *rank_from;
	long rank, local_rank, world_size;
};

struct job_thread {
	long tid;
	const char *name;
	bool main;		/* tid == pid */
	bool gil;
	int idle;		/* 1, 0, or -1: unknown (a core) */
	uint32_t stack;		/* index into job_dump's stacks */
	uint32_t proc;
};

struct job_proc {
	const char *node;	/* where it runs: "node", job.node, the document's node or host */
	const char *host;
	const char *origin;	/* the file or node it was read from, for messages */
	long pid, ppid;		/* ppid 0: unknown */
	struct jobdump_ident job;
	const char **argv;
	uint32_t argc;
	const char *python;	/* its version */
	const char *error;	/* could not be read; no threads */
	uint32_t thread0, nthreads;	/* its threads, contiguous in threads[] */
};

struct job_node {
	const char *name;
	const char *error;	/* did not answer, or answered with an error */
};

/* A stack: frames[at .. at+n) of the frame-id array, innermost first. */
struct job_stack {
	uint32_t at, n;
};

struct job_dump {
	const char *job;	/* the job id the documents named, if any */
	struct job_node *nodes;
	struct job_proc *procs;
	struct job_thread *threads;
	struct job_frame *frames;
	struct job_stack *stacks;
	uint32_t *stackv;	/* the frame ids of every stack */
	size_t nnodes, nprocs, nthreads, nframes, nstacks, nstackv;
	size_t anodes, aprocs, athreads, aframes, astacks, astackv;
	struct hashidx frame_ix, stack_ix, str_ix;
	char **strs;
	size_t nstrs, astrs;
	uint32_t *scratch;	/* the stack being read */
	size_t ascratch;
	struct jdoc doc;	/* the document being read: its memory, reused */
	/* Stacks by the text of their "frames": a job's ranks write the
	 * same few stacks thousands of times, and text met before is not
	 * parsed again (bench/README).  At most JOB_RAW_CACHE bytes kept.
	 * depth: how deep in its document the text was read. */
	struct job_raw { char *text; size_t len; uint32_t stack; int depth; } *raws;
	size_t nraws, araws, raw_bytes;
	struct hashidx raw_ix;
	/* The same texts by their first JOB_RAW_HEAD bytes, for the parser
	 * (jdoc's known_raw), which does not know where a text ends; and the
	 * one matched at each "frames" of the last document (the k-th thread
	 * of a rank mostly has the k-th thread's stack of the one before). */
	struct hashidx head_ix;
	uint32_t *hint;
	size_t ahint, nth;
	struct jdoc sub;	/* a "frames" text not met before, parsed */
};
#define JOB_RAW_CACHE (64u << 20)
#define JOB_RAW_HEAD 64
#define JOB_DUMP_INIT { 0 }

/* Add the processes of the JSON documents in len bytes of text (one, or
 * several one after another: JSON Lines); origin names them in messages
 * (a file name, a node).  0, or -EINVAL with one line in err ("byte 812:
 * expected ',' or '}'", "not a pystrobe dump --json document: no
 * \"processes\" list"): the failed document adds nothing, those before
 * it stay added, those after it are not read. */
int jobdump_add_json(struct job_dump *jd, const char *text, size_t len, const char *origin,
		     char *err, size_t errlen);
/* A node that did not answer, or answered with error (copied). */
void jobdump_node_error(struct job_dump *jd, const char *node, const char *error);
void jobdump_release(struct job_dump *jd);

/* The interned copy of s (NULL for NULL): equal strings, equal pointers. */
const char *jobdump_intern(struct job_dump *jd, const char *s);
/* The innermost Python frame of stack (NULL when it has none). */
/* Where the model stands, to take back what was added after it (a file
 * that changed while it was read): processes, threads and nodes; frames,
 * stacks and strings interned since stay, unused. */
struct jobdump_mark {
	size_t nprocs, nthreads, nnodes;
	const char *job;
};
void jobdump_mark(const struct job_dump *jd, struct jobdump_mark *m);
void jobdump_undo(struct job_dump *jd, const struct jobdump_mark *m);

const struct job_frame *jobdump_innermost(const struct job_dump *jd, uint32_t stack);

#endif
