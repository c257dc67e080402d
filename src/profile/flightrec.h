/* The flight recorder: the last minutes of samples of a watched process
 * tree, kept in memory at a bounded size and written, on a stall or on
 * demand, as a recording that `pystrobe convert` turns into any output
 * format and slices by time.
 *
 * In memory a sample is 16 bytes: its time, a stack id and a context id.
 * Strings, frames (kind, function, file, line), stacks (frame ids, root
 * first) and contexts (pid, tid, thread name, command, wait class) are
 * interned in tables of their own, each item counted by the live items
 * above it (a stack by the samples holding it, a frame by the stacks...),
 * so that what eviction leaves unreferenced is known to the byte.
 *
 * The bound: flightrec_bytes() counts every array the recorder holds
 * (entries, tables, their hash indexes, their spare room) and stays at or
 * below max_bytes after every flightrec_add().  Samples older than keep_ns
 * before the newest are dropped as samples arrive; when the memory would
 * pass max_bytes the oldest are dropped until a compaction (the tables
 * rebuilt from the live samples, the entries moved into an array of their
 * size) brings it back to about three quarters of max_bytes.  A compaction
 * also runs whenever half of what is held is unreferenced, so a days-long
 * watch that keeps seeing new stacks under the time bound alone does not
 * grow either.  Each compaction costs time in proportion to what is held,
 * and follows at least a quarter of that much new data: amortised, a
 * sample costs O(its depth).  Once the byte bound is reached the recording
 * holds between about half and all of max_bytes.
 *
 * The recording file, version 1, gzip-compressed; integers are unsigned
 * LEB128 varints (v), signed ones zigzag-encoded first (z); strings are a
 * v length and that many bytes, no NUL.  Ids index the section they name,
 * which comes earlier in the file; "+1" fields are 0 for none.
 *
 *	magic		FLIGHTREC_MAGIC, 16 bytes
 *	v version	FLIGHTREC_VERSION
 *	v flags		bit 0: idle threads sampled too (wall time)
 *	v mark		unix ns of the moment slices are relative to; 0: none
 *	v interval	sampling interval, ns
 *	v nstrings, then each string
 *	v nframes, then each: v kind (enum pframe_kind), v name string,
 *			v file string + 1, z line, z firstlineno
 *	v nstacks, then each: v depth, then depth frame ids, root first
 *	v ncontexts, then each: v pid, v tid, v thread name string + 1,
 *			v command string + 1, v wait class string + 1, and in
 *			version 2 FLIGHTREC_ROOTS more: v root string + 1
 *	v nsamples, then each: z time (unix ns; the first absolute, the
 *			others the difference from the one before), v stack,
 *			v context
 *
 * Nothing may follow.  A reader refuses a version it does not know.
 * Version 2 is written only when a context has roots (watch --slurm's
 * recording of a whole job: "node=NAME", "rank=N", as record --slurm
 * names them), so a recording of one host stays readable by a pystrobe
 * that knows version 1 alone.
 */
#ifndef PYSTROBE_FLIGHTREC_H
#define PYSTROBE_FLIGHTREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

#define FLIGHTREC_MAGIC "pystrobe-flight\n"
#define FLIGHTREC_MAGIC_LEN 16
#define FLIGHTREC_VERSION 2	/* the newest this one reads */
/* Labels a context may put below its process root (a node, a rank). */
#define FLIGHTREC_ROOTS 2

/* max_bytes is raised to the first and lowered to the second: below, a
 * few deep stacks would not fit; above, the tables' 32-bit offsets would
 * not reach. */
#define FLIGHTREC_MIN_BYTES (64u << 10)
#define FLIGHTREC_MAX_BYTES ((size_t)4 << 30)

/* Deeper stacks keep their first frames, root first, and end in a
 * "<truncated>" frame, as the readers of profiles cut them; names are
 * cut at FLIGHTREC_NAME_MAX bytes.  So one sample holds at most a few
 * tens of MiB, even from a hostile target. */
#define FLIGHTREC_DEPTH 4096
#define FLIGHTREC_NAME_MAX 4096

struct flightrec;

struct flightrec *flightrec_new(uint64_t keep_ns, size_t max_bytes);
void flightrec_free(struct flightrec *fr);

/* One sample of one thread.  frames root first, the thread's own frames
 * (the recording's reader puts the process and thread roots below them);
 * strings are copied; thread_name and wait_class may be NULL.  A sample
 * older than keep_ns before the newest is dropped.  Returns 0 (it cannot
 * fail: memory runs out as xmalloc() does). */
int flightrec_add(struct flightrec *fr, uint64_t unix_ns, pid_t pid, pid_t tid,
		  const char *thread_name, const char *command,
		  const struct pframe *frames, uint32_t depth, const char *wait_class);

/* flightrec_add()'s sample, with roots: each NULL or the name of a label
 * frame put below the process root, in order (a reader shows
 * "node=hnode2;rank=3;process 123: ...;thread ..."). */
struct flightrec_sample {
	uint64_t unix_ns;
	pid_t pid, tid;
	const char *thread_name, *command, *wait_class;
	const char *roots[FLIGHTREC_ROOTS];
	const struct pframe *frames;
	uint32_t depth;
};
int flightrec_add_sample(struct flightrec *fr, const struct flightrec_sample *s);

size_t flightrec_bytes(const struct flightrec *fr);	/* memory held now */
uint64_t flightrec_samples(const struct flightrec *fr);	/* entries held now */

/* What the samples are, for the recording's readers: the sampling
 * interval (0, the default: the median spacing of a thread's samples,
 * worked out when written) and whether idle threads were sampled too
 * (wall time, the default). */
void flightrec_set_sampling(struct flightrec *fr, uint64_t interval_ns, bool wall);

/* Compactions so far, for tests and figures. */
uint64_t flightrec_compactions(const struct flightrec *fr);

/* Write what it holds as a recording file (atomically: temp file + rename;
 * never lose it).  mark_unix_ns: the moment the slices are relative to
 * (the stall), 0 for none.  Returns 0, or -errno with a message naming
 * path in err.  It allocates and writes files: not from a signal handler (on
 * SIGUSR1, note the signal there and write from the main loop). */
int flightrec_write(const struct flightrec *fr, const char *path, uint64_t mark_unix_ns,
		    char *err, size_t errlen);

/* What flightrec_write() would write (gzip-compressed, as the file),
 * appended to out: 0, or -errno. */
struct strbuf;
int flightrec_encode(const struct flightrec *fr, uint64_t mark_unix_ns, struct strbuf *out);

struct flightrec_slice;
/* What flightrec_write() would write, read back as the recording's
 * reader reads it (flightrec_parse()): the samples in slice (NULL: all)
 * as a profile with its timeline, initialised here, for any writer of
 * output.h (a report's flame graph of the minutes before the stall).
 * Returns 0, or status_fail(EXIT_USAGE) when the slice holds no sample (p
 * then empty), as profile_read_slice() does. */
int flightrec_profile(const struct flightrec *fr, uint64_t mark_unix_ns,
		      const struct flightrec_slice *slice, struct profile *p);

/* --- reading a recording (flightrec_read.c) ---------------------------------- */

/* Which samples to read: those at from_ns <= t - base < until_ns, where
 * base is the mark, or the last sample's time in a recording without one. */
struct flightrec_slice {
	int64_t from_ns, until_ns;
};
#define FLIGHTREC_ALL { INT64_MIN, INT64_MAX }

/* What a recording held, for messages. */
struct flightrec_info {
	uint64_t mark_unix_ns;		/* 0: none */
	uint64_t base_unix_ns;		/* what the slice is relative to */
	uint64_t first_unix_ns, last_unix_ns;	/* of all its samples */
	uint64_t samples, kept;		/* in the file, in the slice */
};

/* Whether data (decompressed) starts as a recording does. */
bool flightrec_is(const void *data, size_t len);

/* Read the recording in data (decompressed) into p, initialised here,
 * with its timeline: the samples in the slice, each under a process root
 * "process PID: COMMAND", a thread root "thread TID \"NAME\"" and, where
 * it has one, a label "wait=CLASS".  Returns 0, or status_fail(EXIT_BAD_INPUT)
 * with p empty and the reason in err (without the file's name).  A slice may leave no
 * samples; info says what was there. */
int flightrec_parse(const void *data, size_t len, const struct flightrec_slice *slice,
		    struct profile *p, struct flightrec_info *info, char *err, size_t errlen);

/* Every sample of the recording in data (decompressed) added to dst,
 * under the roots roots() gives for its process (FLIGHTREC_ROOTS of them,
 * each NULL or a label; NULL roots: the recording's own), in the order
 * the file has them: one recording of many (watch --slurm: each node's,
 * each process under its node and rank).  Returns 0, or
 * status_fail(EXIT_BAD_INPUT) with the reason in err and nothing added. */
typedef void flightrec_roots_fn(void *arg, pid_t pid, const char **roots);
int flightrec_merge(struct flightrec *dst, const void *data, size_t len,
		    flightrec_roots_fn *roots, void *arg, char *err, size_t errlen);

#endif
