/* A page cache in front of another reader, for one sample at a time.
 *
 * A sample reads many small pieces that sit close together: the thread
 * states, a data stack of frames, the code objects.  One system call per
 * page instead of one per piece cuts the cost of a sample severalfold, and
 * reads within one sample see one copy of each page.  The cache is emptied
 * before every sample, so nothing stale outlives it.
 */
#include "mem.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define SLOTS 256u		/* direct-mapped: 1 MiB of the target per sample */

struct page {
	uint64_t addr;		/* page address + 1; 0 = empty */
	uint8_t data[PAGE];
};

struct mem_cache {
	struct mem mem;
	struct mem *under;
	struct page *pages;
	uint64_t generation;
	unsigned long hits, misses;
};

static int cache_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_cache *c = (struct mem_cache *)m;
	uint8_t *out = buf;

	/* Big reads go straight through: caching them would evict the rest. */
	if (len > PAGE)
		return mem_read(c->under, addr, buf, len);
	while (len) {
		uint64_t base = addr & ~(uint64_t)(PAGE - 1);
		size_t off = addr - base, n = PAGE - off < len ? PAGE - off : len;
		struct page *pg = &c->pages[(base / PAGE) % SLOTS];

		if (pg->addr != base + 1) {
			int rc = mem_read(c->under, base, pg->data, PAGE);

			if (rc < 0) {
				/* Part of the page may be unmapped: read just
				 * what was asked for, uncached. */
				pg->addr = 0;
				return mem_read(c->under, addr, out, len);
			}
			pg->addr = base + 1;
			c->misses++;
		} else {
			c->hits++;
		}
		memcpy(out, pg->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

static void cache_close(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	free(c->pages);
	free(c);
}

struct mem *mem_cache_new(struct mem *under)
{
	struct mem_cache *c = xcalloc(1, sizeof(*c));

	c->mem.read = cache_read;
	c->mem.close = cache_close;
	c->under = under;
	c->pages = xcalloc(SLOTS, sizeof(*c->pages));
	return &c->mem;
}

void mem_cache_reset(struct mem *m)
{
	struct mem_cache *c = (struct mem_cache *)m;

	for (unsigned i = 0; i < SLOTS; i++)
		c->pages[i].addr = 0;
}
