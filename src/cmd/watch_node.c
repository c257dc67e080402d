/* watch --slurm-node=JOB[.STEP]: one node's watcher of `watch --slurm`.
 *
 * The front runs this on every node of the job through srun.  It watches
 * the job's processes on this node as watch watches a --pid (the fleet
 * follows the list cluster/nodeprocs.h makes, as record --slurm-node's), and
 * writes no report of its own: it streams framed replies to the front
 * (cluster/nodereply.h), each one JSON document with a "type":
 *
 *   heartbeat  every BEAT_NS: which ranks it watches and their state, so
 *              that the front can tell a silent node from a quiet one;
 *   stall      the node's model found a stall: its kind, since when, why,
 *              and each stalled process's threads and where they are;
 *   moved      the stall reported here has ended;
 *   flight     the node's flight recording (base64 of the gzip-compressed
 *              file watch writes), with "processes" (each one's rank),
 *              when the front asks (SIGUSR2, below).
 *
 * and after a stall, or when the front asks (SIGUSR2, which srun passes
 * on: another node stalled, and the job-wide verdict needs every node's
 * stacks), the node's dump: the document dump --slurm-node --json writes,
 * with no "type", kept by the front as it is.  SIGUSR2 asks for the
 * flight recording too (the front's ask_nodes() says why one signal). 
 *
 * SIGUSR1 (the front's stop, through srun) and SIGTERM end it.
 */
#include "cmd/dump_node.h"
#include "cluster/nodeprocs.h"
#include "cmd/quit.h"
#include "cmd/watch_int.h"
#include "cluster/nodereply.h"
#include "util/base64.h"
#include "util/json.h"
#include "util/util.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define BEAT_NS (WATCH_BEAT_S * 1000000000ull)
/* The node's dump may take this long (a process at a time). */
#define DUMP_TIMEOUT_S 10.0

static volatile sig_atomic_t dump_requested, flight_asked;

static void on_usr2(int sig)
{
	(void)sig;
	dump_requested = 1;
	flight_asked = 1;
}

int watch_node_setup(struct watch *w)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	int rc;

	w->np = xcalloc(1, sizeof(*w->np));
	rc = node_procs_init(w->np, w->slurm.node_job, "watch");

	if (rc < 0)
		return rc;
	quit_on_signals_node();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	w->roots[0] = 0;	/* the fleet follows the list */
	w->nroots = 1;
	w->quiet = true;	/* the front says what is to be said */
	w->beat_at = 0;
	return 0;
}

static double unix_s(const struct watch *w, uint64_t mono)
{
	return (w->wr.unix_base_ns + (mono - w->wr.mono_base_ns)) / 1e9;
}

static void head(struct json *j, const struct watch *w, const char *type, uint64_t now)
{
	char host[256];

	json_obj_begin(j);
	json_kstr(j, "type", type);
	job_host_name(host, sizeof(host));
	json_kstr(j, "host", host);
	json_kstr(j, "node", w->np->node);
	json_kstr(j, "job", w->np->job);
	json_key(j, "time");
	json_fixed(j, unix_s(w, now), 3);
}

/* The reply, framed, on stdout: the front reads it as it comes. */
static void send_reply(const struct watch *w, struct strbuf *out)
{
	if (node_reply_write(stdout, w->np->node, EXIT_OK, out->buf ? out->buf : "", out->len) < 0)
		quit_requested = 1;	/* the front is gone */
	fflush(stdout);
	sb_release(out);
}

/* The thread a process is judged by: its main thread, else its first. */
static const struct stall_thread *main_thread(const struct stall_proc *p)
{
	for (int k = 0; k < p->nt; k++)
		if (p->t[k].tid == p->pid)
			return &p->t[k];
	return p->nt ? &p->t[0] : NULL;
}

static const char *state_of(const struct watch *w, int i, uint64_t now)
{
	uint64_t since = stall_still_since(&w->m, i);

	if (!w->m.p[i].nt)
		return "starting";
	if (stall_stuck(&w->m, i, now, NULL))
		return "stuck";
	return now - since >= BEAT_NS ? "still" : "moving";
}

/* "ranks": each process watched here, its rank and state. */
static void put_states(struct json *j, const struct watch *w, uint64_t now)
{
	json_key(j, "ranks");
	json_arr_begin(j);
	for (int i = 0; i < w->m.np; i++) {
		const struct stall_proc *p = &w->m.p[i];
		const struct stall_thread *t = main_thread(p);

		json_obj_begin(j);
		json_kint(j, "pid", p->pid);
		watch_json_rank(j, p->rank);
		json_kstr(j, "state", state_of(w, i, now));
		json_key(j, "still_since");
		json_fixed(j, unix_s(w, stall_still_since(&w->m, i)), 3);
		json_kstr(j, "where", t ? t->where : NULL);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* "stalled": the processes stuck now, each thread and where it is. */
static void put_stalled(struct json *j, const struct watch *w, uint64_t now)
{
	json_key(j, "stalled");
	json_arr_begin(j);
	for (int i = 0; i < w->m.np; i++) {
		const struct stall_proc *p = &w->m.p[i];

		if (!stall_stuck(&w->m, i, now, NULL))
			continue;
		json_obj_begin(j);
		json_kint(j, "pid", p->pid);
		watch_json_rank(j, p->rank);
		json_kstr(j, "verdict", stall_kind_name(p->verdict));
		json_key(j, "threads");
		json_arr_begin(j);
		for (int k = 0; k < p->nt; k++) {
			json_obj_begin(j);
			json_kint(j, "tid", p->t[k].tid);
			json_kstr(j, "name", p->t[k].name);
			json_kstr(j, "where", p->t[k].where);
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The node's dump, every process of the job here as dump --slurm-node
 * --json writes it, as a reply of its own: the front keeps it as it is. */
static void send_dump(struct watch *w)
{
	struct snapshot_opts so = { .async = true };
	struct dump_opts o = { .async = true };
	struct strbuf doc = STRBUF_INIT;

	dump_requested = 0;
	dump_node_json(&doc, w->np->job, w->np->step, w->np->node, DUMP_TIMEOUT_S, &so, &o);
	/* Its last newline would be a line of its own, not a piece. */
	while (doc.len && doc.buf[doc.len - 1] == '\n')
		doc.buf[--doc.len] = '\0';
	send_reply(w, &doc);
}

/* The node's flight recording, as the file watch writes, in base64,
 * beside each process's rank: the front puts every sample under its node
 * and rank in the job's one recording (watch_jobflight.c). */
static void send_flight(struct watch *w, uint64_t now)
{
	struct strbuf out = STRBUF_INIT, gz = STRBUF_INIT, b64 = STRBUF_INIT;
	struct json j;
	int rc;

	flight_asked = 0;
	rc = flightrec_encode(w->fr, 0, &gz);
	if (rc == 0)
		sb_add_base64(&b64, gz.buf, gz.len);
	json_init(&j, &out);
	json_obj_begin(&j);
	json_kstr(&j, "type", "flight");
	node_procs_json(&j, w->np);
	json_key(&j, "time");
	json_fixed(&j, unix_s(w, now), 3);
	json_kuint(&j, "samples", flightrec_samples(w->fr));
	json_kstr(&j, "flight", rc == 0 && b64.buf ? b64.buf : "");
	if (rc < 0)
		json_kstr(&j, "error", strerror(-rc));
	json_obj_end(&j);
	send_reply(w, &out);
	sb_release(&gz);
	sb_release(&b64);
}

void watch_node_tick(struct watch *w, uint64_t now)
{
	struct strbuf out = STRBUF_INIT;
	struct json j;

	if (dump_requested)
		send_dump(w);
	if (flight_asked)
		send_flight(w, now);
	if (now < w->beat_at)
		return;
	json_init(&j, &out);
	head(&j, w, "heartbeat", now);
	put_states(&j, w, now);
	json_obj_end(&j);
	send_reply(w, &out);
	w->beat_at = now + BEAT_NS;
}

void watch_node_stall(struct watch *w, uint64_t now)
{
	struct strbuf out = STRBUF_INIT;
	struct json j;

	json_init(&j, &out);
	head(&j, w, "stall", now);
	json_kstr(&j, "kind", stall_kind_name(w->m.r.kind));
	json_key(&j, "since");
	json_fixed(&j, unix_s(w, w->m.r.since_ns), 3);
	json_kint(&j, "since_s", (int64_t)unix_s(w, w->m.r.since_ns));
	json_kstr(&j, "why", w->m.r.why);
	put_states(&j, w, now);
	put_stalled(&j, w, now);
	json_obj_end(&j);
	send_reply(w, &out);
	send_dump(w);
}

void watch_node_moved(struct watch *w)
{
	struct strbuf out = STRBUF_INIT;
	struct json j;
	uint64_t now = mono_ns();

	json_init(&j, &out);
	head(&j, w, "moved", now);
	json_key(&j, "after_s");
	json_fixed(&j, w->m.r.moved_after_ns / 1e9, 1);
	json_obj_end(&j);
	send_reply(w, &out);
}
