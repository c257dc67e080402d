/* Names of code in an object: its function symbols, and the starts of
 * its functions by FDE (fderange.h).
 *
 * Symbol lookup does not use dwfl_module_addrinfo: it scans the whole
 * symbol table on every call (slow on libpython's) and answers with the
 * nearest preceding symbol even when that symbol ends before the address.
 * Each module's function symbols are sorted once instead, and a symbol
 * counts only if its st_size covers the address.
 */
#include "native/fderange.h"
#include "native/symbolize_int.h"
#include "util/util.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>

/* --- symbols ---------------------------------------------------------- */

/* Among names for one address: global over weak over local, then the one
 * with fewer leading underscores (qsort over __qsort_r's aliases). */
static int name_rank(const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info), r = 0;

	if (bind == STB_GLOBAL)
		r = 300;
	else if (bind == STB_WEAK)
		r = 200;
	while (*name == '_' && r > -100) {
		name++;
		r -= 10;
	}
	return r;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return y->rank - x->rank;	/* best name first */
}

static void load_symbols(struct smod *sm)
{
	int n;
	size_t cap = 0;

	sm->syms_done = true;
	if (!sm->mod)
		return;
	n = dwfl_module_getsymtab(sm->mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(sm->mod, i, &sym, &addr, &shndx,
							   NULL, NULL);
		int type;

		/* Kept without a size too: it names the function whose FDE
		 * starts where it does (start_name()), never by extent. */
		if (!name || !*name || shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		ALLOC_GROW(sm->syms, sm->nsyms + 1, cap);
		sm->syms[sm->nsyms++] = (struct fsym){ addr, addr + sym.st_size, name,
						       name_rank(&sym, name) };
	}
	/* A module without a function symbol has no array at all, and
	 * qsort may not be handed NULL even for nothing. */
	if (sm->nsyms)
		qsort(sm->syms, sm->nsyms, sizeof(*sm->syms), fsym_cmp);
}

/* The function whose extent covers addr.  Symbols may nest or overlap
 * (aliases, a .cold part inside its parent's range on some linkers), so
 * look back from the last one starting at or before addr for the nearest
 * that covers it. */
/* The index of the first symbol starting after addr. */
static size_t syms_after(struct smod *sm, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!sm->syms_done)
		load_symbols(sm);
	hi = sm->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sm->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *function_at(struct smod *sm, uint64_t addr)
{
	size_t lo = syms_after(sm, addr);

	for (size_t i = lo, seen = 0; i-- > 0 && seen < 64; seen++) {
		uint64_t start = sm->syms[i].start;

		if (addr >= sm->syms[i].end)
			continue;
		/* The best-ranked name of this start comes first. */
		while (i > 0 && sm->syms[i - 1].start == start && addr < sm->syms[i - 1].end)
			i--;
		return sm->syms[i].name;
	}
	return NULL;
}

/* The best name of a symbol starting at addr, whatever its size: an
 * exported entry point of a stripped library whose .dynsym gives no size
 * (or too small a one) still names the function its FDE says it starts. */
const char *start_name(struct smod *sm, uint64_t addr)
{
	size_t i = syms_after(sm, addr);

	while (i > 0 && sm->syms[i - 1].start == addr)
		i--;
	return i < sm->nsyms && sm->syms[i].start == addr ? sm->syms[i].name : NULL;
}

/* The start of the function holding addr (a run-time address), in the
 * object's link-time terms, from the FDE that covers it (fderange.h):
 * what names code no symbol covers, so that every address of one
 * function reads alike.  A function split into hot and cold parts has an
 * FDE for each. */
bool fde_start(struct smod *sm, uint64_t addr, uint64_t *start)
{
	const struct fderange *r;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(sm->mod, &bias);

	if (!elf)
		return false;
	if (!sm->fdes_done) {
		sm->fdes_done = true;
		sm->nfdes = fderange_read(elf, &sm->fdes);
	}
	r = fderange_find(sm->fdes, sm->nfdes, addr - bias);
	if (!r)
		return false;
	*start = r->start;
	return true;
}

