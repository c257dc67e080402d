#include "process/elffile.h"
#include "util/util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct elffile {
	int fd;
	Elf *elf;
};

struct elffile *elffile_open(const char *path)
{
	struct elffile *ef;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ef = xcalloc(1, sizeof(*ef));
	ef->fd = fd;
	ef->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || gelf_getclass(ef->elf) != ELFCLASS64) {
		elffile_close(ef);
		return NULL;
	}
	return ef;
}

void elffile_close(struct elffile *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	close(ef->fd);
	free(ef);
}

static int find_in_symtab(Elf *elf, Elf_Scn *scn, const char *name,
			  uint64_t *addr, uint64_t *size)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t count;

	if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0)
		return -1;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -1;
	count = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!s || strcmp(s, name) != 0)
			continue;
		*addr = sym.st_value;
		if (size)
			*size = sym.st_size;
		return 0;
	}
	return -1;
}

int elffile_symbol(struct elffile *ef, const char *name, uint64_t *addr, uint64_t *size)
{
	static const Elf64_Word order[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != order[k])
				continue;
			if (find_in_symtab(ef->elf, scn, name, addr, size) == 0)
				return 0;
		}
	}
	return -1;
}

int elffile_section(struct elffile *ef, const char *name, uint64_t *addr, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(ef->elf, &shstrndx) != 0)
		return -1;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;
		const char *s;

		if (!gelf_getshdr(scn, &sh))
			continue;
		s = elf_strptr(ef->elf, shstrndx, sh.sh_name);
		if (!s || strcmp(s, name) != 0)
			continue;
		*addr = sh.sh_addr;
		if (size)
			*size = sh.sh_size;
		return 0;
	}
	return -1;
}

int elffile_load_bias(struct elffile *ef, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
	size_t nph;

	if (elf_getphdrnum(ef->elf, &nph) != 0)
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t align, seg_off, seg_vaddr;

		if (!gelf_getphdr(ef->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* The kernel maps whole pages: the mapping for this segment
		 * starts at the page holding p_offset. */
		align = ph.p_align > 1 ? ph.p_align : 4096;
		if (align > 4096)
			align = 4096;
		seg_off = ph.p_offset & ~(align - 1);
		seg_vaddr = ph.p_vaddr & ~(align - 1);
		if (map_offset < seg_off || map_offset >= ph.p_offset + ph.p_filesz)
			continue;
		*bias = map_start - (seg_vaddr + (map_offset - seg_off));
		return 0;
	}
	return -1;
}
