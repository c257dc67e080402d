/* What the files of the symbolizer share: the symbolizer and its objects
 * (symbolize.c: the cache, lookups and the API), finding the files the
 * process mapped and their debug files (symbolize_files.c), the objects
 * reported from the maps (symbolize_modules.c), their function symbols
 * (symbolize_symbols.c), and names through the helper or from the maps
 * alone (symbolize_remote.c).
 */
#ifndef PYSTROBE_SYMBOLIZE_INT_H
#define PYSTROBE_SYMBOLIZE_INT_H

#include "native/symbolize.h"
#include "process/proc.h"
#include "util/hashidx.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fderange;
struct symhelper;

#define BUILD_ID_MAX 64

struct fsym {
	uint64_t start, end;	/* end == start: a symbol without a size */
	const char *name;	/* owned by the module's ELF data */
	int rank;		/* which of several names at one address wins */
};

/* One object mapped into the process. */
struct smod {
	struct symbolizer *s;
	char *path;		/* as the target names it */
	const char *base;	/* base name, inside path */
	uint64_t low, high;	/* from the mapping of its first page to its last */
	uint64_t map_start, map_end;	/* its first mapping, for map_files */
	Dwfl_Module *mod;
	Dwfl_Module *asked;	/* find_debuginfo already answered for it */
	void *image;		/* the vDSO's bytes, which its Elf points into */
	bool syms_done;
	struct fsym *syms;	/* sorted by start */
	size_t nsyms;
	bool fdes_done;
	struct fderange *fdes;	/* its functions' ranges, by FDE */
	size_t nfdes;
	bool live;		/* reported in the latest refresh */
};

struct centry {
	struct native_sym ns;
	uint64_t key;
};

/* A debug file given by symbolizer_add_debug(). */
struct fetched {
	unsigned char id[BUILD_ID_MAX];
	int len;
	char *path;
};

struct symbolizer {
	pid_t pid;
	unsigned flags;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	struct symbolize_io io;
	struct smod **mods;
	size_t nmods, mods_alloc;
	/* Cache of results, found by pc << 1 | exact.  Each entry is
	 * allocated alone: the results handed out point into them and must
	 * not move when the array grows. */
	struct centry **cache;
	uint32_t ncache, cache_alloc;
	struct hashidx cache_index;
	uint64_t last_read_ms;	/* when the maps were last read */
	struct fetched *fetched;
	size_t nfetched, fetched_alloc;

	/* A foreign root's files are parsed by the helper (symhelper.h);
	 * when it is wanted but gone, frames are named from the maps. */
	bool remote;
	struct symhelper *helper;
	unsigned helper_errors;
	char **rpaths;		/* the objects named in its answers, owned */
	size_t nrpaths, rpaths_alloc;
	struct proc_maps rmaps;	/* without it: the maps, read here */
	bool rmaps_read;
};

/* symbolize.c */
void cache_clear(struct symbolizer *s);

/* symbolize_files.c: libdwfl's find_elf and find_debuginfo */
int io_open(struct symbolizer *s, const char *path);
int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
	     char **file_name, Elf **elfp);
int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		   const char *file_name, const char *debuglink, GElf_Word crc,
		   char **debuginfo_file_name);

/* symbolize_modules.c */
void smod_free(struct smod *sm);
void smod_drop(struct smod *sm);
bool is_object(const struct proc_map *m);
bool report_maps(struct symbolizer *s, bool forget);
struct smod *module_at(struct symbolizer *s, uint64_t addr);

/* symbolize_symbols.c */
const char *function_at(struct smod *sm, uint64_t addr);
const char *start_name(struct smod *sm, uint64_t addr);
bool fde_start(struct smod *sm, uint64_t addr, uint64_t *start);

/* symbolize_remote.c */
void resolve_remote(struct symbolizer *s, struct native_sym *ns, bool exact);
bool refresh_remote(struct symbolizer *s);

#endif
