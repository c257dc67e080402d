/* Memory of a live process through process_vm_readv(2): one system call per
 * read, no ptrace stop needed, and no writes possible. */
#include "process/mem.h"
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

/* Joining two blocks into one remote iovec reads the bytes between them in
 * vain; at most this many, and only when the gap lies on the pages of the
 * two blocks themselves (the same page, or the last page of one and the
 * first of the next): those pages are readable whenever the blocks are, so
 * the gap never makes a batch fail that would have been read whole.
 * Copying a few kB costs less than the kernel's setup of an iovec. */
#define JOIN_GAP 2048u
#define PAGE_OF(a) ((a) & ~(uint64_t)4095)

/* Where the gaps' bytes go: read in vain, never looked at. */
static uint8_t gap_sink[JOIN_GAP];

/* Bytes between a remote iovec ending at end and a block [addr, addr +
 * len) that may join it, or -1 when it starts a remote iovec of its own.
 * Addresses come from the target: a range that wraps past 2^64 is never
 * joined. */
static long join_gap(uint64_t end, uint64_t addr, size_t len)
{
	if (end == 0 || addr < end || addr - end > JOIN_GAP || addr + len < addr)
		return -1;
	if (PAGE_OF(addr) > PAGE_OF(end - 1) + 4096)
		return -1;
	return (long)(addr - end);
}

struct batch {
	struct iovec local[2 * BATCH_MAX], remote[BATCH_MAX];
	size_t upto[BATCH_MAX];	/* where block i ends in the bytes read */
	int nl, nr;
};

/* The iovecs of k blocks: one local per block, one per gap read in vain,
 * and a remote one per run of blocks joined. */
static void build(struct batch *bt, const struct mem_block *b, int k)
{
	size_t total = 0;

	bt->nl = bt->nr = 0;
	for (int i = 0; i < k; i++) {
		struct iovec *last = bt->nr ? &bt->remote[bt->nr - 1] : NULL;
		uint64_t start = last ? (uint64_t)(uintptr_t)last->iov_base : 0;
		long gap = last && start + last->iov_len > start
				   ? join_gap(start + last->iov_len, b[i].addr, b[i].len) : -1;

		if (gap > 0)
			bt->local[bt->nl++] = (struct iovec){ gap_sink, (size_t)gap };
		if (gap >= 0) {
			last->iov_len += (size_t)gap + b[i].len;
			total += (size_t)gap;
		} else {
			bt->remote[bt->nr++] = (struct iovec){ (void *)(uintptr_t)b[i].addr, b[i].len };
		}
		bt->local[bt->nl++] = (struct iovec){ b[i].buf, b[i].len };
		total += b[i].len;
		bt->upto[i] = total;
	}
}

/* A batch in one process_vm_readv: the kernel copies iovec by iovec and
 * stops at the first byte it cannot copy, so the bytes it returns say how
 * many blocks arrived.  Blocks close together in the target (the pages of
 * a data stack, fields a few lines apart) go as one remote iovec: the
 * kernel looks up the mapping and pins pages once per remote iovec, and
 * that setup is most of a cheap round's cost. */
static int proc_read_batch(struct mem *m, const struct mem_block *b, int n)
{
	struct mem_proc *p = (struct mem_proc *)m;
	struct batch bt;
	int done = 0;

	while (done < n) {
		int k = n - done < BATCH_MAX ? n - done : BATCH_MAX, got = 0;
		ssize_t bytes;

		build(&bt, b + done, k);
		bytes = process_vm_readv(p->pid, bt.local, (unsigned long)bt.nl, bt.remote,
					 (unsigned long)bt.nr, 0);
		if (bytes < 0) {
			if (done == 0 && (errno == ESRCH || errno == EPERM))
				return -errno;
			return done;
		}
		while (got < k && (size_t)bytes >= bt.upto[got])
			got++;
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
