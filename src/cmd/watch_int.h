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
	/* Watching. */
	struct child child;
	uint64_t interval_ns;		/* sampler_interval_ns(rate_hz) */
	struct profile p;
	struct fleet *fleets[MAX_ROOTS];
	bool launcher[MAX_ROOTS];	/* a --pid that runs no Python yet */
	struct fleet_clock clocks[MAX_ROOTS];
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

/* --slurm-node: set up the node's watcher (the fleet follows the job's
 * processes here; SIGUSR1 and SIGTERM stop it, SIGUSR2 asks for the
 * node's dump).  0, or status_fail(EXIT_USAGE) said. */
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

#endif
