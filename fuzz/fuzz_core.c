/* libFuzzer harness: the core file reader (src/process/core.c) on arbitrary
 * files, as a core from a crash, a full disk or a stranger can be any:
 * program headers, the notes (NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO,
 * NT_AUXV, NT_FILE), and memory read through the segments they describe.
 *
 * The input is the whole core, written to a memfd and opened by path.
 * Files the core names are looked up under a root that does not exist, so
 * that a run depends on the input alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/core.h"
#include "process/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read around addr, as a walk would: a word, a page, across the end. */
static void probe(struct mem *m, uint64_t addr)
{
	static uint8_t buf[8192];
	char s[64];

	mem_read(m, addr, buf, 8);
	mem_read(m, addr, buf, sizeof(buf));
	mem_read(m, addr - 8, buf, 16);
	mem_read_cstr(m, addr, s, sizeof(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	const struct core_thread *t;
	const struct proc_maps *maps;
	const char *const *notes;
	struct core *c = NULL;
	char path[64], err[512];
	int n;

	if (fd < 0)
		fd = memfd_create("fuzz_core", 0);
	if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (core_open(path, "/nonexistent-fuzz-root", NULL, &c, err, sizeof(err)) != 0)
		return 0;
	n = core_threads(c, &t);
	for (int i = 0; i < n && i < 64; i++) {
		probe(core_mem(c), t[i].regs[19]);	/* rsp */
		probe(core_mem(c), t[i].regs[16]);	/* rip */
	}
	maps = core_maps(c);
	for (size_t i = 0; i < maps->n && i < 64; i++) {
		probe(core_mem(c), maps->v[i].start);
		probe(core_mem(c), maps->v[i].end - 1);
		core_host_path(c, maps->v[i].path);
	}
	free(core_maps_text(c));
	core_notes(c, &notes);
	core_signal_name(core_info(c)->signo);
	core_close(c);
	return 0;
}
