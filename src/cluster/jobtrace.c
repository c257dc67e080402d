/* One Chrome trace of a job from its nodes' traces (cluster/jobtrace.h). */
#include "cluster/jobtrace.h"
#include "cluster/nodeprocs.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "util/base64.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (64 * 1024)
/* Times in a trace, microseconds: a recording of more than a year is no
 * node's. */
#define TS_MAX ((int64_t)1 << 45)
/* Series of one counter event: the writer makes one. */
#define COUNTER_ARGS_MAX 16

/* An event of a node's trace, as read and checked. */
enum tev_kind { TEV_SKIP, TEV_THREAD_NAME, TEV_SLICE, TEV_COUNTER };

struct tev {
	enum tev_kind kind;
	int64_t pid, tid, ts, dur;
	const char *name, *cat;
	const struct jv *args;	/* TEV_COUNTER: an object of numbers */
};

void job_trace_init(struct job_trace *jt)
{
	memset(jt, 0, sizeof(*jt));
}

void job_trace_release(struct job_trace *jt)
{
	for (uint32_t i = 0; i < jt->nnodes; i++) {
		free(jt->nodes[i].name);
		sb_release(&jt->nodes[i].gz);
	}
	free(jt->nodes);
	free(jt->procs);
	memset(jt, 0, sizeof(*jt));
}

/* --- reading a node's trace ------------------------------------------------ */

static bool get_id(const struct jdoc *d, const struct jv *v, const char *key, int64_t *out)
{
	return jv_int(jv_get(d, v, key), 0, INT32_MAX, out);
}

static bool get_time(const struct jdoc *d, const struct jv *v, const char *key, int64_t *out)
{
	return jv_int(jv_get(d, v, key), 0, TS_MAX, out);
}

static const char *counter_read(const struct jdoc *d, const struct jv *ev, struct tev *e)
{
	e->args = jv_get(d, ev, "args");
	if (!jv_is(e->args, JV_OBJ) || !jv_len(e->args) || jv_len(e->args) > COUNTER_ARGS_MAX)
		return "a counter without its values";
	for (size_t i = 0; i < jv_len(e->args); i++) {
		const struct jv *a = jv_at(d, e->args, i);

		if (!jv_is(a, JV_NUM) || !isfinite(a->num))
			return "a counter's value is no number";
	}
	if (!get_time(d, ev, "ts", &e->ts))
		return "a counter without its time";
	e->kind = TEV_COUNTER;
	return NULL;
}

/* Event ev into e: NULL, or what is wrong with it.  Kinds the writer does
 * not make, and its process names (the front names processes), are
 * TEV_SKIP. */
static const char *event_read(const struct jdoc *d, const struct jv *ev, struct tev *e)
{
	const char *ph = jv_str(d, jv_get(d, ev, "ph"));

	memset(e, 0, sizeof(*e));
	if (!jv_is(ev, JV_OBJ) || !ph)
		return "no object with a \"ph\"";
	if (strcmp(ph, "X") && strcmp(ph, "M") && strcmp(ph, "C"))
		return NULL;
	if (!get_id(d, ev, "pid", &e->pid) || !get_id(d, ev, "tid", &e->tid))
		return "no pid and tid";
	if (!(e->name = jv_str(d, jv_get(d, ev, "name"))))
		return "no name";
	if (*ph == 'C')
		return counter_read(d, ev, e);
	if (*ph == 'M') {
		if (strcmp(e->name, "thread_name"))
			return NULL;
		if (!(e->name = jv_str(d, jv_get(d, jv_get(d, ev, "args"), "name"))))
			return "a thread without its name";
		e->kind = TEV_THREAD_NAME;
		return NULL;
	}
	if (!get_time(d, ev, "ts", &e->ts) || !get_time(d, ev, "dur", &e->dur))
		return "a slice without its time";
	e->cat = jv_str(d, jv_get(d, ev, "cat"));
	e->kind = TEV_SLICE;
	return NULL;
}

/* A node's trace (gzip) parsed into t; its events in *events.  0, or -1
 * with err said. */
static int trace_open(const struct strbuf *gz, struct strbuf *text, struct jdoc *t,
		      const struct jv **events, char *err, size_t errlen)
{
	char why[256];

	if (gunzip_mem(gz->buf, gz->len, JSON_MAX_INPUT, text, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "its Chrome trace: %s", why);
		return -1;
	}
	if (jdoc_parse(t, text->buf ? text->buf : "", text->len, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "its Chrome trace is no JSON: %s", why);
		return -1;
	}
	*events = jv_get(t, jdoc_root(t), "traceEvents");
	if (!jv_is(*events, JV_ARR)) {
		snprintf(err, errlen, "its Chrome trace has no traceEvents");
		return -1;
	}
	return 0;
}

/* --- the processes ----------------------------------------------------------- */

/* Process pid of a reply's "processes": its rank (-1: none) and parent. */
static void reply_ident(const struct jdoc *d, pid_t pid, long *rank, int64_t *ppid)
{
	*rank = node_reply_rank(d, pid);
	*ppid = 0;
	get_id(d, node_reply_process(d, pid), "ppid", ppid);
}

/* Process pid of the node being added, noted once. */
static void proc_note(struct job_trace *jt, uint32_t first, const struct jdoc *reply, pid_t pid)
{
	struct jt_proc *p;
	int64_t ppid;
	long prank;

	for (uint32_t i = jt->nprocs; i-- > first;)
		if (jt->procs[i].pid == pid)
			return;
	ALLOC_GROW(jt->procs, jt->nprocs + 1, jt->procs_cap);
	p = &jt->procs[jt->nprocs++];
	memset(p, 0, sizeof(*p));
	p->node = jt->nnodes;
	p->pid = pid;
	reply_ident(reply, pid, &p->rank, &ppid);
	/* A DataLoader worker inherits its rank's environment. */
	if (p->rank >= 0 && ppid > 0) {
		reply_ident(reply, (pid_t)ppid, &prank, &ppid);
		p->worker = prank == p->rank;
	}
}

char *job_trace_proc_name(const struct job_trace *jt, uint32_t i)
{
	const struct jt_proc *p = &jt->procs[i];
	const char *node = jt->nodes[p->node].name;

	if (p->rank < 0)
		return xasprintf("process %d on %s", (int)p->pid, node);
	return xasprintf("%srank %ld on %s (pid %d)", p->worker ? "worker of " : "", p->rank, node,
			 (int)p->pid);
}

/* --- adding a node ------------------------------------------------------------- */

/* Check every event of a node's trace, note its processes and how far its
 * slices reach (*end_us).  0, or -1 with err said. */
static int check_events(struct job_trace *jt, const struct jdoc *reply, const struct jdoc *t,
			const struct jv *events, int64_t *end_us, char *err, size_t errlen)
{
	uint32_t first = jt->nprocs;
	struct tev e;

	*end_us = 0;
	for (size_t i = 0; i < jv_len(events); i++) {
		const char *why = event_read(t, jv_at(t, events, i), &e);

		if (why) {
			snprintf(err, errlen, "its Chrome trace's event %zu: %s", i, why);
			return -1;
		}
		if (e.kind == TEV_SKIP)
			continue;
		proc_note(jt, first, reply, (pid_t)e.pid);
		if (e.ts + e.dur > *end_us)
			*end_us = e.ts + e.dur;
	}
	return 0;
}

static int decode(const struct jdoc *reply, struct strbuf *gz, int64_t *start, char *err,
		  size_t errlen)
{
	const struct jv *root = jdoc_root(reply);
	const char *b64 = jv_str(reply, jv_get(reply, root, "chrometrace"));

	if (!b64) {
		snprintf(err, errlen, "no Chrome trace in it");
		return -1;
	}
	if (!jv_int(jv_get(reply, root, "start_unix_ns"), 1, INT64_MAX, start)) {
		snprintf(err, errlen, "its Chrome trace has no start time");
		return -1;
	}
	if (base64_decode(b64, strlen(b64), gz) < 0) {
		snprintf(err, errlen, "its Chrome trace is no base64");
		return -1;
	}
	return 0;
}

static void node_keep(struct job_trace *jt, const char *name, struct strbuf *gz, uint64_t start,
		      uint32_t first, uint64_t end)
{
	struct jt_node *n;

	ALLOC_GROW(jt->nodes, jt->nnodes + 1, jt->nodes_cap);
	n = &jt->nodes[jt->nnodes++];
	n->name = xstrdup(name);
	n->gz = *gz;
	n->start_ns = start;
	n->first = first;
	n->nprocs = jt->nprocs - first;
	if (!jt->base_ns || start < jt->base_ns)
		jt->base_ns = start;
	if (end > jt->end_ns)
		jt->end_ns = end;
}

int job_trace_add(struct job_trace *jt, const char *node, const struct jdoc *reply, char *err,
		  size_t errlen)
{
	struct strbuf gz = STRBUF_INIT, text = STRBUF_INIT;
	struct jdoc t = JDOC_INIT;
	const struct jv *events;
	uint32_t first = jt->nprocs;
	int64_t start, end_us, samples;
	int rc = -1;

	if (decode(reply, &gz, &start, err, errlen) < 0 ||
	    trace_open(&gz, &text, &t, &events, err, errlen) < 0 ||
	    check_events(jt, reply, &t, events, &end_us, err, errlen) < 0) {
		jt->nprocs = first;
		sb_release(&gz);
		goto out;
	}
	if (jv_int(jv_get(reply, jdoc_root(reply), "samples"), 0, INT64_MAX, &samples))
		jt->samples += (uint64_t)samples;
	node_keep(jt, node, &gz, (uint64_t)start, first, (uint64_t)start + (uint64_t)end_us * 1000);
	rc = 0;
out:
	jdoc_release(&t);
	sb_release(&text);
	return rc;
}

/* --- writing the job's trace ------------------------------------------------- */

static int by_rank(const void *a, const void *b)
{
	const struct jt_proc *x = *(struct jt_proc *const *)a, *y = *(struct jt_proc *const *)b;

	if ((x->rank < 0) != (y->rank < 0))
		return x->rank < 0 ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->worker != y->worker)
		return x->worker ? 1 : -1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Each process's pid in the job's trace: 1, 2... by rank, its main
 * process before its workers, processes without one last.  The processes
 * in that order (a new array). */
static struct jt_proc **number_procs(struct job_trace *jt)
{
	struct jt_proc **v = xcalloc(jt->nprocs ? jt->nprocs : 1, sizeof(*v));

	for (uint32_t i = 0; i < jt->nprocs; i++)
		v[i] = &jt->procs[i];
	qsort(v, jt->nprocs, sizeof(*v), by_rank);
	for (uint32_t i = 0; i < jt->nprocs; i++)
		v[i]->out = i + 1;
	return v;
}

struct writer {
	struct job_trace *jt;
	FILE *f;
	struct strbuf sb;
	bool need_comma;
	const struct jt_node *node;	/* the node being written */
	uint64_t shift_us;		/* its times onto the job's axis */
};

static void event_begin(struct writer *w)
{
	chrometrace_event_begin(&w->sb, &w->need_comma);
}

static void put_ids(struct writer *w, uint32_t pid, int64_t tid)
{
	chrometrace_put_ids(&w->sb, pid, (uint64_t)tid);
}

static void put_meta(struct writer *w, const char *what, uint32_t pid, int64_t tid,
		     const char *name)
{
	chrometrace_meta(&w->sb, &w->need_comma, what, pid, (uint64_t)tid, name);
}

/* The job's pid of the node's process pid (noted when it was added). */
static uint32_t out_pid(const struct writer *w, pid_t pid)
{
	const struct jt_proc *p = &w->jt->procs[w->node->first];

	for (uint32_t i = 0; i < w->node->nprocs; i++)
		if (p[i].pid == pid)
			return p[i].out;
	return 0;
}

static void put_counter_args(struct writer *w, const struct jdoc *t, const struct jv *args)
{
	sb_puts(&w->sb, ",\"args\":{");
	for (size_t i = 0; i < jv_len(args); i++) {
		const struct jv *a = jv_at(t, args, i);

		if (i)
			sb_putc(&w->sb, ',');
		json_quote(&w->sb, jv_key(t, a));
		sb_printf(&w->sb, ":%.6g", a->num);
	}
	sb_puts(&w->sb, "}}");
}

static void put_event(struct writer *w, const struct jdoc *t, const struct tev *e)
{
	uint32_t pid = out_pid(w, (pid_t)e->pid);

	if (e->kind == TEV_THREAD_NAME) {
		put_meta(w, "thread_name", pid, e->tid, e->name);
		return;
	}
	event_begin(w);
	sb_puts(&w->sb, e->kind == TEV_SLICE ? "{\"ph\":\"X\"," : "{\"ph\":\"C\",");
	put_ids(w, pid, e->tid);
	sb_puts(&w->sb, ",\"ts\":");
	sb_put_u64(&w->sb, (uint64_t)e->ts + w->shift_us);
	if (e->kind == TEV_COUNTER) {
		sb_puts(&w->sb, ",\"name\":");
		json_quote(&w->sb, e->name);
		put_counter_args(w, t, e->args);
		return;
	}
	sb_puts(&w->sb, ",\"dur\":");
	sb_put_u64(&w->sb, (uint64_t)e->dur);
	sb_puts(&w->sb, ",\"name\":");
	json_quote(&w->sb, e->name);
	if (e->cat) {
		sb_puts(&w->sb, ",\"cat\":");
		json_quote(&w->sb, e->cat);
	}
	sb_putc(&w->sb, '}');
}

/* A node's events, in the order it wrote them: of a thread's slices that
 * start together the parent comes first, which readers that sort by time
 * stably rely on (profile/out_chrometrace.c). */
static int node_events(struct writer *w)
{
	struct strbuf text = STRBUF_INIT;
	struct jdoc t = JDOC_INIT;
	const struct jv *events;
	char err[256];
	struct tev e;
	int rc = -EIO;

	if (trace_open(&w->node->gz, &text, &t, &events, err, sizeof(err)) < 0)
		goto out;
	w->shift_us = (w->node->start_ns - w->jt->base_ns + 500) / 1000;
	for (size_t i = 0; i < jv_len(events); i++) {
		if (event_read(&t, jv_at(&t, events, i), &e))
			goto out;
		if (e.kind == TEV_SKIP)
			continue;
		put_event(w, &t, &e);
		if (w->sb.len > FLUSH_AT)
			out_flush_sb(&w->sb, w->f);
	}
	rc = 0;
out:
	jdoc_release(&t);
	sb_release(&text);
	return rc;
}

static void other_data(struct writer *w)
{
	const struct job_trace *jt = w->jt;
	struct json j;

	sb_puts(&w->sb, "],\n\"otherData\":");
	json_init(&j, &w->sb);
	json_obj_begin(&j);
	json_kstr(&j, "exporter", "pystrobe");
	if (jt->title)
		json_kstr(&j, "title", jt->title);
	json_kstr(&j, "command", jt->command);
	json_kuint(&j, "start_unix_ns", jt->base_ns);
	json_kuint(&j, "duration_ns", jt->end_ns - jt->base_ns);
	json_kuint(&j, "rate_hz", (uint64_t)(jt->rate_hz + 0.5));
	json_kuint(&j, "samples", jt->samples);
	json_key(&j, "nodes");
	json_arr_begin(&j);
	for (uint32_t i = 0; i < jt->nnodes; i++)
		json_str(&j, jt->nodes[i].name);
	json_arr_end(&j);
	json_obj_end(&j);
	sb_puts(&w->sb, "}\n");
}

int job_trace_write(struct job_trace *jt, FILE *f)
{
	struct writer w = { .jt = jt, .f = f, .sb = STRBUF_INIT };
	struct jt_proc **order = number_procs(jt);
	int rc = 0;

	sb_puts(&w.sb, "{\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[\n");
	for (uint32_t i = 0; i < jt->nprocs; i++) {
		char *name = job_trace_proc_name(jt, (uint32_t)(order[i] - jt->procs));

		put_meta(&w, "process_name", order[i]->out, order[i]->out, name);
		free(name);
	}
	free(order);
	for (uint32_t i = 0; i < jt->nnodes && !rc; i++) {
		w.node = &jt->nodes[i];
		rc = node_events(&w);
	}
	other_data(&w);
	out_flush_sb(&w.sb, f);
	sb_release(&w.sb);
	return rc ? rc : out_finish(f);
}
