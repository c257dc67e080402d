/* top --slurm (cmd/top_slurm.h): the live view of a whole Slurm job.
 *
 * srun runs `top --slurm-node` on every node of the job (cluster/srun.h);
 * each sends a reply every --delay (top_node.c), read back as a stream
 * (demux_stream()), whose samples go into top's model with their node and
 * rank (top/model_job.c).  One thread: srun's output is pumped with short
 * deadlines between the keys and the redraws.  q, Ctrl-C, the end of
 * --duration: every node is asked through srun to stop (SIGUSR1), and srun
 * is ended, with it every remote pystrobe.
 */
#include "cmd/top_slurm.h"
#include "cluster/nodegpu.h"
#include "cluster/nodeprocs.h"
#include "cluster/srun.h"
#include "cmd/quit.h"
#include "top/keys.h"
#include "top/view.h"
#include "util/util.h"

#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NODE_ARGS_MAX 24
/* Keys are read at least this often while srun's output is waited for. */
#define KEYS_NS 50000000ull

struct job_top {
	struct target_opts *o;
	struct top_model *m;
	struct top_view v;
	struct top_ui ui;
	struct slurm_job job;
	struct fanout f;
	struct demux d;
	uint64_t delay_ns;
	bool tty, quit, dirty;
	bool srun_over;		/* srun ended: no node sends any more */
	uint64_t start_ns, next_refresh;
	/* The nodes' replies added up, as a local sampler's totals. */
	struct top_tick tick;
	uint64_t *iv_rounds;	/* per node, in the interval under way */
	int *iv_replies;	/* ... and its replies */
	char *version;
};

/* What each node runs: the sampling options passed through. */
static void node_args(const struct job_top *jt, char **argv)
{
	char spec[64];
	int n = 0;

	argv[n++] = xstrdup("top");
	argv[n++] = xasprintf("--slurm-node=%s", slurm_job_spec(&jt->job, spec, sizeof(spec)));
	argv[n++] = xasprintf("--delay=%g", jt->delay_ns / 1e9);
	n = target_node_args(jt->o, argv, n);
	/* Each node reads its own GPUs: NVML sees only its machine's. */
	if (jt->o->gpu)
		argv[n++] = xstrdup("--gpu");
	argv[n] = NULL;
}

/* --- the replies ------------------------------------------------------------ */

static long rank_of(void *arg, pid_t pid)
{
	return node_reply_rank(arg, pid);
}

static uint64_t num(const struct jdoc *d, const char *key)
{
	int64_t v;

	return jv_int(jv_get(d, jdoc_root(d), key), 0, INT64_MAX, &v) ? (uint64_t)v : 0;
}

/* A reply's counts onto the job's totals. */
static void add_counts(struct job_top *jt, int node, const struct jdoc *d)
{
	struct sampler_counts *c = &jt->tick.counts;
	const char *version = jv_str(d, jv_get(d, jdoc_root(d), "python_version"));

	jt->iv_rounds[node] += num(d, "rounds");
	jt->iv_replies[node]++;
	c->rounds += num(d, "process_rounds");
	c->gil_rounds += num(d, "gil_rounds");
	c->checked += num(d, "checked");
	c->active += num(d, "active");
	c->stacks += num(d, "stacks");
	c->late += num(d, "late");
	/* Only their sum is shown: the nodes send that. */
	c->errors[SERR_TORN] += num(d, "errors");
	if (version && !jt->version)
		jt->version = xstrdup(version);
}

/* The reply's "thread_names" onto its profile's threads. */
static void name_threads(struct profile *np, const struct jdoc *d)
{
	const struct jv *names = jv_get(d, jdoc_root(d), "thread_names");

	for (size_t i = 0; i < jv_len(names); i++) {
		const struct jv *e = jv_at(d, names, i);
		const char *name = jv_str(d, jv_get(d, e, "name"));
		int64_t pid, tid;

		if (!name || !jv_int(jv_get(d, e, "pid"), 1, INT32_MAX, &pid) ||
		    !jv_int(jv_get(d, e, "tid"), 1, INT32_MAX, &tid))
			continue;
		for (uint32_t k = 0; k < np->nthreads; k++) {
			struct pthread_info *t = &np->threads[k];

			if (t->pid == pid && t->tid == tid && !t->name)
				t->name = xstrdup(name);
		}
	}
}

/* --gpu: the node's GPUs, or why it has none; a reply without them (a
 * node that could not start) leaves the last ones. */
static void take_gpus(struct job_top *jt, int node, const struct jdoc *d)
{
	struct top_gpu *g;
	char note[256];
	int n = node_reply_gpus(d, &g, note, sizeof(note));

	if (n >= 0 || note[0])
		top_job_node_gpus(jt->m, node, g, n, note);
	top_gpus_free(g, n);
}

static void take_reply(struct job_top *jt, int node, const struct node_reply *r)
{
	struct jdoc d = JDOC_INIT;
	struct profile np;
	char err[512];

	if (node_reply_profile(&d, &r->json, jt->job.nodes[node], &np, err, sizeof(err)) < 0) {
		top_job_node_gone(jt->m, node, false);
		goto out;
	}
	name_threads(&np, &d);
	top_job_add(jt->m, node, &np, rank_of, &d);
	if (jt->o->gpu)
		take_gpus(jt, node, &d);
	profile_free(&np);
	add_counts(jt, node, &d);
	top_job_node_seen(jt->m, node, mono_ns(), (int)num(&d, "ranks"),
			  (int)num(&d, "python_processes"), (int)num(&d, "threads"));
out:
	/* Its last reply: its ranks are gone, or it could not start. */
	if (r->status != EXIT_OK)
		top_job_node_gone(jt->m, node, r->status == EXIT_EXITED);
	jdoc_release(&d);
}

static void on_reply(void *arg, int task, struct node_reply *r)
{
	struct job_top *jt = arg;

	if (task >= 0 && task < jt->job.nnodes)
		take_reply(jt, task, r);
}

/* --- the loop --------------------------------------------------------------- */

/* The interval's totals: its rounds are the most any node took (the
 * nodes sample side by side, so 100% stays one thread all the time). */
static void job_tick(struct job_top *jt, uint64_t now)
{
	const struct top_job *j = jt->m->job;
	uint64_t most = 0;

	jt->tick.now_ns = now;
	jt->tick.nprocs = jt->tick.counts.nthreads = 0;
	for (int i = 0; i < j->nnodes; i++) {
		if (jt->iv_rounds[i] > most)
			most = jt->iv_rounds[i];
		jt->iv_rounds[i] = 0;
		jt->iv_replies[i] = 0;
		if (j->nodes[i].gone || j->nodes[i].late)
			continue;
		jt->tick.nprocs += j->nodes[i].procs;
		jt->tick.counts.nthreads += j->nodes[i].threads;
	}
	jt->tick.rounds += most;
	jt->tick.version = jt->version;
}

static void end_interval(struct job_top *jt, uint64_t now)
{
	top_job_check(jt->m, now, jt->start_ns, (uint64_t)(jt->o->slurm.timeout_s * 1e9),
		      3 * jt->delay_ns + 2000000000ull);
	job_tick(jt, now);
	top_model_interval(jt->m, &jt->tick);
	if (!jt->m->paused)
		top_job_gpu_lines(jt->m);
	jt->dirty = true;
	jt->next_refresh += jt->delay_ns;
	if (jt->next_refresh <= now)
		jt->next_refresh = now + jt->delay_ns;
	if (!jt->tty && top_view_snapshot(jt->m, stdout) < 0)
		jt->quit = true;
}

/* The interval is due, and every node that answers has sent its reply
 * for it, or half an interval more has passed: the nodes keep their own
 * time, and an interval with no reply of a node would show its ranks at
 * 0%, the next at 200%. */
static bool interval_over(const struct job_top *jt, uint64_t now)
{
	const struct top_job *j = jt->m->job;

	if (now < jt->next_refresh)
		return false;
	if (now >= jt->next_refresh + jt->delay_ns / 2)
		return true;
	for (int i = 0; i < j->nnodes; i++)
		if (j->nodes[i].last_ns && !j->nodes[i].late && !j->nodes[i].gone &&
		    !jt->iv_replies[i])
			return false;
	return true;
}

static void react(struct job_top *jt, int todo)
{
	/* I cannot change what the nodes sample: it counts afresh, as R. */
	if (todo & (TOP_IDLE | TOP_RESET)) {
		job_tick(jt, mono_ns());
		top_model_reset(jt->m, &jt->tick);
	}
	if (todo & TOP_REPAINT)
		top_view_repaint();
	if (todo & TOP_QUIT)
		jt->quit = true;
	if (todo & TOP_REDRAW)
		jt->dirty = true;
}

static void read_keys(struct job_top *jt)
{
	wint_t c;
	int kind;

	while ((kind = get_wch(&c)) != ERR)
		react(jt, top_key_press(jt->m, &jt->ui, kind, c));
	if (jt->dirty && !jt->quit) {
		top_view_draw(&jt->v, jt->m, &jt->ui);
		jt->dirty = false;
	}
}

/* srun's output until the next thing to do; once srun is over, the keys. */
static void wait_event(struct job_top *jt, uint64_t until)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	uint64_t now = mono_ns();
	struct timespec ts;

	/* srun's output is pumped to the deadline: short ones, for the keys
	 * and for the replies an interval waits for. */
	if ((jt->tty || now >= jt->next_refresh) && until > now + KEYS_NS)
		until = now + KEYS_NS;
	if (!jt->srun_over) {
		if (fanout_pump(&jt->f, &jt->d, until, &quit_requested) == 0) {
			jt->srun_over = true;
			for (int i = 0; i < jt->job.nnodes; i++)
				top_job_node_gone(jt->m, i, false);
			jt->dirty = true;
		}
		return;
	}
	if (until <= now)
		return;
	ts.tv_sec = (time_t)((until - now) / 1000000000ull);
	ts.tv_nsec = (long)((until - now) % 1000000000ull);
	ppoll(jt->tty ? &pfd : NULL, jt->tty ? 1 : 0, &ts, NULL);
}

/* The interval's end, or while replies are awaited for it, its latest. */
static uint64_t next_event(const struct job_top *jt, uint64_t now, uint64_t end)
{
	uint64_t at = jt->next_refresh;

	if (now >= at)
		at += jt->delay_ns / 2;
	return at < end ? at : end;
}

static void run(struct job_top *jt)
{
	double dur = jt->o->so.duration_s;
	uint64_t end = dur > 0 ? jt->start_ns + (uint64_t)(dur * 1e9) : UINT64_MAX;

	jt->dirty = true;
	while (!quit_requested && !jt->quit) {
		uint64_t now = mono_ns();

		if (now >= end)
			break;
		if (interval_over(jt, now))
			end_interval(jt, now);
		/* Snapshots end with srun: nothing more will come. */
		if (jt->srun_over && !jt->tty)
			break;
		if (jt->tty)
			read_keys(jt);
		wait_event(jt, next_event(jt, now, end));
	}
}

/* --- the start and the end -------------------------------------------------- */

static int start_job(struct job_top *jt)
{
	char err[1024], *args[NODE_ARGS_MAX];
	int rc;

	if ((rc = slurm_job_find(jt->o->slurm.job, &jt->job, err, sizeof(err))) < 0) {
		errorf("%s", err);
		return rc;
	}
	node_args(jt, args);
	jt->f.job = &jt->job;
	jt->f.exe = jt->o->slurm.pystrobe;
	jt->f.timeout_ms = (int)(jt->o->slurm.timeout_s * 1000);
	jt->f.args = args;
	rc = fanout_start(&jt->f, &jt->d, err, sizeof(err));
	fanout_args_free(args);
	if (rc < 0) {
		errorf("%s", err);
		return rc;
	}
	demux_stream(&jt->d, on_reply, jt);
	jt->iv_rounds = xcalloc((size_t)jt->job.nnodes, sizeof(*jt->iv_rounds));
	jt->iv_replies = xcalloc((size_t)jt->job.nnodes, sizeof(*jt->iv_replies));
	top_job_init(jt->m, slurm_job_spec(&jt->job, err, sizeof(err)), jt->job.nodelist,
		     jt->job.nodes, jt->job.nnodes);
	jt->m->job->gpu = jt->o->gpu;
	top_job_gpu_lines(jt->m);
	jt->start_ns = jt->tick.now_ns = mono_ns();
	jt->next_refresh = jt->start_ns + jt->delay_ns;
	top_model_start(jt->m, &jt->tick);
	return 0;
}

/* Once the terminal is ours again: what each node said, and those that
 * never answered or stopped before the end.  How many those are. */
static int report(struct job_top *jt, const bool *stopped)
{
	char why[1024];
	int missing = 0;

	for (int i = 0; i < jt->job.nnodes; i++) {
		const struct top_node *n = &jt->m->job->nodes[i];
		const char *node = jt->job.nodes[i];

		if (jt->d.r[i].err.len && n->last_ns)
			fanout_say(node, &jt->d.r[i].err);
		if (!n->last_ns) {
			errorf("%s", fanout_failure(&jt->f, &jt->d, i, why, sizeof(why)) ? why :
			       "node did not answer");
			missing++;
		} else if (stopped[i] && n->ended) {
			errorf("node %s: the job's processes there ended", node);
		} else if (stopped[i]) {
			errorf("node %s: stopped answering", node);
			missing++;
		}
	}
	return missing;
}

/* Every remote pystrobe asked to stop, then srun ended; the nodes that
 * had stopped answering before, in stopped. */
static void stop_nodes(struct job_top *jt, bool *stopped)
{
	top_job_check(jt->m, mono_ns(), jt->start_ns, (uint64_t)(jt->o->slurm.timeout_s * 1e9),
		      3 * jt->delay_ns + 2000000000ull);
	for (int i = 0; i < jt->job.nnodes; i++)
		stopped[i] = jt->m->job->nodes[i].late || jt->m->job->nodes[i].gone;
	/* Their last replies need no showing: no wait for them. */
	fanout_stop(&jt->f, &jt->d, 2000);
	fanout_end(&jt->f, &jt->d);
}

int top_slurm(struct target_opts *t, struct top_model *m, double delay_s, bool tty)
{
	struct job_top jt = { .o = t, .m = m, .tty = tty };
	bool *stopped = NULL;
	int rc, status = EXIT_OK, missing;

	jt.delay_ns = (uint64_t)(delay_s * 1e9);
	quit_on_signals();
	signal(SIGPIPE, SIG_IGN);
	if ((rc = start_job(&jt)) < 0) {
		status = exit_code(rc);
		goto out;
	}
	setlocale(LC_ALL, "");
	setlocale(LC_NUMERIC, "C");
	if (tty && (rc = top_view_start(&jt.v, &jt.ui)) < 0)
		status = exit_code(rc);
	else
		run(&jt);
	top_view_end();
	stopped = xcalloc((size_t)jt.job.nnodes, sizeof(*stopped));
	stop_nodes(&jt, stopped);
	missing = report(&jt, stopped);
	if (status == EXIT_OK && missing) {
		if (missing == jt.job.nnodes)
			errorf("top: no node of Slurm job %s answered to the end", jt.job.id);
		status = EXIT_NODES_MISSING;
	}
out:
	free(stopped);
	free(jt.iv_rounds);
	free(jt.iv_replies);
	free(jt.version);
	demux_release(&jt.d);
	slurm_job_release(&jt.job);
	return status;
}
