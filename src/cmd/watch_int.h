/* What watch.c shares with a node's watcher under --slurm (watch_node.c)
 * and the job's front (watch_slurm.c). */
#ifndef PYSTROBE_WATCH_INT_H
#define PYSTROBE_WATCH_INT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "analysis/stall.h"
#include "cluster/srun.h"
#include "cmd/launch.h"
#include "cmd/watch_report.h"
#include "profile/flightrec.h"
#include "profile/profile.h"
#include "sample/fleet.h"
#include "sample/fleetprio.h"

#define MAX_ROOTS 256
/* A node's watcher sends a heartbeat this often (seconds); the front
 * names a node silent after --timeout, never under two of them. */
#define WATCH_BEAT_S 2

/* A node's watcher's alone (cmd/node_procs.h). */
struct node_procs;

struct stack_info {
	bool known;
	uint64_t id;		/* a hash of its frames: survives a fresh profile */
	enum wait_class cls;
	char *where;
	uint32_t first, depth;	/* its own frames in the profile's stack, root first */
};

struct watch {
	/* The command line. */
	pid_t roots[MAX_ROOTS];
	int nroots;
	char **command;
	double rate_hz, stall_s, keep_s, keep_mb;
	const char *dir, *progress, *on_stall;
	bool quiet;
	bool no_priority;	/* --no-priority: never raised */
	/* Watching. */
	struct child child;
	uint64_t interval_ns;		/* sampler_interval_ns(rate_hz) */
	struct profile p;
	struct fleet *fleets[MAX_ROOTS];
	bool launcher[MAX_ROOTS];	/* a --pid that runs no Python yet */
	struct fleet_clock clocks[MAX_ROOTS];
	struct fleet_prio prio;	/* the rounds' priority (fleetprio.h) */
	struct stack_info *stacks;
	size_t stacks_cap;
	struct pframe *scratch;		/* a sample's frames for the recorder */
	size_t scratch_cap;
	struct stall_model m;
	struct flightrec *fr;
	struct watch_report wr;
	struct stat progress_st;
	bool progress_seen;
	char *last_dir;			/* the latest report */
	pid_t *hooks;			/* --on-stall commands running */
	size_t nhooks, hooks_cap;
	/* --slurm (the front, watch_slurm.c) and --slurm-node (a node's
	 * watcher, watch_node.c). */
	struct slurm_opts slurm;
	struct node_procs *np;		/* --slurm-node: the job's processes here */
	uint64_t beat_at;		/* the next heartbeat */
};

/* RANK from the process's environment (as it was at exec), or -1. */
int watch_read_rank(pid_t pid);
/* Its parent, 0 when unknown. */
pid_t watch_read_ppid(pid_t pid);
/* Its command line, printable (to free). */
char *watch_read_command(pid_t pid);
/* Whether pid may start the job's Python later: it has processes below
 * it, or it is a shell or a launcher.  *comm gets its name (to free). */
bool watch_is_launcher(pid_t pid, char **comm);

/* --on-stall: run w->on_stall (sh -c, its stdout on stderr) with
 * $PYSTROBE_REPORT dir, $PYSTROBE_STALL_KIND kind and, unless stalled is
 * -1 (a job's stall, on other hosts), $PYSTROBE_STALL_PID; not waited for: watch_hooks_reap() reaps those
 * that have ended.  Single-host watch and the --slurm front both. */
void watch_hook_run(struct watch *w, const char *dir, const char *kind, pid_t stalled);
void watch_hooks_reap(struct watch *w);

/* --slurm-node: set up the node's watcher (the fleet follows the job's
 * processes here; SIGUSR1 and SIGTERM stop it, SIGUSR2 asks for the
 * node's dump and its flight recording).  0, or status_fail(EXIT_USAGE)
 * said. */
int watch_node_setup(struct watch *w);
/* Each time the loop wakes: a heartbeat when due, the dump when asked.
 * w->beat_at is when the next heartbeat is due. */
void watch_node_tick(struct watch *w, uint64_t now);
/* The model's verdict on this node, sent to the front: a new stall (with
 * every stalled process's threads and the node's dump), or the job here
 * moves again. */
void watch_node_stall(struct watch *w, uint64_t now);
void watch_node_moved(struct watch *w);

/* --slurm: the front; the exit status. */
int watch_slurm(struct watch *w);

/* --slurm: the job's flight recording (watch_jobflight.c): every node's,
 * asked for together, written as one, each sample under its node and rank
 * as record --slurm puts them. */
struct job_flight {
	int n;				/* the job's nodes, srun's tasks */
	struct strbuf *reply;		/* each node's latest "flight" reply */
	uint64_t *at_ns;		/* ... when it came (mono_ns()) */
	uint64_t asked_ns;		/* the latest ask, 0: none */
};

void job_flight_init(struct job_flight *jf, int nnodes);
void job_flight_release(struct job_flight *jf);
/* Every node was asked for its recording at now (mono_ns()). */
void job_flight_asked(struct job_flight *jf, uint64_t now);
/* Node task's "flight" reply (its JSON, kept as it is). */
void job_flight_take(struct job_flight *jf, int task, const struct strbuf *json);
/* Whether node task's recording came since the latest ask. */
bool job_flight_in(const struct job_flight *jf, int task);
/* DIR/WATCH_FLIGHT_FILE from every recording that came since the ask,
 * node i named names[i]; each node without one is named on a line of
 * missing.  mark_unix_ns: the moment slices are relative to.  Returns the
 * file's path (new), or NULL after a line on stderr. */
char *job_flight_write(const struct job_flight *jf, const struct watch *w, const char *dir,
		       const char *const *names, uint64_t mark_unix_ns, struct strbuf *missing);

#endif
