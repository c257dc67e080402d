/* Starting the command `record` or `top` profiles, and ending it. */
#include "cmd/launch.h"
#include "python/locate.h"
#include "process/mem.h"
#include "process/pause.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "python/pystack.h"
#include "util/signame.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the child reports instead of an errno when SUDO_UID or SUDO_GID
 * does not parse. */
#define BAD_SUDO_IDS (-1)

/* Under sudo, run the command as the user who asked, not as root, with
 * none of root's groups.  Returns 0, a positive errno or BAD_SUDO_IDS. */
static int drop_to_sudo_user(void)
{
	uid_t uid;
	gid_t gid;
	int rc = sudo_user(&uid, &gid);

	if (rc < 0)
		return BAD_SUDO_IDS;
	if (rc == 0)
		return 0;
	if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
		return errno;
	return 0;
}

/* The full-screen view owns the terminal: the command reads nothing, and
 * writes to out_fd (its log). */
static void stdio_away(int out_fd)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd < 0 || dup2(fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
		_exit(126);
	if (fd > 2)
		close(fd);
}

/* The terminal we are in the foreground of (standard input, output or
 * error), or -1: the launched command is given it, as a shell gives a job
 * its terminal. */
static int foreground_tty(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd) && tcgetpgrp(fd) == getpgrp())
			return fd;
	return -1;
}

/* Make pgrp the foreground of the terminal fd.  SIGTTOU is held off: when
 * the terminal is given back we are in the background. */
static void set_foreground(int fd, pid_t pgrp)
{
	sigset_t ttou, old;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	/* Failing, the command runs in the background: it cannot read
	 * the terminal, but is sampled and ended all the same. */
	(void)tcsetpgrp(fd, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Its own process group, so that ending it reaches every process it
 * started (a multiprocessing pool, a forkserver and its workers); and the
 * terminal, if we hold it, so that it can read it and Ctrl-C reaches it
 * as it would without us.  Both sides call setpgid: neither may run
 * ahead of it. */
static void own_group(struct child *ch, int tty_fd)
{
	if (setpgid(ch->pid, ch->pid) == 0 || getpgid(ch->pid) == ch->pid)
		ch->pgid = ch->pid;
	if (tty_fd < 0 || !ch->pgid)
		return;
	ch->tty_fd = tty_fd;
	set_foreground(ch->tty_fd, ch->pgid);
}

/* Give the terminal back, once the launched command has ended. */
static void take_terminal_back(struct child *ch)
{
	if (ch->tty_fd < 0)
		return;
	set_foreground(ch->tty_fd, getpgrp());
	ch->tty_fd = -1;
}

/* Start argv[0] (looked up in PATH) in its own process group.  It waits on
 * a pipe until a byte is written to *go_fd, so that sampling can begin with
 * its first Python instruction; if exec fails it writes its errno to
 * *err_fd.  Under sudo it runs as the user who asked.  With out_fd >= 0
 * its standard input is /dev/null and its output and error go to out_fd
 * (a full-screen view owns the terminal); with CHILD_OUT_TO_STDERR its
 * output goes to our standard error; with hold_tty it is to be given
 * the terminal.  Returns
 * the pid, or -1 with errno set. */
static pid_t launch(char **argv, int out_fd, bool hold_tty, int *go_fd, int *err_fd)
{
	int go[2], errp[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		setpgid(0, 0);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		e = drop_to_sudo_user();
		if (!e) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			/* Holding the terminal, a stop by Ctrl-Z would hang
			 * it with us waiting: not suspendable. */
			if (hold_tty)
				signal(SIGTSTP, SIG_IGN);
			if (out_fd >= 0)
				stdio_away(out_fd);
			else if (out_fd == CHILD_OUT_TO_STDERR && dup2(2, 1) < 0)
				_exit(126);
			execvp(argv[0], argv);
			e = errno;
		}
		/* The parent names the error: "cannot run 'CMD': ...". */
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	*go_fd = go[1];
	*err_fd = errp[0];
	return pid;
}

int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_ERROR;
}

/* Is pid a Python process whose interpreter has a thread state yet? */
static bool python_ready(pid_t pid)
{
	struct mem *m = mem_proc_open(pid);
	struct locate_src src;
	struct pyinterp pi;
	struct py_tstate ts[1];
	uint64_t gil;
	char err[256];
	bool ready = false;

	locate_src_live(&src, pid);
	if (locate_python(&src, m, &pi, err, sizeof(err)) == 0) {
		ready = pystack_tstates(m, &pi, ts, 1, &gil, err, sizeof(err)) > 0;
		pyinterp_free(&pi);
	}
	locate_src_release(&src);
	mem_close(m);
	return ready;
}

int python_descendants(pid_t root, pid_t *out, int max)
{
	struct proc_node *v = xcalloc(PROCTREE_MAX, sizeof(*v));
	int n = proctree_list(root, v, PROCTREE_MAX), found = 0;

	for (int i = 1; i < n && found < max; i++)
		if (python_ready(v[i].pid))
			out[found++] = v[i].pid;
	free(v);
	return found;
}

/* Wait until the launched child has run its command.  Returns 0, or -1
 * with the exit status to end with in *status_out when exec failed (said
 * on stderr, prefixed with who). */
static int wait_for_exec(struct child *ch, char **command, const char *who, int err_fd,
			 int *status_out)
{
	int e;

	/* exec failed: the child wrote its errno before exiting.  On
	 * success the pipe closed with exec (close-on-exec): EOF. */
	if (read(err_fd, &e, sizeof(e)) == sizeof(e)) {
		ch->reaped = waitpid(ch->pid, &ch->status, 0) == ch->pid;
		take_terminal_back(ch);
		if (e == BAD_SUDO_IDS)
			errorf("%s: SUDO_UID or SUDO_GID is not a numeric id: not running '%s' as root",
			       who, command[0]);
		else
			errorf("%s: cannot run '%s': %s", who, command[0], strerror(e));
		*status_out = EXIT_ERROR;
		return -1;
	}
	return 0;
}

/* The launched command exited before any Python it started could be
 * sampled: nothing will be recorded, which is a failure even when the
 * command succeeded. */
static int exited_first(struct child *ch, char **command, const char *who)
{
	int status = exit_status_of(ch->status);

	ch->reaped = true;
	take_terminal_back(ch);
	errorf("%s: '%s' exited (status %d) before any Python it ran could be sampled: nothing "
	       "recorded", who, command[0], status);
	return status ? status : EXIT_NOT_PYTHON;
}

/* Say, in one line, that the Python processes below what (the command
 * launched, or a --pid) are what is recorded; below is the first found. */
static void say_following(const char *who, const char *what, pid_t below)
{
	int argc = 0;
	char **argv = proc_cmdline(below, &argc);
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; argv && i < argc && sb.len < 80; i++)
		sb_printf(&sb, "%s%s", i ? " " : "", argv[i]);
	errorf("%s: %s is not Python: following the Python processes it starts (the first: "
	       "%d, %s)", who, what, (int)below, sb.buf ? sb.buf : "?");
	sb_release(&sb);
	proc_cmdline_free(argv);
}

static void follow_below(struct child *ch, char **command, const char *who, pid_t below)
{
	char *what = xasprintf("'%s'", command[0]);

	say_following(who, what, below);
	free(what);
	ch->python_below = below;
}

bool follow_pid_below(pid_t pid, const char *who)
{
	pid_t below;
	char *what;

	if (!python_descendants(pid, &below, 1))
		return false;
	what = xasprintf("process %d", (int)pid);
	say_following(who, what, below);
	free(what);
	return true;
}

/* How many 1 ms polls apart the launched command's descendants are looked
 * at: a launcher's Python child takes milliseconds to start anyway. */
#define DESCENDANT_POLLS 10

/* Wait until the launched child (through env, a shim, taskset...) is
 * Python, or a process it started is (a shell script, make, uv run): then
 * ch->python_below is set.  Returns 0, or -1 with the exit status to end
 * with in *status_out when it exited or failed first (said on stderr,
 * prefixed with who) or *stop was set. */
static int wait_for_python(struct child *ch, char **command, const char *who, int err_fd,
			   volatile sig_atomic_t *stop, int *status_out)
{
	struct timespec pause = { 0, 1000000 };
	pid_t below;

	if (wait_for_exec(ch, command, who, err_fd, status_out) < 0)
		return -1;
	for (int polls = 1;; polls++) {
		if (waitpid(ch->pid, &ch->status, WNOHANG) == ch->pid) {
			*status_out = exited_first(ch, command, who);
			return -1;
		}
		if (*stop) {
			*status_out = EXIT_ERROR;
			return -1;
		}
		if (python_ready(ch->pid))
			return 0;
		if (polls % DESCENDANT_POLLS == 0 && python_descendants(ch->pid, &below, 1)) {
			follow_below(ch, command, who, below);
			return 0;
		}
		nanosleep(&pause, NULL);
	}
}

/* --- a launched command, start to end -------------------------------------- */

int child_start(struct child *ch, char **command, const char *who, int out_fd,
		bool any_program, volatile sig_atomic_t *stop, int *status_out)
{
	int go_fd = -1, err_fd = -1, rc, tty_fd = out_fd >= 0 ? -1 : foreground_tty();

	memset(ch, 0, sizeof(*ch));
	ch->tty_fd = -1;
	ch->who = who;
	ch->command = command;
	ch->pid = launch(command, out_fd, tty_fd >= 0, &go_fd, &err_fd);
	if (ch->pid < 0) {
		errorf("%s: cannot start '%s': %s", who, command[0], strerror(errno));
		ch->pid = 0;
		*status_out = EXIT_ERROR;
		return -1;
	}
	own_group(ch, tty_fd);
	/* The byte lets it exec: sampling can begin with its first Python
	 * instruction. */
	if (write(go_fd, "g", 1) != 1) {
		rc = -1;
		*status_out = EXIT_ERROR;
	} else if (any_program) {
		rc = wait_for_exec(ch, command, who, err_fd, status_out);
	} else {
		rc = wait_for_python(ch, command, who, err_fd, stop, status_out);
	}
	close(go_fd);
	close(err_fd);
	return rc;
}

bool child_reap(struct child *ch, int timeout_ms)
{
	struct timespec tick = { 0, 10000000 };

	if (!ch->pid || ch->reaped)
		return true;
	for (int waited = 0;; waited += 10) {
		pid_t r = pause_wait_child(ch->pid, &ch->status, timeout_ms < 0);

		if (r == ch->pid || r < 0) {
			ch->reaped = true;
			ch->lost = r < 0;
			take_terminal_back(ch);
			return true;
		}
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return false;
		if (r == 0)
			nanosleep(&tick, NULL);
	}
}

int child_exit_status(const struct child *ch)
{
	return ch->lost ? EXIT_ERROR : exit_status_of(ch->status);
}

/* Is a process of its group left?  The group outlives the command when
 * processes it started do; EPERM says one is there too. */
static bool group_left(const struct child *ch)
{
	return ch->pgid && (kill(-ch->pgid, 0) == 0 || errno == EPERM);
}

/* Wait up to timeout_ms for the command to exit and its group to empty.
 * True once both have. */
static bool wait_tree(struct child *ch, int timeout_ms)
{
	struct timespec tick = { 0, 10000000 };

	for (int waited = 0;; waited += 10) {
		if (child_reap(ch, 0) && !group_left(ch))
			return true;
		if (waited >= timeout_ms)
			return false;
		nanosleep(&tick, NULL);
	}
}

/* Send sig to its process group, or to it alone if it has none. */
static void signal_tree(const struct child *ch, int sig)
{
	if (ch->pgid)
		kill(-ch->pgid, sig);
	else if (!ch->reaped)
		kill(ch->pid, sig);
}

void child_describe_end(const struct child *ch, struct strbuf *sb)
{
	const char *name;

	if (ch->lost || !ch->reaped) {
		sb_puts(sb, "ended (its status could not be read)");
	} else if (WIFSIGNALED(ch->status)) {
		name = sig_abbrev(WTERMSIG(ch->status));
		if (name)
			sb_printf(sb, "ended by SIG%s", name);
		else
			sb_printf(sb, "ended by signal %d", WTERMSIG(ch->status));
	} else {
		sb_printf(sb, "exited with status %d", exit_status_of(ch->status));
	}
}

bool child_ignores(const struct child *ch, int sig)
{
	char path[64], *text, *p;
	unsigned long long mask;
	bool ignores = false;

	if (!ch->pid || ch->reaped)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->pid);
	text = read_file(path, NULL);
	p = text ? strstr(text, "\nSigIgn:") : NULL;
	if (p && sscanf(p + strlen("\nSigIgn:"), "%llx", &mask) == 1)
		ignores = mask & (1ull << (sig - 1));
	free(text);
	return ignores;
}

void child_name(const struct child *ch, struct strbuf *sb)
{
	struct strbuf all = STRBUF_INIT;

	for (int i = 0; ch->command && ch->command[i]; i++)
		sb_printf(&all, "%s%s", i ? " " : "", ch->command[i]);
	sb_printf(sb, "'%.100s%s'", all.len ? all.buf : "", all.len > 100 ? "..." : "");
	sb_release(&all);
}

/* Still there CHILD_INT_SAY_MS after SIGINT: what comes next, at once. */
static void say_still_there(const struct child *ch)
{
	struct strbuf sb = STRBUF_INIT;

	child_name(ch, &sb);
	errorf("%s: %s %s %g s after SIGINT: SIGTERM in %g s, SIGKILL %g s after that",
	       ch->who, sb.buf, ch->reaped ? "exited, but processes it started have not," :
	       "has not exited", CHILD_INT_SAY_MS / 1e3,
	       (CHILD_INT_GRACE_MS - CHILD_INT_SAY_MS) / 1e3, CHILD_TERM_GRACE_MS / 1e3);
	sb_release(&sb);
}

/* Wait up to grace_ms for the tree to end after sig; after SIGINT, say
 * what comes next once it is clear the command does not end at once. */
static bool wait_after(struct child *ch, int sig, int grace_ms)
{
	if (sig != SIGINT || grace_ms <= CHILD_INT_SAY_MS)
		return wait_tree(ch, grace_ms);
	if (wait_tree(ch, CHILD_INT_SAY_MS))
		return true;
	say_still_there(ch);
	return wait_tree(ch, grace_ms - CHILD_INT_SAY_MS);
}

int child_finish(struct child *ch, bool stop)
{
	/* What a terminal's Ctrl-C does, so that Python's own cleanup runs
	 * (a pool's workers, a forkserver), then firmer. */
	static const struct { int sig, grace_ms; } steps[] = {
		{ SIGINT, CHILD_INT_GRACE_MS },
		{ SIGTERM, CHILD_TERM_GRACE_MS },
		{ SIGKILL, CHILD_TERM_GRACE_MS },
	};

	if (!ch->pid)
		return EXIT_OK;
	if (!stop) {
		child_reap(ch, -1);
		return child_exit_status(ch);
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
		if (wait_tree(ch, 0))
			break;
		ch->ended |= !ch->reaped;
		ch->sent = steps[i].sig;
		signal_tree(ch, steps[i].sig);
		if (wait_after(ch, steps[i].sig, steps[i].grace_ms))
			break;
	}
	/* SIGKILL cannot be refused: this only waits for the kernel. */
	child_reap(ch, -1);
	return child_exit_status(ch);
}
