/* dump --slurm (cmd/dump_slurm.h): dump runs on every node of the job
 * through srun (cluster/srun.h), each node sends its ranks as one JSON
 * document, and the whole job is grouped here (cluster/jobgroup.h): the
 * ranks that differ first, named. */
#include "cmd/dump_slurm.h"
#include "cmd/quit.h"
#include "cluster/jobdump.h"
#include "cluster/jobgroup.h"
#include "cluster/jobview.h"
#include "cluster/srun.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_ARGS_MAX 16

/* What each node runs after the binary: dump in its node mode, with what
 * it reads passed through.  The nodes' own bound is below the front's,
 * so that a node that has to give up still answers in time. */
static void node_args(const struct slurm_job *j, const struct slurm_opts *s,
		      const struct snapshot_opts *so, char **argv)
{
	char spec[64];
	int n = 0;
	double node_timeout = s->timeout_s > 4 ? s->timeout_s - 3 : 1;

	argv[n++] = xstrdup("dump");
	argv[n++] = xasprintf("--slurm-node=%s", slurm_job_spec(j, spec, sizeof(spec)));
	argv[n++] = xstrdup("--json");
	argv[n++] = xasprintf("--timeout=%g", node_timeout);
	if (so->native)
		argv[n++] = xstrdup("--native");
	if (so->locals)
		argv[n++] = xstrdup(so->deep_locals ? "--locals=deep" : "--locals");
	if (so->async)
		argv[n++] = xstrdup("--async");
	if (so->nonblocking)
		argv[n++] = xstrdup("--nonblocking");
	argv[n] = NULL;
}

static int add_node(void *arg, const char *node, const struct strbuf *json, char *err,
		    size_t errlen)
{
	return jobdump_add_json(arg, json->buf ? json->buf : "", json->len, node, err, errlen);
}

/* A node that sent nothing whole, in the view too. */
static void add_missing(void *arg, const char *node, const char *why)
{
	jobdump_node_error(arg, node, why);
}

static int show(const struct job_dump *jd, const struct dump_opts *o)
{
	struct jobview_opts vo = { o->full_filenames, o->full_names, o->no_source };
	struct strbuf out = STRBUF_INIT;
	struct job_grouping gr;
	int status = EXIT_OK;

	jobgroup_build(&gr, jd);
	if (o->json)
		jobview_json(&out, &gr);
	else
		jobview_text(&out, &gr, &vo);
	jobgroup_release(&gr);
	fwrite(out.buf ? out.buf : "", 1, out.len, stdout);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output");
		status = EXIT_ERROR;
	}
	sb_release(&out);
	return status;
}

int dump_slurm(const struct slurm_opts *s, const struct dump_opts *o,
	       const struct snapshot_opts *so)
{
	char err[1024], *args[NODE_ARGS_MAX];
	struct slurm_job job;
	struct fanout f = { 0 };
	struct job_dump jd = JOB_DUMP_INIT;
	struct demux d;
	int rc, missing, answered, status;

	rc = slurm_job_find(s->job, &job, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		return exit_code(rc);
	}
	node_args(&job, s, so, args);
	f.job = &job;
	f.exe = s->pystrobe;
	f.timeout_ms = (int)(s->timeout_s * 1000);
	f.args = args;
	quit_on_signals();
	rc = fanout_run(&f, &d, &quit_requested, err, sizeof(err));
	fanout_args_free(args);
	if (rc < 0 && rc != -EINTR) {
		errorf("%s", err);
		status = exit_code(rc);
		goto out;
	}
	if (rc == -EINTR)
		errorf("interrupted: every node's pystrobe was ended; what had come is shown");
	missing = fanout_take(&f, &d, add_node, add_missing, &jd, "dump", &answered);
	if (!jd.nprocs && !missing) {
		errorf("no Python process in Slurm job %s on any of its %d nodes (%s)", job.id,
		       job.nnodes, job.nodelist);
		status = EXIT_NOT_PYTHON;
	} else {
		status = show(&jd, o);
		if (status == EXIT_OK && missing)
			status = EXIT_NODES_MISSING;
	}
	jobdump_release(&jd);
out:
	demux_release(&d);
	slurm_job_release(&job);
	return status;
}
