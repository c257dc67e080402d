/* libFuzzer harness: the symbolizer (src/native/symbolize.c) on crafted
 * files, as a container's root can hold any: libdwfl's reading of the
 * object (symbol tables, build-id note, .gnu_debuglink and its CRC,
 * .gnu_debugaltlink, compressed sections, .gnu_debugdata and its xz
 * bound), our sorted symbol tables, function ranges from the FDEs of
 * .eh_frame and .debug_frame (fderange.c), and DWARF line tables through
 * dwfl_module_getsrc, with the live code's callbacks, through its open
 * callback (struct symbolize_io).
 *
 * Input: the object's bytes, optionally followed by FZ_SYM_SPLIT and the
 * bytes of a separate debug file.  The fake process (pid 1) maps the
 * object at OBJ_LOW and the same bytes as its vDSO; every debug file the
 * symbolizer looks for (by build ID, debuglink, dwz) is the second part,
 * and so is the file a debuginfod server sends for the object's build ID
 * (symbolizer_add_debug), after which the lookups run again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "native/symbolize.h"

#define FZ_SYM_SPLIT "\n--pystrobe-debug-file--\n"
#define OBJ_PATH "/fuzz/lib/libfuzz.so.1"
#define OBJ_LOW 0x7f0000000000ull
#define OBJ_HIGH 0x7f0000200000ull
#define VDSO_LOW 0x10000ull
#define VDSO_LEN 0x2000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fake {
	int obj, dbg, maps, mem;
};

/* A new open file description each time, as open(2) would give: the
 * symbolizer reads some files with read() and rewinds them. */
static int reopen(int fd)
{
	char path[64];

	if (fd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return symbolize_open_file(path);
}

static int fake_open(void *arg, const char *path)
{
	struct fake *f = arg;

	if (!strcmp(path, "/proc/1/maps"))
		return reopen(f->maps);
	if (!strcmp(path, "/proc/1/mem"))
		return reopen(f->mem);
	if (strstr(path, "/map_files/"))
		return -1;
	if (!strcmp(path, "/proc/1/root" OBJ_PATH))
		return reopen(f->obj);
	return reopen(f->dbg);
}

static int memfd_with(const char *name, const void *p, size_t n, off_t at)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (n && pwrite(fd, p, n, at) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	return fd;
}

static void lookups(struct symbolizer *s, const uint8_t *data, size_t size)
{
	/* The start of the object, where seed_elf.c's text lands, and a
	 * few addresses named by the input's last bytes. */
	for (uint64_t off = 0; off < 0x400; off += 8) {
		const struct native_sym *ns = symbolize(s, OBJ_LOW + 0x1000 + off, off & 8);

		/* FUZZ_SYMBOLIZE_VERBOSE=1 ./fuzz_symbolize FILE: what a seed
		 * names, to see that it reaches as far as meant. */
		if (getenv("FUZZ_SYMBOLIZE_VERBOSE"))
			fprintf(stderr, "%#llx %s %s+%#llx %s:%d\n",
				(unsigned long long)ns->pc, ns->function ? ns->function : "-",
				ns->library ? ns->library : "-", (unsigned long long)ns->offset,
				ns->file ? ns->file : "-", ns->line);
	}
	symbolize(s, OBJ_LOW, true);
	symbolize(s, OBJ_HIGH - 1, false);
	symbolize(s, VDSO_LOW + 0x100, true);
	for (size_t i = 0; i + 4 <= size && i < 16; i += 4) {
		uint32_t off;

		memcpy(&off, data + size - 4 - i, 4);
		symbolize(s, OBJ_LOW + off % (OBJ_HIGH - OBJ_LOW), i & 4);
	}
}

/* What the symbol store does when debuginfod sends a file for the
 * object: the second part, as "/fuzz/debuginfod/debuginfo". */
static void fetched(struct symbolizer *s, const uint8_t *data, size_t nobj)
{
	char *copy = malloc(nobj ? nobj : 1);
	Elf *elf;
	const void *id = NULL;
	ssize_t len;

	memcpy(copy, data, nobj);
	elf = elf_memory(copy, nobj);
	len = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (len > 0 && symbolizer_wants_debug(s, OBJ_LOW))
		symbolizer_add_debug(s, id, (int)len, "/fuzz/debuginfod/debuginfo");
	elf_end(elf);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char maps[] =
		"10000-12000 r-xp 00000000 00:00 0 [vdso]\n"
		"7f0000000000-7f0000100000 r-xp 00000000 08:01 11 " OBJ_PATH "\n"
		"7f0000100000-7f0000200000 r--p 00100000 08:01 11 " OBJ_PATH "\n";
	const uint8_t *split = memmem(data, size, FZ_SYM_SPLIT, sizeof(FZ_SYM_SPLIT) - 1);
	size_t nobj = split ? (size_t)(split - data) : size;
	struct fake f = { -1, -1, -1, -1 };
	struct symbolize_io io = { fake_open, &f };
	struct symbolizer *s;

	f.obj = memfd_with("obj", data, nobj, 0);
	if (split)
		f.dbg = memfd_with("dbg", split + sizeof(FZ_SYM_SPLIT) - 1,
				   size - nobj - (sizeof(FZ_SYM_SPLIT) - 1), 0);
	f.maps = memfd_with("maps", maps, sizeof(maps) - 1, 0);
	f.mem = memfd_with("mem", data, nobj < VDSO_LEN ? nobj : VDSO_LEN, VDSO_LOW);
	if (f.obj >= 0 && f.maps >= 0 && f.mem >= 0) {
		s = symbolizer_new_io(1, SYMBOLIZE_LINES, &io);
		lookups(s, data, size);
		symbolizer_refresh(s);
		lookups(s, data, size);
		fetched(s, data, nobj);
		lookups(s, data, size);
		symbolizer_free(s);
	}
	close(f.obj);
	close(f.dbg);
	close(f.maps);
	close(f.mem);
	return 0;
}
