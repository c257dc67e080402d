/* pystrobe on every node of a job, through srun (cluster/srun.h). */
#include "cluster/srun.h"
#include "cluster/runcmd.h"
#include "util/status.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* srun --bcast with a directory names the copy on each node itself
 * (slurm_bcast_JOB.STEP_NODE), so two fan-outs never share a file. */
#define BCAST_DIR "/tmp/"
#define SRUN_ARGS_MAX 64

static bool self_contained;

void fanout_self_contained(void)
{
	self_contained = true;
}

/* The binary the nodes run: --pystrobe's as given, else this one, sent
 * with --bcast where it needs no library but a glibc (pystrobe-static,
 * the one the wheel holds), else run from the same path (an install every
 * node shares: a build here needs libdw, libunwind... on every node). */
static int choose_binary(struct fanout *f, char *err, size_t errlen)
{
	char self[PATH_MAX];
	ssize_t n;

	f->bcast = false;
	if (f->exe) {
		snprintf(f->ran, sizeof(f->ran), "%s", f->exe);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		snprintf(err, errlen, "--slurm: cannot tell where this pystrobe is (%s): give the "
			 "nodes' one with --pystrobe PATH", strerror(errno));
		return status_fail(EXIT_ERROR);
	}
	self[n] = '\0';
	snprintf(f->ran, sizeof(f->ran), "%s", self);
	f->bcast = self_contained;
	return 0;
}

static char *job_opt(const struct slurm_job *j)
{
	return xasprintf("--jobid=%s", j->id);
}

/* srun's command line; what is allocated is freed by free_argv from
 * index 'owned' on. */
static int srun_argv(const struct fanout *f, char **argv, int *owned)
{
	int n = 0;

	argv[n++] = "srun";
	argv[n++] = "--overlap";
	argv[n++] = "--ntasks-per-node=1";
	argv[n++] = "--label";
	argv[n++] = "--quiet";
	argv[n++] = "--kill-on-bad-exit=0";
	argv[n++] = "--job-name=pystrobe";
	if (f->bcast)
		argv[n++] = "--bcast=" BCAST_DIR;
	*owned = n;
	argv[n++] = job_opt(f->job);
	argv[n++] = xasprintf("--nodes=%d", f->job->nnodes);
	argv[n++] = xstrdup(f->ran);
	for (int i = 0; f->args[i] && n + 1 < SRUN_ARGS_MAX; i++)
		argv[n++] = xstrdup(f->args[i]);
	argv[n] = NULL;
	return n;
}

static void feed_demux(void *arg, int stream, const char *buf, size_t n)
{
	demux_feed(arg, stream, buf, n);
}

static bool all_whole(const struct demux *d)
{
	for (int i = 0; i < d->n; i++)
		if (!reply_complete(&d->r[i]))
			return false;
	return true;
}

int fanout_start(struct fanout *f, struct demux *d, char *err, size_t errlen)
{
	char *argv[SRUN_ARGS_MAX];
	int rc, owned, n;

	demux_init(d, f->job->nnodes);
	f->timed_out = false;
	f->running = false;
	if ((rc = choose_binary(f, err, errlen)) < 0)
		return rc;
	n = srun_argv(f, argv, &owned);
	rc = runcmd_start(&f->srun, argv);
	for (int i = owned; i < n; i++)
		free(argv[i]);
	if (rc < 0) {
		snprintf(err, errlen, "--slurm: %s", rc == -ENOENT ?
			 "no srun on PATH: run this where Slurm's commands are (a login node, "
			 "or inside the job's allocation)" : strerror(-rc));
		return status_fail(EXIT_NO_JOB);
	}
	f->running = true;
	return 0;
}

int fanout_pump(struct fanout *f, struct demux *d, uint64_t until_ns,
		volatile sig_atomic_t *stop)
{
	return runcmd_pump(&f->srun, until_ns, stop, feed_demux, d);
}

/* srun passes SIGUSR1 on to each remote pystrobe, which takes it as its
 * stop (quit_on_signals_node()), lets its targets go and sends what it
 * has (record: the profile so far).  SIGTERM it does not pass on: it
 * cancels the step, whose tasks are then killed before they can send
 * anything. */
void fanout_stop(struct fanout *f, struct demux *d, int within_ms)
{
	if (!f->running)
		return;
	kill(f->srun.pid, SIGUSR1);
	runcmd_pump(&f->srun, mono_ns() + (uint64_t)within_ms * 1000000, NULL, feed_demux, d);
}

void fanout_end(struct fanout *f, struct demux *d)
{
	if (!f->running)
		return;
	/* Every reply is in, or it is too late: the step is cancelled, and
	 * each remote pystrobe lets its targets go before it ends. */
	runcmd_end(&f->srun, 3000);
	f->running = false;
	demux_finish(d);
}

int fanout_run(struct fanout *f, struct demux *d, volatile sig_atomic_t *stop, char *err,
	       size_t errlen)
{
	int rc = fanout_start(f, d, err, errlen);

	if (rc < 0)
		return rc;
	rc = fanout_pump(f, d, f->timeout_ms ? mono_ns() + (uint64_t)f->timeout_ms * 1000000 :
			 UINT64_MAX, stop);
	/* Asked to stop (Ctrl-C): what the nodes have, for up to the
	 * timeout (at most 10 s). */
	if (rc == -EINTR)
		fanout_stop(f, d, f->timeout_ms && f->timeout_ms < 10000 ? f->timeout_ms : 10000);
	f->timed_out = rc == -ETIMEDOUT && !all_whole(d);
	fanout_end(f, d);
	return rc == -EINTR ? -EINTR : 0;
}

/* The first line of s that contains what, or NULL. */
static const char *line_with(const struct strbuf *s, const char *what, int *len)
{
	const char *p = s->len ? strstr(s->buf, what) : NULL, *b;

	if (!p)
		return NULL;
	for (b = p; b > s->buf && b[-1] != '\n'; b--)
		;
	*len = (int)strcspn(b, "\n");
	return b;
}

static const char *no_binary(const struct fanout *f, const char *node, char *buf, size_t len)
{
	snprintf(buf, len, "node %s: no pystrobe to run at %s: give one on a filesystem every "
		 "node shares with --pystrobe PATH, or run the static binary (pystrobe-static), "
		 "which --slurm sends to the nodes with srun --bcast", node, f->ran);
	return buf;
}

const char *fanout_failure(const struct fanout *f, const struct demux *d, int i, char *buf,
			   size_t len)
{
	const struct node_reply *r = &d->r[i];
	const char *node = r->node ? r->node : i < f->job->nnodes ? f->job->nodes[i] : "?", *why;
	int wlen = 0;

	if (reply_complete(r))
		return NULL;
	if (!r->started && line_with(&r->err, "execve()", &wlen))
		return no_binary(f, node, buf, len);
	if (r->started && !r->ended)
		snprintf(buf, len, "node %s: its reply was cut short after %zu bytes%s", node,
			 r->json.len, f->timed_out ? ", at --timeout" :
			 ": pystrobe or the node's slurmd ended mid-dump");
	else if (r->started)
		snprintf(buf, len, "node %s: its reply was %s", node, r->broken ?
			 "garbled on the way" : "not as long as it said");
	else if (f->timed_out)
		snprintf(buf, len, "node %s: did not answer within --timeout (%d s)", node,
			 f->timeout_ms / 1000);
	else if ((why = line_with(&r->err, "error", &wlen)) ||
		 (why = line_with(&d->srun_err, node, &wlen)))
		snprintf(buf, len, "node %s: did not answer: %.*s", node, wlen, why);
	else
		snprintf(buf, len, "node %s: did not answer", node);
	return buf;
}

void fanout_say(const char *node, const struct strbuf *err)
{
	for (const char *p = err->len ? err->buf : ""; *p;) {
		size_t n = strcspn(p, "\n");
		const char *line = p;

		if (!strncmp(line, "pystrobe: ", 10) && n >= 10) {
			line += 10;
			n -= 10;
		}
		if (n)
			errorf("node %s: %.*s", node, (int)n, line);
		p += n + (p[n] == '\n');
	}
}

void fanout_args_free(char **argv)
{
	for (int i = 0; argv[i]; i++)
		free(argv[i]);
}

int fanout_take(const struct fanout *f, const struct demux *d, fanout_take_fn take,
		fanout_missed_fn missed, void *arg, const char *what, int *answered)
{
	char why[1024], err[512];
	int missing = 0;

	*answered = 0;
	for (int i = 0; i < d->n; i++) {
		const struct node_reply *r = &d->r[i];
		const char *node = r->node ? r->node : f->job->nodes[i];

		/* A node that never started has its one line below, which
		 * quotes what went wrong. */
		if (r->started)
			fanout_say(node, &r->err);
		if (fanout_failure(f, d, i, why, sizeof(why))) {
			errorf("%s", why);
			if (missed)
				missed(arg, node, why);
			missing++;
		} else if (take(arg, node, &r->json, err, sizeof(err)) < 0) {
			errorf("node %s: its reply is no %s: %s", node, what, err);
			missing++;
		} else {
			(*answered)++;
		}
	}
	return missing;
}
