/* The objects mapped into the process, as libdwfl's modules: reported
 * from its maps (read through the symbolizer's io), kept across refreshes
 * while they stay, and the one holding an address.
 */
#include "native/symbolize_int.h"
#include "process/proc.h"
#include "util/util.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Least time between two reads of the maps prompted by unknown addresses. */
#define MAPS_REREAD_MS 200
/* A maps file larger than this is not a process's. */
#define MAPS_MAX (64u << 20)

/* --- modules ---------------------------------------------------------- */

void smod_free(struct smod *sm)
{
	free(sm->fdes);
	free(sm->syms);
	free(sm->image);
	free(sm->path);
	free(sm);
}

/* sm lost its Dwfl_Module, and with it the ELF data its symbols point
 * into; smod_free() comes at the next forgetting report. */
void smod_drop(struct smod *sm)
{
	sm->mod = NULL;
	free(sm->syms);
	sm->syms = NULL;
	sm->nsyms = 0;
	free(sm->fdes);
	sm->fdes = NULL;
	sm->nfdes = 0;
	sm->fdes_done = false;
}

bool is_object(const struct proc_map *m)
{
	return m->path[0] == '/' || !strcmp(m->path, "[vdso]");
}

/* The process's maps, through io like every file. */
static int read_maps(struct symbolizer *s, struct proc_maps *pm)
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	char buf[16384];
	ssize_t n;
	int fd;

	pm->v = NULL;
	pm->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	fd = io_open(s, path);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len + n <= MAPS_MAX)
		sb_add(&sb, buf, n);
	close(fd);
	if (n != 0) {
		sb_release(&sb);
		return -1;
	}
	proc_maps_parse(sb_detach(&sb), pm);
	return 0;
}

/* Report every mapped object: [low, high) from the mapping of its file
 * offset 0 to the end of the last mapping of the same file after it.
 * Objects already known keep their module (and loaded ELF and symbols).
 *
 * Results handed out must stay valid until the caller asks for a refresh,
 * so objects that went away are only retired here (their results and the
 * names they point to kept) unless `forget` is set; then they are freed
 * and, if anything changed, every cached result with them. */
bool report_maps(struct symbolizer *s, bool forget)
{
	struct proc_maps pm;
	bool changed = false;

	s->last_read_ms = mono_ns() / 1000000;
	if (read_maps(s, &pm) < 0)
		return false;
	for (size_t k = 0; k < s->nmods; k++)
		s->mods[k]->live = false;
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		struct smod *sm = NULL;
		uint64_t high = m->end;
		bool exec = m->perms[2] == 'x';
		void **ud;

		if (!is_object(m) || m->offset != 0)
			continue;
		for (size_t j = i + 1; j < pm.n && !strcmp(pm.v[j].path, m->path) &&
		     pm.v[j].offset != 0; j++) {
			high = pm.v[j].end;
			exec |= pm.v[j].perms[2] == 'x';
		}
		if (!exec)
			continue;	/* data files, fonts, locale archives */
		for (size_t k = 0; k < s->nmods && !sm; k++)
			if (s->mods[k]->mod && s->mods[k]->low == m->start &&
			    s->mods[k]->high == high && !strcmp(s->mods[k]->path, m->path))
				sm = s->mods[k];
		if (!sm) {
			const char *slash;

			sm = xcalloc(1, sizeof(*sm));
			sm->s = s;
			sm->path = xstrdup(m->path);
			slash = strrchr(sm->path, '/');
			sm->base = slash ? slash + 1 : sm->path;
			sm->low = m->start;
			sm->high = high;
			sm->map_start = m->start;
			sm->map_end = m->end;
			ALLOC_GROW(s->mods, s->nmods + 1, s->mods_alloc);
			s->mods[s->nmods++] = sm;
			changed = true;
		}
		sm->live = true;
		sm->mod = dwfl_report_module(s->dwfl, sm->path, sm->low, sm->high);
		if (sm->mod && dwfl_module_info(sm->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
			*ud = sm;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	proc_maps_free(&pm);
	/* Objects not reported again lost their Dwfl_Module (and its ELF
	 * data, which our symbol tables point into) in dwfl_report_end. */
	for (size_t k = 0; k < s->nmods; k++) {
		struct smod *sm = s->mods[k];

		if (sm->live || !sm->mod)
			continue;
		smod_drop(sm);
		changed = true;
	}
	if (!forget || !changed)
		return changed;
	cache_clear(s);
	for (size_t k = 0; k < s->nmods;) {
		if (s->mods[k]->mod) {
			k++;
			continue;
		}
		smod_free(s->mods[k]);
		s->mods[k] = s->mods[--s->nmods];
	}
	return true;
}

struct smod *module_at(struct symbolizer *s, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
	void **ud;

	/* A library loaded since we looked?  Not more often than this, so
	 * that addresses in anonymous (JIT) code cannot make every lookup
	 * read the maps. */
	if (!mod && mono_ns() / 1000000 - s->last_read_ms >= MAPS_REREAD_MS) {
		report_maps(s, false);
		mod = dwfl_addrmodule(s->dwfl, addr);
	}
	if (!mod || !dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		return NULL;
	return *ud;
}

