/* pystrobe record: sample a process at a fixed rate and write a profile. */
#include "cmd.h"
#include "launch.h"
#include "locate.h"
#include "mem.h"
#include "output.h"
#include "pause.h"
#include "proc.h"
#include "profile.h"
#include "pystack.h"
#include "sampler.h"
#include "snapshot.h"
#include "util.h"

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
	"  -o, --output FILE      where to write (default: named after the program)\n"
	"  -f, --format FORMAT    flamegraph (SVG, default), collapsed, speedscope,\n"
	"                         chrometrace or pprof\n"
	"      --idle             include threads that are not running\n"
	"      --gil              only the thread holding the GIL\n"
	"      --threads          a root frame per thread\n"
	"      --function         aggregate by function instead of line\n"
	"      --full-filenames   show whole file paths\n"
	"      --blocking         pause the threads for each sample (exact stacks)\n"
	"  -q, --quiet            no status line, no summary\n"
	"  -h, --help             show this help\n";

struct format {
	const char *name;
	const char *ext;
	int (*write)(const struct profile *p, FILE *f, const struct out_opts *o);
};

static const struct format formats[] = {
	{ "flamegraph", "svg", out_flamegraph },
	{ "collapsed", "txt", out_collapsed },
	{ "speedscope", "speedscope.json", out_speedscope },
	{ "chrometrace", "trace.json", out_chrometrace },
	{ "pprof", "pb.gz", out_pprof },
};

struct record {
	struct sampler_opts so;
	const struct format *fmt;
	struct out_opts oo;
	const char *output;
	bool quiet;
	pid_t pid;
	char **command;		/* launch mode */
	pid_t child;
	bool status_shown;
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_requested = 1;
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the sleep between samples must wake up. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static const struct format *find_format(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

enum { OPT_IDLE = 256, OPT_GIL, OPT_THREADS, OPT_FUNCTION, OPT_FULL, OPT_BLOCKING };

static int parse_args(struct record *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "gil", no_argument, NULL, OPT_GIL },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "function", no_argument, NULL, OPT_FUNCTION },
		{ "full-filenames", no_argument, NULL, OPT_FULL },
		{ "blocking", no_argument, NULL, OPT_BLOCKING },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	r->so.rate_hz = 100;
	r->fmt = &formats[0];
	optind = 1;
	opterr = 0;
	/* "+": stop at the first non-option, the command to launch. */
	while ((c = getopt_long(argc, argv, "+:p:r:d:o:f:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!(r->pid = parse_pid(optarg))) {
				errorf("record: invalid pid '%s'", optarg);
				return -1;
			}
			break;
		case 'r':
			if (parse_number(optarg, 0.1, 100000, &r->so.rate_hz) < 0) {
				errorf("record: --rate must be between 0.1 and 100000 Hz, not '%s'", optarg);
				return -1;
			}
			break;
		case 'd':
			if (parse_number(optarg, 0.001, 1e9, &r->so.duration_s) < 0) {
				errorf("record: --duration must be a positive number of seconds, not '%s'", optarg);
				return -1;
			}
			break;
		case 'o': r->output = optarg; break;
		case 'f':
			if (!(r->fmt = find_format(optarg))) {
				errorf("record: unknown format '%s' (flamegraph, collapsed, speedscope, chrometrace, pprof)", optarg);
				return -1;
			}
			break;
		case OPT_IDLE: r->so.idle = true; break;
		case OPT_GIL: r->so.gil_only = true; break;
		case OPT_THREADS: r->so.threads = true; break;
		case OPT_FUNCTION: r->so.by_function = true; break;
		case OPT_FULL: r->oo.full_filenames = true; break;
		case OPT_BLOCKING: r->so.blocking = true; break;
		case 'q': r->quiet = true; break;
		case 'h':
			fputs(record_usage, stdout);
			return 1;
		case ':':
			errorf("record: %s needs a value (see pystrobe record --help)", argv[optind - 1]);
			return -1;
		default:
			errorf("record: unknown option '%s' (see pystrobe record --help)", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc)
		r->command = argv + optind;
	if (!!r->pid == !!r->command) {
		errorf("record: give either --pid PID or -- COMMAND (see pystrobe record --help)");
		return -1;
	}
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
	out = xasprintf("pystrobe-%s-%d-%s.%s", program_name(argv, argc), (int)r->pid,
			stamp, r->fmt->ext);
	/* A file name, not a path: no slashes or odd characters from argv. */
	for (p = out; *p; p++)
		if (*p == '/' || *p == ' ' || (unsigned char)*p < 0x20)
			*p = '_';
	return out;
}

/* Write to a temporary file beside the target and rename it into place,
 * so an interrupted run never leaves half a profile behind. */
static int write_profile(const struct record *r, const struct profile *p, const char *path)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp), rc = -1;
	uid_t uid;
	gid_t gid;
	FILE *f;

	if (fd < 0) {
		errorf("record: cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	fchmod(fd, 0644);
	/* Under sudo the profile belongs to the user who asked for it. */
	if (sudo_user(&uid, &gid) > 0 && fchown(fd, uid, gid) != 0)
		errorf("record: cannot give '%s' to uid %d: %s", path, (int)uid, strerror(errno));
	f = fdopen(fd, "w");
	if (f && r->fmt->write(p, f, &r->oo) == 0 && fflush(f) == 0 && !ferror(f)) {
		if (fclose(f) == 0 && rename(tmp, path) == 0)
			rc = 0;
		f = NULL;
	}
	if (f)
		fclose(f);
	if (rc < 0) {
		errorf("record: cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

/* --- status --------------------------------------------------------------- */

static uint64_t total_errors(const uint64_t *e)
{
	uint64_t n = 0;

	for (int i = 0; i < SERR_COUNT; i++)
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
	if (!errors) {
		sb_puts(&sb, ", no errors");
	} else {
		sb_printf(&sb, ", %llu errors (", (unsigned long long)errors);
		for (int i = 0, first = 1; i < SERR_COUNT; i++) {
			if (!st->errors[i])
				continue;
			sb_printf(&sb, "%s%llu %s", first ? "" : ", ",
				  (unsigned long long)st->errors[i], serr_name(i));
			first = 0;
		}
		sb_putc(&sb, ')');
	}
	if (st->lagged)
		sb_printf(&sb, ", fell behind %llu times (at most %.1f ms)",
			  (unsigned long long)st->lagged, st->max_lag_ms);
	if (path)
		sb_printf(&sb, "; wrote %s", path);
	errorf("%s", sb.buf);
	sb_release(&sb);
}

/* --- the command ---------------------------------------------------------- */

static int finish_child(struct record *r)
{
	int status;

	if (!r->child)
		return EXIT_OK;
	/* Ctrl-C on a terminal reached the child too; a SIGTERM sent to us
	 * alone is passed on, so both end together. */
	if (stop_requested && stop_signal != SIGINT)
		kill(r->child, stop_signal);
	if (pause_wait_child(r->child, &status, true) != r->child)
		return EXIT_ERROR;
	return exit_status_of(status);
}

int cmd_record(int argc, char **argv)
{
	struct record r = { 0 };
	struct profile p;
	struct sampler *s = NULL;
	struct sampler_status st;
	char err[512], *path = NULL, **pargv = NULL;
	int rc, pargc = 0, go_fd = -1, err_fd = -1, status = EXIT_OK;

	rc = parse_args(&r, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : EXIT_USAGE;
	install_signals();
	profile_init(&p, r.so.rate_hz);

	if (r.command) {
		r.child = launch(r.command, false, &go_fd, &err_fd);
		if (r.child < 0) {
			errorf("record: cannot start '%s': %s", r.command[0], strerror(errno));
			return EXIT_ERROR;
		}
		r.pid = r.child;
		if (write(go_fd, "g", 1) != 1 ||
		    wait_for_python(r.child, r.command, "record", err_fd, &stop_requested,
				    &status) < 0) {
			close(go_fd);
			close(err_fd);
			profile_free(&p);
			return status;
		}
		close(go_fd);
		close(err_fd);
	}

	s = sampler_open(r.pid, &r.so, &p, &rc, err, sizeof(err));
	if (!s) {
		errorf("%s", err);
		status = r.child ? finish_child(&r) : rc;
		profile_free(&p);
		return r.child ? status : rc;
	}
	pargv = proc_cmdline(r.pid, &pargc);
	p.command = pargv ? join_args(pargv, pargc) : xasprintf("pid %d", (int)r.pid);
	p.pid = r.pid;
	{
		struct pyinterp pi;
		struct mem *m = mem_proc_open(r.pid);

		if (locate_python(r.pid, m, &pi, err, sizeof(err)) == 0) {
			p.python_version = xstrdup(pi.version);
			pyinterp_free(&pi);
		}
		mem_close(m);
	}
	p.start_unix_ns = (uint64_t)time(NULL) * 1000000000ull;
	path = r.output ? xstrdup(r.output) : default_output(&r, pargv, pargc);

	sampler_run(s, &stop_requested, !r.quiet && isatty(2) ? show_status : NULL, &r, &st);
	sampler_close(s);
	if (st.target_execd)
		errorf("record: process %d ran exec() and is no longer the Python program "
		       "it was; recording stopped", (int)r.pid);

	rc = write_profile(&r, &p, path);
	summary(&r, &st, rc == 0 ? path : NULL);
	status = r.child ? finish_child(&r) : (rc == 0 ? EXIT_OK : EXIT_ERROR);
	if (rc != 0 && status == EXIT_OK)
		status = EXIT_ERROR;
	proc_cmdline_free(pargv);
	free(path);
	profile_free(&p);
	return status;
}
