/* record --slurm-node (cmd/record_node.h): what one node of a job records.
 *
 * The fleet follows the node's processes of the job (cluster/nodeprocs.h);
 * the profile goes back as pprof inside a JSON reply beside each
 * process's job and rank: the front puts every sample under its node and
 * rank (record_slurm.c).
 */
#include "cmd/record_node.h"
#include "cmd/quit.h"
#include "cluster/nodeprocs.h"
#include "cluster/nodereply.h"
#include "analysis/gpuwatch.h"
#include "analysis/waitmark.h"
#include "analysis/waitsum.h"
#include "sample/fleet.h"
#include "util/json.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The rank of the process pid, as first seen; -1 for none. */
static long rank_of(const struct node_procs *np, long pid)
{
	const struct node_seen *ns = node_procs_find(np, (pid_t)pid);

	return ns ? ns->id.rank : -1;
}

/* --waits: what each thread waited for (analysis/waitsum.h's lines), a
 * rank's main thread said as the rank's ("rank 3, main thread 485: ..."),
 * which the front prints under this node. */
static void put_waits(struct json *j, const struct node_procs *np, const struct waitmark *w)
{
	struct strbuf lines = STRBUF_INIT, said = STRBUF_INIT;
	long pid, rank;
	int at;

	if (!w)
		return;
	waitsum_write(waitmark_summary(w), &lines);
	for (const char *p = lines.len ? lines.buf : ""; *p;) {
		size_t n = strcspn(p, "\n");
		size_t lead = strspn(p, " ");

		sb_add(&said, p, lead);
		if (sscanf(p + lead, "main thread %ld:%n", &pid, &at) == 1 && at > 0 &&
		    (rank = rank_of(np, pid)) >= 0)
			sb_printf(&said, "rank %ld, ", rank);
		sb_add(&said, p + lead, n - lead);
		sb_putc(&said, '\n');
		p += n + (p[n] == '\n');
	}
	json_kstr(j, "waits", said.buf ? said.buf : "");
	sb_release(&lines);
	sb_release(&said);
}

/* --gpu: every GPU this node's NVML sees, read beside the sampling; the
 * summary's lines (or the one that says why there are none) go in the
 * reply's "gpu", which the front prints under this node, and the readings
 * become the profile's counters (the Chrome trace's GPU tracks). */
static void gpu_lines(struct gpuwatch *g, struct profile *p, struct strbuf *lines)
{
	const struct gpusample *s;

	gpuwatch_stop(g);
	if ((s = gpuwatch_result(g))) {
		gpusample_to_profile(s, p);
		gpusample_summary(s, false, lines);
	}
	if (gpuwatch_note(g))
		sb_printf(lines, "--gpu: %s%s\n", gpuwatch_note(g),
			  s ? "" : ": no GPU figures in this recording");
}

/* The reply's JSON: who, what was sampled, and the profile: pprof, or
 * with trace a Chrome trace (its times since start_unix_ns, this node's
 * wall clock, by which the front lines the nodes up). */
static int put_reply(struct strbuf *out, const struct node_procs *np, struct profile *p,
		     const struct sampler_counts *c, int nprocs, const struct waitmark *w,
		     struct gpuwatch *g, bool trace)
{
	struct strbuf b64 = STRBUF_INIT, gpu = STRBUF_INIT;
	struct json j;
	int rc;

	if (g)
		gpu_lines(g, p, &gpu);
	rc = trace ? node_put_chrometrace(&b64, p) : node_put_pprof(&b64, p);
	json_init(&j, out);
	json_obj_begin(&j);
	if (g)
		json_kstr(&j, "gpu", gpu.buf ? gpu.buf : "");
	node_procs_json(&j, np);
	json_kint(&j, "python_processes", nprocs);
	json_kuint(&j, "rounds", c->rounds);
	json_kuint(&j, "samples", p->samples);
	json_kuint(&j, "rounds_lost", p->rounds_lost);
	json_kuint(&j, "duration_ns", p->duration_ns);
	json_kuint(&j, "start_unix_ns", p->start_unix_ns);
	put_waits(&j, np, w);
	json_kstr(&j, trace ? "chrometrace" : "pprof", b64.buf ? b64.buf : "");
	json_obj_end(&j);
	sb_release(&b64);
	sb_release(&gpu);
	return rc;
}

int record_node(struct target_opts *t, const struct out_format *fmt)
{
	struct node_procs np;
	struct strbuf out = STRBUF_INIT;
	struct sampler_status st;
	struct sampler_counts c;
	struct fleet *f = NULL;
	struct waitmark *w = NULL;
	struct gpuwatch *g = NULL;
	struct profile p;
	char err[512];
	int rc, status = EXIT_OK, nprocs;

	if ((rc = node_procs_init(&np, t->slurm.node_job, "record")) < 0)
		return exit_code(rc);
	quit_on_signals_node();
	profile_init(&p, t->so.rate_hz);
	/* pprof keeps counts, per thread; a Chrome trace needs the runs. */
	p.no_timeline = !fmt->times_only;
	if (t->waits)
		w = waitmark_new(&p);
	node_procs_follow(&np, &t->fo);
	rc = fleet_open(0, &t->so, &t->fo, &p, &f, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		status = exit_code(rc);
		goto out;
	}
	p.wall = t->so.idle;
	p.start_unix_ns = realtime_ns();
	if (t->gpu)
		g = gpuwatch_start_all(mono_ns());
	fleet_run(f, &quit_requested, NULL, NULL, &st);
	fleet_counts(f, &c);
	nprocs = fleet_nprocs_ever(f);
	fleet_close(f);
	p.decorate = NULL;
	if (w)
		waitmark_finish(w);
	profile_merge_renamed(&p);
	if (put_reply(&out, &np, &p, &c, nprocs, w, g, fmt->times_only) < 0) {
		errorf("cannot write this node's profile");
		status = EXIT_ERROR;
	}
	if (node_reply_write(stdout, np.node, status, out.buf ? out.buf : "", out.len) < 0)
		status = EXIT_ERROR;
out:
	waitmark_free(w);
	gpuwatch_free(g);
	sb_release(&out);
	node_procs_release(&np);
	profile_free(&p);
	return status;
}
