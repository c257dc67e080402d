/* watch --slurm: the flight recording of the whole job (cmd/watch_int.h).
 *
 * Each node's watcher keeps its own recorder, as watch on one host does
 * (--keep and --keep-size pass through to it).  On the job's stall, and on
 * SIGUSR1 here, every node is asked at once for its recording; each sends
 * the file watch would write (gzip, in base64) inside a framed reply,
 * beside its processes' ranks, and the front writes one recording of the
 * job in which each sample is under "node=NAME" and "rank=N", the roots
 * record --slurm gives a sample (flightrec.h, version 2), so that convert
 * slices and draws the job as record --slurm draws it, with sample times.
 *
 * Why not pprof, as record --slurm's nodes send: pprof keeps counts, and
 * a recording is sliced by each sample's time (convert --from/--until).
 * How the nodes are asked (SIGUSR2, with their dumps): watch_slurm.c,
 * ask_nodes().
 */
#include "cmd/watch_int.h"
#include "cluster/nodeprocs.h"
#include "profile/flightrec.h"
#include "profile/profile_read.h"
#include "sample/sampler.h"
#include "util/base64.h"
#include "util/jsonread.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void job_flight_init(struct job_flight *jf, int nnodes)
{
	memset(jf, 0, sizeof(*jf));
	jf->n = nnodes;
	jf->reply = xcalloc(nnodes ? (size_t)nnodes : 1, sizeof(*jf->reply));
	jf->at_ns = xcalloc(nnodes ? (size_t)nnodes : 1, sizeof(*jf->at_ns));
}

void job_flight_release(struct job_flight *jf)
{
	for (int i = 0; jf->reply && i < jf->n; i++)
		sb_release(&jf->reply[i]);
	free(jf->reply);
	free(jf->at_ns);
	memset(jf, 0, sizeof(*jf));
}

void job_flight_asked(struct job_flight *jf, uint64_t now)
{
	jf->asked_ns = now;
}

void job_flight_take(struct job_flight *jf, int task, const struct strbuf *json)
{
	if (task < 0 || task >= jf->n)
		return;
	sb_release(&jf->reply[task]);
	sb_add(&jf->reply[task], json->buf ? json->buf : "", json->len);
	jf->at_ns[task] = mono_ns();
}

bool job_flight_in(const struct job_flight *jf, int task)
{
	return task >= 0 && task < jf->n && jf->asked_ns && jf->at_ns[task] >= jf->asked_ns;
}

/* pid -> the roots of one node's samples, for flightrec_merge(). */
struct node_roots {
	const struct jdoc *d;
	char node[160], rank[32];
	pid_t pid;		/* the latest asked: a recording holds runs of one */
	long r;
};

static void roots_of(void *arg, pid_t pid, const char **roots)
{
	struct node_roots *nr = arg;

	if (pid != nr->pid) {
		nr->pid = pid;
		nr->r = node_reply_rank(nr->d, pid);
		snprintf(nr->rank, sizeof(nr->rank), "rank=%ld", nr->r);
	}
	roots[0] = nr->node;
	roots[1] = nr->r >= 0 ? nr->rank : NULL;
}

/* Node i's recording into job: 0, or -1 with why in err. */
static int merge_node(struct flightrec *job, const struct strbuf *reply, const char *name,
		      char *err, size_t errlen)
{
	struct jdoc d = JDOC_INIT;
	struct strbuf gz = STRBUF_INIT, raw = STRBUF_INIT;
	struct node_roots nr = { .d = &d, .pid = -1 };
	const char *b64, *why;
	int rc = -1;

	snprintf(nr.node, sizeof(nr.node), "node=%s", name);
	if (jdoc_parse(&d, reply->buf ? reply->buf : "", reply->len, err, errlen) < 0)
		goto out;
	b64 = jv_str(&d, jv_get(&d, jdoc_root(&d), "flight"));
	why = jv_str(&d, jv_get(&d, jdoc_root(&d), "error"));
	if (!b64 || !*b64 || base64_decode(b64, strlen(b64), &gz) < 0) {
		snprintf(err, errlen, "no recording in its reply%s%s", why ? ": " : "",
			 why ? why : "");
		goto out;
	}
	if (profile_gunzip(gz.buf, gz.len, "its recording", &raw, err, errlen) < 0 ||
	    flightrec_merge(job, raw.buf, raw.len, roots_of, &nr, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	sb_release(&raw);
	sb_release(&gz);
	jdoc_release(&d);
	return rc;
}

/* Room for every node's: each keeps --keep-size at most. */
static struct flightrec *job_recorder(const struct job_flight *jf, const struct watch *w)
{
	double bytes = w->keep_mb * (1 << 20) * (jf->n ? jf->n : 1);
	struct flightrec *fr;

	fr = flightrec_new((uint64_t)(w->keep_s * 1e9), bytes > (double)FLIGHTREC_MAX_BYTES ?
			   FLIGHTREC_MAX_BYTES : (size_t)bytes);
	flightrec_set_sampling(fr, sampler_interval_ns(w->rate_hz), true);
	return fr;
}

char *job_flight_write(const struct job_flight *jf, const struct watch *w, const char *dir,
		       const char *const *names, uint64_t mark_unix_ns, struct strbuf *missing)
{
	struct flightrec *job = job_recorder(jf, w);
	char err[512], *path = xasprintf("%s/%s", dir, WATCH_FLIGHT_FILE);

	for (int i = 0; i < jf->n; i++) {
		if (!job_flight_in(jf, i))
			sb_printf(missing, "node %s: sent no flight recording in time\n", names[i]);
		else if (merge_node(job, &jf->reply[i], names[i], err, sizeof(err)) < 0)
			sb_printf(missing, "node %s: its flight recording: %s\n", names[i], err);
	}
	if (flightrec_write(job, path, mark_unix_ns, err, sizeof(err)) < 0) {
		errorf("watch: %s", err);
		free(path);
		path = NULL;
	}
	flightrec_free(job);
	return path;
}
