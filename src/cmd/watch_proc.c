/* What watch reads of a process it watches (cmd/watch_int.h). */
#include "cmd/watch_int.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "util/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* RANK from the process's environment (as it was at exec), or -1. */
int watch_read_rank(pid_t pid)
{
	char path[64], *env;
	size_t len;
	int rank = -1;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = read_file(path, &len);
	for (size_t i = 0; env && i < len; i += strlen(env + i) + 1)
		if (!strncmp(env + i, "RANK=", 5)) {
			rank = atoi(env + i + 5);
			break;
		}
	free(env);
	return rank;
}

pid_t watch_read_ppid(pid_t pid)
{
	char path[64], *stat, *p;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = read_file(path, NULL);
	if (stat && (p = strrchr(stat, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	free(stat);
	return ppid;
}

char *watch_read_command(pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	int argc = 0;
	char **argv = proc_cmdline(pid, &argc);

	for (int i = 0; argv && i < argc; i++) {
		if (i)
			sb_putc(&sb, ' ');
		sb_add_printable(&sb, argv[i]);
	}
	proc_cmdline_free(argv);
	return sb_detach(&sb);
}

/* Programs that start the job's Python rather than run it: shells and
 * job launchers (by the name of the process or of its executable). */
static const char *const launchers[] = {
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "busybox",
	"srun", "mpirun", "mpiexec", "orterun", "prterun", "torchrun", "deepspeed",
	"accelerate", "env", "nohup", "timeout", "nice", "setsid", "taskset", "numactl",
	"stdbuf", "sudo", "su", "runuser", "make", "uv", "tini", "dumb-init", "flock",
	"xargs",
};

static bool is_launcher_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(launchers); i++)
		if (!strcmp(name, launchers[i]))
			return true;
	return false;
}

/* Whether pid may start the job's Python later: it has processes below
 * it, or it is a shell or a launcher.  *comm gets its name (to free). */
bool watch_is_launcher(pid_t pid, char **comm)
{
	struct proc_node *v = xcalloc(2, sizeof(*v));
	char path[64], exe[PATH_MAX], *nl;
	ssize_t n;
	bool yes = proctree_list(pid, v, 2) > 1;

	free(v);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	*comm = read_file(path, NULL);
	if (!*comm)
		*comm = xstrdup("?");
	if ((nl = strchr(*comm, '\n')))
		*nl = 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	nl = strrchr(exe, '/');
	return yes || is_launcher_name(*comm) || (nl && is_launcher_name(nl + 1));
}
