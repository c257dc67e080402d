/* `pystrobe top` driven in tmux against live targets.
 *
 * tests/targets/hot.py spins in hot_loop() for 85% of its main thread's
 * CPU, cold_loop() for 10% and odd_loop() for 5%; odd_loop's code object is
 * renamed (3.8+) to a name with an escape sequence, a bell, a C1 control
 * and a double-width character.  With --thread a second thread, "spinner",
 * spins in thread_spin() for 2 ms of every 20 and sleeps the rest.
 *
 * In a 160x40 tmux pane (a private server, LANG=C.UTF-8), for each
 * interpreter:
 *
 *   --pid     the hot function is the first row and has several times the
 *             cold one's OwnTime; the header names the Python version and
 *             a GIL share; the odd name is shown escaped with the screen
 *             intact; 4 (TotalTime) puts <module> or main first and 1 / 3
 *             put hot_loop back; L aggregates by function (one hot_loop
 *             row); /cold Enter leaves only cold_loop rows and Esc clears
 *             it; T shows the spinner thread alone, then the main thread,
 *             then all; I shows idle threads (the spinner near 100%) and
 *             hides them again; Space freezes the numbers, R starts them
 *             again; ? opens help and a key closes it; a resize redraws at
 *             the new size; q leaves the terminal as it was: the marker
 *             echoed before top is on the screen, no alternate screen, the
 *             cursor shown, keypad mode off, the tty back in echo/icanon,
 *             exit 0.
 *   signals   SIGTERM and Ctrl-C (SIGINT) restore the terminal the same way.
 *   hung      --pid of a process whose two threads sleep (stuck_sleep() and
 *             stuck_wait()): the empty table says "none of the 2 threads
 *             ran ... press I to show idle threads"; I shows both threads'
 *             functions and the hint goes; q exits 0.
 *   duration  --duration 2 exits 0 by itself, 2 to 8 s after it started.
 *   launch    a command that exits with status 3 leaves the last view with
 *             the banner "process PID exited (status 3)"; q ends top with 3,
 *             and names the file that holds what the command wrote.  q on
 *             a command that still runs (the sleeping one) ends it, says
 *             "ended by SIGINT, sent by pystrobe at q" and exits 0, not
 *             the command's 130.
 *   no tty    --pid with stdout to a file prints snapshots with hot_loop
 *             every 0.5 s and no escape character, and SIGINT ends it with
 *             0; a launched command that exits ends top with its status.
 *
 * By default the Debian python3.11 and a pyenv 3.12 run (every interpreter
 * with PYSTROBE_TOP_ALL=1).  Failures are collected while the targets run
 * and reported per interpreter at the end, so nothing is left behind.
 * Without tmux each run is a SKIP; the summary at the end of `make check`
 * then fails the whole run, since tmux is in the required minimum.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interpreters.h"
#include "suite.h"
#include "target.h"

#define COLS_		160
#define LINES_		40
#define DELAY		"0.5"	/* seconds between refreshes */
#define WAIT_MS		20000	/* for the screen to show something */
#define TMUX_MS		10000	/* one tmux command */
#define MARKER		"PRE-TOP-MARKER"
#define OUTPUT_MARK	"LAUNCHED-PROGRAM-SAID-THIS"
#define MAX_ROWS	64

/* The odd name as the one escaping rule (src/util/escape.c) shows it:
 * UTF-8 for é and 热, the C1 control U+009B by its code point, as repr()
 * writes it. */
#define ODD_SHOWN	"odd\\x1b[2J\\x07" "\xc3\xa9" "\xe7\x83\xad" "\\x9b (hot.py:"

static const struct test_interp *chosen[32];
static int nchosen;
static char sock_dir[PATH_MAX];
static bool have_tmux;

struct top_test {
	const struct test_interp *ti;
	char script[PATH_MAX];	/* hot.py as the interpreter names it */
	char sock[PATH_MAX + 32];
	char *failures;
};

/* --- small helpers -------------------------------------------------------- */

static void flunk(struct top_test *d, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void flunk(struct top_test *d, const char *what, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	msg_add(&d->failures, "%s: %s: %s", d->ti->label, what, line ? line : "?");
	free(line);
}

/* --- tmux ----------------------------------------------------------------- */

static char tmux_err[256];	/* what the last tmux command said */

/* Run tmux on our private server; its output in *out when out is not NULL.
 * Returns its exit code, or -1. */
static int tmux(struct top_test *d, char **out, ...)
{
	struct argv_buf a = { .n = 0 };
	struct run r;
	const char *s;
	va_list ap;
	int rc;

	arg(&a, "tmux");
	arg(&a, "-S");
	arg(&a, d->sock);
	arg(&a, "-f");
	arg(&a, "/dev/null");
	va_start(ap, out);
	while ((s = va_arg(ap, const char *)))
		arg(&a, s);
	va_end(ap);
	if (run_cmd(&r, TMUX_MS, a.v) < 0)
		return -1;
	rc = run_exit(&r);
	snprintf(tmux_err, sizeof(tmux_err), "%s", r.err ? r.err : "");
	tmux_err[strcspn(tmux_err, "\n")] = 0;
	if (out) {
		*out = r.out;
		r.out = NULL;
	}
	run_free(&r);
	return rc;
}

static int start_session(struct top_test *d, const char *name, const char *command)
{
	char w[16], h[16];
	int rc;

	snprintf(w, sizeof(w), "%d", COLS_);
	snprintf(h, sizeof(h), "%d", LINES_);
	rc = tmux(d, NULL, "new-session", "-d", "-x", w, "-y", h, "-s", name, command, NULL);
	if (rc != 0)
		flunk(d, "tmux", "new-session -s %s: exit %d: %s", name, rc, tmux_err);
	return rc;
}

static char *screen(struct top_test *d, const char *name)
{
	char *out = NULL;

	if (tmux(d, &out, "capture-pane", "-p", "-t", name, NULL) != 0) {
		free(out);
		return strdup("");
	}
	return out;
}

static char *pane_format(struct top_test *d, const char *name, const char *fmt)
{
	char *out = NULL;

	if (tmux(d, &out, "display-message", "-p", "-t", name, fmt, NULL) != 0) {
		free(out);
		return strdup("?");
	}
	out[strcspn(out, "\n")] = 0;
	return out;
}

static void keys(struct top_test *d, const char *name, const char *k)
{
	tmux(d, NULL, "send-keys", "-t", name, k, NULL);
}

/* The first lines of a screen, for a failure message. */
static char *excerpt(const char *s, int lines)
{
	size_t n = 0;

	for (int i = 0; i < lines && s[n]; i++) {
		const char *nl = strchr(s + n, '\n');

		n = nl ? (size_t)(nl - s) + 1 : strlen(s);
	}
	return strndup(s, n);
}

/* --- reading the screen --------------------------------------------------- */

struct row {
	double own_pct, total_pct, own_s, total_s;
	char label[256];
};

struct view {
	struct row rows[MAX_ROWS];
	int nrows;
};

/* The table rows, below the line of column titles. */
static void parse_rows(const char *s, struct view *v)
{
	const char *p = strstr(s, "%Own  %Total");

	v->nrows = 0;
	if (!p || !(p = strchr(p, '\n')))
		return;
	for (p++; *p && v->nrows < MAX_ROWS;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct row *r = &v->rows[v->nrows];
		char line[512];
		int n = 0;

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (sscanf(line, " %lf %lf %lfs %lfs%n", &r->own_pct, &r->total_pct, &r->own_s,
			   &r->total_s, &n) != 4 || n == 0)
			break;
		snprintf(r->label, sizeof(r->label), "%s", line + n + strspn(line + n, " "));
		/* tmux pads with spaces up to the width */
		for (size_t e = strlen(r->label); e && r->label[e - 1] == ' '; e--)
			r->label[e - 1] = 0;
		v->nrows++;
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* The number after "label" on the screen, or -1. */
static double header_num(const char *s, const char *label)
{
	const char *p = strstr(s, label);

	return p ? strtod(p + strlen(label), NULL) : -1;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int rows_with(const struct view *v, const char *needle)
{
	int n = 0;

	for (int i = 0; i < v->nrows; i++)
		n += strstr(v->rows[i].label, needle) != NULL;
	return n;
}

static double sum_own_s(const struct view *v, const char *needle)
{
	double sum = 0;

	for (int i = 0; i < v->nrows; i++)
		if (strstr(v->rows[i].label, needle))
			sum += v->rows[i].own_s;
	return sum;
}

static double sum_own_pct(const struct view *v, const char *needle)
{
	double sum = 0;

	for (int i = 0; i < v->nrows; i++)
		if (strstr(v->rows[i].label, needle))
			sum += v->rows[i].own_pct;
	return sum;
}

/* A condition on the screen. */
typedef bool (*screen_ok)(const char *s, const struct view *v, const void *arg);

/* Poll the screen until ok() holds or timeout_ms pass.  Returns whether it
 * held; *last gets the last screen (free it) when not NULL. */
static bool wait_for(struct top_test *d, const char *name, screen_ok ok, const void *okarg,
		     int timeout_ms, char **last)
{
	long long deadline = now_ms() + timeout_ms;
	struct view *v = malloc(sizeof(*v));
	char *s = NULL;
	bool held;

	for (;;) {
		free(s);
		s = screen(d, name);
		parse_rows(s, v);
		held = ok(s, v, okarg);
		if (held || now_ms() > deadline)
			break;
		sleep_ms(100);
	}
	free(v);
	if (last)
		*last = s;
	else
		free(s);
	return held;
}

/* Wait, and on failure say what and show the screen. */
static bool expect(struct top_test *d, const char *name, const char *what, screen_ok ok,
		   const void *okarg)
{
	char *last = NULL, *ex;
	bool held = wait_for(d, name, ok, okarg, WAIT_MS, &last);

	if (!held) {
		ex = excerpt(last, 16);
		flunk(d, what, "not seen within %d s; the screen:\n%s", WAIT_MS / 1000, ex);
		free(ex);
	}
	free(last);
	return held;
}

static bool has_text(const char *s, const struct view *v, const void *arg)
{
	(void)v;
	return strstr(s, arg) != NULL;
}

static bool lacks_text(const char *s, const struct view *v, const void *arg)
{
	(void)v;
	return strstr(s, arg) == NULL;
}

static bool first_row(const char *s, const struct view *v, const void *arg)
{
	(void)s;
	return v->nrows > 0 && strstr(v->rows[0].label, arg);
}

static bool first_row_module_or_main(const char *s, const struct view *v, const void *arg)
{
	(void)s;
	(void)arg;
	return v->nrows > 0 &&
	       (starts(v->rows[0].label, "<module> (hot.py") || starts(v->rows[0].label, "main (hot.py"));
}

/* hot_loop first, cold_loop there too with several times less OwnTime. */
static bool hot_over_cold(const char *s, const struct view *v, const void *arg)
{
	double hot = sum_own_s(v, "hot_loop ("), cold = sum_own_s(v, "cold_loop (");

	(void)s;
	(void)arg;
	return first_row(s, v, "hot_loop (") && cold > 0 && hot > 3 * cold && hot >= 1.0;
}

static bool one_hot_function_row(const char *s, const struct view *v, const void *arg)
{
	(void)arg;
	return strstr(s, "By: function") && rows_with(v, "hot_loop (") == 1 &&
	       rows_with(v, "hot_loop (hot.py)") == 1;
}

static bool only_rows_with(const char *s, const struct view *v, const void *arg)
{
	(void)s;
	return v->nrows > 0 && rows_with(v, arg) == v->nrows;
}

static bool rows_with_and_without(const char *s, const struct view *v, const void *arg)
{
	const char *const *pair = arg;

	(void)s;
	return strstr(s, pair[2]) && rows_with(v, pair[0]) > 0 && rows_with(v, pair[1]) == 0;
}

static bool spinner_near_full(const char *s, const struct view *v, const void *arg)
{
	(void)arg;
	return strstr(s, "Idle: shown") && sum_own_pct(v, "thread_spin (") >= 60;
}

static bool samples_at_least(const char *s, const struct view *v, const void *arg)
{
	(void)v;
	return header_num(s, "Samples: ") >= *(const double *)arg;
}

/* The key bar on the last line of a pane LINES high, the title on the
 * first. */
static bool laid_out(const char *s, const struct view *v, const void *arg)
{
	int lines = *(const int *)arg, n = 0;
	const char *p = s, *last = s;

	(void)v;
	if (!starts(s, "pystrobe top"))
		return false;
	while (*p && n < lines) {
		last = p;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
		n++;
	}
	return starts(last, "1-4Sort");
}

/* --- the process in the pane ---------------------------------------------- */

/* A child of ppid running pystrobe, or 0. */
static pid_t pystrobe_child(pid_t ppid)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (dir && (de = readdir(dir)) && !found) {
		char path[300], buf[512], *p;
		int fd, pid = atoi(de->d_name), parent = 0;
		ssize_t n;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 2, "%*c %d", &parent) != 1 || parent != ppid)
			continue;
		if (strstr(buf, "(pystrobe"))	/* or a PYSTROBE_BIN pystrobe-x */
			found = pid;
	}
	if (dir)
		closedir(dir);
	return found;
}

static pid_t wait_pystrobe_in(struct top_test *d, const char *name)
{
	char *pane = pane_format(d, name, "#{pane_pid}");
	pid_t shell = atoi(pane), pid = 0;
	long long deadline = now_ms() + WAIT_MS;

	free(pane);
	while (shell > 0 && !(pid = pystrobe_child(shell)) && now_ms() < deadline)
		sleep_ms(50);
	return pid;
}

/* After top is gone the pane must be as before: the marker echoed before
 * it still on the screen, top's table gone, no alternate screen, the
 * cursor shown, keypad mode off, and the tty in echo and icanon mode. */
static void check_restored(struct top_test *d, const char *name, const char *what,
			   const char *exit_line)
{
	char *s = NULL, *f, *tty, *ex;
	struct argv_buf a = { .n = 0 };
	struct run r;

	if (!wait_for(d, name, has_text, exit_line, WAIT_MS, &s)) {
		ex = excerpt(s, 12);
		flunk(d, what, "no \"%s\" after top ended; the screen:\n%s", exit_line, ex);
		free(ex);
	}
	if (!strstr(s, MARKER))
		flunk(d, what, "the text from before top (%s) is not back on the screen", MARKER);
	if (strstr(s, "%Own  %Total"))
		flunk(d, what, "top's table is still on the screen");
	free(s);
	f = pane_format(d, name, "#{alternate_on}");
	if (strcmp(f, "0"))
		flunk(d, what, "the alternate screen is still on (alternate_on=%s)", f);
	free(f);
	f = pane_format(d, name, "#{cursor_flag}");
	if (strcmp(f, "1"))
		flunk(d, what, "the cursor is still hidden (cursor_flag=%s)", f);
	free(f);
	f = pane_format(d, name, "#{keypad_cursor_flag}");
	if (strcmp(f, "0"))
		flunk(d, what, "keypad mode is still on (keypad_cursor_flag=%s)", f);
	free(f);
	tty = pane_format(d, name, "#{pane_tty}");
	arg(&a, "stty");
	arg(&a, "-a");
	arg(&a, "-F");
	arg(&a, tty);
	if (run_cmd(&r, TMUX_MS, a.v) == 0) {
		if (run_exit(&r) != 0 || strstr(r.out, "-echo ") || strstr(r.out, "-icanon"))
			flunk(d, what, "the tty is not back in echo/icanon mode: %s", r.out);
		run_free(&r);
	}
	free(tty);
}

/* --- the scenarios -------------------------------------------------------- */

static char *top_command(struct top_test *d, const char *top_args, const char *after)
{
	char *cmd = NULL;

	(void)d;
	if (asprintf(&cmd, "echo %s; '%s' top --delay %s %s; echo \"TOP-EXIT=$?\"; %s",
		     MARKER, pystrobe_path(), DELAY, top_args, after) < 0)
		return NULL;
	return cmd;
}

/* Everything the keys do, on a running hot.py --thread, then q. */
static void interactive(struct top_test *d, pid_t pid)
{
	const char *name = "keys";
	const char *spinner_only[] = { "thread_spin (", "hot_loop (", "\"spinner\"" };
	const char *main_only[] = { "hot_loop (", "thread_spin (", "\"MainThread\"" };
	char pidarg[32], version[32], *cmd, *s = NULL;
	double samples, later;
	int lines;

	snprintf(pidarg, sizeof(pidarg), "--pid %d", (int)pid);
	cmd = top_command(d, pidarg, "sleep 120");
	if (start_session(d, name, cmd) != 0) {
		free(cmd);
		return;
	}
	free(cmd);

	/* The table: the hot function first, the cold one well below. */
	if (!expect(d, name, "hot function first", hot_over_cold, NULL))
		return;
	snprintf(version, sizeof(version), "Python 3.%d", d->ti->minor);
	expect(d, name, "the Python version in the header", has_text, version);
	if (strstr(d->ti->label, "t ft-build")) {
		/* No GIL: how many threads are attached a round, the spinning
		 * main thread and the spinner 10% of the time; never a GIL. */
		wait_for(d, name, has_text, "Attached: ", WAIT_MS, &s);
		if (header_num(s, "Attached: ") < 0.8 || header_num(s, "Attached: ") > 2.01 ||
		    strstr(s, "GIL: "))
			flunk(d, "attached", "a spinning main thread is attached, and a spinner "
			      "now and then, but Attached: %.1f%s", header_num(s, "Attached: "),
			      strstr(s, "GIL: ") ? " (and a GIL share)" : "");
	} else {
		wait_for(d, name, has_text, "GIL: ", WAIT_MS, &s);
		if (header_num(s, "GIL: ") < 50)
			flunk(d, "GIL share", "a spinning main thread holds the GIL, but GIL: "
			      "%.1f", header_num(s, "GIL: "));
	}
	if (header_num(s, "Threads: ") != 2)
		flunk(d, "threads", "hot.py --thread has 2 threads, the header says %.0f",
		      header_num(s, "Threads: "));
	free(s);

	/* Names from the target: escaped, and the screen not cleared by them. */
	if (d->ti->minor >= 8) {
		expect(d, name, "the odd name escaped", has_text, ODD_SHOWN);
		if (!wait_for(d, name, laid_out, &(int){ LINES_ }, 1000, NULL))
			flunk(d, "odd name", "the screen is not laid out as it should be");
	}

	/* Sorting. */
	keys(d, name, "4");
	expect(d, name, "4: TotalTime puts <module> or main first", first_row_module_or_main, NULL);
	expect(d, name, "4: the header says so", has_text, "Sort: TotalTime");
	keys(d, name, "1");
	expect(d, name, "1: %Own puts hot_loop first", first_row, "hot_loop (");
	keys(d, name, "2");
	expect(d, name, "2: %Total puts <module> or main first", first_row_module_or_main, NULL);
	keys(d, name, "3");
	expect(d, name, "3: OwnTime puts hot_loop first", first_row, "hot_loop (");

	/* Lines and functions. */
	keys(d, name, "L");
	expect(d, name, "L: one row per function", one_hot_function_row, NULL);
	keys(d, name, "L");
	expect(d, name, "L again: by line", has_text, "By: line");

	/* The filter. */
	keys(d, name, "/");
	expect(d, name, "/: the prompt", has_text, "Filter:");
	keys(d, name, "cold");
	keys(d, name, "Enter");
	expect(d, name, "/cold: only cold_loop rows", only_rows_with, "cold_loop (");
	expect(d, name, "/cold: the header shows the filter", has_text, "Filter: cold");
	keys(d, name, "Escape");
	expect(d, name, "Esc: the filter is gone", first_row, "hot_loop (");

	/* Threads: T goes through them in order of thread id, main first. */
	keys(d, name, "T");
	expect(d, name, "T: the main thread alone", rows_with_and_without, main_only);
	keys(d, name, "T");
	expect(d, name, "T T: the spinner thread alone", rows_with_and_without, spinner_only);
	keys(d, name, "T");
	expect(d, name, "T T T: all threads again", has_text, "Showing: all threads");

	/* Idle threads. */
	keys(d, name, "I");
	expect(d, name, "I: the sleeping spinner is counted", spinner_near_full, NULL);
	keys(d, name, "I");
	expect(d, name, "I again: idle threads hidden", has_text, "Idle: hidden");

	/* Pause: the numbers stand still while sampling goes on. */
	keys(d, name, "Space");
	expect(d, name, "Space: PAUSED", has_text, "PAUSED");
	s = screen(d, name);
	samples = header_num(s, "Samples: ");
	free(s);
	sleep_ms(1500);
	s = screen(d, name);
	later = header_num(s, "Samples: ");
	free(s);
	if (samples < 0 || later != samples)
		flunk(d, "pause", "Samples went from %.0f to %.0f while paused", samples, later);
	keys(d, name, "Space");
	expect(d, name, "Space again: PAUSED gone", lacks_text, "PAUSED");

	/* Reset: the sample count starts again from 0. */
	wait_for(d, name, samples_at_least, &(double){ 200 }, WAIT_MS, &s);
	samples = header_num(s, "Samples: ");
	free(s);
	keys(d, name, "R");
	sleep_ms(300);
	s = screen(d, name);
	later = header_num(s, "Samples: ");
	free(s);
	if (samples < 200 || later < 0 || later >= samples / 2)
		flunk(d, "reset", "Samples went from %.0f to %.0f after R", samples, later);
	expect(d, name, "R: the table fills again", first_row, "hot_loop (");

	/* Help. */
	keys(d, name, "?");
	expect(d, name, "?: help", has_text, "pystrobe top: keys");
	keys(d, name, "x");
	expect(d, name, "a key closes the help", lacks_text, "pystrobe top: keys");

	/* Resize. */
	tmux(d, NULL, "resize-window", "-t", name, "-x", "100", "-y", "24", NULL);
	lines = 24;
	expect(d, name, "resize to 100x24", laid_out, &lines);

	/* q: the terminal as it was. */
	keys(d, name, "q");
	check_restored(d, name, "q", "TOP-EXIT=0");
	tmux(d, NULL, "kill-session", "-t", name, NULL);
}

/* SIGTERM and Ctrl-C (SIGINT from the terminal) to top: each in a pane of
 * its own, one after the other. */
static void signals(struct top_test *d, pid_t pid)
{
	static const char *const names[] = { "sigterm", "ctrl-c" };
	char pidarg[32];

	snprintf(pidarg, sizeof(pidarg), "--pid %d", (int)pid);
	for (int i = 0; i < 2; i++) {
		const char *name = names[i];
		char *cmd = top_command(d, pidarg, "sleep 120");
		pid_t top;

		if (!cmd || start_session(d, name, cmd) != 0) {
				free(cmd);
			return;
		}
		free(cmd);
		if (expect(d, name, name, first_row, "hot_loop (")) {
			if (i == 0) {
				top = wait_pystrobe_in(d, name);
				if (top > 0)
					kill(top, SIGTERM);
				else
					flunk(d, name, "cannot find pystrobe in the pane");
			} else {
				keys(d, name, "C-c");
			}
			check_restored(d, name, name, "TOP-EXIT=0");
		}
		tmux(d, NULL, "kill-session", "-t", name, NULL);
	}
}

static bool exited_banner(const char *s, const struct view *v, const void *arg)
{
	const char *p = strstr(s, "process ");

	(void)arg;
	return p && strstr(p, " exited (status 3)") && rows_with(v, "hot_loop (") > 0;
}

/* Start a session `name` running "top OPTS -- COMMAND" (command from a),
 * followed by a long sleep so that the pane stays to be looked at. */
static bool start_launch(struct top_test *d, const char *name, const char *opts,
			 struct argv_buf *a)
{
	char *words = shell_words(a->v), *top_args = NULL, *cmd = NULL;
	int rc = -1;

	if (asprintf(&top_args, "%s-- %s", opts, words) < 0)
		top_args = NULL;
	free(words);
	if (top_args)
		cmd = top_command(d, top_args, "sleep 120");
	if (cmd)
		rc = start_session(d, name, cmd);
	free(top_args);
	free(cmd);
	return rc == 0;
}

/* What the launched command wrote while the view owned the terminal: the
 * file top names on exit must hold it. */
static void check_output_kept(struct top_test *d, const char *name)
{
	char *s = screen(d, name), *text = NULL;
	const char *p = strstr(s, "the program's output: ");
	char path[PATH_MAX] = "";

	if (p)
		sscanf(p + strlen("the program's output: "), "%4095s", path);
	if (path[0])
		text = slurp(path);
	if (!text || !strstr(text, OUTPUT_MARK))
		flunk(d, "launch, its output", "no file named on exit holds what the program "
		      "wrote (%s): %s", path[0] ? path : "none named", s);
	if (path[0])
		unlink(path);
	free(text);
	free(s);
}

/* A launched command that writes and exits: the banner, the last view,
 * its status, its output kept. */
static void launched(struct top_test *d)
{
	const char *name = "launch";
	struct argv_buf a = { .n = 0 };

	/* sh writes, then becomes the Python. */
	arg(&a, "sh");
	arg(&a, "-c");
	arg(&a, "echo " OUTPUT_MARK " >&2; exec \"$@\"");
	arg(&a, "sh");
	arg_python(&a, d->ti);
	arg(&a, d->script);
	arg(&a, "--duration");
	arg(&a, "3");
	arg(&a, "--exit");
	arg(&a, "3");
	if (!start_launch(d, name, "", &a))
		return;
	expect(d, name, "launch: the table", first_row, "hot_loop (");
	expect(d, name, "launch: \"process PID exited (status 3)\" over the last view",
	       exited_banner, NULL);
	keys(d, name, "q");
	check_restored(d, name, "launch, q", "TOP-EXIT=3");
	check_output_kept(d, name);
	tmux(d, NULL, "kill-session", "-t", name, NULL);
}

/* --- a hung process --------------------------------------------------------- */

/* Two threads, both asleep for good: stuck_sleep() in time.sleep() and
 * stuck_wait() on an Event; with an OUTDIR, ready.json once both wait. */
#define HUNG_CODE \
	"import sys, threading, time\n" \
	"def stuck_wait(e):\n" \
	"    e.wait()\n" \
	"def stuck_sleep():\n" \
	"    time.sleep(600)\n" \
	"e = threading.Event()\n" \
	"threading.Thread(target=stuck_wait, args=(e,), daemon=True).start()\n" \
	"if len(sys.argv) > 1:\n" \
	"    open(sys.argv[-1] + '/ready.json', 'w').close()\n" \
	"stuck_sleep()\n"

/* The empty table says why, and that I shows them. */
static bool idle_hint(const char *s, const struct view *v, const void *arg)
{
	(void)arg;
	return v->nrows == 0 && strstr(s, "Idle: hidden") &&
	       strstr(s, "none of the 2 threads ran in the last ") &&
	       strstr(s, "; press I to show idle threads");
}

static bool stuck_rows(const char *s, const struct view *v, const void *arg)
{
	(void)arg;
	return strstr(s, "Idle: shown") && !strstr(s, "press I") &&
	       rows_with(v, "stuck_sleep (") > 0 && rows_with(v, "stuck_wait (") > 0;
}

/* top --pid on a process whose threads all sleep: the hint in the empty
 * table, I shows them, q exits 0. */
static void hung_hint(struct top_test *d, pid_t pid)
{
	const char *name = "hung";
	char pidarg[32], *cmd;

	snprintf(pidarg, sizeof(pidarg), "--pid %d", (int)pid);
	cmd = top_command(d, pidarg, "sleep 120");
	if (!cmd || start_session(d, name, cmd) != 0) {
		free(cmd);
		return;
	}
	free(cmd);
	if (expect(d, name, "hung: the hint in the empty table", idle_hint, NULL)) {
		keys(d, name, "I");
		expect(d, name, "hung, I: the sleeping threads' rows", stuck_rows, NULL);
	}
	keys(d, name, "q");
	check_restored(d, name, "hung, q", "TOP-EXIT=0");
	tmux(d, NULL, "kill-session", "-t", name, NULL);
}

/* --duration 2: top exits 0 by itself, two seconds of sampling after it
 * starts (its start-up: reading the process, at most a few seconds). */
static void duration(struct top_test *d, pid_t pid)
{
	const char *name = "duration";
	char pidarg[48], *cmd, *s = NULL, *ex;
	long long t0, took;

	snprintf(pidarg, sizeof(pidarg), "--duration 2 --pid %d", (int)pid);
	cmd = top_command(d, pidarg, "sleep 120");
	t0 = now_ms();
	if (!cmd || start_session(d, name, cmd) != 0) {
		free(cmd);
		return;
	}
	free(cmd);
	if (!wait_for(d, name, has_text, "TOP-EXIT=", WAIT_MS, &s)) {
		ex = excerpt(s, 12);
		flunk(d, "--duration 2", "still running after %d s:\n%s", WAIT_MS / 1000, ex);
		free(ex);
	} else if (!strstr(s, "TOP-EXIT=0")) {
		flunk(d, "--duration 2", "not exit 0: %s", strstr(s, "TOP-EXIT="));
	} else if ((took = now_ms() - t0) < 2000 || took > 8000) {
		flunk(d, "--duration 2", "ended %lld ms after it started", took);
	}
	free(s);
	check_restored(d, name, "--duration 2", "TOP-EXIT=0");
	tmux(d, NULL, "kill-session", "-t", name, NULL);
}

/* q on a launched command that still runs: top ends it and exits 0, not
 * with the command's 130 from the SIGINT top sent it, and says so. */
static void launched_q(struct top_test *d)
{
	const char *name = "launch-q";
	struct argv_buf a = { .n = 0 };
	char *s = NULL;

	arg_python(&a, d->ti);
	arg(&a, "-c");
	arg(&a, HUNG_CODE);
	if (!start_launch(d, name, "", &a))
		return;
	expect(d, name, "launch, q: sampling", samples_at_least, &(double){ 100 });
	keys(d, name, "q");
	check_restored(d, name, "launch, q while it runs", "TOP-EXIT=0");
	/* Its thread is a daemon: the SIGINT alone ends it, by the signal
	 * since 3.8, by exit status 1 before (an uncaught KeyboardInterrupt).
	 * -J: the line is longer than the pane is wide. */
	if (tmux(d, &s, "capture-pane", "-p", "-J", "-t", name, NULL) != 0 || !s ||
	    !strstr(s, d->ti->minor >= 8 ? "' ended by SIGINT, sent by pystrobe at q\n" :
			"' exited with status 1 after SIGINT, sent by pystrobe at q\n"))
		flunk(d, "launch, q", "no line saying how the command ended:\n%s", s ? s : "");
	free(s);
	tmux(d, NULL, "kill-session", "-t", name, NULL);
}

/* The table of one worker: its own function, none of the others'. */
static bool one_worker(const char *s, const struct view *v, const void *arg)
{
	int funcs = 0;

	(void)arg;
	if (!strstr(s, "Showing: process ") || strstr(s, "(1 of "))
		return false;
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "hot%d (", i);
		funcs += rows_with(v, name) > 0;
	}
	return funcs == 1;
}

/* top -s on a main process and 4 workers (tests/targets/workers.py): the
 * header counts the processes, T shows one process at a time. */
static void subprocesses(struct top_test *d)
{
	const char *name = "subprocesses";
	struct argv_buf a = { .n = 0 };
	char script[PATH_MAX], dir[PATH_MAX], inside[PATH_MAX];

	test_interp_script(d->ti, "tests/targets/workers.py", script, sizeof(script));
	test_interp_shared_dir(d->ti, dir, inside, sizeof(dir));
	arg_python(&a, d->ti);
	arg(&a, script);
	arg(&a, "fork");
	arg(&a, "--cpu");
	arg(&a, "6");
	arg(&a, inside);
	if (!start_launch(d, name, "-s ", &a)) {
		rm_rf(dir);
		return;
	}
	expect(d, name, "-s: \"Processes: 5\" in the header", has_text, "Processes: 5");
	expect(d, name, "-s: \"Showing: all processes\"", has_text, "Showing: all processes");
	keys(d, name, "T");
	expect(d, name, "-s: T shows the first process", has_text, "(1 of 5)");
	keys(d, name, "T");
	expect(d, name, "-s: T on shows a worker, with its function alone", one_worker, NULL);
	keys(d, name, "q");
	check_restored(d, name, "-s, q", "TOP-EXIT=");
	tmux(d, NULL, "kill-session", "-t", name, NULL);
	rm_rf(dir);
}

static int count_lines_starting(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += starts(p, prefix);
	return n;
}

/* stdout not a terminal: snapshots, until SIGINT or the target's exit. */
static void no_tty(struct top_test *d, pid_t pid)
{
	char out[PATH_MAX + 32], pidarg[16], *text, *ex;
	struct argv_buf a = { .n = 0 };
	long long deadline;
	int status = -1, fd;
	pid_t top;
	struct run r;

	snprintf(out, sizeof(out), "%s/snapshots.txt", sock_dir);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)pid);
	top = fork();
	if (top == 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(pystrobe_path(), "pystrobe", "top", "--pid", pidarg, "--delay", DELAY,
		      (char *)NULL);
		_exit(127);
	}
	sleep_ms(2200);
	kill(top, SIGINT);
	deadline = now_ms() + 10000;
	while (waitpid(top, &status, WNOHANG) == 0 && now_ms() < deadline)
		sleep_ms(20);
	if (now_ms() >= deadline) {
		flunk(d, "no tty, SIGINT", "still running 10 s after SIGINT");
		kill_reap(top);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		flunk(d, "no tty, SIGINT", "ended with status 0x%x, not exit 0", status);
	}
	text = slurp(out);
	if (!text) {
		flunk(d, "no tty", "no output file");
	} else {
		int n = count_lines_starting(text, "pystrobe top: pid ");
		bool bad = true;

		if (n < 2 || n > 6)
			flunk(d, "no tty", "%d snapshots in 2.2 s at --delay %s", n, DELAY);
		else if (!strstr(text, "  %Own  %Total   OwnTime  TotalTime  Function (file:line)\n") ||
			 !strstr(text, "  hot_loop (hot.py:"))
			flunk(d, "no tty", "no table with hot_loop in the snapshots");
		else if (strchr(text, '\033') || strchr(text, '\a'))
			flunk(d, "no tty", "an escape or bell character went out raw");
		else if (d->ti->minor >= 8 && !strstr(text, ODD_SHOWN))
			flunk(d, "no tty", "the odd name is not shown escaped");
		else
			bad = false;
		if (bad) {
			ex = excerpt(text, 20);
			msg_add(&d->failures, "%s: the snapshots began:\n%s", d->ti->label, ex);
			free(ex);
		}
	}
	free(text);

	/* Launched: ends by itself with the command's status. */
	arg(&a, pystrobe_path());
	arg(&a, "top");
	arg(&a, "--delay");
	arg(&a, DELAY);
	arg(&a, "--");
	arg_python(&a, d->ti);
	arg(&a, d->script);
	arg(&a, "--duration");
	arg(&a, "1.5");
	arg(&a, "--exit");
	arg(&a, "4");
	if (run_cmd(&r, 30000, a.v) < 0) {
		flunk(d, "no tty, launch", "cannot run pystrobe");
		return;
	}
	if (run_exit(&r) != 4)
		flunk(d, "no tty, launch", "exit %d, not the command's 4; stderr: %s", run_exit(&r),
		      r.err);
	if (!strstr(r.out, " exited (status 4)\n") || !strstr(r.out, "hot_loop (hot.py:"))
		flunk(d, "no tty, launch", "no hot_loop or no exit line in:\n%s", r.out);
	run_free(&r);
}

/* --- the test ------------------------------------------------------------- */

START_TEST(test_top)
{
	struct top_test d = { .ti = chosen[_i] };
	struct target t;
	char why[512];

	if (!have_tmux) {
		test_skip("top: no tmux (apt-get install tmux): top not run on %s", d.ti->label);
		return;
	}
	test_used("tmux");
	printf("top: %s\n", d.ti->label);
	snprintf(d.sock, sizeof(d.sock), "%s/tmux-%d", sock_dir, _i);
	test_interp_script(d.ti, "tests/targets/hot.py", d.script, sizeof(d.script));

	if (target_start(&t, d.ti, why, sizeof(why), d.script, "--thread", NULL) < 0 ||
	    target_wait_file(&t, "ready.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		target_stop(&t);
		ck_abort_msg("%s: cannot start hot.py: %s", d.ti->label, why);
	}
	/* A session for the whole test: the server must not exit (and race
	 * the next new-session) when a scenario's session is killed. */
	if (start_session(&d, "keep", "sleep 600") != 0) {
		target_stop(&t);
		ck_abort_msg("%.3000s", d.failures);
	}
	interactive(&d, t.py_pid);
	signals(&d, t.py_pid);
	no_tty(&d, t.py_pid);
	target_stop(&t);
	if (target_start(&t, d.ti, why, sizeof(why), "-c", HUNG_CODE, NULL) < 0 ||
	    target_wait_file(&t, "ready.json", TARGET_READY_MS, why, sizeof(why)) < 0) {
		flunk(&d, "hung", "cannot start the sleeping target: %s", why);
	} else {
		hung_hint(&d, t.py_pid);
		duration(&d, t.py_pid);
	}
	target_stop(&t);
	launched(&d);
	launched_q(&d);
	subprocesses(&d);
	tmux(&d, NULL, "kill-server", NULL);

	if (d.failures) {
		/* In full here: Check's own messages are limited to 4 KiB. */
		fprintf(stderr, "top: %s FAILED:\n%s", d.ti->label, d.failures);
		ck_abort_msg("\n%.3000s%s", d.failures,
			     strlen(d.failures) > 3000 ? "\n[... the rest on stderr]" : "");
	}
}
END_TEST

START_TEST(test_interps_chosen)
{
	ck_assert_msg(nchosen >= 2, "top runs on at least two interpreters; found %d", nchosen);
}
END_TEST

/* The Debian python3.11, a pyenv 3.12, a free-threaded build (no GIL:
 * its Attached figure) and every build of the newest version, else whatever there is to make two; all with PYSTROBE_TOP_ALL=1. */
static void choose(const struct test_interp *all, int n)
{
	const char *every = getenv("PYSTROBE_TOP_ALL");
	int oldest, newest;

	test_interp_span(all, n, &oldest, &newest);
	for (int i = 0; i < n && nchosen < 32; i++) {
		bool want = (every && *every && strcmp(every, "0")) ||
			    strstr(all[i].label, "debian-static") ||
			    strstr(all[i].label, "t ft-build") ||
			    all[i].minor == all[newest].minor ||
			    (strstr(all[i].label, " pyenv") && all[i].minor == 12 &&
			     !strstr(all[i].label, "shim"));

		if (want)
			chosen[nchosen++] = &all[i];
	}
	for (int i = 0; i < n && nchosen < 2; i++) {
		bool dup = false;

		for (int j = 0; j < nchosen; j++)
			dup |= chosen[j] == &all[i];
		if (!dup && !all[i].root[0]) {
			fprintf(stderr, "top: using %s in place of a missing one\n", all[i].label);
			chosen[nchosen++] = &all[i];
		}
	}
	fprintf(stderr, "top: running on %d:", nchosen);
	for (int i = 0; i < nchosen; i++)
		fprintf(stderr, " [%s]", chosen[i]->label);
	fprintf(stderr, "\n");
}

static void remove_sock_dir(void)
{
	struct dirent *de;
	DIR *dir = opendir(sock_dir);

	/* Servers a failed or timed-out test left running. */
	while (dir && (de = readdir(dir))) {
		char path[PATH_MAX + 300], cmd[PATH_MAX + 400];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", sock_dir, de->d_name);
		if (!strncmp(de->d_name, "tmux-", 5)) {
			snprintf(cmd, sizeof(cmd), "tmux -S '%s' kill-server >/dev/null 2>&1", path);
			if (system(cmd) < 0)
				perror("system");
		}
		unlink(path);
	}
	if (dir)
		closedir(dir);
	rmdir(sock_dir);
}

int main(void)
{
	const struct test_interp *all;
	Suite *s = suite_create("top");
	TCase *tc;
	int n, status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The panes and tmux itself speak UTF-8; no outer tmux interferes. */
	setenv("LANG", "C.UTF-8", 1);
	unsetenv("LC_ALL");
	unsetenv("LC_CTYPE");
	unsetenv("TMUX");
	have_tmux = system("tmux -V >/dev/null 2>&1") == 0;
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/pystrobe-top-XXXXXX");
	if (!mkdtemp(sock_dir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	n = test_interps(&all);
	choose(all, n);
	printf("top: pystrobe is %s\n", pystrobe_path());

	tc = tcase_create("tmux");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_interps_chosen);
	tcase_add_loop_test(tc, test_top, 0, nchosen);
	suite_add_tcase(s, tc);

	status = run_suite(s);
	remove_sock_dir();
	return status;
}
