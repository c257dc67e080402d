/* The collapsed, speedscope, Chrome trace and pprof writers, on the known
 * profiles of sample_profile.c (with and without hostile names), on native
 * frames renamed to one function (shown once when merged) and on a profile
 * of a million samples.
 *
 * Each file is read back the way its consumers read it: collapsed lines are
 * parsed here as flamegraph.pl and speedscope split them; the JSON formats
 * are loaded by Python's json module, speedscope's checked by
 * tests/check_speedscope.py and the trace's nesting by a script below; the
 * pprof file is decoded by tests/decode_pprof.py (gzip + protobuf, nothing
 * else).  The million-sample run prints each format's time and size.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "profile/output.h"
#include "sample_profile.h"
#include "suite.h"
#include "util/util.h"

typedef int (*writer_fn)(const struct profile *, FILE *, const struct out_opts *);

/* --- helpers ------------------------------------------------------------ */

static char *script_path(const char *name)
{
	const char *dir = getenv("srcdir");

	return xasprintf("%s/tests/%s", dir && *dir ? dir : ".", name);
}

static char *temp_path(void)
{
	const char *dir = getenv("TMPDIR");
	char *path = xasprintf("%s/check_formats.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);

	ck_assert_msg(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	close(fd);
	return path;
}

static void write_to(const char *path, const struct profile *p, writer_fn fn, bool full)
{
	struct out_opts o = { .full_filenames = full };
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fn(p, f, &o), 0);
	ck_assert_int_eq(fclose(f), 0);
}

static char *write_temp(const struct profile *p, writer_fn fn, bool full)
{
	char *path = temp_path();

	write_to(path, p, fn, full);
	return path;
}

static void remove_temp(char *path)
{
	unlink(path);
	free(path);
}

static char *slurp(const char *path, size_t *len)
{
	char *s = read_file(path, len);

	ck_assert_msg(s != NULL, "%s: %s", path, strerror(errno));
	return s;
}

/* Run argv (no shell), collecting its stdout; stderr passes through, so a
 * failing script's message lands in the test log.  Returns the exit status,
 * -1 if it was killed. */
static int run_capture(char *const argv[], char **out)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_int_gt(n, 0);
		sb_add(&sb, buf, n);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		ck_assert_int_eq(errno, EINTR);
	*out = sb_detach(&sb);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run one of our Python scripts (or -c CODE) on a file; it must succeed. */
static char *python(const char *script, const char *code, const char *file)
{
	char *path = script ? script_path(script) : NULL;
	char *argv[5], *out;
	int n = 0, rc;

	argv[n++] = (char *)test_python3();
	if (path) {
		argv[n++] = path;
	} else {
		argv[n++] = "-c";
		argv[n++] = (char *)code;
	}
	argv[n++] = (char *)file;
	argv[n] = NULL;
	rc = run_capture(argv, &out);
	ck_assert_msg(rc == 0, "%s %s exited with %d; stdout:\n%.4000s",
		      script ? script : "python3 -c", file, rc, out);
	free(path);
	return out;
}

static void assert_has(const char *text, const char *what, const char *where)
{
	ck_assert_msg(strstr(text, what) != NULL, "%s lacks\n  %s\nin:\n%.6000s", where, what,
		      text);
}

static int count_of(const char *text, const char *what)
{
	int n = 0;

	for (const char *s = text; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/* --- collapsed ---------------------------------------------------------- */

#define PROC "process 4242: python3 app.py --epochs 3"
#define MAIN PROC ";thread 4242 \"MainThread\";<module> (app.py:40);main (app.py:30)"
#define LOADER PROC ";thread 4250 \"loader\""

static const char *const collapsed_lines[] = {
	MAIN ";Event.wait (threading.py:655) 30",
	MAIN ";work (app.py:12) 60",
	LOADER ";Thread.run (threading.py:1010);load (torch/data.py:77) 10",
};

/* ';' as \x3b, newline and ESC as \xNN, the invalid bytes as \xNN. */
static const char hostile_line[] =
	LOADER ";" SAMPLE_HOSTILE_NAME " (a<b>&\"c\"\\x3bd\\x0ae\\x1b[31m\\xff\\xfe.py:3) 5";

/* One line as flamegraph.pl, inferno and speedscope read it,
 * ^(.+) (\d+)$ with the frames split at ';'; returns the count. */
static uint64_t parse_line(const char *line, size_t len)
{
	const char *sp = NULL, *frame = line;
	uint64_t count = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = line[i];
		int n = utf8_char(line + i, NULL);

		ck_assert_msg(c >= 0x20 && c != 0x7f, "control byte 0x%02x in %.*s", c, (int)len,
			      line);
		ck_assert_msg(n > 0, "invalid UTF-8 in %.*s", (int)len, line);
		i += n - 1;
		if (c == ' ')
			sp = line + i;
	}
	ck_assert_msg(sp && sp > line && sp + 1 < line + len, "no stack and count: %.*s",
		      (int)len, line);
	for (const char *d = sp + 1; d < line + len; d++) {
		ck_assert_msg(*d >= '0' && *d <= '9', "count is not a number: %.*s", (int)len, line);
		count = count * 10 + (*d - '0');
	}
	for (const char *s = line; s <= sp; s++) {
		if (s < sp && *s != ';')
			continue;
		ck_assert_msg(s > frame, "empty frame in %.*s", (int)len, line);
		frame = s + 1;
	}
	return count;
}

/* Every line parses, lines are sorted and distinct, counts add up. */
static uint32_t check_collapsed_text(const char *text, size_t len, uint64_t samples)
{
	const char *line = text, *prev = NULL;
	size_t prev_len = 0;
	uint64_t total = 0;
	uint32_t n = 0;

	ck_assert_msg(len && text[len - 1] == '\n', "no final newline");
	while (line < text + len) {
		const char *nl = memchr(line, '\n', text + len - line);
		size_t l = nl - line;

		total += parse_line(line, l);
		if (prev) {
			int c = memcmp(prev, line, prev_len < l ? prev_len : l);

			ck_assert_msg(c < 0 || (c == 0 && prev_len < l), "lines out of order");
		}
		prev = line;
		prev_len = l;
		line = nl + 1;
		n++;
	}
	ck_assert_uint_eq(total, samples);
	return n;
}

START_TEST(test_collapsed)
{
	bool hostile = _i;
	struct profile p;
	size_t len;
	char *path, *text;

	sample_profile(&p, hostile);
	path = write_temp(&p, out_collapsed, false);
	text = slurp(path, &len);
	ck_assert_uint_eq(check_collapsed_text(text, len, p.samples), hostile ? 4 : 3);
	for (size_t i = 0; i < ARRAY_SIZE(collapsed_lines); i++) {
		char *want = xasprintf("%s\n", collapsed_lines[i]);

		assert_has(text, want, "collapsed");
		free(want);
	}
	if (hostile)
		assert_has(text, hostile_line, "collapsed");
	else
		ck_assert(strstr(text, "alert") == NULL);
	free(text);

	/* --full-filenames: the whole path in every label. */
	write_to(path, &p, out_collapsed, true);
	text = slurp(path, &len);
	check_collapsed_text(text, len, p.samples);
	assert_has(text, ";<module> (/home/u/app.py:40);main (/home/u/app.py:30);work "
		   "(/home/u/app.py:12) 60\n", "collapsed --full-filenames");
	assert_has(text, ";load (/venv/lib/python3.12/site-packages/torch/data.py:77) 10\n",
		   "collapsed --full-filenames");
	free(text);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* --- speedscope --------------------------------------------------------- */

static const char json_load[] = "import json, sys\njson.load(open(sys.argv[1], encoding='utf-8'))\n";

START_TEST(test_speedscope)
{
	bool hostile = _i;
	struct profile p;
	char *path, *out, want[512];

	sample_profile(&p, hostile);
	path = write_temp(&p, out_speedscope, false);
	free(python(NULL, json_load, path));
	out = python("check_speedscope.py", NULL, path);

	/* One frame table for all, one profile per thread, the busiest shown
	 * first; each thread's weights are its samples times the interval. */
	snprintf(want, sizeof(want), "\"frames\": %u,", p.nframes);
	assert_has(out, want, "speedscope");
	ck_assert_int_eq(count_of(out, "\"type\":\"sampled\""), 2);
	assert_has(out, "\"active\": 0,", "speedscope");
	assert_has(out, "\"exporter\": \"pystrobe\",", "speedscope");
	assert_has(out, "\"name\": \"python3 app.py --epochs 3 (pid 4242)\",", "speedscope");
	assert_has(out, "{\"endValue\":900000000,\"frames_used\":4,\"name\":\"MainThread (tid 4242)\","
		   "\"samples\":2,\"startValue\":0,\"total_weight\":900000000,"
		   "\"type\":\"sampled\",\"unit\":\"nanoseconds\"}", "speedscope");
	if (hostile)
		assert_has(out, "{\"endValue\":150000000,\"frames_used\":3,\"name\":\"loader (tid 4250)\","
			   "\"samples\":2,\"startValue\":0,\"total_weight\":150000000,", "speedscope");
	else
		assert_has(out, "{\"endValue\":100000000,\"frames_used\":2,\"name\":\"loader (tid 4250)\","
			   "\"samples\":1,\"startValue\":0,\"total_weight\":100000000,", "speedscope");
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* A thread that was not sampled for a while keeps its later runs at their
 * real times: an empty sample fills the gap. */
START_TEST(test_speedscope_gap)
{
	struct profile p;
	uint32_t th, st[2];
	struct pframe a = { PF_PYTHON, "a", "/x.py", 1, 1 }, b = { PF_PYTHON, "b", "/x.py", 2, 2 };
	char *path, *text, *out;

	profile_init(&p, 100);
	th = profile_thread(&p, 7, 7, NULL);
	st[0] = profile_frame(&p, &a);
	st[1] = profile_frame(&p, &b);
	profile_add(&p, th, st, 2, 0, 1);
	profile_add(&p, th, st, 1, 10000000, 1);
	profile_add(&p, th, st, 2, 500000000, 1);
	path = write_temp(&p, out_speedscope, false);
	out = python("check_speedscope.py", NULL, path);
	assert_has(out, "\"name\":\"thread 7\",\"samples\":4,\"startValue\":0,"
		   "\"total_weight\":510000000", "speedscope");
	text = slurp(path, NULL);
	assert_has(text, "\"samples\":[[0,1],[0],[],[0,1]],\"weights\":[10000000,10000000,"
		   "480000000,10000000]", "speedscope");
	free(text);
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* Samples not tied to a thread have no timeline: the aggregated stacks,
 * roots and all, make one profile. */
START_TEST(test_speedscope_no_threads)
{
	struct pframe root = { PF_PROCESS, "process 9", NULL, -1, -1 };
	struct pframe a = { PF_PYTHON, "a", "/x.py", 1, 1 };
	struct profile p;
	uint32_t st[2];
	char *path, *out;

	profile_init(&p, 100);
	st[0] = profile_frame(&p, &root);
	st[1] = profile_frame(&p, &a);
	profile_add(&p, 0, st, 2, 0, 3);
	profile_add(&p, 0, st, 1, 0, 1);
	path = write_temp(&p, out_speedscope, false);
	out = python("check_speedscope.py", NULL, path);
	assert_has(out, "{\"endValue\":40000000,\"frames_used\":2,\"name\":\"pid 0\","
		   "\"samples\":2,\"startValue\":0,\"total_weight\":40000000,", "speedscope");
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* --- Chrome trace ------------------------------------------------------- */

/* Loads the trace and prints, for the test to compare:
 *   M <what> <pid> <tid> <name>               each metadata event
 *   S <pid> <tid> <depth> <ts> <dur> <cat> <name>  each X event (ns), in
 *        the order a reader that sorts stably by ts sees them
 *   T <pid> <tid> events=<n> top=<ns>         per thread: the time covered
 * and fails if a thread's events do not nest, or a parent comes after a
 * child that starts with it. */
static const char trace_check[] =
	"import json, sys\n"
	"doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"assert doc['displayTimeUnit'] in ('ms', 'ns')\n"
	"threads, named = {}, set()\n"
	"for i, e in enumerate(doc['traceEvents']):\n"
	"    if e['ph'] == 'M':\n"
	"        print('M', e['name'], e['pid'], e['tid'], json.dumps(e['args']['name']))\n"
	"        named.add((e['name'], e['pid'], e['tid']))\n"
	"        continue\n"
	"    assert e['ph'] == 'X', e\n"
	"    assert isinstance(e['name'], str) and e['cat'] in ('python', 'native', 'pystrobe'), e\n"
	"    ts, dur = round(e['ts'] * 1000), round(e['dur'] * 1000)\n"
	"    assert dur >= 0, e\n"
	"    threads.setdefault((e['pid'], e['tid']), []).append((ts, i, dur, e))\n"
	"for (pid, tid), evs in sorted(threads.items()):\n"
	"    assert ('thread_name', pid, tid) in named, (pid, tid)\n"
	"    assert ('process_name', pid, pid) in named, pid\n"
	"    evs.sort(key=lambda x: (x[0], x[1]))\n"
	"    ends, top = [], 0\n"
	"    for ts, i, dur, e in evs:\n"
	"        while ends and ends[-1] <= ts and not (ends[-1] == ts and dur == 0):\n"
	"            ends.pop()\n"
	"        if ends:\n"
	"            assert ts + dur <= ends[-1], ('not nested', e)\n"
	"        else:\n"
	"            top += dur\n"
	"        print('S', pid, tid, len(ends), ts, dur, e['cat'], json.dumps(e['name']))\n"
	"        ends.append(ts + dur)\n"
	"    print('T', pid, tid, 'events=%d' % len(evs), 'top=%d' % top)\n";

START_TEST(test_chrometrace)
{
	bool hostile = _i;
	struct profile p;
	char *path, *out;

	sample_profile(&p, hostile);
	path = write_temp(&p, out_chrometrace, false);
	out = python(NULL, trace_check, path);

	assert_has(out, "M process_name 4242 4242 \"python3 app.py --epochs 3\"\n", "trace");
	assert_has(out, "M thread_name 4242 4242 \"MainThread\"\n", "trace");
	assert_has(out, "M thread_name 4242 4250 \"loader\"\n", "trace");
	/* A frame that stays across runs is one event; parents first. */
	assert_has(out,
		   "S 4242 4242 0 0 900000000 python \"<module> (app.py:40)\"\n"
		   "S 4242 4242 1 0 900000000 python \"main (app.py:30)\"\n"
		   "S 4242 4242 2 0 600000000 python \"work (app.py:12)\"\n"
		   "S 4242 4242 2 600000000 300000000 python \"Event.wait (threading.py:655)\"\n"
		   "T 4242 4242 events=4 top=900000000\n", "trace");
	assert_has(out,
		   "S 4242 4250 0 0 100000000 python \"Thread.run (threading.py:1010)\"\n"
		   "S 4242 4250 1 0 100000000 python \"load (torch/data.py:77)\"\n", "trace");
	if (hostile) {
		assert_has(out, "S 4242 4250 0 100000000 50000000 python \"" SAMPLE_HOSTILE_NAME
			   " (a<b>&\\\"c\\\";d\\ne\\u001b[31m\\ufffd\\ufffd.py:3)\"\n"
			   "T 4242 4250 events=3 top=150000000\n", "trace");
	} else {
		assert_has(out, "T 4242 4250 events=2 top=100000000\n", "trace");
	}
	ck_assert(strstr(out, "process 4242:") == NULL);	/* roots are tracks */
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* Jitter and gaps: runs that overlap a little, a gap of half an interval
 * or less (continuous) and a longer one (everything closes). */
START_TEST(test_chrometrace_gaps)
{
	const uint64_t ms = 1000000;
	struct pframe a = { PF_PYTHON, "a", "/x.py", 1, 1 }, b = { PF_PYTHON, "b", "/x.py", 2, 2 },
		      c = { PF_PYTHON, "c", "/x.py", 3, 3 };
	struct profile p;
	uint32_t th, ab[2], ac[2];
	char *path, *out;

	profile_init(&p, 100);
	th = profile_thread(&p, 7, 8, "w");
	ab[0] = ac[0] = profile_frame(&p, &a);
	ab[1] = profile_frame(&p, &b);
	ac[1] = profile_frame(&p, &c);
	profile_add(&p, th, ab, 2, 0, 1);		/* a b  [0, 10) */
	profile_add(&p, th, ac, 2, 9 * ms, 1);		/* a c  [9, 19): early */
	profile_add(&p, th, ab, 2, 23 * ms, 1);		/* a b  [23, 33): 4 ms late */
	profile_add(&p, th, ac, 2, 100 * ms, 1);	/* a c  [100, 110): a gap */
	path = write_temp(&p, out_chrometrace, false);
	out = python(NULL, trace_check, path);
	assert_has(out,
		   "S 7 8 0 0 33000000 python \"a (x.py:1)\"\n"
		   "S 7 8 1 0 9000000 python \"b (x.py:2)\"\n"
		   "S 7 8 1 9000000 10000000 python \"c (x.py:3)\"\n"
		   "S 7 8 1 23000000 10000000 python \"b (x.py:2)\"\n"
		   "S 7 8 0 100000000 10000000 python \"a (x.py:1)\"\n"
		   "S 7 8 1 100000000 10000000 python \"c (x.py:3)\"\n"
		   "T 7 8 events=6 top=43000000\n", "trace");
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* --- pprof -------------------------------------------------------------- */

#define LABELS(thread, tid) \
	"{\"labels\":{\"pid\":4242,\"process\":\"" PROC "\",\"thread\":\"thread " #tid \
	" \\\"" thread "\\\"\",\"tid\":" #tid "},"

START_TEST(test_pprof)
{
	bool hostile = _i;
	struct profile p;
	char *path, *out, *raw, want[256];
	size_t len;

	sample_profile(&p, hostile);
	path = write_temp(&p, out_pprof, false);
	raw = slurp(path, &len);
	ck_assert_msg(len > 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b,
		      "not gzip");
	free(raw);
	out = python("decode_pprof.py", NULL, path);

	assert_has(out, "\"sample_types\": [[\"samples\",\"count\"],[\"cpu\",\"nanoseconds\"]],",
		   "pprof");
	assert_has(out, "\"period_type\": [\"cpu\",\"nanoseconds\"],", "pprof");
	assert_has(out, "\"period\": 10000000,", "pprof");
	assert_has(out, "\"default_sample_type\": \"cpu\",", "pprof");
	assert_has(out, "\"time_nanos\": 1700000000000000000,", "pprof");
	assert_has(out, "\"duration_nanos\": 900000000,", "pprof");
	assert_has(out, "\"comments\": [\"pystrobe\",\"python3 app.py --epochs 3\",\"Python 3.12.1\"],",
		   "pprof");
	snprintf(want, sizeof(want), "\"totals\": [%" PRIu64 ",%" PRIu64 "]", p.samples,
		 p.samples * p.interval_ns);
	assert_has(out, want, "pprof");
	ck_assert_int_eq(count_of(out, "{\"labels\""), hostile ? 4 : 3);

	/* Leaf first, roots as labels, one value per sample type. */
	assert_has(out, LABELS("MainThread", 4242) "\"lines\":[12,30,40],"
		   "\"stack\":[\"work\",\"main\",\"<module>\"],\"values\":[60,600000000]}", "pprof");
	assert_has(out, LABELS("MainThread", 4242) "\"lines\":[655,30,40],"
		   "\"stack\":[\"Event.wait\",\"main\",\"<module>\"],\"values\":[30,300000000]}",
		   "pprof");
	assert_has(out, LABELS("loader", 4250) "\"lines\":[77,1010],"
		   "\"stack\":[\"load\",\"Thread.run\"],\"values\":[10,100000000]}", "pprof");

	/* Functions with their files and def lines. */
	assert_has(out, "{\"filename\":\"/home/u/app.py\",\"id\":", "pprof");
	/* No system_name, or pprof "demangles" the name (see out_pprof.c). */
	assert_has(out, "\"name\":\"work\",\"start_line\":11,\"system_name\":\"\"}", "pprof");
	assert_has(out, "\"name\":\"<module>\",\"start_line\":39,", "pprof");
	assert_has(out, "{\"filename\":\"/venv/lib/python3.12/site-packages/torch/data.py\",\"id\":",
		   "pprof");
	assert_has(out, "\"name\":\"Thread.run\",\"start_line\":1009,", "pprof");
	if (hostile) {
		assert_has(out, LABELS("loader", 4250) "\"lines\":[3],\"stack\":[\""
			   SAMPLE_HOSTILE_NAME "\"],\"values\":[5,50000000]}", "pprof");
		/* Printable: control characters and invalid bytes as \xNN. */
		assert_has(out, "{\"filename\":\"/tmp/a<b>&\\\"c\\\";d\\\\x0ae\\\\x1b[31m"
			   "\\\\xff\\\\xfe.py\",\"id\":", "pprof");
	}
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* --- every format ------------------------------------------------------- */

static const struct {
	const char *name;
	writer_fn fn;
} formats[] = {
	{ "collapsed", out_collapsed },
	{ "speedscope", out_speedscope },
	{ "chrometrace", out_chrometrace },
	{ "pprof", out_pprof },
};

/* The same profile gives the same bytes. */
START_TEST(test_deterministic)
{
	struct profile p;
	char *a, *b, *ta, *tb;
	size_t la, lb;

	sample_profile(&p, true);
	a = write_temp(&p, formats[_i].fn, false);
	b = write_temp(&p, formats[_i].fn, false);
	ta = slurp(a, &la);
	tb = slurp(b, &lb);
	ck_assert_msg(la == lb && !memcmp(ta, tb, la), "%s differs between runs", formats[_i].name);
	free(ta);
	free(tb);
	remove_temp(a);
	remove_temp(b);
	profile_free(&p);
}
END_TEST

/* --- renamed native frames --------------------------------------------- */

#define RENAMED_LABEL RENAMED_NAME " (" RENAMED_FILE ")"

/* How often each writer shows the function both offsets of
 * renamed_profile() were named: once when merged (profile_merge_renamed()),
 * as many times as it had frame ids when not (what the flame graph drew as
 * two equal boxes). */
static const struct {
	const char *name;
	writer_fn fn;
	const char *what;	/* one per node, frame or sample of that function */
	int unmerged;
} renamed_shows[] = {
	{ "collapsed", out_collapsed, RENAMED_LABEL " 7\n", 1 },
	{ "flamegraph", out_flamegraph, "<title>" RENAMED_LABEL " (", 2 },
	{ "speedscope", out_speedscope, "{\"name\":\"" RENAMED_LABEL "\"", 2 },
	{ "chrometrace", out_chrometrace, "\"name\":\"" RENAMED_LABEL "\"", 2 },
	{ "pprof", out_pprof, "\"stack\":[\"" RENAMED_NAME "\",\"main\"]", 2 },
};

START_TEST(test_renamed_once)
{
	bool merge = _i % 2;
	int k = _i / 2, want = merge ? 1 : renamed_shows[k].unmerged;
	struct profile p;
	char *path, *out;
	size_t len;

	renamed_profile(&p, true, true);
	if (merge)
		profile_merge_renamed(&p);
	path = write_temp(&p, renamed_shows[k].fn, false);
	out = renamed_shows[k].fn == out_pprof ? python("decode_pprof.py", NULL, path)
					       : slurp(path, &len);
	ck_assert_msg(count_of(out, renamed_shows[k].what) == want,
		      "%s (%s) shows %s %d times, not %d:\n%.6000s", renamed_shows[k].name,
		      merge ? "merged" : "not merged", renamed_shows[k].what,
		      count_of(out, renamed_shows[k].what), want, out);
	if (merge && renamed_shows[k].fn == out_pprof)
		assert_has(out, "\"stack\":[\"" RENAMED_NAME "\",\"main\"],\"values\":[7,", "pprof");
	free(out);
	remove_temp(path);
	profile_free(&p);
}
END_TEST

/* A stream that counts what is written, or fails every write (a full disk). */
struct sink {
	uint64_t bytes;
	bool fail;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
	struct sink *s = cookie;

	(void)buf;
	if (s->fail) {
		errno = ENOSPC;
		return -1;
	}
	s->bytes += n;
	return n;
}

static FILE *sink_open(struct sink *s)
{
	cookie_io_functions_t io = { .write = sink_write };

	return fopencookie(s, "w", io);
}

START_TEST(test_write_error)
{
	struct out_opts o = { 0 };
	struct sink s = { .fail = true };
	struct profile p;
	FILE *f = sink_open(&s);

	sample_profile(&p, true);
	ck_assert_msg(formats[_i].fn(&p, f, &o) == -ENOSPC, "%s did not report the failed write",
		      formats[_i].name);
	fclose(f);
	profile_free(&p);
}
END_TEST

/* --- a million samples -------------------------------------------------- */

static double now(void)
{
	return mono_ns() / 1e9;
}

/* Writes into a file (or, for the trace, which is about a gigabyte, into a
 * counting sink) and prints time and size. */
static char *timed_write(const struct profile *p, int i, struct sink *sink)
{
	struct out_opts o = { 0 };
	char *path = sink ? NULL : temp_path();
	FILE *f = sink ? sink_open(sink) : fopen(path, "w");
	uint64_t size;
	struct stat st;
	double t;

	ck_assert(f != NULL);
	t = now();
	ck_assert_int_eq(formats[i].fn(p, f, &o), 0);
	ck_assert_int_eq(fclose(f), 0);
	t = now() - t;
	if (sink) {
		size = sink->bytes;
	} else {
		ck_assert_int_eq(stat(path, &st), 0);
		size = st.st_size;
	}
	printf("check_formats: %lu samples, %u stacks, %u runs: %-11s %6.2f s %11" PRIu64
	       " bytes\n", (unsigned long)p->samples, p->nstacks, p->nruns, formats[i].name, t,
	       size);
	fflush(stdout);
	return path;
}

START_TEST(test_big)
{
	struct sink sink = { 0 };
	struct profile p;
	char *path[4], *text, *out, want[128];
	size_t len;
	double t = now();

	big_profile(&p, 1000000);
	printf("check_formats: big_profile(10^6) built in %.2f s\n", now() - t);
	for (int i = 0; i < 4; i++)
		path[i] = timed_write(&p, i, !strcmp(formats[i].name, "chrometrace") ? &sink : NULL);

	text = slurp(path[0], &len);
	check_collapsed_text(text, len, p.samples);
	free(text);

	out = python("check_speedscope.py", NULL, path[1]);
	snprintf(want, sizeof(want), "\"total_weight\":%" PRIu64 ",", p.samples * p.interval_ns);
	assert_has(out, want, "speedscope");
	free(out);

	out = python("decode_pprof.py", NULL, path[3]);
	snprintf(want, sizeof(want), "\"totals\": [%" PRIu64 ",%" PRIu64 "]", p.samples,
		 p.samples * p.interval_ns);
	assert_has(out, want, "pprof");
	free(out);

	for (int i = 0; i < 4; i++)
		if (path[i])
			remove_temp(path[i]);
	profile_free(&p);
}
END_TEST

static Suite *formats_suite(void)
{
	Suite *s = suite_create("formats");
	TCase *tc = tcase_create("small");
	TCase *big = tcase_create("big");

	tcase_add_loop_test(tc, test_collapsed, 0, 2);
	tcase_add_loop_test(tc, test_speedscope, 0, 2);
	tcase_add_test(tc, test_speedscope_gap);
	tcase_add_test(tc, test_speedscope_no_threads);
	tcase_add_loop_test(tc, test_chrometrace, 0, 2);
	tcase_add_test(tc, test_chrometrace_gaps);
	tcase_add_loop_test(tc, test_pprof, 0, 2);
	tcase_add_loop_test(tc, test_renamed_once, 0, 2 * ARRAY_SIZE(renamed_shows));
	tcase_add_loop_test(tc, test_deterministic, 0, ARRAY_SIZE(formats));
	tcase_add_loop_test(tc, test_write_error, 0, ARRAY_SIZE(formats));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tcase_add_test(big, test_big);
	tcase_set_timeout(big, 600);
	suite_add_tcase(s, big);
	return s;
}

int main(void)
{
	return run_suite(formats_suite());
}
