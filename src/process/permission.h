/* Why the kernel refused to let us trace a process, said as the next step
 * to take.  A refused ptrace says only EPERM; what blocked it is read from
 * /proc (ours and the target's status, Yama's sysctl, our user namespace)
 * and told apart here, so that root is not told to run as root. */
#ifndef PYSTROBE_PERMISSION_H
#define PYSTROBE_PERMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ptrace_facts {
	bool root;		/* our effective uid is 0 */
	uint64_t our_caps;	/* our effective capabilities (CapEff) */
	int yama;		/* kernel.yama.ptrace_scope, -1 without Yama */
	int seccomp;		/* our Seccomp: mode, 0 none */
	pid_t tracer;		/* the target's TracerPid, 0 none */
	bool in_userns;		/* our uid 0 is not the host's (a user namespace) */
};

void ptrace_facts_read(pid_t pid, struct ptrace_facts *f);

/* The one line for EPERM on pid, "permission denied: ..." into err. */
void permission_explain(pid_t pid, const struct ptrace_facts *f, char *err, size_t errlen);

#endif
