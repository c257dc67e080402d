/* Tests for src/cluster/jobtrace.c: record --slurm -f chrometrace's one
 * trace of a job, from nodes' replies made here as record --slurm-node
 * makes them (a profile with runs, written by node_put_chrometrace()).
 *
 * Two nodes whose processes have the same pids (as two machines' do), the
 * second started 250 ms after the first by its own clock: every process a
 * track of its own named by rank, node and pid, ordered by rank (a worker
 * after its rank, a process with no rank last); every thread named; every
 * slice of a node at the node's own wall-clock time on the job's axis;
 * the events of a thread in the order the node wrote them.  And hostile
 * replies: no trace, no start, not base64, not gzip, cut short, no JSON, an
 * event without its ids or times: each refused with one reason, nothing
 * of it kept.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/jobtrace.h"
#include "cluster/nodeprocs.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "util/base64.h"
#include "util/json.h"
#include "util/jsonread.h"
#include "util/util.h"
#include "suite.h"

#define START1 1700000000000000000ull
#define LATER_NS 250000000ull
#define MS 1000000ull

/* One node's profile: pid 100 (main, thread 100 and 105), its worker 101,
 * and 102 with no rank; each thread in fn for 40 ms from 10 ms on, in
 * steps of 10 ms, its stack <module>;main;FN. */
static void node_profile(struct profile *p, const char *fn)
{
	struct pframe fr[3] = { { PF_PYTHON, "<module>", "/x/train.py", 1, -1 },
				{ PF_PYTHON, "main", "/x/train.py", 5, -1 },
				{ PF_PYTHON, (char *)fn, "/x/train.py", 9, -1 } };
	uint32_t st[3], th[4];

	profile_init(p, 100);
	for (int i = 0; i < 3; i++)
		st[i] = profile_frame(p, &fr[i]);
	th[0] = profile_thread(p, 100, 100, "MainThread");
	th[1] = profile_thread(p, 100, 105, "loader");
	th[2] = profile_thread(p, 101, 101, "MainThread");
	th[3] = profile_thread(p, 102, 102, "MainThread");
	for (uint64_t t = 10 * MS; t <= 50 * MS; t += 10 * MS)
		for (int k = 0; k < 4; k++)
			profile_add(p, th[k], st, 3, t, 1);
	p->duration_ns = 60 * MS;
}

/* A reply as record_node.c writes it: ranks (100: rank, 101: its worker,
 * 102: none), the trace, its start and samples. */
static char *node_reply(const char *fn, int rank, uint64_t start)
{
	struct strbuf sb = STRBUF_INIT, b64 = STRBUF_INIT;
	struct profile p;

	node_profile(&p, fn);
	p.start_unix_ns = start;
	ck_assert_int_eq(node_put_chrometrace(&b64, &p), 0);
	sb_printf(&sb, "{\"node\":\"n\",\"processes\":["
		  "{\"pid\":100,\"ppid\":1,\"job\":{\"rank\":%d}},"
		  "{\"pid\":101,\"ppid\":100,\"job\":{\"rank\":%d}},"
		  "{\"pid\":102,\"ppid\":1,\"job\":null}],"
		  "\"samples\":%llu,\"start_unix_ns\":%llu,\"chrometrace\":\"%s\"}", rank, rank,
		  (unsigned long long)p.samples, (unsigned long long)start, b64.buf);
	profile_free(&p);
	sb_release(&b64);
	return sb_detach(&sb);
}

static int add_text(struct job_trace *jt, const char *node, const char *text, char *err,
		    size_t errlen)
{
	struct jdoc d = JDOC_INIT;
	int rc;

	ck_assert_int_eq(jdoc_parse(&d, text, strlen(text), err, errlen), 0);
	rc = job_trace_add(jt, node, &d, err, errlen);
	jdoc_release(&d);
	return rc;
}

static char *write_trace(struct job_trace *jt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(job_trace_write(jt, f), 0);
	fclose(f);
	return buf;
}

/* The job's pid of the track named name, or -1. */
static int64_t track(const struct jdoc *d, const struct jv *ev, const char *name)
{
	for (size_t i = 0; i < jv_len(ev); i++) {
		const struct jv *e = jv_at(d, ev, i);
		const char *n = jv_str(d, jv_get(d, jv_get(d, e, "args"), "name"));
		int64_t pid;

		if (!strcmp(jv_str(d, jv_get(d, e, "ph")), "M") && n && !strcmp(n, name) &&
		    !strcmp(jv_str(d, jv_get(d, e, "name")), "process_name") &&
		    jv_int(jv_get(d, e, "pid"), 0, INT32_MAX, &pid))
			return pid;
	}
	return -1;
}

/* The earliest slice of (pid, tid) and the number of its slices and
 * thread names; slices in time order. */
static int64_t first_slice(const struct jdoc *d, const struct jv *ev, int64_t pid, int64_t tid,
			   int *slices, int *names)
{
	int64_t first = -1, last = -1, p, t, ts;

	*slices = *names = 0;
	for (size_t i = 0; i < jv_len(ev); i++) {
		const struct jv *e = jv_at(d, ev, i);
		const char *ph = jv_str(d, jv_get(d, e, "ph"));

		if (!jv_int(jv_get(d, e, "pid"), 0, INT32_MAX, &p) || p != pid ||
		    !jv_int(jv_get(d, e, "tid"), 0, INT32_MAX, &t) || t != tid)
			continue;
		if (!strcmp(ph, "M")) {
			(*names)++;
			continue;
		}
		ck_assert(jv_int(jv_get(d, e, "ts"), 0, INT64_MAX, &ts));
		(*slices)++;
		if (first < 0)
			first = ts;
		ck_assert_msg(ts >= last, "pid %lld tid %lld: a slice at %lld after one at %lld",
			      (long long)pid, (long long)tid, (long long)ts, (long long)last);
		last = ts;
	}
	return first;
}

START_TEST(test_job)
{
	struct job_trace jt;
	struct jdoc d = JDOC_INIT;
	char err[512], *r1 = node_reply("allreduce", 0, START1),
	     *r2 = node_reply("fetch_shard", 1, START1 + LATER_NS), *out;
	const struct jv *ev;
	int64_t base, p0, pw, p1, pn, first1, first2;
	int slices, names;

	job_trace_init(&jt);
	/* The later node first: the axis is the earliest start's anyway. */
	ck_assert_msg(!add_text(&jt, "hnode2", r2, err, sizeof(err)), "%s", err);
	ck_assert_msg(!add_text(&jt, "hnode1", r1, err, sizeof(err)), "%s", err);
	jt.command = "Slurm job 7 on hnode[1-2]";
	jt.rate_hz = 100;
	out = write_trace(&jt);
	ck_assert_msg(!jdoc_parse(&d, out, strlen(out), err, sizeof(err)), "%s: %s", err, out);
	ev = jv_get(&d, jdoc_root(&d), "traceEvents");
	ck_assert(jv_int(jv_get(&d, jv_get(&d, jdoc_root(&d), "otherData"), "start_unix_ns"), 0,
			 INT64_MAX, &base));
	ck_assert_uint_eq((uint64_t)base, START1);
	p0 = track(&d, ev, "rank 0 on hnode1 (pid 100)");
	pw = track(&d, ev, "worker of rank 0 on hnode1 (pid 101)");
	p1 = track(&d, ev, "rank 1 on hnode2 (pid 100)");
	pn = track(&d, ev, "process 102 on hnode1");
	ck_assert_msg(p0 == 1 && pw == 2 && p1 == 3 && pn > 3, "%lld %lld %lld %lld: %s",
		      (long long)p0, (long long)pw, (long long)p1, (long long)pn, out);
	ck_assert_int_eq(track(&d, ev, "process 102 on hnode2") > 0, 1);
	/* Thread 105 of pid 100 on both nodes, each under its own track. */
	first1 = first_slice(&d, ev, p0, 105, &slices, &names);
	ck_assert_int_eq(names, 1);
	ck_assert_int_ge(slices, 3);
	first2 = first_slice(&d, ev, p1, 105, &slices, &names);
	ck_assert_int_eq(names, 1);
	ck_assert_int_ge(slices, 3);
	/* Each node's first sample 10 ms after its own start. */
	ck_assert_int_eq(first1, 10000);
	ck_assert_int_eq(first2 - first1, (int64_t)(LATER_NS / 1000));
	ck_assert_msg(strstr(out, "\"name\":\"fetch_shard (train.py:9)\""), "%s", out);
	ck_assert_uint_eq(jt.samples, 2 * 20);
	free(out);
	free(r1);
	free(r2);
	jdoc_release(&d);
	job_trace_release(&jt);
}
END_TEST

/* A reply with its trace replaced by b64 (the base64 of what is given),
 * or with the field left out. */
static char *reply_with(const char *field, const void *data, size_t len)
{
	struct strbuf sb = STRBUF_INIT, b64 = STRBUF_INIT;

	sb_add_base64(&b64, data, len);
	sb_printf(&sb, "{\"processes\":[],\"start_unix_ns\":%llu,\"%s\":\"%s\"}",
		  (unsigned long long)START1, field, b64.buf ? b64.buf : "");
	sb_release(&b64);
	return sb_detach(&sb);
}

/* gzip of text. */
static char *gzip_of(const char *text, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_int_eq(out_write_gzip(f, text, strlen(text)), 0);
	fclose(f);
	return buf;
}

static void refused(const char *reply, const char *says)
{
	struct job_trace jt;
	char err[512] = "";

	job_trace_init(&jt);
	ck_assert_int_eq(add_text(&jt, "hnode1", reply, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, says), "\"%s\" does not say \"%s\"", err, says);
	ck_assert_int_eq(jt.nnodes, 0);
	ck_assert_int_eq(jt.nprocs, 0);
	job_trace_release(&jt);
}

static void refused_trace(const char *trace, const char *says)
{
	size_t len;
	char *gz = gzip_of(trace, &len), *r = reply_with("chrometrace", gz, len);

	refused(r, says);
	free(r);
	free(gz);
}

START_TEST(test_hostile)
{
	size_t len;
	char *gz = gzip_of("{\"traceEvents\":[]}", &len), *r;

	refused("{\"processes\":[]}", "no Chrome trace");
	r = reply_with("pprof", gz, len);
	refused(r, "no Chrome trace");
	free(r);
	refused("{\"chrometrace\":\"H4sI\"}", "no start time");
	refused("{\"start_unix_ns\":5,\"chrometrace\":\"not base64!\"}", "no base64");
	r = reply_with("chrometrace", "plain text", 10);
	refused(r, "Chrome trace: ");
	free(r);
	r = reply_with("chrometrace", gz, len / 2);
	refused(r, "truncated");
	free(r);
	free(gz);
	refused_trace("{\"traceEvents\":[", "no JSON");
	refused_trace("{\"events\":[]}", "no traceEvents");
	refused_trace("{\"traceEvents\":[{\"ph\":\"X\",\"pid\":\"1\",\"tid\":1,\"ts\":0,\"dur\":1,"
		      "\"name\":\"f\"}]}", "event 0: no pid and tid");
	refused_trace("{\"traceEvents\":[{\"ph\":\"B\"},{\"ph\":\"X\",\"pid\":1,\"tid\":1,"
		      "\"ts\":-5,\"dur\":1,\"name\":\"f\"}]}", "event 1: a slice without its time");
	refused_trace("{\"traceEvents\":[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,"
		      "\"dur\":1e300,\"name\":\"f\"}]}", "a slice without its time");
	refused_trace("{\"traceEvents\":[{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":"
		      "\"thread_name\",\"args\":{}}]}", "a thread without its name");
	refused_trace("{\"traceEvents\":[{\"ph\":\"C\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"g\","
		      "\"args\":{\"%\":\"x\"}}]}", "a counter's value is no number");
	refused_trace("{\"traceEvents\":[7]}", "event 0: no object");
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "jobtrace", .tests = { test_job, test_hostile } },
	};

	return run_groups("jobtrace", groups, ARRAY_SIZE(groups), 0, 1);
}
