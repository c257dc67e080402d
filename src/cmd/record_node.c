/* record --slurm-node (cmd/record_node.h): what one node of a job records.
 *
 * The node's processes of the job are no one process's descendants (each
 * task is its step daemon's child), so the fleet follows a list made here
 * (jobprocs_list(), process/jobenv.h) rather than a tree.  The profile goes
 * back as pprof, which keeps functions, files, lines and each sample's
 * pid and tid, inside a JSON reply beside each process's job and rank: the
 * front puts every sample under its node and rank (record_slurm.c).
 */
#include "cmd/record_node.h"
#include "cmd/quit.h"
#include "cluster/nodereply.h"
#include "process/jobenv.h"
#include "process/proctree.h"
#include "sample/fleet.h"
#include "util/base64.h"
#include "util/json.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A node's job processes are looked for this often: each look reads every
 * process's environment on the node. */
#define NODE_WALK_NS 1000000000ull

struct seen {
	pid_t pid, ppid;
	uint64_t start;
	struct job_ident id;
};

/* The fleet's list of the job's processes on this node, and the identity
 * of each as first seen (a pid with another start time is another
 * process). */
struct node_list {
	char job[32], step[32], node[128];
	struct seen *v;
	int n, cap;
};

static void remember(struct node_list *nl, const struct proc_node *p)
{
	for (int i = 0; i < nl->n; i++)
		if (nl->v[i].pid == p->pid && nl->v[i].start == p->start)
			return;
	ALLOC_GROW(nl->v, nl->n + 1, nl->cap);
	nl->v[nl->n] = (struct seen){ .pid = p->pid, .ppid = p->ppid, .start = p->start };
	job_ident_read(p->pid, &nl->v[nl->n].id);
	nl->n++;
}

/* Parents start before their children: by start time, the order the
 * fleet wants. */
static int by_start(const void *a, const void *b)
{
	const struct proc_node *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int list_job(void *arg, struct proc_node *out, int max)
{
	struct node_list *nl = arg;
	pid_t *pids = xcalloc((size_t)max, sizeof(*pids));
	int n = jobprocs_list(nl->job, nl->step[0] ? nl->step : NULL, nl->node, getpid(), pids,
			      max), k = 0;

	for (int i = 0; i < n; i++)
		if (proc_node_read(pids[i], &out[k]) == 0)
			remember(nl, &out[k++]);
	free(pids);
	qsort(out, (size_t)k, sizeof(*out), by_start);
	return k;
}

static int parse_node_job(struct node_list *nl, const char *spec)
{
	const char *dot = strchr(spec, '.');
	size_t idlen = dot ? (size_t)(dot - spec) : strlen(spec);

	if (!idlen || idlen >= sizeof(nl->job) || (dot && strlen(dot + 1) >= sizeof(nl->step)))
		return usage_error("record", "--slurm-node takes JOB or JOB.STEP, not '%s'", spec);
	memcpy(nl->job, spec, idlen);
	if (dot)
		strcpy(nl->step, dot + 1);
	return 0;
}

/* The profile as pprof, base64, into sb. */
static int put_pprof(struct strbuf *sb, struct profile *p)
{
	struct out_opts oo = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		return -1;
	rc = out_pprof(p, f, &oo);
	if (fclose(f) != 0)
		rc = -1;
	if (rc == 0)
		sb_add_base64(sb, buf, len);
	free(buf);
	return rc;
}

static void put_processes(struct json *j, const struct node_list *nl)
{
	json_key(j, "processes");
	json_arr_begin(j);
	for (int i = 0; i < nl->n; i++) {
		json_obj_begin(j);
		json_kint(j, "pid", nl->v[i].pid);
		json_kint(j, "ppid", nl->v[i].ppid);
		json_job_ident(j, &nl->v[i].id);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The reply's JSON: who, what was sampled, and the profile. */
static int put_reply(struct strbuf *out, const struct node_list *nl, struct profile *p,
		     const struct sampler_counts *c, int nprocs)
{
	struct strbuf b64 = STRBUF_INIT;
	char host[256];
	struct json j;
	int rc = put_pprof(&b64, p);

	json_init(&j, out);
	json_obj_begin(&j);
	job_host_name(host, sizeof(host));
	json_kstr(&j, "host", host);
	json_kstr(&j, "node", nl->node);
	json_kstr(&j, "job", nl->job);
	json_kint(&j, "python_processes", nprocs);
	json_kuint(&j, "rounds", c->rounds);
	json_kuint(&j, "samples", p->samples);
	json_kuint(&j, "rounds_lost", p->rounds_lost);
	json_kuint(&j, "duration_ns", p->duration_ns);
	put_processes(&j, nl);
	json_kstr(&j, "pprof", b64.buf ? b64.buf : "");
	json_obj_end(&j);
	sb_release(&b64);
	return rc;
}

int record_node(struct target_opts *t)
{
	struct node_list nl = { 0 };
	struct strbuf out = STRBUF_INIT;
	struct sampler_status st;
	struct sampler_counts c;
	struct fleet *f = NULL;
	struct profile p;
	char err[512];
	int rc, status = EXIT_OK, nprocs;

	if ((rc = parse_node_job(&nl, t->slurm.node_job)) < 0)
		return exit_code(rc);
	node_unlink_bcast();
	node_name(nl.node, sizeof(nl.node));
	quit_on_signals_node();
	profile_init(&p, t->so.rate_hz);
	p.no_timeline = true;	/* pprof keeps counts, per thread */
	t->fo.subprocesses = true;
	t->fo.list = list_job;
	t->fo.list_arg = &nl;
	t->fo.walk_ns = NODE_WALK_NS;
	rc = fleet_open(0, &t->so, &t->fo, &p, &f, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		status = exit_code(rc);
		goto out;
	}
	p.wall = t->so.idle;
	fleet_run(f, &quit_requested, NULL, NULL, &st);
	fleet_counts(f, &c);
	nprocs = fleet_nprocs_ever(f);
	fleet_close(f);
	profile_merge_renamed(&p);
	if (put_reply(&out, &nl, &p, &c, nprocs) < 0) {
		errorf("cannot write this node's profile");
		status = EXIT_ERROR;
	}
	if (node_reply_write(stdout, nl.node, status, out.buf ? out.buf : "", out.len) < 0)
		status = EXIT_ERROR;
out:
	sb_release(&out);
	free(nl.v);
	profile_free(&p);
	return status;
}
