/* Every file pystrobe writes, opened by the tools people open it with:
 *
 *  - `go tool pprof -raw`, `-top` and `-traces` (Debian's golang-go) on each
 *    pprof: record, record --idle, merge of the two, and a collapsed file
 *    merged into pprof.  Nothing on stderr (no "Main binary filename not
 *    available"), every function named, the sample type "wall" exactly for
 *    --idle, and `-list` finding the source line of a frame that came from
 *    a collapsed file.
 *  - The npm package pprof-format decoding the same files: every function
 *    named, one mapping, pid and tid labels.
 *  - speedscope's own importer (npm package speedscope, driven by
 *    tests/consumers.js) on the speedscope, Chrome trace, collapsed and
 *    pprof output: no warning.
 *  - The collapsed output in the strict form flamegraph.pl parses: "frame;
 *    frame;...;leaf COUNT" lines, nothing else.
 *
 * Ground truth is the target's own: tests/targets/consumers.py spins in
 * spin() under rec() at depths 1 to 5 and writes the five stacks it spins
 * in, taken from its own frames.  Every stack that ends in spin, as each
 * consumer reconstructs it, must be one of those five: a trace whose slices
 * nest wrongly gives stacks that are not (the bug this guards against made
 * speedscope build stacks hundreds deep).  The target's recursion makes
 * consecutive samples leave and re-enter rec(), which is what made
 * speedscope mis-nest.
 *
 * And one profile made here, written as collapsed, Chrome trace and
 * speedscope: speedscope's importer must find in the two the collapsed
 * file's stacks with their weights, at a sampling interval that is not a
 * whole number of microseconds.
 *
 * When go, node or the npm packages are missing the program is a SKIP
 * (exit 77) that names them; tests/install-deps.sh installs them.  On
 * Python 3.12 and 3.11 only: the point is the files, not the sampler.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "folded.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "interpreters.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

#define SECONDS "2"
#define SKIP_EXIT 77

static const struct test_interp *chosen[2];
static int nchosen;

struct truth {
	char *text;		/* the file */
	char *stacks[8];	/* lines of it: "<module>;main;rec;...;spin" */
	int n;
};

static const char *npm_dir(void)
{
	const char *d = getenv("PYSTROBE_NPM_DIR");

	return d && *d ? d : "/var/cache/pystrobe/npm";
}

/* Run argv; it must exit 0 with nothing on stderr.  Its stdout. */
static char *run_clean(const char *what, char *const argv[])
{
	struct run r;
	char why[64], *out;

	ck_assert_msg(run_cmd(&r, 180000, argv) == 0, "%s: cannot run %s", what, argv[0]);
	ck_assert_msg(run_exit(&r) == 0, "%s: %s; stderr:\n%.3000s", what,
		      run_describe(&r, why, sizeof(why)), r.err);
	ck_assert_msg(!r.err_len, "%s wrote on stderr:\n%.3000s", what, r.err);
	out = r.out;
	r.out = NULL;
	run_free(&r);
	return out;
}

static void pystrobe_ok(const char *what, struct argv_buf *a)
{
	struct run r;
	char why[64];

	a->v[a->n] = NULL;
	ck_assert_int_eq(run_cmd(&r, 120000, a->v), 0);
	ck_assert_msg(run_exit(&r) == 0, "%s: %s; stderr:\n%.3000s", what,
		      run_describe(&r, why, sizeof(why)), r.err);
	run_free(&r);
}

/* Record the target into dir/NAME in format fmt (with --idle when idle). */
static void record(const struct test_interp *ti, const char *dir, const char *name,
		   const char *fmt, bool idle)
{
	char *out = xasprintf("%s/%s", dir, name);
	char *script = xasprintf("%s/tests/targets/consumers.py", test_srcdir());
	struct argv_buf a = { .n = 0 };

	/* --blocking: exact stacks.  Without it a sample can tear across a
	 * call, which is the sampler's business (its own tests), not the
	 * files'. */
	args(&a, (char *const[]){ (char *)pystrobe_path(), "record", "-q", "--blocking", "-r",
				  "200", "-f", (char *)fmt, "-o", out, NULL });
	if (idle)
		arg(&a, "--idle");
	arg(&a, "--");
	arg_python(&a, ti);
	args(&a, (char *const[]){ script, SECONDS, (char *)dir, NULL });
	pystrobe_ok(name, &a);
	free(out);
	free(script);
}

static void merge(const char *dir, const char *name, const char *fmt, const char *in1,
		  const char *in2)
{
	char *out = xasprintf("%s/%s", dir, name), *a1 = xasprintf("%s/%s", dir, in1);
	char *a2 = in2 ? xasprintf("%s/%s", dir, in2) : NULL;
	struct argv_buf a = { .n = 0 };

	args(&a, (char *const[]){ (char *)pystrobe_path(), "merge", "-q", "-f", (char *)fmt,
				  "-o", out, a1, a2, NULL });
	pystrobe_ok(name, &a);
	free(out);
	free(a1);
	free(a2);
}

static void read_truth(const char *dir, struct truth *t)
{
	char *path = xasprintf("%s/truth.txt", dir), *s;

	t->text = test_slurp(path);
	t->n = 0;
	for (s = strtok(t->text, "\n"); s && t->n < 8; s = strtok(NULL, "\n"))
		t->stacks[t->n++] = s;
	ck_assert_int_eq(t->n, 5);
	free(path);
}

/* Whether names ("a;b;spin", outermost first) is one of the target's. */
static bool is_truth(const struct truth *t, const char *names)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->stacks[i], names))
			return true;
	return false;
}

/* A frame label "name (file:line)" as its function name, in place. */
static void label_to_name(char *frame)
{
	size_t n = strlen(frame);
	char *open = NULL;

	for (char *q = frame; (q = strstr(q, " (")); q++)
		open = q;
	if (open && n && frame[n - 1] == ')')
		*open = 0;
}

/* "a (f:1);b (f:2)" as "a;b" (a new string). */
static char *names_of(const char *stack)
{
	struct strbuf sb = STRBUF_INIT;
	char *copy = xstrdup(stack), *save = NULL;

	for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		label_to_name(f);
		sb_printf(&sb, "%s%s", sb.len ? ";" : "", f);
	}
	free(copy);
	return sb_detach(&sb);
}

/* consumers.js's "stack WEIGHT\tSTACK" lines: each that ends in spin must
 * be one of the target's stacks; returns the weight of those. */
static double spin_stacks(const char *what, char *out, const struct truth *t)
{
	double total = 0;
	char *save = NULL;

	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t'), *names, *leaf;

		ck_assert_msg(strncmp(l, "warning ", 8), "%s: speedscope warned: %s", what, l + 8);
		ck_assert_msg(strncmp(l, "unnamed ", 8), "%s: function %s has no name", what, l + 8);
		if (strncmp(l, "stack ", 6) || !tab)
			continue;
		names = names_of(tab + 1);
		leaf = strrchr(names, ';');
		ck_assert_msg(!strstr(names, ";;") && names[0] != ';', "%s: an unnamed frame in %s",
			      what, names);
		if (leaf && !strcmp(leaf + 1, "spin")) {
			ck_assert_msg(is_truth(t, names), "%s: a stack the target never had:\n  %s\n"
				      "(the target's: %s, ...)", what, names, t->stacks[0]);
			total += strtod(l + 6, NULL);
		}
		free(names);
	}
	return total;
}

static char *consumer(const char *which, const char *dir, const char *name)
{
	char *js = xasprintf("%s/tests/consumers.js", test_srcdir());
	char *file = xasprintf("%s/%s", dir, name), *what = xasprintf("%s on %s", which, name);
	char *out = run_clean(what, (char *const[]){ "node", js, (char *)which, file, NULL });

	free(js);
	free(file);
	free(what);
	return out;
}

static void check_speedscope(const char *dir, const char *name, const struct truth *t)
{
	char *out = consumer("speedscope", dir, name), *what = xasprintf("speedscope on %s", name);
	double w = spin_stacks(what, out, t);

	printf("consumers: speedscope imports %s without a warning; %.0f of weight in spin\n",
	       name, w);
	ck_assert_msg(w > 0, "%s: no stack ends in spin", what);
	free(out);
	free(what);
}

static void check_pprof_format(const char *dir, const char *name, const struct truth *t,
			       bool wall, bool from_folded)
{
	char *out = consumer("pprof-format", dir, name), *what = xasprintf("pprof-format on %s", name);

	ck_assert_msg(strstr(out, wall ? "\nsample_type wall/nanoseconds\n" :
				       "\nsample_type cpu/nanoseconds\n"), "%s: %s", what, out);
	ck_assert_msg(strstr(out, wall ? "\ndefault wall\n" : "\ndefault cpu\n"), "%s", what);
	ck_assert_msg(strstr(out, "\nmapping "), "%s: no mapping", what);
	if (!from_folded)
		ck_assert_msg(strstr(out, "\nlabel pid\n") && strstr(out, "\nlabel tid\n"),
			      "%s: no pid and tid labels", what);
	ck_assert_msg(spin_stacks(what, out, t) > 0, "%s: no stack ends in spin", what);
	free(out);
	free(what);
}

/* `go tool pprof -traces`: each trace ending in spin is one of the
 * target's stacks (leaf first in the output), and no frame is nameless. */
static void traces(const char *what, char *out, const struct truth *t)
{
	char *names[64], *save = NULL;
	int n = 0, spins = 0;
	bool in = false;

	for (char *l = strtok_r(out, "\n", &save);; l = strtok_r(NULL, "\n", &save)) {
		char *tok[3], *s2 = NULL;
		int k = 0;

		if (!l || !strncmp(l, "-----------+", 12)) {
			if (in && n && !strcmp(names[0], "spin")) {
				struct strbuf sb = STRBUF_INIT;

				for (int i = n; i-- > 0;)
					sb_printf(&sb, "%s%s", i == n - 1 ? "" : ";", names[i]);
				ck_assert_msg(is_truth(t, sb.buf), "%s: a trace the target never had: %s",
					      what, sb.buf);
				spins++;
				sb_release(&sb);
			}
			if (!l)
				break;
			in = true;
			n = 0;
			continue;
		}
		if (!in)
			continue;
		for (char *w = strtok_r(l, " ", &s2); w && k < 3; w = strtok_r(NULL, " ", &s2))
			tok[k++] = w;
		ck_assert_msg(k > 0, "%s: a nameless frame in a trace", what);
		if (tok[0][strlen(tok[0]) - 1] == ':')
			continue;	/* a label: "pid:  123" */
		ck_assert_msg(k == 2 || (k == 1 && (tok[0][0] < '0' || tok[0][0] > '9')),
			      "%s: a nameless frame in a trace", what);
		if (n < 64)
			names[n++] = tok[k - 1];
	}
	ck_assert_msg(spins > 0, "%s: no trace ends in spin", what);
}

static void check_go_pprof(const char *dir, const char *name, const struct truth *t, bool wall)
{
	char *file = xasprintf("%s/%s", dir, name), *what = xasprintf("go tool pprof on %s", name);
	char *raw = run_clean(what, (char *const[]){ "go", "tool", "pprof", "-raw", file, NULL });
	char *top = run_clean(what, (char *const[]){ "go", "tool", "pprof", "-top", file, NULL });
	char *tr = run_clean(what, (char *const[]){ "go", "tool", "pprof", "-traces", file, NULL });

	/* An unnamed function shows in -raw's locations as "M=1  file:line". */
	ck_assert_msg(!strstr(raw, "M=1  "), "%s: an unnamed function:\n%.3000s", what, raw);
	ck_assert_msg(strstr(top, wall ? "\nType: wall\n" : "\nType: cpu\n"), "%s:\n%.1000s",
		      what, top);
	ck_assert_msg(strstr(top, " spin\n"), "%s: spin is not in -top", what);
	traces(what, tr, t);
	printf("consumers: go tool pprof -raw/-top/-traces read %s cleanly (Type: %s)\n", name,
	       wall ? "wall" : "cpu");
	free(raw);
	free(top);
	free(tr);
	free(file);
	free(what);
}

/* -list of a profile made from a collapsed file: its frames' "function
 * (file:line)" became a function, a file and a line, so pprof finds the
 * source (the path is relative: the collapsed file has no more). */
static void check_go_list(const char *dir, const char *name)
{
	char *script_dir = xasprintf("%s/tests/targets", test_srcdir());
	char *file = xasprintf("%s/%s", dir, name), *what = xasprintf("go tool pprof -list on %s", name);
	char *out = run_clean(what, (char *const[]){ "go", "tool", "pprof", "-source_path",
						      script_dir, "-list", "^spin$", file, NULL });

	ck_assert_msg(strstr(out, "ROUTINE ======================== spin in consumers.py"),
		      "%s:\n%.2000s", what, out);
	ck_assert_msg(strstr(out, "while time.perf_counter() < until:"),
		      "%s: no source line:\n%.2000s", what, out);
	printf("consumers: go tool pprof -list finds spin's source from %s\n", name);
	free(out);
	free(file);
	free(what);
	free(script_dir);
}

/* The form flamegraph.pl reads: "STACK COUNT", STACK frames joined by ';',
 * none empty, COUNT a whole number after one space; no other lines. */
static void check_flamegraph_pl(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = test_slurp(path), *save = NULL;
	size_t lines = 0;

	ck_assert_msg(*text && text[strlen(text) - 1] == '\n', "%s: no final newline", name);
	ck_assert_msg(!strstr(text, "\n\n") && !strchr(text, '\r') && !strchr(text, '\t'),
		      "%s: blank lines, CR or tab", name);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');

		lines++;
		ck_assert_msg(sp && sp > l && sp[1] && strspn(sp + 1, "0123456789") == strlen(sp + 1),
			      "%s: not STACK COUNT: %s", name, l);
		*sp = 0;
		ck_assert_msg(l[0] != ';' && sp[-1] != ';' && !strstr(l, ";;"),
			      "%s: an empty frame: %s", name, l);
		ck_assert_msg(l[0] != ' ' && sp[-1] != ' ', "%s: blanks around the stack: %s",
			      name, l);
	}
	ck_assert_msg(lines > 0, "%s: empty", name);
	printf("consumers: %s: %zu lines in flamegraph.pl's form\n", name, lines);
	free(text);
	free(path);
}

START_TEST(test_consumers)
{
	const struct test_interp *ti = chosen[_i];
	char *dir = test_tmpdir("consumers");
	struct truth t;

	printf("consumers: recording tests/targets/consumers.py on %s (%s)\n", ti->label, ti->path);
	record(ti, dir, "rec.collapsed", "collapsed", false);
	record(ti, dir, "rec.speedscope.json", "speedscope", false);
	record(ti, dir, "rec.trace.json", "chrometrace", false);
	record(ti, dir, "rec.pb.gz", "pprof", false);
	record(ti, dir, "idle.pb.gz", "pprof", true);
	merge(dir, "merged.pb.gz", "pprof", "rec.pb.gz", "idle.pb.gz");
	merge(dir, "folded.pb.gz", "pprof", "rec.collapsed", NULL);
	merge(dir, "merged.speedscope.json", "speedscope", "rec.collapsed", "rec.pb.gz");
	read_truth(dir, &t);

	check_flamegraph_pl(dir, "rec.collapsed");
	check_go_pprof(dir, "rec.pb.gz", &t, false);
	check_go_pprof(dir, "idle.pb.gz", &t, true);
	check_go_pprof(dir, "merged.pb.gz", &t, false);
	check_go_pprof(dir, "folded.pb.gz", &t, false);
	check_go_list(dir, "folded.pb.gz");
	check_pprof_format(dir, "rec.pb.gz", &t, false, false);
	check_pprof_format(dir, "idle.pb.gz", &t, true, false);
	check_pprof_format(dir, "merged.pb.gz", &t, false, false);
	check_pprof_format(dir, "folded.pb.gz", &t, false, true);
	check_speedscope(dir, "rec.speedscope.json", &t);
	check_speedscope(dir, "rec.trace.json", &t);
	check_speedscope(dir, "rec.collapsed", &t);
	check_speedscope(dir, "rec.pb.gz", &t);
	check_speedscope(dir, "merged.speedscope.json", &t);
	free(t.text);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* --- the same profile in every format ----------------------------------- */

/* record --gpu's counters (a GPU swinging between 3% and 97%, and its
 * memory), every 150 ms over the recording: the Chrome trace's "C" events
 * beside the slices must leave the importer's stacks as they are, without
 * a warning. */
static void gpu_counters(struct profile *p)
{
	uint32_t util = profile_counter(p, "GPU 0 utilization", "%");
	uint32_t mem = profile_counter(p, "GPU 0 memory", "MiB");

	for (uint64_t t = 0; t < p->duration_ns; t += 150000000ull) {
		profile_counter_add(p, util, t, t / 1000000000ull % 2 ? 97 : 3);
		profile_counter_add(p, mem, t, 30000.5);
	}
}

/* A recursive function leaving and re-entering itself at a fractional
 * microsecond interval (3333333 ns, 300 Hz), two threads one after the
 * other, a gap: what
 * made the Chrome trace's slices nest wrongly in speedscope.  Stacks are
 * <module>;main;rec x d;spin for d = 1 + (k % 5), and every seventh
 * <module>;rec;spin, run k lasting 1 to 3 samples. */
static void synthetic(struct profile *p)
{
	struct pframe mod = { PF_PYTHON, "<module>", "/srv/app.py", 40, 1 };
	struct pframe mainf = { PF_PYTHON, "main", "/srv/app.py", 30, 28 };
	struct pframe rec = { PF_PYTHON, "rec", "/srv/app.py", 12, 10 };
	struct pframe spin = { PF_PYTHON, "spin", "/srv/app.py", 6, 4 };
	uint32_t th[2], f[10];
	uint64_t t = 1234567;

	profile_init(p, 300);
	p->command = xstrdup("python3 app.py");
	p->pid = 100;
	th[0] = profile_thread(p, 100, 100, "MainThread");
	th[1] = profile_thread(p, 100, 101, "worker");
	f[0] = profile_frame(p, &mod);
	f[1] = profile_frame(p, &mainf);
	for (int k = 0; k < 400; k++) {
		uint32_t d = 1 + k % 5, n = 2;

		/* rec called from <module> itself: the slices that close
		 * (main, rec, ...) hold a rec below the top, named as the
		 * first one that opens. */
		if (k % 7 == 3) {
			n = 1;
			d = 1;
		}
		for (uint32_t i = 0; i < d; i++)
			f[n++] = profile_frame(p, &rec);
		f[n++] = profile_frame(p, &spin);
		for (int j = 0; j <= k % 3; j++) {
			profile_add(p, th[k >= 300], f, n, t, 1);
			t += p->interval_ns;
		}
		if (k == 200)
			t += 50 * p->interval_ns;	/* a gap: nothing sampled */
	}
	p->duration_ns = t;
	gpu_counters(p);
}

/* "stack WEIGHT\tSTACK" lines summed by stack into a folded struct. */
static void imported(char *out, struct folded *f, const char *what)
{
	struct strbuf sb = STRBUF_INIT;
	char *save = NULL;

	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		ck_assert_msg(strncmp(l, "warning ", 8), "%s: speedscope warned: %s", what, l + 8);
		if (!strncmp(l, "stack ", 6) && tab)
			sb_printf(&sb, "%s %.0f\n", tab + 1, strtod(l + 6, NULL));
	}
	ck_assert_int_eq(folded_parse(sb.buf ? sb.buf : "", f), 0);
	sb_release(&sb);
}

/* Each stack of the collapsed file has, in what speedscope imported, its
 * count times the interval (in unit_ns), within what rounding each run's
 * ends to a microsecond can move; anything else weighs next to nothing. */
static void same_stacks(const struct folded *col, const struct folded *imp, double unit_ns,
			double interval_ns, const char *what)
{
	double other = imp->total;

	for (size_t i = 0; i < col->n; i++) {
		double want = col->counts[i] * interval_ns / unit_ns;
		double got = (double)folded_count(imp, col->stacks[i]);

		ck_assert_msg(got >= want * 0.99 - 2 && got <= want * 1.01 + 2,
			      "%s: %s weighs %.0f, the collapsed file says %.0f", what,
			      col->stacks[i], got, want);
		other -= got;
	}
	ck_assert_msg(other <= imp->total * 0.001, "%s: %.0f of %lu in stacks the collapsed file "
		      "does not have", what, other, (unsigned long)imp->total);
}

START_TEST(test_same_stacks)
{
	static const struct {
		const char *fmt, *name;
		double unit_ns;
	} f[] = {
		{ "chrometrace", "s.trace.json", 1000 },
		{ "speedscope", "s.speedscope.json", 1 },
	};
	char *dir = test_tmpdir("consumers"), *path, *text;
	struct out_opts oo = { 0 };
	struct folded col, imp;
	struct profile p;

	synthetic(&p);
	path = xasprintf("%s/s.collapsed", dir);
	ck_assert_int_eq(out_write_file(out_format_find("collapsed"), &p, &oo, path, "test"), 0);
	text = test_slurp(path);
	ck_assert_int_eq(folded_parse(text, &col), 0);
	free(path);
	free(text);
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		char *out;

		path = xasprintf("%s/%s", dir, f[i].name);
		ck_assert_int_eq(out_write_file(out_format_find(f[i].fmt), &p, &oo, path, "test"), 0);
		out = consumer("speedscope", dir, f[i].name);
		imported(out, &imp, f[i].name);
		same_stacks(&col, &imp, f[i].unit_ns, (double)p.interval_ns, f[i].name);
		printf("consumers: speedscope imports %s with the collapsed file's %zu stacks "
		       "and weights, without a warning%s\n", f[i].name, col.n,
		       i == 0 ? " (and GPU counters beside them)" : "");
		folded_free(&imp);
		free(out);
		free(path);
	}
	folded_free(&col);
	profile_free(&p);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* What is missing of go, node and the npm packages, or NULL. */
static char *missing_tools(void)
{
	struct strbuf sb = STRBUF_INIT;
	char *p;
	struct stat st;

	if (system("go version >/dev/null 2>&1"))
		sb_puts(&sb, " go (golang-go)");
	if (system("node --version >/dev/null 2>&1"))
		sb_puts(&sb, " node (nodejs)");
	p = xasprintf("%s/node_modules/speedscope/dist/release", npm_dir());
	if (stat(p, &st))
		sb_printf(&sb, " the npm package speedscope in %s", npm_dir());
	free(p);
	p = xasprintf("%s/node_modules/pprof-format/package.json", npm_dir());
	if (stat(p, &st))
		sb_printf(&sb, " the npm package pprof-format in %s", npm_dir());
	free(p);
	return sb.len ? sb_detach(&sb) : NULL;
}

/* Two interpreters, not all: the point is the files, not the sampler. */
static void choose_interps(void)
{
	nchosen = test_interps_plain(chosen, 2, "consumers");
}

START_TEST(test_have_interps)
{
	ck_assert_msg(nchosen > 0, "MISSING: no Python 3.11 or 3.12 to record a target with");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("consumers");
	TCase *tc = tcase_create("consumers");
	char *missing;

	setvbuf(stdout, NULL, _IOLBF, 0);
	missing = missing_tools();
	if (missing) {
		printf("SKIP: consumers: MISSING%s (run tests/install-deps.sh)\n", missing);
		free(missing);
		return SKIP_EXIT;
	}
	choose_interps();
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_have_interps);
	tcase_add_loop_test(tc, test_consumers, 0, nchosen);
	suite_add_tcase(s, tc);
	tc = tcase_create("same_stacks");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_same_stacks);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
