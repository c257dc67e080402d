/* --gpu: record and top read the target's GPUs through NVML.
 *
 * No GPU can run on the machines the tests run on, so NVML is played by a
 * stand-in library the tests build, tests/stubs/libnvidia-ml.so.1
 * (stubs/nvml_stub.c), which pystrobe finds as it finds the driver's: in
 * LD_LIBRARY_PATH.  It serves the utilisation and memory the test scripts
 * (NVML_STUB), on the wall clock, and logs each reading it served: the
 * ground truth.  A real target (tests/targets/hot.py) is recorded, on two
 * interpreters, and
 *   - record's Chrome trace has GPU 0's counters, each reading served at
 *     the time it was served with its value, and the summary's mean is the
 *     served mean; GPU 1, which runs none of the target's processes, is
 *     not shown (tests/check_gpu_trace.py checks both);
 *   - top's snapshots, and its full-screen view (in tmux), have a header
 *     line for GPU 0 with a scripted value;
 *   - without the library, with no device, with a device lost after a
 *     few readings, and with a driver that stops answering, one line says
 *     so, record exits 0 and the profile is written (with the readings
 *     before the loss);
 *   - a target whose processes are on no GPU: one line says so; one whose
 *     worker (workers.py, a fork child: not sampled without -s) is on the
 *     GPU: the GPU is the tree's and shown.
 * The figures and bench/gpu's comparison with nvidia-smi need a real GPU:
 * bench/README.
 */
#include <check.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpreters.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

#define UTILS "5:95:40"
#define MEMS "1000:3000:2000"
#define STEP_MS "300"
#define RECORD_S "2"

static const struct test_interp *chosen[2];
static int nchosen;

struct gpu_test {
	struct target t;
	char pid[16];
	char stubs[PATH_MAX];	/* the stand-in's directory */
	char *failures;
};

/* Run pystrobe with the stand-in in LD_LIBRARY_PATH (or an empty
 * directory when lib_dir is NULL) playing spec. */
static int run_with(struct gpu_test *d, struct run *r, const char *lib_dir, const char *spec,
		    char *const argv[])
{
	char *const *a;
	struct argv_buf b = { .n = 0 };
	int rc;

	arg(&b, pystrobe_path());
	for (a = argv; *a; a++)
		arg(&b, *a);
	setenv("LD_LIBRARY_PATH", lib_dir ? lib_dir : d->t.dir, 1);
	setenv("NVML_STUB", spec, 1);
	rc = run_cmd(r, RUN_TIMEOUT_MS, b.v);
	unsetenv("LD_LIBRARY_PATH");
	unsetenv("NVML_STUB");
	return rc;
}

static void path_in(const struct gpu_test *d, char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", d->t.dir, name);
}

/* record --gpu -d RECORD_S into OUTDIR/name.trace.json; its stderr into
 * OUTDIR/name.err.  Returns 0 when it exited 0 and wrote the trace. */
static int record(struct gpu_test *d, const char *name, const char *lib_dir, const char *spec,
		  struct run *r)
{
	char out[PATH_MAX + 64], errp[PATH_MAX + 64], desc[64];
	char *argv[] = { "record", "--gpu", "-d", RECORD_S, "-o", out, "--pid", d->pid, NULL };
	struct stat st;

	snprintf(out, sizeof(out), "%s/%s.trace.json", d->t.dir, name);
	snprintf(errp, sizeof(errp), "%s/%s.err", d->t.dir, name);
	if (run_with(d, r, lib_dir, spec, argv) < 0) {
		msg_add(&d->failures, "%s: record did not start", name);
		return -1;
	}
	write_file(errp, r->err, r->err_len);
	if (run_exit(r) != 0 || stat(out, &st) != 0 || st.st_size == 0) {
		msg_add(&d->failures, "%s: record %s, profile %s; it said:\n%s", name,
			run_describe(r, desc, sizeof(desc)), stat(out, &st) ? "missing" : "empty",
			r->err);
		return -1;
	}
	return 0;
}

/* tests/check_gpu_trace.py on OUTDIR/name.*; with said, that many
 * readings and that text on stderr. */
static void check_trace(struct gpu_test *d, const char *name, const char *readings,
			const char *said)
{
	char script[PATH_MAX], trace[PATH_MAX + 64], err[PATH_MAX + 64], served[PATH_MAX + 64];
	char *argv[] = { (char *)test_python3(), script, trace, err, served, UTILS, MEMS,
			 STEP_MS, said ? "--readings" : NULL, (char *)readings, "--said",
			 (char *)said, NULL };
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/check_gpu_trace.py", test_srcdir());
	snprintf(trace, sizeof(trace), "%s/%s.trace.json", d->t.dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", d->t.dir, name);
	snprintf(served, sizeof(served), "%s/%s.served", d->t.dir, name);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&d->failures, "%s: cannot run check_gpu_trace.py", name);
		return;
	}
	printf("gpu: %s: %s: %s", d->t.ti->label, name, r.out);
	if (run_exit(&r) != 0)
		msg_add(&d->failures, "%s: %s%s", name, r.out, r.err);
	run_free(&r);
}

/* NVML_STUB for the scripted device 0 running the target, device 1
 * running nothing, logging into OUTDIR/name.served, then more. */
static char *spec_for(struct gpu_test *d, const char *name, const char *more)
{
	char served[PATH_MAX + 64];

	path_in(d, served, sizeof(served), name);
	return xasprintf("count=2,util=" UTILS ",mem=" MEMS ",step_ms=" STEP_MS
			 ",pids=1:%s,log=%s.served%s", d->pid, served, more);
}

/* The scripted device, with more words for the stand-in, recorded and
 * checked; with said, readings readings and that text on stderr. */
static void scripted(struct gpu_test *d, const char *name, const char *more,
		     const char *readings, const char *said)
{
	char *spec = spec_for(d, name, more);
	struct run r;

	if (record(d, name, d->stubs, spec, &r) == 0)
		check_trace(d, name, readings, said);
	run_free(&r);
	free(spec);
}

/* stderr has exactly one line holding want, and it says nothing of a GPU's
 * figures otherwise. */
static void one_line(struct gpu_test *d, const char *name, const struct run *r, const char *want)
{
	int n = 0;

	for (const char *l = r->err; (l = strstr(l, want)); l++)
		n++;
	if (n != 1 || strstr(r->err, "busy on average"))
		msg_add(&d->failures, "%s: want one line with \"%s\", got:\n%s", name, want, r->err);
	else
		printf("gpu: %s: %s: said once: %s\n", d->t.ti->label, name, want);
}

static void no_library(struct gpu_test *d)
{
	struct run r;
	void *so = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);

	/* LD_LIBRARY_PATH is only searched first: the loader's cache would
	 * find a real driver's library. */
	if (so) {
		dlclose(so);
		test_skip("gpu: a real libnvidia-ml.so.1 is installed: the missing library is not "
			  "tested on %s", d->t.ti->label);
		return;
	}
	if (record(d, "nolib", NULL, "", &r) == 0)
		one_line(d, "nolib", &r, "record: --gpu: libnvidia-ml.so.1 was not found");
	run_free(&r);
}

static void no_device(struct gpu_test *d)
{
	struct run r;

	if (record(d, "nodevice", d->stubs, "count=0", &r) == 0)
		one_line(d, "nodevice", &r, "record: --gpu: NVML sees no GPU");
	run_free(&r);
}

static void not_used(struct gpu_test *d)
{
	struct run r;

	if (record(d, "unused", d->stubs, "count=1,util=50,pids=1", &r) == 0)
		one_line(d, "unused", &r, "no GPU used by the process tree (NVML sees 1: "
			 "GPU 0 (Stand-in GPU 0))");
	run_free(&r);
}

/* The first child of pid's main thread (a fork worker), by /proc: the
 * test's own reading.  0 if none. */
static pid_t first_child(pid_t pid)
{
	char path[64], *text;
	pid_t child = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if ((text = slurp(path)))
		child = (pid_t)atoi(text);
	free(text);
	return child;
}

/* A GPU used by a worker, not by the process recorded: it is the tree's. */
static void worker_on_gpu(struct gpu_test *d)
{
	struct gpu_test w = { .failures = NULL };
	char why[512] = "no child in /proc", script[PATH_MAX], *spec;
	pid_t child;
	struct run r;

	test_interp_script(d->t.ti, "tests/targets/workers.py", script, sizeof(script));
	if (target_start(&w.t, d->t.ti, why, sizeof(why), script, "fork", "--park", NULL) < 0 ||
	    target_wait_file(&w.t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0 ||
	    !(child = first_child(w.t.pid))) {
		msg_add(&d->failures, "worker: cannot start workers.py fork --park: %s", why);
		goto out;
	}
	snprintf(w.pid, sizeof(w.pid), "%d", (int)w.t.pid);
	snprintf(w.stubs, sizeof(w.stubs), "%s", d->stubs);
	spec = xasprintf("count=1,util=70,pids=%d", (int)child);
	if (record(&w, "worker", w.stubs, spec, &r) == 0) {
		if (!strstr(r.err, "GPU 0 (Stand-in GPU 0): 70.0% busy on average"))
			msg_add(&w.failures, "worker %d on GPU 0, main %s: not shown:\n%s",
				(int)child, w.pid, r.err);
		else
			printf("gpu: %s: worker: GPU 0 used by worker %d of %s: shown\n",
			       d->t.ti->label, (int)child, w.pid);
	}
	run_free(&r);
	free(spec);
	if (w.failures)
		msg_add(&d->failures, "%s", w.failures);
out:
	free(w.failures);
	kill_descendants(w.t.pid);
	target_stop(&w.t);
}

/* The line of GPU 0 with a scripted value in text, or NULL. */
static const char *gpu0_line(const char *text)
{
	for (const char *l = text; l && (l = strstr(l, "GPU 0 (Stand-in GPU 0): ")); l++) {
		unsigned pct;

		if (sscanf(l, "GPU 0 (Stand-in GPU 0): %u%% busy", &pct) == 1 &&
		    (pct == 5 || pct == 95 || pct == 40))
			return l;
	}
	return NULL;
}

/* top's snapshots (stdout not a terminal): GPU 0's header line has one
 * of the scripted values, GPU 1 has none. */
static void top_header(struct gpu_test *d)
{
	char *argv[] = { (char *)pystrobe_path(), "top", "--gpu", "-d", "0.3", "--pid", d->pid,
			 NULL };
	char *spec = spec_for(d, "top", "");
	const char *l;
	int lines = 0, bad = 0;
	struct run r;

	setenv("LD_LIBRARY_PATH", d->stubs, 1);
	setenv("NVML_STUB", spec, 1);
	if (run_cmd_signal(&r, RUN_TIMEOUT_MS, 2000, SIGINT, argv) < 0)
		msg_add(&d->failures, "top did not start");
	unsetenv("LD_LIBRARY_PATH");
	unsetenv("NVML_STUB");
	free(spec);
	for (l = r.out; l && (l = strstr(l, "\nGPU ")); l++) {
		lines++;
		bad += gpu0_line(l + 1) != l + 1;
	}
	if (lines < 2 || bad)
		msg_add(&d->failures, "top: %d GPU lines, %d of them wrong:\n%.2000s", lines, bad,
			r.out);
	else
		printf("gpu: %s: top: %d snapshots with GPU 0's line\n", d->t.ti->label, lines);
	run_free(&r);
}

/* The full-screen view in a tmux pane: GPU 0's line, right above the
 * column titles. */
static void top_screen(struct gpu_test *d)
{
	char sock[PATH_MAX + 16], *spec = spec_for(d, "screen", ""), *cmd, *screen = NULL;
	const char *l = NULL;

	if (system("tmux -V >/dev/null 2>&1") != 0) {
		test_skip("gpu: no tmux (apt-get install tmux): top's full screen not checked on %s",
			  d->t.ti->label);
		free(spec);
		return;
	}
	test_used("tmux");
	snprintf(sock, sizeof(sock), "%s/tmux", d->t.dir);
	cmd = xasprintf("env LD_LIBRARY_PATH='%s' NVML_STUB='%s' '%s' top --gpu -d 0.3 --pid %s; "
			"sleep 60", d->stubs, spec, pystrobe_path(), d->pid);
	tmux_cmd(sock, NULL, (char *const[]){ "new-session", "-d", "-x", "120", "-y", "30", cmd,
					      NULL });
	for (int tries = 0; tries < 50 && !l; tries++) {
		sleep_ms(200);
		free(screen);
		screen = NULL;
		tmux_cmd(sock, &screen, (char *const[]){ "capture-pane", "-p", NULL });
		l = gpu0_line(screen);
	}
	if (!l || !strstr(l, "\n  %Own  %Total"))
		msg_add(&d->failures, "top's screen has no GPU 0 line above the titles:\n%s",
			screen ? screen : "(nothing)");
	else
		printf("gpu: %s: top's screen: %.*s\n", d->t.ti->label, (int)strcspn(l, "\n"), l);
	tmux_cmd(sock, NULL, (char *const[]){ "kill-server", NULL });
	free(screen);
	free(cmd);
	free(spec);
}

START_TEST(test_gpu)
{
	struct gpu_test d = { .failures = NULL };
	char why[512], script[PATH_MAX];
	struct stat st;

	printf("gpu: %s\n", chosen[_i]->label);
	snprintf(d.stubs, sizeof(d.stubs), "%s/tests/stubs", getenv("PYSTROBE_BUILDDIR"));
	ck_assert_msg(stat(strcat(strcpy(why, d.stubs), "/libnvidia-ml.so.1"), &st) == 0,
		      "no %s: tests/Makefile builds it (make check)", why);
	test_interp_script(chosen[_i], "tests/targets/hot.py", script, sizeof(script));
	if (target_start(&d.t, chosen[_i], why, sizeof(why), script, NULL) < 0 ||
	    target_wait_file(&d.t, "ready.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&d.t);
		ck_abort_msg("%s: cannot start hot.py: %s", chosen[_i]->label, why);
	}
	snprintf(d.pid, sizeof(d.pid), "%d", (int)d.t.py_pid);
	scripted(&d, "scripted", "", NULL, NULL);
	/* Lost after 5 readings: those 5 are in the trace, the summary says
	 * so. */
	scripted(&d, "lost", ",lose=5", "5", "GPU 0 was lost at");
	/* A driver that hangs after 3 readings: the recording ends and is
	 * written all the same, with those readings, and says why they
	 * stop. */
	scripted(&d, "hung", ",hang=3", "3", "record: --gpu: NVML did not answer within 2 s");
	no_library(&d);
	no_device(&d);
	not_used(&d);
	worker_on_gpu(&d);
	top_header(&d);
	top_screen(&d);
	target_stop(&d.t);
	if (d.failures) {
		fprintf(stderr, "gpu: %s FAILED:\n%s", chosen[_i]->label, d.failures);
		ck_abort_msg("\n%.3000s", d.failures);
	}
}
END_TEST

START_TEST(test_have_interps)
{
	ck_assert_msg(nchosen > 0, "MISSING: no Python 3.11 or 3.12 to record a target with");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpu");
	TCase *tc = tcase_create("gpu");

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A tmux of the test's own, whatever runs the test. */
	unsetenv("TMUX");
	nchosen = test_interps_plain(chosen, 2, "gpu");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_have_interps);
	tcase_add_loop_test(tc, test_gpu, 0, nchosen);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
