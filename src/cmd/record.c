/* pystrobe record: sample a process at a fixed rate and write a profile. */
#include "cmd/cmd.h"
#include "sample/fleet.h"
#include "sample/launch.h"
#include "python/locate.h"
#include "process/mem.h"
#include "profile/output.h"
#include "process/pause.h"
#include "process/proc.h"
#include "profile/profile.h"
#include "python/pystack.h"
#include "sample/sampler.h"
#include "sample/target_opts.h"
#include "sample/snapshot.h"
#include "cmd/quit.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char record_usage[] =
	"usage: pystrobe record [options] --pid PID\n"
	"       pystrobe record [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Sample a Python process at a fixed rate and write a profile.\n"
	"\n"
	"  -p, --pid PID          profile a running process\n"
	"  -r, --rate HZ          samples per second (default 100)\n"
	"  -d, --duration SECS    stop after this long (default: Ctrl-C or exit)\n"
	"  -o, --output FILE      where to write (default: named after the program;\n"
	"                         -: standard output)\n"
	"  -f, --format FORMAT    flamegraph (SVG, default), collapsed, speedscope,\n"
	"                         chrometrace or pprof (default: from -o's ending:\n"
	"                         .svg .txt .json .trace.json .pb.gz ...)\n"
	"      --idle             include threads that are not running\n"
	"      --gil              only the thread holding the GIL\n"
	"      --threads          a root frame per thread\n"
	"      --function         aggregate by function instead of line\n"
	"      --full-filenames   show whole file paths\n"
	"      --blocking         pause the threads for each sample (exact stacks)\n"
	"      --native[=all]     C/C++ frames too, merged with the Python ones; all: also\n"
	"                         the interpreter's start-up below the first Python frame\n"
	"                         (pauses the threads: implies --blocking)\n"
	"      --async[=all]      asyncio tasks (3.11+): the running task's stack as\n"
	"                         the tasks awaiting it (root first), then its\n"
	"                         coroutine; =all: every pending task's too\n"
	"  -s, --subprocesses     also every process started by the target, a root\n"
	"                         frame per process\n"
	"      --group-processes  with -s: one root for the subprocesses that share\n"
	"                         a command line (numbers aside)\n"
	"  -q, --quiet            no status line, no summary\n"
	"  -h, --help             show this help\n"
	"\n"
	"A launched command runs in its own process group.  Stopped early (Ctrl-C,\n"
	"SIGTERM), pystrobe sends SIGINT to that group, SIGTERM 5 s later, SIGKILL\n"
	"2 s after that, and exits with the command's status.\n";

struct record {
	struct target_opts t;
	const struct out_format *fmt;
	struct out_opts oo;
	const char *output;
	bool quiet;
	struct child child;	/* launch mode */
	bool status_shown;
	struct sampler_counts counts;	/* at the end */
	char merge_error[256];		/* the latest, or "" */
};

enum { OPT_THREADS = TOPT_NEXT, OPT_GROUP };

static int parse_args(struct record *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		TARGET_LONGOPTS,
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "group-processes", no_argument, NULL, OPT_GROUP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *fname = NULL;
	int c;

	target_opts_init(&r->t);
	optind = 1;
	opterr = 0;
	/* "+": stop at the first non-option, the command to launch. */
	while ((c = getopt_long(argc, argv, "+:" TARGET_SHORTOPTS "d:o:f:qh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			if (parse_number(optarg, 0.001, 1e9, &r->t.so.duration_s) < 0)
				return usage_error("record", "--duration must be a positive number "
						   "of seconds, not '%s'", optarg);
			break;
		case 'o': r->output = optarg; break;
		case 'f': fname = optarg; break;
		case OPT_THREADS: r->t.so.threads = true; break;
		case OPT_GROUP: r->t.fo.group = true; break;
		case 'q': r->quiet = true; break;
		case 'h':
			fputs(record_usage, stdout);
			return 1;
		default:
			if (target_opt(&r->t, c, optarg, argv, "record", longopts) < 0)
				return -1;
		}
	}
	if (out_format_settle("record", fname, r->output, &r->fmt) < 0 ||
	    target_opts_finish(&r->t, argc, argv, "record", longopts) < 0)
		return -1;
	if (r->t.fo.group && !r->t.fo.subprocesses)
		return usage_error("record", "--group-processes needs --subprocesses");
	/* record keeps one kind of frame: lines, or functions. */
	r->t.so.by_function = r->t.by_function;
	r->oo.full_filenames = r->t.full_filenames;
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
	return out;
}

/* --- status --------------------------------------------------------------- */

static uint64_t total_errors(const uint64_t *e)
{
	uint64_t n = 0;

	for (int i = 0; i < SERR_COUNT; i++)
		if (serr_is_error(i))
			n += e[i];
	return n;
}

static void show_status(void *arg, const struct sampler_status *st)
{
	struct record *r = arg;

	fprintf(stderr, "\r\033[Kpystrobe: %.1f s, %llu samples, %.1f Hz, %llu errors%s",
		st->elapsed_s, (unsigned long long)st->rounds, st->rate_hz,
		(unsigned long long)total_errors(st->errors),
		st->lagged ? ", LAGGING" : "");
	r->status_shown = true;
}

static void summary(const struct record *r, const struct sampler_status *st, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t errors = total_errors(st->errors);

	if (r->status_shown)
		fputs("\r\033[K", stderr);
	if (r->quiet)
		return;
	sb_printf(&sb, "%llu samples (%llu stacks) in %.2f s, %.1f Hz",
		  (unsigned long long)st->rounds, (unsigned long long)st->stacks, st->elapsed_s,
		  st->rate_hz);
	/* Below the rate asked for by more than the clock's own jitter. */
	if (r->t.so.rate_hz > 0 && st->elapsed_s >= 1 && st->rate_hz < 0.99 * r->t.so.rate_hz)
		sb_printf(&sb, " of %.0f Hz asked", r->t.so.rate_hz);
	if (!errors) {
		sb_puts(&sb, ", no errors");
	} else {
		sb_printf(&sb, ", %llu errors (", (unsigned long long)errors);
		for (int i = 0, first = 1; i < SERR_COUNT; i++) {
			if (!st->errors[i] || !serr_is_error(i))
				continue;
			sb_printf(&sb, "%s%llu %s", first ? "" : ", ",
				  (unsigned long long)st->errors[i], serr_name(i));
			first = 0;
		}
		sb_putc(&sb, ')');
	}
	if (st->errors[SERR_GAP])
		sb_printf(&sb, ", %llu stacks with a %s", (unsigned long long)st->errors[SERR_GAP],
			  serr_name(SERR_GAP));
	if (r->counts.pauses)
		sb_printf(&sb, ", target paused %.0f us per sample (median %.0f us, p99 %.0f us, "
			  "at most %.1f ms)", r->counts.pause_ns / 1e3 / r->counts.pauses,
			  hist_quantile(&r->counts.pause_hist, 0.5) / 1e3,
			  hist_quantile(&r->counts.pause_hist, 0.99) / 1e3,
			  r->counts.max_pause_ns / 1e6);
	if (st->lagged)
		sb_printf(&sb, ", fell behind %llu times (at most %.1f ms, %llu samples skipped)",
			  (unsigned long long)st->lagged, st->max_lag_ms,
			  (unsigned long long)st->skipped);
	if (path)
		sb_printf(&sb, "; wrote %s", out_path_name(path));
	if (r->merge_error[0])
		sb_printf(&sb, "; the last merge error: %s", r->merge_error);
	errorf("%s", sb.buf);
	sb_release(&sb);
	if (getenv("PYSTROBE_STATS"))
		fprintf(stderr, "stats: %llu stacks, %llu of them unchanged since the last round "
			"(their thread had not held the GIL)\n",
			(unsigned long long)st->stacks, (unsigned long long)r->counts.quiet_stacks);
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

/* The wall clock, to the nanosecond: timelines from several hosts or
 * runs are lined up by it. */
static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
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
		return rc > 0 ? EXIT_OK : EXIT_USAGE;
	quit_on_signals();
	profile_init(&p, r.t.so.rate_hz);
	/* Formats that aggregate need no timeline: memory stays flat. */
	p.no_timeline = !r.fmt->timeline;

	/* With --subprocesses only until it has started: the Python may be
	 * further down. */
	if (r.t.command &&
	    child_start(&r.child, r.t.command, "record", false, r.t.fo.subprocesses,
			&quit_requested, &status) < 0) {
		if (quit_requested)
			status = finish_child(&r, false);
		profile_free(&p);
		return status;
	}
	if (r.t.command)
		r.t.pid = r.child.pid;
	f = fleet_open(r.t.pid, &r.t.so, &r.t.fo, &p, &rc, err, sizeof(err));
	if (!f) {
		errorf("%s", err);
		status = r.child.pid ? finish_child(&r, false) : rc;
		profile_free(&p);
		return status;
	}
	pargv = proc_cmdline(r.t.pid, &pargc);
	path = r.output ? xstrdup(r.output) : default_output(&r, pargv, pargc);

	p.start_unix_ns = realtime_ns();
	p.wall = r.t.so.idle;	/* every thread, running or not: wall time */
	fleet_run(f, &quit_requested, !r.quiet && isatty(2) ? show_status : NULL, &r, &st);
	describe(&p, f, r.t.pid, pargv, pargc);
	fleet_counts(f, &r.counts);
	if (fleet_merge_error(f))
		snprintf(r.merge_error, sizeof(r.merge_error), "%s", fleet_merge_error(f));
	/* -s on a tree where nothing could be read: say why rather than
	 * write an empty profile. */
	none = st.processes_ever ? 0 : fleet_why_none(f, err, sizeof(err));
	fleet_close(f);
	if (st.target_execd)
		errorf("record: process %d ran exec() and is no longer the Python program "
		       "it was; recording stopped", (int)r.t.pid);
	if (none) {
		if (r.status_shown)
			fputs("\r\033[K", stderr);
		errorf("%s", err);
		status = r.child.pid ? finish_child(&r, st.duration_over) : none;
		goto out;
	}
	/* The samplers are gone, and with them every frame id they kept:
	 * frames named alike by the symbol store may now become one. */
	profile_settle(&p);
	rc = out_write_file(r.fmt, &p, &r.oo, path, "record");
	summary(&r, &st, rc == 0 ? path : NULL);
	status = r.child.pid ? finish_child(&r, st.duration_over) : (rc == 0 ? EXIT_OK : EXIT_ERROR);
	/* Ended by us at the duration's end: its status is ours to give. */
	if (st.duration_over && r.child.ended && !quit_requested)
		status = EXIT_OK;
	if (rc != 0 && status == EXIT_OK)
		status = EXIT_ERROR;
out:
	proc_cmdline_free(pargv);
	free(path);
	profile_free(&p);
	return status;
}
