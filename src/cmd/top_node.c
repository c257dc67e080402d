/* top --slurm-node (cmd/top_slurm.h): what one node of a job sends the
 * live view.
 *
 * No terminal here: the fleet follows the node's processes of the job
 * (cluster/nodeprocs.h) and every --delay one reply goes back with the
 * samples of that interval (pprof: functions, lines, each sample's pid and
 * tid), the processes' job identities and the interval's counts, which
 * the front adds up across the nodes as top's header shows them for one
 * process.  The counts are then cleared, not the frames and stacks the
 * samplers' caches point into.  With --gpu, every GPU of the node, read on
 * gpuwatch's thread, goes with each reply (cluster/nodegpu.h).
 */
#include "cmd/top_slurm.h"
#include "analysis/gpuwatch.h"
#include "analysis/waitmark.h"
#include "cluster/nodegpu.h"
#include "cluster/nodeprocs.h"
#include "cluster/nodereply.h"
#include "cmd/quit.h"
#include "sample/fleetprio.h"
#include "util/util.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct node_top {
	struct node_procs np;
	struct profile p;
	struct fleet *f;
	struct fleet_clock clock;
	struct sampler_counts base;	/* the totals at the last reply */
	uint64_t base_rounds;		/* ... and the clock's rounds */
	uint64_t last_ns;		/* when that was */
	struct gpuwatch *gpu;		/* --gpu */
	struct gpu_now *gnow;		/* ... its devices, NVML_MAX_DEVICES */
};

/* Distinct ranks among the processes still there: a rank's DataLoader
 * workers carry its RANK too. */
static int live_ranks(const struct node_procs *np)
{
	int n = 0;

	for (int i = 0; i < np->n; i++) {
		const struct node_seen *s = &np->v[i];
		bool first = s->id.rank >= 0 && kill(s->pid, 0) == 0;

		for (int k = 0; k < i && first; k++)
			first = np->v[k].id.rank != s->id.rank || kill(np->v[k].pid, 0) != 0;
		n += first;
	}
	return n;
}

static uint64_t errors(const struct sampler_counts *c)
{
	uint64_t n = 0;

	for (int i = 0; i < SERR_COUNT; i++)
		if (serr_is_error(i))
			n += c->errors[i];
	return n;
}

/* The interval's counts: what the front's header adds up. */
static void put_counts(struct json *j, const struct node_top *n, const struct sampler_counts *c,
		       uint64_t now)
{
	const struct sampler_counts *b = &n->base;
	uint64_t odd = c->errors[SERR_MERGE] - b->errors[SERR_MERGE] +
		       c->errors[SERR_GAP] - b->errors[SERR_GAP];

	json_kint(j, "python_processes", fleet_nprocs(n->f));
	json_kint(j, "ranks", live_ranks(&n->np));
	json_kint(j, "threads", c->nthreads);
	if (fleet_python_version(n->f))
		json_kstr(j, "python_version", fleet_python_version(n->f));
	json_kuint(j, "interval_ns", now - n->last_ns);
	/* Rounds of the clock (a sample of every process), and of the
	 * processes' samplers (GIL's share is of those). */
	json_kuint(j, "rounds", n->clock.rounds - n->base_rounds);
	json_kuint(j, "process_rounds", c->rounds - b->rounds);
	json_kuint(j, "gil_rounds", c->gil_rounds - b->gil_rounds);
	json_kuint(j, "checked", c->checked - b->checked);
	json_kuint(j, "active", c->active - b->active);
	/* A merge error's or a gap's stack is counted with its Python
	 * frames: out of the stacks, not on top of them (top's model). */
	json_kuint(j, "stacks", c->stacks - b->stacks - odd);
	json_kuint(j, "errors", errors(c) - errors(b));
	json_kuint(j, "late", c->late - b->late);
}

/* The names of the threads sampled in the interval: pprof carries their
 * ids only, and T shows each thread by its name. */
static void put_thread_names(struct json *j, const struct profile *p)
{
	json_key(j, "thread_names");
	json_arr_begin(j);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct pthread_info *t = &p->threads[i];

		if (!t->samples || !t->name)
			continue;
		json_obj_begin(j);
		json_kint(j, "pid", t->pid);
		json_kint(j, "tid", t->tid);
		json_kstr(j, "name", t->name);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The interval's samples are sent: counts start again from nothing. */
static void clear_counts(struct profile *p)
{
	for (uint32_t i = 0; i < p->nstacks; i++)
		p->stacks[i].count = 0;
	for (uint32_t i = 0; i < p->nstack_threads; i++)
		p->stack_threads[i].count = 0;
	for (uint32_t i = 0; i < p->nthreads; i++)
		p->threads[i].samples = 0;
	p->samples = 0;
}

/* The node's GPUs as of now, or why it has none. */
static void put_gpus(struct json *j, struct node_top *n)
{
	char note[256];
	int ndev = gpuwatch_now(n->gpu, n->gnow, NVML_MAX_DEVICES, note, sizeof(note));

	node_gpu_json(j, n->gnow, ndev, note, &n->np);
}

/* One reply, with the node's status; 0, or -1 when it could not be sent
 * (srun is gone: nobody listens). */
static int send_interval(struct node_top *n, int status, uint64_t now)
{
	struct strbuf out = STRBUF_INIT, b64 = STRBUF_INIT;
	struct sampler_counts c;
	struct json j;
	int rc;

	fleet_counts(n->f, &c);
	if (node_put_pprof(&b64, &n->p) < 0)
		status = status ? status : EXIT_ERROR;
	json_init(&j, &out);
	json_obj_begin(&j);
	node_procs_json(&j, &n->np);
	put_counts(&j, n, &c, now);
	put_thread_names(&j, &n->p);
	json_kstr(&j, "pprof", b64.buf ? b64.buf : "");
	if (n->gpu)
		put_gpus(&j, n);
	json_obj_end(&j);
	rc = node_reply_write(stdout, n->np.node, status, out.buf, out.len);
	n->base = c;
	n->base_rounds = n->clock.rounds;
	n->last_ns = now;
	clear_counts(&n->p);
	sb_release(&b64);
	sb_release(&out);
	return rc;
}

static void sleep_until(uint64_t until)
{
	uint64_t now = mono_ns();
	struct timespec ts;

	if (until <= now)
		return;
	ts.tv_sec = (time_t)((until - now) / 1000000000ull);
	ts.tv_nsec = (long)((until - now) % 1000000000ull);
	/* A signal (the front's stop) ends it early. */
	ppoll(NULL, 0, &ts, NULL);
}

/* Sample, and reply every delay, until asked to stop or the job's
 * processes here are gone; the status of the last reply. */
static int node_loop(struct node_top *n, uint64_t delay)
{
	struct fleet_prio prio = { 0 };
	uint64_t next, due;
	int rc = 0, sent = 0;

	fleet_start(n->f, &n->clock);
	n->last_ns = n->clock.start_ns;
	next = n->clock.start_ns + delay;
	while (!quit_requested) {
		rc = fleet_step(n->f, &n->clock);
		fleet_prio_after(&prio, rc == FLEET_ROUND);
		if (rc < 0)
			break;
		if (mono_ns() >= next) {
			/* Not sampling: at the level pystrobe was started with. */
			fleet_prio_aside(&prio);
			sent = send_interval(n, EXIT_OK, mono_ns());
			fleet_prio_back(&prio);
			if (sent < 0)
				break;
			next = next + delay > mono_ns() ? next + delay : mono_ns() + delay;
		}
		due = fleet_due(n->f, &n->clock);
		sleep_until(due < next ? due : next);
	}
	fleet_prio_end(&prio);
	if (sent < 0)
		return EXIT_ERROR;
	rc = rc < 0 ? exit_code(rc) : EXIT_OK;
	return send_interval(n, rc, mono_ns()) < 0 ? EXIT_ERROR : rc;
}

int top_node(struct target_opts *t, double delay_s)
{
	struct node_top n = { 0 };
	struct waitmark *waits = NULL;
	char err[512];
	int rc, status;

	if ((rc = node_procs_init(&n.np, t->slurm.node_job, "top")) < 0)
		return exit_code(rc);
	quit_on_signals_node();
	signal(SIGPIPE, SIG_IGN);
	profile_init(&n.p, t->so.rate_hz);
	n.p.no_timeline = true;	/* pprof keeps counts, per thread */
	if (t->waits)
		waits = waitmark_new(&n.p);
	node_procs_follow(&n.np, &t->fo);
	rc = fleet_open(0, &t->so, &t->fo, &n.p, &n.f, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		status = exit_code(rc);
		node_reply_write(stdout, n.np.node, status, "{}", 2);
		goto out;
	}
	if (t->gpu) {
		n.gnow = xcalloc(NVML_MAX_DEVICES, sizeof(*n.gnow));
		n.gpu = gpuwatch_start_all(mono_ns());
	}
	status = node_loop(&n, (uint64_t)(delay_s * 1e9));
	fleet_close(n.f);
out:
	gpuwatch_free(n.gpu);
	free(n.gnow);
	waitmark_free(waits);
	node_procs_release(&n.np);
	profile_free(&n.p);
	return status;
}
