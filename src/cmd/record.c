/* pystrobe record: sample a process at a fixed rate and write a profile. */
#include "cmd/cmd.h"
#include "sample/fleet.h"
#include "analysis/gpuwatch.h"
#include "cmd/launch.h"
#include "python/locate.h"
#include "process/mem.h"
#include "profile/output.h"
#include "process/pause.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "process/schedprio.h"
#include "process/selfstop.h"
#include "profile/loss.h"
#include "profile/profile.h"
#include "profile/toplist.h"
#include "python/pystack.h"
#include "sample/sampler.h"
#include "cmd/target_opts.h"
#include "analysis/waitmark.h"
#include "cmd/snapshot.h"
#include "cmd/quit.h"
#include "cmd/record_node.h"
#include "util/status.h"
#include "util/statusline.h"
#include "util/signame.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Rows of the text summary: what a terminal shows without scrolling the
 * summary line away. */
#define TOPLIST_ROWS 10

struct record {
	struct target_opts t;
	const char *fname;		/* -f, or NULL */
	const struct out_format *fmt;
	struct out_opts oo;
	const char *output;
	const char *out_dir;	/* for the default name: NULL (here) or $TMPDIR */
	const char *out_dir_why;	/* why not here, or NULL */
	bool quiet;
	struct gpuwatch *gpu;	/* --gpu */
	struct child child;	/* launch mode */
	struct statusline sl;
	struct sampler_counts counts;	/* at the end */
	char merge_error[256];		/* the latest, or "" */
	const char *path;		/* where the profile goes */
	/* CPU time of the target and of its subprocesses while recorded
	 * (cpu0 at the start). */
	struct tree_cpu cpu, cpu0;
	bool cpu_known;
	struct waitmark *waits;		/* with --waits */
};

#define AT(member) offsetof(struct record, member)

static const struct opt record_opts[] = {
	{ TARGET_OPT(PID), .help = "profile a running process" },
	{ TARGET_OPT(RATE),
	  .help = "rounds per second; a round takes a sample of each\n"
		  "running thread (default 100)" },
	OPT_NUMBER("duration", 'd', "SECS", "stop after this long (default: Ctrl-C or exit)",
		AT(t.so.duration_s), 0.001, 1e9, "must be a positive number of seconds"),
	OPT_STRING("output", 'o', "FILE",
		"where to write, checked before sampling (default:\n"
		"named after the program, here, else in $TMPDIR;\n"
		"-: standard output)", AT(output)),
	OPT_STRING("format", 'f', "FORMAT",
		"flamegraph (SVG, default), collapsed, speedscope,\n"
		"chrometrace or pprof (default: from -o's ending:\n"
		".svg .txt .json .trace.json .pb.gz ...)", AT(fname)),
	{ TARGET_OPT(IDLE) },
	{ TARGET_OPT(GIL) },
	OPT_BOOL("threads", 0, "a root frame per thread", AT(t.so.threads)),
	{ TARGET_OPT(FUNCTION) },
	{ TARGET_OPT(FULL) },
	{ TARGET_OPT(FULL_NAMES),
	  .help = "whole C++ names in flame graph labels and the table\n"
		  "(default: without template arguments and parameters)" },
	{ TARGET_OPT(BLOCKING) },
	{ TARGET_OPT(NONBLOCKING) },
	{ TARGET_OPT(NATIVE),
	  .help = "C/C++ frames too, merged with the Python ones; all: also\n"
		  "the interpreter's start-up below the first Python frame\n"
		  "(pauses the threads: implies --blocking)" },
	{ TARGET_OPT(NO_DEBUGINFOD) },
	{ TARGET_OPT(TRAINING) },
	{ TARGET_OPT(WAITS),
	  .help = "a leaf frame <wait:gpu>, <wait:data> or\n"
		  "<wait:collective> on each sample waiting for the GPU,\n"
		  "the input pipeline or other ranks, and a summary of\n"
		  "each thread's shares" },
	{ TARGET_OPT(ASYNC) },
	{ TARGET_OPT(SUBPROCESSES),
	  .help = "also every process started by the target, a root\n"
		  "frame per process" },
	OPT_BOOL("group-processes", 0,
		"with -s: one root for the subprocesses that share\n"
		"a command line (numbers aside)", AT(t.fo.group)),
	{ TARGET_OPT(GPU),
	  .help = "the GPUs the processes use, through NVML: their\n"
		  "utilisation and memory in the summary and as\n"
		  "counters in the Chrome trace" },
	{ TARGET_OPT(NO_PRIORITY) },
	{ TARGET_OPT(SLURM) },
	{ TARGET_OPT(PYSTROBE) },
	{ TARGET_OPT(TIMEOUT) },
	{ TARGET_OPT(SLURM_NODE) },
	OPT_BOOL("quiet", 'q', "no status line, no table of functions, no summary", AT(quiet)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table record_options = {
	.cmd = "record",
	.head = "usage: pystrobe record [options] --pid PID\n"
		"       pystrobe record [options] -- COMMAND [ARGS...]\n"
		"\n"
		"Sample a Python process at a fixed rate and write a profile.\n"
		"\n",
	.opts = record_opts,
	.column = 25,
	.tail = "\n"
		"A launched command that is not Python (a shell script, make, uv run) is\n"
		"followed into the Python processes it starts, as with -s.\n"
		"\n"
		"A launched command runs in its own process group.  Stopped early (Ctrl-C,\n"
		"SIGTERM), pystrobe sends SIGINT to that group, SIGTERM 5 s later, SIGKILL\n"
		"2 s after that, and exits with the command's status.\n",
	/* The first word that is no option is the command to launch. */
	.stop_at_command = true,
	.shared = target_options,
	.shared_at = AT(t),
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct record *r, int argc, char **argv)
{
	int rc;

	target_opts_init(&r->t);
	if ((rc = opt_parse(&record_options, r, argc, argv)) != 0)
		return rc;
	if (out_format_choose("record", r->fname, r->output, &r->fmt) < 0 ||
	    target_opts_finish(&r->t, &record_options, argc, argv) < 0)
		return status_fail(EXIT_USAGE);
	if (r->t.fo.group && !r->t.fo.subprocesses)
		return usage_error("record", "--group-processes needs --subprocesses");
	/* record keeps one kind of frame: lines, or functions. */
	r->t.so.by_function = r->t.by_function;
	/* Without --waits no sample's running mark is read. */
	r->t.so.states_unused = !r->t.waits;
	r->oo.full_filenames = r->t.full_filenames;
	r->oo.full_names = r->t.full_names;
	return 0;
}

/* --- output --------------------------------------------------------------- */

static char *join_args(char **argv, int argc)
{
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; i < argc && argv[i]; i++) {
		if (i)
			sb_putc(&sb, ' ');
		sb_puts(&sb, argv[i]);
	}
	return sb_detach(&sb);
}

/* The program's name for the default file name: the script, else the
 * executable. */
static const char *program_name(char **argv, int argc)
{
	const char *name = argc > 0 ? argv[0] : "python";

	for (int i = 1; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (n > 3 && !strcmp(argv[i] + n - 3, ".py")) {
			name = argv[i];
			break;
		}
	}
	return strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
}

static char *default_output(const struct record *r, char **argv, int argc)
{
	char stamp[32], *out, *p;
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	out = xasprintf("pystrobe-%s-%d-%s.%s", program_name(argv, argc), (int)r->t.pid,
			stamp, r->fmt->ext);
	/* A file name, not a path: no slashes or odd characters from argv. */
	for (p = out; *p; p++)
		if (*p == '/' || *p == ' ' || (unsigned char)*p < 0x20)
			*p = '_';
	if (r->out_dir) {
		p = xasprintf("%s/%s", r->out_dir, out);
		free(out);
		out = p;
	}
	return out;
}

/* Before the first sample: where the profile goes must be writable, or a
 * whole recording is lost at its end.  -o somewhere we cannot write is
 * refused now; the default name, in a directory we cannot write (the
 * current one), goes to $TMPDIR instead, as the summary says. */
static int prepare_output(struct record *r)
{
	char *probe, *cwd;
	int err, tmp_err;

	if (r->output)
		return out_check_path(r->output, "record");
	if ((err = out_probe("pystrobe")) == 0)
		return 0;
	r->out_dir = out_tmpdir();
	probe = xasprintf("%s/pystrobe", r->out_dir);
	tmp_err = out_probe(probe);
	free(probe);
	if (!tmp_err) {
		/* Said with the file's name in the summary: a failure to
		 * come (not Python, not allowed) stays one line. */
		r->out_dir_why = strerror(-err);
		return 0;
	}
	cwd = getcwd(NULL, 0);
	usage_error("record", "cannot write in the current directory %s (%s), nor in %s: give "
		    "-o a file where you can write", cwd ? cwd : "", strerror(-err), r->out_dir);
	free(cwd);
	return status_fail(EXIT_USAGE);
}

/* Writing failed at the end (a full disk, a closed pipe): the recording
 * is not lost, it goes to $TMPDIR under the default name.  Returns the
 * path written (a new string), or NULL. */
static char *write_fallback(struct record *r, const struct profile *p, char **pargv,
			    int pargc)
{
	char *path;

	r->out_dir = out_tmpdir();
	path = default_output(r, pargv, pargc);
	if (out_write_file(r->fmt, p, &r->oo, path, "record") == 0) {
		errorf("record: the profile was written to %s instead", path);
		return path;
	}
	free(path);
	return NULL;
}

/* --- status --------------------------------------------------------------- */

/* Sampling fell behind often enough to tell: a few times and one round in
 * a hundred or more, or once by a tenth of a second.  A hiccup of the
 * machine is not news. */
static bool lag_worth_telling(uint64_t lagged, uint64_t rounds, double max_lag_ms)
{
	return (lagged >= 3 && lagged * 100 >= rounds) || (lagged && max_lag_ms >= 100);
}

/* Counts, in the one vocabulary of every file and view: a sample is one
 * thread's stack, a round samples every thread once, --rate is rounds
 * per second. */
static void show_status(void *arg, const struct sampler_status *st)
{
	struct record *r = arg;
	char line[512], stop[64] = "Ctrl-C";

	/* The program holds the terminal and ignores SIGINT: a Ctrl-C
	 * reaches it alone, and does nothing. */
	if (r->child.tty_fd >= 0 && !r->child.python_below && child_ignores(&r->child, SIGINT))
		snprintf(stop, sizeof(stop), "the program ignores Ctrl-C: kill -INT %d",
			 (int)getpid());
	snprintf(line, sizeof(line), "pystrobe: %.1f s, %llu samples, %.1f Hz%s; %s stops "
		 "and writes %s", st->elapsed_s, (unsigned long long)st->stacks, st->rate_hz,
		 lag_worth_telling(st->lagged, st->rounds, st->max_lag_ms) ? ", falling behind" :
		 "", stop, out_path_name(r->path));
	statusline_show(&r->sl, line);
}


/* What became of the samples that were not recorded whole, in plain
 * words. */
static void put_lost(struct strbuf *sb, const struct sampler_status *st, const struct profile *p)
{
	static const struct { const char *unit, *why; } lost[SERR_COUNT] = {
		[SERR_TORN] = { "sample", "discarded: the stack changed while it was read" },
		[SERR_STATE] = { "sample", "lost: the interpreter state could not be read" },
		[SERR_PAUSE] = { "sample", "lost: the threads could not be paused" },
		[SERR_MERGE] = { "merge error", "(the native stack did not fit: Python frames "
				 "only)" },
		[SERR_SYMBOLS] = { "sample", "with native frames unnamed (symbolization helper "
				   "lost)" },
		[SERR_GONE] = { "sample", "lost: the thread ended while it was read" },
	};
	bool any = false;

	for (int i = 0; i < SERR_COUNT; i++) {
		if (!st->errors[i] || !serr_is_error(i))
			continue;
		sb_printf(sb, ", %llu %s%s %s", (unsigned long long)st->errors[i], lost[i].unit,
			  st->errors[i] == 1 ? "" : "s", lost[i].why);
		any = true;
	}
	/* Samples counted without their native frames are no error, but
	 * not whole either. */
	if (!any && !profile_lost(p, PLOSS_LATE))
		sb_puts(sb, ", no errors");
	if (st->errors[SERR_GAP])
		sb_printf(sb, ", %llu stacks with a %s", (unsigned long long)st->errors[SERR_GAP],
			  serr_name(SERR_GAP));
}

/* Without --blocking: the stacks that would not hold still while their
 * thread ran, read with that thread stopped alone, or dropped when it
 * could not be stopped. */
static void put_stops(struct strbuf *sb, const struct sampler_counts *c)
{
	if (c->stopped_stacks)
		sb_printf(sb, ", %llu sample%s read with the thread stopped alone (its stack "
			  "would not hold still; stopped %.0f us at most)",
			  (unsigned long long)c->stopped_stacks, c->stopped_stacks == 1 ? "" : "s",
			  c->max_stop_ns / 1e3);
	if (c->stop_refused)
		sb_puts(sb, ", a thread whose stack would not hold still could not be stopped "
			"(ptrace refused: another tracer, or kernel.yama.ptrace_scope): its torn "
			"stacks were dropped");
}

static void put_lag(struct strbuf *sb, const struct sampler_status *st)
{
	if (!lag_worth_telling(st->lagged, st->rounds, st->max_lag_ms))
		return;
	sb_printf(sb, ", sampling fell behind %llu time%s (up to %.1f ms late, %llu round%s "
		  "skipped: try a lower --rate)", (unsigned long long)st->lagged,
		  st->lagged == 1 ? "" : "s", st->max_lag_ms, (unsigned long long)st->skipped,
		  st->skipped == 1 ? "" : "s");
}

/* Rounds that started late: on a busy machine, a sampler that waits for a
 * CPU gets one when a thread of the job blocks, and its samples lean
 * towards the job's waits.  Told where one round in LATE_TELL_DIV or more
 * started FLEET_LATE_NS late, with why pystrobe was not at real-time
 * priority (process/schedprio.h). */
#define LATE_TELL_DIV 20

static void put_late_rounds(struct strbuf *sb, const struct sampler_status *st,
			    bool no_priority)
{
	const char *why = schedprio_why();

	if (!st->rounds || st->late_rounds * LATE_TELL_DIV < st->rounds)
		return;
	sb_printf(sb, ", %.0f%% of rounds started over %.0f ms late (p99 %.1f ms): shares may "
		  "lean towards the moments the job blocks", 100.0 * st->late_rounds / st->rounds,
		  FLEET_LATE_NS / 1e6, st->late_p99_ms);
	if (no_priority)
		sb_puts(sb, " (--no-priority)");
	else if (why)
		sb_printf(sb, " (%s)", why);
}

/* --waits: what each thread waited for, a line each, below the summary. */
static void waits_summary(const struct record *r)
{
	struct strbuf sb = STRBUF_INIT;
	char *line, *save = NULL;

	if (!r->waits)
		return;
	waitsum_write(waitmark_summary(r->waits), &sb);
	if (sb.len)
		errorf("the threads' samples, by what they waited for:");
	for (line = sb.len ? strtok_r(sb.buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		errorf("%s", line);
	sb_release(&sb);
}

/* With --native: the samples of threads the pause did not hold (not
 * stopped within its bound, or started meanwhile) or held where their
 * stack could not be read, read running rather than left out, without
 * their native frames.  (With --blocking alone such a sample is whole:
 * nothing to tell.) */
static void put_late(struct strbuf *sb, const struct record *r, const struct profile *p)
{
	uint64_t n = profile_lost(p, PLOSS_LATE);

	if (n)
		sb_printf(sb, ", %llu sample%s without native frames (%s: their thread did not "
			  "stop within the bound, or stopped where its stack could not be read, "
			  "and was read running; up to %d in a round)",
			  (unsigned long long)n, n == 1 ? "" : "s", PLOSS_LATE_FRAME,
			  r->counts.max_late);
}

/* A line for each thread that lost more than PLOSS_TELL_PCT of its
 * samples of some kind: what the shares shown are worth. */
static void loss_lines(const struct profile *p)
{
	struct strbuf sb = STRBUF_INIT;
	char *line, *save = NULL;

	profile_loss_lines(p, PLOSS_TELL_PCT, &sb);
	for (line = sb.len ? strtok_r(sb.buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		errorf("%s", line);
	sb_release(&sb);
}

static void summary(struct record *r, const struct sampler_status *st, const struct profile *p,
		    const char *path)
{
	struct strbuf sb = STRBUF_INIT;

	statusline_end(&r->sl);
	if (r->quiet)
		return;
	sb_printf(&sb, "%llu sample%s from %llu rounds in %.2f s, %.1f Hz",
		  (unsigned long long)st->stacks, st->stacks == 1 ? "" : "s",
		  (unsigned long long)st->rounds, st->elapsed_s, st->rate_hz);
	/* Below the rate asked for by more than the clock's own jitter and
	 * the one round that the cell under way may or may not have had yet
	 * (fleet.h: one round at a random instant of each interval). */
	if (r->t.so.rate_hz > 0 && st->elapsed_s >= 1 &&
	    (st->rounds + 1) / st->elapsed_s < 0.99 * r->t.so.rate_hz)
		sb_printf(&sb, " of %.0f Hz asked", r->t.so.rate_hz);
	put_lost(&sb, st, p);
	put_stops(&sb, &r->counts);
	if (r->counts.pauses)
		sb_printf(&sb, ", target paused %.0f us per round (median %.0f us, p99 %.0f us, "
			  "at most %.1f ms)", r->counts.pause_ns / 1e3 / r->counts.pauses,
			  hist_quantile(&r->counts.pause_hist, 0.5) / 1e3,
			  hist_quantile(&r->counts.pause_hist, 0.99) / 1e3,
			  r->counts.max_pause_ns / 1e6);
	put_late(&sb, r, p);
	put_lag(&sb, st);
	put_late_rounds(&sb, st, r->t.fo.no_priority);
	if (path)
		sb_printf(&sb, "; wrote %s", out_path_name(path));
	if (path && r->out_dir_why)
		sb_printf(&sb, " (the current directory cannot be written: %s)", r->out_dir_why);
	if (r->merge_error[0])
		sb_printf(&sb, "; the last merge error: %s", r->merge_error);
	errorf("%s", sb.buf);
	sb_release(&sb);
	loss_lines(p);
	waits_summary(r);
	if (!getenv("PYSTROBE_STATS"))
		return;
	fprintf(stderr, "stats: %llu stacks, %llu of them unchanged since the last round (their "
		"thread had not held the GIL), %llu of a thread asleep read without stopping it, "
		"%llu read with their thread stopped alone in %llu stops (%.1f us stopped on "
		"average)\n", (unsigned long long)st->stacks,
		(unsigned long long)r->counts.unchanged_stacks,
		(unsigned long long)r->counts.still_stacks,
		(unsigned long long)r->counts.stopped_stacks, (unsigned long long)r->counts.stops,
		r->counts.stops ? r->counts.stop_ns / 1e3 / r->counts.stops : 0.0);
	fprintf(stderr, "stats: %llu stacks read running proved by their thread's last proved "
		"stack, word for word (read once, not twice)\n",
		(unsigned long long)r->counts.matched_stacks);
	fprintf(stderr, "stats: %llu of %llu rounds started 1 ms late or more, p99 %.3f ms late\n",
		(unsigned long long)st->late_rounds, (unsigned long long)st->rounds,
		st->late_p99_ms);
}

/* Why nothing, or little, was recorded, and what to add: a program that
 * waited (--idle), or whose work was in subprocesses not followed (-s). */
static void hint(const struct record *r, const struct sampler_status *st)
{
	const struct tree_cpu *c = &r->cpu;
	struct strbuf sb = STRBUF_INIT;
	bool children = !r->t.fo.subprocesses && r->cpu_known && c->others_ns >= 10000000 &&
			c->others_ns > c->self_ns;

	if (r->quiet)
		return;
	if (children)
		errorf("record: most of the CPU time was in subprocesses of process %d (%.1f s, "
		       "%.1f s in the process itself), which were not recorded: add -s to record "
		       "them", (int)r->t.pid, c->others_ns / 1e9, c->self_ns / 1e9);
	if (r->t.so.idle || children || !st->rounds || st->stacks * 20 >= st->rounds)
		return;
	if (!st->stacks)
		sb_puts(&sb, "no thread was running whenever it was sampled");
	else
		sb_printf(&sb, "threads were running in only %llu of %llu rounds",
			  (unsigned long long)st->stacks, (unsigned long long)st->rounds);
	errorf("record: %s (the program waited: sleep, I/O, a lock, a subprocess): add --idle "
	       "to record waiting threads too%s", sb.buf, r->t.fo.subprocesses ? "" :
	       ", -s to record its subprocesses");
	sb_release(&sb);
}

/* --- the GPUs (--gpu) ------------------------------------------------------ */

/* On the profile's clock: started with the samples, the readings' times
 * are the runs' times (to the microseconds between the two starts). */
static void gpu_start(struct record *r)
{
	if (r->t.gpu)
		r->gpu = gpuwatch_start(r->t.pid, mono_ns());
}

/* The readings become the profile's counters, before it is written. */
static void gpu_stop(struct record *r, struct profile *p)
{
	const struct gpusample *g;

	gpuwatch_stop(r->gpu);
	if ((g = gpuwatch_result(r->gpu)))
		gpusample_to_profile(g, p);
}

/* Whether the terminal reads UTF-8, for the sparkline's blocks. */
static bool utf8_terminal(void)
{
	const char *cs;
	bool utf8;

	setlocale(LC_CTYPE, "");
	cs = nl_langinfo(CODESET);
	utf8 = cs && !strcmp(cs, "UTF-8");
	setlocale(LC_CTYPE, "C");
	return utf8;
}

/* The summary's lines of the GPUs, or the one line that says why there
 * are none. */
static void gpu_summary(const struct record *r)
{
	const struct gpusample *g = gpuwatch_result(r->gpu);
	struct strbuf sb = STRBUF_INIT;
	char *line, *nl;

	if (!r->gpu)
		return;
	if (!g) {
		errorf("record: --gpu: %s: no GPU figures in this recording",
		       gpuwatch_note(r->gpu));
		return;
	}
	if (gpuwatch_note(r->gpu))
		errorf("record: --gpu: %s", gpuwatch_note(r->gpu));
	if (r->quiet)
		return;
	gpusample_summary(g, utf8_terminal(), &sb);
	for (line = sb.buf; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = '\0';
		errorf("%s", line);
	}
	sb_release(&sb);
}

/* --- the command ---------------------------------------------------------- */

/* Asked to stop (Ctrl-C, SIGTERM, SIGHUP), or at the end of --duration,
 * we end the command as a terminal's Ctrl-C would, then firmer: what was
 * launched to be profiled does not outlive its profile, and a user's
 * terminal is not held by a job nobody is watching.  Else (it exited, or
 * ran exec() into something else) it is waited for. */
static int finish_child(struct record *r, bool over)
{
	return child_finish(&r->child, quit_requested || over);
}

/* What the profile says it is of: the Python program's command (not the
 * launcher's that -s started with: env, a pyenv shim) and Python. */
static void describe(struct profile *p, const struct fleet *f, pid_t pid, char **argv, int argc)
{
	const char *version = fleet_python_version(f);
	pid_t ppid;
	int pargc;
	char **pargv = fleet_python_cmdline(f, &ppid, &pargc);

	if (pargv) {
		argv = pargv;
		argc = pargc;
		pid = ppid;
	}

	p->command = argv ? join_args(argv, argc) : xasprintf("pid %d", (int)pid);
	p->pid = pid;
	if (version)
		p->python_version = xstrdup(version);
}

/* How a launched program ended, in one line: the last thing said, after
 * its own last words (a KeyboardInterrupt's traceback) and the summary. */
static void say_end(const struct record *r, const struct sampler_status *st)
{
	const struct child *ch = &r->child;
	struct strbuf sb = STRBUF_INIT, name = STRBUF_INIT;

	if (r->quiet || !ch->pid)
		return;
	child_describe_end(ch, &sb);
	if (ch->ended && !(WIFSIGNALED(ch->status) && WTERMSIG(ch->status) == ch->sent))
		sb_printf(&sb, " after SIG%s", sig_abbrev(ch->sent));
	/* Not from us: the terminal's Ctrl-C reached the program alone. */
	if (!ch->ended && WIFSIGNALED(ch->status) && WTERMSIG(ch->status) == SIGINT)
		sb_puts(&sb, " (Ctrl-C)");
	if (ch->ended && st->duration_over && !quit_requested)
		sb_printf(&sb, ", sent by pystrobe at the end of -d %g", r->t.so.duration_s);
	else if (ch->ended)
		sb_puts(&sb, ", sent by pystrobe when it was stopped");
	child_name(ch, &name);
	errorf("record: %s %s", name.buf, sb.buf);
	sb_release(&name);
	sb_release(&sb);
}

/* The end of a recording: the file first (nothing may lose it), then the
 * launched program is ended (its last words come before ours), then the
 * table, the summary and how the program ended.  Returns the exit
 * status: the launched program's, else that of a profile not written. */
static int conclude(struct record *r, struct profile *p, const struct sampler_status *st,
		    char **path, char **pargv, int pargc)
{
	char *written = NULL;
	int rc, status;

	/* The samplers are gone, and with them every frame id they kept:
	 * frames named alike by the symbol store may now become one. */
	profile_merge_renamed(p);
	rc = out_write_file(r->fmt, p, &r->oo, *path, "record");
	if (rc < 0 && (written = write_fallback(r, p, pargv, pargc))) {
		free(*path);
		*path = written;
	}
	status = r->child.pid ? finish_child(r, st->duration_over) : EXIT_OK;
	if (!r->quiet)
		/* Every line of ours says whose it is: a launched program
		 * writes to the same terminal. */
		toplist_print(p, TOPLIST_ROWS, r->oo.full_filenames, r->oo.full_names, "pystrobe: ",
			      stderr);
	summary(r, st, p, rc == 0 || written ? *path : NULL);
	gpu_summary(r);
	hint(r, st);
	say_end(r, st);
	/* Ended by us at the duration's end: its status is ours to give. */
	if (st->duration_over && r->child.ended && !quit_requested)
		status = EXIT_OK;
	return status == EXIT_OK ? exit_code(rc) : status;
}

/* The sampling is over: what the fleet knows is kept before it is
 * closed.  Returns 0, or the exit status of a tree where nothing could be
 * read, said in err. */
static int wind_down(struct record *r, struct profile *p, struct fleet *f,
		     const struct sampler_status *st, char **pargv, int pargc, char *err,
		     size_t errlen)
{
	int none;

	gpu_stop(r, p);
	/* Ended before anything else is said. */
	statusline_end(&r->sl);
	if (r->cpu_known && (r->cpu_known = proctree_cpu(r->t.pid, &r->cpu) == 0)) {
		/* Descendants that left the tree unwaited for take their
		 * time with them: never below zero. */
		r->cpu.self_ns -= r->cpu0.self_ns;
		r->cpu.others_ns = r->cpu.others_ns > r->cpu0.others_ns ?
				   r->cpu.others_ns - r->cpu0.others_ns : 0;
	}
	describe(p, f, r->t.pid, pargv, pargc);
	fleet_counts(f, &r->counts);
	if (fleet_merge_error(f))
		snprintf(r->merge_error, sizeof(r->merge_error), "%s", fleet_merge_error(f));
	/* -s on a tree where nothing could be read: say why rather than
	 * write an empty profile. */
	none = st->processes_ever ? 0 : fleet_why_none(f, err, errlen);
	fleet_close(f);
	/* Whatever is counted from here on is not a sample. */
	p->decorate = NULL;
	if (r->waits)
		waitmark_finish(r->waits);
	if (st->target_execd)
		errorf("record: process %d ran exec() and is no longer the Python program "
		       "it was; recording stopped", (int)r->t.pid);
	return none;
}

/* --slurm: the front; --slurm-node: one node's part of it. */
static int slurm_mode(struct record *r)
{
	if (r->t.slurm.node_job)
		return record_node(&r->t, r->fmt);
	return record_slurm(&r->t, r->fmt, &r->oo, r->output, r->quiet);
}

int cmd_record(int argc, char **argv)
{
	struct record r = { 0 };
	struct profile p;
	struct fleet *f = NULL;
	struct sampler_status st;
	char err[512], *path = NULL, **pargv = NULL;
	int rc, none, pargc = 0, status = EXIT_OK;

	rc = parse_args(&r, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	if (r.t.slurm.on || r.t.slurm.node_job)
		return slurm_mode(&r);
	/* Before the probe of the output: interrupted, it is removed. */
	quit_on_signals();
	selfstop_on_signals();
	if ((rc = prepare_output(&r)) < 0)
		return exit_code(rc);
	profile_init(&p, r.t.so.rate_hz);
	/* Formats that aggregate need no timeline: memory stays flat. */
	p.no_timeline = !r.fmt->timeline;
	if (r.t.waits)
		r.waits = waitmark_new(&p);

	/* With --subprocesses only until it has started: the Python may be
	 * further down.  With -o - its output goes to our stderr: the profile
	 * alone is on standard output. */
	if (r.t.command &&
	    child_start(&r.child, r.t.command, "record", r.output && !strcmp(r.output, "-") ?
			CHILD_OUT_TO_STDERR : CHILD_OUT_OURS, r.t.fo.subprocesses,
			&quit_requested, &status) < 0) {
		if (quit_requested)
			status = finish_child(&r, false);
		waitmark_free(r.waits);
		profile_free(&p);
		return status;
	}
	if (r.t.command)
		r.t.pid = r.child.pid;
	/* A launcher: what it runs is recorded as with -s. */
	if (r.child.python_below)
		r.t.fo.subprocesses = true;
	rc = fleet_open(r.t.pid, &r.t.so, &r.t.fo, &p, &f, err, sizeof(err));
	/* --pid of a launcher (a shell, make): its Python, as with -s. */
	if (exit_code(rc) == EXIT_NOT_PYTHON && !r.t.command && !r.t.fo.subprocesses &&
	    follow_pid_below(r.t.pid, "record")) {
		r.t.fo.subprocesses = true;
		rc = fleet_open(r.t.pid, &r.t.so, &r.t.fo, &p, &f, err, sizeof(err));
	}
	if (rc < 0) {
		errorf("%s", err);
		status = r.child.pid ? finish_child(&r, false) : exit_code(rc);
		waitmark_free(r.waits);
		profile_free(&p);
		return status;
	}
	pargv = proc_cmdline(r.t.pid, &pargc);
	path = r.output ? xstrdup(r.output) : default_output(&r, pargv, pargc);

	r.path = path;
	/* A launched program given the terminal writes to it too. */
	statusline_init(&r.sl, STDERR_FILENO, r.child.tty_fd >= 0);
	p.start_unix_ns = realtime_ns();
	p.wall = r.t.so.idle;	/* every thread, running or not: wall time */
	r.cpu_known = proctree_cpu(r.t.pid, &r.cpu0) == 0;
	gpu_start(&r);
	fleet_run(f, &quit_requested, !r.quiet && isatty(2) ? show_status : NULL, &r, &st);
	none = wind_down(&r, &p, f, &st, pargv, pargc, err, sizeof(err));
	if (none) {
		errorf("%s", err);
		status = r.child.pid ? finish_child(&r, st.duration_over) : exit_code(none);
		goto out;
	}
	status = conclude(&r, &p, &st, &path, pargv, pargc);
out:
	gpuwatch_free(r.gpu);
	proc_cmdline_free(pargv);
	free(path);
	waitmark_free(r.waits);
	profile_free(&p);
	return status;
}
