/* Tests for the job-wide view (src/cluster/jobdump.c, jobgroup.c,
 * jobview.c): synthetic jobs written as nodes' `dump --json` documents
 * with the fields of design38.md section 1 ("host", "ppid", "job"), whose
 * truth is how they were made: the odd ranks named in the verdict, the
 * groups in order, workers and launchers told from ranks, output that
 * grows with the stacks and not the ranks, errors with their offsets; and
 * a real dump of tests/targets/workers.py, its roles against the truth
 * the target wrote (tests/data/group/). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/jobdump.h"
#include "cluster/jobgroup.h"
#include "cluster/jobview.h"
#include "interpreters.h"
#include "suite.h"
#include "util/util.h"

#define ALL_REDUCE "all_reduce torch/distributed/distributed_c10d.py 2501;train_step train.py 40"
#define FETCH "fetch_shard train.py 10;train_step train.py 38"

/* A process as a test writes it: rank -1 for none; frames "f file line"
 * innermost first, ';' between them, one thread per '|'. */
struct sproc {
	const char *node;
	long pid, ppid, rank;
	const char *rank_from;
	const char *threads;
	const char *error;
};

static void frames_json(struct strbuf *sb, const char *spec, size_t len)
{
	char fn[128], file[128];
	int line, n;

	sb_puts(sb, "\"frames\":[");
	for (size_t at = 0, k = 0; at < len; k++) {
		ck_assert_int_eq(sscanf(spec + at, "%127s %127s %d%n", fn, file, &line, &n), 3);
		sb_printf(sb, "%s{\"kind\":\"python\",\"function\":\"%s\",\"file\":\"/srv/%s\","
			  "\"line\":%d,\"interpreter\":0,\"source\":\"x()\",\"source_changed\":false}",
			  k ? "," : "", fn, file, line);
		at += (size_t)n;
		while (at < len && (spec[at] == ';' || spec[at] == ' '))
			at++;
	}
	sb_putc(sb, ']');
}

static void proc_json(struct strbuf *sb, const struct sproc *p)
{
	const char *t = p->threads ? p->threads : "";
	long tid = p->pid;

	sb_printf(sb, "{\"pid\":%ld,\"ns_pid\":%ld,\"ppid\":%ld,", p->pid, p->pid, p->ppid);
	if (p->rank >= 0)
		sb_printf(sb, "\"job\":{\"id\":\"4242\",\"step\":\"0\",\"node\":\"%s\",\"rank\":%ld,"
			  "\"local_rank\":null,\"world_size\":null,\"rank_from\":\"%s\"},",
			  p->node, p->rank, p->rank_from ? p->rank_from : "slurm");
	else
		sb_puts(sb, "\"job\":null,");
	sb_puts(sb, "\"cmdline\":[\"python\",\"train.py\"],\"python\":{\"version\":\"3.12.1\"},");
	if (p->error)
		sb_printf(sb, "\"error\":\"%s\",", p->error);
	sb_puts(sb, "\"threads\":[");
	for (int k = 0; !p->error && *t; k++) {
		const char *bar = strchr(t, '|');
		size_t len = bar ? (size_t)(bar - t) : strlen(t);

		sb_printf(sb, "%s{\"tid\":%ld,\"name\":\"%s\",\"gil\":false,\"idle\":true,", k ? "," : "",
			  tid + k, k ? "pin_memory" : "MainThread");
		frames_json(sb, t, len);
		sb_putc(sb, '}');
		t += len + (bar ? 1 : 0);
	}
	sb_puts(sb, "]}");
}

/* One document per node, as each node's dump --json writes it. */
static void add_job(struct job_dump *jd, const struct sproc *ps, size_t n)
{
	for (size_t i = 0; i < n;) {
		struct strbuf sb = STRBUF_INIT;
		const char *node = ps[i].node;
		char err[256];

		sb_printf(&sb, "{\"host\":\"%s\",\"processes\":[", node);
		for (size_t k = 0; i < n && !strcmp(ps[i].node, node); i++, k++) {
			if (k)
				sb_putc(&sb, ',');
			proc_json(&sb, &ps[i]);
		}
		sb_puts(&sb, "]}\n");
		ck_assert_msg(jobdump_add_json(jd, sb.buf, sb.len, node, err, sizeof(err)) == 0,
			      "%s", err);
		sb_release(&sb);
	}
}

static char *verdict_of(const struct sproc *ps, size_t n)
{
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;
	char *v;

	add_job(&jd, ps, n);
	jobgroup_build(&gr, &jd);
	v = gr.verdict ? xstrdup(gr.verdict) : NULL;
	jobgroup_release(&gr);
	jobdump_release(&jd);
	return v;
}

#define SP(node, pid, rank, stack) { node, pid, 1, rank, NULL, stack, NULL }

START_TEST(test_four_ranks_one_odd)
{
	const struct sproc job[] = {
		SP("hnode1", 100, 0, ALL_REDUCE), SP("hnode1", 101, 1, ALL_REDUCE),
		SP("hnode2", 100, 2, ALL_REDUCE), SP("hnode2", 101, 3, FETCH),
	};
	char *v = verdict_of(job, 4);

	ck_assert_str_eq(v, "rank 3 on hnode2 differs: in fetch_shard (train.py:10); "
			    "ranks 0-2 on hnode[1-2] in all_reduce (distributed_c10d.py:2501)");
	free(v);
}
END_TEST

START_TEST(test_all_same)
{
	const struct sproc job[] = {
		SP("hnode1", 100, 0, ALL_REDUCE), SP("hnode1", 101, 1, ALL_REDUCE),
		SP("hnode2", 100, 2, ALL_REDUCE), SP("hnode2", 101, 3, ALL_REDUCE),
	};
	char *v = verdict_of(job, 4), *one = verdict_of(job, 1);

	ck_assert_str_eq(v, "all 4 ranks on hnode[1-2] in all_reduce (distributed_c10d.py:2501)");
	ck_assert_str_eq(one, "rank 0 on hnode1 in all_reduce (distributed_c10d.py:2501)");
	free(v);
	free(one);
}
END_TEST

START_TEST(test_tie)
{
	const struct sproc job[] = {
		SP("hnode1", 100, 0, FETCH), SP("hnode1", 101, 1, FETCH),
		SP("hnode2", 100, 2, ALL_REDUCE), SP("hnode2", 101, 3, ALL_REDUCE),
	};
	char *v = verdict_of(job, 4);

	ck_assert_str_eq(v, "no majority: ranks 0-1 on hnode1 in fetch_shard (train.py:10); "
			    "ranks 2-3 on hnode2 in all_reduce (distributed_c10d.py:2501)");
	free(v);
}
END_TEST

/* nranks ranks over nodes nodes, ranks odd[] in fetch_shard; text. */
static char *big_job(int nranks, int nodes, const int *odd, int nodd, char **verdict)
{
	struct sproc *ps = xcalloc(nranks, sizeof(*ps));
	char **names = xcalloc(nodes, sizeof(*names));
	struct job_dump jd = JOB_DUMP_INIT;
	struct jobview_opts o = { 0 };
	struct strbuf out = STRBUF_INIT;
	struct job_grouping gr;

	for (int i = 0; i < nodes; i++)
		names[i] = xasprintf("hnode%d", i + 1);
	for (int r = 0; r < nranks; r++) {
		bool is_odd = false;

		for (int k = 0; k < nodd; k++)
			is_odd |= odd[k] == r;
		ps[r] = (struct sproc){ names[r / (nranks / nodes)], 1000 + r, 1, r, "slurm",
					is_odd ? FETCH "|idle q.py 5" : ALL_REDUCE "|idle q.py 5", NULL };
	}
	add_job(&jd, ps, nranks);
	jobgroup_build(&gr, &jd);
	jobview_text(&out, &gr, &o);
	*verdict = xstrdup(gr.verdict);
	jobgroup_release(&gr);
	jobdump_release(&jd);
	for (int i = 0; i < nodes; i++)
		free(names[i]);
	free(names);
	free(ps);
	return sb_detach(&out);
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

START_TEST(test_64_ranks_two_odd)
{
	static const int odd[] = { 17, 40 };
	char *v64, *v512, *t64 = big_job(64, 4, odd, 2, &v64), *t512 = big_job(512, 32, odd, 2, &v512);

	ck_assert_str_eq(v64, "ranks 17,40 on hnode[2-3] differ: in fetch_shard (train.py:10); "
			      "ranks 0-16,18-39,41-63 on hnode[1-4] in all_reduce "
			      "(distributed_c10d.py:2501)");
	/* The odd ranks' group comes first, right under the verdict. */
	ck_assert_ptr_nonnull(strstr(t64, "\n\nranks 17,40 on hnode[2-3] (2 processes, MainThread, "
				      "idle)\n    fetch_shard (train.py:10)\n"));
	ck_assert(strstr(t64, "ranks 17,40 on") < strstr(t64, "ranks 0-16,18-39"));
	ck_assert_ptr_nonnull(strstr(t64, "ranks 0-63 on hnode[1-4] (64 processes, pin_memory, "
				      "idle)\n"));
	/* Eight times the ranks, the same lines. */
	ck_assert_int_eq(lines(t64), lines(t512));
	ck_assert_ptr_nonnull(strstr(v512, "ranks 0-16,18-39,41-511 on hnode[1-32] in all_reduce"));
	free(v64);
	free(v512);
	free(t64);
	free(t512);
}
END_TEST

START_TEST(test_many_minorities)
{
	const struct sproc job[] = {
		SP("n1", 1, 0, "a a.py 1"), SP("n1", 2, 1, "b b.py 2"), SP("n1", 3, 2, "c c.py 3"),
		SP("n1", 4, 3, "d d.py 4"), SP("n2", 1, 4, ALL_REDUCE), SP("n2", 2, 5, ALL_REDUCE),
	};
	char *v = verdict_of(job, 6);

	ck_assert_str_eq(v, "rank 0 on n1 differs: in a (a.py:1); rank 1 on n1 differs: in b (b.py:2); "
			    "rank 2 on n1 differs: in c (c.py:3); and 1 more stack (1 rank); "
			    "ranks 4-5 on n2 in all_reduce (distributed_c10d.py:2501)");
	free(v);
}
END_TEST

static char *text_of(struct job_dump *jd, struct job_grouping *gr)
{
	struct jobview_opts o = { 0 };
	struct strbuf out = STRBUF_INIT;

	jobgroup_build(gr, jd);
	jobview_text(&out, gr, &o);
	return sb_detach(&out);
}

/* DataLoader workers inherit RANK: they are their rank's workers, not
 * ranks, and the verdict is about the ranks alone.  Processes with no
 * rank are told by pid. */
START_TEST(test_workers_and_no_rank)
{
	const struct sproc job[] = {
		{ "hnode1", 100, 1, 0, "torchrun", ALL_REDUCE, NULL },
		{ "hnode1", 101, 100, 0, "torchrun", "load data.py 7", NULL },
		{ "hnode1", 102, 101, 0, "torchrun", "load data.py 7", NULL },	/* a worker's child */
		{ "hnode1", 200, 1, 1, "torchrun", ALL_REDUCE, NULL },
		{ "hnode1", 201, 200, 1, "torchrun", "load data.py 7", NULL },
		{ "hnode1", 300, 1, -1, NULL, "serve web.py 3", NULL },
		{ "hnode1", 301, 1, -1, NULL, "serve web.py 3", NULL },
	};
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;
	char *t;

	add_job(&jd, job, ARRAY_SIZE(job));
	t = text_of(&jd, &gr);
	ck_assert_str_eq(gr.verdict, "all 2 ranks on hnode1 in all_reduce (distributed_c10d.py:2501)");
	ck_assert_int_eq(gr.role[0], ROLE_MAIN);
	ck_assert_int_eq(gr.role[1], ROLE_WORKER);
	ck_assert_int_eq(gr.role[2], ROLE_WORKER);
	ck_assert_int_eq(gr.role[5], ROLE_NONE);
	ck_assert_ptr_nonnull(strstr(t, "workers of ranks 0-1 on hnode1 (3 processes, MainThread"));
	ck_assert_ptr_nonnull(strstr(t, "pids 300-301 on hnode1 (2 processes"));
	ck_assert_ptr_nonnull(strstr(t, "2 ranks, 7 processes on hnode1, "));
	free(t);
	jobgroup_release(&gr);
	jobdump_release(&jd);
}
END_TEST

/* torchrun's agent is srun's task: its SLURM_PROCID is the node's index,
 * a rank number a real rank has too. */
START_TEST(test_launcher)
{
	const struct sproc job[] = {
		{ "hnode2", 50, 1, 1, "slurm", "run torchrun.py 9", NULL },
		{ "hnode2", 51, 50, 2, "torchrun", ALL_REDUCE, NULL },
		{ "hnode2", 52, 50, 3, "torchrun", FETCH, NULL },
		{ "hnode1", 60, 1, 0, "slurm", "run torchrun.py 9", NULL },
		{ "hnode1", 61, 60, 0, "torchrun", ALL_REDUCE, NULL },
		{ "hnode1", 62, 60, 1, "torchrun", ALL_REDUCE, NULL },
	};
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;
	char *t;

	add_job(&jd, job, ARRAY_SIZE(job));
	t = text_of(&jd, &gr);
	ck_assert_int_eq(gr.role[0], ROLE_LAUNCHER);
	ck_assert_int_eq(gr.role[1], ROLE_MAIN);
	ck_assert_str_eq(gr.verdict, "rank 3 on hnode2 differs: in fetch_shard (train.py:10); "
				     "ranks 0-2 on hnode[1-2] in all_reduce (distributed_c10d.py:2501)");
	ck_assert_ptr_nonnull(strstr(t, "launchers, pids 50,60 on hnode[1-2] (2 processes"));
	free(t);
	jobgroup_release(&gr);
	jobdump_release(&jd);
}
END_TEST

/* A rank that could not be read differs from every rank that could. */
START_TEST(test_unread_rank)
{
	const struct sproc job[] = {
		SP("hnode1", 100, 0, ALL_REDUCE), SP("hnode1", 101, 1, ALL_REDUCE),
		{ "hnode2", 100, 1, 2, "slurm", NULL, "permission denied" },
	};
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;
	char *t;

	add_job(&jd, job, ARRAY_SIZE(job));
	jobdump_node_error(&jd, "hnode3", "no answer within 10 s");
	t = text_of(&jd, &gr);
	ck_assert_str_eq(gr.verdict, "rank 2 on hnode2 could not be read: permission denied; "
				     "ranks 0-1 on hnode1 in all_reduce (distributed_c10d.py:2501)");
	ck_assert_ptr_nonnull(strstr(t, "\nhnode3: no answer within 10 s\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nrank 2, pid 100 on hnode2: could not be read: "
				      "permission denied\n"));
	ck_assert_ptr_nonnull(strstr(t, "on hnode[1-2], 1 distinct stack; 1 did not answer"));
	free(t);
	jobgroup_release(&gr);
	jobdump_release(&jd);
}
END_TEST

/* No rank could be read: the verdict says so, and names no stack. */
START_TEST(test_all_unread)
{
	const struct sproc job[] = {
		{ "hnode1", 100, 1, 0, "slurm", NULL, "permission denied" },
		{ "hnode1", 101, 1, 1, "slurm", NULL, "it exited" },
	};
	char *v = verdict_of(job, 2);

	ck_assert_str_eq(v, "ranks 0-1 on hnode1 could not be read, the first: permission denied");
	free(v);
}
END_TEST

static const struct {
	const char *text, *want;
} bad_docs[] = {
	{ "", "byte 0: expected a value" },
	{ "{\"processes\": [{\"pid\": 1,}]}", "byte 25: expected a member's name" },
	{ "{\"host\": \"h\"}", "no \"processes\" list" },
	{ "[1, 2]", "no \"processes\" list" },
	{ "{\"processes\": [{\"tid\": 1}]}", "process 1 has no \"pid\"" },
	{ "{\"processes\": [{\"pid\": 1e3}]}", "process 1 has no \"pid\"" },
	{ "{\"processes\": []}\n{\"processes\": [] x", "byte 35: expected ','" },
	{ "{\"processes\": []}\n{}", "document 2 (from byte 18): not a pystrobe dump" },
};

START_TEST(test_bad_documents)
{
	char err[256];

	for (size_t i = 0; i < ARRAY_SIZE(bad_docs); i++) {
		struct job_dump jd = JOB_DUMP_INIT;

		err[0] = 0;
		ck_assert_int_eq(jobdump_add_json(&jd, bad_docs[i].text, strlen(bad_docs[i].text),
						  "f.json", err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, bad_docs[i].want), "%s: \"%s\", not %s", bad_docs[i].text,
			      err, bad_docs[i].want);
		ck_assert_uint_eq(jd.nprocs, 0);
		jobdump_release(&jd);
	}
}
END_TEST

/* A "frames" text met before is compared, not read again (jdoc's
 * known_raw): the same stack, found by the parser; and what only begins
 * like it, or stands deeper than JSON allows, is refused exactly as by a
 * reader that never met it. */
static void same_refusal(struct job_dump *jd, const char *text, const char *want)
{
	struct job_dump fresh = JOB_DUMP_INIT;
	char e1[256] = "", e2[256] = "";

	ck_assert_int_eq(jobdump_add_json(jd, text, strlen(text), "f", e1, sizeof(e1)), -EINVAL);
	ck_assert_int_eq(jobdump_add_json(&fresh, text, strlen(text), "f", e2, sizeof(e2)),
			 -EINVAL);
	ck_assert_str_eq(e1, e2);
	ck_assert_msg(strstr(e1, want), "%s, not %s", e1, want);
	jobdump_release(&fresh);
}

START_TEST(test_known_frames)
{
	const struct sproc p = SP("hnode1", 100, 0, ALL_REDUCE), q = SP("hnode2", 200, 1, ALL_REDUCE);
	struct job_dump jd = JOB_DUMP_INIT;
	struct strbuf doc = STRBUF_INIT, t = STRBUF_INIT;
	const char *frames;

	add_job(&jd, &p, 1);
	ck_assert_uint_eq(jd.nraws, 1);
	add_job(&jd, &q, 1);
	ck_assert_uint_eq(jd.nraws, 1);
	ck_assert(jd.nth == 1 && jd.hint[0] == 0);	/* the parser found it */
	ck_assert_uint_eq(jd.threads[1].stack, jd.threads[0].stack);

	proc_json(&t, &p);
	frames = strstr(t.buf, "\"frames\":") + strlen("\"frames\":");
	sb_printf(&doc, "{\"processes\":[{\"pid\":3,\"threads\":[{\"frames\":%.*s x}]}]}",
		  (int)(strlen(frames) - 3), frames);
	same_refusal(&jd, doc.buf, "expected ','");
	doc.len = 0;
	sb_printf(&doc, "{\"processes\":[{\"pid\":3,\"threads\":[{\"frames\":%.*s\\x\"}]}]}]}",
		  (int)(strlen(frames) - 20), frames);
	same_refusal(&jd, doc.buf, "unknown escape");
	doc.len = 0;
	for (int i = 0; i < JSON_MAX_DEPTH - 2; i++)
		sb_putc(&doc, '[');
	sb_printf(&doc, "{\"frames\":%.*s}", (int)(strlen(frames) - 3), frames);
	for (int i = 0; i < JSON_MAX_DEPTH - 2; i++)
		sb_putc(&doc, ']');
	same_refusal(&jd, doc.buf, "nested deeper");
	sb_release(&doc);
	sb_release(&t);
	jobdump_release(&jd);
}
END_TEST

/* What a file added is taken back when it changed while being read
 * (`pystrobe group`): its processes, threads and nodes. */
START_TEST(test_undo)
{
	const struct sproc a[] = { SP("hnode1", 100, 0, ALL_REDUCE), SP("hnode2", 200, 1, FETCH) };
	struct job_dump jd = JOB_DUMP_INIT;
	struct jobdump_mark m;

	add_job(&jd, a, 1);
	jobdump_mark(&jd, &m);
	add_job(&jd, a + 1, 1);
	ck_assert(jd.nprocs == 2 && jd.nnodes == 2 && jd.nthreads == 2);
	jobdump_undo(&jd, &m);
	ck_assert(jd.nprocs == 1 && jd.nnodes == 1 && jd.nthreads == 1);
	ck_assert_str_eq(jd.nodes[0].name, "hnode1");
	add_job(&jd, a + 1, 1);	/* read again, as new */
	ck_assert(jd.nprocs == 2 && jd.procs[1].pid == 200 && jd.procs[1].thread0 == 1);
	jobdump_release(&jd);
}
END_TEST

/* Fields of the wrong type read as absent; an older dump (no "host",
 * "ppid" or "job") is a process with no rank, on the node of its file. */
START_TEST(test_lenient_fields)
{
	static const char doc[] =
		"{\"processes\":[{\"pid\":7,\"ppid\":\"x\",\"job\":5,\"cmdline\":[1,\"py\"],"
		"\"threads\":[{\"tid\":7,\"name\":3,\"idle\":\"no\",\"frames\":[{\"kind\":\"python\","
		"\"function\":\"f\",\"file\":\"a.py\",\"line\":-4},{\"kind\":\"future\"},"
		"{\"kind\":\"native\",\"function\":\"qsort\",\"library\":\"libc.so.6\",\"offset\":16}]}]}]}";
	struct job_dump jd = JOB_DUMP_INIT;
	const struct job_proc *p;
	char err[256];

	ck_assert_int_eq(jobdump_add_json(&jd, doc, strlen(doc), "old.json", err, sizeof(err)), 0);
	p = &jd.procs[0];
	ck_assert_str_eq(p->node, "old.json");
	ck_assert_int_eq(p->ppid, 0);
	ck_assert(!p->job.present && p->job.rank == -1);
	ck_assert_uint_eq(p->argc, 1);
	ck_assert_ptr_null(jd.threads[0].name);
	ck_assert_int_eq(jd.threads[0].idle, -1);
	ck_assert(jd.threads[0].main);
	ck_assert_uint_eq(jd.stacks[jd.threads[0].stack].n, 2);	/* the unknown kind skipped */
	ck_assert_int_eq(jobdump_innermost(&jd, jd.threads[0].stack)->line, -1);
	jobdump_release(&jd);
}
END_TEST

/* dump --slurm --json read back is the same job: the front's JSON is
 * something `pystrobe group` takes. */
START_TEST(test_json_round_trip)
{
	const struct sproc job[] = {
		SP("hnode1", 100, 0, ALL_REDUCE "|idle q.py 5"), SP("hnode1", 101, 1, ALL_REDUCE),
		SP("hnode2", 100, 2, ALL_REDUCE), SP("hnode2", 101, 3, FETCH),
		{ "hnode2", 102, 101, 3, "slurm", "load data.py 7", NULL },
	};
	struct job_dump jd = JOB_DUMP_INIT, back = JOB_DUMP_INIT;
	struct job_grouping gr, gr2;
	struct strbuf js = STRBUF_INIT, js2 = STRBUF_INIT;
	char err[256], *t1, *t2;

	add_job(&jd, job, ARRAY_SIZE(job));
	jobdump_node_error(&jd, "hnode3", "timed out");
	t1 = text_of(&jd, &gr);
	jobview_json(&js, &gr);
	ck_assert_msg(jobdump_add_json(&back, js.buf, js.len, "job.json", err, sizeof(err)) == 0,
		      "%s", err);
	t2 = text_of(&back, &gr2);
	ck_assert_str_eq(t1, t2);
	jobview_json(&js2, &gr2);
	ck_assert_str_eq(js.buf, js2.buf);
	ck_assert_ptr_nonnull(strstr(js.buf, "\"verdict\":\"rank 3 on hnode2 differs: "));
	ck_assert_ptr_nonnull(strstr(js.buf, "{\"node\":\"hnode2\",\"host\":\"hnode2\",\"pid\":102,"
				     "\"ppid\":101,\"rank\":3,\"role\":\"worker\""));
	ck_assert_ptr_nonnull(strstr(js.buf, "{\"name\":\"hnode3\",\"error\":\"timed out\"}"));
	free(t1);
	free(t2);
	sb_release(&js);
	sb_release(&js2);
	jobgroup_release(&gr);
	jobgroup_release(&gr2);
	jobdump_release(&jd);
	jobdump_release(&back);
}
END_TEST

/* A real dump --json of tests/targets/workers.py (fork, --park) on
 * CPython 3.12, given the fields of design38.md by hand ("host", "ppid",
 * and the "job" its environment held), held to the truth.json the target
 * wrote: which pid is the main process and which its workers. */
START_TEST(test_real_dump)
{
	char *path = xasprintf("%s/tests/data/group/workers-3.12.json", test_srcdir());
	char *tpath = xasprintf("%s/tests/data/group/workers-3.12.truth.json", test_srcdir());
	size_t len;
	char *text = read_file(path, &len), *truth = read_file(tpath, NULL), err[256], *t;
	struct job_dump jd = JOB_DUMP_INIT;
	struct job_grouping gr;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(truth);
	ck_assert_msg(jobdump_add_json(&jd, text, len, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(jd.nprocs, 5);
	t = text_of(&jd, &gr);
	for (size_t i = 0; i < jd.nprocs; i++) {
		char *want = xasprintf("\"pid\": %ld, \"ppid\": %ld, \"role\": \"%s\"",
				       jd.procs[i].pid, jd.procs[i].ppid,
				       gr.role[i] == ROLE_MAIN ? "main" : "worker");

		ck_assert_msg(strstr(truth, want), "%s is not in the truth", want);
		free(want);
	}
	ck_assert_str_eq(gr.verdict, "rank 3 on hnode2 in main (workers.py:163)");
	ck_assert_ptr_nonnull(strstr(t, "\nworkers of rank 3 on hnode2 (4 processes, MainThread, "
				      "idle)\n    worker (workers.py:84)\n        time.sleep(3600)\n"));
	free(t);
	jobgroup_release(&gr);
	jobdump_release(&jd);
	free(text);
	free(truth);
	free(path);
	free(tpath);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "verdict", .tests = { test_four_ranks_one_odd, test_all_same, test_tie,
					test_64_ranks_two_odd, test_many_minorities } },
		{ "roles", .tests = { test_workers_and_no_rank, test_launcher, test_unread_rank,
				      test_all_unread } },
		{ "input", .tests = { test_bad_documents, test_lenient_fields, test_json_round_trip,
				      test_real_dump, test_known_frames, test_undo } },
	};

	return run_groups("jobgroup", groups, ARRAY_SIZE(groups), 0, 1);
}
