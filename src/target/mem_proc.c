/* Memory of a live process through process_vm_readv(2): one system call per
 * read, no ptrace stop needed, and no writes possible. */
#include "target/mem.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/uio.h>

/* iovecs per system call; the kernel takes up to IOV_MAX (1024). */
#define BATCH_MAX 256

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

/* A batch in one process_vm_readv: the kernel copies iovec by iovec and
 * stops at the first it cannot copy whole, so the bytes it returns say how
 * many blocks arrived.  Blocks that follow one another in the target (the
 * pages of a data stack, read into separate cache slots) go as one remote
 * iovec: the kernel looks up the mapping and pins pages once per remote
 * iovec, and that setup was a large part of a round. */
static int proc_read_batch(struct mem *m, const struct mem_block *b, int n)
{
	struct mem_proc *p = (struct mem_proc *)m;
	struct iovec local[BATCH_MAX], remote[BATCH_MAX];
	int done = 0;

	while (done < n) {
		int k = n - done < BATCH_MAX ? n - done : BATCH_MAX, got = 0, r = 0;
		ssize_t bytes;

		for (int i = 0; i < k; i++) {
			const struct mem_block *bi = &b[done + i];

			local[i] = (struct iovec){ bi->buf, bi->len };
			if (r && (uint64_t)(uintptr_t)remote[r - 1].iov_base + remote[r - 1].iov_len == bi->addr)
				remote[r - 1].iov_len += bi->len;
			else
				remote[r++] = (struct iovec){ (void *)(uintptr_t)bi->addr, bi->len };
		}
		bytes = process_vm_readv(p->pid, local, k, remote, r, 0);
		if (bytes < 0) {
			if (done == 0 && (errno == ESRCH || errno == EPERM))
				return -errno;
			return done;
		}
		while (got < k && (size_t)bytes >= b[done + got].len)
			bytes -= b[done + got++].len;
		done += got;
		if (got < k)
			return done;
	}
	return done;
}

static void proc_close(struct mem *m)
{
	free(m);
}

struct mem *mem_proc_open(pid_t pid)
{
	struct mem_proc *p = xcalloc(1, sizeof(*p));

	p->mem.read = proc_read;
	p->mem.read_batch = proc_read_batch;
	p->mem.close = proc_close;
	p->pid = pid;
	return &p->mem;
}
