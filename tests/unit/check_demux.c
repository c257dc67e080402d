/* Tests for src/cluster/demux.c: every node's reply taken back from srun's
 * labelled lines, however srun cut and interleaved them, and every way a
 * reply from another machine can be wrong (cut short, garbled, longer than
 * it said, a task number srun never gave).  No cluster needed: the lines
 * are made here as srun --label writes them. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cluster/demux.h"
#include "util/util.h"
#include "suite.h"

/* One node's framed reply of payload, labelled for task, into sb, the
 * payload cut into lines of at most width bytes. */
static void frame(struct strbuf *sb, int task, const char *node, const char *payload, int width)
{
	size_t n = strlen(payload);

	sb_printf(sb, "%d: #pystrobe-node %s\n", task, node);
	for (size_t i = 0; i < n; i += (size_t)width)
		sb_printf(sb, "%d: =%.*s\n", task, width, payload + i);
	sb_printf(sb, "%d: #pystrobe-end 0 %zu\n", task, n);
}

/* Feed s in pieces of step bytes, as a pipe may hand them over. */
static void feed_in_steps(struct demux *d, int stream, const struct strbuf *s, size_t step)
{
	for (size_t i = 0; i < s->len; i += step)
		demux_feed(d, stream, s->buf + i, s->len - i < step ? s->len - i : step);
}

/* Two nodes' lines interleaved line by line, fed in odd-sized pieces: each
 * reply comes back whole and byte for byte. */
START_TEST(test_interleaved)
{
	const char *a = "{\"processes\":[{\"pid\":1,\"threads\":[]}],\"node\":\"hnode1\"}";
	const char *b = "{\"processes\":[],\"node\":\"hnode2\",\"note\":\"\\u00e9 caf\xc3\xa9\"}";
	struct strbuf fa = STRBUF_INIT, fb = STRBUF_INIT, mixed = STRBUF_INIT;
	const char *pa, *pb;
	struct demux d;

	frame(&fa, 0, "hnode1", a, 7);
	frame(&fb, 1, "hnode2", b, 5);
	for (pa = fa.buf, pb = fb.buf; *pa || *pb;) {
		size_t la = strcspn(pa, "\n"), lb = strcspn(pb, "\n");

		if (*pa) {
			sb_add(&mixed, pa, la + 1);
			pa += la + 1;
		}
		if (*pb) {
			sb_add(&mixed, pb, lb + 1);
			pb += lb + 1;
		}
	}
	for (size_t step = 1; step < 40; step += 13) {
		demux_init(&d, 2);
		feed_in_steps(&d, 0, &mixed, step);
		demux_feed(&d, 1, "srun: error: nothing\n1: pystrobe: pid 4: gone\n", 46);
		demux_finish(&d);
		ck_assert(reply_complete(&d.r[0]) && reply_complete(&d.r[1]));
		ck_assert_str_eq(d.r[0].node, "hnode1");
		ck_assert_str_eq(d.r[1].node, "hnode2");
		ck_assert_str_eq(d.r[0].json.buf, a);
		ck_assert_str_eq(d.r[1].json.buf, b);
		ck_assert_str_eq(d.srun_err.buf, "srun: error: nothing\n");
		ck_assert_str_eq(d.r[1].err.buf, "pystrobe: pid 4: gone\n");
		ck_assert_int_eq(d.r[0].status, 0);
		demux_release(&d);
	}
	sb_release(&fa);
	sb_release(&fb);
	sb_release(&mixed);
}
END_TEST

/* Padded labels, as srun writes them for 10 tasks and more. */
START_TEST(test_padded_label)
{
	struct demux d;
	const char *in = "07: #pystrobe-node n7\n07: =[1]\n07: #pystrobe-end 3 3\n";

	demux_init(&d, 10);
	demux_feed(&d, 0, in, strlen(in));
	ck_assert(reply_complete(&d.r[7]));
	ck_assert_int_eq(d.r[7].status, 3);
	ck_assert(!reply_complete(&d.r[0]) && !d.r[0].started);
	demux_release(&d);
}
END_TEST

/* Each way a reply can be wrong leaves it incomplete, and says which. */
START_TEST(test_wrong)
{
	static const struct {
		const char *in;
		bool started, ended, broken;
	} cases[] = {
		/* cut short: the node or its slurmd ended mid-dump */
		{ "0: #pystrobe-node n\n0: =[1,\n", true, false, false },
		/* longer than it said */
		{ "0: #pystrobe-node n\n0: =[1]\n0: #pystrobe-end 0 2\n", true, true, false },
		/* payload before the first frame */
		{ "0: =[1]\n0: #pystrobe-node n\n", false, false, true },
		/* two first frames */
		{ "0: #pystrobe-node n\n0: #pystrobe-node m\n", true, false, true },
		/* a line after the end */
		{ "0: #pystrobe-node n\n0: #pystrobe-end 0 0\n0: =x\n", true, true, true },
		/* a bad end frame */
		{ "0: #pystrobe-node n\n0: #pystrobe-end zero 0\n", true, false, true },
		{ "0: #pystrobe-node n\n0: #pystrobe-end 0 99999999999999999999\n", true, false, true },
		/* a line that is no frame */
		{ "0: #pystrobe-node n\n0: hello\n", true, false, true },
		/* a task srun never gave: srun's own line, not a reply */
		{ "5: #pystrobe-node n\n-1: x\n99999999999: y\n", false, false, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct demux d;

		demux_init(&d, 1);
		demux_feed(&d, 0, cases[i].in, strlen(cases[i].in));
		demux_finish(&d);
		ck_assert_msg(!reply_complete(&d.r[0]), "case %zu complete", i);
		ck_assert_msg(d.r[0].started == cases[i].started && d.r[0].ended == cases[i].ended &&
			      d.r[0].broken == cases[i].broken, "case %zu: %d %d %d", i,
			      d.r[0].started, d.r[0].ended, d.r[0].broken);
		demux_release(&d);
	}
}
END_TEST

/* A line with no newline at the end of the stream is still taken; a NUL
 * inside one is not the end of it; a very long junk line is kept bounded. */
START_TEST(test_edges)
{
	static const char in[] = "0: #pystrobe-node n\n0: =a\0b\n0: #pystrobe-end 0 3";
	struct demux d;
	struct strbuf big = STRBUF_INIT;

	demux_init(&d, 1);
	demux_feed(&d, 0, in, sizeof(in) - 1);
	demux_finish(&d);
	ck_assert(reply_complete(&d.r[0]));
	ck_assert_str_eq(d.r[0].json.buf, "a?b");
	demux_release(&d);

	for (int i = 0; i < 100000; i++)
		sb_putc(&big, 'x');
	demux_init(&d, 1);
	demux_feed(&d, 1, big.buf, big.len);
	demux_finish(&d);
	ck_assert_uint_le(d.srun_err.len, 4097);
	demux_release(&d);
	sb_release(&big);
}
END_TEST

struct got {
	char json[8][64];
	int task[8], n;
};

static void on_reply(void *arg, int task, struct node_reply *r)
{
	struct got *g = arg;

	if (g->n < 8) {
		snprintf(g->json[g->n], sizeof(g->json[0]), "%s:%s", r->node, r->json.buf);
		g->task[g->n++] = task;
	}
}

/* A stream: each whole reply handed over as it ends, one cut short or
 * longer than it said dropped, and the task's next one still taken. */
START_TEST(test_stream)
{
	static const char in[] =
		"0: #pystrobe-node a\n0: =[1]\n0: #pystrobe-end 0 3\n"
		"1: #pystrobe-node b\n1: =[2\n"
		"0: #pystrobe-node a\n0: =[3]\n0: #pystrobe-end 0 3\n"
		"1: #pystrobe-node b\n1: =[4]\n1: #pystrobe-end 0 3\n"
		"0: #pystrobe-node a\n0: =[5]\n0: #pystrobe-end 0 9\n"
		"0: #pystrobe-node a\n0: =[6]\n0: #pystrobe-end 0 3\n";
	struct got g = { .n = 0 };
	struct demux d;

	demux_init(&d, 2);
	demux_stream(&d, on_reply, &g);
	feed_in_steps(&d, 0, &(struct strbuf){ (char *)in, sizeof(in) - 1, sizeof(in) }, 5);
	demux_finish(&d);
	ck_assert_int_eq(g.n, 4);
	ck_assert_str_eq(g.json[0], "a:[1]");
	ck_assert_str_eq(g.json[1], "a:[3]");
	ck_assert_int_eq(g.task[2], 1);
	ck_assert_str_eq(g.json[2], "b:[4]");
	ck_assert_str_eq(g.json[3], "a:[6]");
	demux_release(&d);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "demux", .tests = { test_interleaved, test_padded_label, test_wrong,
				      test_edges, test_stream } },
	};

	return run_groups("demux", groups, ARRAY_SIZE(groups), 0, 1);
}
