/* Code addresses of a process to names, with libdwfl (eu-stack is the
 * model): one Dwfl per process, modules reported from /proc/PID/maps, ELF
 * files found by our own callbacks so that they are the files the process
 * mapped, wherever it lives.
 */
#include "native/symbolize_int.h"
#include "native/symhelper.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* --- cache ------------------------------------------------------------ */

static void centry_free(struct centry *e)
{
	free((char *)e->ns.function);
	free((char *)e->ns.file);
	free(e);
}

void cache_clear(struct symbolizer *s)
{
	for (uint32_t i = 0; i < s->ncache; i++)
		centry_free(s->cache[i]);
	s->ncache = 0;
	hashidx_clear(&s->cache_index);
}

/* --- lookup ----------------------------------------------------------- */

static void resolve(struct symbolizer *s, struct native_sym *ns, bool exact)
{
	uint64_t addr = exact ? ns->pc : ns->pc - 1;
	struct smod *sm = module_at(s, addr);
	GElf_Addr bias = 0;
	uint64_t start;
	const char *name;

	if (!sm)
		return;
	ns->path = sm->path;
	ns->library = sm->base;
	ns->offset = ns->pc - sm->low;
	if (!sm->mod)
		return;
	/* Link-time address: what addr2line and nm speak. */
	if (dwfl_module_getelf(sm->mod, &bias))
		ns->offset = ns->pc - bias;
	name = function_at(sm, addr);
	if (!name && fde_start(sm, addr, &start)) {
		name = start_name(sm, start + bias);
		if (!name)
			ns->offset = start;
	}
	if (name) {
		/* Without the symbol version: clock_nanosleep@GLIBC_2.2.5. */
		char *plain = xasprintf("%.*s", (int)strcspn(name, "@"), name);
		char *dm = symbolize_demangle(plain);

		if (dm) {
			free(plain);
			plain = dm;
		}
		ns->function = plain;
	}
	if (s->flags & SYMBOLIZE_LINES) {
		Dwfl_Line *line = dwfl_module_getsrc(sm->mod, addr);
		const char *file = NULL;
		int lineno = 0;

		if (line)
			file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		if (file && lineno > 0) {
			ns->file = xstrdup(file);
			ns->line = lineno;
		}
	}
}

const struct native_sym *symbolize(struct symbolizer *s, uint64_t pc, bool exact)
{
	uint64_t key = pc << 1 | exact;
	uint32_t h = hash_u64(key), id;
	struct hashidx_pos pos;
	struct centry *e;

	for (id = hashidx_first(&s->cache_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&s->cache_index, &pos))
		if (s->cache[id]->key == key)
			return &s->cache[id]->ns;
	e = xcalloc(1, sizeof(*e));
	e->key = key;
	e->ns.pc = pc;
	if (s->remote)
		resolve_remote(s, &e->ns, exact);
	else
		resolve(s, &e->ns, exact);
	ALLOC_GROW(s->cache, s->ncache + 1, s->cache_alloc);
	id = s->ncache++;
	s->cache[id] = e;
	hashidx_add(&s->cache_index, h, id);
	return &e->ns;
}

static int plain_open(void *arg, const char *path)
{
	(void)arg;
	return symbolize_open_file(path);
}

struct symbolizer *symbolizer_new(pid_t pid, unsigned flags)
{
	static const struct symbolize_io plain = { plain_open, NULL };
	struct symbolizer *s;
	char err[128];

	if (!symhelper_wanted(pid))
		return symbolizer_new_io(pid, flags, &plain);
	s = xcalloc(1, sizeof(*s));
	s->pid = pid;
	s->flags = flags;
	s->remote = true;
	s->helper = symhelper_start(pid, flags, err, sizeof(err));
	if (!s->helper) {
		errorf("symbolization helper: %s: native frames are named library+0xOFFSET", err);
		s->helper_errors++;
	}
	return s;
}

struct symbolizer *symbolizer_new_io(pid_t pid, unsigned flags, const struct symbolize_io *io)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	/* libdwfl asks debuginfod only through its standard callbacks, which
	 * ours replace: DEBUGINFOD_URLS stays for the symbol store's own
	 * fetches (symstore.h), made where no target waits on them. */
	elf_version(EV_CURRENT);
	s->pid = pid;
	s->flags = flags;
	s->io = *io;
	s->cb.find_elf = find_elf;
	s->cb.find_debuginfo = find_debuginfo;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl) {
		errorf("libdwfl: %s", dwfl_errmsg(-1));
		exit(EXIT_ERROR);
	}
	report_maps(s, true);
	return s;
}

bool symbolizer_refresh(struct symbolizer *s)
{
	if (s->remote)
		return refresh_remote(s);
	return report_maps(s, true);
}

/* Does elf have a symbol table of its own (not .dynsym's alone)? */
static bool has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size > 0)
			return true;
	}
	return false;
}

bool symbolizer_wants_debug(struct symbolizer *s, uint64_t addr)
{
	struct smod *sm = s->remote ? NULL : module_at(s, addr);
	const char *debugfile = NULL;
	GElf_Addr bias;
	Elf *elf;

	if (!sm || !sm->mod || !(elf = dwfl_module_getelf(sm->mod, &bias)))
		return false;
	/* Loading the symbols is what looks for the debug file. */
	dwfl_module_getsymtab(sm->mod);
	dwfl_module_info(sm->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	return !debugfile && !has_symtab(elf);
}

/* Report every object again but those with this build ID, which libdwfl
 * then forgets, with the debug file it looked for; the next report makes
 * them afresh. */
static void drop_build_id(struct symbolizer *s, const unsigned char *id, int len)
{
	dwfl_report_begin(s->dwfl);
	for (size_t k = 0; k < s->nmods; k++) {
		struct smod *sm = s->mods[k];
		const unsigned char *got;
		GElf_Addr vaddr;

		if (!sm->mod)
			continue;
		if (dwfl_module_build_id(sm->mod, &got, &vaddr) == len && !memcmp(got, id, len)) {
			smod_drop(sm);
			continue;
		}
		dwfl_report_module(s->dwfl, sm->path, sm->low, sm->high);
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
}

void symbolizer_add_debug(struct symbolizer *s, const unsigned char *id, int len,
			  const char *path)
{
	struct fetched *f;

	if (s->remote || len <= 0 || len > BUILD_ID_MAX)
		return;
	ALLOC_GROW(s->fetched, s->nfetched + 1, s->fetched_alloc);
	f = &s->fetched[s->nfetched++];
	memcpy(f->id, id, len);
	f->len = len;
	f->path = xstrdup(path);
	drop_build_id(s, id, len);
	cache_clear(s);
	report_maps(s, true);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfetched; i++)
		free(s->fetched[i].path);
	free(s->fetched);
	cache_clear(s);
	free(s->cache);
	hashidx_release(&s->cache_index);
	symhelper_stop(s->helper);
	for (size_t i = 0; i < s->nrpaths; i++)
		free(s->rpaths[i]);
	free(s->rpaths);
	proc_maps_free(&s->rmaps);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	for (size_t k = 0; k < s->nmods; k++)
		smod_free(s->mods[k]);
	free(s->mods);
	free(s);
}
