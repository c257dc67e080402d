#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "target.h"
#include "cmd/options.h"
#include "process/proctree.h"
#include "util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

/* --- dying with the test ------------------------------------------------ */

static pid_t forking_pid;

static void before_fork(void)
{
	forking_pid = getpid();
}

/* Runs in every child we fork.  When a check fails, Check _exit()s the test
 * process without any teardown (and on a timeout it kills it), and a parked
 * target with a spinning thread would then burn a CPU forever: so children
 * die with us.  The setting survives exec; setpriv's change of uid clears
 * it, but every run is bounded by its time limit anyway. */
static void after_fork_child(void)
{
	static const int sent[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	sigset_t none;

	/* A suite started in the background or under nohup inherits these
	 * ignored, and exec keeps them so: a target would then shrug off the
	 * SIGQUIT a test sends for a core, and Python installs no KeyboardInterrupt
	 * handler for an ignored SIGINT.  Every child starts as from a terminal. */
	for (size_t i = 0; i < sizeof(sent) / sizeof(sent[0]); i++)
		signal(sent[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		return;
	if (getppid() != forking_pid)	/* we died before the prctl */
		_exit(127);
}

static void register_atfork(void)
{
	pthread_atfork(before_fork, NULL, after_fork_child);
}

static void arm_death_signal(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_atfork);
}

/* --- small helpers ------------------------------------------------------ */

long long now_ms(void)
{
	return (long long)(mono_ns() / 1000000);
}

double now_s(void)
{
	return mono_ns() / 1e9;
}

double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

long json_file_int(const char *dir, const char *name, const char *key)
{
	char path[PATH_MAX * 2], pat[64], *text, *p;
	long v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	text = slurp(path);
	p = text ? strstr(text, pat) : NULL;
	if (p)
		v = strtol(p + strlen(pat), NULL, 10);
	free(text);
	return v;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *slurp(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	if (getdelim(&data, &len, 0, f) < 0) {
		free(data);
		data = strdup("");
	}
	fclose(f);
	return data;
}

void msg_add(char **msg, const char *fmt, ...)
{
	char *line = NULL, *joined = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (asprintf(&joined, "%s%s\n", *msg ? *msg : "", line) < 0)
		joined = NULL;
	free(line);
	if (!joined)
		return;
	free(*msg);
	*msg = joined;
}

/* The words of make variable name in makefile text (continuation lines
 * followed), space-separated. */
char *make_words(const char *text, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = text;
	size_t n = strlen(name);

	while (p && (p[0] != '\n' || strncmp(p + 1, name, n) || (p[n + 1] != ' ' && p[n + 1] != '=')))
		p = strchr(p + 1, '\n');
	if (!p)
		return xstrdup("");
	p = strchr(p + 1, '=') + 1;
	for (;;) {
		size_t w;

		p += strspn(p, " \t");
		if (p[0] == '\\' && p[1] == '\n') {
			p += 2;
			continue;
		}
		if (!*p || *p == '\n')
			break;
		w = strcspn(p, " \t\n\\");
		sb_printf(&sb, "%s%.*s", sb.len ? " " : "", (int)w, p);
		p += w;
	}
	return sb_detach(&sb);
}

/* Is word in text, not as part of a longer name? */
bool names_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; (p = strstr(p, word)); p++) {
		bool before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		bool after = isalnum((unsigned char)p[n]) || p[n] == '_';

		if (!before && !after)
			return true;
	}
	return false;
}

int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

double json_text_num(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = text ? strstr(text, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

void json_text_str(const char *text, const char *key, char *out, size_t size)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	p = text ? strstr(text, pat) : NULL;
	out[0] = 0;
	if (p)
		snprintf(out, size, "%.*s", (int)strcspn(p + strlen(pat), "\""), p + strlen(pat));
}

/* The integer after "key": in a JSON text we wrote ourselves; -1 if absent. */
static long json_int(const char *text, const char *key)
{
	return (long)json_text_num(text, key);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void rm_rf(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* --- targets ------------------------------------------------------------ */

static const char *const *wrapper;

void target_set_wrapper(const char *const *wrap)
{
	wrapper = wrap;
}

int proc_nspids(pid_t pid, pid_t tid, pid_t *ids, int max)
{
	char path[96], *text, *p;
	int n = 0;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	text = slurp(path);
	p = text ? strstr(text, "\nNSpid:") : NULL;
	if (p) {
		p += 7;
		while (n < max && (*p == '\t' || *p == ' ')) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			ids[n++] = (pid_t)v;
			p = end;
		}
	}
	free(text);
	return n;
}

/* The descendant of ancestor (itself included) whose id in its own
 * namespace is ns_pid: breadth first through /proc's children lists, the
 * deepest such (in nested namespaces each level has its own pid 1). */
static pid_t descendant_with_ns_pid(pid_t ancestor, pid_t ns_pid)
{
	pid_t queue[256], ids[40], found = 0;
	int head = 0, tail = 0;

	queue[tail++] = ancestor;
	while (head < tail) {
		pid_t p = queue[head++];
		char path[96], *text, *s, *end;
		int n = proc_nspids(p, 0, ids, 40);

		if (n > 0 && ids[n - 1] == ns_pid)
			found = p;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", p, p);
		text = slurp(path);
		for (s = text; s && *s && tail < 256; s = end) {
			long c = strtol(s, &end, 10);

			if (end == s)
				break;
			queue[tail++] = (pid_t)c;
		}
		free(text);
	}
	return found;
}

int target_start(struct target *t, const struct test_interp *ti,
		 char *why, size_t whysize, ...)
{
	char *argv[MAX_ARGS];
	const char *arg;
	va_list ap;
	int n = 0;

	arm_death_signal();
	memset(t, 0, sizeof(*t));
	t->ti = ti;
	test_interp_shared_dir(ti, t->dir, t->dir_inside, sizeof(t->dir));
	if (!t->dir[0]) {
		snprintf(why, whysize, "cannot make a shared directory: %s",
			 strerror(errno));
		return -1;
	}
	snprintf(t->truth, sizeof(t->truth), "%s/truth.json", t->dir);

	argv[n++] = NULL;	/* replaced by the interpreter */
	va_start(ap, whysize);
	while ((arg = va_arg(ap, const char *)) && n < MAX_ARGS - 2)
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n++] = t->dir_inside;
	argv[n] = NULL;

	t->pid = test_interp_spawn_wrapped(ti, wrapper, argv, 1);
	if (t->pid < 0) {
		snprintf(why, whysize, "fork: %s", strerror(errno));
		rm_rf(t->dir);
		return -1;
	}
	t->py_pid = t->pid;
	t->ns_pid = t->pid;
	return 0;
}

static int target_exited(struct target *t)
{
	if (t->reaped)
		return 1;
	if (waitpid(t->pid, &t->status, WNOHANG) != t->pid)
		return 0;
	t->reaped = 1;
	return 1;
}

static void describe_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, size, "status 0x%x", status);
}

int target_wait_file(struct target *t, const char *name, int timeout_ms,
		     char *why, size_t whysize)
{
	long long deadline = now_ms() + timeout_ms;
	char path[PATH_MAX + 64], how[64];

	snprintf(path, sizeof(path), "%s/%s", t->dir, name);
	while (access(path, F_OK) != 0) {
		if (target_exited(t)) {
			describe_status(t->status, how, sizeof(how));
			snprintf(why, whysize,
				 "target exited (%s) before writing %s", how,
				 name);
			return -1;
		}
		if (now_ms() > deadline) {
			snprintf(why, whysize, "no %s after %d s", path,
				 timeout_ms / 1000);
			return -1;
		}
		sleep_ms(10);
	}
	return 0;
}

/* parked.py's reporter thread writes truth.json and then exits; dumping
 * before it is gone would show it holding the GIL instead of the spinner. */
static int wait_settled(struct target *t, char *why, size_t whysize)
{
	long long deadline = now_ms() + 10000;
	int n;

	while ((n = proc_thread_count(t->py_pid)) != t->nthreads) {
		if (n < 0 || now_ms() > deadline) {
			snprintf(why, whysize,
				 "target has %d threads, truth.json says %d",
				 n, t->nthreads);
			return -1;
		}
		sleep_ms(10);
	}
	return 0;
}

static int read_truth(struct target *t, char *why, size_t whysize)
{
	char *text = slurp(t->truth);
	long pid, nthreads;

	if (!text) {
		snprintf(why, whysize, "cannot read %s", t->truth);
		return -1;
	}
	pid = json_int(text, "pid");
	nthreads = json_int(text, "nthreads");
	free(text);
	if (pid <= 0 || nthreads <= 0) {
		snprintf(why, whysize, "%s has no pid or nthreads", t->truth);
		return -1;
	}
	/* A shim execs the interpreter in place, so these agree; should one
	 * ever fork instead, dump the Python process, not the shim. */
	t->py_pid = pid;
	t->ns_pid = pid;
	t->nthreads = nthreads;
	if (wrapper && !(t->py_pid = descendant_with_ns_pid(t->pid, pid))) {
		snprintf(why, whysize, "no process under %d is %ld in its namespace",
			 (int)t->pid, pid);
		return -1;
	}
	return 0;
}

int target_start_parked(struct target *t, const struct test_interp *ti,
			char *why, size_t whysize)
{
	return target_start_script(t, ti, "tests/targets/parked.py", why,
				   whysize);
}

int target_start_script(struct target *t, const struct test_interp *ti,
			const char *path, char *why, size_t whysize)
{
	return target_start_script_arg(t, ti, path, NULL, why, whysize);
}

int target_start_script_arg(struct target *t, const struct test_interp *ti, const char *path,
			    const char *arg, char *why, size_t whysize)
{
	char script[PATH_MAX];

	test_interp_script(ti, path, script, sizeof(script));
	/* A NULL arg ends the list early: the script alone. */
	if (target_start(t, ti, why, whysize, script, arg, NULL) < 0)
		return -1;
	if (target_wait_file(t, "truth.json", TARGET_READY_MS, why,
			     whysize) < 0 ||
	    read_truth(t, why, whysize) < 0 ||
	    wait_settled(t, why, whysize) < 0) {
		target_stop(t);
		return -1;
	}
	return 0;
}

void target_stop(struct target *t)
{
	if (t->py_pid > 0 && t->py_pid != t->pid && !t->reaped)
		kill(t->py_pid, SIGKILL);
	if (t->pid > 0 && !t->reaped) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, &t->status, 0) < 0 && errno == EINTR)
			;
		t->reaped = 1;
	}
	rm_rf(t->dir);
	t->dir[0] = 0;
}

/* --- /proc ---------------------------------------------------------------- */

char proc_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: the state follows the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	return p[2];
}

int proc_stopped_threads(pid_t pid, int *total, pid_t *first, char *state)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	*total = 0;
	*first = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);
		char s;

		if (tid <= 0)
			continue;
		++*total;
		s = proc_state(pid, tid);
		if (s != 'T' && s != 't')
			continue;
		if (!n++) {
			*first = tid;
			*state = s;
		}
	}
	closedir(d);
	return n;
}

pid_t proc_stopped_thread(pid_t pid, char *state)
{
	pid_t first;
	int total;

	proc_stopped_threads(pid, &total, &first, state);
	return first;
}

int proc_thread_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (atoi(de->d_name) > 0)
			n++;
	closedir(d);
	return n;
}

pid_t spawn_cmd(char *const argv[])
{
	return spawn_cmd_err(argv, NULL);
}

pid_t spawn_cmd_err(char *const argv[], const char *errpath)
{
	pid_t pid;
	int nul, err;

	arm_death_signal();
	pid = fork();
	if (pid != 0)
		return pid;
	nul = open("/dev/null", O_RDWR);
	err = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644) : nul;
	if (nul >= 0 && err >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(err, 2);
	}
	execvp(argv[0], argv);
	_exit(127);
}

int wait_sampling(pid_t p, pid_t pid, int timeout_ms)
{
	double deadline = now_s() + timeout_ms / 1000.0;
	char dir[64], path[64 + 256], link[256], want[64];
	struct dirent *de;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", p);
	snprintf(want, sizeof(want), "/proc/%d/task/", pid);
	while (now_s() < deadline) {
		DIR *dd = opendir(dir);
		bool found = false;

		if (!dd)
			return -1;
		while (!found && (de = readdir(dd))) {
			ssize_t n;

			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = 0;
			found = strstr(link, want) != NULL;
		}
		closedir(dd);
		if (found)
			return 0;
		sleep_ms(10);
	}
	return -1;
}

int proc_wait_exe(pid_t pid, const char *suffix, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	size_t len = strlen(suffix);
	char path[64], exe[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	while (now_ms() < deadline) {
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n < 0 && errno == ENOENT)
			return -1;
		if (n >= (ssize_t)len && !memcmp(exe + n - len, suffix, len))
			return 0;
		sleep_ms(5);
	}
	return -1;
}

void kill_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* --- running commands --------------------------------------------------- */

struct sink {
	int fd;
	char **data;
	size_t *len;
	size_t cap;
};

/* Read what is there; close the fd at EOF. */
static void drain(struct sink *s)
{
	char buf[65536];
	ssize_t n = read(s->fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(s->fd);
		s->fd = -1;
		return;
	}
	if (*s->len + n + 1 > s->cap) {
		s->cap = (*s->len + n + 1) * 2;
		*s->data = realloc(*s->data, s->cap);
	}
	memcpy(*s->data + *s->len, buf, n);
	*s->len += n;
	(*s->data)[*s->len] = 0;
}

/* Read both pipes until they close or the deadline; at signal_at (if not
 * 0) send pid the signal sig, once. */
static void collect(struct sink sinks[2], long long deadline, pid_t pid, long long signal_at,
		    int sig)
{
	while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
		struct pollfd pfd[2];
		long long left = deadline - now_ms();

		if (signal_at && now_ms() >= signal_at) {
			kill(pid, sig);
			signal_at = 0;
		}
		if (signal_at && signal_at - now_ms() < left)
			left = signal_at - now_ms() + 1;
		if (left <= 0)
			break;
		for (int i = 0; i < 2; i++) {
			pfd[i].fd = sinks[i].fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, (int)left) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (pfd[i].revents && sinks[i].fd >= 0)
				drain(&sinks[i]);
	}
	for (int i = 0; i < 2; i++)
		if (sinks[i].fd >= 0)
			close(sinks[i].fd);
}

/* Reap pid by the deadline, else kill it. */
static void reap(struct run *r, pid_t pid, long long deadline)
{
	while (waitpid(pid, &r->status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			r->timed_out = 1;
			kill(pid, SIGKILL);
			waitpid(pid, &r->status, 0);
			return;
		}
		sleep_ms(2);
	}
}

static void exec_child(char *const argv[], int out, int err)
{
	int nul = open("/dev/null", O_RDONLY);

	if (nul >= 0)
		dup2(nul, 0);
	dup2(out, 1);
	dup2(err, 2);
	execvp(argv[0], argv);
	dprintf(2, "run_cmd: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int run_cmd(struct run *r, int timeout_ms, char *const argv[])
{
	return run_cmd_signal(r, timeout_ms, 0, 0, argv);
}

int run_cmd_signal(struct run *r, int timeout_ms, int signal_ms, int sig, char *const argv[])
{
	long long deadline = now_ms() + timeout_ms;
	long long signal_at = signal_ms > 0 ? now_ms() + signal_ms : 0;
	int outp[2], errp[2];
	struct sink sinks[2];
	pid_t pid;

	arm_death_signal();
	memset(r, 0, sizeof(*r));
	r->timeout_ms = timeout_ms;
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe2(outp, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		close(outp[0]);
		close(outp[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0)
		exec_child(argv, outp[1], errp[1]);
	close(outp[1]);
	close(errp[1]);
	if (pid < 0) {
		close(outp[0]);
		close(errp[0]);
		return -1;
	}
	sinks[0] = (struct sink){ outp[0], &r->out, &r->out_len, 1 };
	sinks[1] = (struct sink){ errp[0], &r->err, &r->err_len, 1 };
	collect(sinks, deadline, pid, signal_at, sig);
	reap(r, pid, deadline);
	return 0;
}

/* PYSTROBE_BIN tries a binary other than the build's. */
const char *pystrobe_path(void)
{
	static char path[PATH_MAX];
	const char *bin = getenv("PYSTROBE_BIN");

	if (bin && *bin)
		return bin;
	if (!path[0])
		snprintf(path, sizeof(path), "%s/pystrobe", test_builddir());
	return path;
}

int run_pystrobe(struct run *r, ...)
{
	char *argv[MAX_ARGS];
	const char *arg;
	va_list ap;
	int n = 0;

	argv[n++] = (char *)pystrobe_path();
	va_start(ap, r);
	while ((arg = va_arg(ap, const char *)) && n < MAX_ARGS - 1)
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	return run_cmd(r, RUN_TIMEOUT_MS, argv);
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

char *help_long_options(const char *cmd)
{
	struct strbuf sb = STRBUF_INIT;
	struct run r;
	const char *p;

	if ((cmd ? run_pystrobe(&r, cmd, "--help", NULL) : run_pystrobe(&r, "--help", NULL)) < 0)
		return NULL;
	if (run_exit(&r) != 0) {
		run_free(&r);
		return NULL;
	}
	for (p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *s = p;

		while (*s == ' ')
			s++;
		if (s[0] == '-' && isalpha((unsigned char)s[1]) && s[2] == ',' && s[3] == ' ')
			s += 4;
		if (s == p || strncmp(s, "--", 2))
			continue;
		sb_printf(&sb, "%s%.*s", sb.len ? " " : "",
			  (int)strspn(s, "-abcdefghijklmnopqrstuvwxyz"), s);
	}
	run_free(&r);
	return sb_detach(&sb);
}

char *table_long_options(const struct opt_table *t)
{
	struct strbuf sb = STRBUF_INIT;

	for (const struct opt *o = t->opts; o->name || o->like; o++)
		sb_printf(&sb, "%s--%s", sb.len ? " " : "", opt_def(o)->name);
	return sb_detach(&sb);
}

bool has_word(const char *words, const char *w)
{
	char *x = xasprintf(" %s ", words), *pat = xasprintf(" %s ", w);
	bool found = strstr(x, pat) != NULL;

	free(x);
	free(pat);
	return found;
}

int run_exit(const struct run *r)
{
	if (r->timed_out || !WIFEXITED(r->status))
		return -1;
	return WEXITSTATUS(r->status);
}

const char *run_describe(const struct run *r, char *buf, size_t size)
{
	if (r->timed_out) {
		snprintf(buf, size, "timed out after %.1f s and was killed",
			 r->timeout_ms / 1000.0);
		return buf;
	}
	describe_status(r->status, buf, size);
	return buf;
}

int run_one_error_line(const struct run *r)
{
	const char *nl;

	if (strncmp(r->err, "pystrobe: ", 10) != 0)
		return 0;
	nl = strchr(r->err, '\n');
	return !nl || nl[1] == 0;
}

void kill_descendants(pid_t pid)
{
	static struct proc_node tree[PROCTREE_MAX];
	int n = proctree_list(pid, tree, PROCTREE_MAX);

	/* Children before their parents (the list is parents first), and
	 * not pid itself: that is the caller's. */
	while (n-- > 1)
		kill(tree[n].pid, SIGKILL);
}

/* --- launching, and the hardening tests ----------------------------------- */

int python_argv(const struct test_interp *ti, char **argv, int max)
{
	static char *const env[] = { "env", "-u", "PYTHONPATH", "-u", "PYTHONHOME",
				     "PYTHONDONTWRITEBYTECODE=1" };
	int n = 0;

	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]) && n < max; i++)
		argv[n++] = env[i];
	if (ti->env[0] && n < max)
		argv[n++] = (char *)ti->env;
	if (ti->root[0] && n + 1 < max) {
		argv[n++] = "/usr/sbin/chroot";
		argv[n++] = (char *)ti->root;
	}
	if (n < max)
		argv[n++] = (char *)ti->path;
	return n;
}

bool pystrobe_sanitized(void)
{
	static int known = -1;
	FILE *f;
	char *data;
	size_t len;

	if (known >= 0)
		return known;
	known = 0;
	if (!(f = fopen(pystrobe_path(), "rb")))
		return false;
	data = malloc(1 << 20);
	while (data && !known && (len = fread(data, 1, 1 << 20, f)) > 0)
		known = memmem(data, len, "__asan_init", 11) != NULL;
	free(data);
	fclose(f);
	return known;
}

int sanitizer_report(const char *text)
{
	return text && (strstr(text, "AddressSanitizer") || strstr(text, "LeakSanitizer") ||
			strstr(text, "runtime error:") || strstr(text, "UndefinedBehaviorSanitizer"));
}

const char *record_summary(const char *err)
{
	unsigned long long n, rounds;
	const char *p = err ? strstr(err, "pystrobe: ") : NULL;

	for (; p; p = strstr(p + 1, "pystrobe: "))
		if (sscanf(p, "pystrobe: %llu samples from %llu rounds", &n, &rounds) == 2)
			return p;
	return NULL;
}

int all_lines_pystrobe(const char *err)
{
	const char *p = err;

	if (!p)
		return 0;
	while (*p) {
		if (strncmp(p, "pystrobe: ", 10) != 0)
			return 0;
		p = strchr(p, '\n');
		if (!p)
			return 1;
		p++;
	}
	return 1;
}

int stress_mode(void)
{
	const char *s = getenv("PYSTROBE_STRESS");

	return s && !strcmp(s, "1");
}

void arg(struct argv_buf *a, const char *s)
{
	if (a->n < (int)ARRAY_SIZE(a->v) - 1)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

void args(struct argv_buf *a, char *const *list)
{
	for (; list && *list; list++)
		arg(a, *list);
}

void arg_python(struct argv_buf *a, const struct test_interp *ti)
{
	char *v[16];
	int n = python_argv(ti, v, 16);

	for (int i = 0; i < n; i++)
		arg(a, v[i]);
}

pid_t target_host_pid(const struct target *t, pid_t ns_pid)
{
	return descendant_with_ns_pid(t->pid, ns_pid);
}

char *shell_words(char *const *argv)
{
	size_t cap = 16;
	char *s;

	for (int i = 0; argv[i]; i++)
		cap += strlen(argv[i]) * 4 + 3;
	s = calloc(1, cap);
	for (int i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, "'");
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '\'')
				strcat(s, "'\\''");
			else
				strncat(s, p, 1);
		}
		strcat(s, "'");
	}
	return s;
}

int tmux_cmd(const char *sock, char **out, char *const words[])
{
	struct argv_buf a = { .n = 0 };
	struct run r;
	int rc;

	arg(&a, "tmux");
	arg(&a, "-S");
	arg(&a, sock);
	arg(&a, "-f");
	arg(&a, "/dev/null");
	args(&a, words);
	if (run_cmd(&r, 10000, a.v) < 0)
		return -1;
	rc = run_exit(&r);
	if (out) {
		*out = r.out;
		r.out = NULL;
	}
	run_free(&r);
	return rc;
}
