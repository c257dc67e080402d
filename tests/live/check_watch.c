/* `pystrobe watch` against jobs that stall, and jobs that must not be called
 * stalled, each judged by what the target says of itself.
 *
 * The targets (tests/targets/stall.py, stall_torch.py) move for a few
 * seconds, then stop in a known way and write stall.json: when the last
 * thread stopped moving (their own wall clock), which threads, where.
 * tests/compare_watch.py holds the watch's report against it: the kind,
 * the threads by tid with their frames, the ranks and the odd one out, the
 * files of the report, and the time: the report must be there (as the test
 * itself sees it, polling every 100 ms) within --stall + 5 s of the stall
 * (issue 27), plus the worst lateness of the test's own polling loop over
 * the same time: what the machine's load took from every process, the
 * watch included, which the watch cannot be blamed for (it is printed).
 * --stall is 3 s, so each stall takes about 10 s; the scenarios of one
 * test run side by side, each in a thread.
 *
 * On every interpreter: a deadlock of two threads on two locks, a spin
 * loop that never leaves its function and, on 3.11+ (where the asyncio
 * tasks can be read), two asyncio deadlocks: tasks holding a lock each and
 * awaiting each other (the cycle `dump --async` finds), and tasks holding
 * a lock each and waiting for the other's (a cycle of asyncio.Locks,
 * whose holders asyncio does not record); each launched by the watch
 * (-- COMMAND).  The stacks the report holds are read per version, so these
 * run everywhere.  The deadlock's flight recording gives wait=lock to every
 * sample of the two threads the target deadlocked in its last second: they
 * block in lock.acquire(), which has no frame (issue 41: MainThread, in
 * join(), was the only one).
 *
 * On the oldest and the newest interpreter and Debian's static 3.11 (what
 * follows does not depend on the version: files, timers, signals, process
 * handling):
 *
 *   - quiet: a busy job of long, changing steps (one longer than --stall)
 *     and a socket server idle in accept() between two requests 4.5 s
 *     apart, its handler threads waiting on a queue, each watched for
 *     3 x --stall + 2 s: no report;
 *   - progress: a job that looks like a spin (one long native call after
 *     another) but appends to a heartbeat file: watched without
 *     --progress it is reported (it does look stalled), with --progress
 *     FILE not over 3 x --stall + 2 s while it appends, and within
 *     --stall + 5 s once it stops (when the test tells it to);
 *   - lifecycle: a deadlock launched with --on-stall: the command runs
 *     with PYSTROBE_REPORT, PYSTROBE_STALL_KIND and PYSTROBE_STALL_PID
 *     right; SIGUSR1 writes a flight recording; when the test unsticks the
 *     target (SIGUSR2) the watch says the job moves again, and exits with
 *     the target's status (7); no thread is ever left stopped; the
 *     report's flight recording converts (pystrobe convert) to collapsed,
 *     SVG (well-formed) and pprof (decode_pprof.py) with the same total,
 *     holds the moving stacks of the seconds before the stall, and its
 *     time slices add up to the whole;
 *   - kill: the watch SIGKILLed (by --pid) the moment its report
 *     directory appears, while it reads the stalled target, and at a
 *     random moment: no thread of the target stays stopped;
 *   - not-python: --pid of `sleep 1000` exits 5 at once with the line
 *     record gives it (issue 41: it watched in silence);
 *   - launcher: --pid of a shell that starts the deadlock 4 s later says
 *     once that it waits for the shell's Python children, then reports it.
 *
 * With PyTorch (Debian's python3-torch in the sid root, for 3.14; a SKIP
 * naming the package without it), watched by --pid once torch is imported
 * (importing it is seconds of native calls, a spin to a 3 s threshold): a
 * gloo job of 3 ranks, each rank by --pid, where rank 1 stops in
 * load_batch() while ranks 0 and 2 wait in all_reduce() (kind collective,
 * rank 1 the odd one out, each process's rank), and a DataLoader whose 2
 * workers block for ever (kind data, the workers followed).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "folded.h"
#include "interpreters.h"
#include "svg.h"
#include "target.h"
#include "suite.h"

#define STALL_S		3
#define STALL_ARG	"3"
#define ALLOWED_S	5	/* issue 27: a report within the threshold + 5 s */
#define POLL_MS		100
#define STOP_MS		20000	/* a watch ending after SIGINT, with its command */
#define STALL_TARGET	"tests/targets/stall.py"
#define TORCH_TARGET	"tests/targets/stall_torch.py"
#define TORCH_READY_MS	240000	/* 3 ranks importing torch on a loaded machine */

static const struct test_interp *interps;
static int ninterps;
static bool have_watch;		/* `pystrobe watch --help` exits 0 */

/* One watch and the target it watches. */
struct watched {
	const struct test_interp *ti;
	const char *name;		/* the scenario, for messages */
	char out[PATH_MAX];		/* the target's OUTDIR, as the test sees it */
	char out_inside[PATH_MAX];	/* the same as the target names it */
	char reports[PATH_MAX];		/* --report-dir */
	char err[PATH_MAX + 16];	/* the watch's stderr (and a launched target's) */
	pid_t pid;			/* pystrobe watch */
	pid_t target;			/* the job's first process, from truth.json */
	pid_t spawned;			/* a target the test started itself */
	double seen;			/* wall clock when a report.json first showed */
	double launched;		/* wall clock when the watch was started */
	double lateness;		/* the polling loop's worst lateness, s */
	int status;			/* the watch's wait status, once reaped */
	bool reaped;
	char *failures;
};

static bool file_exists(const char *dir, const char *name)
{
	char *path = NULL;
	bool found;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return false;
	found = access(path, F_OK) == 0;
	free(path);
	return found;
}

/* Every number after "key" in the file, up to max; their count. */
static int json_file_ints(const char *dir, const char *name, const char *key, long *v, int max)
{
	char path[PATH_MAX * 2], pat[64], *text, *p;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	text = slurp(path);
	for (p = text; p && n < max && (p = strstr(p, pat)); p += strlen(pat))
		v[n++] = strtol(p + strlen(pat), NULL, 10);
	free(text);
	return n;
}

/* The first entry of dir whose name starts with prefix, holding file
 * (NULL: any); 0 with its name in found, or -1. */
static int find_entry(const char *dir, const char *prefix, const char *file, char *found,
		      size_t size)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = -1;

	if (!d)
		return -1;
	while (rc < 0 && (de = readdir(d))) {
		char sub[PATH_MAX * 2];

		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (file && !file_exists(sub, file))
			continue;
		snprintf(found, size, "%s", de->d_name);
		rc = 0;
	}
	closedir(d);
	return rc;
}

static int count_entries(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* --- starting and ending watches -------------------------------------------- */

static int watched_init(struct watched *w, const struct test_interp *ti, const char *name)
{
	char tmpl[] = "/tmp/pystrobe-watch-XXXXXX";

	memset(w, 0, sizeof(*w));
	w->ti = ti;
	w->name = name;
	test_interp_shared_dir(ti, w->out, w->out_inside, sizeof(w->out));
	if (!w->out[0] || !mkdtemp(tmpl)) {
		msg_add(&w->failures, "%s: cannot make directories: %s", name, strerror(errno));
		return -1;
	}
	snprintf(w->reports, sizeof(w->reports), "%s", tmpl);
	snprintf(w->err, sizeof(w->err), "%s/watch.err", w->out);
	return 0;
}

/* Fork argv with stderr to w->err, dying with the test. */
static void spawn_watch(struct watched *w, char *const argv[])
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT };
	sigset_t none;
	pid_t pid = fork();

	if (pid != 0) {
		w->pid = pid;
		w->launched = wall_s();
		if (pid < 0)
			msg_add(&w->failures, "%s: fork: %s", w->name, strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int nul = open("/dev/null", O_RDWR);
	int err = open(w->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	dup2(nul, 0);
	dup2(nul, 1);
	dup2(err, 2);
	execv(argv[0], argv);
	_exit(127);
}

/* pystrobe watch --stall STALL_S -D REPORTS OPTIONS... then, for a launch,
 * -- python SCRIPT MODE STALL_S OUTDIR. */
static void watch_argv(struct argv_buf *a, struct watched *w, char *const *options)
{
	a->n = 0;
	arg(a, pystrobe_path());
	arg(a, "watch");
	arg(a, "--stall");
	arg(a, STALL_ARG);
	arg(a, "-D");
	arg(a, w->reports);
	args(a, options);
}

static void watch_launch(struct watched *w, const char *script, const char *mode,
			 char *const *options)
{
	static char paths[8][PATH_MAX];
	static int next;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct argv_buf a;
	char *path;

	pthread_mutex_lock(&lock);
	path = paths[next++ % 8];
	pthread_mutex_unlock(&lock);
	test_interp_script(w->ti, script, path, PATH_MAX);
	watch_argv(&a, w, options);
	arg(&a, "--");
	arg_python(&a, w->ti);
	arg(&a, path);
	arg(&a, mode);
	arg(&a, STALL_ARG);
	arg(&a, w->out_inside);
	spawn_watch(w, a.v);
}

/* Start the target ourselves (for --pid): SCRIPT MODE STALL_S OUTDIR. */
static int target_spawn(struct watched *w, const char *script, const char *mode, int ready_ms)
{
	char path[PATH_MAX];
	char *argv[] = { NULL, path, (char *)mode, STALL_ARG, w->out_inside, NULL };
	long long deadline = now_ms() + ready_ms;

	test_interp_script(w->ti, script, path, sizeof(path));
	w->spawned = test_interp_spawn(w->ti, argv, 0);
	while (!file_exists(w->out, "truth.json")) {
		if (now_ms() > deadline || waitpid(w->spawned, NULL, WNOHANG) == w->spawned) {
			msg_add(&w->failures, "%s: the target wrote no truth.json", w->name);
			return -1;
		}
		sleep_ms(50);
	}
	w->target = json_file_int(w->out, "truth.json", "pid");
	return 0;
}

static void watch_pids(struct watched *w, const long *pids, int n, char *const *options)
{
	char words[8][24];
	struct argv_buf a;

	watch_argv(&a, w, options);
	for (int i = 0; i < n && i < 8; i++) {
		snprintf(words[i], sizeof(words[i]), "%ld", pids[i]);
		arg(&a, "--pid");
		arg(&a, words[i]);
	}
	spawn_watch(w, a.v);
}

static bool watch_reap(struct watched *w, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;

	while (!w->reaped) {
		pid_t r = waitpid(w->pid, &w->status, WNOHANG);

		if (r == w->pid || (r < 0 && errno == ECHILD)) {
			w->reaped = true;
			break;
		}
		if (now_ms() > deadline)
			return false;
		sleep_ms(20);
	}
	return true;
}

/* End the watch with sig; a failure when it does not end in time. */
static void watch_end(struct watched *w, int sig)
{
	if (w->pid <= 0 || w->reaped)
		return;
	kill(w->pid, sig);
	if (!watch_reap(w, STOP_MS)) {
		msg_add(&w->failures, "%s: the watch did not end %d s after signal %d", w->name,
			STOP_MS / 1000, sig);
		kill_descendants(w->pid);
		kill_reap(w->pid);
		w->reaped = true;
	}
}

/* No thread of pid stopped (T or t) at any of 5 looks 50 ms apart: what
 * a watch that has ended must leave.  While a watch runs, it may pause a
 * thread for a moment: then only a thread stopped at every look fails
 * (held stopped for 200 ms); a pause seen is printed. */
static void check_stopped(struct watched *w, pid_t pid, const char *when, bool running)
{
	int seen = 0, looks = 5;
	pid_t first = 0;
	char state = 0;

	for (int look = 0; look < looks && pid > 0; look++) {
		pid_t tid;
		char st = 0;
		int total;

		if (proc_stopped_threads(pid, &total, &tid, &st) > 0) {
			seen++;
			first = tid;
			state = st;
		}
		sleep_ms(50);
	}
	if (seen && running && seen < looks)
		printf("watch: %s: %s: %s: a thread of %d stopped at %d of %d looks (%d: %c)\n",
		       w->ti->label, w->name, when, (int)pid, seen, looks, (int)first, state);
	else if (seen)
		msg_add(&w->failures, "%s: %s: a thread of %d stopped at %d of %d looks 50 ms apart "
			"(%d: %c)", w->name, when, (int)pid, seen, looks, (int)first, state);
}

static void check_not_stopped(struct watched *w, pid_t pid, const char *when)
{
	check_stopped(w, pid, when, false);
}

static void check_not_held(struct watched *w, pid_t pid, const char *when)
{
	check_stopped(w, pid, when, true);
}

/* Everything gone: the watch, whatever it launched, our own target. */
static void watched_free(struct watched *w)
{
	if (w->pid > 0 && !w->reaped) {
		kill_descendants(w->pid);
		kill_reap(w->pid);
	}
	if (w->target > 0)
		kill(w->target, SIGKILL);
	if (w->spawned > 0) {
		kill_descendants(w->spawned);
		kill_reap(w->spawned);
	}
	rm_rf(w->out);
	rm_rf(w->reports);
	free(w->failures);
}

/* --- waiting and judging ---------------------------------------------------------- */

/* Poll every POLL_MS until every watch of ws has a report (or until, when
 * none must come); note when each was first seen, and how late the loop
 * itself ran at worst. */
static void poll_reports(struct watched **ws, int n, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	double late = 0, last = now_s();
	int left = n;

	while (left > 0 && now_ms() < deadline) {
		char name[256];
		double now;

		sleep_ms(POLL_MS);
		now = now_s();
		if (now - last - POLL_MS / 1000.0 > late)
			late = now - last - POLL_MS / 1000.0;
		last = now;
		for (int i = 0; i < n; i++) {
			if (ws[i]->target <= 0)
				ws[i]->target = json_file_int(ws[i]->out, "truth.json", "pid");
			ws[i]->lateness = late;
			if (ws[i]->seen || find_entry(ws[i]->reports, "stall-", "report.json", name,
						      sizeof(name)) < 0)
				continue;
			ws[i]->seen = wall_s();
			left--;
		}
	}
}

/* compare_watch.py stall on w's report against STALL (a file of w->out). */
static void judge(struct watched *w, const char *stall)
{
	char script[PATH_MAX], truth[PATH_MAX + 16], sj[PATH_MAX + 16], seen[32], slack[32];
	char launched[32], name[256];
	char *argv[] = { (char *)test_python3(), script, "stall", truth, sj, w->reports, STALL_ARG,
			 seen, slack, launched, NULL };
	struct run r;

	/* The target writes stall.json once its threads have settled. */
	for (int i = 0; w->seen && i < 100 && !file_exists(w->out, stall); i++)
		sleep_ms(100);
	if (!w->seen || !file_exists(w->out, stall)) {
		char *err = slurp(w->err);

		msg_add(&w->failures, "%s: %s (%s %s); the watch said: %.1500s", w->name,
			w->seen ? "a report before the target stalled" : "no report", stall,
			file_exists(w->out, stall) ? "written" : "never written", err ? err : "");
		free(err);
		return;
	}
	/* The other files of the report, written after report.json: the
	 * dumps (--native of a torch process reads and symbolizes libtorch)
	 * take seconds; when is not judged, only that they come. */
	for (int i = 0; i < 600 && find_entry(w->reports, "stall-", "dump.json", name,
					      sizeof(name)) < 0; i++)
		sleep_ms(100);
	sleep_ms(500);
	snprintf(script, sizeof(script), "%s/tests/compare_watch.py", test_srcdir());
	snprintf(truth, sizeof(truth), "%s/truth.json", w->out);
	snprintf(sj, sizeof(sj), "%s/%s", w->out, stall);
	snprintf(seen, sizeof(seen), "%.3f", w->seen);
	snprintf(slack, sizeof(slack), "%.3f", w->lateness);
	snprintf(launched, sizeof(launched), "%.3f", w->launched);
	if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
		msg_add(&w->failures, "%s: cannot run compare_watch.py", w->name);
		return;
	}
	printf("watch: %s: %s: %s", w->ti->label, w->name, r.out);
	if (run_exit(&r) != 0) {
		char *err = slurp(w->err);

		msg_add(&w->failures, "%s: %s%s(the watch said: %.1200s)", w->name, r.out, r.err,
			err ? err : "");
		free(err);
	}
	run_free(&r);
}

/* Lines of the watch's stderr that contain what. */
static int err_lines(struct watched *w, const char *what)
{
	char *text = slurp(w->err), *p = text;
	int n = 0;

	while (p && *p) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = 0;
		n += strstr(p, what) != NULL;
		p = nl ? nl + 1 : NULL;
	}
	free(text);
	return n;
}

/* The scenarios of one test side by side, each in a thread of its own;
 * their failures joined into one message. */
typedef void scenario_fn(struct watched *w);

struct scenario {
	const char *name;
	scenario_fn *fn;
	struct watched w;
};

static void *scenario_thread(void *arg)
{
	struct scenario *s = arg;

	s->fn(&s->w);
	return NULL;
}

static char *run_scenarios(const struct test_interp *ti, struct scenario *s, int n)
{
	pthread_t th[16];
	char *failures = NULL;

	ck_assert_msg(have_watch, "pystrobe has no watch command (`pystrobe watch --help` failed)");

	for (int i = 0; i < n; i++) {
		if (watched_init(&s[i].w, ti, s[i].name) < 0)
			continue;
		pthread_create(&th[i], NULL, scenario_thread, &s[i]);
	}
	for (int i = 0; i < n; i++) {
		if (!s[i].w.out[0])
			continue;
		pthread_join(th[i], NULL);
		if (s[i].w.failures)
			msg_add(&failures, "%s", s[i].w.failures);
		watched_free(&s[i].w);
	}
	return failures;
}

/* --- the stalls: every interpreter --------------------------------------------------- */

/* Launched by the watch: a report within the threshold + 5 s, judged;
 * SIGINT ends the watch and its command, and nothing is left. */
static void launched_stall(struct watched *w, const char *script, const char *mode,
			   int timeout_ms)
{
	struct watched *one[] = { w };

	watch_launch(w, script, mode, NULL);
	poll_reports(one, 1, timeout_ms);
	judge(w, "stall.json");
	check_not_held(w, w->target, "after the report");
	if (err_lines(w, "pystrobe: watch: ") < 1)
		msg_add(&w->failures, "%s: no line on stderr for the stall", w->name);
	watch_end(w, SIGINT);
	if (w->target > 0 && kill(w->target, 0) == 0 && proc_state(w->target, w->target) != 'Z')
		msg_add(&w->failures, "%s: target %d still there after the watch ended", w->name,
			(int)w->target);
}

static void flight_waits(struct watched *w);

/* The deadlock, and its flight recording's wait classes. */
static void stall_deadlock(struct watched *w)
{
	launched_stall(w, STALL_TARGET, "deadlock", 60000);
	flight_waits(w);
}

static void stall_livelock(struct watched *w)
{
	launched_stall(w, STALL_TARGET, "livelock", 60000);
}

static void stall_asyncio(struct watched *w)
{
	launched_stall(w, STALL_TARGET, "asyncio", 60000);
}

static void stall_asyncio_locks(struct watched *w)
{
	launched_stall(w, STALL_TARGET, "asyncio-locks", 60000);
}

/* --- the rest: oldest, newest, Debian's static 3.11 ---------------------------------- */

/* One request to the server target: a line, an answer. */
static int request(int port, const char *line)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[16];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok = -1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, line, strlen(line)) == (ssize_t)strlen(line) && read(fd, buf, sizeof(buf)) > 0)
		ok = 0;
	close(fd);
	return ok;
}

static bool wait_truth(struct watched *w, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;

	while (!file_exists(w->out, "truth.json") && now_ms() < deadline)
		sleep_ms(50);
	w->target = json_file_int(w->out, "truth.json", "pid");
	if (w->target <= 0)
		msg_add(&w->failures, "%s: the target wrote no truth.json", w->name);
	return w->target > 0;
}

/* Watched 3 x the threshold, and the 2 s a report may take after it:
 * nothing may be reported. */
static void expect_quiet(struct watched *w, int port)
{
	long long end = now_ms() + (3 * STALL_S + 2) * 1000;
	int sent = 0;

	for (long long t0 = now_ms(); now_ms() < end; sleep_ms(POLL_MS)) {
		/* Requests 4.5 s apart: idle for longer than the threshold. */
		if (port && sent < 2 && now_ms() - t0 >= 500 + sent * 4500) {
			if (request(port, "ping\n") < 0)
				msg_add(&w->failures, "%s: request %d failed", w->name, sent);
			sent++;
		}
	}
	if (count_entries(w->reports, "stall-")) {
		char name[256] = "", *err = slurp(w->err);

		find_entry(w->reports, "stall-", NULL, name, sizeof(name));
		msg_add(&w->failures, "%s: reported as stalled (%s): %.1000s", w->name, name,
			err ? err : "");
		free(err);
	}
	printf("watch: %s: %s: %d reports in %d s\n", w->ti->label, w->name,
	       count_entries(w->reports, "stall-"), 3 * STALL_S + 2);
}

static void quiet_busy(struct watched *w)
{
	watch_launch(w, STALL_TARGET, "busy", NULL);
	if (!wait_truth(w, 30000))
		return;
	expect_quiet(w, 0);
	/* The target's own log: it did take a step longer than --stall. */
	char path[PATH_MAX + 16], *log;

	snprintf(path, sizeof(path), "%s/steps.log", w->out);
	log = slurp(path);
	if (!log || !strstr(log, "validate"))
		msg_add(&w->failures, "busy: no long validation step in its log");
	free(log);
	watch_end(w, SIGINT);
}

static void quiet_server(struct watched *w)
{
	long port;

	watch_launch(w, STALL_TARGET, "server", NULL);
	if (!wait_truth(w, 30000))
		return;
	port = json_file_int(w->out, "truth.json", "port");
	expect_quiet(w, (int)port);
	watch_end(w, SIGINT);
}

/* Looks like a spin, appends to its heartbeat file: reported without
 * --progress; with it, not over 3 x the threshold while it appends, then,
 * once the test tells it to stop appending, within the threshold + 5 s. */
static void progress_heartbeat(struct watched *w)
{
	char file[PATH_MAX + 16], stop[PATH_MAX + 16], *opts[] = { "--progress", file, NULL };
	struct watched *one[] = { w };
	long pid;

	if (target_spawn(w, STALL_TARGET, "heartbeat", 30000) < 0)
		return;
	pid = w->target;
	snprintf(file, sizeof(file), "%s/heartbeat", w->out);
	/* Without --progress: it looks stalled (a spin) from its start. */
	watch_pids(w, &pid, 1, NULL);
	poll_reports(one, 1, 30000);
	judge(w, "looks.json");
	watch_end(w, SIGINT);
	check_not_stopped(w, w->target, "after the first watch");
	/* With it: quiet while it appends, a report once it stops. */
	rm_rf(w->reports);
	mkdir(w->reports, 0755);
	w->reaped = false;
	w->seen = 0;
	watch_pids(w, &pid, 1, opts);
	expect_quiet(w, 0);
	snprintf(stop, sizeof(stop), "%s/stop", w->out);
	write_file(stop, "", 0);
	poll_reports(one, 1, 60000);
	judge(w, "stall.json");
	watch_end(w, SIGINT);
	check_not_stopped(w, w->target, "after the --progress watch");
}

/* --pid of `sleep 1000`, not Python and no launcher: refused at once with
 * the line and the status (5) that record gives it, nothing watched. */
static void not_python(struct watched *w)
{
	char *sleeper[] = { "sleep", "1000", NULL }, pid[24], svg[PATH_MAX + 16], how[96];
	struct run watch, record;
	double t0;

	if ((w->spawned = spawn_cmd(sleeper)) < 0) {
		msg_add(&w->failures, "not-python: cannot start sleep");
		return;
	}
	proc_wait_exe(w->spawned, "/sleep", 10000);
	snprintf(pid, sizeof(pid), "%d", (int)w->spawned);
	snprintf(svg, sizeof(svg), "%s/sleep.svg", w->out);
	t0 = now_s();
	run_pystrobe(&watch, "watch", "-D", w->reports, "--pid", pid, NULL);
	t0 = now_s() - t0;
	run_pystrobe(&record, "record", "-o", svg, "--pid", pid, NULL);
	printf("watch: %s: not-python: watch --pid of sleep: %s in %.1f s: %s",
	       w->ti->label, run_describe(&watch, how, sizeof(how)), t0, watch.err);
	if (run_exit(&watch) != 5 || !run_one_error_line(&watch) || t0 > 5)
		msg_add(&w->failures, "not-python: watch --pid of sleep: %s after %.1f s, stderr %.500s "
			"(want exit 5 at once, one line)", how, t0, watch.err);
	if (run_exit(&record) != 5 || strcmp(watch.err, record.err) != 0)
		msg_add(&w->failures, "not-python: record says %.300s(exit %d), watch %.300s",
			record.err, run_exit(&record), watch.err);
	run_free(&watch);
	run_free(&record);
}

/* --pid of a shell that starts the deadlock target after 4 s: one line
 * says the watch waits for its Python children, then the deadlock is
 * reported as when launched. */
static void launcher(struct watched *w)
{
	char script[PATH_MAX], want[96];
	char *argv[24] = { "sh", "-c", "sleep 4; \"$@\"; exit $?", "sh" };
	struct watched *one[] = { w };
	long pid;
	int n = 4;

	test_interp_script(w->ti, STALL_TARGET, script, sizeof(script));
	n += python_argv(w->ti, argv + n, 16);
	argv[n++] = script;
	argv[n++] = "deadlock";
	argv[n++] = STALL_ARG;
	argv[n++] = w->out_inside;
	argv[n] = NULL;
	if ((w->spawned = spawn_cmd(argv)) < 0) {
		msg_add(&w->failures, "launcher: cannot start sh");
		return;
	}
	proc_wait_exe(w->spawned, "sh", 10000);
	pid = w->spawned;
	watch_pids(w, &pid, 1, NULL);
	snprintf(want, sizeof(want), "pystrobe: watch: process %ld (sh) runs no Python yet; "
		 "watching for its Python children", pid);
	for (int i = 0; i < 30 && !err_lines(w, want); i++)
		sleep_ms(100);
	if (err_lines(w, want) != 1 || file_exists(w->out, "truth.json")) {
		char *err = slurp(w->err);

		msg_add(&w->failures, "launcher: want one line \"%s\" before the Python starts; "
			"the watch said: %.800s", want, err ? err : "");
		free(err);
	}
	poll_reports(one, 1, 60000);
	judge(w, "stall.json");
	watch_end(w, SIGINT);
}

/* --- the flight recording ---------------------------------------------------------- */

/* pystrobe convert -q -f FMT [--from A] [--until B] -o OUT FLIGHT; 0 or -1. */
static int convert(struct watched *w, const char *flight, const char *fmt, const char *from,
		   const char *until, const char *out)
{
	struct argv_buf a = { .n = 0 };
	char how[96];
	struct run r;
	int rc = 0;

	arg(&a, pystrobe_path());
	arg(&a, "convert");
	arg(&a, "-q");
	arg(&a, "-f");
	arg(&a, fmt);
	if (from) {
		arg(&a, "--from");
		arg(&a, from);
	}
	if (until) {
		arg(&a, "--until");
		arg(&a, until);
	}
	arg(&a, "-o");
	arg(&a, out);
	arg(&a, flight);
	if (run_cmd(&r, RUN_TIMEOUT_MS, a.v) < 0 || run_exit(&r) != 0) {
		msg_add(&w->failures, "convert -f %s %s%s%s%s: %s: %.300s", fmt,
			from ? "--from " : "", from ? from : "", until ? " --until " : "",
			until ? until : "", run_describe(&r, how, sizeof(how)), r.err);
		rc = -1;
	}
	run_free(&r);
	return rc;
}

/* Samples of the folded text whose stack holds text (a frame's label
 * begins "function ("). */
static uint64_t samples_with(const struct folded *f, const char *text)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += strstr(f->stacks[i], text) ? f->counts[i] : 0;
	return n;
}

/* The collapsed conversion of a slice: its folded stacks, parsed here. */
static int collapsed(struct watched *w, const char *flight, const char *from, const char *until,
		     struct folded *f)
{
	char out[PATH_MAX + 32], *text;
	int bad;

	snprintf(out, sizeof(out), "%s/slice.txt", w->out);
	memset(f, 0, sizeof(*f));
	if (convert(w, flight, "collapsed", from, until, out) < 0)
		return -1;
	text = slurp(out);
	bad = text ? folded_parse(text, f) : -1;
	free(text);
	if (bad)
		msg_add(&w->failures, "flight: %d lines of the collapsed slice are not stacks", bad);
	return bad ? -1 : 0;
}

/* The recording of the report: in collapsed form, the moving stacks of
 * the seconds before the stall (descend(), in a slice ending the threshold
 * + 1 s before the mark) and the stalled one; the slices before, around
 * and after the mark add up to the whole; the SVG (well-formed, by
 * xmllint) and the pprof (decode_pprof.py) hold the same total. */
static void check_flight(struct watched *w, const char *flight, const char *stuck)
{
	/* The mark is the detection, --stall (3 s) and a little after the
	 * stall: before -4 the target moved; the last cut still holds the
	 * stalled threads' samples (convert refuses an empty slice). */
	static const char *const cuts[][2] = { { NULL, "-4" }, { "-4", "-2" }, { "-2", NULL } };
	char path[PATH_MAX + 32], script[PATH_MAX], *text, *stacks;
	char *lint[] = { "xmllint", "--noout", path, NULL };
	char *pprof[] = { (char *)test_python3(), script, path, NULL };
	struct folded whole, part;
	uint64_t sum = 0, moving = 0;
	struct run r;

	if (collapsed(w, flight, NULL, NULL, &whole) < 0)
		return;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		if (collapsed(w, flight, cuts[i][0], cuts[i][1], &part) < 0)
			goto out;
		sum += part.total;
		if (i == 0)
			moving = samples_with(&part, "descend (");
		folded_free(&part);
	}
	printf("watch: %s: flight: %llu samples, slices %llu; %llu moving before the stall, "
	       "%llu in %s\n", w->ti->label, (unsigned long long)whole.total,
	       (unsigned long long)sum, (unsigned long long)moving,
	       (unsigned long long)samples_with(&whole, stuck), stuck);
	if (!whole.total || sum != whole.total)
		msg_add(&w->failures, "flight: slices hold %llu samples, the whole %llu",
			(unsigned long long)sum, (unsigned long long)whole.total);
	if (!moving || !samples_with(&whole, stuck))
		msg_add(&w->failures, "flight: no moving stack before the stall, or none in %s",
			stuck);

	snprintf(path, sizeof(path), "%s/flight.svg", w->out);
	if (convert(w, flight, "flamegraph", NULL, NULL, path) == 0) {
		if (run_cmd(&r, RUN_TIMEOUT_MS, lint) < 0 || run_exit(&r) != 0)
			msg_add(&w->failures, "flight: the SVG is not well-formed XML: %.300s", r.err);
		else
			test_used("xmllint");
		run_free(&r);
		text = slurp(path);
		stacks = text ? svg_stacks(text) : NULL;
		if (!stacks || folded_parse(stacks, &part) || part.total != whole.total)
			msg_add(&w->failures, "flight: the SVG's stacks do not hold the %llu samples",
				(unsigned long long)whole.total);
		else
			folded_free(&part);
		free(stacks);
		free(text);
	}
	snprintf(path, sizeof(path), "%s/flight.pb.gz", w->out);
	snprintf(script, sizeof(script), "%s/tests/decode_pprof.py", test_srcdir());
	if (convert(w, flight, "pprof", NULL, NULL, path) == 0) {
		char want[64], alone[64];

		/* The first value: the sample count. */
		snprintf(want, sizeof(want), "\"totals\": [%llu,", (unsigned long long)whole.total);
		snprintf(alone, sizeof(alone), "\"totals\": [%llu]", (unsigned long long)whole.total);
		if (run_cmd(&r, RUN_TIMEOUT_MS, pprof) < 0 || run_exit(&r) != 0 ||
		    (!strstr(r.out, want) && !strstr(r.out, alone)))
			msg_add(&w->failures, "flight: pprof: %.200s %.300s (want %s)", r.out, r.err,
				want);
		run_free(&r);
	}
out:
	folded_free(&whole);
}

/* Samples of the folded text whose stack holds both a and b. */
static uint64_t samples_with_both(const struct folded *f, const char *a, const char *b)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += strstr(f->stacks[i], a) && strstr(f->stacks[i], b) ? f->counts[i] : 0;
	return n;
}

/* The threads the deadlock target names (stall.json's tids) block in
 * lock.acquire(), a C call without a frame of its own: in the report's
 * flight recording, every sample of theirs in the second before the mark
 * (the detection, at least --stall after they blocked) carries wait=lock,
 * as report.txt classes them (issue 41), not MainThread's alone. */
static void flight_waits(struct watched *w)
{
	char name[256], path[PATH_MAX * 2], who[48];
	long tids[8];
	int n = json_file_ints(w->out, "stall.json", "tid", tids, 8);
	struct folded f;

	if (!w->seen || n < 2 ||
	    find_entry(w->reports, "stall-", "flight.pstrobe", name, sizeof(name)) < 0)
		return;		/* judge() has said why */
	snprintf(path, sizeof(path), "%s/%s/flight.pstrobe", w->reports, name);
	if (collapsed(w, path, "-1", NULL, &f) < 0)
		return;
	for (int i = 0; i < n; i++) {
		uint64_t all, locked;

		snprintf(who, sizeof(who), ";thread %ld \"", tids[i]);
		all = samples_with(&f, who);
		locked = samples_with_both(&f, who, "\";wait=lock;");
		printf("watch: %s: deadlock: flight: thread %ld: %llu of %llu samples in the last "
		       "second with wait=lock\n", w->ti->label, tids[i], (unsigned long long)locked,
		       (unsigned long long)all);
		if (!all || locked != all)
			msg_add(&w->failures, "deadlock: flight: thread %ld, blocked on a lock: %llu "
				"of its %llu samples in the last second carry wait=lock", tids[i],
				(unsigned long long)locked, (unsigned long long)all);
	}
	folded_free(&f);
}

/* A deadlock launched with --on-stall; SIGUSR1; unstuck, it moves and
 * exits 7. */
static void lifecycle(struct watched *w)
{
	char cmd[PATH_MAX * 3 + 64], *opts[] = { "--on-stall", cmd, NULL };
	char name[256], path[PATH_MAX * 2], *env, want[PATH_MAX * 2];
	struct watched *one[] = { w };
	long long deadline;

	snprintf(cmd, sizeof(cmd), "env > '%s/onstall.tmp' && mv '%s/onstall.tmp' '%s/onstall.env'",
		 w->out, w->out, w->out);
	watch_launch(w, STALL_TARGET, "resume", opts);
	poll_reports(one, 1, 60000);
	judge(w, "stall.json");
	if (!w->seen)
		return;
	check_not_held(w, w->target, "after the report");
	find_entry(w->reports, "stall-", NULL, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s/flight.pstrobe", w->reports, name);
	check_flight(w, path, "hold_a_while (");
	for (int i = 0; i < 100 && !file_exists(w->out, "onstall.env"); i++)
		sleep_ms(100);
	find_entry(w->reports, "stall-", NULL, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/onstall.env", w->out);
	env = slurp(path);
	snprintf(want, sizeof(want), "\nPYSTROBE_REPORT=%s/%s\n", w->reports, name);
	if (!env)
		msg_add(&w->failures, "lifecycle: --on-stall did not run");
	else if (!strstr(env, want) || !strstr(env, "\nPYSTROBE_STALL_KIND=deadlock\n"))
		msg_add(&w->failures, "lifecycle: --on-stall's environment lacks %s or the kind",
			want + 1);
	snprintf(want, sizeof(want), "\nPYSTROBE_STALL_PID=%d\n", (int)w->target);
	if (env && !strstr(env, want))
		msg_add(&w->failures, "lifecycle: --on-stall's environment lacks %s", want + 1);
	free(env);

	/* SIGUSR1: a flight recording, DIR/flight-UNIX-PID, PID the watch's. */
	snprintf(want, sizeof(want), "-%d", (int)w->pid);
	kill(w->pid, SIGUSR1);
	deadline = now_ms() + 10000;
	while (find_entry(w->reports, "flight-", "flight.pstrobe", name, sizeof(name)) < 0 &&
	       now_ms() < deadline)
		sleep_ms(100);
	sleep_ms(300);		/* written whole */
	if (find_entry(w->reports, "flight-", "flight.pstrobe", name, sizeof(name)) < 0 ||
	    !strstr(name, want)) {
		msg_add(&w->failures, "lifecycle: SIGUSR1 wrote no flight-UNIX-%d/flight.pstrobe in %s",
			(int)w->pid, w->reports);
	} else {
		struct folded f;

		snprintf(path, sizeof(path), "%s/%s/flight.pstrobe", w->reports, name);
		if (collapsed(w, path, NULL, NULL, &f) == 0 && !samples_with(&f, "hold_a_while ("))
			msg_add(&w->failures, "lifecycle: SIGUSR1's recording has no hold_a_while");
		folded_free(&f);
	}

	/* Unstuck: the job moves again, then exits 7, and so does the watch. */
	kill(w->target, SIGUSR2);
	if (!watch_reap(w, 60000)) {
		msg_add(&w->failures, "lifecycle: the watch did not exit with its command");
		return;
	}
	if (!WIFEXITED(w->status) || WEXITSTATUS(w->status) != 7)
		msg_add(&w->failures, "lifecycle: the watch's status 0x%x, the command exited 7",
			w->status);
	if (!file_exists(w->out, "moved.json"))
		msg_add(&w->failures, "lifecycle: the target never moved again");
	if (err_lines(w, "moves again") != 1 || err_lines(w, "pystrobe: watch: deadlock") != 1)
		msg_add(&w->failures, "lifecycle: stderr has %d stall lines and %d \"moves again\""
			" lines, not 1 and 1", err_lines(w, "pystrobe: watch: deadlock"),
			err_lines(w, "moves again"));
}

/* SIGKILL the watch (by --pid) the moment a report directory appears, and
 * at a random moment: no thread of the deadlocked target stays stopped. */
static void kill_watch(struct watched *w)
{
	long pid;

	if (target_spawn(w, STALL_TARGET, "deadlock", 30000) < 0)
		return;
	pid = w->target;
	for (int round = 0; round < 3; round++) {
		char name[256];
		long long deadline = now_ms() + 30000;
		/* The first two at the report, the last at a random moment. */
		long long at = round < 2 ? 0 : now_ms() + 200 + rand() % 4000;

		rm_rf(w->reports);
		mkdir(w->reports, 0755);
		w->reaped = false;
		watch_pids(w, &pid, 1, NULL);
		while (now_ms() < deadline && (at ? now_ms() < at
					       : find_entry(w->reports, "stall-", NULL, name,
							    sizeof(name)) < 0))
			sleep_ms(1);
		kill(w->pid, SIGKILL);
		watch_reap(w, 5000);
		check_not_stopped(w, w->target, round < 2 ? "watch killed while reporting"
							   : "watch killed at random");
		if (!at && now_ms() >= deadline)
			msg_add(&w->failures, "kill: no report directory in 30 s");
	}
	printf("watch: %s: kill: 3 watches SIGKILLed, %s\n", w->ti->label,
	       w->failures ? "a thread left stopped" : "no thread left stopped");
}

static bool chosen(int i)
{
	int oldest, newest;

	test_interp_span(interps, ninterps, &oldest, &newest);
	return i == oldest || i == newest || strstr(interps[i].label, "debian-static");
}

/* The scenarios of a test, side by side, from those that apply to this
 * interpreter. */
struct scenario_def {
	const char *name;
	scenario_fn *fn;
	int min_minor;
};

static void run_defs(int i, const struct scenario_def *defs, size_t ndefs)
{
	const struct test_interp *ti = &interps[i];
	struct scenario s[16];
	char *failures;
	int n = 0;

	memset(s, 0, sizeof(s));
	for (size_t k = 0; k < ndefs && n < 16; k++)
		if (ti->minor >= defs[k].min_minor) {
			s[n].name = defs[k].name;
			s[n++].fn = defs[k].fn;
		}
	failures = run_scenarios(ti, s, n);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
}

/* The stalls, on every interpreter (the asyncio ones from 3.11, where
 * tasks can be read). */
START_TEST(test_stalls)
{
	static const struct scenario_def defs[] = {
		{ "deadlock", stall_deadlock, 7 },
		{ "livelock", stall_livelock, 7 },
		{ "asyncio", stall_asyncio, 11 },
		{ "asyncio-locks", stall_asyncio_locks, 11 },
	};

	if (interps[_i].minor < 11)
		printf("watch: %s: no asyncio stall before 3.11 (its tasks cannot be read)\n",
		       interps[_i].label);
	run_defs(_i, defs, sizeof(defs) / sizeof(defs[0]));
}
END_TEST

/* The rest, on the chosen few; after the stalls, not beside them: the
 * watches' reports of one test are written at about the same moment, and
 * the targets here burn CPU. */
START_TEST(test_behaviour)
{
	static const struct scenario_def defs[] = {
		{ "busy", quiet_busy, 7 },
		{ "server", quiet_server, 7 },
		{ "heartbeat", progress_heartbeat, 7 },
		{ "lifecycle", lifecycle, 7 },
		{ "kill", kill_watch, 7 },
		{ "not-python", not_python, 7 },
		{ "launcher", launcher, 7 },
	};

	if (chosen(_i))
		run_defs(_i, defs, sizeof(defs) / sizeof(defs[0]));
}
END_TEST

/* --- PyTorch --------------------------------------------------------------------------- */

/* A torch target started here, watched by --pid once torch is imported
 * (a short --stall calls the import's long native calls a spin), started
 * by its go file once the watch has said its first line.  pids: where
 * truth.json's pids start, for the watch. */
static void torch_stall(struct watched *w, const char *mode, int pids_from)
{
	struct watched *one[] = { w };
	char go[PATH_MAX + 8];
	long pids[4];
	int n;

	if (target_spawn(w, TORCH_TARGET, mode, TORCH_READY_MS) < 0)
		return;
	n = json_file_ints(w->out, "truth.json", "pid", pids, 4);
	watch_pids(w, pids + pids_from, n - pids_from, NULL);
	for (int i = 0; i < 300 && !err_lines(w, "pystrobe: "); i++)
		sleep_ms(100);
	snprintf(go, sizeof(go), "%s/go", w->out);
	write_file(go, "", 0);
	poll_reports(one, 1, 90000);
	judge(w, "stall.json");
	check_not_held(w, pids[0], "after the report");
	watch_end(w, SIGINT);
	for (int i = 0; i < n; i++)
		check_not_stopped(w, pids[i], "after the watch");
}

/* Every rank by --pid (truth.json: the launcher's pid, then the ranks'). */
static void torch_collective(struct watched *w)
{
	torch_stall(w, "collective", 1);
}

/* The main process by --pid, its workers followed. */
static void torch_dataloader(struct watched *w)
{
	torch_stall(w, "dataloader", 0);
}

START_TEST(test_torch)
{
	const struct test_interp *ti =
		test_interp_torch(interps, ninterps, "watch: the collective and DataLoader stalls");
	struct scenario s[] = {
		{ "collective", torch_collective, { 0 } },
		{ "dataloader", torch_dataloader, { 0 } },
	};
	char *failures;

	if (!ti)
		return;
	failures = run_scenarios(ti, s, 2);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("watch");
	TCase *tc = tcase_create("watch");
	char *opts;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(time(NULL));
	printf("watch: seed %ld\n", (long)time(NULL));
	ninterps = test_interps(&interps);
	opts = help_long_options("watch");
	have_watch = opts != NULL;
	free(opts);
	tcase_set_timeout(tc, 400);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_stalls, 0, ninterps);
	tcase_add_loop_test(tc, test_behaviour, 0, ninterps);
	tcase_add_test(tc, test_torch);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
