/* `pystrobe dump --native` against live targets, on every Python this
 * machine has.
 *
 * For each interpreter the test builds tests/targets/strobe_ext.c (plus the
 * C++ file strobe_cxx.cpp) with gcc against that interpreter's Python.h,
 * or, where the interpreter has no headers here, as a plain library called
 * through ctypes (said loudly), and a stripped copy of it.  Then, with
 * tests/targets/native_stack.py and parked.py as targets and
 * tests/targets/native_verify.py as the judge:
 *
 *   qsort     ctypes calls libc's qsort with a Python comparison function:
 *             the callback on top, native frames down through qsort, then
 *             the Python caller, in that order;
 *   descend   C -> Python -> C recursion through the library: every level
 *             once, in order, the C++ function demangled;
 *   stripped  the same with the stripped copy: library+0xOFFSET, inside the
 *             right function, never the nearest exported name, and a note
 *             on stderr naming the debug file (by build ID) that would
 *             name them;
 *   debuglink the stripped copy with a .gnu_debuglink to a debug file
 *             (objcopy --only-keep-debug) in .debug/: the static functions
 *             named, with their source file and line, from that file; and
 *             with a debug file whose CRC does not match, as stripped;
 *   agree     a plain dump and a native dump of parked.py agree on every
 *             thread's Python frames, and every thread's stacks merge.
 *   record    `record --native -f collapsed`: of native_stack.py qsort,
 *             the same order as the dump's; of native_burn.py (two threads
 *             spinning through LEVELS C/Python levels, CPU-bound), every
 *             stack in the order the code calls, strobe_spin at the
 *             bottom, few merge errors (see MAX_MERGE_SHARE) and every
 *             stack without native frames counted as one;
 *   flame     the flame graph of native_burn.py draws C frames in the
 *             native colours and Python ones outside them;
 *   names     `record --native` of descend as a flame graph, speedscope
 *             and pprof: the C++ park (a template) short in the flame
 *             graph's labels (strobe::Deep<…>::park), whole in its
 *             tooltips, in speedscope and pprof, and with --full-names;
 *             every label at most 120 characters; xmllint clean;
 *   top       `top --native` in plain-text mode shows strobe_spin (C, with
 *             file and line) and py_work rows for native_burn.py;
 *   signals   native_burn.py takes a SIGALRM every ALARM_MS, first alone,
 *             then while `record --native` samples it at 10 Hz: by its own
 *             clock its handler runs, recorded, at least half as often as
 *             it did alone, with a median gap at most MAX_GAP_EXTRA longer.
 *             A signal that comes while a thread is stopped is delivered
 *             when pystrobe lets it go; one held until the next sample would
 *             leave a fifth of the calls, 100 ms apart.  Against the same
 *             target alone, not the timer's own count: another job on the
 *             machine delays the handler too (under ASan at load 11, 43-100%
 *             were handled).  The longest gap is printed, not judged.
 *             Then the same recorded by a pystrobe that inherited SIGCHLD
 *             ignored: its median pause at most MAX_PAUSE_EXTRA_US over
 *             that of a pystrobe that did not (it sleeps until SIGCHLD
 *             says a thread stopped, never its 200 ms stop timeout).
 *
 *   record stripped  `record --native -f collapsed` of native_burn.py
 *             with the stripped copy: every function of the library it
 *             samples is one frame, library+0xSTART, START its start in
 *             the unstripped copy (nm), from its FDE;
 *   debuginfod Debian's debuginfod on localhost serves the library's
 *             debug file (objcopy --only-keep-debug): the same recording
 *             names the library's functions, no frame left an address
 *             (native_verify.py record-named), and says it fetched it;
 *             with the server down
 *             (connection refused), and with a port that never answers
 *             (DEBUGINFOD_TIMEOUT=2), frames as stripped, a line saying
 *             why, and no lookup of the sampling thread (PYSTROBE_SYMSTATS)
 *             as long as the client's 2 s: it never waits on a fetch.  The
 *             rounds per second of each, and of the same recording with no
 *             server named, are printed, not judged (load moves them).
 *             Not for a target in another root (the helper reads its
 *             files, and does not fetch): a NOTE says so.  These two are
 *             the tcase "stripped" (CK_RUN_CASE=stripped).
 *
 *   startup   `record --native` of parked.py's idle threads leaves out the
 *             interpreter's start-up frames below the outermost Python
 *             frame; --native=all keeps them.
 *
 * No dump may leave a thread of the target stopped.  Last, the cost of
 * unwinding a ~50-frame mixed stack is measured through the library API
 * (first and warm) and printed for the README; the warm unwind's CPU time
 * (this thread's clock: what another job cannot stretch) is held to
 * PERF_LIMIT_US.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"

#include "python/locate.h"
#include "process/mem.h"
#include "native/mixed.h"
#include "native/unwind.h"
#include "process/pause.h"
#include "python/pystack.h"
#include "native/symbolize.h"
#include "process/elffile.h"
#include "util/util.h"
#include "suite.h"

#define LEVELS 4
/* C/Python levels for the cost measurement: about 50 native frames. */
#define PERF_LEVELS 5
#define PERF_REPS 2000
/* A warm unwind costs tens of microseconds of CPU; uncached it is tens of
 * milliseconds.  Fail only on the latter. */
#define PERF_LIMIT_US 2000.0
/* Merge errors allowed in a CPU-bound recording, as a share of its stacks.
 * A thread stopped inside a C -> Python call between the interpreter
 * pushing a frame and its eval call starting has one group more on one
 * side than on the other: the merge refuses it.  That window is a few
 * instructions of every call, so on a target that does nothing but such
 * calls it is hit now and then; zero is the usual count. */
#define MAX_MERGE_SHARE 0.02
#define BURN_THREADS "2"
#define RECORD_SECONDS "1.5"
#define TOP_RUN_MS 4000	/* the first sample loads DWARF: slow under ASan */
/* The signals check: the target's SIGALRM period, and pystrobe's rate,
 * slow enough that holding a signal until the next sample would show:
 * a fifth of the handler calls, and gaps near SIGNAL_RATE's interval
 * (100 ms), against what the same target did alone just before. */
#define ALARM_MS "20"
#define SIGNAL_RATE "10"
#define MIN_ALARM_SHARE 0.5
#define MAX_GAP_EXTRA 0.03
/* A pause that waits out the stop timeout lasts 200 ms; a normal one, a
 * few ms or what the load makes it: measured without SIGCHLD ignored. */
#define MAX_PAUSE_EXTRA_US 100000
/* The sleepers check: threads blocked for good beside one spinning.  A
 * ptrace stop costs a sleeping thread at least two voluntary context
 * switches (into the stop, and back to sleep); one that never wakes has
 * none.  Without --idle a pause leaves sleeping threads running, so each
 * is stopped at most in the first rounds, before its state is known. */
#define SLEEPERS "15"
#define MAX_SLEEPERS 64
#define SLEEPER_RATE "200"
#define MAX_SLEEPER_SWITCHES 8
/* Rounds a sleepers recording must have to prove anything: a pystrobe at
 * 5% of its rate (a machine too loaded for it) still has them.  The
 * worker, always runnable, is in nearly every one (MIN_WORKER_SHARE): a
 * round whose pause it did not reach within the bound reads it running
 * (before issue 39 it was left out: under load, of most rounds). */
#define MIN_WORKER_SHARE 0.9
#define MIN_SLEEPER_ROUNDS 10
/* How long debuginfod may take to scan its one file and serve it. */
#define SERVER_WAIT_MS 30000
/* The client's wait for a server that does not answer (seconds). */
#define CLIENT_TIMEOUT_S 2
#define CLIENT_TIMEOUT "2"

static const struct test_interp *interps;
static int ninterps;

struct build {
	const char *mode;		/* "ext" or "ctypes" */
	const char *lib;		/* file name of the library */
	char dir[PATH_MAX], dir_inside[PATH_MAX];
	char stripped[PATH_MAX + 16], stripped_inside[PATH_MAX + 16];
	/* Stripped, with a .gnu_debuglink to a debug file in .debug/ beside
	 * it; the same with a debug file whose CRC is not the link's. */
	char linked[PATH_MAX + 16], linked_inside[PATH_MAX + 16];
	char badcrc[PATH_MAX + 16], badcrc_inside[PATH_MAX + 16];
	char descend_range[64], park_range[64];
};

struct native_test {
	const struct test_interp *ti;
	struct build b;
	char *failures;
	char *notes;
};

static double now_us(void)
{
	return mono_ns() / 1e3;
}

/* This thread's CPU time, us: what another job on the machine cannot
 * stretch, as it does wall time. */
static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Run a build step; a failure is described in *msg with its output. */
static int run_step(struct native_test *nt, const char *what, char *const argv[])
{
	char how[96];
	struct run r;
	int ok;

	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&nt->failures, "%s: cannot run %s", what, argv[0]);
		return -1;
	}
	ok = run_exit(&r) == 0;
	if (!ok)
		msg_add(&nt->failures, "%s: %s %s:\n%s%s", what, argv[0],
			run_describe(&r, how, sizeof(how)), r.out, r.err);
	run_free(&r);
	return ok ? 0 : -1;
}

/* The interpreter's include directory, as the test sees it ("" if it
 * cannot say). */
static void include_dir(struct native_test *nt, char *buf, size_t size)
{
	static const char code[] =
		"import os, sys, sysconfig\n"
		"d = sys.argv[-1]\n"
		"with open(os.path.join(d, 'inc.tmp'), 'w') as f:\n"
		"    f.write(sysconfig.get_paths()['include'])\n"
		"os.rename(os.path.join(d, 'inc.tmp'), os.path.join(d, 'inc.txt'))\n";
	char why[512], path[PATH_MAX + 16], *inc;
	struct target t;

	buf[0] = 0;
	if (target_start(&t, nt->ti, why, sizeof(why), "-c", code, NULL) < 0) {
		msg_add(&nt->notes, "cannot ask for the include directory: %s", why);
		return;
	}
	if (target_wait_file(&t, "inc.txt", TARGET_READY_MS, why, sizeof(why)) == 0) {
		snprintf(path, sizeof(path), "%s/inc.txt", t.dir);
		inc = slurp(path);
		if (inc && *inc)
			snprintf(buf, size, "%s%s", nt->ti->root, inc);
		free(inc);
	} else {
		msg_add(&nt->notes, "cannot ask for the include directory: %s", why);
	}
	target_stop(&t);
}

static int symbol_range(const char *lib, const char *name, char *buf, size_t size)
{
	struct elffile *ef = elffile_open(lib);
	uint64_t addr, len;
	int rc = -1;

	if (ef && elffile_symbol(ef, name, &addr, &len) == 0 && len > 0) {
		snprintf(buf, size, "%llx-%llx", (unsigned long long)addr,
			 (unsigned long long)(addr + len));
		rc = 0;
	}
	elffile_close(ef);
	return rc;
}

/* A stripped copy of lib in dir, linked by .gnu_debuglink to its debug
 * information in dir/.debug/; with bad_crc, that debug file is changed
 * after the link recorded its CRC. */
static int debuglinked(struct native_test *nt, const char *lib, const char *dir, bool bad_crc)
{
	const char *base = strrchr(lib, '/') + 1;
	char sub[PATH_MAX + 16], dbg[PATH_MAX * 2], out[PATH_MAX * 2], link[PATH_MAX * 2 + 32];
	char *keep[] = { "objcopy", "--only-keep-debug", (char *)lib, dbg, NULL };
	char *strip[] = { "strip", "--strip-all", "-o", out, (char *)lib, NULL };
	char *add[] = { "objcopy", link, out, NULL };
	FILE *f;

	snprintf(sub, sizeof(sub), "%s/.debug", dir);
	snprintf(dbg, sizeof(dbg), "%s/%s.debug", sub, base);
	snprintf(out, sizeof(out), "%s/%s", dir, base);
	snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
	mkdir(dir, 0755);
	mkdir(sub, 0755);
	if (run_step(nt, "debug file", keep) < 0 || run_step(nt, "strip", strip) < 0 ||
	    run_step(nt, "debuglink", add) < 0)
		return -1;
	if (!bad_crc)
		return 0;
	f = fopen(dbg, "a");
	if (!f || fputs("changed", f) == EOF || fclose(f) != 0) {
		msg_add(&nt->failures, "cannot change %s", dbg);
		return -1;
	}
	return 0;
}

/* Build the library for this interpreter, and a stripped copy. */
static int build(struct native_test *nt)
{
	struct build *b = &nt->b;
	char inc[PATH_MAX], hdr[PATH_MAX + 16], incflag[PATH_MAX + 16];
	char cxx_src[PATH_MAX], c_src[PATH_MAX], obj[PATH_MAX + 16], out[PATH_MAX * 2];
	char sout[PATH_MAX * 2];

	test_interp_shared_dir(nt->ti, b->dir, b->dir_inside, sizeof(b->dir));
	if (!b->dir[0]) {
		msg_add(&nt->failures, "cannot make a build directory: %s", strerror(errno));
		return -1;
	}
	snprintf(b->stripped, sizeof(b->stripped), "%s/stripped", b->dir);
	snprintf(b->stripped_inside, sizeof(b->stripped_inside), "%s/stripped", b->dir_inside);
	mkdir(b->stripped, 0755);
	snprintf(b->linked, sizeof(b->linked), "%s/linked", b->dir);
	snprintf(b->linked_inside, sizeof(b->linked_inside), "%s/linked", b->dir_inside);
	snprintf(b->badcrc, sizeof(b->badcrc), "%s/badcrc", b->dir);
	snprintf(b->badcrc_inside, sizeof(b->badcrc_inside), "%s/badcrc", b->dir_inside);

	include_dir(nt, inc, sizeof(inc));
	snprintf(hdr, sizeof(hdr), "%s/Python.h", inc);
	if (inc[0] && access(hdr, R_OK) == 0) {
		b->mode = "ext";
		b->lib = "strobe_ext.so";
		snprintf(incflag, sizeof(incflag), "-I%s", inc);
	} else {
		b->mode = "ctypes";
		b->lib = "libstrobe_ext.so";
		snprintf(incflag, sizeof(incflag), "-DSTROBE_CTYPES");
		msg_add(&nt->notes, "NO Python.h for this interpreter (%s): the C levels are "
			"called through ctypes instead of an extension module",
			inc[0] ? hdr : "no include directory");
	}

	snprintf(cxx_src, sizeof(cxx_src), "%s/tests/targets/strobe_cxx.cpp", test_srcdir());
	snprintf(c_src, sizeof(c_src), "%s/tests/targets/strobe_ext.c", test_srcdir());
	snprintf(obj, sizeof(obj), "%s/strobe_cxx.o", b->dir);
	snprintf(out, sizeof(out), "%s/%s", b->dir, b->lib);
	snprintf(sout, sizeof(sout), "%s/%s", b->stripped, b->lib);
	{
		char *cxx[] = { "g++", "-fPIC", "-O1", "-g", "-fvisibility=hidden",
				"-fno-exceptions", "-fno-rtti", "-c", cxx_src, "-o", obj, NULL };
		char *cc[] = { "gcc", "-shared", "-fPIC", "-O1", "-g", "-fvisibility=hidden",
			       "-Wall", "-Wextra", incflag, c_src, obj, "-o", out, NULL };
		char *strip[] = { "strip", "--strip-all", "-o", sout, out, NULL };

		if (run_step(nt, "build C++", cxx) < 0 || run_step(nt, "build C", cc) < 0 ||
		    run_step(nt, "strip", strip) < 0)
			return -1;
	}
	if (debuglinked(nt, out, b->linked, false) < 0 || debuglinked(nt, out, b->badcrc, true) < 0)
		return -1;
	if (symbol_range(out, "strobe_descend", b->descend_range, sizeof(b->descend_range)) < 0 ||
	    symbol_range(out, "_ZN6strobe4DeepIiE4parkEi", b->park_range,
			 sizeof(b->park_range)) < 0) {
		msg_add(&nt->failures, "no strobe_descend or park symbol in %s", out);
		return -1;
	}
	return 0;
}

static void rm_build(struct build *b)
{
	char cmd[PATH_MAX + 32];

	if (!b->dir[0] || strncmp(b->dir, "/", 1) != 0 || !strstr(b->dir, "pystrobe-"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "native: could not remove %s\n", b->dir);
}

/* The target must come out of every dump as it went in: running. */
static void check_after(struct native_test *nt, const char *what, pid_t pid)
{
	char state = 0;
	pid_t tid = proc_stopped_thread(pid, &state);

	if (tid)
		msg_add(&nt->failures, "%s: thread %d left stopped (state %c)", what, tid, state);
}

/* pystrobe dump --pid PID [opt] --json into OUTDIR/file; 0 if it worked. */
static int dump(struct native_test *nt, const char *what, struct target *t, const char *opt,
		const char *file, char *path, size_t size)
{
	char pid[16], how[96];
	struct run r;
	int ok;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (run_pystrobe(&r, "dump", "--json", "--pid", pid, opt, NULL) < 0) {
		msg_add(&nt->failures, "%s: cannot run pystrobe", what);
		return -1;
	}
	check_after(nt, what, t->py_pid);
	ok = run_exit(&r) == 0;
	if (!ok)
		msg_add(&nt->failures, "%s: pystrobe %s: %.2000s", what,
			run_describe(&r, how, sizeof(how)), r.err);
	snprintf(path, size, "%s/%s", t->dir, file);
	if (ok && write_file(path, r.out, r.out_len) < 0) {
		msg_add(&nt->failures, "%s: cannot save the dump", what);
		ok = 0;
	}
	run_free(&r);
	return ok ? 0 : -1;
}

static void verify(struct native_test *nt, const char *what, char *const args[])
{
	char script[PATH_MAX], how[96];
	char *argv[16];
	struct run r;
	int n = 0;

	snprintf(script, sizeof(script), "%s/tests/targets/native_verify.py", test_srcdir());
	argv[n++] = (char *)test_python3();
	argv[n++] = script;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&nt->failures, "%s: cannot run native_verify.py", what);
		return;
	}
	if (run_exit(&r) != 0)
		msg_add(&nt->failures, "%s: native_verify.py %s:\n%s%s", what,
			run_describe(&r, how, sizeof(how)), r.out, r.err);
	else
		printf("native: %s: %s: %s", nt->ti->label, what, r.out);
	run_free(&r);
}

/* Start native_stack.py with these arguments and wait for its truth. */
static int start_stack(struct native_test *nt, const char *what, struct target *t,
		       const char *a1, const char *a2, const char *a3)
{
	char script[PATH_MAX], why[512];

	test_interp_script(nt->ti, "tests/targets/native_stack.py", script, sizeof(script));
	if (target_start(t, nt->ti, why, sizeof(why), script, a1, a2, a3, NULL) < 0 ||
	    target_wait_file(t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "%s: native_stack.py: %s", what, why);
		if (t->pid > 0)
			target_stop(t);
		return -1;
	}
	return 0;
}

static void test_qsort(struct native_test *nt)
{
	char path[PATH_MAX + 64];
	struct target t;

	if (start_stack(nt, "qsort", &t, "qsort", NULL, NULL) < 0)
		return;
	if (dump(nt, "qsort", &t, "--native", "native.json", path, sizeof(path)) == 0)
		verify(nt, "qsort", (char *[]){ "qsort", t.truth, path, NULL });
	target_stop(&t);
}

enum lib_variant { LIB_PLAIN, LIB_STRIPPED, LIB_DEBUGLINK, LIB_BADCRC };

static void test_descend(struct native_test *nt, enum lib_variant v)
{
	static const char *const whats[] = { "descend", "descend, stripped",
					     "descend, debuglink", "descend, debuglink bad CRC" };
	const char *dirs[] = { nt->b.dir_inside, nt->b.stripped_inside, nt->b.linked_inside,
			       nt->b.badcrc_inside };
	/* Named, with lines, only where DWARF is to be had. */
	static const char *const flags[] = { "--lines", "--stripped", "--lines", "--stripped" };
	const char *what = whats[v];
	char path[PATH_MAX + 64], levels[8];
	struct target t;
	struct run r;

	snprintf(levels, sizeof(levels), "%d", LEVELS);
	if (start_stack(nt, what, &t, nt->b.mode, dirs[v], levels) < 0)
		return;
	if (dump(nt, what, &t, "--native", "native.json", path, sizeof(path)) == 0)
		verify(nt, what, (char *[]){ "descend", t.truth, path, levels,
					     nt->b.descend_range, nt->b.park_range,
					     (char *)flags[v], NULL });
	/* Frames read lib+0xOFFSET: a note says which debug file names them. */
	if (v == LIB_STRIPPED || v == LIB_BADCRC) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
		if (run_pystrobe(&r, "dump", "--native", "--pid", pid, NULL) == 0) {
			if (run_exit(&r) != 0 || !strstr(r.err, "pystrobe: note: ") ||
			    !strstr(r.err, " has no symbols, so its frames read ") ||
			    !strstr(r.err, "/usr/lib/debug/.build-id/"))
				msg_add(&nt->failures, "%s: no note of the debug file that would "
					"name its frames: %.1000s", what, r.err);
			run_free(&r);
		}
	}
	/* The text form names the frame as the README shows it. */
	if (v == LIB_PLAIN) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
		if (run_pystrobe(&r, "dump", "--native", "--pid", pid, NULL) == 0) {
			if (run_exit(&r) != 0 ||
			    !strstr(r.out, "    [native] strobe::Deep<\xe2\x80\xa6>::park (") ||
			    !strstr(r.out, "    [native] strobe_descend ("))
				msg_add(&nt->failures, "descend: text dump lacks the native "
					"frames:\n%.3000s%.500s", r.out, r.err);
			run_free(&r);
		}
		if (run_pystrobe(&r, "dump", "--native", "--full-names", "--pid", pid, NULL) == 0) {
			if (run_exit(&r) != 0 ||
			    !strstr(r.out, "    [native] strobe::Deep<int>::park(int) ("))
				msg_add(&nt->failures, "descend: dump --full-names lacks the "
					"whole C++ name:\n%.3000s%.500s", r.out, r.err);
			run_free(&r);
		}
		check_after(nt, "descend, text", t.py_pid);
	}
	target_stop(&t);
}

/* A thread still late to its stop after dump --native's last try (a
 * machine short of CPU) is dumped without native frames and says why
 * (native_error), as it should: what is tested here is the agreement, so
 * the native dump is taken again, a few times at most. */
#define AGREE_TRIES 3
#define LATE_ERROR "the thread was not among the stopped threads"

static void test_agree(struct native_test *nt)
{
	char plain[PATH_MAX + 64], native[PATH_MAX + 64], why[512];
	struct target t;
	bool late = true;

	if (target_start_parked(&t, nt->ti, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "agree: parked.py: %s", why);
		return;
	}
	if (dump(nt, "agree (plain)", &t, NULL, "plain.json", plain, sizeof(plain)) < 0)
		goto out;
	for (int i = 0; late && i < AGREE_TRIES; i++) {
		char *text;

		if (dump(nt, "agree (native)", &t, "--native", "native.json", native,
			 sizeof(native)) < 0)
			goto out;
		text = slurp(native);
		late = text && strstr(text, LATE_ERROR);
		free(text);
		if (late)
			printf("native: %s: agree: a thread late to its stop (%s), dumped again\n",
			       nt->ti->label, LATE_ERROR);
	}
	verify(nt, "agree", (char *[]){ "agree", t.truth, plain, native, NULL });
out:
	target_stop(&t);
}

/* The count before kind (" merge error") in record's summary line; 0
 * when it has none. */
static long summary_count(const char *err, const char *kind)
{
	const char *q = strstr(err, kind);

	if (!q)
		return 0;
	while (q > err && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return strtol(q, NULL, 10);
}

/* The samples record's summary says it counted without native frames, of
 * threads late to their pause (read running), or 0. */
static long summary_late(const char *err)
{
	long n = summary_count(err, " samples without native frames (");

	return n ? n : summary_count(err, " sample without native frames (");
}

/* "M rounds" from record's summary line ("N samples from M rounds"), -1
 * if none. */
static long summary_rounds(const char *err)
{
	unsigned long long n, rounds;
	const char *p = record_summary(err);

	if (!p || sscanf(p, "pystrobe: %llu samples from %llu rounds", &n, &rounds) != 2)
		return -1;
	return (long)rounds;
}

/* "N samples" and "N ... merge error" from record's summary line. */
static void summary_counts(const char *err, long *stacks, long *merge)
{
	const char *p = record_summary(err);

	*stacks = p ? strtol(p + 10, NULL, 10) : -1;
	*merge = summary_count(err, " merge error");
}

/* pystrobe record MODE OPTS... -o T.DIR/FILE --pid T (opts ends with
 * NULL), the file's path in path.  0 when it exited 0; run_free(r) after,
 * either way. */
static int record_mode(struct native_test *nt, const char *what, struct target *t,
		       const char *mode, const char *const opts[], const char *file,
		       char *path, size_t size, struct run *r)
{
	char *argv[24], pid[16], how[96];
	int n = 0;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(path, size, "%s/%s", t->dir, file);
	argv[n++] = (char *)pystrobe_path();
	argv[n++] = "record";
	argv[n++] = (char *)mode;
	for (int i = 0; opts[i] && n < 18; i++)
		argv[n++] = (char *)opts[i];
	argv[n++] = "-o";
	argv[n++] = path;
	argv[n++] = "--pid";
	argv[n++] = pid;
	argv[n] = NULL;
	if (run_cmd(r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&nt->failures, "%s: cannot run pystrobe", what);
		return -1;
	}
	check_after(nt, what, t->py_pid);
	if (run_exit(r) == 0)
		return 0;
	msg_add(&nt->failures, "%s: pystrobe %s: %.2000s", what,
		run_describe(r, how, sizeof(how)), r->err);
	return -1;
}

/* With the start-up frames (--native=all): every merged stack then has a
 * native frame, which tells it from one counted with its Python frames
 * alone, as native_verify.py counts merge errors. */
static int record(struct native_test *nt, const char *what, struct target *t,
		  const char *const opts[], const char *file, char *path, size_t size,
		  struct run *r)
{
	return record_mode(nt, what, t, "--native=all", opts, file, path, size, r);
}

/* record --native of native_stack.py qsort: the parked main thread. */
static void test_record_qsort(struct native_test *nt)
{
	static const char *const opts[] = { "--idle", "-r", "200", "-d", "0.5", "-f",
					     "collapsed", NULL };
	char path[PATH_MAX + 64], merge_arg[24];
	long stacks, merge;
	struct target t;
	struct run r;

	if (start_stack(nt, "record qsort", &t, "qsort", NULL, NULL) < 0)
		return;
	if (record(nt, "record qsort", &t, opts, "qsort.txt", path, sizeof(path), &r) == 0) {
		summary_counts(r.err, &stacks, &merge);
		/* A thread that took over 200 ms to stop (a loaded machine)
		 * is not unwound: it is counted with its Python frames. */
		if (merge > 1)
			msg_add(&nt->failures, "record qsort: %s", r.err);
		snprintf(merge_arg, sizeof(merge_arg), "%ld", merge);
		verify(nt, "record qsort", (char *[]){ "record-qsort", t.truth, path, merge_arg,
						       NULL });
	}
	run_free(&r);
	target_stop(&t);
}

/* native_burn.py: two threads spinning through the library's levels,
 * the library's in dir (inside the interpreter's root). */
static int start_burn_in(struct native_test *nt, const char *what, struct target *t,
			 const char *dir)
{
	char script[PATH_MAX], why[512], levels[8];

	snprintf(levels, sizeof(levels), "%d", LEVELS);
	test_interp_script(nt->ti, "tests/targets/native_burn.py", script, sizeof(script));
	if (target_start(t, nt->ti, why, sizeof(why), script, nt->b.mode, dir,
			 levels, BURN_THREADS, "0", NULL) < 0 ||
	    target_wait_file(t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "%s: native_burn.py: %s", what, why);
		if (t->pid > 0)
			target_stop(t);
		return -1;
	}
	return 0;
}

static int start_burn(struct native_test *nt, const char *what, struct target *t)
{
	return start_burn_in(nt, what, t, nt->b.dir_inside);
}

static void test_record_burn(struct native_test *nt)
{
	static const char *const opts[] = { "-r", "200", "-d", RECORD_SECONDS, "-f",
					     "collapsed", NULL };
	char path[PATH_MAX + 64], levels[8], merge_arg[24], gap_arg[24], late_arg[24];
	long stacks, merge;
	struct target t;
	struct run r;

	if (start_burn(nt, "record burn", &t) < 0)
		return;
	snprintf(levels, sizeof(levels), "%d", LEVELS);
	if (record(nt, "record burn", &t, opts, "burn.txt", path, sizeof(path), &r) < 0)
		goto out;
	summary_counts(r.err, &stacks, &merge);
	if (stacks <= 0) {
		msg_add(&nt->failures, "record burn: no summary: %.2000s", r.err);
	} else {
		printf("native: %s: record burn: %ld stacks, %ld merge errors\n", nt->ti->label,
		       stacks, merge);
		if (merge > MAX_MERGE_SHARE * stacks)
			msg_add(&nt->failures, "record burn: %ld merge errors in %ld stacks: %s",
				merge, stacks, r.err);
		snprintf(merge_arg, sizeof(merge_arg), "%ld", merge);
		snprintf(gap_arg, sizeof(gap_arg), "%ld", summary_count(r.err, " stacks with a native gap"));
		snprintf(late_arg, sizeof(late_arg), "%ld", summary_late(r.err));
		verify(nt, "record burn", (char *[]){ "record-burn", path, levels, merge_arg,
						      gap_arg, late_arg, NULL });
	}
out:
	run_free(&r);
	target_stop(&t);
}

/* jit_spin.py: the main thread in code without unwind tables, below
 * ctypes and the interpreter's calls.  Its native unwind ends there:
 * each stack must come out as the Python frames, the gap marker and the
 * JIT frame (a partial merge, counted as a native gap), not as a merge
 * error with the Python frames alone. */
static void test_record_jit(struct native_test *nt)
{
	static const char *const opts[] = { "-r", "200", "-d", RECORD_SECONDS, "-f",
					     "collapsed", NULL };
	char script[PATH_MAX], why[512], path[PATH_MAX + 64], gaps[24], merge[24];
	struct target t;
	struct run r;
	char *truth;

	test_interp_script(nt->ti, "tests/targets/jit_spin.py", script, sizeof(script));
	if (target_start(&t, nt->ti, why, sizeof(why), script, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "record jit: jit_spin.py: %s", why);
		if (t.pid > 0)
			target_stop(&t);
		return;
	}
	truth = slurp(t.truth);
	if (truth && strstr(truth, "\"skip\"")) {
		test_skip("native: %s: record jit: %s", nt->ti->label, truth);
		goto out;
	}
	if (record(nt, "record jit", &t, opts, "jit.txt", path, sizeof(path), &r) == 0) {
		snprintf(gaps, sizeof(gaps), "%ld", summary_count(r.err, " stacks with a native gap"));
		snprintf(merge, sizeof(merge), "%ld", summary_count(r.err, " merge error"));
		verify(nt, "record jit", (char *[]){ "record-jit", t.truth, path, gaps, merge,
						     NULL });
	}
	run_free(&r);
out:
	free(truth);
	target_stop(&t);
}

/* The native ids of native_burn.py's sleepers, from its truth.json;
 * 0 when it has none (3.7: no native_id) or it is unreadable. */
static int read_sleepers(const struct target *t, pid_t *tids, int max)
{
	char *json = slurp(t->truth), *p, *end;
	int n = 0;

	p = json ? strstr(json, "\"sleepers\": [") : NULL;
	for (p = p ? p + 13 : NULL; p && n < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0)
			break;
		tids[n++] = (pid_t)v;
		if (*end == ',')
			end++;
	}
	free(json);
	return n;
}

/* The kernel's count of a thread's voluntary context switches, or -1. */
static long voluntary_switches(pid_t pid, pid_t tid)
{
	char path[64], *status, *p;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	status = slurp(path);
	p = status ? strstr(status, "\nvoluntary_ctxt_switches:") : NULL;
	if (p)
		v = strtol(p + 25, NULL, 10);
	free(status);
	return v;
}

/* Are the frames of a collapsed line from its worker frame on (up to the
 * count at the end) all of native_burn.py's code (py_level, py_work) and
 * native_stack.py's (the descent into C)? */
static bool burn_frames(const char *worker)
{
	const char *end = strrchr(worker, ' ');

	for (const char *f = worker; f && f < end; f = strchr(f, ';'), f = f ? f + 1 : NULL) {
		const char *next = strchr(f, ';'), *file = strstr(f, " (");

		if (!next || next > end)
			next = end;
		/* A frame caught on an instruction with no line (3.14's
		 * artificial ones) is named with its file alone. */
		if (!file || file > next ||
		    (strncmp(file, " (native_burn.py", 16) && strncmp(file, " (native_stack.py", 17)))
			return false;
	}
	return true;
}

/* The --blocking recording: the spinning worker's stacks read as
 * native_burn.py calls them; the other threads (the sleepers, the main
 * thread in join()) are counted only while their state is unknown or
 * runnable: in the first rounds, and again when a loaded machine leaves
 * one runnable on its way back to sleep after a stop.  Each such sample
 * is a stop, which sleepers_run() bounds by their context switches
 * (two a stop): FIRST_ROUNDS samples each is the same bound. */
#define FIRST_ROUNDS (MAX_SLEEPER_SWITCHES / 2)
static void check_worker(struct native_test *nt, const char *what, const char *path, int others,
			 long rounds)
{
	char *out = slurp(path), *line, *save = NULL;
	long worker = 0, rest = 0;

	for (line = out ? strtok_r(out, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *count = strrchr(line, ' ');
		char *w = strstr(line, ";worker (native_burn.py:");
		long c = count ? strtol(count + 1, NULL, 10) : 0;

		if (!w) {
			rest += c;
			continue;
		}
		worker += c;
		if (!burn_frames(w + 1))
			msg_add(&nt->failures, "%s: a worker stack with a frame native_burn.py "
				"does not call: %.500s", what, line);
	}
	if (worker < rounds / 2 || rest > FIRST_ROUNDS * others)
		msg_add(&nt->failures, "%s: %ld worker samples in %ld rounds, %ld of other "
			"threads in %s", what, worker, rounds, rest, path);
	free(out);
}

/* One recording of the sleepers' target in mode (--native=all, see
 * record(), or --blocking):
 * the sleepers must not be stopped once their state is known, and the
 * worker's stacks must read as native_burn.py's code calls them. */
static void sleepers_run(struct native_test *nt, struct target *t, const char *mode,
			 const pid_t *tids, int n)
{
	static const char *const opts[] = { "-r", SLEEPER_RATE, "-d", "1", "-f", "collapsed",
					     NULL };
	char what[64], path[PATH_MAX + 64], levels[8], merge_arg[24], gap_arg[24], late_arg[24];
	long before[MAX_SLEEPERS], most = 0, stacks, merge, rounds, late;
	struct run r;

	snprintf(what, sizeof(what), "sleepers %s", mode);
	for (int i = 0; i < n; i++)
		before[i] = voluntary_switches(t->py_pid, tids[i]);
	if (record_mode(nt, what, t, mode, opts, "sleepers.txt", path, sizeof(path), &r) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		long d = voluntary_switches(t->py_pid, tids[i]) - before[i];

		if (before[i] < 0 || d > MAX_SLEEPER_SWITCHES || d < 0)
			msg_add(&nt->failures, "%s: sleeper %d: %ld voluntary switches while "
				"recorded (was %ld): it was stopped", what, (int)tids[i], d,
				before[i]);
		most = d > most ? d : most;
	}
	summary_counts(r.err, &stacks, &merge);
	rounds = summary_rounds(r.err);
	late = summary_late(r.err);
	printf("native: %s: %s: %ld stacks in %ld rounds (%ld late samples), a sleeper switched "
	       "at most %ld times (%d sleepers)\n", nt->ti->label, what, stacks, rounds, late,
	       most, n);
	if (rounds < MIN_SLEEPER_ROUNDS || stacks < MIN_WORKER_SHARE * rounds)
		msg_add(&nt->failures, "%s: %ld stacks in %ld rounds: %.2000s", what, stacks,
			rounds, r.err);
	if (strncmp(mode, "--native", 8)) {
		check_worker(nt, what, path, atoi(SLEEPERS) + 1, rounds);
		goto out;
	}
	snprintf(levels, sizeof(levels), "%d", LEVELS);
	snprintf(merge_arg, sizeof(merge_arg), "%ld", merge);
	snprintf(gap_arg, sizeof(gap_arg), "%ld", summary_count(r.err, " stacks with a native gap"));
	snprintf(late_arg, sizeof(late_arg), "%ld", late);
	verify(nt, what, (char *[]){ "record-burn", path, levels, merge_arg, gap_arg, late_arg,
				     NULL });
out:
	run_free(&r);
}

/* One thread spinning through the library's levels beside SLEEPERS that
 * never wake: see MAX_SLEEPER_SWITCHES. */
static void test_sleepers(struct native_test *nt)
{
	char script[PATH_MAX], why[512], levels[8];
	pid_t tids[MAX_SLEEPERS];
	struct target t;
	int n;

	snprintf(levels, sizeof(levels), "%d", LEVELS);
	test_interp_script(nt->ti, "tests/targets/native_burn.py", script, sizeof(script));
	if (target_start(&t, nt->ti, why, sizeof(why), script, nt->b.mode, nt->b.dir_inside,
			 levels, "1", "0", "0", SLEEPERS, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "sleepers: native_burn.py: %s", why);
		goto out;
	}
	n = read_sleepers(&t, tids, MAX_SLEEPERS);
	if (!n && nt->ti->minor >= 8)
		msg_add(&nt->failures, "sleepers: no sleepers' ids in truth.json");
	if (!n)
		msg_add(&nt->notes, "sleepers: no native thread ids (3.7): only the stacks "
			"checked\n");
	sleepers_run(nt, &t, "--native=all", tids, n);
	sleepers_run(nt, &t, "--blocking", tids, n);
out:
	if (t.pid > 0)
		target_stop(&t);
}

/* The flame graph of a short recording: C frames in their own colours.
 * Long enough for a few hundred samples even when the first ones wait for
 * a large compressed debug file (Debian's python3.15 with python3.15-dbg
 * installed: about a second to open). */
static void test_flame(struct native_test *nt)
{
	static const char *const opts[] = { "-r", "200", "-d", "2", NULL };
	char path[PATH_MAX + 64];
	struct target t;
	struct run r;

	if (start_burn(nt, "flame", &t) < 0)
		return;
	if (record(nt, "flame", &t, opts, "burn.svg", path, sizeof(path), &r) == 0)
		verify(nt, "flame", (char *[]){ "flame", path, NULL });
	run_free(&r);
	target_stop(&t);
}

/* The C++ park, a template, in native_stack.py descend at rest: the flame
 * graph, speedscope and pprof, and the flame graph with --full-names,
 * judged by native_verify.py names. */
static void test_names(struct native_test *nt)
{
	static const char *const opts[] = { "--idle", "-r", "100", "-d", "0.5", NULL };
	static const char *const full[] = { "--idle", "-r", "100", "-d", "0.5", "--full-names",
					    NULL };
	static const char *const files[] = { "names.svg", "names.speedscope.json", "names.pb.gz",
					     "names-full.svg" };
	char paths[4][PATH_MAX + 64], levels[8];
	struct target t;
	struct run r;
	int ok = 0;

	snprintf(levels, sizeof(levels), "%d", LEVELS);
	if (start_stack(nt, "names", &t, nt->b.mode, nt->b.dir_inside, levels) < 0)
		return;
	for (int i = 0; i < 4 && ok == i; i++) {
		ok += record_mode(nt, "names", &t, "--native", i < 3 ? opts : full, files[i],
				  paths[i], sizeof(paths[i]), &r) == 0;
		run_free(&r);
	}
	if (ok == 4)
		verify(nt, "names", (char *[]){ "names", paths[0], paths[1], paths[2], paths[3],
						NULL });
	target_stop(&t);
}

/* top --native with stdout a pipe: plain snapshots, until SIGINT. */
static void test_top(struct native_test *nt)
{
	char pid[16], how[96];
	struct target t;
	struct run r;
	char *argv[] = { (char *)pystrobe_path(), "top", "--native", "-d", "0.5", "--pid", pid,
			 NULL };

	if (start_burn(nt, "top", &t) < 0)
		return;
	snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
	if (run_cmd_signal(&r, RUN_TIMEOUT_MS, TOP_RUN_MS, SIGINT, argv) < 0) {
		msg_add(&nt->failures, "top: cannot run pystrobe");
		goto out;
	}
	check_after(nt, "top", t.py_pid);
	/* The snapshot's 20 rows: the spin's own time is most of it. */
	if (run_exit(&r) != 0 || !strstr(r.out, "  strobe_spin (strobe_ext.c:") ||
	    !strstr(r.out, "  py_work (native_burn.py:"))
		msg_add(&nt->failures, "top: pystrobe %s, no strobe_spin and py_work rows:"
			"\n%.3000s%.500s", run_describe(&r, how, sizeof(how)), r.out, r.err);
	run_free(&r);
out:
	target_stop(&t);
}

static double json_num(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = json ? strstr(json, k) : NULL;
	return p ? strtod(p + strlen(k), NULL) : -1;
}

/* The median pause of record --native, started with SIGCHLD ignored (bash's
 * trap '' survives exec) or not; -1 (a failure said) when it does not run
 * well. */
static long median_pause(struct native_test *nt, struct target *t, bool ignored)
{
	char pid[16], out[PATH_MAX + 16], how[96];
	const char *what = ignored ? "SIGCHLD ignored" : "SIGCHLD handled", *median;
	struct run r;
	long us;
	char *argv[] = { "bash", "-c", ignored ? "trap '' CHLD; exec \"$0\" \"$@\"" :
			 "exec \"$0\" \"$@\"", (char *)pystrobe_path(),
			 "record", "--native", "-r", "20", "-d", "1", "-f", "collapsed", "-o", out,
			 "--pid", pid, NULL };

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(out, sizeof(out), "%s/sigchld.txt", t->dir);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&nt->failures, "%s: cannot run pystrobe", what);
		return -1;
	}
	check_after(nt, what, t->py_pid);
	median = strstr(r.err, "(median ");
	us = median ? strtol(median + 8, NULL, 10) : -1;
	if (run_exit(&r) != 0 || us < 0) {
		msg_add(&nt->failures, "%s: pystrobe %s, median pause %ld us: %.2000s", what,
			run_describe(&r, how, sizeof(how)), us, r.err);
		us = -1;
	}
	run_free(&r);
	return us;
}

/* record --native started with SIGCHLD ignored: pystrobe must still see
 * its tracees stop at once, not wait out its 200 ms stop timeout in every
 * pause.  Held to the same recording with SIGCHLD handled, just before:
 * what the machine's load makes a pause. */
static void test_sigchld_ignored(struct native_test *nt, struct target *t)
{
	long handled = median_pause(nt, t, false), ignored = median_pause(nt, t, true);

	if (handled < 0 || ignored < 0)
		return;
	if (ignored > handled + MAX_PAUSE_EXTRA_US)
		msg_add(&nt->failures, "SIGCHLD ignored: median pause %ld us, %ld us with it "
			"handled", ignored, handled);
	else
		printf("native: %s: SIGCHLD ignored: median pause %ld us (handled: %ld us)\n",
		       nt->ti->label, ignored, handled);
}

/* The handler calls of a window of native_burn.py's SIGALRMs (file, in the
 * target's directory): 0, or -1 with a failure said. */
struct alarms {
	double count, expected, max_gap, median_gap;
};

static int read_alarms(struct native_test *nt, struct target *t, const char *file,
		       struct alarms *a)
{
	char path[PATH_MAX + 64], why[512];
	char *json;

	if (target_wait_file(t, file, TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "signals: no %s: %s", file, why);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	json = slurp(path);
	a->count = json_num(json, "count");
	a->expected = json_num(json, "expected");
	a->max_gap = json_num(json, "max_gap");
	a->median_gap = json_num(json, "median_gap");
	free(json);
	return 0;
}

static void test_signals(struct native_test *nt)
{
	static const char *const opts[] = { "--idle", "-r", SIGNAL_RATE, "-d", "2.5", "-f",
					     "collapsed", NULL };
	char script[PATH_MAX], why[512], levels[8], path[PATH_MAX + 64];
	struct alarms alone, rec;
	struct target t;
	struct run r;

	snprintf(levels, sizeof(levels), "%d", LEVELS);
	test_interp_script(nt->ti, "tests/targets/native_burn.py", script, sizeof(script));
	if (target_start(&t, nt->ti, why, sizeof(why), script, nt->b.mode, nt->b.dir_inside,
			 levels, BURN_THREADS, "0", ALARM_MS, NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		msg_add(&nt->failures, "signals: native_burn.py: %s", why);
		goto out;
	}
	/* Its first window alone, the second recorded. */
	if (read_alarms(nt, &t, "alarms0.json", &alone) < 0)
		goto out;
	record(nt, "signals", &t, opts, "signals.txt", path, sizeof(path), &r);
	run_free(&r);
	if (read_alarms(nt, &t, "alarms.json", &rec) < 0)
		goto out;
	printf("native: %s: signals: %.0f of %.0f SIGALRM handled, gaps median %.1f ms, "
	       "max %.1f ms; alone %.0f, median %.1f ms\n", nt->ti->label, rec.count,
	       rec.expected, rec.median_gap * 1000, rec.max_gap * 1000, alone.count,
	       alone.median_gap * 1000);
	if (rec.count < MIN_ALARM_SHARE * alone.count ||
	    rec.median_gap > alone.median_gap + MAX_GAP_EXTRA)
		msg_add(&nt->failures, "signals: the target's SIGALRM handler ran %.0f times, "
			"median gap %.1f ms; alone %.0f times, median gap %.1f ms", rec.count,
			rec.median_gap * 1000, alone.count, alone.median_gap * 1000);
	test_sigchld_ignored(nt, &t);
out:
	if (t.pid > 0)
		target_stop(&t);
}

static void report(struct native_test *nt)
{
	if (nt->notes)
		printf("native: %s: NOTE %s", nt->ti->label, nt->notes);
	if (!nt->failures) {
		printf("native: %s: OK (%s)\n", nt->ti->label, nt->b.mode);
		return;
	}
	printf("native: %s: FAILED\n%s", nt->ti->label, nt->failures);
	fflush(stdout);
	ck_abort_msg("%s: %.1500s", nt->ti->label, nt->failures);
}

/* --- stripped code, and its names from debuginfod ------------------------- */

/* Rounds per second from record's summary ("N samples from M rounds in
 * T s"), or -1. */
static double summary_hz(const char *err)
{
	unsigned long long n, rounds;
	const char *p = record_summary(err);
	double secs;

	if (!p || sscanf(p, "pystrobe: %llu samples from %llu rounds in %lf s", &n, &rounds,
			 &secs) != 3 || secs <= 0)
		return -1;
	return rounds / secs;
}

/* record --native of native_burn.py with the stripped library, under the
 * environment as the caller set it, into T.DIR/file (path); *hz: its
 * rounds per second.  0 when it ran; run_free(r) after, either way. */
static int burn_stripped(struct native_test *nt, const char *what, const char *file,
			 char *path, size_t size, struct run *r, double *hz)
{
	static const char *const opts[] = { "-r", "200", "-d", RECORD_SECONDS, "-f",
					     "collapsed", NULL };
	struct target t;
	int rc;

	memset(r, 0, sizeof(*r));
	if (start_burn_in(nt, what, &t, nt->b.stripped_inside) < 0)
		return -1;
	rc = record(nt, what, &t, opts, file, path, size, r);
	/* The file outlives the target's directory: keep it beside the build. */
	if (rc == 0) {
		char keep[PATH_MAX * 2 + 64];
		char *text = slurp(path);

		snprintf(keep, sizeof(keep), "%s/%s", nt->b.dir, file);
		if (!text || write_file(keep, text, strlen(text)) < 0)
			rc = -1;
		free(text);
		snprintf(path, size, "%s", keep);
	}
	*hz = rc == 0 ? summary_hz(r->err) : -1;
	target_stop(&t);
	return rc;
}

/* Every function of the stripped library is one frame, at the offset of
 * its start in the unstripped copy; the rounds per second in *hz. */
static void test_record_stripped(struct native_test *nt, double *hz)
{
	char path[PATH_MAX * 2 + 64], lib[PATH_MAX * 2];
	struct run r;

	snprintf(lib, sizeof(lib), "%s/%s", nt->b.dir, nt->b.lib);
	if (burn_stripped(nt, "record stripped", "stripped.txt", path, sizeof(path), &r, hz) == 0)
		verify(nt, "record stripped", (char *[]){ "record-stripped", path,
							  (char *)nt->b.lib, lib, NULL });
	run_free(&r);
}

/* A TCP port on 127.0.0.1 that was free a moment ago, or one listening
 * (never accepting: a server that does not answer) when *listener is
 * not NULL. */
static int local_port(int *listener)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0 &&
	    (!listener || listen(fd, 16) == 0))
		port = ntohs(a.sin_port);
	if (listener && port > 0)
		*listener = fd;
	else if (fd >= 0)
		close(fd);
	return port;
}

/* The line of err that starts with head and names lib ("lib (why)" or
 * "lib" in its list), as "%.*s" wants it: its length in *len; NULL if
 * none. */
static const char *line_naming(const char *err, const char *head, const char *lib, int *len)
{
	const char *p = strstr(err, head);
	char with[PATH_MAX];

	if (!p)
		return NULL;
	*len = (int)strcspn(p, "\n");
	snprintf(with, sizeof(with), " %s", lib);
	for (const char *q = strstr(p, with); q; q = strstr(q + 1, with))
		if (q < p + *len && strchr(" ,(:\n", q[strlen(with)]))
			return p;
	return NULL;
}

/* Point pystrobe at the server on port, with a cache of its own. */
static void use_server(struct native_test *nt, int port, const char *cache)
{
	char url[64], dir[PATH_MAX * 2];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(dir, sizeof(dir), "%s/%s", nt->b.dir, cache);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
}

/* Debian's debuginfod serving the library's debug file (objcopy
 * --only-keep-debug) from B.DIR/srv on port: its pid once a client gets
 * the file (debuginfod-find, as pystrobe would), else -1. */
static pid_t start_server(struct native_test *nt, int port)
{
	char srv[PATH_MAX + 16], dbg[PATH_MAX * 2], lib[PATH_MAX * 2], stripped[PATH_MAX * 2];
	char db[PATH_MAX + 32], portarg[16];
	char *keep[] = { "objcopy", "--only-keep-debug", lib, dbg, NULL };
	char *find[] = { "debuginfod-find", "debuginfo", stripped, NULL };
	pid_t pid;

	snprintf(srv, sizeof(srv), "%s/srv", nt->b.dir);
	snprintf(dbg, sizeof(dbg), "%s/%s.debug", srv, nt->b.lib);
	snprintf(lib, sizeof(lib), "%s/%s", nt->b.dir, nt->b.lib);
	snprintf(stripped, sizeof(stripped), "%s/%s", nt->b.stripped, nt->b.lib);
	snprintf(db, sizeof(db), "%s/srv.sqlite", nt->b.dir);
	snprintf(portarg, sizeof(portarg), "%d", port);
	mkdir(srv, 0755);
	if (run_step(nt, "debuginfod's debug file", keep) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execlp("debuginfod", "debuginfod", "-p", portarg, "-d", db, "-F", srv, NULL);
		_exit(127);
	}
	if (pid < 0) {
		msg_add(&nt->failures, "debuginfod: fork: %s", strerror(errno));
		return -1;
	}
	/* It scans srv when it starts: until then it has nothing.  Each try
	 * with an empty cache: the client remembers a miss for ten minutes. */
	use_server(nt, port, "cache-probe");
	snprintf(db, sizeof(db), "%s/cache-probe", nt->b.dir);
	for (int i = 0; i < SERVER_WAIT_MS / 250; i++) {
		struct run r = { 0 };
		int ok;

		rm_rf(db);
		ok = run_cmd(&r, RUN_TIMEOUT_MS, find) == 0 && run_exit(&r) == 0;

		run_free(&r);
		if (ok)
			return pid;
		sleep_ms(250);
	}
	msg_add(&nt->failures, "debuginfod on port %d did not serve %s in %d ms", port, dbg,
		SERVER_WAIT_MS);
	kill_reap(pid);
	return -1;
}

/* record of the stripped library with the server in DEBUGINFOD_URLS:
 * named, its functions; said, the fetch.  hz: its rounds per second. */
static void debuginfod_up(struct native_test *nt, int port, double *hz)
{
	static const char want[] = "pystrobe: debuginfod: fetched the debug files of";
	char path[PATH_MAX * 2 + 64];
	struct run r;
	int len;

	use_server(nt, port, "cache-up");
	if (burn_stripped(nt, "debuginfod, up", "up.txt", path, sizeof(path), &r, hz) == 0) {
		if (!line_naming(r.err, want, nt->b.lib, &len))
			msg_add(&nt->failures, "debuginfod, up: no \"%s %s\": %.2000s", want,
				nt->b.lib, r.err);
		verify(nt, "debuginfod, up", (char *[]){ "record-named", path, (char *)nt->b.lib,
							 NULL });
	}
	run_free(&r);
}

/* The longest symbol lookup of the sampling thread, ms, from the
 * PYSTROBE_SYMSTATS line, or -1. */
static double longest_lookup(const char *err)
{
	const char *p = strstr(err, "symstats: process lookups ");
	unsigned long long n;
	double total, longest;

	if (!p || sscanf(p, "symstats: process lookups %llu, total %lf ms, longest %lf ms", &n,
			 &total, &longest) != 3)
		return -1;
	return longest;
}

/* The same with no server answering there (what): as stripped, a line
 * that says why names are missing, and no lookup of the sampling thread
 * as long as the client waits for a server that does not answer
 * (DEBUGINFOD_TIMEOUT). */
static void debuginfod_missing(struct native_test *nt, const char *what, const char *file,
			       double *hz)
{
	static const char want[] = "pystrobe: debuginfod: no debug file for";
	char path[PATH_MAX * 2 + 64], lib[PATH_MAX * 2];
	double longest;
	struct run r;
	int len;

	snprintf(lib, sizeof(lib), "%s/%s", nt->b.dir, nt->b.lib);
	if (burn_stripped(nt, what, file, path, sizeof(path), &r, hz) == 0) {
		const char *line = line_naming(r.err, want, nt->b.lib, &len);

		if (!line)
			msg_add(&nt->failures, "%s: no \"%s %s (...)\": %.2000s", what, want,
				nt->b.lib, r.err);
		else
			printf("native: %s: %s: %.*s\n", nt->ti->label, what, len, line);
		verify(nt, what, (char *[]){ "record-stripped", path, (char *)nt->b.lib, lib,
					     NULL });
		longest = longest_lookup(r.err);
		if (longest < 0 || longest >= CLIENT_TIMEOUT_S * 1000)
			msg_add(&nt->failures, "%s: the sampling thread's longest symbol lookup took "
				"%.1f ms: %.2000s", what, longest, r.err);
	}
	run_free(&r);
}

/* debuginfod on localhost: names the stripped library's functions; down
 * (refusing) or not answering, pystrobe says why names are missing, and
 * its sampling thread never waits on the client (no lookup as long as the
 * client's timeout for the server that does not answer).  The rates, in
 * rounds per second, are printed against hz0, the same recording with no
 * server named just before; not judged: another job on the machine moves
 * them more than a fetch in the background does. */
static void test_debuginfod(struct native_test *nt, double hz0)
{
	double up = -1, down = -1, mute = -1;
	int port, listener = -1;
	pid_t server;

	if (system("command -v debuginfod >/dev/null && command -v debuginfod-find >/dev/null") != 0) {
		test_skip("native: %s: no debuginfod (apt-get install debuginfod): "
			  "debuginfod not tried", nt->ti->label);
		return;
	}
	test_used("debuginfod");
	setenv("PYSTROBE_SYMSTATS", "1", 1);
	port = local_port(NULL);
	server = port > 0 ? start_server(nt, port) : -1;
	if (server > 0) {
		debuginfod_up(nt, port, &up);
		kill_reap(server);
		use_server(nt, port, "cache-down");
		debuginfod_missing(nt, "debuginfod, down", "down.txt", &down);
	}
	port = local_port(&listener);
	if (port > 0) {
		use_server(nt, port, "cache-mute");
		setenv("DEBUGINFOD_TIMEOUT", CLIENT_TIMEOUT, 1);
		debuginfod_missing(nt, "debuginfod, not answering", "mute.txt", &mute);
		unsetenv("DEBUGINFOD_TIMEOUT");
		close(listener);
	}
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	unsetenv("PYSTROBE_SYMSTATS");
	printf("native: %s: rounds per second of 200 asked: no server named %.1f, served %.1f, "
	       "down %.1f, not answering %.1f\n", nt->ti->label, hz0, up, down, mute);
}

/* The test modules need a C++ compiler (tests/install-deps.sh installs g++). */
static bool have_cxx(const char *label)
{
	if (system("g++ --version >/dev/null 2>&1") == 0) {
		test_used("g++");
		return true;
	}
	test_skip("native: no g++ (apt-get install g++): not run on %s", label);
	return false;
}

START_TEST(test_native)
{
	struct native_test nt = { .ti = &interps[_i] };

	if (!have_cxx(nt.ti->label))
		return;
	if (build(&nt) == 0) {
		test_qsort(&nt);
		test_descend(&nt, LIB_PLAIN);
		test_descend(&nt, LIB_STRIPPED);
		test_descend(&nt, LIB_DEBUGLINK);
		test_descend(&nt, LIB_BADCRC);
		test_agree(&nt);
		test_record_qsort(&nt);
		test_record_burn(&nt);
		test_record_jit(&nt);
		test_sleepers(&nt);
		test_flame(&nt);
		test_names(&nt);
		test_top(&nt);
		test_signals(&nt);
	}
	rm_build(&nt.b);
	report(&nt);
	free(nt.failures);
	free(nt.notes);
}
END_TEST

/* A test of its own (the suite's time limit is per test): stripped code
 * by function, and names from debuginfod. */
START_TEST(test_stripped_names)
{
	struct native_test nt = { .ti = &interps[_i] };
	double hz0 = -1;

	if (!have_cxx(nt.ti->label))
		return;
	if (build(&nt) == 0) {
		test_record_stripped(&nt, &hz0);
		/* The helper that reads a foreign root's files as root does
		 * not fetch (symbolize.h). */
		if (nt.ti->root[0])
			msg_add(&nt.notes, "debuginfod: not tried for a target in another root "
				"(its files are read by the unprivileged helper, which does not "
				"fetch)");
		else
			test_debuginfod(&nt, hz0);
	}
	rm_build(&nt.b);
	report(&nt);
	free(nt.failures);
	free(nt.notes);
}
END_TEST

/* --- cost ----------------------------------------------------------------- */

struct perf {
	int nframes, nmerged;
	double first_us, warm_us, memo_us, merge_us, sym_first_us, sym_warm_us;
	double warm_cpu_us;
	double snap_us;		/* what a sampler's pause pays per thread */
	size_t snap_len;
	bool memo_same;		/* the memo gave what a full unwind gives */
	unsigned long reused;
};

/* Everything a sampler would do per thread, in a stop of our own. */
static int measure(pid_t pid, struct perf *pf, char *err, size_t errlen)
{
	static struct native_pc pcs[NATIVE_MAX_DEPTH], again[NATIVE_MAX_DEPTH];
	struct native_stats st;
	struct mem *proc = mem_proc_open(pid), *m = mem_cache_new(proc);
	struct native_unwinder *u = native_open(pid);
	struct native_snap snap = { 0 };
	struct symbolizer *s = NULL;
	struct merge_native nat[NATIVE_MAX_DEPTH];
	struct merged_ref refs[NATIVE_MAX_DEPTH + PYSTACK_MAX_DEPTH + 1];
	struct py_tstate ts[16];
	struct pyinterp pi;
	struct pause p;
	bool truncated;
	uint64_t gil;
	double t0, c0;
	struct locate_src src;
	int n = -1, nts, main = -1, rc;

	locate_src_live(&src, pid);
	rc = locate_python(&src, proc, &pi, err, errlen);
	locate_src_release(&src);
	if (rc < 0)
		goto out_nopi;
	/* The bound of a one-time read (dump --native), not of a sample's: a
	 * main thread late to its stop under a sanitizer, or on a busy
	 * machine, would leave nothing to measure. */
	if (pause_process_within(pid, &p, 1000000000ull) < 0) {
		snprintf(err, errlen, "cannot pause the target");
		goto out;
	}
	if (!pause_holds(&p, pid)) {
		snprintf(err, errlen, "the main thread did not stop within 1 s");
		goto release;
	}
	t0 = now_us();
	native_begin(u);
	n = native_unwind(u, pid, pcs, NATIVE_MAX_DEPTH, &truncated);
	pf->first_us = now_us() - t0;
	if (n <= 0) {
		snprintf(err, errlen, "the stopped main thread unwound to %d frames", n);
		goto release;
	}
	/* libunwind itself, its rule cache warm. */
	native_set_memo(u, false);
	t0 = now_us();
	c0 = cpu_us();
	for (int i = 0; i < PERF_REPS; i++) {
		native_begin(u);
		native_unwind(u, pid, pcs, NATIVE_MAX_DEPTH, &truncated);
	}
	pf->warm_us = (now_us() - t0) / PERF_REPS;
	pf->warm_cpu_us = (cpu_us() - c0) / PERF_REPS;
	pf->nframes = n;
	/* A thread that has not moved: the memo answers. */
	native_set_memo(u, true);
	t0 = now_us();
	for (int i = 0; i < PERF_REPS; i++) {
		native_begin(u);
		native_unwind(u, pid, again, NATIVE_MAX_DEPTH, &truncated);
	}
	pf->memo_us = (now_us() - t0) / PERF_REPS;
	/* What the sampler does while the target is stopped: registers and
	 * stack copied, the unwind left for after the release. */
	t0 = now_us();
	for (int i = 0; i < PERF_REPS; i++)
		native_snap_take(u, pid, &snap);
	pf->snap_us = (now_us() - t0) / PERF_REPS;
	pf->snap_len = snap.len;
	native_snap_free(&snap);
	native_get_stats(u, &st);
	pf->reused = st.reused;
	pf->memo_same = native_unwind(u, pid, again, NATIVE_MAX_DEPTH, &truncated) == n &&
			!memcmp(again, pcs, n * sizeof(*pcs));

	s = symbolizer_new(pid, 0);
	t0 = now_us();
	for (int i = 0; i < n; i++)
		nat[i].cls = merge_classify(symbolize(s, pcs[i].pc, pcs[i].exact), pi.path);
	pf->sym_first_us = now_us() - t0;

	/* Per sample: Python frames grouped by eval call, names from the
	 * symbolizer's cache, the merge. */
	mem_cache_reset(m);
	nts = pystack_tstates(m, &pi, ts, 16, &gil, err, errlen);
	for (int i = 0; i < nts; i++)
		if (ts[i].tid == pid || nts == 1)
			main = i;
	t0 = now_us();
	for (int i = 0; i < PERF_REPS && main >= 0; i++) {
		struct py_group *groups;
		int ngroups, npy;

		mem_cache_reset(m);
		for (int k = 0; k < n; k++) {
			nat[k].cls = merge_classify(symbolize(s, pcs[k].pc, pcs[k].exact), pi.path);
			nat[k].sp = pcs[k].sp;
		}
		if (merge_py_groups(m, &pi.layout, &ts[main], 0, &groups, &ngroups, &npy) == 0)
			pf->nmerged = merge_stacks(nat, n, false, groups, ngroups, npy, refs, err,
						   errlen);
		free(groups);
	}
	pf->merge_us = (now_us() - t0) / PERF_REPS;
	t0 = now_us();
	for (int i = 0; i < n; i++)
		symbolize(s, pcs[i].pc, pcs[i].exact);
	pf->sym_warm_us = now_us() - t0;
release:
	pause_release(&p);
out:
	pyinterp_free(&pi);
out_nopi:
	symbolizer_free(s);
	native_close(u);
	mem_close(m);
	mem_close(proc);
	return n > 0 ? 0 : -1;
}

START_TEST(test_cost)
{
	struct native_test nt = { .ti = test_interp_pick(interps, ninterps, 12) };
	char levels[8], err[256];
	struct perf pf = { 0 };
	struct target t;
	int rc = -1;

	ck_assert_msg(nt.ti, "no interpreter to measure on");
	if (!have_cxx(nt.ti->label))
		return;
	snprintf(levels, sizeof(levels), "%d", PERF_LEVELS);
	if (build(&nt) == 0 &&
	    start_stack(&nt, "cost", &t, nt.b.mode, nt.b.dir_inside, levels) == 0) {
		rc = measure(t.py_pid, &pf, err, sizeof(err));
		if (rc < 0)
			msg_add(&nt.failures, "cost: %s", err);
		check_after(&nt, "cost", t.py_pid);
		target_stop(&t);
	}
	rm_build(&nt.b);
	if (rc == 0) {
		printf("native: cost (%s, %s): %d native frames, %d merged\n"
		       "native: cost: unwind, first: %.0f us; warm (rule cache hot, page cache "
		       "emptied per sample): %.1f us per thread (%.1f us of CPU) = %.2f us per "
		       "frame; thread "
		       "that has not moved (memo, %lu of %d reused): %.1f us\n"
		       "native: cost: in the pause (registers + %zu bytes of stack copied, "
		       "unwound after release): %.1f us per thread\n"
		       "native: cost: symbolize %d frames, first: %.1f ms; cached: %.1f us; "
		       "group Python frames + classify + merge: %.1f us per thread\n",
		       nt.ti->label, nt.b.mode, pf.nframes, pf.nmerged, pf.first_us, pf.warm_us,
		       pf.warm_cpu_us, pf.warm_us / pf.nframes, pf.reused, PERF_REPS, pf.memo_us, pf.snap_len,
		       pf.snap_us, pf.nframes, pf.sym_first_us / 1000, pf.sym_warm_us,
		       pf.merge_us);
		if (!pf.memo_same)
			msg_add(&nt.failures, "cost: the memo's unwind differs from a full one");
		if (pf.reused < PERF_REPS - 2)
			msg_add(&nt.failures, "cost: a thread that does not move was unwound "
				"again %lu times of %d", PERF_REPS - pf.reused, PERF_REPS);
		if (pf.nmerged <= 0)
			msg_add(&nt.failures, "cost: the measured stack did not merge");
		if (pf.warm_cpu_us > PERF_LIMIT_US)
			msg_add(&nt.failures, "cost: a warm unwind took %.0f us of CPU (limit %.0f): "
				"is libunwind's cache off?", pf.warm_cpu_us, PERF_LIMIT_US);
	}
	if (nt.failures) {
		printf("native: cost: FAILED\n%s", nt.failures);
		fflush(stdout);
		ck_abort_msg("%.1500s", nt.failures);
	}
	free(nt.failures);
	free(nt.notes);
}
END_TEST

/* unwind.c answers libunwind's sigprocmask calls itself while it unwinds;
 * every other caller must still get the kernel's. */
/* --- start-up frames ------------------------------------------------------ */

/* record --native of parked.py's idle threads: no stack starts with the
 * interpreter's start-up (_start ... Py_RunMain, clone ... thread_run);
 * --native=all keeps it (__libc_start_main, exported by every libc). */
START_TEST(test_startup_hidden)
{
	const struct test_interp *ti = &interps[_i];
	static const char *const startup[] = { "__libc_start_main", "Py_BytesMain", "Py_RunMain",
						"start_thread", "thread_run" };
	char why[512], pid[16], how[96];
	struct target t;
	struct run r;

	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-q", "--native", "--idle", "-d", "0.5", "-f",
				      "collapsed", "-o", "-", "--pid", pid, NULL), 0);
	ck_assert_msg(run_exit(&r) == 0 && strstr(r.out, "main_park"), "%s: record --native: %s: %.500s",
		      ti->label, run_describe(&r, how, sizeof(how)), r.err);
	for (size_t i = 0; i < sizeof(startup) / sizeof(*startup); i++)
		ck_assert_msg(!strstr(r.out, startup[i]), "%s: record --native shows %s:\n%.2000s",
			      ti->label, startup[i], r.out);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-q", "--native=all", "--idle", "-d", "0.5",
				      "-f", "collapsed", "-o", "-", "--pid", pid, NULL), 0);
	target_stop(&t);
	ck_assert_msg(run_exit(&r) == 0 && strstr(r.out, "__libc_start_main"),
		      "%s: record --native=all: %s, no __libc_start_main in:\n%.2000s", ti->label,
		      run_describe(&r, how, sizeof(how)), r.out);
	run_free(&r);
	printf("native: %s: start-up frames hidden, and kept with --native=all\n", ti->label);
}
END_TEST

START_TEST(test_sigmask_passes_through)
{
	sigset_t set, now;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
	ck_assert_msg(sigismember(&now, SIGUSR2), "sigprocmask did not block SIGUSR2");
	ck_assert_int_eq(sigprocmask(SIG_UNBLOCK, &set, &now), 0);
	ck_assert(sigismember(&now, SIGUSR2));
	ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
	ck_assert(!sigismember(&now, SIGUSR2));
	ck_assert_int_eq(sigprocmask(99, &set, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("native");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);

	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 600);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_native, 0, ninterps);
	tcase_add_loop_test(tc, test_startup_hidden, 0, ninterps);
	tcase_add_test(tc, test_cost);
	tcase_add_test(tc, test_sigmask_passes_through);
	suite_add_tcase(s, tc);

	/* Apart (CK_RUN_CASE=stripped runs it alone). */
	tc = tcase_create("stripped");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_stripped_names, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
