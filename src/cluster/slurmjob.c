/* Asking Slurm about a job (cluster/slurmjob.h): squeue for its state and
 * nodes, scontrol to expand the nodes' hostlist.  Slurm's commands are the
 * only authority here; pystrobe never reads Slurm's files or talks to its
 * daemons. */
#include "cluster/slurmjob.h"
#include "cluster/runcmd.h"
#include "util/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define QUERY_MS 15000

static bool all_of(const char *s, const char *set)
{
	return *s && strspn(s, set) == strlen(s);
}

/* "123", "123_4", "123.0", "123.batch": the job and the step apart. */
static int parse_spec(const char *spec, struct slurm_job *j, char *err, size_t errlen)
{
	const char *dot = strchr(spec, '.');
	size_t idlen = dot ? (size_t)(dot - spec) : strlen(spec);

	if (idlen == 0 || idlen >= sizeof(j->id))
		goto bad;
	memcpy(j->id, spec, idlen);
	j->id[idlen] = '\0';
	if (!all_of(j->id, "0123456789_") || j->id[0] == '_')
		goto bad;
	if (!dot)
		return 0;
	if (strlen(dot + 1) >= sizeof(j->step) ||
	    (!all_of(dot + 1, "0123456789") && strcmp(dot + 1, "batch")))
		goto bad;
	strcpy(j->step, dot + 1);
	return 0;
bad:
	snprintf(err, errlen, "--slurm: '%s' is no Slurm job id (JOBID or JOBID.STEP, as squeue "
		 "prints them)", spec);
	return status_fail(EXIT_USAGE);
}

/* The first line of sb, without its newline, NUL-ended in place. */
static char *first_line(struct strbuf *sb)
{
	char *nl;

	if (!sb->len)
		return "";
	nl = strchr(sb->buf, '\n');
	if (nl)
		*nl = '\0';
	return sb->buf;
}

static int no_command(const char *cmd, char *err, size_t errlen)
{
	snprintf(err, errlen, "--slurm: no %s on PATH: run this where Slurm's commands are (a "
		 "login node, or inside the job's allocation)", cmd);
	return status_fail(EXIT_NO_JOB);
}

/* state|nodes: "RUNNING|hnode[1-2]" */
static int query_state(struct slurm_job *j, char *err, size_t errlen)
{
	char *argv[] = { "squeue", "-h", "-j", j->id, "-o", "%T|%N", NULL };
	struct strbuf out = STRBUF_INIT, e = STRBUF_INIT;
	int ws = runcmd_capture(argv, QUERY_MS, &out, &e), rc = 0;
	char *line = first_line(&out), *bar = strchr(line, '|');

	if (ws == -ENOENT) {
		rc = no_command("squeue", err, errlen);
	} else if (ws < 0 || !WIFEXITED(ws) || (WEXITSTATUS(ws) && !strstr(e.buf ? e.buf : "",
								 "Invalid job id"))) {
		snprintf(err, errlen, "--slurm: squeue failed for job %s: %s", j->id,
			 e.len ? first_line(&e) : "no answer");
		rc = status_fail(EXIT_NO_JOB);
	} else if (!bar) {
		snprintf(err, errlen, "--slurm: no such Slurm job: %s (`squeue --me` lists yours)",
			 j->id);
		rc = status_fail(EXIT_NO_JOB);
	} else {
		*bar = '\0';
		snprintf(j->state, sizeof(j->state), "%s", line);
		snprintf(j->nodelist, sizeof(j->nodelist), "%s", bar + 1);
	}
	sb_release(&out);
	sb_release(&e);
	return rc;
}

static int expand_nodes(struct slurm_job *j, char *err, size_t errlen)
{
	char *argv[] = { "scontrol", "show", "hostnames", j->nodelist, NULL };
	struct strbuf out = STRBUF_INIT, e = STRBUF_INIT;
	int ws = runcmd_capture(argv, QUERY_MS, &out, &e), rc = 0, cap = 0;

	if (ws == -ENOENT) {
		rc = no_command("scontrol", err, errlen);
		goto out;
	}
	for (char *s = out.buf, *nl; s && *s; s = nl + 1) {
		nl = strchrnul(s, '\n');
		if (nl > s) {
			ALLOC_GROW(j->nodes, j->nnodes + 1, cap);
			j->nodes[j->nnodes++] = xstrndup(s, (size_t)(nl - s));
		}
		if (!*nl)
			break;
	}
	if (!j->nnodes) {
		snprintf(err, errlen, "--slurm: scontrol cannot expand job %s's nodes '%s': %s",
			 j->id, j->nodelist, e.len ? first_line(&e) : "no answer");
		rc = status_fail(EXIT_NO_JOB);
	}
out:
	sb_release(&out);
	sb_release(&e);
	return rc;
}

int slurm_job_find(const char *spec, struct slurm_job *j, char *err, size_t errlen)
{
	int rc;

	memset(j, 0, sizeof(*j));
	if (!spec && !(spec = getenv("SLURM_JOB_ID"))) {
		snprintf(err, errlen, "--slurm without a job id needs $SLURM_JOB_ID: run it inside "
			 "the job's allocation, or give the id (--slurm=JOBID)");
		return status_fail(EXIT_USAGE);
	}
	if ((rc = parse_spec(spec, j, err, errlen)) < 0)
		return rc;
	if ((rc = query_state(j, err, errlen)) < 0)
		return rc;
	if (strcmp(j->state, "RUNNING")) {
		snprintf(err, errlen, "--slurm: Slurm job %s is %s, not running: there is nothing "
			 "to read%s", j->id, j->state,
			 strcmp(j->state, "PENDING") ? "" : " yet");
		return status_fail(EXIT_NO_JOB);
	}
	return expand_nodes(j, err, errlen);
}

void slurm_job_release(struct slurm_job *j)
{
	for (int i = 0; i < j->nnodes; i++)
		free(j->nodes[i]);
	free(j->nodes);
	j->nodes = NULL;
	j->nnodes = 0;
}

const char *slurm_job_spec(const struct slurm_job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", j->id, j->step[0] ? "." : "", j->step);
	return buf;
}
