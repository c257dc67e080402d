/* Function ranges from FDEs; see fderange.h.
 *
 * libdw's dwarf_next_cfi() walks the entries of a CFI section, each
 * checked against the section's end; what it leaves to its caller is
 * reading an FDE's initial_location and address_range, whose encoding
 * the FDE's CIE gives in its augmentation ('R').  That is done here,
 * each read checked against the entry's end.
 */
#include "native/fderange.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A LEB128 longer than this is not a 64-bit value. */
#define LEB_MAX 10

struct cie {
	Dwarf_Off off;
	int enc;		/* of its FDEs' addresses; -1: not understood */
};

/* One section being read. */
struct cfisec {
	Elf_Data *data;
	uint64_t addr;		/* its link-time address: the base of pcrel */
	bool eh;		/* .eh_frame, else .debug_frame */
	struct cie *cies;	/* in section order, as met */
	size_t ncies, cies_alloc;
};

static bool read_leb(const uint8_t **p, const uint8_t *end, bool sign, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift >= 7 * LEB_MAX)
			return false;
		b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	*out = v;
	return true;
}

/* A value of format fmt (the low bits of a DW_EH_PE encoding) at *p. */
static bool read_format(const uint8_t **p, const uint8_t *end, int fmt, uint64_t *out)
{
	static const uint8_t sizes[16] = {
		[DW_EH_PE_absptr] = 8, [DW_EH_PE_udata2] = 2, [DW_EH_PE_udata4] = 4,
		[DW_EH_PE_udata8] = 8, [DW_EH_PE_sdata2] = 2, [DW_EH_PE_sdata4] = 4,
		[DW_EH_PE_sdata8] = 8,
	};
	size_t n = sizes[fmt & 0x0f];
	uint64_t v = 0;

	if ((fmt & 0x0f) == DW_EH_PE_uleb128 || (fmt & 0x0f) == DW_EH_PE_sleb128)
		return read_leb(p, end, (fmt & 0x0f) == DW_EH_PE_sleb128, out);
	if (!n || (size_t)(end - *p) < n)
		return false;
	memcpy(&v, *p, n);	/* x86-64: little-endian, as the file (checked) */
	if ((fmt & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n);
	*p += n;
	*out = v;
	return true;
}

/* An FDE address of encoding enc at *p, which lies at link-time address
 * here: absolute or pc-relative (what compilers write for FDEs). */
static bool read_address(const uint8_t **p, const uint8_t *end, int enc, uint64_t here,
			 uint64_t *out)
{
	if (enc < 0 || enc == DW_EH_PE_omit || !read_format(p, end, enc, out))
		return false;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return true;
	case DW_EH_PE_pcrel:
		*out += here;
		return true;
	default:
		return false;
	}
}

/* The encoding of the addresses of a CIE's FDEs: .debug_frame's are
 * absolute; .eh_frame's are as its augmentation's 'R' says. */
static int cie_encoding(const struct cfisec *cs, const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;
	uint64_t skip;

	if (!cs->eh || !a || a[0] != 'z')
		return DW_EH_PE_absptr;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return d && d < end ? *d : -1;
		case 'L':
			if (!d || d++ >= end)
				return -1;
			break;
		case 'P':
			if (!d || d >= end)
				return -1;
			skip = *d++;
			if (!read_format(&d, end, (int)skip, &skip))
				return -1;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

static int cie_cmp(const void *key, const void *elem)
{
	Dwarf_Off off = *(const Dwarf_Off *)key, at = ((const struct cie *)elem)->off;

	return off < at ? -1 : off > at;
}

/* The range an FDE describes, or false. */
static bool fde_range(const struct cfisec *cs, const Dwarf_FDE *fde, struct fderange *r)
{
	/* bsearch() must not be given a null array, even an empty one. */
	const struct cie *c = cs->ncies ? bsearch(&fde->CIE_pointer, cs->cies, cs->ncies,
						  sizeof(*cs->cies), cie_cmp)
					: NULL;
	const uint8_t *p = fde->start;
	uint64_t len;

	if (!c || !read_address(&p, fde->end, c->enc,
				cs->addr + (uint64_t)(fde->start - (const uint8_t *)cs->data->d_buf),
				&r->start) ||
	    !read_format(&p, fde->end, c->enc & 0x0f, &len))
		return false;
	r->end = r->start + len;
	/* Length 0, or start 0 (a function the linker dropped: .debug_frame
	 * keeps its FDE), or wrapping: nothing to name. */
	return len && r->start && r->end > r->start;
}

/* Every FDE of one section into *v. */
static void read_section(const unsigned char *ident, struct cfisec *cs, struct fderange **v,
			 size_t *n, size_t *alloc)
{
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;

	while (*n < FDERANGE_MAX &&
	       dwarf_next_cfi(ident, cs->data, cs->eh, off, &next, &e) == 0) {
		struct fderange r;

		if (dwarf_cfi_cie_p(&e)) {
			ALLOC_GROW(cs->cies, cs->ncies + 1, cs->cies_alloc);
			cs->cies[cs->ncies++] = (struct cie){ off, cie_encoding(cs, &e.cie) };
		} else if (fde_range(cs, &e.fde, &r)) {
			ALLOC_GROW(*v, *n + 1, *alloc);
			(*v)[(*n)++] = r;
		}
		/* Always forward: the walk ends with the section. */
		if (next == (Dwarf_Off)-1 || next <= off)
			break;
		off = next;
	}
}

static int range_cmp(const void *a, const void *b)
{
	const struct fderange *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

size_t fderange_read(Elf *elf, struct fderange **v)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	size_t n = 0, alloc = 0, shstrndx;
	Elf_Scn *scn = NULL;

	*v = NULL;
	if (!ident || ident[EI_DATA] != ELFDATA2LSB || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		struct cfisec cs = { 0 };
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    (sh.sh_flags & SHF_COMPRESSED) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		cs.eh = !strcmp(name, ".eh_frame");
		if (!cs.eh && strcmp(name, ".debug_frame"))
			continue;
		cs.data = elf_getdata(scn, NULL);
		cs.addr = sh.sh_addr;
		if (cs.data && cs.data->d_buf)
			read_section(ident, &cs, v, &n, &alloc);
		free(cs.cies);
	}
	if (n)
		qsort(*v, n, sizeof(**v), range_cmp);
	return n;
}

const struct fderange *fderange_find(const struct fderange *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first starting after addr.  The nearest start before it
	 * that still covers it: a cold part inside its parent's range. */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < 16; seen++)
		if (addr < v[i].end)
			return &v[i];
	return NULL;
}
