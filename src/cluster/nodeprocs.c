/* The job's processes on this node, and a node's reply read back
 * (cluster/nodeprocs.h). */
#include "cluster/nodeprocs.h"
#include "cluster/nodereply.h"
#include "process/proctree.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "util/base64.h"
#include "util/status.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A node's job processes are looked for this often: each look reads every
 * process's environment on the node. */
#define NODE_WALK_NS 1000000000ull

static void remember(struct node_procs *np, const struct proc_node *p)
{
	for (int i = 0; i < np->n; i++)
		if (np->v[i].pid == p->pid && np->v[i].start == p->start)
			return;
	ALLOC_GROW(np->v, np->n + 1, np->cap);
	np->v[np->n] = (struct node_seen){ .pid = p->pid, .ppid = p->ppid, .start = p->start };
	job_ident_read(p->pid, &np->v[np->n].id);
	np->n++;
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
	struct node_procs *np = arg;
	pid_t *pids = xcalloc((size_t)max, sizeof(*pids));
	int n = jobprocs_list(np->job, np->step[0] ? np->step : NULL, np->node, getpid(), pids,
			      max), k = 0;

	for (int i = 0; i < n; i++)
		if (proc_node_read(pids[i], &out[k]) == 0)
			remember(np, &out[k++]);
	free(pids);
	qsort(out, (size_t)k, sizeof(*out), by_start);
	return k;
}

int node_procs_init(struct node_procs *np, const char *spec, const char *cmd)
{
	const char *dot = strchr(spec, '.');
	size_t idlen = dot ? (size_t)(dot - spec) : strlen(spec);

	memset(np, 0, sizeof(*np));
	if (!idlen || idlen >= sizeof(np->job) || (dot && strlen(dot + 1) >= sizeof(np->step)))
		return usage_error(cmd, "--slurm-node takes JOB or JOB.STEP, not '%s'", spec);
	memcpy(np->job, spec, idlen);
	if (dot)
		strcpy(np->step, dot + 1);
	node_unlink_bcast();
	node_name(np->node, sizeof(np->node));
	return 0;
}

const struct node_seen *node_procs_find(const struct node_procs *np, pid_t pid)
{
	for (int i = 0; i < np->n; i++)
		if (np->v[i].pid == pid)
			return &np->v[i];
	return NULL;
}

void node_procs_release(struct node_procs *np)
{
	free(np->v);
	np->v = NULL;
	np->n = np->cap = 0;
}

void node_procs_follow(struct node_procs *np, struct fleet_opts *fo)
{
	fo->subprocesses = true;
	fo->list = list_job;
	fo->list_arg = np;
	fo->walk_ns = NODE_WALK_NS;
}

void node_procs_json(struct json *j, const struct node_procs *np)
{
	char host[256];

	job_host_name(host, sizeof(host));
	json_kstr(j, "host", host);
	json_kstr(j, "node", np->node);
	json_kstr(j, "job", np->job);
	json_key(j, "processes");
	json_arr_begin(j);
	for (int i = 0; i < np->n; i++) {
		json_obj_begin(j);
		json_kint(j, "pid", np->v[i].pid);
		json_kint(j, "ppid", np->v[i].ppid);
		json_job_ident(j, &np->v[i].id);
		json_obj_end(j);
	}
	json_arr_end(j);
}

int node_put_pprof(struct strbuf *sb, struct profile *p)
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

int node_put_chrometrace(struct strbuf *sb, const struct profile *p)
{
	struct out_opts oo = { 0 };
	char *trace = NULL, *gz = NULL;
	size_t len = 0, gzlen = 0;
	FILE *f = open_memstream(&trace, &len), *g = NULL;
	int rc = f ? out_chrometrace(p, f, &oo) : -1;

	if (f && fclose(f) != 0)
		rc = -1;
	/* A trace is mostly the same few names over and over: gzip makes
	 * it a tenth of itself or less, on the wire and in the front's
	 * memory until it is written. */
	if (rc == 0 && (g = open_memstream(&gz, &gzlen)) != NULL)
		rc = out_write_gzip(g, trace, len);
	if (!g || fclose(g) != 0)
		rc = -1;
	if (rc == 0)
		sb_add_base64(sb, gz, gzlen);
	free(trace);
	free(gz);
	return rc < 0 ? -1 : 0;
}

int node_reply_profile(struct jdoc *d, const struct strbuf *json, const char *node,
		       struct profile *p, char *err, size_t errlen)
{
	struct strbuf pb = STRBUF_INIT;
	enum profile_format fmt;
	const char *b64;
	int rc = -1;

	if (jdoc_parse(d, json->buf ? json->buf : "", json->len, err, errlen) < 0)
		return -1;
	b64 = jv_str(d, jv_get(d, jdoc_root(d), "pprof"));
	if (!b64 || base64_decode(b64, strlen(b64), &pb) < 0)
		snprintf(err, errlen, "no profile in it");
	else
		rc = profile_read_mem(pb.buf, pb.len, node, p, &fmt, err, errlen);
	sb_release(&pb);
	return rc < 0 ? -1 : 0;
}

const struct jv *node_reply_process(const struct jdoc *d, pid_t pid)
{
	const struct jv *procs = jv_get(d, jdoc_root(d), "processes");

	for (size_t i = 0; i < jv_len(procs); i++) {
		const struct jv *p = jv_at(d, procs, i);
		int64_t v;

		if (jv_int(jv_get(d, p, "pid"), 1, INT32_MAX, &v) && v == pid)
			return p;
	}
	return NULL;
}

long node_reply_rank(const struct jdoc *d, pid_t pid)
{
	int64_t rank;

	if (!jv_int(jv_get(d, jv_get(d, node_reply_process(d, pid), "job"), "rank"), 0, INT32_MAX,
		    &rank))
		return -1;
	return (long)rank;
}
