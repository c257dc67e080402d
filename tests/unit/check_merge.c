/* Tests for `pystrobe merge` and the profile readers behind it and diff.
 *
 *  - Three profiles merged are the sum of their counts, stack by stack.
 *  - Labels give one root per input: --label (file names), --label-from
 *    (positions), FILE=VALUE; in the flame graph each root is as wide as its
 *    input.
 *  - pprof: labels become sample labels (decoded by tests/decode_pprof.py)
 *    and come back as roots when the file is read again; a profile written
 *    by out_pprof and read back prints as the original does, hostile names
 *    and process/thread roots included.
 *  - Folded files written by other tools (perf-style frames, odd spacing,
 *    frames with spaces, [unknown]) are read.
 *  - Inputs are told by content: folded, pprof and pystrobe's flame graphs
 *    (the stacks they carry), each plain or gzipped, are read; speedscope,
 *    Chrome trace and an SVG without stacks are named in the error, which
 *    says what is read and how to get it.
 *  - merge takes the flame graphs record writes by default.
 *  - Hostile files: truncated gzip, varints past the end, absurd lengths,
 *    random bytes: an error, never a crash (run under ASan in CI), and from
 *    the command line exit 9 with one line.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "folded.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "sample_profile.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

static const char *inputs[] = {
	"main;load;read 30\nmain;train;forward 50\nmain;train;backward 20\n",
	"main;load;read 10\nmain;train;forward 70\nmain;train;allreduce 15\n",
	"main;train;forward 40\nmain;train;allreduce 45\nmain;save 5\n",
};

struct fixture {
	char *dir;
	char *path[3];
	struct folded in[3];
};

static void fixture_init(struct fixture *fx)
{
	char name[16];

	fx->dir = test_tmpdir("check_merge");
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "rank%d.txt", i);
		fx->path[i] = test_file(fx->dir, name, inputs[i]);
		ck_assert_int_eq(folded_parse(inputs[i], &fx->in[i]), 0);
	}
}

static void fixture_free(struct fixture *fx)
{
	for (int i = 0; i < 3; i++) {
		free(fx->path[i]);
		folded_free(&fx->in[i]);
	}
	test_rmdir(fx->dir);
	free(fx->dir);
}

/* pystrobe merge -o OUT ARGS... (up to 8, NULL-terminated), which must
 * succeed; the output file's text. */
#define merge(out, ...) merge_args(out, (const char *[]){ __VA_ARGS__, NULL })

static char *merge_args(const char *out, const char **a)
{
	const char *v[9] = { NULL };
	struct run r;
	char why[64];

	for (int n = 0; a[n]; n++) {
		ck_assert_int_lt(n, 8);
		v[n] = a[n];
	}
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-o", out, v[0], v[1], v[2], v[3], v[4],
				      v[5], v[6], v[7], NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "merge: %s; %s", run_describe(&r, why, sizeof(why)), r.err);
	ck_assert_msg(strstr(r.err, "wrote"), "%s", r.err);
	run_free(&r);
	return test_slurp(out);
}

START_TEST(test_sum)
{
	struct fixture fx;
	struct folded m;
	char *out, *text;

	fixture_init(&fx);
	out = xasprintf("%s/merged.txt", fx.dir);
	text = merge(out, "-f", "collapsed", fx.path[0], fx.path[1], fx.path[2]);
	ck_assert_int_eq(folded_parse(text, &m), 0);
	ck_assert_uint_eq(m.total, fx.in[0].total + fx.in[1].total + fx.in[2].total);
	/* Every stack of every input, summed, and nothing else. */
	for (size_t i = 0; i < m.n; i++) {
		uint64_t want = 0;

		for (int k = 0; k < 3; k++)
			want += folded_count(&fx.in[k], m.stacks[i]);
		ck_assert_msg(m.counts[i] == want, "%s: %lu, the inputs sum to %lu", m.stacks[i],
			      m.counts[i], want);
	}
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < fx.in[k].n; i++)
			ck_assert_uint_ne(folded_count(&m, fx.in[k].stacks[i]), 0);
	ck_assert_uint_eq(folded_count(&m, "main;train;forward"), 160);
	folded_free(&m);
	free(text);
	free(out);
	fixture_free(&fx);
}
END_TEST

/* The inputs as flame graphs (what record writes by default) merge as
 * their folded stacks do. */
START_TEST(test_sum_flamegraphs)
{
	struct fixture fx;
	char *svg[3], *out, *want, *got;

	fixture_init(&fx);
	out = xasprintf("%s/merged.txt", fx.dir);
	for (int i = 0; i < 3; i++) {
		svg[i] = xasprintf("%s/rank%d.svg", fx.dir, i);
		free(merge(svg[i], fx.path[i]));
	}
	want = merge(out, "-f", "collapsed", fx.path[0], fx.path[1], fx.path[2]);
	got = merge(out, "-f", "collapsed", svg[0], svg[1], svg[2]);
	ck_assert_str_eq(got, want);
	free(got);
	got = merge(out, "-f", "collapsed", svg[0], fx.path[1], svg[2]);
	ck_assert_str_eq(got, want);
	for (int i = 0; i < 3; i++)
		free(svg[i]);
	free(got);
	free(want);
	free(out);
	fixture_free(&fx);
}
END_TEST

/* Each line of text starts with one of the roots; the counts under root k
 * are input k's. */
static void check_roots(const struct fixture *fx, const char *text, const char *roots[3])
{
	struct folded m;

	ck_assert_int_eq(folded_parse(text, &m), 0);
	for (size_t i = 0; i < m.n; i++) {
		int k;

		for (k = 0; k < 3; k++)
			if (!strncmp(m.stacks[i], roots[k], strlen(roots[k])) &&
			    m.stacks[i][strlen(roots[k])] == ';')
				break;
		ck_assert_msg(k < 3, "%s is under none of the roots", m.stacks[i]);
		ck_assert_uint_eq(m.counts[i], folded_count(&fx->in[k],
							    m.stacks[i] + strlen(roots[k]) + 1));
	}
	for (int k = 0; k < 3; k++) {
		uint64_t self, total;

		folded_path(&m, roots[k], &self, &total);
		ck_assert_uint_eq(total, fx->in[k].total);
	}
	folded_free(&m);
}

START_TEST(test_labels)
{
	static const char *by_file[3] = { "input=rank0.txt", "input=rank1.txt", "input=rank2.txt" };
	static const char *by_rank[3] = { "rank=0", "rank=1", "rank=2" };
	static const char *by_host[3] = { "host=web1", "host=web2", "host=db" };
	struct fixture fx;
	char *out, *text, *v[3], *want_all;

	fixture_init(&fx);
	out = xasprintf("%s/merged.txt", fx.dir);
	text = merge(out, "-f", "collapsed", "--label", fx.path[0], fx.path[1], fx.path[2]);
	check_roots(&fx, text, by_file);
	free(text);
	text = merge(out, "-f", "collapsed", "--label-from", "rank", fx.path[0], fx.path[1],
		     fx.path[2]);
	check_roots(&fx, text, by_rank);
	free(text);
	for (int k = 0; k < 3; k++)
		v[k] = xasprintf("%s=%s", fx.path[k], by_host[k] + 5);
	text = merge(out, "-f", "collapsed", "--label-from", "host", v[0], v[1], v[2]);
	check_roots(&fx, text, by_host);
	free(text);
	for (int k = 0; k < 3; k++)
		free(v[k]);
	free(out);

	/* The flame graph: one root per rank, as wide as its input. */
	out = xasprintf("%s/merged.svg", fx.dir);
	text = merge(out, "--label-from", "rank", fx.path[0], fx.path[1], fx.path[2]);
	for (int k = 0; k < 3; k++) {
		char *want = xasprintf("<title>rank=%d (%lu samples, ", k, fx.in[k].total);

		ck_assert_msg(strstr(text, want), "no %s", want);
		free(want);
	}
	want_all = xasprintf("<title>all (%lu samples, 100.0%%)</title>",
			     fx.in[0].total + fx.in[1].total + fx.in[2].total);
	ck_assert_msg(strstr(text, want_all), "no %s", want_all);
	free(want_all);
	free(text);
	free(out);
	fixture_free(&fx);
}
END_TEST

static char *python_out(const char *script, const char *arg)
{
	char *cmd = xasprintf("'%s' '%s/tests/%s' '%s'", test_python3(), test_srcdir(), script, arg);
	FILE *f = popen(cmd, "r");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;

	ck_assert_ptr_nonnull(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&sb, buf, n);
	ck_assert_msg(pclose(f) == 0, "%s failed", cmd);
	free(cmd);
	return sb_detach(&sb);
}

/* How decode_pprof.py prints a sample of this stack (frames without
 * files or lines), labelled rank=k. */
static char *pprof_sample_json(int k, const char *stack, uint64_t count)
{
	struct strbuf frames = STRBUF_INIT, lines = STRBUF_INIT;
	const char *end = stack + strlen(stack);
	char *s;

	/* Leaf first. */
	while (end > stack) {
		const char *start = end;

		while (start > stack && start[-1] != ';')
			start--;
		sb_printf(&frames, "%s\"%.*s\"", frames.len ? "," : "", (int)(end - start), start);
		sb_puts(&lines, lines.len ? ",0" : "0");
		end = start > stack ? start - 1 : stack;
	}
	s = xasprintf("{\"labels\":{\"rank\":\"%d\"},\"lines\":[%s],\"stack\":[%s],"
		      "\"values\":[%lu,", k, lines.buf, frames.buf, count);
	sb_release(&frames);
	sb_release(&lines);
	return s;
}

/* pprof keeps the labels as sample labels, and they come back as roots. */
START_TEST(test_pprof_labels)
{
	static const char *by_rank[3] = { "rank=0", "rank=1", "rank=2" };
	struct fixture fx;
	char *pb, *txt, *json, *text, *want;

	fixture_init(&fx);
	pb = xasprintf("%s/merged.pb.gz", fx.dir);
	txt = xasprintf("%s/again.txt", fx.dir);
	free(merge(pb, "-f", "pprof", "--label-from", "rank", fx.path[0], fx.path[1], fx.path[2]));
	json = python_out("decode_pprof.py", pb);
	/* One sample per stack and rank, labelled, with the input's count. */
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < fx.in[k].n; i++) {
			want = pprof_sample_json(k, fx.in[k].stacks[i], fx.in[k].counts[i]);
			ck_assert_msg(strstr(json, want), "no %s in\n%s", want, json);
			free(want);
		}
	}
	want = xasprintf("\"totals\": [%lu,", fx.in[0].total + fx.in[1].total + fx.in[2].total);
	ck_assert_msg(strstr(json, want), "no %s in\n%s", want, json);
	free(want);
	/* Read back: the labels are roots again. */
	text = merge(txt, "-f", "collapsed", pb);
	check_roots(&fx, text, by_rank);
	free(text);
	free(json);
	free(txt);
	free(pb);
	fixture_free(&fx);
}
END_TEST

/* --- the readers, in process ----------------------------------------------- */

typedef int (*writer)(const struct profile *, FILE *, const struct out_opts *);

/* What a writer writes of p with options o, and its length. */
static char *out_opts_of(writer write, const struct profile *p, const struct out_opts *o,
			 size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_int_eq(write(p, f, o), 0);
	fclose(f);
	return buf;
}

static char *out_of(writer write, const struct profile *p, size_t *len)
{
	struct out_opts o = { .full_filenames = false };

	return out_opts_of(write, p, &o, len);
}

static char *collapsed_of(const struct profile *p)
{
	size_t len;

	return out_of(out_collapsed, p, &len);
}

static char *pprof_of(const struct profile *p, size_t *len)
{
	return out_of(out_pprof, p, len);
}

/* What record writes, read back, is what record wrote: collapsed, pprof
 * and the flame graph, hostile names, process and thread roots. */
START_TEST(test_read_back)
{
	struct profile p, q;
	enum profile_format fmt;
	char err[PROFILE_READ_ERR], *want, *got, *data;
	size_t len;

	sample_profile(&p, true);
	want = collapsed_of(&p);
	ck_assert_int_eq(profile_read_mem(want, strlen(want), "mem", &q, &fmt, err, sizeof(err)), 0);
	ck_assert_int_eq(fmt, PROFILE_FOLDED);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	ck_assert_uint_eq(q.samples, p.samples);
	free(got);
	profile_free(&q);

	data = pprof_of(&p, &len);
	ck_assert_int_eq(profile_read_mem(data, len, "mem", &q, &fmt, err, sizeof(err)), 0);
	ck_assert_int_eq(fmt, PROFILE_PPROF);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	ck_assert_str_eq(q.command, p.command);
	ck_assert_uint_eq(q.interval_ns, p.interval_ns);
	for (uint32_t i = 0; i < q.nframes; i++)
		if (q.frames[i].kind == PF_THREAD || q.frames[i].kind == PF_PROCESS)
			ck_assert_ptr_null(q.frames[i].file);
	free(got);
	profile_free(&q);
	free(data);

	/* The flame graph carries its stacks and the recording's rate,
	 * duration and start. */
	p.wall = true;
	data = out_of(out_flamegraph, &p, &len);
	ck_assert_msg(profile_read_mem(data, len, "mem.svg", &q, &fmt, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(fmt, PROFILE_FOLDED);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	ck_assert(q.rate_hz == p.rate_hz && q.wall);
	ck_assert_uint_eq(q.interval_ns, p.interval_ns);
	ck_assert_uint_eq(q.duration_ns, p.duration_ns);
	ck_assert_uint_eq(q.start_unix_ns, p.start_unix_ns);
	free(got);
	profile_free(&q);
	free(data);
	free(want);
	profile_free(&p);
}
END_TEST

/* merge -f pprof: the durations summed (pprof shows the samples as a
 * share of the duration), the earliest start, the inputs' pid and tid,
 * wall time only when every input is; a folded frame "f (file:line)" as
 * function, file and line. */
START_TEST(test_pprof_metadata)
{
	struct fixture fx;
	struct profile p;
	char *a, *b, *out, *json, *data, *folded;
	size_t len;

	fixture_init(&fx);
	a = xasprintf("%s/a.pb.gz", fx.dir);
	b = xasprintf("%s/b.pb.gz", fx.dir);
	out = xasprintf("%s/m.pb.gz", fx.dir);
	sample_profile(&p, false);	/* 1700000000 s, 0.9 s, pid 4242 */
	data = pprof_of(&p, &len);
	ck_assert_int_eq(write_file(a, data, len), 0);
	free(data);
	p.start_unix_ns -= 5000000000ull;
	p.duration_ns = 2000000000;
	p.wall = true;
	data = pprof_of(&p, &len);
	ck_assert_int_eq(write_file(b, data, len), 0);
	free(data);
	profile_free(&p);

	free(merge(out, "-f", "pprof", a, b));
	json = python_out("decode_pprof.py", out);
	ck_assert_msg(strstr(json, "\"time_nanos\": 1699999995000000000,"), "%s", json);
	ck_assert_msg(strstr(json, "\"duration_nanos\": 2900000000,"), "%s", json);
	ck_assert_msg(strstr(json, "\"default_sample_type\": \"cpu\","), "%s", json);
	ck_assert_msg(strstr(json, "\"pid\":4242,") && strstr(json, "\"tid\":"), "%s", json);
	free(json);
	free(merge(out, "-f", "pprof", b));
	json = python_out("decode_pprof.py", out);
	ck_assert_msg(strstr(json, "[\"wall\",\"nanoseconds\"]]"), "%s", json);
	ck_assert_msg(strstr(json, "\"default_sample_type\": \"wall\","), "%s", json);
	free(json);

	folded = test_file(fx.dir, "f.txt", "<module> (app.py:40);work (lib/w.py:12) 7\n"
			   "odd (name) (x.py) 2\n<module> (app.py:40);plain 1\n");
	free(merge(out, "-f", "pprof", folded));
	json = python_out("decode_pprof.py", out);
	ck_assert_msg(strstr(json, "\"filename\":\"lib/w.py\",\"id\":") &&
		      strstr(json, "\"name\":\"work\","), "%s", json);
	ck_assert_msg(strstr(json, "\"lines\":[12,40],\"stack\":[\"work\",\"<module>\"]"),
		      "%s", json);
	ck_assert_msg(strstr(json, "\"lines\":[0],\"stack\":[\"odd (name)\"]"), "%s", json);
	ck_assert_msg(strstr(json, "\"lines\":[0,40],\"stack\":[\"plain\",\"<module>\"]"),
		      "%s", json);
	free(json);
	free(folded);
	free(a);
	free(b);
	free(out);
	fixture_free(&fx);
}
END_TEST

/* Folded files from other tools: perf's process root and [unknown], C++
 * names with spaces, tabs and blanks around frames, CRLF, blank lines. */
START_TEST(test_foreign_folded)
{
	static const char perf[] =
		"python3;[unknown];_PyEval_EvalFrameDefault;PyObject_Call 12\n"
		"python3;[unknown];libc.so.6`__libc_start_main;main;std::vector<int>::push_back(int const&) 3\r\n"
		"\n"
		"  python3 ; swapper ;  [unknown]   7  \n"
		"python3;do_syscall_64_[k];entry_SYSCALL_64_after_hwframe_[k]\t5\n"
		"python3;Py_RunMain;\\x;a\\\\b 2\n";
	static const char want[] =
		"python3;Py_RunMain;\\\\x;a\\\\b 2\n"
		"python3;[unknown];_PyEval_EvalFrameDefault;PyObject_Call 12\n"
		"python3;[unknown];libc.so.6`__libc_start_main;main;std::vector<int>::push_back(int const&) 3\n"
		"python3;do_syscall_64_[k];entry_SYSCALL_64_after_hwframe_[k] 5\n"
		"python3;swapper;[unknown] 7\n";
	struct profile q;
	char err[256], *got;

	ck_assert_msg(profile_read_mem(perf, strlen(perf), "perf.folded", &q, NULL, err,
				       sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(q.samples, 29);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	free(got);
	profile_free(&q);
}
END_TEST

static char *gzip_of(const void *data, size_t len, size_t *out_len)
{
	z_stream z;
	size_t cap = len + 64;
	char *out = xmalloc(cap);

	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static void expect_bad(const void *data, size_t len, const char *needle)
{
	struct profile q;
	char err[PROFILE_READ_ERR] = "";

	ck_assert_int_eq(profile_read_mem(data, len, "bad", &q, NULL, err, sizeof(err)),
			 status_fail(EXIT_BAD_INPUT));
	ck_assert_msg(strstr(err, needle), "'%s' does not say '%s'", err, needle);
	ck_assert_msg(!strchr(err, '\n'), "a message of more than one line: %s", err);
}

static void expect_bad_proto(const void *msg, size_t len, const char *needle)
{
	size_t gzlen;
	char *gz = gzip_of(msg, len, &gzlen);

	expect_bad(gz, gzlen, needle);
	free(gz);
}

/* The good profile with one byte changed: read or refused, never a crash. */
static void mutate_and_read(const char *good, size_t len)
{
	char *mut = xmalloc(len), err[PROFILE_READ_ERR];
	struct profile q;

	memcpy(mut, good, len);
	mut[rand() % len] ^= (char)(1 + rand() % 255);
	if (profile_read_mem(mut, len, "mutated", &q, NULL, err, sizeof(err)) == 0)
		profile_free(&q);
	free(mut);
}

#define BAD_PROTO(msg, needle) expect_bad_proto(msg, sizeof(msg) - 1, needle)

START_TEST(test_hostile_input)
{
	struct profile p;
	size_t len;
	char *good;

	sample_profile(&p, false);
	good = pprof_of(&p, &len);
	/* Cut anywhere, the gzip stream is truncated. */
	for (size_t cut = 2; cut < len; cut += len / 40 + 1)
		expect_bad(good, cut, "gzip");
	/* A field whose varint key runs off the end. */
	BAD_PROTO("\x0a\x00\x32\x00\x08", "not a valid pprof");
	BAD_PROTO("\x32\x00\x80\x80", "not a valid pprof");
	/* A string of 2^35 bytes in a 7-byte message. */
	BAD_PROTO("\x32\x80\x80\x80\x80\x80\x01", "not a valid pprof");
	/* An eleven-byte varint. */
	BAD_PROTO("\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "not a valid pprof");
	/* Well-formed, but a sample names a location that does not exist. */
	BAD_PROTO("\x32\x00\x32\x01s\x0a\x02\x08\x01\x12\x05\x0a\x01\x07\x10\x05",
		  "location 7 does not exist");
	/* Samples but no sample types. */
	BAD_PROTO("\x32\x00\x12\x02\x10\x05", "no sample types");
	/* A negative count: a pprof difference, not a profile. */
	BAD_PROTO("\x32\x00\x0a\x00\x12\x0b\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
		  "negative count");
	/* Random bytes, as folded text and behind a gzip header. */
	srand(7);
	for (int i = 0; i < 2000; i++) {
		unsigned char buf[256];
		size_t n = 1 + rand() % sizeof(buf), gzlen;
		struct profile q;
		char err[256], *gz;

		for (size_t k = 0; k < n; k++)
			buf[k] = (unsigned char)rand();
		if (profile_read_mem((char *)buf, n, "random", &q, NULL, err, sizeof(err)) == 0)
			profile_free(&q);
		gz = gzip_of(buf, n, &gzlen);
		if (profile_read_mem(gz, gzlen, "random", &q, NULL, err, sizeof(err)) == 0)
			profile_free(&q);
		free(gz);
		mutate_and_read(good, len);
	}
	free(good);
	profile_free(&p);
}
END_TEST

#define SVG_HEAD "<?xml version=\"1.0\"?>\n<svg>\n" SVG_STACKS_TAG " data-rate-hz=\"x\">\n"
#define BAD_SVG(text, needle) expect_bad(text, sizeof(text) - 1, needle)

/* A flame graph's stacks that are not as pystrobe writes them: refused
 * with a reason, a bad line named by its line in the file; a flame graph
 * with a byte changed: read or refused, never a crash. */
START_TEST(test_svg_broken)
{
	struct profile p, q;
	char err[PROFILE_READ_ERR];
	size_t len;
	char *good;

	BAD_SVG(SVG_HEAD "main 3\n", "cut short");
	BAD_SVG(SVG_HEAD "main&nbsp; 3\n</metadata></svg>", "XML entity");
	BAD_SVG(SVG_HEAD "main 3&amp</metadata></svg>", "XML entity");
	BAD_SVG(SVG_HEAD "<![CDATA[main 3]]></metadata></svg>", "markup");
	BAD_SVG(SVG_HEAD "main 3\nmain x\n</metadata></svg>", "line 5: 'x' is not a sample count");
	BAD_SVG(SVG_HEAD "</metadata></svg>", "no samples");
	/* A rate that is not a number is left out, the stacks are read. */
	ck_assert_int_eq(profile_read_mem(SVG_HEAD "a;b 3\n</metadata>",
					  sizeof(SVG_HEAD "a;b 3\n</metadata>") - 1, "svg", &q,
					  NULL, err, sizeof(err)), 0);
	ck_assert(q.rate_hz == 0 && q.samples == 3);
	profile_free(&q);

	sample_profile(&p, true);
	good = out_of(out_flamegraph, &p, &len);
	srand(11);
	for (int i = 0; i < 3000; i++)
		mutate_and_read(good, len);
	free(good);
	profile_free(&p);
}
END_TEST

/* Deep stacks are cut, not followed into the writers' recursion. */
START_TEST(test_deep)
{
	struct strbuf sb = STRBUF_INIT;
	struct profile q;
	char err[256];

	for (int i = 0; i < 100000; i++)
		sb_puts(&sb, i ? ";f" : "f");
	sb_puts(&sb, " 3\n");
	ck_assert_int_eq(profile_read_mem(sb.buf, sb.len, "deep", &q, NULL, err, sizeof(err)), 0);
	ck_assert_uint_eq(q.stacks[0].depth, PROFILE_READ_DEPTH + 1);
	ck_assert_str_eq(q.frames[q.stacks[0].frames[PROFILE_READ_DEPTH]].name, "<truncated>");
	profile_free(&q);
	sb_release(&sb);
}
END_TEST

/* Input is told by its content: folded stacks, pprof and flame graphs,
 * each plain or gzip-compressed, read alike; speedscope, a Chrome trace, an
 * SVG without stacks are named in the one-line error, which says what is
 * read and how to get it. */
START_TEST(test_detect_by_content)
{
	struct profile p, q;
	enum profile_format fmt;
	char err[PROFILE_READ_ERR], *want, *got, *gz, *raw, *pb, *js;
	size_t len, gzlen, rawlen, jslen;
	static const struct {
		writer write;
		const char *named;
	} unread[] = {
		{ out_speedscope, "a speedscope JSON profile; " PROFILE_READ_FORMATS },
		{ out_chrometrace, "a Chrome trace" },
	};
	struct out_opts diff = { .diff_base = &p };
	const char *foreign = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n";

	sample_profile(&p, true);
	want = collapsed_of(&p);
	gz = gzip_of(want, strlen(want), &gzlen);
	ck_assert_int_eq(profile_read_mem(gz, gzlen, "c.gz", &q, &fmt, err, sizeof(err)), 0);
	ck_assert_int_eq(fmt, PROFILE_FOLDED);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	free(got);
	profile_free(&q);

	/* pprof without its gzip: the protobuf itself. */
	pb = pprof_of(&p, &len);
	ck_assert_int_eq(profile_read_mem(pb, len, "x", &q, NULL, err, sizeof(err)), 0);
	profile_free(&q);
	raw = test_gunzip(pb, len, &rawlen);
	ck_assert_int_eq(profile_read_mem(raw, rawlen, "p.pb", &q, &fmt, err, sizeof(err)), 0);
	ck_assert_int_eq(fmt, PROFILE_PPROF);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	free(got);
	profile_free(&q);

	for (size_t i = 0; i < sizeof(unread) / sizeof(*unread); i++) {
		js = out_of(unread[i].write, &p, &jslen);
		expect_bad(js, jslen, unread[i].named);
		free(js);
	}
	expect_bad("{\"a\": 1}", 8, "JSON that is not a profile");
	/* A flame graph gzipped; one of diff, another tool's SVG: no stacks. */
	free(gz);
	js = out_of(out_flamegraph, &p, &jslen);
	gz = gzip_of(js, jslen, &gzlen);
	free(js);
	ck_assert_int_eq(profile_read_mem(gz, gzlen, "f.svg.gz", &q, &fmt, err, sizeof(err)), 0);
	got = collapsed_of(&q);
	ck_assert_str_eq(got, want);
	free(got);
	profile_free(&q);
	js = out_opts_of(out_flamegraph, &p, &diff, &jslen);
	expect_bad(js, jslen, "without pystrobe's stack data");
	free(js);
	expect_bad(foreign, strlen(foreign), "without pystrobe's stack data (another tool's, pystrobe "
		   "diff's or an older pystrobe's flame graph); " PROFILE_READ_FORMATS);
	free(raw);
	free(pb);
	free(gz);
	free(want);
	profile_free(&p);
}
END_TEST

START_TEST(test_cli_errors)
{
	struct fixture fx;
	struct run r;
	char *bad, *out, why[64];

	fixture_init(&fx);
	bad = test_file(fx.dir, "bad.pb.gz", "\x1f\x8b\x08\x00garbage");
	out = xasprintf("%s/o.svg", fx.dir);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-o", out, fx.path[0], bad, NULL), 0);
	ck_assert_msg(run_exit(&r) == 9, "%s", run_describe(&r, why, sizeof(why)));
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "bad.pb.gz"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(access(out, F_OK), -1);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-o", out, NULL), 0);
	ck_assert_int_eq(run_exit(&r), 2);
	ck_assert(run_one_error_line(&r));
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "-f", "chrometrace", fx.path[0], NULL), 0);
	ck_assert_int_eq(run_exit(&r), 2);
	ck_assert(run_one_error_line(&r));
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "merge", "--label-from", "a=b", fx.path[0], NULL), 0);
	ck_assert_int_eq(run_exit(&r), 2);
	run_free(&r);
	free(bad);
	free(out);
	fixture_free(&fx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("merge");
	TCase *tc = tcase_create("merge");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sum);
	tcase_add_test(tc, test_sum_flamegraphs);
	tcase_add_test(tc, test_labels);
	tcase_add_test(tc, test_pprof_labels);
	tcase_add_test(tc, test_read_back);
	tcase_add_test(tc, test_pprof_metadata);
	tcase_add_test(tc, test_foreign_folded);
	tcase_add_test(tc, test_hostile_input);
	tcase_add_test(tc, test_svg_broken);
	tcase_add_test(tc, test_deep);
	tcase_add_test(tc, test_detect_by_content);
	tcase_add_test(tc, test_cli_errors);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
