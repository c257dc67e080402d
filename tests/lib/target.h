/* Helpers for the tests that run the pystrobe binary: start a live Python
 * target, wait until it is ready, run a command with a time limit capturing
 * what it says, look at the target's threads in /proc, and clean up.  Most
 * live tests use them; the unit tests of diff and merge run pystrobe with
 * them on files only.
 *
 * Every process started here gets SIGKILL when the test process dies (see
 * target.c), so a failed or timed-out test leaves nothing spinning behind.
 */
#ifndef PYSTROBE_TEST_TARGET_H
#define PYSTROBE_TEST_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "interpreters.h"

#define TARGET_READY_MS	60000	/* starting a target, even the chroot one */
#define RUN_TIMEOUT_MS	60000	/* one pystrobe or compare_dump.py run */

struct target {
	const struct test_interp *ti;
	pid_t pid;		/* what test_interp_spawn started */
	pid_t py_pid;		/* the Python process, from truth.json (our id) */
	pid_t ns_pid;		/* the same in its own PID namespace (truth.json's) */
	int reaped;		/* pid has been waited for */
	int status;		/* its wait status, once reaped */
	int nthreads;		/* OS threads it settles at, from truth.json */
	char dir[PATH_MAX];	/* OUTDIR as the test sees it */
	char dir_inside[PATH_MAX]; /* OUTDIR as the target names it (chroot) */
	char truth[PATH_MAX + 16]; /* host path of OUTDIR/truth.json */
};

/* Start ti on args (NULL-terminated, e.g. a script path or "-c", code),
 * with OUTDIR, a fresh directory shared with the test, added as the last
 * argument.  Returns 0, or -1 with the reason in why. */
int target_start(struct target *t, const struct test_interp *ti,
		 char *why, size_t whysize, ...) __attribute__((sentinel));

/* Start the targets of the next target_start*() calls through this
 * command (e.g. unshare --pid --fork --mount-proc; see
 * test_interp_spawn_wrapped()), or directly with NULL.  The pid in
 * truth.json is then the target's own, and py_pid is found as the
 * descendant of the wrapper that has that id in its namespace. */
void target_set_wrapper(const char *const *wrap);

/* The descendant of t's first process (itself included) whose id in its
 * own PID namespace is ns_pid, by our id; 0 if none. */
pid_t target_host_pid(const struct target *t, pid_t ns_pid);

/* The NSpid line of /proc/PID/status (or of TID's in task/ when tid is
 * not 0): its ids into ids[0..max), ours first; returns their count, 0
 * when unreadable.  The tests' own reading, apart from pystrobe's. */
int proc_nspids(pid_t pid, pid_t tid, pid_t *ids, int max);

/* Start tests/targets/parked.py and wait until it has written truth.json and
 * its reporter thread is gone. */
int target_start_parked(struct target *t, const struct test_interp *ti,
			char *why, size_t whysize);

/* The same for another target that writes truth.json as parked.py does
 * (path in the source tree, e.g. "tests/targets/subinterp_target.py"). */
int target_start_script(struct target *t, const struct test_interp *ti,
			const char *path, char *why, size_t whysize);

/* The same with one argument (or NULL) before OUTDIR. */
int target_start_script_arg(struct target *t, const struct test_interp *ti, const char *path,
			    const char *arg, char *why, size_t whysize);

/* Wait (bounded) for OUTDIR/name to appear; fails early if the target dies. */
int target_wait_file(struct target *t, const char *name, int timeout_ms,
		     char *why, size_t whysize);

/* Sleep ms milliseconds, whatever signals arrive. */
void sleep_ms(int ms);
/* The monotonic clock (util.c's mono_ns()) in milliseconds and seconds. */
long long now_ms(void);
double now_s(void);
/* The wall clock in seconds, as a target's time.time() gives it. */
double wall_s(void);

/* The integer after "key": in the JSON file dir/name (the first one), or
 * -1 if there is none. */
long json_file_int(const char *dir, const char *name, const char *key);
/* The number after "key": in a JSON text we wrote ourselves (the first
 * one; none in NULL), or -1 if there is none. */
double json_text_num(const char *text, const char *key);
/* The string after "key": "..." (Python's json.dump spacing) in such a
 * text, cut at size; "" when absent. */
void json_text_str(const char *text, const char *key, char *out, size_t size);

/* The whole file, NUL-terminated ("" when empty), or NULL if it cannot be
 * opened.  free() it. */
char *slurp(const char *path);

/* Remove a directory and everything in it. */
void rm_rf(const char *dir);

/* Kill (unless it is gone already) and reap the target; remove OUTDIR. */
void target_stop(struct target *t);

/* The state letter of /proc/PID/stat (R, S, T, t, Z...), or 0 if unreadable. */
char proc_state(pid_t pid, pid_t tid);

/* The first thread of pid that is stopped (state T or t), or 0 if none is.
 * state gets its state letter. */
pid_t proc_stopped_thread(pid_t pid, char *state);

/* How many threads of pid are stopped (T or t), of *total; *first and
 * *state: the first stopped one and its state letter (0 if none is). */
int proc_stopped_threads(pid_t pid, int *total, pid_t *first, char *state);

/* Number of threads (/proc/PID/task entries), -1 if the process is gone. */
int proc_thread_count(pid_t pid);

/* Start argv (looked up in PATH) with output to /dev/null; -1 on error. */
pid_t spawn_cmd(char *const argv[]);

/* The same with stderr to the file errpath (created or truncated). */
pid_t spawn_cmd_err(char *const argv[], const char *errpath);

/* Wait (bounded) until pystrobe p samples pid: the sampler keeps each
 * thread's /proc/PID/task/TID/stat open from its first round.  On a loaded
 * machine finding the interpreter can take a while, and a signal before the
 * first sample rightly makes an empty profile.  0 once it samples, -1 if
 * it did not in time or p is gone. */
int wait_sampling(pid_t p, pid_t pid, int timeout_ms);

/* Wait (bounded) until pid runs a program whose path ends in suffix, i.e.
 * has got past exec.  0, or -1 on timeout or if it is gone. */
int proc_wait_exe(pid_t pid, const char *suffix, int timeout_ms);

/* SIGKILL every descendant of pid (not pid itself), children first: a
 * parked worker must not outlive its test. */
void kill_descendants(pid_t pid);

/* SIGKILL and reap a child. */
void kill_reap(pid_t pid);

struct run {
	int status;		/* wait status */
	int timed_out;		/* killed after the time limit */
	int timeout_ms;		/* the limit */
	char *out, *err;	/* what it wrote, NUL-terminated */
	size_t out_len, err_len;
};

/* Run argv (argv[0] is looked up in PATH) with stdin from /dev/null, for at
 * most timeout_ms, then SIGKILL.  Returns 0, or -1 if it could not start. */
int run_cmd(struct run *r, int timeout_ms, char *const argv[]);

/* The same, sending it signal sig after signal_ms (a run that does not end
 * by itself, such as top). */
int run_cmd_signal(struct run *r, int timeout_ms, int signal_ms, int sig, char *const argv[]);

/* Run the pystrobe binary from the build directory with these arguments. */
int run_pystrobe(struct run *r, ...) __attribute__((sentinel));

void run_free(struct run *r);

/* The long options `pystrobe CMD --help` lists (cmd NULL: `pystrobe
 * --help`), space-separated, in the order listed: the first word of each
 * line that is "--name", after an optional "-x, ".  NULL when pystrobe
 * did not run, or did not exit 0. */
char *help_long_options(const char *cmd);

/* The long options of a command's option table (cmd/options.h), the
 * same words as help_long_options() of its --help (a new string). */
struct opt_table;
char *table_long_options(const struct opt_table *t);

/* Whether w is one of the space-separated words. */
bool has_word(const char *words, const char *w);
/* The words of make variable name in makefile text (continuation lines
 * followed), space-separated; "" when it has none. */
char *make_words(const char *text, const char *name);
/* Is word in text, not as part of a longer name? */
bool names_word(const char *text, const char *word);

/* Exit code, or -1 when it did not exit normally. */
int run_exit(const struct run *r);

/* "exit 3", "killed by signal 11", "timed out"... */
const char *run_describe(const struct run *r, char *buf, size_t size);

/* Whether stderr is exactly one line starting with "pystrobe: ". */
int run_one_error_line(const struct run *r);

/* $PYSTROBE_BUILDDIR/pystrobe */
const char *pystrobe_path(void);

/* Write len bytes to path; 0 or -1. */
int write_file(const char *path, const char *data, size_t len);

/* Append a formatted line to a growing message (for failures collected while
 * a target runs, reported after it is stopped). */
void msg_add(char **msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The hardening tests (check_chaos.c, check_hostile.c, ...). */

/* The command line that runs ti as test_interp_spawn() does (env, chroot,
 * the interpreter), for pystrobe to launch: its words go to argv (at most
 * max), the count is returned; the script and its arguments follow. */
int python_argv(const struct test_interp *ti, char **argv, int max);

/* Whether text holds an AddressSanitizer, LeakSanitizer or UBSan report. */
int sanitizer_report(const char *text);

/* Whether the pystrobe under test is a sanitizer build (valgrind cannot
 * run it; long timing cases leave it to the plain build). */
bool pystrobe_sanitized(void);

/* record's summary line in err, "pystrobe: N samples from M rounds in X s,
 * ...", or NULL. */
const char *record_summary(const char *err);

/* Whether err is empty or lines each starting with "pystrobe: ". */
int all_lines_pystrobe(const char *err);

/* PYSTROBE_STRESS=1 (make stress): the long variants at full counts. */
int stress_mode(void);

/* A command line built a word at a time (at most 63, NULL-terminated). */
struct argv_buf {
	char *v[128];
	int n;
};

void arg(struct argv_buf *a, const char *s);
/* Each word of a NULL-terminated list. */
void args(struct argv_buf *a, char *const *list);
/* The interpreter as python_argv() gives it. */
void arg_python(struct argv_buf *a, const struct test_interp *ti);

/* Words joined into a shell command line, each in single quotes (a new
 * string). */
char *shell_words(char *const *argv);

/* tmux -S sock -f /dev/null WORDS...: its exit code, or -1; its output in
 * *out (to free) when out is not NULL. */
int tmux_cmd(const char *sock, char **out, char *const words[]);

#endif
