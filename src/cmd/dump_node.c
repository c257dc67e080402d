/* dump --slurm-node=JOB[.STEP]: one node's part of `dump --slurm`.
 *
 * The front runs this on every node of the job through srun.  Each node
 * finds the job's processes on itself (process/jobenv.h), reads every
 * Python one, and answers with one JSON document in lines short enough
 * for any reader on the way:
 *
 *   #pystrobe-node NODE
 *   =<a piece of the JSON>          (as many as needed; no newline in JSON)
 *   #pystrobe-end STATUS BYTES
 *
 * The end line says the document is whole: a node killed half way
 * through has none, and BYTES tells a piece lost on the way.  A process
 * that cannot be read is listed with its error and the others are still
 * read; a node where the job has no Python process answers an empty list
 * (the front, which sees every node, decides whether that is an error).
 */
#include "cmd/dump_node.h"
#include "cluster/nodereply.h"
#include "process/jobenv.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "python/locate.h"
#include "util/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node_dump {
	char job[32], step[32], node[128];
	pid_t *pids;
	int npids;
	struct snapshot *snaps;
	int nsnaps;
	struct dump_failure *failed;
	int nfailed;
	int status;		/* the first failure's exit status, 0 when none */
};

/* n bytes of digits; with extra (not NULL) also ASCII letters and
 * extra's characters. */
static bool word_of(const char *s, size_t n, const char *extra)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i], lower = c | 0x20;

		if ((c >= '0' && c <= '9') ||
		    (extra && ((lower >= 'a' && lower <= 'z') || (c && strchr(extra, c)))))
			continue;
		return false;
	}
	return true;
}

int dump_node_spec(const char *spec, char *job, size_t jobsize, char *step, size_t stepsize)
{
	const char *dot = strchr(spec, '.');
	size_t jlen = dot ? (size_t)(dot - spec) : strlen(spec);
	size_t slen = dot ? strlen(dot + 1) : 0;

	if (!word_of(spec, jlen, NULL) || jlen >= jobsize || (dot && !word_of(dot + 1, slen, "_+")) ||
	    slen >= stepsize)
		return -1;
	snprintf(job, jobsize, "%.*s", (int)jlen, spec);
	snprintf(step, stepsize, "%s", dot ? dot + 1 : "");
	return 0;
}

static void add_failure(struct node_dump *nd, pid_t pid, int rc, const char *err)
{
	struct dump_failure *f = &nd->failed[nd->nfailed++];

	f->pid = pid;
	f->ppid = proc_parent(pid);
	job_ident_placed(pid, &f->job);
	f->argv = proc_cmdline(pid, &f->argc);
	snprintf(f->error, sizeof(f->error), "%s", err);
	if (!nd->status)
		nd->status = exit_code(rc);
}

/* Not Python (a shell, srun, a launcher), or gone since it was listed:
 * nothing to say of it. */
static bool passed_over(int rc)
{
	return is_fail(rc, EXIT_NOT_PYTHON) || is_fail(rc, EXIT_NO_PROCESS) ||
	       is_fail(rc, EXIT_EXITED);
}

/* After the bound, whether a process left unread is worth naming: its
 * mappings name a Python (libpython3.X, python3.X, an executable called
 * python...), by their file names alone, as a glance at it would.  A
 * shell or a sleep of the job is passed over as it would have been. */
static bool looks_python(pid_t pid)
{
	struct proc_maps maps;
	bool yes = false;

	if (proc_maps_read(pid, &maps) < 0)
		return true;	/* cannot tell: name it */
	for (size_t i = 0; i < maps.n && !yes; i++) {
		const char *base = strrchr(maps.v[i].path, '/');

		base = base ? base + 1 : maps.v[i].path;
		yes = version_from_filename(base) >= 0 || !strncmp(base, "python", 6);
	}
	proc_maps_free(&maps);
	return yes;
}

/* One process at a time, each let go before the next is paused: none is
 * held longer than its own read, whatever the bound does.  Once the
 * bound has passed, the rest are listed unread. */
static void read_all(struct node_dump *nd, const struct snapshot_opts *so, double timeout)
{
	uint64_t deadline = mono_ns() + (uint64_t)(timeout * 1e9);
	char err[512];

	nd->snaps = xcalloc(nd->npids + 1, sizeof(*nd->snaps));
	nd->failed = xcalloc(nd->npids + 1, sizeof(*nd->failed));
	for (int i = 0; i < nd->npids; i++) {
		pid_t pid = nd->pids[i];
		int rc;

		if (mono_ns() >= deadline) {
			snprintf(err, sizeof(err), "not read: the node's --timeout of %g s ran out",
				 timeout);
			if (looks_python(pid))
				add_failure(nd, pid, status_fail(EXIT_ERROR), err);
			continue;
		}
		rc = snapshot_take(pid, NULL, so, &nd->snaps[nd->nsnaps], err, sizeof(err));
		/* Found by its ancestry: the job and node it was found by. */
		if (rc == 0)
			job_ident_placed(pid, &nd->snaps[nd->nsnaps++].job);
		else if (!passed_over(rc))
			add_failure(nd, pid, rc, err);
	}
}

static void node_dump_free(struct node_dump *nd)
{
	for (int i = 0; i < nd->nsnaps; i++)
		snapshot_free(&nd->snaps[i]);
	for (int i = 0; i < nd->nfailed; i++)
		proc_cmdline_free(nd->failed[i].argv);
	free(nd->snaps);
	free(nd->failed);
	free(nd->pids);
}

int dump_node_json(struct strbuf *json, const char *job, const char *step, const char *node,
		   double timeout, const struct snapshot_opts *so, struct dump_opts *o)
{
	struct node_dump nd = { .status = EXIT_OK };

	snprintf(nd.job, sizeof(nd.job), "%s", job);
	snprintf(nd.step, sizeof(nd.step), "%s", step ? step : "");
	snprintf(nd.node, sizeof(nd.node), "%s", node);
	nd.pids = xcalloc(PROCTREE_MAX, sizeof(*nd.pids));
	nd.npids = jobprocs_list(nd.job, nd.step[0] ? nd.step : NULL, nd.node, getpid(),
				 nd.pids, PROCTREE_MAX);
	read_all(&nd, so, timeout);
	o->json = true;
	o->locals = so->locals;
	o->node = nd.node;
	o->job = nd.job;
	o->failed = nd.failed;
	o->nfailed = nd.nfailed;
	dump_format_all(json, nd.snaps, nd.nsnaps, NULL, 0, o);
	o->node = o->job = NULL;
	o->failed = NULL;
	o->nfailed = 0;
	node_dump_free(&nd);
	return nd.status;
}

int dump_node(const char *spec, double timeout, const struct snapshot_opts *so,
	      struct dump_opts *o)
{
	struct strbuf json = STRBUF_INIT;
	char job[32], step[32], node[128];
	int status, rc;

	if (dump_node_spec(spec, job, sizeof(job), step, sizeof(step)) < 0)
		return usage_error("dump", "--slurm-node takes JOB or JOB.STEP, not '%s'", spec);
	/* The front's stop (srun passes it as SIGUSR1): a dump is short,
	 * and the reply is what the front waits for. */
	signal(SIGUSR1, SIG_IGN);
	node_unlink_bcast();
	node_name(node, sizeof(node));
	rc = dump_node_json(&json, job, step, node, timeout, so, o);
	while (json.len && json.buf[json.len - 1] == '\n')
		json.len--;
	status = node_reply_write(stdout, node, rc, json.buf ? json.buf : "", json.len) < 0 ?
		 EXIT_ERROR : rc;
	if (status == EXIT_ERROR && !rc)
		errorf("cannot write the output");
	sb_release(&json);
	return status;
}
