/* Memory of a live process through process_vm_readv(2): one system call per
 * read, no ptrace stop needed, and no writes possible. */
#include "mem.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/uio.h>

struct mem_proc {
	struct mem mem;
	pid_t pid;
};

static int proc_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_proc *p = (struct mem_proc *)m;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (len == 0)
		return 0;
	n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		return -EFAULT;	/* partial read: the range crosses an unmapped page */
	if (errno == ESRCH)
		return -ESRCH;
	if (errno == EPERM)
		return -EPERM;
	/* EFAULT, EINVAL (bad address) and friends are all "not readable". */
	return -EFAULT;
}

static void proc_close(struct mem *m)
{
	free(m);
}

struct mem *mem_proc_open(pid_t pid)
{
	struct mem_proc *p = xcalloc(1, sizeof(*p));

	p->mem.read = proc_read;
	p->mem.close = proc_close;
	p->pid = pid;
	return &p->mem;
}
