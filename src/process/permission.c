/* See permission.h.  The checks follow the kernel's own order of refusal
 * (ptrace_attach, __ptrace_may_access, Yama, commoncap), most specific
 * first; what is left is a security module's, which /proc cannot show. */
#include "process/permission.h"
#include "process/proc.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19

/* The number after "\nKEY" in a status file's text, in base. */
static bool status_field(const char *text, const char *key, int base, uint64_t *v)
{
	const char *p = text ? strstr(text, key) : NULL;

	if (!p)
		return false;
	*v = strtoull(p + strlen(key), NULL, base);
	return true;
}

static int read_int(const char *path, int dflt)
{
	char *text = read_file(path, NULL);
	int v = text ? atoi(text) : dflt;

	free(text);
	return v;
}

/* A uid_map other than the identity of all 2^32 ids: a user namespace. */
static bool in_user_namespace(void)
{
	char *text = read_file("/proc/self/uid_map", NULL);
	unsigned long inside = 1, outside = 1, count = 0;
	bool ns = text && (sscanf(text, "%lu %lu %lu", &inside, &outside, &count) != 3 ||
			   inside != 0 || outside != 0 || count != 4294967295ul);

	free(text);
	return ns;
}

void ptrace_facts_read(pid_t pid, struct ptrace_facts *f)
{
	char path[64], *self = read_file("/proc/self/status", NULL), *target;
	uint64_t v = 0;

	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	target = read_file(path, NULL);
	f->root = geteuid() == 0;
	status_field(self, "\nCapEff:", 16, &f->our_caps);
	if (status_field(self, "\nSeccomp:", 10, &v))
		f->seccomp = (int)v;
	if (status_field(target, "\nTracerPid:", 10, &v))
		f->tracer = (pid_t)v;
	f->yama = read_int("/proc/sys/kernel/yama/ptrace_scope", -1);
	f->in_userns = in_user_namespace();
	free(self);
	free(target);
}

/* Not root, or root without CAP_SYS_PTRACE: what it takes to be let. */
static void explain_unprivileged(pid_t pid, const struct ptrace_facts *f, char *err,
				 size_t errlen)
{
	int s = f->yama;

	/* Root without the capability: a container that was not given it
	 * (Docker, Kubernetes and podman drop it by default). */
	if (f->root) {
		snprintf(err, errlen,
			 "permission denied: cannot trace process %d (pystrobe runs as root without "
			 "CAP_SYS_PTRACE, as in a container: start it with --cap-add SYS_PTRACE, or "
			 "in Kubernetes securityContext.capabilities.add: [SYS_PTRACE]%s; or run pystrobe "
			 "on the host against the host's pid)", (int)pid,
			 s > 0 ? ", and kernel.yama.ptrace_scope=0 for processes it did not start" : "");
		return;
	}
	snprintf(err, errlen,
		 "permission denied: cannot trace process %d (%s; run as root or with CAP_SYS_PTRACE; "
		 "in a container add --cap-add SYS_PTRACE)", (int)pid,
		 s > 0 ? "kernel.yama.ptrace_scope is set: sysctl kernel.yama.ptrace_scope=0 allows "
			 "tracing your own processes" :
			 "the process belongs to another user or is not dumpable");
}

/* Root with CAP_SYS_PTRACE and still refused: which of the rest it is.
 * Capabilities the target has and we lack do not block (CAP_SYS_PTRACE
 * overrides that rule), so they are not blamed. */
static void explain_root(pid_t pid, const struct ptrace_facts *f, char *err, size_t errlen)
{
	if (f->yama == 3)
		snprintf(err, errlen, "permission denied: cannot trace process %d: "
			 "kernel.yama.ptrace_scope is 3, which forbids all tracing, root's too, "
			 "until the next boot", (int)pid);
	else if (f->seccomp)
		snprintf(err, errlen, "permission denied: cannot trace process %d: pystrobe runs "
			 "under a seccomp filter that refuses ptrace (Docker's default profile on "
			 "older kernels): run it with --security-opt seccomp=unconfined, or on the "
			 "host", (int)pid);
	else if (f->in_userns)
		snprintf(err, errlen, "permission denied: cannot trace process %d: pystrobe is "
			 "root only inside a user namespace (a rootless container) and the process "
			 "is outside it: run pystrobe as the process's own user, or on the host",
			 (int)pid);
	else if (pid == 1)
		snprintf(err, errlen, "permission denied: cannot trace process 1, the system's "
			 "init, which this system protects even from root with CAP_SYS_PTRACE (a "
			 "security module or sandbox rule; dmesg names it): dump the Python "
			 "program's own pid");
	else
		snprintf(err, errlen, "permission denied: cannot trace process %d although "
			 "pystrobe runs as root with CAP_SYS_PTRACE: a security module (AppArmor, "
			 "SELinux, Landlock) refused it; its audit log (dmesg) names the rule",
			 (int)pid);
}

void permission_explain(pid_t pid, const struct ptrace_facts *f, char *err, size_t errlen)
{
	/* One tracer at a time, whoever asks. */
	if (f->tracer)
		snprintf(err, errlen, "permission denied: cannot trace process %d: process %d "
			 "(a debugger, strace, another pystrobe) traces it already: detach that "
			 "first", (int)pid, (int)f->tracer);
	else if (!f->root || !(f->our_caps & (1ull << CAP_SYS_PTRACE_BIT)))
		explain_unprivileged(pid, f, err, errlen);
	else
		explain_root(pid, f, err, errlen);
}

void permission_message(pid_t pid, char *err, size_t errlen)
{
	struct ptrace_facts f;

	ptrace_facts_read(pid, &f);
	permission_explain(pid, &f, err, errlen);
}
