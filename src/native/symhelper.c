/* The unprivileged symbolization helper; see symhelper.h.
 *
 * One SOCK_SEQPACKET socket pair, one message per packet, in lock step:
 * pystrobe sends LOOKUP or REFRESH and reads until the answer comes,
 * serving the helper's OPEN requests on the way (each answered by one
 * packet carrying the descriptor, or none).  Every packet is a struct
 * sh_msg followed by up to three strings whose lengths it gives; what
 * the helper sends is checked, as it runs hostile parsers.
 */
#include "native/symhelper.h"
#include "native/symbolize.h"
#include "process/proc.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The longest the helper may take over one answer, files it asks for
 * included: loading the DWARF of a large library is a second or two. */
#define HELPER_TIMEOUT_MS 10000
#define SH_STR_MAX 4000
#define SH_MSG_MAX (sizeof(struct sh_msg) + 3 * SH_STR_MAX)
/* Descriptors the helper may hold: one or two per object mapped. */
#define HELPER_NOFILE 4096
#define NOBODY_ID 65534

enum sh_type {
	SH_HELLO = 1,	/* helper -> us: running, ids in pc/offset */
	SH_LOOKUP,	/* us -> helper: pc, flags & SHF_EXACT */
	SH_ANSWER,	/* helper -> us: offset, line, strings */
	SH_REFRESH,	/* us -> helper */
	SH_REFRESHED,	/* helper -> us: flags & SHF_CHANGED */
	SH_OPEN,	/* helper -> us: the path as string 0 */
	SH_OPENED,	/* us -> helper: the descriptor, if any, attached */
};

enum {
	SHF_EXACT = 1,
	SHF_CHANGED = 2,
};

struct sh_msg {
	uint32_t type, flags;
	uint64_t pc, offset;
	int32_t line;
	uint16_t len[3];	/* function, path, file (OPEN: the path) */
};

struct symhelper {
	pid_t pid, target;
	int sock;
	int root_fd, debug_fd;	/* O_PATH: the target's root, our /usr/lib/debug */
	char prefix_root[64], prefix_map_files[64], path_maps[64], path_mem[64];
};

/* glibc before 2.32 (pystrobe-static's, Makefile.am) names no system call
 * newer than itself; the kernel's headers do. */
#ifndef SYS_openat2
#define SYS_openat2 __NR_openat2
#endif

/* --- opening files ------------------------------------------------------ */

static int xopenat2(int dirfd, const char *path, uint64_t resolve)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = resolve,
	};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Only regular files (and /proc's): O_NONBLOCK and this keep a FIFO
 * planted where a library should be from holding us in open() or read(). */
static int regular_only(int fd)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int symbolize_open_file(const char *path)
{
	return regular_only(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
}

static bool starts(const char *s, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

/* Does the target map an object whose path is path (dirlen < 0), or
 * whose directory is path's first dirlen bytes?  The kernel wrote these
 * names, not the target. */
static bool is_mapped(const struct symhelper *h, const char *path, int dirlen)
{
	struct proc_maps pm;
	bool found = false;

	if (path[0] != '/' || proc_maps_read(h->target, &pm) < 0)
		return false;
	for (size_t i = 0; i < pm.n && !found; i++) {
		const char *p = pm.v[i].path, *slash = strrchr(p, '/');

		if (dirlen < 0)
			found = !strcmp(p, path);
		else
			found = slash && slash - p == dirlen && !strncmp(p, path, dirlen);
	}
	proc_maps_free(&pm);
	return found;
}

/* Paths in our root that the symbolizer tries for a chrooted process,
 * whose maps name its files in our root: the objects themselves, and
 * debug files beside one (NAME or .debug/NAME in its directory, never
 * through a symbolic link: the target's root may be writable by it). */
static int open_in_our_root(const struct symhelper *h, const char *path)
{
	const char *slash = strrchr(path, '/'), *rest;
	int dirlen, dir, fd;
	char *dirpath;

	if (is_mapped(h, path, -1))
		return symbolize_open_file(path);
	if (!slash || slash == path)
		return -1;
	dirlen = (int)(slash - path);
	if (dirlen > 7 && !strncmp(slash - 7, "/.debug", 7))
		dirlen -= 7;
	rest = path + dirlen + 1;
	if (!is_mapped(h, path, dirlen))
		return -1;
	dirpath = xasprintf("%.*s", dirlen, path);
	dir = open(dirpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dirpath);
	if (dir < 0)
		return -1;
	fd = regular_only(xopenat2(dir, rest, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						RESOLVE_NO_MAGICLINKS));
	close(dir);
	return fd;
}

/* What the helper may have opened for it, as root: the process's own
 * files in /proc, files of its root resolved inside that root (no "..",
 * absolute symlink or magic link leads out), debug files beneath our
 * /usr/lib/debug, objects the maps name and debug files beside them.
 * Nothing else. */
static int broker_open(const struct symhelper *h, const char *path)
{
	const char *rest;

	if (!strcmp(path, h->path_maps) || !strcmp(path, h->path_mem))
		return symbolize_open_file(path);
	if (starts(path, h->prefix_map_files, &rest))
		return strchr(rest, '/') ? -1 : symbolize_open_file(path);
	if (starts(path, h->prefix_root, &rest))
		return regular_only(xopenat2(h->root_fd, rest,
					     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
	if (starts(path, "/usr/lib/debug/", &rest))
		return h->debug_fd < 0 ? -1 :
		       regular_only(xopenat2(h->debug_fd, rest,
					     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS));
	return open_in_our_root(h, path);
}

/* --- messages ----------------------------------------------------------- */

static int send_msg(int sock, const struct sh_msg *m, const char *const str[3], int fd)
{
	char buf[SH_MSG_MAX];
	size_t len = sizeof(*m);
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(buf, m, sizeof(*m));
	for (int i = 0; i < 3; i++) {
		if (m->len[i])
			memcpy(buf + len, str[i], m->len[i]);
		len += m->len[i];
	}
	iov.iov_base = buf;
	iov.iov_len = len;
	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* One packet into buf (SH_MSG_MAX + 1 bytes, NUL-terminated strings
 * after the header, checked); *fd gets a descriptor that came with it or
 * -1.  The length, or -1. */
static ssize_t recv_msg(int sock, char *buf, int *fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, SH_MSG_MAX + 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	struct sh_msg m;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

	*fd = -1;
	c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n < (ssize_t)sizeof(m) || n > (ssize_t)SH_MSG_MAX || (mh.msg_flags & MSG_TRUNC))
		goto bad;
	memcpy(&m, buf, sizeof(m));
	if ((size_t)m.len[0] + m.len[1] + m.len[2] != (size_t)n - sizeof(m))
		goto bad;
	return n;
bad:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -1;
}

/* String i of a received packet, as a new string (NULL when empty). */
static char *msg_str(const char *buf, int i)
{
	struct sh_msg m;
	size_t at = sizeof(m);

	memcpy(&m, buf, sizeof(m));
	for (int k = 0; k < i; k++)
		at += m.len[k];
	if (!m.len[i])
		return NULL;
	/* Names are text: a NUL inside one ends it. */
	return xasprintf("%.*s", (int)m.len[i], buf + at);
}

/* --- the helper's side -------------------------------------------------- */

static int child_open(void *arg, const char *path)
{
	int sock = *(int *)arg, fd;
	struct sh_msg m = { .type = SH_OPEN };
	const char *str[3] = { path, NULL, NULL };
	char buf[SH_MSG_MAX + 1];
	ssize_t n;

	if (strlen(path) > SH_STR_MAX)
		return -1;
	m.len[0] = strlen(path);
	if (send_msg(sock, &m, str, -1) < 0)
		_exit(0);
	n = recv_msg(sock, buf, &fd);
	if (n < 0)
		_exit(0);
	memcpy(&m, buf, sizeof(m));
	if (m.type != SH_OPENED) {
		if (fd >= 0)
			close(fd);
		_exit(0);
	}
	return fd;
}

static uint16_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > SH_STR_MAX ? SH_STR_MAX : n;
}

static void serve(int sock, struct symbolizer *s)
{
	char buf[SH_MSG_MAX + 1];

	for (;;) {
		struct sh_msg m, r = { 0 };
		const struct native_sym *ns;
		const char *str[3] = { NULL, NULL, NULL };
		int fd;

		if (recv_msg(sock, buf, &fd) < 0)
			break;
		if (fd >= 0)
			close(fd);
		memcpy(&m, buf, sizeof(m));
		if (m.type == SH_REFRESH) {
			r.type = SH_REFRESHED;
			r.flags = symbolizer_refresh(s) ? SHF_CHANGED : 0;
		} else if (m.type == SH_LOOKUP) {
			ns = symbolize(s, m.pc, m.flags & SHF_EXACT);
			r.type = SH_ANSWER;
			r.offset = ns->offset;
			r.line = ns->line;
			str[0] = ns->function;
			str[1] = ns->path;
			str[2] = ns->file;
			for (int i = 0; i < 3; i++)
				r.len[i] = str_len(str[i]);
		} else {
			break;
		}
		if (send_msg(sock, &r, str, -1) < 0)
			break;
	}
}

static void helper_ids(uid_t *uid, gid_t *gid)
{
	const char *env = getenv("PYSTROBE_HELPER_UID");
	struct passwd *pw;

	if (env && *env) {
		*uid = *gid = (uid_t)strtoul(env, NULL, 10);
		return;
	}
	pw = getpwnam("nobody");
	*uid = pw ? pw->pw_uid : NOBODY_ID;
	*gid = pw ? pw->pw_gid : NOBODY_ID;
}

static void set_limit(int resource, rlim_t v)
{
	struct rlimit rl = { v, v };

	setrlimit(resource, &rl);
}

/* Everything a parser that may be taken over by a crafted file should not
 * have: our ids, capabilities, other descriptors, a terminal, the right
 * to gain privileges, write files or start processes. */
static int drop(int sock, uid_t uid, gid_t gid)
{
	uid_t r, e, s;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
		return -1;
	if (dup2(sock, 3) < 0 || close_from(4) != 0)
		return -1;
	if (chdir("/") != 0 || setsid() < 0)
		return -1;
	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		return -1;
	if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0)
		return -1;
	set_limit(RLIMIT_NPROC, 0);
	set_limit(RLIMIT_FSIZE, 0);
	set_limit(RLIMIT_CORE, 0);
	set_limit(RLIMIT_NOFILE, HELPER_NOFILE);
	return 0;
}

static void child_main(int sock, pid_t parent, pid_t pid, unsigned flags)
{
	struct sh_msg hello = { .type = SH_HELLO };
	struct symbolize_io io = { child_open, NULL };
	struct symbolizer *s;
	int fd = 3;
	uid_t uid;
	gid_t gid;

	/* Never outlive pystrobe, even if it died before this line. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	helper_ids(&uid, &gid);
	if (uid == 0 || drop(sock, uid, gid) < 0)
		_exit(1);
	/* Reading the maps asks for them: pystrobe serves that while it
	 * waits for the hello. */
	io.arg = &fd;
	s = symbolizer_new_io(pid, flags, &io);
	hello.pc = getuid();
	hello.offset = getgid();
	if (send_msg(fd, &hello, NULL, -1) < 0)
		_exit(1);
	serve(fd, s);
	_exit(0);
}

int symhelper_main(int argc, char **argv)
{
	if (argc != 6)
		return EXIT_USAGE;
	child_main(atoi(argv[2]), (pid_t)atoi(argv[3]), (pid_t)atoi(argv[4]),
		   (unsigned)strtoul(argv[5], NULL, 10));
	return EXIT_ERROR;
}

/* --- pystrobe's side ---------------------------------------------------- */

/* The helper is this binary run again (util.h's spawn_self(): a fork()
 * that never execs would keep pystrobe's memory copy-on-write for as long
 * as the helper lives, and every first write to a page after it cost a
 * fault and a TLB flush on every CPU, under a pause as likely as not).
 * Its pid, or -1: then it is forked. */
static pid_t spawn_helper(int sock, pid_t parent, pid_t pid, unsigned flags)
{
	char sparent[16], spid[16], sflags[16], fdarg[] = "%d";
	char *argv[] = { "pystrobe", SYMHELPER_ARG, fdarg, sparent, spid, sflags, NULL };

	snprintf(sparent, sizeof(sparent), "%d", (int)parent);
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(sflags, sizeof(sflags), "%u", flags);
	return spawn_self(argv, sock);
}

static int64_t now_ms(void)
{
	return (int64_t)(mono_ns() / 1000000);
}

/* Wait for the reply of type want to what was just sent, opening files
 * for the helper meanwhile; into buf.  Its length, or -1. */
static ssize_t await(struct symhelper *h, uint32_t want, char *buf, char *err, size_t errlen)
{
	int64_t deadline = now_ms() + HELPER_TIMEOUT_MS;

	for (;;) {
		struct pollfd p = { h->sock, POLLIN, 0 };
		int64_t left = deadline - now_ms();
		struct sh_msg m;
		ssize_t n;
		char *path;
		int fd, rc;

		rc = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			snprintf(err, errlen, "no answer in %d s", HELPER_TIMEOUT_MS / 1000);
			return -1;
		}
		n = recv_msg(h->sock, buf, &fd);
		if (fd >= 0)
			close(fd);	/* the helper has nothing to hand us */
		if (n < 0) {
			snprintf(err, errlen, "it exited or sent garbage");
			return -1;
		}
		memcpy(&m, buf, sizeof(m));
		if (m.type == want)
			return n;
		if (m.type != SH_OPEN) {
			snprintf(err, errlen, "unexpected message %u", m.type);
			return -1;
		}
		path = msg_str(buf, 0);
		fd = path ? broker_open(h, path) : -1;
		free(path);
		m = (struct sh_msg){ .type = SH_OPENED };
		rc = send_msg(h->sock, &m, NULL, fd);
		if (fd >= 0)
			close(fd);
		if (rc < 0) {
			snprintf(err, errlen, "it exited");
			return -1;
		}
	}
}

bool symhelper_wanted(pid_t pid)
{
	const char *env = getenv("PYSTROBE_SYMBOLIZE_HELPER");
	char path[64];
	struct stat theirs, ours;

	if (geteuid() != 0 || (env && !strcmp(env, "never")))
		return false;
	if (env && !strcmp(env, "always"))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	/* Unreadable: do not guess that it is ours. */
	if (stat(path, &theirs) != 0 || stat("/proc/self/root", &ours) != 0)
		return true;
	return theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino;
}

static void kill_helper(struct symhelper *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		/* ECHILD if a wait for any child (launch.c) reaped it. */
		while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	h->pid = 0;
}

void symhelper_stop(struct symhelper *h)
{
	if (!h)
		return;
	kill_helper(h);
	close(h->sock);
	if (h->root_fd >= 0)
		close(h->root_fd);
	if (h->debug_fd >= 0)
		close(h->debug_fd);
	free(h);
}

pid_t symhelper_pid(const struct symhelper *h)
{
	return h->pid;
}

struct symhelper *symhelper_start(pid_t pid, unsigned flags, char *err, size_t errlen)
{
	struct symhelper *h = xcalloc(1, sizeof(*h));
	char buf[SH_MSG_MAX + 1];
	int sv[2];
	pid_t parent = getpid();
	struct sh_msg hello;

	h->target = pid;
	snprintf(h->prefix_root, sizeof(h->prefix_root), "/proc/%d/root/", (int)pid);
	snprintf(h->prefix_map_files, sizeof(h->prefix_map_files), "/proc/%d/map_files/", (int)pid);
	snprintf(h->path_maps, sizeof(h->path_maps), "/proc/%d/maps", (int)pid);
	snprintf(h->path_mem, sizeof(h->path_mem), "/proc/%d/mem", (int)pid);
	h->root_fd = open(h->prefix_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	h->debug_fd = open("/usr/lib/debug", O_PATH | O_DIRECTORY | O_CLOEXEC);
	h->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	h->pid = spawn_helper(sv[1], parent, pid, flags);
	if (h->pid < 0) {
		h->pid = fork();
		if (h->pid == 0) {
			close(sv[0]);
			child_main(sv[1], parent, pid, flags);
		}
	}
	close(sv[1]);
	h->sock = sv[0];
	if (h->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (await(h, SH_HELLO, buf, err, errlen) < 0)
		goto fail;
	memcpy(&hello, buf, sizeof(hello));
	if (hello.pc == 0 || hello.offset == 0) {
		snprintf(err, errlen, "it kept root's ids");
		goto fail;
	}
	if (getenv("PYSTROBE_DEBUG_HELPER"))
		fprintf(stderr, "pystrobe: symbolization helper %d runs as uid %llu gid %llu\n",
			(int)h->pid, (unsigned long long)hello.pc, (unsigned long long)hello.offset);
	return h;
fail:
	symhelper_stop(h);
	return NULL;
}

/* Send m, wait for the reply of type want into buf, its header into m. */
static int request(struct symhelper *h, struct sh_msg *m, uint32_t want, char *buf, char *err,
		   size_t errlen)
{
	if (send_msg(h->sock, m, NULL, -1) < 0) {
		snprintf(err, errlen, "it exited");
		return -1;
	}
	if (await(h, want, buf, err, errlen) < 0)
		return -1;
	memcpy(m, buf, sizeof(*m));
	return 0;
}

int symhelper_lookup(struct symhelper *h, uint64_t pc, bool exact, struct symhelper_answer *a,
		     char *err, size_t errlen)
{
	struct sh_msg m = { .type = SH_LOOKUP, .pc = pc, .flags = exact ? SHF_EXACT : 0 };
	char buf[SH_MSG_MAX + 1];

	memset(a, 0, sizeof(*a));
	if (request(h, &m, SH_ANSWER, buf, err, errlen) < 0)
		return -1;
	a->function = msg_str(buf, 0);
	a->path = msg_str(buf, 1);
	a->file = msg_str(buf, 2);
	a->offset = m.offset;
	a->line = m.line > 0 ? m.line : 0;
	return 0;
}

bool symhelper_alive(struct symhelper *h)
{
	pid_t r;

	if (h->pid <= 0)
		return false;
	r = waitpid(h->pid, NULL, WNOHANG | __WALL);
	if (r == 0 || (r < 0 && errno == EINTR))
		return true;
	h->pid = 0;	/* reaped, here or by a wait for any child */
	return false;
}

int symhelper_refresh(struct symhelper *h, char *err, size_t errlen)
{
	struct sh_msg m = { .type = SH_REFRESH };
	char buf[SH_MSG_MAX + 1];

	if (request(h, &m, SH_REFRESHED, buf, err, errlen) < 0)
		return -1;
	return !!(m.flags & SHF_CHANGED);
}
