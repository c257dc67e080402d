/* record --slurm (cmd/record_node.h): one profile of the whole job.
 *
 * Each node records its own ranks (record_node.c) for the duration, or
 * until Ctrl-C here asks every node through srun to stop and send what it
 * has.  Each sample goes under two roots, "node=NAME" and "rank=N" (pprof
 * labels node and rank, which Pyroscope and Parca filter by), so the
 * flame graph shows the ranks side by side and a rank that does something
 * else stands apart.
 *
 * -f chrometrace: a timeline needs each sample's time and thread, which
 * pprof does not keep; each node then sends its own Chrome trace instead,
 * and the front puts them on one time axis, each rank's process a track
 * (cluster/jobtrace.h).
 */
#include "cmd/record_node.h"
#include "cmd/quit.h"
#include "cluster/jobtrace.h"
#include "cluster/nodeprocs.h"
#include "cluster/srun.h"
#include "profile/profile.h"
#include "util/jsonread.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_ARGS_MAX 24

/* What each node records with: the sampling options passed through. */
static void node_args(const struct slurm_job *j, const struct target_opts *t, bool trace,
		      char **argv)
{
	const struct sampler_opts *so = &t->so;
	char spec[64];
	int n = 0;

	argv[n++] = xstrdup("record");
	argv[n++] = xasprintf("--slurm-node=%s", slurm_job_spec(j, spec, sizeof(spec)));
	n = target_node_args(t, argv, n);
	if (so->duration_s > 0)
		argv[n++] = xasprintf("--duration=%g", so->duration_s);
	if (t->by_function)
		argv[n++] = xstrdup("--function");
	if (so->threads)
		argv[n++] = xstrdup("--threads");
	if (t->gpu)
		argv[n++] = xstrdup("--gpu");
	if (trace)
		argv[n++] = xstrdup("--format=chrometrace");
	argv[n] = NULL;
}

/* pid -> rank of one node's reply, for profile_append_by_process(). */
struct ranks {
	const struct jdoc *d;
	struct pframe frame;	/* the last one given */
	char name[64];
};

static const struct pframe *rank_root(void *arg, pid_t pid)
{
	struct ranks *r = arg;
	long rank = node_reply_rank(r->d, pid);

	if (rank < 0)
		return NULL;
	snprintf(r->name, sizeof(r->name), "rank=%ld", rank);
	r->frame = (struct pframe){ PF_LABEL, r->name, NULL, -1, -1 };
	return &r->frame;
}

/* The job's profile (or with -f chrometrace its trace), the Python
 * processes the nodes sampled, and with --waits what each node's threads
 * waited for. */
struct job_rec {
	struct profile *p;
	struct job_trace *trace;	/* NULL: a profile */
	int64_t pythons;
	struct strbuf waits;	/* --waits: each node's lines */
	struct strbuf gpus;	/* --gpu: each node's lines */
};

/* A node's summary lines (--waits, --gpu), each under the node's name. */
static void add_lines(struct strbuf *to, const char *node, const char *lines)
{
	for (const char *p = lines ? lines : ""; *p;) {
		size_t n = strcspn(p, "\n");

		sb_printf(to, "pystrobe:   %s: %.*s\n", node, (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* One node's pprof (in d, parsed here) into the job's profile.  0, or -1
 * with err said. */
static int add_profile(struct job_rec *rec, const char *node, const struct strbuf *json,
		       struct jdoc *d, char *err, size_t errlen)
{
	struct profile *job = rec->p;
	struct profile np;
	struct ranks r = { d, { 0 }, "" };
	char *root_name = xasprintf("node=%s", node);
	struct pframe root = { PF_LABEL, root_name, NULL, -1, -1 };
	struct append_opts ao = { .root = &root };
	int rc = -1;

	if (node_reply_profile(d, json, node, &np, err, errlen) < 0)
		goto out;
	if (!job->rate_hz) {
		job->rate_hz = np.rate_hz;
		job->interval_ns = np.interval_ns;
	}
	if (np.duration_ns > job->duration_ns)
		job->duration_ns = np.duration_ns;
	rc = profile_append_by_process(job, &np, &ao, rank_root, &r) ? 0 : -1;
	if (rc < 0)
		snprintf(err, errlen, "its counts overflow");
	profile_free(&np);
out:
	free(root_name);
	return rc;
}

/* One node's reply into the job's profile or trace.  0, or -1 with err
 * said. */
static int add_node(void *arg, const char *node, const struct strbuf *json, char *err,
		    size_t errlen)
{
	struct job_rec *rec = arg;
	struct jdoc d = JDOC_INIT;
	int64_t pythons = 0;
	int rc = -1;

	if (rec->trace) {
		if (jdoc_parse(&d, json->buf ? json->buf : "", json->len, err, errlen) < 0 ||
		    job_trace_add(rec->trace, node, &d, err, errlen) < 0)
			goto out;
	} else if (add_profile(rec, node, json, &d, err, errlen) < 0) {
		goto out;
	}
	if (jv_int(jv_get(&d, jdoc_root(&d), "python_processes"), 0, INT32_MAX, &pythons))
		rec->pythons += pythons;
	add_lines(&rec->waits, node, jv_str(&d, jv_get(&d, jdoc_root(&d), "waits")));
	add_lines(&rec->gpus, node, jv_str(&d, jv_get(&d, jdoc_root(&d), "gpu")));
	rc = 0;
out:
	jdoc_release(&d);
	return rc;
}

/* The profile's name: -o's, else after the job, here. */
static char *output_path(const char *output, const struct slurm_job *j,
			 const struct out_format *fmt)
{
	if (output)
		return xstrdup(output);
	return xasprintf("pystrobe-slurm-%s.%s", j->id, fmt->ext);
}

static void describe(struct profile *p, const struct slurm_job *j)
{
	char spec[64];

	p->command = xasprintf("Slurm job %s on %s", slurm_job_spec(j, spec, sizeof(spec)),
			       j->nodelist);
}

static int sample_job(struct target_opts *t, struct slurm_job *j, bool trace, struct demux *d,
		      struct fanout *f)
{
	char err[1024], *args[NODE_ARGS_MAX];
	int rc;

	node_args(j, t, trace, args);
	f->job = j;
	f->exe = t->slurm.pystrobe;
	f->timeout_ms = t->so.duration_s > 0 ?
			(int)((t->so.duration_s + t->slurm.timeout_s) * 1000) : 0;
	f->args = args;
	quit_on_signals();
	rc = fanout_run(f, d, &quit_requested, err, sizeof(err));
	fanout_args_free(args);
	if (rc < 0 && rc != -EINTR) {
		errorf("%s", err);
		return rc;
	}
	return 0;
}

/* No profile to write: no node answered (13), or none had a Python
 * process of the job (5).  EXIT_OK otherwise. */
static int nothing_sampled(const struct slurm_job *j, const struct job_rec *rec, int answered,
			   int missing)
{
	if (!answered) {
		errorf("record: no node of Slurm job %s sent a profile", j->id);
		return EXIT_NODES_MISSING;
	}
	if (!rec->pythons && !missing) {
		errorf("record: no Python process in Slurm job %s on any of its %d nodes (%s)",
		       j->id, j->nnodes, j->nodelist);
		return EXIT_NOT_PYTHON;
	}
	return EXIT_OK;
}

static int fill_trace(FILE *f, void *arg)
{
	return job_trace_write(arg, f);
}

/* The profile or trace to path: 0, or status_fail() after saying why. */
static int write_job(struct job_rec *rec, const struct out_format *fmt, struct out_opts *oo,
		     const char *path, double rate_hz)
{
	if (!rec->trace)
		return out_write_file(fmt, rec->p, oo, path, "record");
	rec->trace->command = rec->p->command;
	rec->trace->title = oo->title;
	rec->trace->rate_hz = rate_hz;
	return out_write_with(path, "record", fill_trace, rec->trace);
}

int record_slurm(struct target_opts *t, const struct out_format *fmt, struct out_opts *oo,
		 const char *output, bool quiet)
{
	struct slurm_job job;
	struct fanout f = { 0 };
	struct profile p;
	struct job_trace trace;
	struct job_rec rec = { &p, fmt->times_only ? &trace : NULL, 0, STRBUF_INIT, STRBUF_INIT };
	struct demux d = { 0 };
	char err[1024], *path = NULL;
	int rc, missing, answered, status;

	if ((rc = slurm_job_find(t->slurm.job, &job, err, sizeof(err))) < 0) {
		errorf("%s", err);
		return exit_code(rc);
	}
	path = output_path(output, &job, fmt);
	profile_init(&p, 0);
	p.no_timeline = true;
	job_trace_init(&trace);
	if ((rc = out_check_path(path, "record")) < 0 ||
	    (rc = sample_job(t, &job, rec.trace != NULL, &d, &f)) < 0) {
		status = exit_code(rc);
		goto out;
	}
	missing = fanout_take(&f, &d, add_node, NULL, &rec, "profile", &answered);
	describe(&p, &job);
	p.wall = t->so.idle;
	if ((status = nothing_sampled(&job, &rec, answered, missing)) != EXIT_OK)
		goto out;
	rc = write_job(&rec, fmt, oo, path, t->so.rate_hz);
	if (rc == 0 && !quiet)
		errorf("record: Slurm job %s: %d of %d nodes, %lld Python processes, %llu samples; "
		       "wrote %s", job.id, answered, job.nnodes, (long long)rec.pythons,
		       (unsigned long long)(rec.trace ? trace.samples : p.samples),
		       out_path_name(path));
	if (!quiet && rec.waits.len) {
		fputs("pystrobe: the threads' samples, by what they waited for:\n", stderr);
		fputs(rec.waits.buf, stderr);
	}
	if (!quiet && rec.gpus.len) {
		fputs("pystrobe: each node's GPUs:\n", stderr);
		fputs(rec.gpus.buf, stderr);
	}
	status = rc < 0 ? exit_code(rc) : missing ? EXIT_NODES_MISSING : EXIT_OK;
out:
	sb_release(&rec.waits);
	sb_release(&rec.gpus);
	demux_release(&d);
	job_trace_release(&trace);
	profile_free(&p);
	slurm_job_release(&job);
	free(path);
	return status;
}
