/* A fake address space for tests and the fuzzer: a handful of regions copied
 * in by the test, everything else unmapped. */
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct region {
	uint64_t addr;
	size_t len;
	uint8_t *data;
};

struct mem_fake {
	struct mem mem;
	struct region *regions;
	size_t n, alloc;
	unsigned long reads;
};

static int fake_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_fake *f = (struct mem_fake *)m;

	f->reads++;
	for (size_t i = 0; i < f->n; i++) {
		struct region *r = &f->regions[i];

		if (addr < r->addr || addr - r->addr >= r->len)
			continue;
		if (len > r->len - (addr - r->addr))
			return -EFAULT;
		memcpy(buf, r->data + (addr - r->addr), len);
		return 0;
	}
	return len ? -EFAULT : 0;
}

static void fake_close(struct mem *m)
{
	struct mem_fake *f = (struct mem_fake *)m;

	for (size_t i = 0; i < f->n; i++)
		free(f->regions[i].data);
	free(f->regions);
	free(f);
}

struct mem *mem_fake_new(void)
{
	struct mem_fake *f = xcalloc(1, sizeof(*f));

	f->mem.read = fake_read;
	f->mem.close = fake_close;
	return &f->mem;
}

int mem_fake_add(struct mem *m, uint64_t addr, const void *data, size_t len)
{
	struct mem_fake *f = (struct mem_fake *)m;
	struct region *r;

	if (len == 0 || addr + len < addr)
		return -EINVAL;
	for (size_t i = 0; i < f->n; i++) {
		r = &f->regions[i];
		if (addr < r->addr + r->len && r->addr < addr + len)
			return -EEXIST;
	}
	ALLOC_GROW(f->regions, f->n + 1, f->alloc);
	r = &f->regions[f->n++];
	r->addr = addr;
	r->len = len;
	r->data = xmalloc(len);
	memcpy(r->data, data, len);
	return 0;
}

unsigned long mem_fake_reads(struct mem *m)
{
	return ((struct mem_fake *)m)->reads;
}
