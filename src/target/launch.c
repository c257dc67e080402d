/* Starting the command `record` or `top` profiles. */
#include "target/launch.h"
#include "python/locate.h"
#include "target/mem.h"
#include "python/pystack.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

static void stdio_to_null(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		_exit(126);
	for (int i = 0; i < 3; i++)
		if (dup2(fd, i) < 0)
			_exit(126);
	if (fd > 2)
		close(fd);
}

pid_t launch(char **argv, bool null_stdio, int *go_fd, int *err_fd)
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
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		e = drop_to_sudo_user();
		if (!e) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			if (null_stdio)
				stdio_to_null();
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

bool python_ready(pid_t pid)
{
	struct mem *m = mem_proc_open(pid);
	struct pyinterp pi;
	struct py_tstate ts[1];
	uint64_t gil;
	char err[256];
	bool ready = false;

	if (locate_python(pid, m, &pi, err, sizeof(err)) == 0) {
		ready = pystack_tstates(m, &pi, ts, 1, &gil, err, sizeof(err)) > 0;
		pyinterp_free(&pi);
	}
	mem_close(m);
	return ready;
}

int wait_for_exec(pid_t child, char **command, const char *who, int err_fd, int *status_out)
{
	int status, e;

	/* exec failed: the child wrote its errno before exiting.  On
	 * success the pipe closed with exec (close-on-exec): EOF. */
	if (read(err_fd, &e, sizeof(e)) == sizeof(e)) {
		waitpid(child, &status, 0);
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

int wait_for_python(pid_t child, char **command, const char *who, int err_fd,
		    volatile sig_atomic_t *stop, int *status_out)
{
	struct timespec pause = { 0, 1000000 };
	int status;

	if (wait_for_exec(child, command, who, err_fd, status_out) < 0)
		return -1;
	for (;;) {
		if (waitpid(child, &status, WNOHANG) == child) {
			errorf("%s: '%s' exited before Python started (status %d)",
			       who, command[0], exit_status_of(status));
			*status_out = exit_status_of(status);
			return -1;
		}
		if (*stop) {
			*status_out = EXIT_ERROR;
			return -1;
		}
		if (python_ready(child))
			return 0;
		nanosleep(&pause, NULL);
	}
}
