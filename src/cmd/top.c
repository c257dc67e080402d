/* pystrobe top: a live, top-like view of where a Python process spends its
 * time.
 *
 * The command: its options, the set-up, the loop and the end.  One thread
 * does everything: it steps the fleet's sampling clock (the rounds and
 * walks of the tree fleet_run makes), and between the steps it reads keys
 * and, every --delay seconds, ends an interval of the model and redraws.
 * What is shown is the model (src/top/model.c), how it is drawn the view
 * (view.c), and what each key does the key table (keys.c).
 */
#include "cmd/cmd.h"
#include "cmd/quit.h"
#include "profile/output.h"
#include "sample/fleet.h"
#include "sample/fleetprio.h"
#include "analysis/gpuwatch.h"
#include "cmd/target_opts.h"
#include "analysis/waitmark.h"
#include "cmd/launch.h"
#include "cmd/top_slurm.h"
#include "process/proc.h"
#include "process/selfstop.h"
#include "top/keys.h"
#include "top/model.h"
#include "top/view.h"
#include "util/signame.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct top {
	struct waitmark *waits;		/* with --waits */
	struct target_opts o;
	double delay_s;		/* --delay */
	struct top_model m;
	struct top_view v;
	struct top_ui ui;
	struct fleet *f;
	struct fleet_clock clock;
	struct fleet_prio prio;	/* the rounds' priority (fleetprio.h) */
	struct child child;	/* launch mode */
	bool tty;		/* full screen, else snapshots */
	bool quit;
	bool over;		/* --duration ran out */
	bool dirty;		/* the screen is to be drawn again */
	uint64_t next_refresh;	/* the end of the interval under way */
	/* While the full-screen view owns the terminal, a launched
	 * command's output goes to this file, named when top ends. */
	char *log;
	int log_fd;
	struct gpuwatch *gpu;	/* --gpu */
};

static void install_signals(void)
{
	quit_on_signals();
	/* A closed pipe ends the snapshots through a failed write instead. */
	signal(SIGPIPE, SIG_IGN);
}

static uint64_t delay_ns(const struct top *t)
{
	return (uint64_t)(t->delay_s * 1e9);
}

/* The sampling loop's totals at now, for the model.  The clock's longest
 * lag is zeroed at each interval's end, so it is the interval's. */
static void tick(const struct top *t, uint64_t now, struct top_tick *k)
{
	k->now_ns = now;
	k->rounds = t->clock.rounds;
	k->lagged = t->clock.lagged;
	k->max_lag_ns = t->clock.max_lag_ns;
	fleet_counts(t->f, &k->counts);
	k->nprocs = fleet_nprocs(t->f);
	k->version = fleet_python_version(t->f);
}

/* Print a snapshot; a closed output ends the run. */
static void snapshot(struct top *t)
{
	if (top_view_snapshot(&t->m, stdout) < 0)
		t->quit = true;
}

/* End a launched command and return its exit status.  With stop (q, a
 * signal) it is ended as a terminal's Ctrl-C would, then firmer. */
static int finish_child(struct top *t, bool stop)
{
	return child_finish(&t->child, stop);
}

/* A command top ended (q, --duration) has its status replaced by 0: one
 * line says how it went, as record says it at the end of -d. */
static void say_end(const struct top *t)
{
	const struct child *ch = &t->child;
	struct strbuf sb = STRBUF_INIT;

	if (!ch->pid || !ch->ended || quit_requested)
		return;
	child_describe_end(ch, &sb);
	if (!(WIFSIGNALED(ch->status) && WTERMSIG(ch->status) == ch->sent))
		sb_printf(&sb, " after SIG%s", sig_abbrev(ch->sent));
	if (t->over)
		sb_printf(&sb, ", sent by pystrobe at the end of --duration %g", t->o.so.duration_s);
	else
		sb_puts(&sb, ", sent by pystrobe at q");
	errorf("top: '%.100s%s' %s", t->m.what, strlen(t->m.what) > 100 ? "..." : "", sb.buf);
	sb_release(&sb);
}

/* --- the loop ------------------------------------------------------------- */

/* Count afresh from now (R), with idle threads sampled or not (I): the
 * counts with and without them do not add up. */
static void count_afresh(struct top *t, bool toggle_idle)
{
	uint64_t now = mono_ns();
	struct top_tick k;

	if (toggle_idle)
		fleet_set_idle(t->f, !t->m.idle);
	tick(t, now, &k);
	if (toggle_idle)
		top_model_set_idle(&t->m, !t->m.idle, &k);
	else
		top_model_reset(&t->m, &k);
	t->clock.max_lag_ns = 0;
	t->next_refresh = now + delay_ns(t);
}

/* Do what a key asks of the loop (keys.h). */
static void react(struct top *t, int todo)
{
	if (todo & (TOP_IDLE | TOP_RESET))
		count_afresh(t, todo & TOP_IDLE);
	if (todo & TOP_REPAINT)
		top_view_repaint();
	if (todo & TOP_QUIT)
		t->quit = true;
	if (todo & TOP_REDRAW)
		t->dirty = true;
}

static void read_keys(struct top *t)
{
	wint_t c;
	int kind;

	while ((kind = get_wch(&c)) != ERR)
		react(t, top_key_press(&t->m, &t->ui, kind, c));
}

static void target_exited(struct top *t)
{
	struct top_tick k;

	child_reap(&t->child, 2000);
	if (t->child.pid && t->child.reaped)
		t->m.exit_status = child_exit_status(&t->child);
	tick(t, mono_ns(), &k);
	top_model_exited(&t->m, &k);
	t->dirty = true;
	if (!t->tty) {
		snapshot(t);
		top_view_exited(&t->m, stdout);
	}
}

/* The GPUs' lines as of now, unless the view is paused. */
static void read_gpus(struct top *t)
{
	struct strbuf sb = STRBUF_INIT;

	if (!t->gpu || t->m.paused)
		return;
	gpuwatch_current(t->gpu, &sb);
	top_model_set_gpu(&t->m, sb.buf ? sb.buf : "");
	sb_release(&sb);
}

static void end_interval(struct top *t, uint64_t now)
{
	struct top_tick k;

	tick(t, now, &k);
	read_gpus(t);
	top_model_interval(&t->m, &k);
	t->clock.max_lag_ns = 0;
	if (!t->m.paused)
		t->dirty = true;
	t->next_refresh += delay_ns(t);
	if (t->next_refresh <= now)
		t->next_refresh = now + delay_ns(t);
	if (!t->tty)
		snapshot(t);
}

/* --duration ran out: the snapshots end with the interval under way
 * when it is half done or more, as a log of -d 10 --duration 60 ends
 * with the figures of the last 10 s. */
static void duration_over(struct top *t, uint64_t now)
{
	if (!t->tty && t->next_refresh <= now + delay_ns(t) / 2)
		end_interval(t, now);
	t->quit = t->over = true;
}

static void wait_event(struct top *t)
{
	uint64_t now = mono_ns(), until = UINT64_MAX;
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	struct timespec ts;
	bool keys = t->tty && isatty(STDIN_FILENO);

	if (t->quit || quit_requested)
		return;
	if (!t->m.exited) {
		until = fleet_due(t->f, &t->clock);
		if (t->next_refresh < until)
			until = t->next_refresh;
		if (until <= now)
			return;
		ts.tv_sec = (time_t)((until - now) / 1000000000ull);
		ts.tv_nsec = (long)((until - now) % 1000000000ull);
	} else {
		/* Only keys to wait for; a signal that came just before the
		 * ppoll() is seen this late at most. */
		ts.tv_sec = 0;
		ts.tv_nsec = 250000000;
	}
	/* Interrupted by a signal (a stop, a resize): the loop looks. */
	ppoll(keys ? &pfd : NULL, keys ? 1 : 0, &ts, NULL);
}

/* What the loop does after a step: the target's end, the interval's end,
 * keys and the screen.  Returns non-zero when the loop is over. */
static int between_rounds(struct top *t, int rc)
{
	uint64_t now;

	/* exec() into another program ends the view as an exit does. */
	if (rc < 0) {
		target_exited(t);
		if (!t->tty)
			return 1;
	}
	now = mono_ns();
	if (rc == FLEET_OVER) {
		duration_over(t, now);
		return 1;
	}
	if (!t->m.exited && now >= t->next_refresh)
		end_interval(t, now);
	if (t->tty) {
		read_keys(t);
		if (t->dirty && !t->quit) {
			top_view_draw(&t->v, &t->m, &t->ui);
			t->dirty = false;
		}
	}
	return 0;
}

static void run(struct top *t)
{
	struct top_tick k;

	fleet_start(t->f, &t->clock);
	tick(t, t->clock.start_ns, &k);
	top_model_start(&t->m, &k);
	t->next_refresh = t->clock.start_ns + delay_ns(t);
	t->dirty = true;

	while (!quit_requested && !t->quit) {
		int rc;

		rc = t->m.exited ? FLEET_WAIT : fleet_step(t->f, &t->clock);
		fleet_prio_after(&t->prio, rc == FLEET_ROUND);
		/* The rest is not sampling: at the level top was started with. */
		fleet_prio_aside(&t->prio);
		rc = between_rounds(t, rc);
		fleet_prio_back(&t->prio);
		if (rc)
			break;
		wait_event(t);
	}
	fleet_prio_end(&t->prio);
}

/* --- options -------------------------------------------------------------- */

#define AT(member) offsetof(struct top, member)

static const struct opt top_opts[] = {
	{ TARGET_OPT(PID), .help = "watch a running process" },
	{ TARGET_OPT(RATE), .help = "samples per second (default 100)" },
	OPT_NUMBER("delay", 'd', "SECS", "refresh every SECS seconds (default 1)",
		AT(delay_s), 0.05, 86400, "must be between 0.05 and 86400 seconds"),
	OPT_NUMBER("duration", 0, "SECS",
		"exit after SECS seconds, with status 0 (default:\n"
		"until q, Ctrl-C or the target's exit)", AT(o.so.duration_s), 0.001, 1e9,
		"must be a positive number of seconds"),
	{ TARGET_OPT(IDLE) },
	{ TARGET_OPT(GIL) },
	{ TARGET_OPT(FUNCTION) },
	{ TARGET_OPT(FULL) },
	{ TARGET_OPT(FULL_NAMES),
	  .help = "whole C++ names (default: without template arguments\n"
		  "and parameters)" },
	{ TARGET_OPT(BLOCKING) },
	{ TARGET_OPT(NONBLOCKING) },
	{ TARGET_OPT(NATIVE),
	  .help = "C/C++ functions too, merged with the Python ones; all:\n"
		  "also the interpreter's start-up frames\n"
		  "(pauses the threads: implies --blocking)" },
	{ TARGET_OPT(NO_DEBUGINFOD) },
	{ TARGET_OPT(TRAINING) },
	{ TARGET_OPT(WAITS),
	  .help = "a leaf frame <wait:gpu>, <wait:data> or\n"
		  "<wait:collective> on each sample waiting for the GPU,\n"
		  "the input pipeline or other ranks: a row each" },
	{ TARGET_OPT(ASYNC) },
	{ TARGET_OPT(SUBPROCESSES), .help = "also every process started by the target" },
	{ TARGET_OPT(GPU),
	  .help = "a header line per GPU the processes use: its\n"
		  "utilisation and memory, through NVML (--slurm:\n"
		  "each node's GPUs, with the ranks on each)" },
	{ TARGET_OPT(NO_PRIORITY) },
	{ TARGET_OPT(SLURM) },
	{ TARGET_OPT(PYSTROBE) },
	{ TARGET_OPT(TIMEOUT),
	  .help = "with --slurm: how long a node may take to answer\n"
		  "first (default 20)" },
	{ TARGET_OPT(SLURM_NODE) },
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table top_options = {
	.cmd = "top",
	.head = "usage: pystrobe top [options] --pid PID\n"
		"       pystrobe top [options] -- COMMAND [ARGS...]\n"
		"       pystrobe top [options] --slurm[=JOB[.STEP]]\n"
		"\n"
		"Show live which functions a Python process spends its time in.\n"
		"\n",
	.opts = top_opts,
	.column = 25,
	.tail = "\n"
		"Columns: %Own and %Total are shares of the last refresh interval (100% is\n"
		"one thread for the whole interval) in which the function was running\n"
		"itself, or was anywhere on the stack; OwnTime and TotalTime are the same\n"
		"in seconds since the start.\n"
		"\n"
		"Keys: 1-4 sort by column, L lines/functions, I idle threads, T all, one\n"
		"process or one thread (--slurm: each node, each rank, each thread),\n"
		"/ filter, Space pause, R reset, ? help, q quit.\n"
		"\n"
		"Idle threads are hidden until I (or --idle) shows them; a table they\n"
		"leave empty says so.\n"
		"\n"
		"When standard output is not a terminal, a plain-text snapshot (the top 20\n"
		"rows) is printed every --delay seconds until the target exits, --duration\n"
		"runs out or SIGINT.\n"
		"While the full-screen view is shown, a launched command reads /dev/null\n"
		"and its output goes to $TMPDIR/pystrobe-top-XXXXXX.log, named on exit.\n"
		"q and the end of --duration end it if it is still running (SIGINT to its\n"
		"process group, SIGTERM 5 s later, SIGKILL 2 s after that) and exit 0;\n"
		"Ctrl-C does so too, but exits with the command's status (130 for SIGINT).\n",
	/* The first word that is no option is the command to launch. */
	.stop_at_command = true,
	.shared = target_options,
	.shared_at = AT(o),
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct top *t, int argc, char **argv)
{
	int rc;

	target_opts_init(&t->o);
	t->delay_s = 1;
	if ((rc = opt_parse(&top_options, t, argc, argv)) != 0)
		return rc;
	return target_opts_finish(&t->o, &top_options, argc, argv);
}

/* --- the command ---------------------------------------------------------- */

/* A file for the launched command's output (a training loop's logs must
 * not be lost to the full screen): $TMPDIR/pystrobe-top-XXXXXX.log, the
 * user's under sudo.  Failing that, /dev/null, said now. */
static int open_log(struct top *t)
{
	uid_t uid;
	gid_t gid;

	t->log = xasprintf("%s/pystrobe-top-XXXXXX.log", out_tmpdir());
	t->log_fd = mkostemps(t->log, 4, O_CLOEXEC);
	if (t->log_fd >= 0) {
		if (sudo_user(&uid, &gid) > 0 && fchown(t->log_fd, uid, gid) != 0)
			errorf("top: cannot give '%s' to uid %d: %s", t->log, (int)uid,
			       strerror(errno));
		return t->log_fd;
	}
	errorf("top: cannot create '%s' (%s): the program's output is discarded", t->log,
	       strerror(errno));
	free(t->log);
	t->log = NULL;
	return t->log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
}

/* Once the terminal is ours again: where the program's output is, or
 * nothing (and no file) when it wrote none. */
static void close_log(struct top *t)
{
	struct stat st;

	if (t->log_fd >= 0)
		close(t->log_fd);
	if (!t->log)
		return;
	if (stat(t->log, &st) == 0 && st.st_size > 0)
		errorf("top: the program's output: %s", t->log);
	else
		unlink(t->log);
	free(t->log);
}

/* Launch the command, if any, and start sampling.  Returns 0, or -1 with
 * the exit status to end with in *status. */
static int start(struct top *t, int *status)
{
	char err[512], **argv;
	int rc, argc = 0;

	/* With --subprocesses only until it has started: the Python may be
	 * further down. */
	if (t->o.command) {
		if (child_start(&t->child, t->o.command, "top", t->tty ? open_log(t) : -1,
				t->o.fo.subprocesses,
				&quit_requested, status) < 0) {
			if (quit_requested)
				*status = finish_child(t, true);
			return -1;
		}
		t->o.pid = t->child.pid;
		/* A launcher: what it runs is watched as with -s. */
		if (t->child.python_below)
			t->o.fo.subprocesses = t->m.subprocesses = true;
	}
	rc = fleet_open(t->o.pid, &t->o.so, &t->o.fo, &t->m.p, &t->f, err, sizeof(err));
	/* --pid of a launcher (a shell, make): its Python, as with -s. */
	if (exit_code(rc) == EXIT_NOT_PYTHON && !t->o.command && !t->o.fo.subprocesses &&
	    follow_pid_below(t->o.pid, "top")) {
		t->o.fo.subprocesses = t->m.subprocesses = true;
		rc = fleet_open(t->o.pid, &t->o.so, &t->o.fo, &t->m.p, &t->f, err, sizeof(err));
	}
	if (rc < 0) {
		errorf("%s", err);
		*status = t->child.pid ? finish_child(t, true) : exit_code(rc);
		return -1;
	}
	if (t->o.gpu)
		t->gpu = gpuwatch_start(t->o.pid, mono_ns());
	argv = proc_cmdline(t->o.pid, &argc);
	top_model_set_target(&t->m, t->o.pid, argv, argc);
	proc_cmdline_free(argv);
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct top t;
	int rc, status = EXIT_OK;

	memset(&t, 0, sizeof(t));
	t.log_fd = -1;
	rc = parse_args(&t, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	if (t.o.slurm.node_job)
		return top_node(&t.o, t.delay_s);
	t.tty = isatty(STDOUT_FILENO);
	install_signals();
	top_model_init(&t.m, t.o.so.rate_hz, t.delay_s);
	t.m.by_function = t.o.by_function;
	t.m.full_filenames = t.o.full_filenames;
	t.m.full_names = t.o.full_names;
	t.m.subprocesses = t.o.fo.subprocesses;
	t.m.idle = t.o.so.idle;
	t.m.gil_only = t.o.so.gil_only;
	if (t.o.slurm.on) {
		status = top_slurm(&t.o, &t.m, t.delay_s, t.tty);
		goto out;
	}
	if (t.o.waits)
		t.waits = waitmark_new(&t.m.p);
	if (start(&t, &status) < 0)
		goto out;

	setlocale(LC_ALL, "");
	setlocale(LC_NUMERIC, "C");
	if (t.tty && (rc = top_view_start(&t.v, &t.ui)) < 0) {
		status = t.child.pid ? finish_child(&t, true) : exit_code(rc);
		goto out;
	}
	/* After ncurses, whose handler restores the terminal: ours stops
	 * through it once the threads are let go. */
	selfstop_on_signals();
	run(&t);
	top_view_end();
	status = finish_child(&t, quit_requested || !t.m.exited);
	/* Ended by us (q, the end of --duration), not by a signal to
	 * pystrobe: its status is ours to give, as record's -d does. */
	if (t.child.ended && !quit_requested)
		status = EXIT_OK;
	say_end(&t);
out:
	close_log(&t);
	gpuwatch_free(t.gpu);
	fleet_close(t.f);
	waitmark_free(t.waits);
	top_model_free(&t.m);
	return status;
}
