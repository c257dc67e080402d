/* The flight recorder (src/profile/flightrec.c), its recording file and
 * `pystrobe convert`.
 *
 *  - Round trip: every sample given to the recorder (its time, process,
 *    thread, name, command, wait class and every frame) comes back from
 *    the file, as the profile's runs, exactly; the test keeps its own list
 *    of what it gave, the truth the profile is held to.
 *  - Bounds: by time (exactly the samples within keep_ns of the newest are
 *    held) and by bytes (flightrec_bytes() never above max_bytes after an
 *    add, while two million samples each bring a stack and frames never
 *    seen before, and what is held is the newest samples, exactly).  The
 *    bytes per sample are printed, for a job's few stacks and for ever-new
 *    ones.
 *  - Slices: `pystrobe convert --from/--until` of consecutive slices give
 *    collapsed counts that add up, stack by stack, to the whole, and each
 *    slice holds exactly the samples the test gave in its window.
 *  - Formats: the recording converts to an SVG that xmllint finds
 *    well-formed, collapsed, pprof that tests/decode_pprof.py loads as pprof
 *    does (its total the recording's), speedscope and a Chrome trace.
 *  - One recording of many (watch --slurm): two nodes' recordings, each
 *    encoded and decompressed as a node and the front do, with the same
 *    pids on both, merged under "node=NAME" and "rank=N" roots: every
 *    sample comes back once, under its own node, its process's rank (none
 *    where the callback gives none), then its process and thread roots and
 *    its frames; the file is version 2, one without roots stays version 1;
 *    every truncation of a node's recording is refused, adding nothing.
 *  - Hostile files: every truncation, 3000 random byte changes, a newer
 *    version, bytes after the end: an error of one line, never a crash
 *    (ASan in CI); from the command line, exit 9.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "folded.h"
#include "interpreters.h"
#include "profile/flightrec.h"
#include "profile/profile_read.h"
#include "svg.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

#define MS 1000000ull
#define SEC 1000000000ull
/* 2026-11-27, a time such as a watch records. */
#define T0 1795000000000000000ull

/* --- what the test gives the recorder ---------------------------------------- */

/* A stack the test makes, its names in its own arrays: no allocation, so
 * that two million of them are cheap under ASan too. */
struct tstack {
	struct pframe f[6];
	uint32_t depth;
	char names[6][48], files[6][24];
};

/* Stack k: depth 1 + k % 6 frames, each named after k (and a variant v,
 * so that a stack can hold names never seen before). */
static void make_stack(uint64_t k, uint64_t v, struct tstack *t)
{
	t->depth = 1 + k % 6;
	for (uint32_t d = 0; d < t->depth; d++) {
		struct pframe *f = &t->f[d];

		snprintf(t->names[d], sizeof(t->names[d]), "f%u_%llu_%llu", d,
			 (unsigned long long)(k % 13), (unsigned long long)v);
		snprintf(t->files[d], sizeof(t->files[d]), "/app/mod%u.py", d);
		f->kind = d == t->depth - 1 && k % 5 == 0 ? PF_NATIVE : PF_PYTHON;
		f->name = t->names[d];
		f->file = d % 3 == 2 ? NULL : t->files[d];
		f->line = (int)(10 * d + k % 7);
		f->firstlineno = (int)(10 * d);
	}
}

struct given {
	uint64_t t;
	pid_t pid, tid;
	const char *name, *cmd, *wait;
	uint64_t k, v;		/* make_stack()'s */
};

static const struct {
	pid_t pid, tid;
	const char *name, *cmd;
} threads[] = {
	{ 4242, 4242, "MainThread", "python3 train.py --epochs 3" },
	{ 4242, 4250, "loader", "python3 train.py --epochs 3" },
	{ 4300, 4300, NULL, "python3 -m worker" },
};

static const char *const waits[] = { NULL, "lock", "futex", NULL };

/* n samples of the three threads, about every 100 ms with a jitter, from
 * T0; a thread never has the same stack and wait class twice in a row, so
 * each sample is a run of its own and keeps its exact time. */
static struct given *give(struct flightrec *fr, size_t n, uint64_t variants)
{
	struct given *g = xcalloc(n, sizeof(*g));
	uint64_t last[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };

	for (size_t i = 0; i < n; i++) {
		size_t th = i % 3;
		struct tstack st;

		g[i].t = T0 + (i / 3) * 100 * MS + (i * 7919 % 13) * MS;
		g[i].pid = threads[th].pid;
		g[i].tid = threads[th].tid;
		g[i].name = threads[th].name;
		g[i].cmd = threads[th].cmd;
		g[i].wait = waits[i * 31 % 4];
		g[i].k = i * 2654435761u % 40;
		if (g[i].k * 4 + (size_t)(i * 31 % 4) == last[th])
			g[i].k = (g[i].k + 1) % 40;
		last[th] = g[i].k * 4 + i * 31 % 4;
		g[i].v = variants ? i % variants : 0;
		make_stack(g[i].k, g[i].v, &st);
		ck_assert_int_eq(flightrec_add(fr, g[i].t, g[i].pid, g[i].tid, g[i].name, g[i].cmd,
					       st.f, st.depth, g[i].wait), 0);
	}
	return g;
}

/* --- the profile read back --------------------------------------------------- */

static char *expected_root(const struct given *g, int which)
{
	if (which == 0)
		return xasprintf("process %d: %s", (int)g->pid, g->cmd);
	if (which == 1)
		return g->name ? xasprintf("thread %d \"%s\"", (int)g->tid, g->name) :
				 xasprintf("thread %d", (int)g->tid);
	return xasprintf("wait=%s", g->wait);
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether the run r of p is exactly the sample g. */
static bool run_is(const struct profile *p, const struct prun *r, const struct given *g)
{
	const struct pthread_info *t = &p->threads[r->thread];
	const struct pstack *s = &p->stacks[r->stack];
	uint32_t roots = g->wait ? 3 : 2;
	struct tstack st;
	bool same;

	if (p->start_unix_ns + r->start_ns != g->t || r->samples != 1 || t->pid != g->pid ||
	    t->tid != g->tid || !str_same(t->name, g->name))
		return false;
	make_stack(g->k, g->v, &st);
	same = s->depth == roots + st.depth;
	for (uint32_t d = 0; same && d < roots; d++) {
		char *want = expected_root(g, (int)d);

		same = !strcmp(p->frames[s->frames[d]].name, want);
		free(want);
	}
	for (uint32_t d = 0; same && d < st.depth; d++) {
		const struct pframe *a = &p->frames[s->frames[roots + d]];

		same = a->kind == st.f[d].kind && !strcmp(a->name, st.f[d].name) &&
		       str_same(a->file, st.f[d].file) && a->line == st.f[d].line &&
		       a->firstlineno == st.f[d].firstlineno;
	}
	return same;
}

static int cmp_run_time(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;
	const struct prun *x = &p->runs[*(const uint32_t *)a], *y = &p->runs[*(const uint32_t *)b];

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return p->threads[x->thread].tid < p->threads[y->thread].tid ? -1 :
	       p->threads[x->thread].tid > p->threads[y->thread].tid;
}

static int cmp_given(const void *a, const void *b)
{
	const struct given *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The profile holds exactly the samples g[0..n), one run each. */
static void assert_profile_is(const struct profile *p, struct given *g, size_t n)
{
	uint32_t *order = xmalloc((p->nruns + 1) * sizeof(*order));

	ck_assert_uint_eq(p->samples, n);
	ck_assert_uint_eq(p->nruns, n);
	for (uint32_t i = 0; i < p->nruns; i++)
		order[i] = i;
	qsort_r(order, p->nruns, sizeof(*order), cmp_run_time, (void *)p);
	qsort(g, n, sizeof(*g), cmp_given);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(run_is(p, &p->runs[order[i]], &g[i]),
			      "sample %zu (t %llu, tid %d, stack %llu) not read back as given", i,
			      (unsigned long long)(g[i].t - T0), (int)g[i].tid,
			      (unsigned long long)g[i].k);
	free(order);
}

static char *write_recording(struct flightrec *fr, const char *dir, const char *name,
			     uint64_t mark)
{
	char *path = xasprintf("%s/%s", dir, name), err[256];

	ck_assert_msg(flightrec_write(fr, path, mark, err, sizeof(err)) == 0, "%s", err);
	return path;
}

static void read_whole(const char *path, struct profile *p)
{
	struct flightrec_info info;
	enum profile_format fmt;
	char err[PROFILE_READ_ERR];

	ck_assert_msg(profile_read_slice(path, NULL, &info, p, &fmt, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(fmt, PROFILE_RECORDING);
}

/* The recording fr writes holds exactly g[0..n), at interval_ns. */
static void assert_writes(struct flightrec *fr, struct given *g, size_t n, uint64_t interval_ns)
{
	char *dir = test_tmpdir("check_flightrec"), *path;
	struct profile p;

	path = write_recording(fr, dir, "rec.pstrobe", 0);
	read_whole(path, &p);
	ck_assert_uint_eq(p.interval_ns, interval_ns);
	ck_assert(p.wall);
	assert_profile_is(&p, g, n);
	profile_free(&p);
	free(path);
	test_rmdir(dir);
	free(dir);
}

/* --- round trip ----------------------------------------------------------------- */

START_TEST(test_roundtrip)
{
	struct flightrec *fr = flightrec_new(3600 * SEC, 64 << 20);
	struct flightrec_slice last_minute = { -60 * (int64_t)SEC, INT64_MAX };
	struct given *g;
	struct profile p;
	uint64_t last = 0, want = 0;

	flightrec_set_sampling(fr, 100 * MS, true);
	g = give(fr, 3000, 0);
	ck_assert_uint_eq(flightrec_samples(fr), 3000);
	assert_writes(fr, g, 3000, 100 * MS);
	/* The same in memory, for a report; and its last minute (without a
	 * mark, relative to the last sample). */
	ck_assert_int_eq(flightrec_profile(fr, 0, NULL, &p), 0);
	assert_profile_is(&p, g, 3000);
	profile_free(&p);
	for (size_t i = 0; i < 3000; i++)
		last = g[i].t > last ? g[i].t : last;
	for (size_t i = 0; i < 3000; i++)
		want += g[i].t >= last - 60 * SEC;
	ck_assert_int_eq(flightrec_profile(fr, 0, &last_minute, &p), 0);
	ck_assert_uint_eq(p.samples, want);
	profile_free(&p);
	flightrec_free(fr);
	free(g);
}
END_TEST

/* --- bounds ------------------------------------------------------------------------ */

START_TEST(test_time_bound)
{
	struct flightrec *fr = flightrec_new(10 * SEC, 64 << 20);
	struct given *g, *kept = xcalloc(3000, sizeof(*kept));
	uint64_t newest = 0, n = 0;

	flightrec_set_sampling(fr, 100 * MS, true);
	g = give(fr, 3 * 1000, 0);

	for (size_t i = 0; i < 3000; i++)
		if (g[i].t > newest)
			newest = g[i].t;
	for (size_t i = 0; i < 3000; i++)
		if (newest - g[i].t <= 10 * SEC)
			kept[n++] = g[i];
	/* The samples given out of order (their times jitter) may stay a
	 * little longer in memory, never in the file. */
	ck_assert_uint_ge(flightrec_samples(fr), n);
	ck_assert_uint_le(flightrec_samples(fr), n + 6);
	assert_writes(fr, kept, n, 100 * MS);
	flightrec_free(fr);
	free(kept);
	free(g);
}
END_TEST

/* Two million samples, each with a stack and a frame name never seen
 * before, into 4 MiB: memory never above the bound, and what is held is
 * the newest samples, read back exactly. */
START_TEST(test_byte_bound)
{
	const size_t max = 4 << 20, n = 2000000;
	struct flightrec *fr = flightrec_new(UINT64_MAX, max);
	size_t peak = 0, peak_at = 0, held;
	struct given *g = xcalloc(n, sizeof(*g));

	for (size_t i = 0; i < n; i++) {
		struct tstack st;

		g[i] = (struct given){ T0 + i * 10 * MS, 7, 7 + i % 2, "t", "python3 job.py", NULL,
				       i % 40, i };
		make_stack(g[i].k, g[i].v, &st);
		flightrec_add(fr, g[i].t, g[i].pid, g[i].tid, g[i].name, g[i].cmd, st.f, st.depth,
			      NULL);
		/* Held to the bound after the loop: Check marks every
		 * assertion that passes, two million system calls. */
		if (flightrec_bytes(fr) > peak) {
			peak = flightrec_bytes(fr);
			peak_at = i;
		}
	}
	ck_assert_msg(peak <= max, "sample %zu: %zu bytes held, bound %zu", peak_at, peak, max);
	held = flightrec_samples(fr);
	printf("flightrec: ever-new stacks: %zu samples held in %zu bytes (peak %zu, bound %zu), "
	       "%.0f bytes a sample, %llu compactions\n", held, flightrec_bytes(fr), peak, max,
	       (double)flightrec_bytes(fr) / (double)held,
	       (unsigned long long)flightrec_compactions(fr));
	ck_assert_uint_gt(flightrec_compactions(fr), 0);
	/* Thousands of samples, not a handful, even of stacks this costly. */
	ck_assert_uint_gt(held, 1000);
	/* Each thread every 20 ms: the interval unsaid, the writer's
	 * median of a thread's gaps. */
	assert_writes(fr, g + n - held, held, 20 * MS);
	flightrec_free(fr);
	free(g);
}
END_TEST

/* A job's steady state: 8 threads, a few hundred stacks, 10 Hz for ten
 * minutes.  Only a figure: how much a sample costs. */
START_TEST(test_bytes_per_sample)
{
	struct flightrec *fr = flightrec_new(600 * SEC, 256 << 20);
	const size_t n = 8 * 10 * 600;

	for (size_t i = 0; i < n; i++) {
		struct tstack st;

		make_stack(i * 2654435761u % 300, 0, &st);
		flightrec_add(fr, T0 + i / 8 * 100 * MS, 10, 10 + i % 8, "w", "python3 job.py", st.f,
			      st.depth, i % 3 ? "lock" : NULL);
	}
	printf("flightrec: a job's few stacks: %llu samples in %zu bytes, %.1f bytes a sample\n",
	       (unsigned long long)flightrec_samples(fr), flightrec_bytes(fr),
	       (double)flightrec_bytes(fr) / (double)flightrec_samples(fr));
	ck_assert_uint_eq(flightrec_samples(fr), n);
	flightrec_free(fr);
}
END_TEST

/* --- convert: slices and formats ------------------------------------------------------ */

/* pystrobe convert ARGS... -o out, which must succeed; out's text. */
#define convert(out, ...) convert_args(out, (const char *[]){ __VA_ARGS__, NULL })

static char *convert_args(const char *out, const char **a)
{
	const char *v[8] = { NULL };
	struct run r;
	char why[64];

	for (int n = 0; a[n]; n++) {
		ck_assert_int_lt(n, 7);
		v[n] = a[n];
	}
	ck_assert_int_eq(run_pystrobe(&r, "convert", "-o", out, v[0], v[1], v[2], v[3], v[4],
				      v[5], v[6], NULL), 0);
	ck_assert_msg(run_exit(&r) == 0, "convert: %s; %s", run_describe(&r, why, sizeof(why)),
		      r.err);
	ck_assert_msg(strstr(r.err, "wrote"), "%s", r.err);
	run_free(&r);
	return test_slurp(out);
}

struct recording {
	char *dir, *path;
	struct given *g;
	size_t n;
	uint64_t mark;
};

/* Five minutes of three threads, the mark (the stall) 40 s before the end. */
static void recording_init(struct recording *rec)
{
	struct flightrec *fr = flightrec_new(3600 * SEC, 64 << 20);

	rec->n = 3 * 3000;
	rec->dir = test_tmpdir("check_flightrec");
	rec->g = give(fr, rec->n, 0);
	rec->mark = T0 + 260 * SEC;
	rec->path = write_recording(fr, rec->dir, "stall.pstrobe", rec->mark);
	flightrec_free(fr);
}

static void recording_free(struct recording *rec)
{
	test_rmdir(rec->dir);
	free(rec->dir);
	free(rec->path);
	free(rec->g);
}

/* The samples given at from <= t - mark < until (seconds). */
static uint64_t given_between(const struct recording *rec, long from, long until)
{
	uint64_t n = 0;

	for (size_t i = 0; i < rec->n; i++) {
		int64_t rel = (int64_t)(rec->g[i].t - rec->mark);

		n += rel >= from * (int64_t)SEC && rel < until * (int64_t)SEC;
	}
	return n;
}

START_TEST(test_slices_add_up)
{
	/* Bounds of consecutive slices, seconds from the mark; the first from
	 * the start, the last to the end. */
	static const long cuts[] = { -120, -60, -1, 0, 25 };
	const size_t ncuts = ARRAY_SIZE(cuts);
	struct recording rec;
	struct folded whole, sum = { 0 }, part;
	char *out, *text, from[24], until[24];
	uint64_t total = 0;

	recording_init(&rec);
	out = xasprintf("%s/out.txt", rec.dir);
	text = convert(out, "-f", "collapsed", rec.path);
	ck_assert_int_eq(folded_parse(text, &whole), 0);
	free(text);
	ck_assert_uint_eq(whole.total, rec.n);
	for (size_t k = 0; k <= ncuts; k++) {
		long lo = k ? cuts[k - 1] : -100000, hi = k < ncuts ? cuts[k] : 100000;

		snprintf(from, sizeof(from), "%ld", lo);
		snprintf(until, sizeof(until), "%ld", hi);
		if (!k)
			text = convert(out, "-f", "collapsed", "--until", until, rec.path);
		else if (k == ncuts)
			text = convert(out, "-f", "collapsed", "--from", from, rec.path);
		else
			text = convert(out, "-f", "collapsed", "--from", from, "--until", until,
				       rec.path);
		ck_assert_int_eq(folded_parse(text, &part), 0);
		ck_assert_msg(part.total == given_between(&rec, lo, hi),
			      "slice %ld..%ld s: %llu samples, %llu given", lo, hi,
			      (unsigned long long)part.total,
			      (unsigned long long)given_between(&rec, lo, hi));
		total += part.total;
		/* Stack by stack: each slice's counts within the whole's. */
		for (size_t i = 0; i < part.n; i++) {
			ck_assert_uint_le(part.counts[i], folded_count(&whole, part.stacks[i]));
			sum.total += part.counts[i];
		}
		for (size_t i = 0; i < whole.n; i++)
			whole.counts[i] -= folded_count(&part, whole.stacks[i]);
		folded_free(&part);
		free(text);
	}
	ck_assert_uint_eq(total, rec.n);
	ck_assert_uint_eq(sum.total, rec.n);
	/* Every stack's slices took exactly its whole count. */
	for (size_t i = 0; i < whole.n; i++)
		ck_assert_msg(whole.counts[i] == 0, "%s: the slices miss %llu samples",
			      whole.stacks[i], (unsigned long long)whole.counts[i]);
	folded_free(&whole);
	free(out);
	recording_free(&rec);
}
END_TEST

/* tests/decode_pprof.py on path: it must load; its output. */
static char *decode_pprof(const char *path)
{
	char *script = xasprintf("%s/tests/decode_pprof.py", test_srcdir()), *out;
	char *const argv[] = { (char *)test_python3(), script, (char *)path, NULL };
	struct run r;
	char why[64];

	ck_assert_int_eq(run_cmd(&r, 60000, argv), 0);
	ck_assert_msg(run_exit(&r) == 0, "decode_pprof.py: %s; %s", run_describe(&r, why, sizeof(why)),
		      r.err);
	out = xstrdup(r.out);
	run_free(&r);
	free(script);
	return out;
}

/* python3 -c "import json, sys; json.load(open(sys.argv[1]))" on path. */
static void assert_json(const char *path)
{
	char *const argv[] = { (char *)test_python3(), "-c",
			       "import json, sys; json.load(open(sys.argv[1]))", (char *)path, NULL };
	struct run r;

	ck_assert_int_eq(run_cmd(&r, 60000, argv), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s is not JSON: %s", path, r.err);
	run_free(&r);
}

START_TEST(test_formats)
{
	struct recording rec;
	char *svg, *pb, *json, *text, *folded;
	struct folded f;

	recording_init(&rec);
	svg = xasprintf("%s/before.svg", rec.dir);
	pb = xasprintf("%s/before.pb.gz", rec.dir);
	json = xasprintf("%s/before.json", rec.dir);

	text = convert(svg, "--from", "-120", "--until", "0", rec.path);
	free(text);
	assert_wellformed(svg);
	/* The flame graph carries its stacks: the slice's samples. */
	folded = profile_text(svg);
	ck_assert_int_eq(folded_parse(folded, &f), 0);
	ck_assert_uint_eq(f.total, given_between(&rec, -120, 0));
	folded_free(&f);
	free(folded);

	free(convert(pb, "--from", "-120", "--until", "0", rec.path));
	text = decode_pprof(pb);
	ck_assert_msg(strstr(text, "\"wait\": \"lock\"") || strstr(text, "\"wait\":\"lock\""),
		      "no wait label in %.2000s", text);
	free(text);

	free(convert(json, "-f", "speedscope", rec.path));
	assert_json(json);
	free(convert(json, "-f", "chrometrace", "--until", "0", rec.path));
	assert_json(json);
	free(svg);
	free(pb);
	free(json);
	recording_free(&rec);
}
END_TEST

/* --- hostile files --------------------------------------------------------------------- */

static char *gunzip_file(const char *path, size_t *len)
{
	gzFile z = gzopen(path, "rb");
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	int n;

	ck_assert_ptr_nonnull(z);
	while ((n = gzread(z, buf, sizeof(buf))) > 0)
		sb_add(&sb, buf, n);
	gzclose(z);
	*len = sb.len;
	return sb_detach(&sb);
}

/* Reading data gives a profile or exactly one line of error. */
static bool reads(const char *data, size_t len, char *err, size_t errlen)
{
	struct flightrec_info info;
	struct profile p;

	err[0] = 0;
	if (profile_read_slice_mem(data, len, "rec", NULL, &info, &p, NULL, err, errlen) == 0) {
		profile_free(&p);
		return true;
	}
	ck_assert_msg(err[0] && !strchr(err, '\n'), "not one line: '%s'", err);
	return false;
}

START_TEST(test_hostile)
{
	struct recording rec;
	char err[PROFILE_READ_ERR], *data, *copy, *bad;
	size_t len;
	struct run r;
	unsigned seed = 27;

	recording_init(&rec);
	data = gunzip_file(rec.path, &len);
	ck_assert(reads(data, len, err, sizeof(err)));
	/* Every truncation is refused. */
	for (size_t cut = 0; cut < len; cut += 1 + cut / 64)
		ck_assert_msg(!reads(data, cut, err, sizeof(err)), "cut at %zu of %zu read", cut, len);
	copy = xmalloc(len + 1);
	for (int i = 0; i < 3000; i++) {
		memcpy(copy, data, len);
		for (int k = 0; k < 1 + i % 4; k++)
			copy[FLIGHTREC_MAGIC_LEN + rand_r(&seed) % (len - FLIGHTREC_MAGIC_LEN)] =
				(char)rand_r(&seed);
		reads(copy, len, err, sizeof(err));
	}
	/* A newer version says so. */
	memcpy(copy, data, len);
	copy[FLIGHTREC_MAGIC_LEN] = FLIGHTREC_VERSION + 1;
	ck_assert(!reads(copy, len, err, sizeof(err)));
	ck_assert_msg(strstr(err, "version 3"), "%s", err);
	/* Nothing may follow the last sample. */
	memcpy(copy, data, len);
	copy[len] = 0;
	ck_assert(!reads(copy, len + 1, err, sizeof(err)));
	ck_assert_msg(strstr(err, "after the last sample"), "%s", err);

	/* From the command line: exit 9, one line. */
	bad = xasprintf("%s/cut.pstrobe", rec.dir);
	ck_assert_int_eq(write_file(bad, data, len / 2), 0);
	ck_assert_int_eq(run_pystrobe(&r, "convert", "-o", "/dev/null", bad, NULL), 0);
	ck_assert_int_eq(run_exit(&r), 9);
	ck_assert_msg(run_one_error_line(&r), "%s", r.err);
	ck_assert_msg(strstr(r.err, "cut short"), "%s", r.err);
	run_free(&r);
	free(bad);
	free(copy);
	free(data);
	recording_free(&rec);
}
END_TEST

/* --- one recording of many ------------------------------------------------------- */

/* A node's roots: rank 0 and 1 on "a", 2 and none on "b". */
static void node_roots(void *arg, pid_t pid, const char **roots)
{
	const char *node = arg;

	roots[0] = !strcmp(node, "a") ? "node=a" : "node=b";
	if (pid == 4242)
		roots[1] = !strcmp(node, "a") ? "rank=0" : "rank=2";
	else
		roots[1] = !strcmp(node, "a") ? "rank=1" : NULL;
}

/* A node's recording as the front gets it: the file's bytes, gunzipped. */
static void node_recording(struct flightrec *fr, struct strbuf *raw)
{
	struct strbuf gz = STRBUF_INIT;
	char err[256];

	ck_assert_int_eq(flightrec_encode(fr, 0, &gz), 0);
	ck_assert_msg(profile_gunzip(gz.buf, gz.len, "node", raw, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(raw->buf[FLIGHTREC_MAGIC_LEN], 1);	/* no roots: version 1 */
	sb_release(&gz);
}

/* Each run of p under its node, rank, process and thread roots as
 * node_roots() gives them; the samples of each node counted. */
static void assert_rooted(const struct profile *p, uint64_t *per_node)
{
	for (uint32_t i = 0; i < p->nruns; i++) {
		const struct pstack *s = &p->stacks[p->runs[i].stack];
		const struct pthread_info *t = &p->threads[p->runs[i].thread];
		const char *node = p->frames[s->frames[0]].name;
		const char *want = t->pid == 4242 ? (node[5] == 'a' ? "rank=0" : "rank=2") :
				   node[5] == 'a' ? "rank=1" : NULL;
		uint32_t at = want ? 2 : 1;
		char *proc = xasprintf("process %d: ", (int)t->pid);

		ck_assert_msg(!strcmp(node, "node=a") || !strcmp(node, "node=b"), "root %s", node);
		ck_assert_int_eq(p->frames[s->frames[0]].kind, PF_LABEL);
		ck_assert_msg(!want || !strcmp(p->frames[s->frames[1]].name, want),
			      "%s's pid %d under %s", node, (int)t->pid, p->frames[s->frames[1]].name);
		ck_assert_msg(!strncmp(p->frames[s->frames[at]].name, proc, strlen(proc)),
			      "%s, then %s", node, p->frames[s->frames[at]].name);
		ck_assert_msg(!strncmp(p->frames[s->frames[at + 1]].name, "thread ", 7), "%s",
			      p->frames[s->frames[at + 1]].name);
		per_node[node[5] == 'b'] += p->runs[i].samples;
		free(proc);
	}
}

START_TEST(test_merge)
{
	static char node_a[] = "a", node_b[] = "b";
	struct flightrec *a = flightrec_new(3600 * SEC, 64 << 20);
	struct flightrec *b = flightrec_new(3600 * SEC, 64 << 20);
	struct flightrec *job = flightrec_new(3600 * SEC, 64 << 20);
	struct strbuf ra = STRBUF_INIT, rb = STRBUF_INIT;
	char *dir = test_tmpdir("check_flightrec"), *path, *data, err[512];
	uint64_t per_node[2] = { 0, 0 };
	struct profile p;
	size_t len;

	free(give(a, 600, 0));
	free(give(b, 900, 3));
	node_recording(a, &ra);
	node_recording(b, &rb);
	/* Every truncation of a node's: refused, one line, nothing added. */
	for (size_t cut = 0; cut < ra.len; cut += 1 + cut / 32) {
		err[0] = 0;
		ck_assert_msg(flightrec_merge(job, ra.buf, cut, node_roots, node_a, err, sizeof(err)) < 0,
			      "cut at %zu of %zu merged", cut, ra.len);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "'%s'", err);
	}
	ck_assert_uint_eq(flightrec_samples(job), 0);
	ck_assert_msg(!flightrec_merge(job, ra.buf, ra.len, node_roots, node_a, err, sizeof(err)), "%s",
		      err);
	ck_assert_msg(!flightrec_merge(job, rb.buf, rb.len, node_roots, node_b, err, sizeof(err)), "%s",
		      err);
	ck_assert_uint_eq(flightrec_samples(job), 1500);
	flightrec_set_sampling(job, 100 * MS, true);
	path = write_recording(job, dir, "job.pstrobe", 0);
	data = gunzip_file(path, &len);
	ck_assert_int_eq(data[FLIGHTREC_MAGIC_LEN], 2);		/* roots: version 2 */
	read_whole(path, &p);
	ck_assert_uint_eq(p.samples, 1500);
	assert_rooted(&p, per_node);
	ck_assert_uint_eq(per_node[0], 600);
	ck_assert_uint_eq(per_node[1], 900);
	profile_free(&p);
	free(data);
	free(path);
	sb_release(&ra);
	sb_release(&rb);
	flightrec_free(a);
	flightrec_free(b);
	flightrec_free(job);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* The command line's mistakes: exit 2, one line that says what to do. */
START_TEST(test_usage)
{
	static const struct {
		const char *args[4];
		const char *says;
	} cases[] = {
		{ { "--from", "-10", "--until", "-20" }, "--from must come before --until" },
		{ { "--from", "ten" }, "--from takes seconds" },
		{ { "--from", "-100000", "--until", "-99999" }, "no samples from -100000.0 s" },
	};
	struct recording rec;
	char *txt;
	struct run r;

	recording_init(&rec);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *const *a = cases[i].args;

		ck_assert_int_eq(run_pystrobe(&r, "convert", "-o", "/dev/null", rec.path, a[0], a[1],
					      a[2], a[3], NULL), 0);
		ck_assert_msg(run_exit(&r) == 2, "%s: exit %d", cases[i].says, run_exit(&r));
		ck_assert_msg(run_one_error_line(&r) && strstr(r.err, cases[i].says), "%s", r.err);
		run_free(&r);
	}
	/* A slice of a file without sample times, a trace of one. */
	txt = test_file(rec.dir, "p.txt", "main;work 3\n");
	ck_assert_int_eq(run_pystrobe(&r, "convert", "--from", "-1", "-o", "/dev/null", txt, NULL), 0);
	ck_assert_int_eq(run_exit(&r), 2);
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "not a flight recording"), "%s", r.err);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "convert", "-f", "chrometrace", "-o", "/dev/null", txt,
				      NULL), 0);
	ck_assert_int_eq(run_exit(&r), 2);
	ck_assert_msg(run_one_error_line(&r) && strstr(r.err, "no sample times"), "%s", r.err);
	run_free(&r);
	free(txt);
	recording_free(&rec);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "recorder", 300, 0, 0, { test_roundtrip, test_time_bound, test_byte_bound,
					   test_bytes_per_sample } },
		{ "convert", 120, 0, 0, { test_slices_add_up, test_formats, test_usage } },
		{ "hostile", 300, 0, 0, { test_hostile } },
		{ "merge", 120, 0, 0, { test_merge } },
	};

	return run_groups("flightrec", groups, ARRAY_SIZE(groups), 0, 1);
}
