/* The target's code mappings, and the unwind table (.eh_frame_hdr) of
 * each object they belong to, found from its ELF headers in the target's
 * own memory: see unwind.c. */
#include "native/unwind_int.h"
#include "process/mem.h"
#include "process/proc.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

/* An object's program headers we are willing to look through. */
#define MAX_PHDRS 64

/* DW_EH_PE_* pointer encodings used by .eh_frame_hdr. */
#define EH_PE_OMIT 0xff
#define EH_PE_ABSPTR 0x00
#define EH_PE_UDATA4 0x03
#define EH_PE_UDATA8 0x04
#define EH_PE_SDATA4 0x0b
#define EH_PE_SDATA8 0x0c
#define EH_PE_PCREL 0x10
#define EH_PE_DATAREL 0x30

/* --- mappings ----------------------------------------------------------- */

void free_maps(struct xmap *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* The mapping that holds the ELF header of the object mapped at mi: the
 * nearest one before it with the same path and file offset 0. */
static uint64_t object_base(const struct proc_maps *pm, size_t mi)
{
	for (size_t i = mi + 1; i-- > 0;)
		if (!strcmp(pm->v[i].path, pm->v[mi].path) && pm->v[i].offset == 0)
			return pm->v[i].start;
	return 0;
}

/* a is the old table's, whose path is NULL once moved to the new one
 * (maps that list a range twice would match it again). */
static bool same_xmap(const struct xmap *a, const struct xmap *b)
{
	return a->path && a->start == b->start && a->end == b->end && a->base == b->base &&
	       !strcmp(a->path, b->path);
}

/* Read the maps again.  An executable range that went away or now holds
 * something else makes libunwind's cached rules for it wrong: flush them.
 * Objects still there keep what was learnt about them. */
void read_maps(struct native_unwinder *u)
{
	struct proc_maps pm;
	struct xmap *v = NULL;
	size_t n = 0, cap = 0;
	bool gone = false, came = false;

	u->st.map_reads++;
	if (u->maps_text)
		proc_maps_parse(xstrdup(u->maps_text), &pm);
	else if (proc_maps_read(u->pid, &pm) < 0)
		return;
	u->nstacks = 0;
	for (size_t i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		struct xmap x = { .start = m->start, .end = m->end };

		/* Not joined with the next mapping: that is often a
		 * heap arena, megabytes to copy for nothing. */
		if (m->perms[1] == 'w' && (!m->path[0] || !strcmp(m->path, "[stack]"))) {
			ALLOC_GROW(u->stacks, u->nstacks + 1, u->stacks_alloc);
			u->stacks[u->nstacks++] = (struct range){ m->start, m->end };
		}
		/* Anonymous code (JIT) has no tables: libunwind falls back to
		 * the frame pointer chain there by itself. */
		if (m->perms[2] != 'x' || (m->path[0] != '/' && strcmp(m->path, "[vdso]") != 0))
			continue;
		x.base = object_base(&pm, i);
		if (!x.base)
			continue;
		x.path = m->path;
		for (size_t j = 0; j < u->nmaps; j++) {
			if (same_xmap(&u->maps[j], &x)) {
				x = u->maps[j];
				u->maps[j].path = NULL;	/* moved to the new table */
				break;
			}
		}
		if (x.path == m->path) {
			x.path = xstrdup(m->path);
			came = true;
		}
		ALLOC_GROW(v, n + 1, cap);
		v[n++] = x;
	}
	for (size_t j = 0; j < u->nmaps; j++)
		if (u->maps[j].path)
			gone = true;
	if (gone) {
		unw_flush_cache(u->as, 0, 0);
		mem_cache_reset(u->text);
	}
	u->maps_changed |= gone || came;
	free_maps(u->maps, u->nmaps);
	proc_maps_free(&pm);
	u->maps = v;
	u->nmaps = n;
}

struct xmap *lookup_map(struct native_unwinder *u, uint64_t ip)
{
	size_t lo = 0, hi = u->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ip < u->maps[mid].start)
			hi = mid;
		else if (ip >= u->maps[mid].end)
			lo = mid + 1;
		else
			return &u->maps[mid];
	}
	return NULL;
}

/* An address we do not know: a library loaded since we last looked?  Look
 * once per sample at most, so that a thread running anonymous code does not
 * make every frame re-read the maps. */
struct xmap *find_map(struct native_unwinder *u, uint64_t ip)
{
	struct xmap *x = lookup_map(u, ip);

	if (!x && !u->refreshed) {
		u->refreshed = true;
		read_maps(u);
		x = lookup_map(u, ip);
	}
	return x;
}

/* --- unwind tables from the target's memory ----------------------------- */

static int read_encoded(struct mem *m, uint64_t *addr, uint8_t enc, uint64_t *val)
{
	uint64_t at = *addr, v;
	uint32_t u32;
	int rc;

	switch (enc & 0x0f) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8:
		rc = mem_read_u64(m, at, &v);
		*addr += 8;
		break;
	case EH_PE_UDATA4:
		rc = mem_read_u32(m, at, &u32);
		v = u32;
		*addr += 4;
		break;
	case EH_PE_SDATA4:
		rc = mem_read_u32(m, at, &u32);
		v = (uint64_t)(int64_t)(int32_t)u32;
		*addr += 4;
		break;
	default:
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	switch (enc & 0x70) {
	case 0:
		break;
	case EH_PE_PCREL:
		v += at;
		break;
	default:
		return -EINVAL;
	}
	*val = v;
	return 0;
}

/* Find the object's .eh_frame_hdr from its headers as mapped in the target:
 * the ELF header sits at the start of the first mapping, the program
 * headers normally in the same page. */
void probe_object(struct native_unwinder *u, struct xmap *x)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];
	uint64_t first_load = UINT64_MAX, eh_vaddr = 0, bias, at, eh_frame;
	uint8_t hdr[4];
	bool have_eh = false;

	x->probed = true;
	if (mem_read(u->cache, x->base, &eh, sizeof(eh)) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS)
		return;
	if (mem_read(u->cache, x->base + eh.e_phoff, ph, eh.e_phnum * sizeof(ph[0])) < 0)
		return;
	x->lo = UINT64_MAX;
	x->hi = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first_load)
			first_load = ph[i].p_vaddr;
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			eh_vaddr = ph[i].p_vaddr;
			have_eh = true;
		}
	}
	if (first_load == UINT64_MAX || !have_eh)
		return;
	/* The first PT_LOAD is mapped at file offset 0, page aligned. */
	bias = x->base - (first_load & ~(uint64_t)4095);
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		if (bias + ph[i].p_vaddr < x->lo)
			x->lo = bias + ph[i].p_vaddr;
		if (bias + ph[i].p_vaddr + ph[i].p_memsz > x->hi)
			x->hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (x->lo >= x->hi)
		return;
	x->eh_hdr = bias + eh_vaddr;
	if (mem_read(u->cache, x->eh_hdr, hdr, sizeof(hdr)) < 0 || hdr[0] != 1)
		return;
	/* Only the binary search table that every linker writes (4-byte
	 * entries relative to the header) is supported; without it
	 * libunwind would have to scan .eh_frame linearly. */
	if (hdr[2] == EH_PE_OMIT || hdr[3] != (EH_PE_DATAREL | EH_PE_SDATA4))
		return;
	at = x->eh_hdr + 4;
	if (read_encoded(u->cache, &at, hdr[1], &eh_frame) < 0 ||
	    read_encoded(u->cache, &at, hdr[2], &x->fde_count) < 0)
		return;
	if (x->fde_count == 0 || x->fde_count > (1u << 24))
		return;
	x->table = at;
	x->has_table = true;
}

/* Does an unwind table cover ip (looked for by an unwind through it)? */
bool has_table(struct native_unwinder *u, uint64_t ip)
{
	struct xmap *x = lookup_map(u, ip);

	if (x && !x->probed)
		probe_object(u, x);
	return x && x->has_table && ip >= x->lo && ip < x->hi;
}
