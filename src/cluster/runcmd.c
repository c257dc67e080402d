/* Slurm's commands as children of pystrobe (cluster/runcmd.h). */
#include "cluster/runcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

#define TIED_ARGS_MAX 64

/* Whether name runs: a path that is executable, or a name found so on
 * PATH.  The tie execs it later, where a failure has no errno to say. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL, full[PATH_MAX];
	bool found = false;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0;
	copy = xstrdup(path ? path : "/usr/bin:/bin");
	for (char *dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(full, sizeof(full), "%s/%s", dir, name);
		found = access(full, X_OK) == 0;
	}
	free(copy);
	return found;
}

int runcmd_tied_main(int argc, char **argv)
{
	pid_t parent = argc >= 4 ? (pid_t)atoi(argv[2]) : 0;

	if (parent <= 0)
		return 127;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	/* Its parent already gone: nothing to be tied to. */
	if (getppid() != parent)
		return 127;
	execvp(argv[3], argv + 3);
	return 127;
}

/* argv behind the tie, in tied (its strings borrowed but the pid's, in
 * ppid): the binary to run, or NULL to run argv itself. */
static const char *tie(char *const *argv, char **tied, char *ppid, size_t ppidlen, char *exe,
		       size_t exelen)
{
	ssize_t n;
	int i = 0;

	if (!spawn_self_allowed() || (n = readlink("/proc/self/exe", exe, exelen - 1)) <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(ppid, ppidlen, "%d", (int)getpid());
	tied[i++] = "pystrobe";
	tied[i++] = RUNCMD_TIED_ARG;
	tied[i++] = ppid;
	for (int k = 0; argv[k] && i + 1 < TIED_ARGS_MAX; k++)
		tied[i++] = argv[k];
	tied[i] = NULL;
	return exe;
}

/* posix_spawnp: the child shares no memory with pystrobe (util.h says why
 * that matters), and an exec that fails comes back as its errno.  Through
 * the tie when this is pystrobe. */
static int spawn_piped(pid_t *pid, char *const *argv, int out[2], int err[2])
{
	char *tied[TIED_ARGS_MAX], ppid[16], exe[PATH_MAX];
	const char *self = on_path(argv[0]) ? tie(argv, tied, ppid, sizeof(ppid), exe,
						   sizeof(exe)) : NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int rc;

	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	rc = self ? posix_spawn(pid, self, &fa, &attr, tied, environ) :
		    posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return -rc;
}

int runcmd_start(struct runcmd *c, char *const *argv)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, rc;

	memset(c, 0, sizeof(*c));
	c->fd[0] = c->fd[1] = -1;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = spawn_piped(&c->pid, argv, out, err);
	if (rc < 0)
		goto fail;
	close(out[1]);
	close(err[1]);
	c->fd[0] = out[0];
	c->fd[1] = err[0];
	return 0;
fail:
	close_pair(out);
	close_pair(err);
	return rc;
}

static int ms_until(uint64_t deadline_ns)
{
	uint64_t now = mono_ns();

	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now) / 1000000 + 1);
}

/* Read what one stream has; close it at its end. */
static void drain(struct runcmd *c, int s, runcmd_feed_fn feed, void *arg)
{
	char buf[16384];
	ssize_t n = read(c->fd[s], buf, sizeof(buf));

	if (n > 0) {
		feed(arg, s, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	close(c->fd[s]);
	c->fd[s] = -1;
}

int runcmd_pump(struct runcmd *c, uint64_t deadline_ns, volatile sig_atomic_t *stop,
		runcmd_feed_fn feed, void *arg)
{
	while (c->fd[0] >= 0 || c->fd[1] >= 0) {
		struct pollfd p[2] = { { c->fd[0], POLLIN, 0 }, { c->fd[1], POLLIN, 0 } };
		int ms, n;

		if (stop && *stop)
			return -EINTR;
		ms = ms_until(deadline_ns);
		if (!ms)
			return -ETIMEDOUT;
		/* A signal's flag is looked at within 200 ms at worst. */
		n = poll(p, 2, ms < 200 ? ms : 200);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int s = 0; n > 0 && s < 2; s++)
			if (p[s].revents)
				drain(c, s, feed, arg);
	}
	return 0;
}

static void close_streams(struct runcmd *c)
{
	for (int s = 0; s < 2; s++)
		if (c->fd[s] >= 0) {
			close(c->fd[s]);
			c->fd[s] = -1;
		}
}

/* Reap it if it has exited, else wait up to ms for it. */
static bool reap_within(struct runcmd *c, int ms)
{
	uint64_t until = mono_ns() + (uint64_t)ms * 1000000;

	while (!c->reaped) {
		pid_t r = waitpid(c->pid, &c->wstatus, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			c->reaped = true;
			break;
		}
		if (mono_ns() >= until)
			return false;
		nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	}
	return true;
}

int runcmd_end(struct runcmd *c, int grace_ms)
{
	close_streams(c);
	if (reap_within(c, 0))
		return c->wstatus;
	kill(c->pid, SIGTERM);
	if (!reap_within(c, grace_ms)) {
		kill(-c->pid, SIGKILL);
		reap_within(c, 5000);
	}
	return c->wstatus;
}

int runcmd_wait(struct runcmd *c, uint64_t deadline_ns)
{
	if (reap_within(c, ms_until(deadline_ns)))
		return c->wstatus;
	return runcmd_end(c, 2000);
}

struct capture {
	struct strbuf *sb[2];
};

static void capture_feed(void *arg, int stream, const char *buf, size_t n)
{
	struct capture *cap = arg;

	if (cap->sb[stream]->len + n <= ((size_t)1 << 20))
		sb_add(cap->sb[stream], buf, n);
}

int runcmd_capture(char *const *argv, int timeout_ms, struct strbuf *out, struct strbuf *err)
{
	struct capture cap = { { out, err } };
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000;
	struct runcmd c;
	int rc = runcmd_start(&c, argv);

	if (rc < 0)
		return rc;
	rc = runcmd_pump(&c, deadline, NULL, capture_feed, &cap);
	if (rc < 0) {
		runcmd_end(&c, 1000);
		return rc;
	}
	return runcmd_wait(&c, deadline);
}
