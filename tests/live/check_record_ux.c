/* What `pystrobe record` says and leaves behind, as a new user meets it:
 * where the profile goes, what is recorded when the command is a launcher,
 * how counts are named, how a launched run ends, the text summary.
 *
 *   output    -o in a directory that does not exist, naming a directory,
 *             in /proc (where no file can be made), or ending as a file of
 *             another kind (x.png) is refused before the command runs (it
 *             leaves no mark), with exit 2 and one line naming the path
 *             given; with -o - the launched program's output goes to
 *             stderr and stdout holds the collapsed profile alone, which
 *             has the program's function; the default name,
 *             in a current directory nobody can write (/proc), goes to
 *             $TMPDIR, and a profile that cannot be written at the end
 *             (/dev/full) is written to $TMPDIR instead, exit 1.
 *   counts    the summary's "N samples" is what the file holds: the sum of
 *             the collapsed counts, the flame graph's "N samples"; a
 *             sleeping process recorded gives 0 samples and the summary
 *             says to add --idle; a program whose work is in a subprocess
 *             it waits for is told to add -s.
 *   launcher  `sh -c 'python ...; true'` (sh forks the Python) is followed
 *             into its Python child: its function is in the profile, and
 *             stderr says so in a line, and so is `record --pid` of such
 *             a sh; `sh -c 'exit 0'` starts no Python: no file, a
 *             non-zero exit.
 *   ending    in a tmux pane, a launched program that prints: the status
 *             line says "Ctrl-C stops and writes FILE"; after Ctrl-C (which
 *             reaches the program alone) its traceback starts a line of
 *             its own, the status line is gone, the last line says it
 *             ended by SIGINT, and the file is there.  With -d (no
 *             terminal) the program's KeyboardInterrupt comes before the
 *             summary, and the last line says it ended by SIGINT after -d,
 *             with no word of waiting; a program that ignores SIGINT is
 *             said at once (before the summary) not to have exited, with
 *             SIGTERM and SIGKILL to come, and ends by SIGTERM.  In the
 *             pane, such a program (Ctrl-C reaches it alone, and does
 *             nothing) has the status line say "the program ignores
 *             Ctrl-C: kill -INT PID"; that kill ends the run as above.
 *   table     after the recording, a table of the functions by own and
 *             total share, the spinning function first; -q prints nothing.
 *
 * On one plain interpreter (a 3.12 first): none of this depends on the
 * Python.  Nothing here asserts a rate or a time.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpreters.h"
#include "suite.h"
#include "target.h"

static const struct test_interp *chosen[1];
static int nchosen;

/* Spins in spin_here() for a second of wall time, after writing
 * OUTDIR/ran. */
static const char spin_code[] =
	"import os, sys, time\n"
	"open(os.path.join(sys.argv[-1], 'ran'), 'w').close()\n"
	"def spin_here():\n"
	"    t = time.time()\n"
	"    while time.time() - t < 1.0:\n"
	"        pass\n"
	"spin_here()\n";

/* The same for a minute, for a recording to join. */
static const char spin_long_code[] =
	"import os, sys, time\n"
	"open(os.path.join(sys.argv[-1], 'ran'), 'w').close()\n"
	"def spin_here():\n"
	"    t = time.time()\n"
	"    while time.time() - t < 60:\n"
	"        pass\n"
	"spin_here()\n";

/* A fresh directory for one check; the caller rm_rf()s it. */
static void fresh_dir(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/pystrobe-ux-XXXXXX");
	ck_assert_msg(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static bool exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The name of the one file in dir that starts with prefix, or "". */
static void file_in(const char *dir, const char *prefix, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	out[0] = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			snprintf(out, size, "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
}

/* env TMPDIR=tmpdir sh -c 'cd CWD && exec "$@"' pystrobe record OPTS... --
 * python CODE dir: run in cwd (NULL: here). */
static void record_in(struct run *r, const char *cwd, const char *tmpdir, char *const *opts,
		      const char *code, const char *dir)
{
	struct argv_buf a = { .n = 0 };
	char tmp_env[PATH_MAX + 16];

	snprintf(tmp_env, sizeof(tmp_env), "TMPDIR=%s", tmpdir);
	arg(&a, "env");
	arg(&a, tmp_env);
	arg(&a, "sh");
	arg(&a, "-c");
	arg(&a, "cd \"$0\" && exec \"$@\"");
	arg(&a, cwd ? cwd : ".");
	arg(&a, pystrobe_path());
	arg(&a, "record");
	args(&a, opts);
	arg(&a, "--");
	arg_python(&a, chosen[0]);
	arg(&a, "-c");
	arg(&a, code);
	arg(&a, dir);
	ck_assert_int_eq(run_cmd(r, RUN_TIMEOUT_MS, a.v), 0);
}

static void assert_exit(const struct run *r, const char *what, int code)
{
	char how[96];

	ck_assert_msg(run_exit(r) == code, "%s: pystrobe %s, want exit %d; stderr: %.1500s",
		      what, run_describe(r, how, sizeof(how)), code, r->err);
}

/* --- output --------------------------------------------------------------- */

static void refused(const char *out, const char *what)
{
	char dir[64];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_in(&r, NULL, dir, (char *[]){ "-o", (char *)out, NULL }, spin_code, dir);
	assert_exit(&r, what, 2);
	ck_assert_msg(run_one_error_line(&r), "%s: not one line: %s", what, r.err);
	ck_assert_msg(strstr(r.err, out), "%s: the line does not name '%s': %s", what, out,
		      r.err);
	ck_assert_msg(!strstr(r.err, ".tmp."), "%s: names a temporary file: %s", what, r.err);
	ck_assert_msg(!exists_in(dir, "ran"), "%s: the command ran all the same", what);
	run_free(&r);
	rm_rf(dir);
}

START_TEST(test_output_refused)
{
	refused("/nonexistent/dir/x.svg", "-o in a missing directory");
	refused("/tmp", "-o naming a directory");
	refused("/proc/x.svg", "-o in /proc");
	refused("/tmp/pystrobe-ux-x.png", "-o of an image");
}
END_TEST

/* Recorded in cwd with opts, the profile must be in $TMPDIR under the
 * default name, said on stderr, and pystrobe exit with want. */
static void lands_in_tmpdir(const char *what, const char *cwd, char *const *opts, int want)
{
	char dir[64], found[PATH_MAX];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_in(&r, cwd, dir, opts, spin_code, dir);
	assert_exit(&r, what, want);
	file_in(dir, "pystrobe-", found, sizeof(found));
	ck_assert_msg(found[0], "%s: no profile in $TMPDIR %s; stderr: %s", what, dir, r.err);
	ck_assert_msg(strstr(r.err, found), "%s: stderr does not name %s: %s", what, found,
		      r.err);
	run_free(&r);
	rm_rf(dir);
}

/* cwd /proc: no file can be made there, even by root. */
START_TEST(test_output_default_tmpdir)
{
	lands_in_tmpdir("default name in /proc", "/proc", (char *[]){ NULL }, 0);
}
END_TEST

/* Writing fails at the end: the recording is not lost. */
START_TEST(test_output_fallback)
{
	lands_in_tmpdir("-o /dev/full", NULL, (char *[]){ "-o", "/dev/full", NULL }, 1);
}
END_TEST

/* Prints a line after each tenth of a second of spinning, ten times. */
static const char say_code[] =
	"import time\n"
	"def spin_here():\n"
	"    t = time.time()\n"
	"    while time.time() - t < 0.1:\n"
	"        pass\n"
	"for i in range(10):\n"
	"    spin_here()\n"
	"    print('the program says', i, flush=True)\n";

/* Whether every line of text is a collapsed stack: frames, a space, a
 * count. */
static bool all_collapsed(const char *text)
{
	const char *line = text;

	while (*line) {
		const char *nl = strchr(line, '\n'), *sp;

		if (!nl)
			return false;
		for (sp = nl; sp > line && sp[-1] >= '0' && sp[-1] <= '9'; sp--)
			;
		if (sp == nl || sp - line < 2 || sp[-1] != ' ')
			return false;
		line = nl + 1;
	}
	return true;
}

/* -o - with a launched program: stdout is the profile alone. */
START_TEST(test_output_stdout)
{
	char dir[64];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_in(&r, NULL, dir, (char *[]){ "-o", "-", "-f", "collapsed", NULL }, say_code, dir);
	assert_exit(&r, "-o -", 0);
	ck_assert_msg(r.out[0] && all_collapsed(r.out), "-o -: stdout is not collapsed stacks "
		      "alone: %.1000s", r.out);
	ck_assert_msg(strstr(r.out, "spin_here ("), "-o -: the program's function is not in "
		      "the profile: %.1000s", r.out);
	ck_assert_msg(strstr(r.err, "the program says 0\n") &&
		      strstr(r.err, "the program says 9\n"), "-o -: the program's output is "
		      "not on stderr: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* --- counts --------------------------------------------------------------- */

/* Sleeps forever once it has said it is up. */
static const char sleep_code[] =
	"import os, sys, time\n"
	"open(os.path.join(sys.argv[-1], 'ready'), 'w').close()\n"
	"time.sleep(3600)\n";

/* Waits for a subprocess that burns a second of CPU. */
static const char parent_code[] =
	"import subprocess, sys\n"
	"subprocess.run([sys.executable, '-c', 'import time\\n'\n"
	"                't = time.process_time()\\n'\n"
	"                'while time.process_time() - t < 1.0: pass\\n'], check=True)\n";

/* The summary's "N samples from", or -1. */
static long long summary_samples(const char *err)
{
	const char *p = record_summary(err);

	return p ? strtoll(p + strlen("pystrobe: "), NULL, 10) : -1;
}

static long long collapsed_total(const char *path)
{
	char *text = slurp(path), *line, *save = NULL;
	long long n = 0;

	ck_assert_msg(text, "no profile at %s", path);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		n += strtoll(strrchr(line, ' ') + 1, NULL, 10);
	free(text);
	return n;
}

/* The number before " samples" in the flame graph's subtitle. */
static long long svg_total(const char *path)
{
	char *text = slurp(path);
	const char *sub = text ? strstr(text, "<text id=\"subtitle\"") : NULL;
	const char *end = sub ? strstr(sub, " samples") : NULL;
	long long n = -1;

	while (end && end > sub && end[-1] >= '0' && end[-1] <= '9')
		end--;
	if (end)
		n = strtoll(end, NULL, 10);
	free(text);
	return n;
}

START_TEST(test_counts_one_vocabulary)
{
	const char *names[] = { "p.txt", "p.svg" };

	for (int i = 0; i < 2; i++) {
		char dir[64], out[128];
		long long said, held;
		struct run r;

		fresh_dir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/%s", dir, names[i]);
		record_in(&r, NULL, dir, (char *[]){ "-o", out, NULL }, spin_code, dir);
		assert_exit(&r, names[i], 0);
		said = summary_samples(r.err);
		held = i ? svg_total(out) : collapsed_total(out);
		ck_assert_msg(said > 0 && said == held, "%s: the summary says %lld samples, the "
			      "file %lld: %s", names[i], said, held, r.err);
		run_free(&r);
		rm_rf(dir);
	}
}
END_TEST

/* Three threads and the main one, all waiting, once it has said it is up. */
static const char threads_code[] =
	"import os, sys, threading, time\n"
	"e = threading.Event()\n"
	"for _ in range(3):\n"
	"    threading.Thread(target=e.wait, daemon=True).start()\n"
	"open(os.path.join(sys.argv[-1], 'ready'), 'w').close()\n"
	"time.sleep(3600)\n";

/* What bench/summary.sh (sh) or bench/record_summary.py (python3) reads from
 * the summary in `path`: "samples rounds", or -1 -1 with the exit status in
 * *status. */
static void bench_reads(const char *path, bool python, long long *samples, long long *rounds,
			int *status)
{
	char bench[PATH_MAX];
	struct run r;

	snprintf(bench, sizeof(bench), "%s/bench", test_srcdir());
	ck_assert_int_eq(run_cmd(&r, 20000, python ?
		(char *[]){ "python3", "-B", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
			    "from record_summary import figures; "
			    "f = figures(open(sys.argv[2]).read()); print(f['samples'], f['rounds'])",
			    bench, (char *)path, NULL } :
		(char *[]){ "sh", "-c", ". \"$1/summary.sh\"; summary \"$2\"; "
			    "echo \"$sum_samples $sum_rounds\"", "sh", bench, (char *)path, NULL }),
		0);
	*status = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
	if (sscanf(r.out, "%lld %lld", samples, rounds) != 2)
		*samples = *rounds = -1;
	if (*status)
		ck_assert_msg(strstr(r.err, "bench: "), "%s: exit %d without its line: %s",
			      python ? "record_summary.py" : "summary.sh", *status, r.err);
	run_free(&r);
}

/* The benches read the rounds, not the samples, from the summary, and stop
 * on a summary in another form (issue 39: bench/peers took the samples for
 * rounds).  With --idle each round samples the target's four threads, so
 * the two counts differ by its own thread count. */
START_TEST(test_counts_bench_readers)
{
	char why[512], pid[16], out[PATH_MAX + 16], err[PATH_MAX + 16];
	unsigned long long samples = 0, rounds = 0;
	long long s, rd;
	static const char other_form[] = "pystrobe: 40 samples, 10 rounds in 0.50 s, 20.0 Hz\n";
	struct target t;
	struct run r;
	int status;

	if (target_start(&t, chosen[0], why, sizeof(why), "-c", threads_code, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("threads: %s", why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid ? t.py_pid : t.pid);
	snprintf(out, sizeof(out), "%s/p.txt", t.dir);
	snprintf(err, sizeof(err), "%s/err", t.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", "--idle", "-r", "200", "-d", "0.5", "-o", out,
				      "--pid", pid, NULL), 0);
	assert_exit(&r, "4 threads", 0);
	ck_assert_int_eq(write_file(err, r.err, strlen(r.err)), 0);
	ck_assert_msg(sscanf(record_summary(r.err) ? record_summary(r.err) : "",
			     "pystrobe: %llu samples from %llu rounds", &samples, &rounds) == 2 &&
		      rounds > 0 && samples == 4 * rounds,
		      "want a sample of each of the 4 threads a round: %s", r.err);
	for (int py = 0; py < 2; py++) {
		bench_reads(err, py, &s, &rd, &status);
		ck_assert_msg(!status && s == (long long)samples && rd == (long long)rounds,
			      "%s read %lld samples, %lld rounds (exit %d) of %s",
			      py ? "record_summary.py" : "summary.sh", s, rd, status, r.err);
	}
	run_free(&r);
	/* The samples first, the rounds unnamed: a summary in another form. */
	ck_assert_int_eq(write_file(err, other_form, strlen(other_form)), 0);
	for (int py = 0; py < 2; py++) {
		bench_reads(err, py, &s, &rd, &status);
		ck_assert_msg(status == 1 && rd == -1, "%s read a summary in another form: "
			      "exit %d, %lld rounds", py ? "record_summary.py" : "summary.sh",
			      status, rd);
	}
	target_stop(&t);
}
END_TEST

START_TEST(test_counts_idle_hint)
{
	char why[512], pid[16], out[PATH_MAX + 16];
	struct target t;
	struct run r;

	if (target_start(&t, chosen[0], why, sizeof(why), "-c", sleep_code, NULL) < 0 ||
	    target_wait_file(&t, "ready", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("sleeper: %s", why);
	snprintf(pid, sizeof(pid), "%d", t.py_pid ? t.py_pid : t.pid);
	snprintf(out, sizeof(out), "%s/p.txt", t.dir);
	/* Asleep, not still on its way from 'ready' to time.sleep(): on a
	 * loaded machine it may wait for a CPU in between, and be sampled. */
	for (int i = 0; i < 500 && proc_state(atoi(pid), atoi(pid)) != 'S'; i++)
		sleep_ms(10);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-d", "0.5", "-o", out, "--pid", pid, NULL),
			 0);
	target_stop(&t);
	assert_exit(&r, "a sleeper", 0);
	ck_assert_msg(summary_samples(r.err) == 0, "a sleeper: want 0 samples: %s", r.err);
	ck_assert_msg(strstr(r.err, "add --idle"), "a sleeper: no hint to add --idle: %s", r.err);
	run_free(&r);
}
END_TEST

START_TEST(test_counts_subprocess_hint)
{
	char dir[64], out[128];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/p.txt", dir);
	record_in(&r, NULL, dir, (char *[]){ "-o", out, NULL }, parent_code, dir);
	assert_exit(&r, "work in a subprocess", 0);
	ck_assert_msg(strstr(r.err, "add -s"), "work in a subprocess: no hint to add -s: %s",
		      r.err);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* --- launchers ------------------------------------------------------------ */

/* pystrobe record -o OUT -- sh -c SCRIPT; OUT in dir. */
static void record_sh(struct run *r, const char *dir, const char *script, char *out,
		      size_t size)
{
	snprintf(out, size, "%s/p.txt", dir);
	ck_assert_int_eq(run_pystrobe(r, "record", "-o", out, "--", "sh", "-c", script, NULL), 0);
}

/* A shell script that runs python -c code dir, then true: not the last
 * command, so sh forks the Python instead of exec'ing it.  free() it. */
static char *sh_then_python(const char *code, const char *dir)
{
	struct argv_buf a = { .n = 0 };
	char *words, *script;

	arg_python(&a, chosen[0]);
	arg(&a, "-c");
	arg(&a, code);
	arg(&a, dir);
	words = shell_words(a.v);
	ck_assert_int_ge(asprintf(&script, "%s; true", words), 0);
	free(words);
	return script;
}

/* The run followed sh into its Python: it said so, and the profile at out
 * has the Python's function. */
static void assert_followed(const char *what, const struct run *r, const char *out)
{
	char *text = slurp(out);

	assert_exit(r, what, 0);
	ck_assert_msg(text && strstr(text, "spin_here ("), "%s: no spin_here in the profile: "
		      "%.500s; stderr: %s", what, text ? text : "(none)", r->err);
	ck_assert_msg(strstr(r->err, "following"), "%s: not said: %s", what, r->err);
	free(text);
}

START_TEST(test_launcher_followed)
{
	char dir[64], out[128], *script;
	struct run r;

	fresh_dir(dir, sizeof(dir));
	script = sh_then_python(spin_code, dir);
	record_sh(&r, dir, script, out, sizeof(out));
	assert_followed("sh -c 'python; true'", &r, out);
	free(script);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* record --pid of a shell whose Python child spins: followed as well. */
START_TEST(test_launcher_pid)
{
	char dir[64], out[128], pid[16], *script;
	long long end = now_ms() + TARGET_READY_MS;
	struct run r;
	pid_t sh;

	fresh_dir(dir, sizeof(dir));
	script = sh_then_python(spin_long_code, dir);
	sh = spawn_cmd((char *[]){ "sh", "-c", script, NULL });
	ck_assert_int_gt(sh, 0);
	while (!exists_in(dir, "ran") && now_ms() < end)
		sleep_ms(20);
	snprintf(pid, sizeof(pid), "%d", (int)sh);
	snprintf(out, sizeof(out), "%s/p.txt", dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", "-d", "0.5", "-o", out, "--pid", pid, NULL),
			 0);
	kill_descendants(sh);
	kill_reap(sh);
	assert_followed("--pid of sh", &r, out);
	free(script);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

START_TEST(test_launcher_no_python)
{
	char dir[64], out[128];
	struct run r;

	fresh_dir(dir, sizeof(dir));
	record_sh(&r, dir, "exit 0", out, sizeof(out));
	ck_assert_msg(run_exit(&r) > 0, "sh -c 'exit 0': exit %d, want non-zero: %s",
		      run_exit(&r), r.err);
	ck_assert_msg(access(out, F_OK) != 0, "sh -c 'exit 0': a profile was written");
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* --- the ending --------------------------------------------------------------- */

/* Prints a line every 0.2 s of spinning, for ever. */
static const char printer_code[] =
	"import time\n"
	"def step():\n"
	"    t = time.time()\n"
	"    while time.time() - t < 0.2:\n"
	"        pass\n"
	"i = 0\n"
	"while True:\n"
	"    step()\n"
	"    i += 1\n"
	"    print('step', i, flush=True)\n";

/* The pane's screen, wrapped lines joined (a line longer than the pane is
 * one), once it shows needle (within ms), else NULL.  free() it. */
static char *wait_screen(const char *sock, const char *needle, int ms)
{
	long long end = now_ms() + ms;

	do {
		char *out = NULL;

		if (tmux_cmd(sock, &out, (char *[]){ "capture-pane", "-p", "-J", "-t", "ux", NULL }) == 0 &&
		    out && strstr(out, needle))
			return out;
		free(out);
		sleep_ms(100);
	} while (now_ms() < end);
	return NULL;
}

/* The line of s that holds needle starts with it, or with "^C" and it. */
static bool line_starts(const char *s, const char *needle)
{
	const char *p = strstr(s, needle);

	if (p && p - s >= 2 && !strncmp(p - 2, "^C", 2))
		p -= 2;
	return p && (p == s || p[-1] == '\n');
}

/* Ignores SIGINT and spins for ever, once it has said it is up. */
static const char deaf_code[] =
	"import os, signal, sys\n"
	"signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
	"open(os.path.join(sys.argv[-1], 'ran'), 'w').close()\n"
	"def spin_here():\n"
	"    while True:\n"
	"        pass\n"
	"spin_here()\n";

/* The pane's command: record code (its argument dir), then say how
 * pystrobe ended. */
static char *pane_command(const char *dir, const char *code)
{
	struct argv_buf a = { .n = 0 };
	char *words, *cmd;

	arg(&a, pystrobe_path());
	arg(&a, "record");
	arg(&a, "-o");
	arg(&a, "p.txt");
	arg(&a, "--");
	arg_python(&a, chosen[0]);
	arg(&a, "-c");
	arg(&a, code);
	arg(&a, dir);
	words = shell_words(a.v);
	ck_assert_int_ge(asprintf(&cmd, "cd %s && %s; echo EXIT=$?; sleep 60", dir, words), 0);
	free(words);
	return cmd;
}

/* A tmux pane (its server at sock, in dir, fresh) that records code; false
 * (a SKIP) without tmux.  end_pane() ends it. */
static bool start_pane(char *dir, size_t dir_size, char *sock, size_t sock_size,
		       const char *code)
{
	char *cmd;

	if (system("tmux -V >/dev/null 2>&1") != 0) {
		test_skip("tmux is missing: the terminal ending is not checked");
		return false;
	}
	fresh_dir(dir, dir_size);
	snprintf(sock, sock_size, "%s/tmux", dir);
	cmd = pane_command(dir, code);
	/* Tall enough that the traceback, the top functions and the closing
	 * lines all stay on the screen: a short pane scrolled the traceback's
	 * first line away (seen under ASan, where more functions were listed). */
	ck_assert_int_eq(tmux_cmd(sock, NULL, (char *[]){ "new-session", "-d", "-x", "120", "-y",
							  "50", "-s", "ux", cmd, NULL }), 0);
	test_used("tmux");
	free(cmd);
	return true;
}

static void end_pane(const char *dir, const char *sock)
{
	tmux_cmd(sock, NULL, (char *[]){ "kill-server", NULL });
	rm_rf(dir);
}

START_TEST(test_ending_terminal)
{
	char dir[64], sock[96], *s;

	if (!start_pane(dir, sizeof(dir), sock, sizeof(sock), printer_code))
		return;
	s = wait_screen(sock, "Ctrl-C stops and writes p.txt", RUN_TIMEOUT_MS);
	ck_assert_msg(s, "no status line that says how to stop and where the file goes");
	free(s);
	/* Some steps printed under the status line. */
	free(wait_screen(sock, "step 3", RUN_TIMEOUT_MS));
	tmux_cmd(sock, NULL, (char *[]){ "send-keys", "-t", "ux", "C-c", NULL });
	s = wait_screen(sock, "EXIT=", RUN_TIMEOUT_MS);
	ck_assert_msg(s, "pystrobe did not end after Ctrl-C");
	ck_assert_msg(!strstr(s, "Ctrl-C stops"), "the status line is left: %s", s);
	ck_assert_msg(line_starts(s, "Traceback"), "the traceback does not start a line: %s", s);
	ck_assert_msg(strstr(s, "ended by SIGINT"), "no line says how it ended: %s", s);
	ck_assert_msg(exists_in(dir, "p.txt"), "no profile written: %s", s);
	free(s);
	end_pane(dir, sock);
}
END_TEST

/* A program that ignores SIGINT, holding the terminal: Ctrl-C reaches it
 * alone and does nothing, so the status line says how to stop pystrobe
 * instead; stopped so, what comes next is said at once. */
START_TEST(test_ending_terminal_ignored)
{
	static const char hint[] = "the program ignores Ctrl-C: kill -INT ";
	char dir[64], sock[96], *s;
	int pid;

	if (!start_pane(dir, sizeof(dir), sock, sizeof(sock), deaf_code))
		return;
	s = wait_screen(sock, hint, RUN_TIMEOUT_MS);
	ck_assert_msg(s, "the status line does not say the program ignores Ctrl-C");
	pid = atoi(strstr(s, hint) + strlen(hint));
	ck_assert_msg(pid > 0 && strstr(s, " stops and writes p.txt"), "%s", s);
	free(s);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	s = wait_screen(sock, "EXIT=", RUN_TIMEOUT_MS);
	ck_assert_msg(s, "pystrobe did not end after SIGINT");
	ck_assert_msg(strstr(s, "has not exited 1 s after SIGINT") && strstr(s, "ended by SIGTERM"),
		      "the wait and the end are not said: %s", s);
	ck_assert_msg(exists_in(dir, "p.txt"), "no profile written: %s", s);
	free(s);
	end_pane(dir, sock);
}
END_TEST

/* The last line of s (without its newline), into a new string. */
static char *last_line(const char *s)
{
	size_t n = strlen(s);
	const char *p;

	while (n && s[n - 1] == '\n')
		n--;
	for (p = s + n; p > s && p[-1] != '\n'; p--)
		;
	return strndup(p, n - (p - s));
}

/* record -d 1 -o DIR/p.txt of code, in a fresh dir (the caller rm_rf()s
 * it): exit 0, first said before the summary, and the last line says
 * last_says. */
static void record_a_second(struct run *r, char *dir, size_t size, const char *code,
			    const char *what, const char *first, const char *last_says)
{
	char out[128], *last;
	const char *said, *wrote;

	fresh_dir(dir, size);
	snprintf(out, sizeof(out), "%s/p.txt", dir);
	record_in(r, NULL, dir, (char *[]){ "-d", "1", "-o", out, NULL }, code, dir);
	assert_exit(r, what, 0);
	said = strstr(r->err, first);
	wrote = strstr(r->err, "; wrote ");
	ck_assert_msg(said && wrote && said < wrote, "%s: '%s' is not said before the summary: "
		      "%s", what, first, r->err);
	last = last_line(r->err);
	ck_assert_msg(strstr(last, last_says), "%s: the last line does not say '%s': %s", what,
		      last_says, r->err);
	free(last);
}

START_TEST(test_ending_duration)
{
	char dir[64];
	struct run r;

	/* The program's last words come before the summary. */
	record_a_second(&r, dir, sizeof(dir), printer_code, "-d 1", "KeyboardInterrupt",
			"ended by SIGINT, sent by pystrobe at the end of -d 1");
	ck_assert_msg(!strstr(r.err, "has not exited"), "-d 1: a wait was said of a program "
		      "that ended at once: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* The program does not end on SIGINT: what comes next is said at once,
 * not after 5 silent seconds. */
START_TEST(test_ending_ignored)
{
	char dir[64];
	struct run r;

	record_a_second(&r, dir, sizeof(dir), deaf_code, "ignoring SIGINT",
			"has not exited 1 s after SIGINT: SIGTERM in 4 s, SIGKILL 2 s after "
			"that\n", "ended by SIGTERM");
	run_free(&r);
	rm_rf(dir);
}
END_TEST

/* --- the text summary ------------------------------------------------------ */

/* The line after the one that starts with "pystrobe:    Own%", or NULL. */
static const char *first_row(const char *err)
{
	const char *head = strstr(err, "pystrobe:    Own%");
	const char *nl = head ? strchr(head, '\n') : NULL;

	return nl ? nl + 1 : NULL;
}

START_TEST(test_table)
{
	char dir[64], out[128];
	const char *row, *nl;
	struct run r;

	for (int quiet = 0; quiet < 2; quiet++) {
		fresh_dir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/p.txt", dir);
		record_in(&r, NULL, dir, (char *[]){ "-o", out, quiet ? "-q" : NULL, NULL },
			  spin_code, dir);
		assert_exit(&r, quiet ? "-q" : "the table", 0);
		row = first_row(r.err);
		nl = row ? strchr(row, '\n') : NULL;
		ck_assert_msg(all_lines_pystrobe(r.err), "not all lines are pystrobe's: %s", r.err);
		if (quiet)
			ck_assert_msg(!r.err[0], "-q: stderr is not empty: %s", r.err);
		else
			ck_assert_msg(row && nl && strstr(row, "spin_here (") &&
				      strstr(row, "spin_here (") < nl,
				      "the first row of the table is not spin_here: %s", r.err);
		run_free(&r);
		rm_rf(dir);
	}
}
END_TEST

START_TEST(test_interp_chosen)
{
	ck_assert_msg(nchosen > 0, "no plain interpreter to run record on");
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "output", 120, 0, 1,
		  { test_output_refused, test_output_default_tmpdir, test_output_fallback,
		    test_output_stdout } },
		{ "counts", 120, 0, 1,
		  { test_counts_one_vocabulary, test_counts_idle_hint,
		    test_counts_subprocess_hint, test_counts_bench_readers } },
		{ "launcher", 120, 0, 1,
		  { test_launcher_followed, test_launcher_pid, test_launcher_no_python } },
		{ "table", 120, 0, 1, { test_table } },
		{ "ending", 180, 0, 1,
		  { test_ending_terminal, test_ending_terminal_ignored, test_ending_duration,
		    test_ending_ignored } },
	};
	const struct test_group none[] = { { "interp", 0, 0, 1, { test_interp_chosen } } };
	const struct test_interp *all;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The pane speaks UTF-8; no outer tmux interferes. */
	setenv("LANG", "C.UTF-8", 1);
	unsetenv("TMUX");
	test_interps(&all);
	nchosen = test_interps_plain(chosen, 1, "record_ux");
	if (!nchosen)
		return run_groups("record_ux", none, 1, 0, 1);
	return run_groups("record_ux", groups, sizeof(groups) / sizeof(*groups), 0, 1);
}
