/* --gpu: the GPUs of a process tree read on a thread of their own while
 * the sampler runs, so NVML's calls (a few milliseconds each on a busy
 * driver) never delay a sampling round.
 *
 * Every GPUWATCH_PERIOD_NS each device's utilisation and memory are read;
 * every GPUWATCH_MATCH_NS the processes on each device are matched with
 * the tree below the root, by the pids this machine's /proc gives: NVML
 * names processes by the host's pids too.  A device the tree used once
 * stays used.  Without NVML, or without a device, nothing is read and the
 * note says why; a device that stops answering is marked lost and the
 * others are read on.
 */
#ifndef PYSTROBE_GPUWATCH_H
#define PYSTROBE_GPUWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/gpusample.h"
#include "util/util.h"

#define GPUWATCH_PERIOD_NS 150000000ull
#define GPUWATCH_MATCH_NS 1000000000ull

struct gpuwatch;

/* Start watching the GPUs of root's tree; times count from start_ns (a
 * mono_ns(), the profile's start).  NVML is opened on the thread. */
struct gpuwatch *gpuwatch_start(pid_t root, uint64_t start_ns);

/* top --slurm's node: every GPU this machine's NVML sees, whoever uses
 * it, each with the processes NVML last listed on it (gpuwatch_now()). */
struct gpuwatch *gpuwatch_start_all(uint64_t start_ns);

/* Stop the thread and keep what it read; NULL: nothing.  A thread inside
 * an NVML call that does not return within 2 s is left to itself (the
 * note says so) and what it read so far is kept. */
void gpuwatch_stop(struct gpuwatch *w);
void gpuwatch_free(struct gpuwatch *w);

/* Once stopped: why there is nothing to show (no library, no device), or
 * why the figures end early (NVML hung), or NULL. */
const char *gpuwatch_note(struct gpuwatch *w);

/* What was read, once stopped (NULL when NVML never opened). */
const struct gpusample *gpuwatch_result(const struct gpuwatch *w);

/* top's header now: gpusample_current()'s lines, or the note. */
void gpuwatch_current(struct gpuwatch *w, struct strbuf *sb);

/* The processes of one device kept for gpuwatch_now(): a node's reply
 * names the job's among them. */
#define GPUWATCH_NOW_PIDS 256

/* One device as of now, for a node's reply. */
struct gpu_now {
	unsigned index;		/* NVML's */
	char name[96];
	bool read;		/* a reading came: the figures are its */
	unsigned gpu_pct, mem_pct;
	uint64_t mem_used, mem_total;	/* bytes */
	uint64_t age_ns;	/* since that reading */
	bool lost;
	char lost_why[96];
	pid_t pids[GPUWATCH_NOW_PIDS];	/* as NVML last listed them */
	int npids;		/* kept in pids */
	int listed;		/* listed by NVML, kept or not */
};

/* The devices of a gpuwatch_start_all() as of now, at most max into out:
 * their count, or -1 with why there is none in note (no library, no
 * device, NVML still opening). */
int gpuwatch_now(struct gpuwatch *w, struct gpu_now *out, int max, char *note, size_t notelen);

#endif
