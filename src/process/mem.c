#include "process/mem.h"

#include <errno.h>
#include <string.h>

int mem_read_batch(struct mem *m, const struct mem_block *b, int n)
{
	if (m->read_batch)
		return m->read_batch(m, b, n);
	for (int i = 0; i < n; i++) {
		int rc = mem_read(m, b[i].addr, b[i].buf, b[i].len);

		if (rc == -ESRCH || rc == -EPERM)
			return i ? i : rc;
		if (rc < 0)
			return i;
	}
	return n;
}

/* A word where the reader holds it in place (the page cache), else read:
 * a walk reads a back pointer a frame, and a copy through mem_read() costs
 * a call to memcpy for each. */
static inline int read_small(struct mem *m, uint64_t addr, void *out, size_t len)
{
	const void *p = mem_peek(m, addr, len);

	if (!p)
		return mem_read(m, addr, out, len);
	memcpy(out, p, len);
	return 0;
}

int mem_read_u64(struct mem *m, uint64_t addr, uint64_t *out)
{
	return read_small(m, addr, out, sizeof(*out));
}

int mem_read_u32(struct mem *m, uint64_t addr, uint32_t *out)
{
	return read_small(m, addr, out, sizeof(*out));
}

int mem_read_i32(struct mem *m, uint64_t addr, int32_t *out)
{
	return read_small(m, addr, out, sizeof(*out));
}

int mem_read_u8(struct mem *m, uint64_t addr, uint8_t *out)
{
	return read_small(m, addr, out, sizeof(*out));
}

/* Read in small chunks: a C string near the end of a mapping must not fail
 * because a big read would cross into the unmapped page after it. */
int mem_read_cstr(struct mem *m, uint64_t addr, char *buf, size_t max)
{
	size_t got = 0;

	if (max == 0)
		return -EINVAL;
	while (got < max - 1) {
		size_t chunk = 64 - ((addr + got) & 63);
		int rc;

		if (chunk > max - 1 - got)
			chunk = max - 1 - got;
		rc = mem_read(m, addr + got, buf + got, chunk);
		if (rc < 0) {
			buf[got] = 0;
			return got ? 0 : rc;
		}
		if (memchr(buf + got, 0, chunk))
			return 0;
		got += chunk;
	}
	buf[max - 1] = 0;
	return 0;
}
