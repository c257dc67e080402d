/* A seed for fuzz_unwind (fuzz_unwind.c has the format): an ELF file's
 * PT_LOAD segments laid out at BASE as the loader would, the maps that
 * say so, and a stack of return addresses into it with the registers of
 * a thread stopped at BASE + pc_off.
 *
 *	mkseed_unwind FILE OUT PC_OFF RET_OFF...
 *
 * Offsets are link-time addresses (nm's), in hex.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzmem.h"

#define BASE 0x7f1200000000ull
#define STACK 0x7ffd12340000ull
#define STACK_LEN 4096

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;

	if (!f || fseek(f, 0, SEEK_END) != 0)
		exit(1);
	*len = ftell(f);
	rewind(f);
	buf = malloc(*len);
	if (!buf || fread(buf, 1, *len, f) != *len)
		exit(1);
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	uint64_t stack[STACK_LEN / 8] = { 0 }, regs[17] = { 0 };
	char maps[4096] = "";
	size_t len, ml = 0;
	unsigned char *elf;
	Elf64_Ehdr *eh;
	FILE *out;

	if (argc < 5)
		return 2;
	elf = slurp(argv[1], &len);
	eh = (Elf64_Ehdr *)elf;
	if (len < sizeof(*eh) || eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr) > len)
		return 1;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(elf + eh->e_phoff) + i;
		uint64_t start = BASE + (ph->p_vaddr & ~0xfffull);

		if (ph->p_type != PT_LOAD)
			continue;
		ml += snprintf(maps + ml, sizeof(maps) - ml,
			       "%llx-%llx r%c%cp %08llx 08:01 42 /usr/lib/seed.so\n",
			       (unsigned long long)start,
			       (unsigned long long)((BASE + ph->p_vaddr + ph->p_memsz + 0xfff) & ~0xfffull),
			       ph->p_flags & PF_W ? 'w' : '-', ph->p_flags & PF_X ? 'x' : '-',
			       (unsigned long long)(ph->p_offset & ~0xfffull));
	}
	/* Return addresses, each followed by a saved frame pointer. */
	for (int i = 0, k = 0; i < STACK_LEN / 8; i += 2, k++) {
		stack[i] = BASE + strtoull(argv[4 + k % (argc - 4)], NULL, 16);
		stack[i + 1] = STACK + 8 * (i + 2);
	}
	regs[6] = STACK + 8;	/* rbp */
	regs[7] = STACK;	/* rsp */
	regs[16] = BASE + strtoull(argv[3], NULL, 16);
	out = fopen(argv[2], "wb");
	if (!out)
		return 1;
	fwrite("PSU1", 1, 4, out);
	for (int i = 0; i < 17; i++)
		fz_put64(out, regs[i]);
	fz_put16(out, (uint16_t)ml);
	fwrite(maps, 1, ml, out);
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(elf + eh->e_phoff) + i;
		uint64_t off = ph->p_offset & ~0xfffull;

		if (ph->p_type != PT_LOAD || ph->p_offset + ph->p_filesz > len)
			continue;
		fz_put_region(out, BASE + (ph->p_vaddr & ~0xfffull), elf + off,
			      ph->p_offset + ph->p_filesz - off, 0);
	}
	fz_put_region(out, STACK, stack, sizeof(stack), 0);
	free(elf);
	return fclose(out) != 0;
}
