/* Reading another process's memory.
 *
 * Everything that looks at the target goes through this small interface, so
 * the interpreter walker can be fed synthetic or corrupt memory in tests and
 * in the fuzzer exactly as it is fed a live process.  Memory read through it
 * is hostile: callers bound every length and loop they derive from it.
 */
#ifndef PYSTROBE_MEM_H
#define PYSTROBE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One piece of a batch read. */
struct mem_block {
	uint64_t addr;
	void *buf;
	size_t len;
};

struct mem {
	/* Read exactly len bytes at addr into buf.  Returns 0, or a negative
	 * errno: -EFAULT for an unmapped address, -ESRCH when the process has
	 * gone, -EPERM when we may not read it. */
	int (*read)(struct mem *m, uint64_t addr, void *buf, size_t len);
	void (*close)(struct mem *m);
	/* Optional (NULL: not offered), and last so that a reader written
	 * as { read, close } still means what it says. */
	/* mem_read_batch() in fewer calls than one per block. */
	int (*read_batch)(struct mem *m, const struct mem_block *b, int n);
	/* See mem_peek(). */
	const void *(*peek)(struct mem *m, uint64_t addr, size_t len);
};

static inline int mem_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return m->read(m, addr, buf, len);
}

/* The len bytes at addr where the reader already holds them, without a
 * copy, or NULL (then mem_read() them).  The pointer is good until the
 * next call on m: use it at once. */
static inline const void *mem_peek(struct mem *m, uint64_t addr, size_t len)
{
	return m->peek ? m->peek(m, addr, len) : NULL;
}

/* Read the blocks in order, stopping at the first that cannot be read
 * whole.  Returns how many were read (n: all of them; fewer: block [ret]
 * failed, and the caller may go on after it), or -ESRCH / -EPERM when the
 * process cannot be read at all. */
int mem_read_batch(struct mem *m, const struct mem_block *b, int n);

int mem_read_u64(struct mem *m, uint64_t addr, uint64_t *out);
int mem_read_u32(struct mem *m, uint64_t addr, uint32_t *out);
int mem_read_i32(struct mem *m, uint64_t addr, int32_t *out);
int mem_read_u8(struct mem *m, uint64_t addr, uint8_t *out);
/* Read a NUL-terminated C string of at most max-1 bytes; always terminates. */
int mem_read_cstr(struct mem *m, uint64_t addr, char *buf, size_t max);

/* process_vm_readv on a live process. */
struct mem *mem_proc_open(pid_t pid);

/* A page cache in front of `under` (which it does not own).  Call
 * mem_cache_reset() before each sample: nothing is kept across it. */
struct mem *mem_cache_new(struct mem *under);
void mem_cache_reset(struct mem *m);
/* mem_cache_reset(), and the next sample fetches nothing ahead: what was
 * read since was no sample's (a look before the first pause). */
void mem_cache_forget(struct mem *m);
/* A range of the target a sample is about to read. */
struct mem_range {
	uint64_t addr;
	uint32_t len;
};
/* Fetch the ranges r[0..n) (sorted in place) in one batch, where their
 * pages are not held yet: reads about to need them would otherwise fetch
 * them a page a call.  Pages already held are left as they are (a read
 * outside what they hold fetches the rest, as ever); ranges over a page
 * long are skipped. */
void mem_cache_fetch(struct mem *m, struct mem_range *r, int n);
/* The pages read between these two calls, as ranges of what this sample
 * has used of each (of a page read from another reader meanwhile: all of
 * it), sorted, up to max of them and MEM_CACHE_LOG_MAX: what to hand
 * mem_cache_fetch() when the same reads are about to be made again. */
#define MEM_CACHE_LOG_MAX 64
void mem_cache_log_begin(struct mem *m);
int mem_cache_log_end(struct mem *m, struct mem_range *out, int max);

/* An in-memory fake: a set of regions, for tests and fuzzing. */
struct mem *mem_fake_new(void);
/* Copy len bytes to appear at addr in the fake (regions may not overlap). */
int mem_fake_add(struct mem *m, uint64_t addr, const void *data, size_t len);
/* Count of read calls served, so tests can check that walks are bounded. */
unsigned long mem_fake_reads(struct mem *m);

static inline void mem_close(struct mem *m)
{
	if (m)
		m->close(m);
}

#endif
