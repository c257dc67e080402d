/* watch --slurm: one watcher per node of a Slurm job (watch_node.c), one
 * judge for the whole job, here.
 *
 * Each node's watcher sends a heartbeat every few seconds, and its own
 * stall when its model finds one.  The first stall of a node is the start
 * of the job's: every node is asked for its dump at once (SIGUSR2, which
 * srun passes on), and for up to GATHER_S the answers are waited for;
 * then the job is judged once from every node's dump (cluster/jobgroup.h:
 * the ranks whose main threads differ, and where), said in one line and
 * written in one report directory, with the job's flight recording
 * (watch_jobflight.c: every node is asked for its own with the dumps),
 * and then --on-stall runs, once, as watch on one host runs it.  Until a
 * node says its ranks move again, later stalls are the same one.  A node
 * silent for --timeout is named (its watcher is gone, or the node hangs).
 * SIGUSR1 here writes the job's flight recording now, as it does to watch
 * on one host.
 */
#include "cmd/quit.h"
#include "cmd/watch_int.h"
#include "cluster/jobgroup.h"
#include "cluster/jobview.h"
#include "cluster/srun.h"
#include "util/json.h"
#include "util/jsonread.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* After a node's stall, the other nodes' dumps are waited for this long
 * at most: a node's dump takes a second or two. */
#define GATHER_S 5
#define TICK_NS 250000000ull
#define NODE_ARGS_MAX 16

struct fnode {
	char name[128];
	uint64_t heard_ns;	/* its latest reply, 0: none yet */
	bool silent;		/* said to be silent */
	struct strbuf dump;	/* its latest dump --json document */
	uint64_t dump_ns;	/* ... when it came */
	struct strbuf stall;	/* its stall event of this stall, or empty */
	bool moving;		/* a rank moved at its latest heartbeat */
};

struct front {
	struct watch *w;
	struct slurm_job job;
	struct fanout f;
	struct demux d;
	struct fnode *n;
	uint64_t start_ns, timeout_ns, stall_ns;
	/* The job's stall: gathered from gather_ns until gather_end, then
	 * reported, until a node moves again. */
	bool gathering, reported;
	uint64_t pending_ns;	/* a node's stall waits for a moving rank since */
	uint64_t gather_ns, gather_end;
	char kind[32];
	int64_t since_s;	/* the earliest a node says */
	char *dir;
	int stalls;
	/* The job's flight recording; a user's SIGUSR1 waits for every
	 * node's until flight_end (0: none asked). */
	struct job_flight jf;
	uint64_t flight_end;
};

static volatile sig_atomic_t flight_wanted;

static void on_usr1(int sig)
{
	(void)sig;
	flight_wanted = 1;
}

static void node_args(const struct front *fr, char **argv)
{
	const struct watch *w = fr->w;
	char spec[64];
	int n = 0;

	argv[n++] = xstrdup("watch");
	argv[n++] = xasprintf("--slurm-node=%s", slurm_job_spec(&fr->job, spec, sizeof(spec)));
	argv[n++] = xasprintf("--stall=%g", w->stall_s);
	argv[n++] = xasprintf("--rate=%g", w->rate_hz);
	argv[n++] = xasprintf("--keep=%g", w->keep_s);
	argv[n++] = xasprintf("--keep-size=%g", w->keep_mb);
	if (w->progress)
		argv[n++] = xasprintf("--progress=%s", w->progress);
	if (w->no_priority)
		argv[n++] = xstrdup("--no-priority");
	argv[n] = NULL;
}

/* --- what the nodes send ------------------------------------------------- */

static void take_stall(struct front *fr, struct fnode *fn, const struct jdoc *d,
		       const struct node_reply *r)
{
	const struct jv *root = jdoc_root(d);
	const char *kind = jv_str(d, jv_get(d, root, "kind"));
	int64_t since = 0;

	if (fr->reported)
		return;
	sb_release(&fn->stall);
	sb_add(&fn->stall, r->json.buf, r->json.len);
	/* The earliest stall names the job's: its kind and since. */
	if (!jv_int(jv_get(d, root, "since_s"), 0, INT64_MAX, &since))
		since = (int64_t)time(NULL);
	if (!fr->kind[0] || since < fr->since_s) {
		fr->since_s = since;
		snprintf(fr->kind, sizeof(fr->kind), "%s", kind ? kind : "stall");
	}
	fn->moving = false;
	if (!fr->pending_ns && !fr->gathering)
		fr->pending_ns = mono_ns();
}

/* Whether a rank of a node that has not stalled moved at its latest
 * heartbeat: it is late, not stuck (as a rank that moves is to watch on
 * one host), and the job's verdict waits for it up to one more --stall. */
static bool any_moving(const struct front *fr)
{
	for (int i = 0; i < fr->d.n; i++)
		if (fr->n[i].moving && !fr->n[i].silent)
			return true;
	return false;
}

/* Every node's dump and flight recording, asked for with one signal to
 * srun, which passes it on to each task of its step (its stdin is no
 * node's input here).  srun 22.05 passes on SIGUSR1 and SIGUSR2 alone as
 * they are: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the step, SIGCONT it
 * keeps, SIGALRM is its own --wait timer.  SIGUSR1 is the nodes' stop
 * (fanout_stop()), so SIGUSR2 asks for both: the job's stall needs both
 * at once; a SIGUSR1 here for the recording alone costs each rank one
 * dump's read, whose result is not used. */
static void ask_nodes(struct front *fr, uint64_t now)
{
	if (!fr->f.running)
		return;
	kill(fr->f.srun.pid, SIGUSR2);
	job_flight_asked(&fr->jf, now);
}

/* Every node's stacks, now: the verdict is on the whole job. */
static void start_gather(struct front *fr, uint64_t now)
{
	fr->pending_ns = 0;
	fr->gathering = true;
	fr->gather_ns = now;
	fr->gather_end = now + GATHER_S * 1000000000ull;
	ask_nodes(fr, now);
}

/* A heartbeat: whether any of the node's ranks moves. */
static void take_beat(struct fnode *fn, const struct jdoc *d)
{
	const struct jv *ranks = jv_get(d, jdoc_root(d), "ranks");

	fn->moving = false;
	for (size_t i = 0; i < jv_len(ranks) && i < 100000; i++) {
		const char *state = jv_str(d, jv_get(d, jv_at(d, ranks, i), "state"));

		if (state && !strcmp(state, "moving"))
			fn->moving = true;
	}
}

static void take_moved(struct front *fr, const char *node)
{
	if (!fr->reported)
		return;
	errorf("watch: node %s: the job moves again%s%s%s", node, fr->dir ? " (" : "",
	       fr->dir ? strrchr(fr->dir, '/') + 1 : "", fr->dir ? ")" : "");
	fr->reported = false;
	fr->pending_ns = 0;
	fr->since_s = 0;
	fr->kind[0] = '\0';
	for (int i = 0; i < fr->d.n; i++)
		sb_release(&fr->n[i].stall);
}

/* A node is heard from: it was silent, it is no more. */
static void heard(struct fnode *fn, const char *name)
{
	if (name && !fn->name[0])
		snprintf(fn->name, sizeof(fn->name), "%s", name);
	if (fn->silent)
		errorf("watch: node %s answers again", fn->name);
	fn->silent = false;
	fn->heard_ns = mono_ns();
}

static void on_reply(void *arg, int task, struct node_reply *r)
{
	struct front *fr = arg;
	struct fnode *fn = &fr->n[task];
	struct jdoc d = JDOC_INIT;
	const char *type;
	char err[256];

	heard(fn, r->node);
	if (jdoc_parse(&d, r->json.buf ? r->json.buf : "", r->json.len, err, sizeof(err)) < 0) {
		errorf("watch: node %s: a reply that is no JSON: %s", fn->name, err);
		goto out;
	}
	type = jv_str(&d, jv_get(&d, jdoc_root(&d), "type"));
	if (!type) {	/* its dump */
		sb_release(&fn->dump);
		sb_add(&fn->dump, r->json.buf, r->json.len);
		fn->dump_ns = mono_ns();
	} else if (!strcmp(type, "heartbeat")) {
		take_beat(fn, &d);
	} else if (!strcmp(type, "stall")) {
		take_stall(fr, fn, &d, r);
	} else if (!strcmp(type, "moved")) {
		take_moved(fr, fn->name);
	} else if (!strcmp(type, "flight")) {
		job_flight_take(&fr->jf, task, &r->json);
	}
out:
	jdoc_release(&d);
}

/* --- the report ---------------------------------------------------------- */

/* Every node that answers has sent what was asked since since_ns: its
 * dump (dumps) and its flight recording. */
static bool all_in(const struct front *fr, bool dumps, uint64_t since_ns)
{
	for (int i = 0; i < fr->d.n; i++) {
		const struct fnode *fn = &fr->n[i];

		if (fn->silent || !fn->heard_ns)
			continue;
		if ((dumps && fn->dump_ns < since_ns) || !job_flight_in(&fr->jf, i))
			return false;
	}
	return true;
}

/* Every node's dump into jd; a node without one of this stall named. */
static void gather_dumps(const struct front *fr, struct job_dump *jd, struct strbuf *missing)
{
	char err[512];

	for (int i = 0; i < fr->d.n; i++) {
		const struct fnode *fn = &fr->n[i];
		const char *why = NULL;

		if (!fn->heard_ns)
			why = "its watcher never answered";
		else if (fn->silent)
			why = "its watcher has gone silent";
		else if (fn->dump_ns < fr->gather_ns)
			why = "sent no dump in time";
		else if (jobdump_add_json(jd, fn->dump.buf, fn->dump.len, fn->name, err,
					  sizeof(err)) < 0)
			why = err;
		if (!why)
			continue;
		jobdump_node_error(jd, fn->name, why);
		sb_printf(missing, "node %s: %s\n", fn->name, why);
	}
}

static void when_of(int64_t unix_s, char *buf, size_t len)
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* The one line: "collective since 12:52:14: rank 3 on hnode2 differs: ...". */
static char *verdict_line(const struct front *fr, const struct job_grouping *gr)
{
	char when[32];

	when_of(fr->since_s, when, sizeof(when));
	return xasprintf("%s since %s: %s", fr->kind, when,
			 gr->verdict ? gr->verdict : "every rank's main thread in one stack");
}

static void json_report(struct strbuf *sb, const struct front *fr, const char *line,
			const struct job_grouping *gr)
{
	struct json j;

	json_init(&j, sb);
	json_obj_begin(&j);
	json_kstr(&j, "job", fr->job.id);
	json_kstr(&j, "kind", fr->kind);
	json_kint(&j, "since_unix", fr->since_s);
	json_kstr(&j, "line", line);
	json_kstr(&j, "verdict", gr->verdict);
	json_kstr(&j, "flight", WATCH_FLIGHT_FILE);
	json_key(&j, "nodes");
	json_arr_begin(&j);
	for (int i = 0; i < fr->d.n; i++) {
		const struct fnode *fn = &fr->n[i];

		json_obj_begin(&j);
		json_kstr(&j, "node", fn->name);
		json_kbool(&j, "dump", fn->heard_ns && fn->dump_ns >= fr->gather_ns);
		json_kbool(&j, "flight", job_flight_in(&fr->jf, i));
		json_kbool(&j, "stalled", fn->stall.len > 0);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	sb_putc(sb, '\n');
}

static void write_files(const struct front *fr, const char *dir, const char *line,
			const struct job_grouping *gr, const struct strbuf *missing)
{
	struct jobview_opts vo = { 0 };
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "%s\n%s\n", line, missing->len ? missing->buf : "");
	jobview_text(&sb, gr, &vo);
	watch_report_file(dir, "report.txt", &sb);
	sb_release(&sb);
	json_report(&sb, fr, line, gr);
	watch_report_file(dir, "report.json", &sb);
	sb_release(&sb);
	jobview_json(&sb, gr);
	watch_report_file(dir, "job.json", &sb);
	for (int i = 0; i < fr->d.n; i++) {
		char *name;

		if (!fr->n[i].dump.len || fr->n[i].dump_ns < fr->gather_ns)
			continue;
		name = xasprintf("dump-%s.json", fr->n[i].name);
		watch_report_file(dir, name, &fr->n[i].dump);
		free(name);
		if (!fr->n[i].stall.len)
			continue;
		name = xasprintf("stall-%s.json", fr->n[i].name);
		watch_report_file(dir, name, &fr->n[i].stall);
		free(name);
	}
	sb_release(&sb);
}

static uint64_t unix_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The job's flight recording into dir, slices relative to mark: its
 * path (new), or NULL (said). */
static char *write_flight(const struct front *fr, const char *dir, uint64_t mark,
			  struct strbuf *missing)
{
	const char **names = xcalloc((size_t)fr->d.n + 1, sizeof(*names));
	char *path;

	for (int i = 0; i < fr->d.n; i++)
		names[i] = fr->n[i].name;
	path = job_flight_write(&fr->jf, fr->w, dir, names, mark, missing);
	free(names);
	return path;
}

/* A new directory DIR/PREFIX-UNIX-jobJ. */
static char *job_dir(const struct front *fr, const char *prefix, uint64_t unix_ns)
{
	char who[64];

	snprintf(who, sizeof(who), "job%s", fr->job.id);
	return watch_report_mkdir(fr->w->dir, prefix, who, unix_ns);
}

/* The job's report, then --on-stall, once the directory is whole. */
static void report(struct front *fr)
{
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;
	struct strbuf missing = STRBUF_INIT;
	uint64_t now = unix_now_ns();
	char *line, *dir;

	fr->gathering = false;
	fr->reported = true;
	fr->stalls++;
	gather_dumps(fr, &jd, &missing);
	jobgroup_build(&gr, &jd);
	line = verdict_line(fr, &gr);
	dir = job_dir(fr, "stall", now);
	if (dir) {
		free(write_flight(fr, dir, now, &missing));
		write_files(fr, dir, line, &gr, &missing);
	}
	errorf("watch: %s; report: %s", line, dir ? dir : "not written");
	if (dir && fr->w->on_stall)
		watch_hook_run(fr->w, dir, fr->kind, -1);
	free(fr->dir);
	fr->dir = dir;
	free(line);
	sb_release(&missing);
	jobgroup_release(&gr);
	jobdump_release(&jd);
}

/* --- SIGUSR1: the job's flight recording now ----------------------------- */

static void flight_start(struct front *fr, uint64_t now)
{
	flight_wanted = 0;
	if (!fr->f.running)
		return;
	ask_nodes(fr, now);
	fr->flight_end = now + fr->timeout_ns;
}

/* Every node's recording is in, or --timeout has passed: written, as
 * watch on one host writes its own, into DIR/flight-UNIX-jobJ/. */
static void flight_done(struct front *fr)
{
	struct strbuf missing = STRBUF_INIT;
	uint64_t now = unix_now_ns();
	char *dir = job_dir(fr, "flight", now), *path = NULL;

	fr->flight_end = 0;
	if (dir)
		path = write_flight(fr, dir, now, &missing);
	for (const char *p = missing.len ? missing.buf : ""; *p;) {
		size_t n = strcspn(p, "\n");

		errorf("watch: %.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
	if (path)
		errorf("watch: wrote the flight recording of the last %.0f s of Slurm job %s: %s",
		       fr->w->keep_s, fr->job.id, path);
	free(path);
	free(dir);
	sb_release(&missing);
}

/* --- the loop ------------------------------------------------------------ */

/* A node silent for --timeout is named, once until it answers again. */
static void check_silent(struct front *fr, uint64_t now)
{
	for (int i = 0; i < fr->d.n; i++) {
		struct fnode *fn = &fr->n[i];
		uint64_t last = fn->heard_ns ? fn->heard_ns : fr->start_ns;

		if (fn->silent || now - last < fr->timeout_ns)
			continue;
		fn->silent = true;
		errorf("watch: node %s: %s for %g s; the other nodes are still watched", fn->name,
		       fn->heard_ns ? "no heartbeat" : "its watcher has not started",
		       fr->timeout_ns / 1e9);
	}
}

static void front_loop(struct front *fr)
{
	for (;;) {
		uint64_t now = mono_ns();
		int rc = fanout_pump(&fr->f, &fr->d, now + TICK_NS, &quit_requested);

		if (rc != -ETIMEDOUT)
			break;
		now = mono_ns();
		check_silent(fr, now);
		if (fr->pending_ns && !fr->gathering && !fr->reported &&
		    (!any_moving(fr) || now - fr->pending_ns >= fr->stall_ns))
			start_gather(fr, now);
		if (fr->gathering && (all_in(fr, true, fr->gather_ns) || now >= fr->gather_end))
			report(fr);
		if (flight_wanted)
			flight_start(fr, now);
		if (fr->flight_end && (all_in(fr, false, 0) || now >= fr->flight_end))
			flight_done(fr);
		watch_hooks_reap(fr->w);
	}
}

static int front_start(struct front *fr, char **args)
{
	struct watch *w = fr->w;
	char err[1024];
	int rc;

	fr->f.job = &fr->job;
	fr->f.exe = w->slurm.pystrobe;
	fr->f.args = args;
	if ((rc = fanout_start(&fr->f, &fr->d, err, sizeof(err))) < 0) {
		errorf("%s", err);
		return rc;
	}
	demux_stream(&fr->d, on_reply, fr);
	fr->n = xcalloc((size_t)fr->d.n, sizeof(*fr->n));
	job_flight_init(&fr->jf, fr->d.n);
	for (int i = 0; i < fr->d.n; i++)
		snprintf(fr->n[i].name, sizeof(fr->n[i].name), "%s",
			 i < fr->job.nnodes ? fr->job.nodes[i] : "?");
	fr->start_ns = mono_ns();
	fr->stall_ns = (uint64_t)(w->stall_s * 1e9);
	/* Two heartbeats and a second at least: a node is not silent between
	 * two of them. */
	fr->timeout_ns = (uint64_t)(w->slurm.timeout_s * 1e9);
	if (fr->timeout_ns < (2 * WATCH_BEAT_S + 1) * 1000000000ull)
		fr->timeout_ns = (2 * WATCH_BEAT_S + 1) * 1000000000ull;
	if (!w->quiet)
		errorf("watch: watching Slurm job %s on %s (%d nodes) at %g Hz; a stall is %g s "
		       "without progress; reports go to %s", fr->job.id, fr->job.nodelist,
		       fr->job.nnodes, w->rate_hz, w->stall_s, w->dir);
	return 0;
}

/* What srun ended with: each node's lines, and the nodes that never
 * answered.  The exit status: EXIT_NODES_MISSING when one never did, or
 * had gone silent. */
static int front_end(struct front *fr)
{
	int missing = 0;

	if (quit_requested)
		fanout_stop(&fr->f, &fr->d, 3000);
	fanout_end(&fr->f, &fr->d);
	for (int i = 0; i < fr->d.n; i++) {
		char why[1024];

		/* One that never answered has one line, which quotes what went
		 * wrong (no pystrobe there: the hint). */
		if (fr->n[i].heard_ns)
			fanout_say(fr->n[i].name, &fr->d.r[i].err);
		else if (fanout_failure(&fr->f, &fr->d, i, why, sizeof(why)))
			errorf("watch: %s", why);
		else
			errorf("watch: node %s: its watcher never answered", fr->n[i].name);
		missing += !fr->n[i].heard_ns || fr->n[i].silent;
	}
	if (!quit_requested && !fr->w->quiet)
		errorf("watch: every watcher of Slurm job %s has ended (%d stall%s reported)",
		       fr->job.id, fr->stalls, fr->stalls == 1 ? "" : "s");
	return missing ? EXIT_NODES_MISSING : EXIT_OK;
}

/* Its stderr gone (watch --slurm ... | head): the front stops as on
 * Ctrl-C, ending every node's watcher, rather than die and leave srun
 * and them running. */
static void on_pipe(int sig)
{
	(void)sig;
	quit_requested = 1;
}

int watch_slurm(struct watch *w)
{
	struct sigaction sa = { .sa_handler = on_pipe };
	struct front fr = { .w = w };
	char err[1024], *args[NODE_ARGS_MAX];
	int rc, status;

	if ((rc = slurm_job_find(w->slurm.job, &fr.job, err, sizeof(err))) < 0) {
		errorf("%s", err);
		return exit_code(rc);
	}
	quit_on_signals();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	/* The job's flight recording, as watch on one host writes its own. */
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	node_args(&fr, args);
	rc = front_start(&fr, args);
	fanout_args_free(args);
	if (rc < 0) {
		status = exit_code(rc);
		goto out;
	}
	front_loop(&fr);
	status = front_end(&fr);
out:
	for (int i = 0; fr.n && i < fr.d.n; i++) {
		sb_release(&fr.n[i].dump);
		sb_release(&fr.n[i].stall);
	}
	free(fr.n);
	free(fr.dir);
	job_flight_release(&fr.jf);
	/* A command still running goes on alone, as after watch on one host. */
	watch_hooks_reap(w);
	free(w->hooks);
	w->hooks = NULL;
	demux_release(&fr.d);
	slurm_job_release(&fr.job);
	return status;
}
