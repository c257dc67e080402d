#include "process/proc.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int proc_check(pid_t pid)
{
	char path[64];
	struct stat st;

	if (pid <= 0)
		return status_fail(EXIT_NO_PROCESS);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (stat(path, &st) != 0)
		return status_fail(EXIT_NO_PROCESS);
	/* A thread id also has a /proc entry; only a thread group leader is a process. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)pid);
	if (stat(path, &st) != 0)
		return status_fail(EXIT_NO_PROCESS);
	return 0;
}

/* One line of /proc/PID/maps: "start-end perms offset dev inode   path". */
static int parse_map_line(char *line, struct proc_map *m)
{
	int pathpos = 0;
	char perms[8];

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
		   &m->start, &m->end, perms, &m->offset, &pathpos) < 4)
		return -1;
	memcpy(m->perms, perms, 4);
	m->perms[4] = 0;
	m->path = xstrdup(pathpos ? line + pathpos : "");
	return 0;
}

int proc_maps_read(pid_t pid, struct proc_maps *maps)
{
	char path[64], *text;

	maps->v = NULL;
	maps->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = read_file(path, NULL);
	if (!text && (errno == EACCES || errno == EPERM))
		return status_fail(EXIT_PERMISSION);
	if (!text)
		return status_fail(EXIT_NO_PROCESS);
	proc_maps_parse(text, maps);
	return 0;
}

void proc_maps_parse(char *text, struct proc_maps *maps)
{
	char *line, *save = NULL;
	size_t cap = 0;

	maps->v = NULL;
	maps->n = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct proc_map m;

		if (parse_map_line(line, &m) != 0)
			continue;
		ALLOC_GROW(maps->v, maps->n + 1, cap);
		maps->v[maps->n++] = m;
	}
	free(text);
}

void proc_maps_free(struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->v[i].path);
	free(maps->v);
	maps->v = NULL;
	maps->n = 0;
}

char **proc_cmdline(pid_t pid, int *argcp)
{
	char path[64], *text, **argv;
	size_t len, i;
	int argc = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	text = read_file(path, &len);
	if (!text || len == 0) {
		/* Zombies and kernel threads have no command line. */
		free(text);
		return NULL;
	}
	for (i = 0; i < len; i++)
		if (text[i] == 0)
			argc++;
	if (len && text[len - 1] != 0)
		argc++;
	argv = xcalloc(argc + 2, sizeof(*argv));
	argv[0] = text;		/* argv[0] owns the whole buffer */
	argc = 0;
	for (i = 0; i < len; i += strlen(text + i) + 1)
		argv[argc++] = text + i;
	argv[argc] = NULL;
	if (argcp)
		*argcp = argc;
	return argv;
}

void proc_cmdline_free(char **argv)
{
	if (!argv)
		return;
	free(argv[0]);
	free(argv);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

int proc_tasks(pid_t pid, pid_t **tidsp)
{
	return proc_tasks_under("/proc", pid, tidsp);
}

int proc_tasks_under(const char *proc, pid_t pid, pid_t **tidsp)
{
	char path[PATH_MAX];
	struct dirent *de;
	pid_t *tids = NULL;
	size_t cap = 0;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%d/task", proc, (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		ALLOC_GROW(tids, n + 1, cap);
		tids[n++] = (pid_t)tid;
	}
	closedir(d);
	if (n > 1)
		qsort(tids, n, sizeof(*tids), cmp_pid);
	*tidsp = tids;
	return n;
}

/* /proc/PID/task/TID/stat into buf: what follows the command name (a
 * pointer to the state letter), or NULL when unreadable. */
static const char *task_stat_fields(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[96], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name is in parentheses and may itself hold ") ": the
	 * state is after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return NULL;
	return p + 2;
}

/* The state, and (eighth field after it) the kernel's task flags. */
static int task_stat(pid_t pid, pid_t tid, char *state, unsigned long *flags)
{
	char buf[1024];
	const char *p = task_stat_fields(pid, tid, buf, sizeof(buf));

	if (!p)
		return -1;
	*state = p[0];
	*flags = 0;
	sscanf(p + 1, " %*d %*d %*d %*d %*d %lu", flags);
	return 0;
}

int proc_task_cpu(pid_t pid, pid_t tid, char *state, uint64_t *cpu_ns)
{
	char buf[1024];
	const char *p = task_stat_fields(pid, tid, buf, sizeof(buf));
	unsigned long long ut, st;

	if (!p || sscanf(p + 1, " %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		return -1;
	*state = p[0];
	*cpu_ns = (uint64_t)((ut + st) * (1e9 / sysconf(_SC_CLK_TCK)));
	return 0;
}

int proc_syscall_parse(const char *text, struct task_entry *e)
{
	unsigned long long a[8];
	int n;

	memset(e, 0, sizeof(*e));
	/* "NR A1 .. A6 SP PC" in a call, "-1 SP PC" in the kernel outside
	 * one (a fault), "running" on a CPU. */
	n = sscanf(text, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &e->nr, &a[0], &a[1],
		   &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]);
	if (n == 3 && e->nr == -1) {
		e->sp = a[0];
		e->pc = a[1];
		return 0;
	}
	if (n != 9 || e->nr < 0)
		return -1;
	for (int i = 0; i < 6; i++)
		e->args[i] = a[i];
	e->sp = a[6];
	e->pc = a[7];
	return 0;
}

int proc_task_open(pid_t pid, pid_t tid, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int proc_task_entry(pid_t pid, pid_t tid, struct task_entry *e)
{
	char buf[512];
	ssize_t n;
	int fd = proc_task_open(pid, tid, "syscall");

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return proc_syscall_parse(buf, e);
}

int proc_task_syscall(pid_t pid, pid_t tid, long *nr, uint64_t args[6])
{
	struct task_entry e;

	if (proc_task_entry(pid, tid, &e) < 0 || e.nr < 0)
		return -1;
	*nr = e.nr;
	memcpy(args, e.args, sizeof(e.args));
	return 0;
}

int proc_schedstat_read(int fd, uint64_t *run_ns, uint64_t *runs)
{
	unsigned long long rt, delay, pc;
	char buf[128];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu %llu", &rt, &delay, &pc) != 3)
		return -1;
	*run_ns = rt;
	*runs = pc;
	return 0;
}

char proc_task_state(pid_t pid, pid_t tid)
{
	unsigned long flags;
	char state;

	return task_stat(pid, tid, &state, &flags) == 0 ? state : 0;
}

/* PF_EXITING from the kernel's sched.h: set once a task starts to exit. */
#define PF_EXITING 0x4

bool proc_task_exiting(pid_t pid, pid_t tid)
{
	unsigned long flags;
	char state;

	if (task_stat(pid, tid, &state, &flags) != 0)
		return true;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING);
}

bool proc_exiting(pid_t pid)
{
	return proc_task_exiting(pid, pid);
}

char *proc_root_path(pid_t pid, const char *path)
{
	return xasprintf("/proc/%d/root%s%s", (int)pid, path[0] == '/' ? "" : "/", path);
}

