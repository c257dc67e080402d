/* libFuzzer harness: the ELF reader (src/process/elffile.c) on arbitrary
 * files, as a target's root can hold any: symbols from .dynsym and
 * .symtab, sections by name, load biases from the program headers; and
 * the other readers of an object's sections pystrobe has: function ranges
 * from the FDEs of .eh_frame and .debug_frame (fderange.c) and the xz
 * bound on .gnu_debugdata (debugdata.c).
 *
 * The input is the whole file, written to a memfd and opened by path as
 * pystrobe opens /proc/PID/root/...; libelf maps it, so ASan sees reads
 * past the end of any table that claims more than the file has.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "native/debugdata.h"
#include "native/fderange.h"
#include "process/elffile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const symbols[] = { "_PyRuntime", "main", "Py_Version", "seed_static", "" };
static const char *const sections[] = { ".PyRuntime", ".text", ".symtab", ".gnu_debuglink",
					".note.gnu.build-id", ".eh_frame", ".debug_line", "" };

static void other_readers(int fd, const uint8_t *data, size_t size)
{
	struct fderange *v;
	Elf *elf;
	size_t n;

	/* elffile_open() sets libelf's version too, but only after this has
	 * run once: without it here the first input (a lone reproducer in
	 * `make regress`) never reached these readers. */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	debugdata_ok(elf);
	n = fderange_read(elf, &v);
	/* Addresses inside and around the ranges found, and named by the
	 * input's last bytes. */
	for (size_t i = 0; i < n && i < 64; i++) {
		fderange_find(v, n, v[i].start);
		fderange_find(v, n, v[i].end - 1);
		fderange_find(v, n, v[i].end);
	}
	if (size >= 8) {
		uint64_t a;

		memcpy(&a, data + size - 8, 8);
		fderange_find(v, n, a);
	}
	free(v);
	elf_end(elf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct elffile *ef;
	char path[64];
	uint64_t a, b;

	if (fd < 0)
		fd = memfd_create("fuzz_elffile", 0);
	if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	other_readers(fd, data, size);
	ef = elffile_open(path);
	if (!ef)
		return 0;
	for (size_t i = 0; i < sizeof(symbols) / sizeof(*symbols); i++)
		elffile_symbol(ef, symbols[i], &a, &b);
	for (size_t i = 0; i < sizeof(sections) / sizeof(*sections); i++)
		elffile_section(ef, sections[i], &a, &b);
	/* Mappings at the start, inside and far past the file. */
	elffile_load_bias(ef, 0x7f0000000000, 0, &a);
	elffile_load_bias(ef, 0x7f0000001000, 0x1000, &a);
	elffile_load_bias(ef, 0x7f0000100000, UINT64_MAX - 0xfff, &a);
	elffile_close(ef);
	return 0;
}
