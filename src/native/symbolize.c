/* Code addresses of a process to names, with libdwfl (eu-stack is the
 * model): one Dwfl per process, modules reported from /proc/PID/maps, ELF
 * files found by our own callbacks so that they are the files the process
 * mapped, wherever it lives.
 *
 * Symbol lookup does not use dwfl_module_addrinfo: it scans the whole
 * symbol table on every call (~300 us in libpython) and answers with the
 * nearest preceding symbol even when that symbol ends before the address.
 * Each module's function symbols are sorted once instead, and a symbol
 * counts only if its st_size covers the address.
 */
#include "native/debugdata.h"
#include "native/fderange.h"
#include "native/symbolize.h"
#include "native/symhelper.h"
#include "process/proc.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The vDSO is a page or two; refuse anything that is not. */
#define VDSO_MAX (1u << 20)
#define BUILD_ID_MAX 64
/* Least time between two reads of the maps prompted by unknown addresses. */
#define MAPS_REREAD_MS 200
/* A maps file larger than this is not a process's. */
#define MAPS_MAX (64u << 20)

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

/* --- demangling ------------------------------------------------------- */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* libstdc++ is present wherever C++ code runs, but pystrobe is C and must
 * not need it to start: it is looked up when the first C++ name appears. */
static cxa_demangle_fn get_demangler(void)
{
	static cxa_demangle_fn fn;
	static bool tried;

	if (!tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		tried = true;
		if (h)
			*(void **)&fn = dlsym(h, "__cxa_demangle");
	}
	return fn;
}

char *symbolize_demangle(const char *name)
{
	cxa_demangle_fn fn;
	char *out;
	int status = -1;

	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	fn = get_demangler();
	if (!fn)
		return NULL;
	out = fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* --- finding files ---------------------------------------------------- */

static int io_open(struct symbolizer *s, const char *path)
{
	return s->io.open(s->io.arg, path);
}

/* Open the first of paths that opens; frees them all.  *which gets a copy
 * of the one opened. */
static int open_first(struct symbolizer *s, char **paths, int n, char **which)
{
	int fd = -1;

	for (int i = 0; i < n; i++) {
		if (fd < 0) {
			fd = io_open(s, paths[i]);
			if (fd >= 0 && which)
				*which = xstrdup(paths[i]);
		}
		free(paths[i]);
	}
	return fd;
}

/* The vDSO from the process's memory, through /proc/PID/mem (which is
 * what a helper that may not read the process itself is handed). */
static int vdso_elf(struct smod *sm, Elf **elfp)
{
	size_t len = sm->high - sm->low;
	char path[64];
	void *buf;
	int fd;
	bool ok;

	if (!len || len > VDSO_MAX)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)sm->s->pid);
	fd = io_open(sm->s, path);
	if (fd < 0)
		return -1;
	buf = xmalloc(len);
	ok = pread(fd, buf, len, (off_t)sm->low) == (ssize_t)len;
	close(fd);
	if (!ok) {
		free(buf);
		return -1;
	}
	*elfp = elf_memory(buf, len);
	if (!*elfp) {
		free(buf);
		return -1;
	}
	free(sm->image);
	sm->image = buf;
	return -1;	/* no file descriptor: *elfp is the answer */
}

/* An object whose .gnu_debugdata would make libdwfl unpack more than
 * debugdata.h allows is not given to it: its frames read lib+0xOFFSET. */
static int bounded(int fd)
{
	Elf *elf;
	bool ok;

	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ok = !elf || debugdata_ok(elf);
	elf_end(elf);
	if (ok)
		return fd;
	close(fd);
	return -1;
}

/* libdwfl's find_elf: the very file the process mapped.  map_files reaches
 * it even when deleted, replaced or in another mount namespace; it needs
 * CAP_SYS_ADMIN on older kernels, so /proc/PID/root + path comes next, and
 * the path as we see it last. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct smod *sm = *userdata;
	char *paths[3];
	int fd;

	(void)mod;
	(void)modname;
	(void)base;
	*elfp = NULL;
	if (!sm)
		return -1;
	if (!strcmp(sm->path, "[vdso]"))
		return vdso_elf(sm, elfp);
	paths[0] = xasprintf("/proc/%d/map_files/%llx-%llx", (int)sm->s->pid,
			     (unsigned long long)sm->map_start, (unsigned long long)sm->map_end);
	paths[1] = proc_root_path(sm->s->pid, sm->path);
	paths[2] = xstrdup(sm->path);
	fd = bounded(open_first(sm->s, paths, 3, NULL));
	/* file_name is where libdwfl would look for neighbouring debug
	 * files; keep that inside the process's root. */
	if (fd >= 0)
		*file_name = proc_root_path(sm->s->pid, sm->path);
	return fd;
}

static bool has_build_id(int fd, const unsigned char *id, int len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	bool same = elf && dwelf_elf_gnu_build_id(elf, &got) == len && !memcmp(got, id, len);

	elf_end(elf);
	return same;
}

/* libdwfl refuses a debug file whose build ID is not the module's, but
 * keeps the name we gave it only until it asks again, which it does for
 * every address looked up: refuse such a file here first. */
static int same_build_id(Dwfl_Module *mod, int fd, char **name)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	int len;

	if (fd < 0)
		return fd;
	len = dwfl_module_build_id(mod, &id, &vaddr);
	if (len <= 0 || has_build_id(fd, id, len))
		return fd;
	close(fd);
	free(*name);
	*name = NULL;
	return -1;
}

/* By build ID under /usr/lib/debug, in the process's root first, then
 * ours.  libdwfl checks that the build IDs match. */
static int find_by_build_id(struct smod *sm, Dwfl_Module *mod, char **debuginfo_file_name)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	char hex[2 * BUILD_ID_MAX + 1];
	char *paths[2], *root;
	int len;

	len = dwfl_module_build_id(mod, &id, &vaddr);
	if (len < 2 || len > BUILD_ID_MAX)
		return -1;
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	root = proc_root_path(sm->s->pid, "/usr/lib/debug");
	paths[0] = xasprintf("%s/.build-id/%.2s/%s.debug", root, hex, hex + 2);
	paths[1] = xasprintf("/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	free(root);
	return open_first(sm->s, paths, 2, debuginfo_file_name);
}

/* The CRC-32 .gnu_debuglink records: zlib's, over the whole file. */
static bool crc_matches(int fd, GElf_Word want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, Z_NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	return n == 0 && (GElf_Word)crc == want;
}

/* By .gnu_debuglink: the named file beside the object, in .debug/ beside
 * it, or under /usr/lib/debug + the object's directory, each inside the
 * process's root and then as we see the path (the maps of a chrooted
 * process name files from our root).  Only a file with the CRC the link
 * records counts: a debug file of another build would give wrong names,
 * which is worse than none. */
static int find_by_debuglink(struct smod *sm, const char *link, GElf_Word crc,
			     char **debuginfo_file_name)
{
	const char *slash = strrchr(sm->path, '/');
	int dirlen = slash ? (int)(slash - sm->path) : 0;
	char *rel[3], *path;
	int fd = -1;

	if (!link || !*link || strchr(link, '/') || sm->path[0] != '/')
		return -1;
	rel[0] = xasprintf("%.*s/%s", dirlen, sm->path, link);
	rel[1] = xasprintf("%.*s/.debug/%s", dirlen, sm->path, link);
	rel[2] = xasprintf("/usr/lib/debug%.*s/%s", dirlen, sm->path, link);
	for (int i = 0; i < 6 && fd < 0; i++) {
		/* A link naming the object itself: it has no DWARF. */
		if (i / 2 == 0 && !strcmp(rel[0], sm->path))
			continue;
		path = i % 2 ? xstrdup(rel[i / 2]) : proc_root_path(sm->s->pid, rel[i / 2]);
		fd = io_open(sm->s, path);
		if (fd >= 0 && (!crc_matches(fd, crc) || lseek(fd, 0, SEEK_SET) != 0)) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0) {
			*debuginfo_file_name = path;
			path = NULL;
		}
		free(path);
	}
	for (int i = 0; i < 3; i++)
		free(rel[i]);
	return fd;
}

/* The build ID that path's .gnu_debugaltlink asks of its dwz file, into
 * id[0..max); its length, or -1 when path has no such link. */
static int altlink_build_id(struct symbolizer *s, const char *path, unsigned char *id, int max)
{
	int fd = io_open(s, path), len = -1;
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const char *nul;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugaltlink") != 0)
			continue;
		d = elf_getdata(scn, NULL);
		nul = d ? memchr(d->d_buf, 0, d->d_size) : NULL;
		if (nul) {
			len = (int)(d->d_size - (nul + 1 - (const char *)d->d_buf));
			len = len > 0 && len <= max ? len : -1;
			if (len > 0)
				memcpy(id, nul + 1, len);
		}
		break;
	}
out:
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return len;
}


/* The dwz file that file_name's DWARF refers to (libdwfl asks for it with
 * its name as the link and no CRC): at that name (inside the process's
 * root, then ours; relative to file_name when relative) or by its build
 * ID, and only with that build ID.  -2 when file_name has no such link:
 * then this is not that question. */
static int find_alt(struct smod *sm, const char *file_name, const char *altname,
		    char **debuginfo_file_name)
{
	unsigned char id[BUILD_ID_MAX];
	char hex[2 * BUILD_ID_MAX + 1], *paths[4], *root;
	int len = file_name ? altlink_build_id(sm->s, file_name, id, BUILD_ID_MAX) : -1, fd = -1;

	if (len < 2)
		return -2;
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (altname[0] == '/') {
		paths[0] = proc_root_path(sm->s->pid, altname);
		paths[1] = xstrdup(altname);
	} else {
		const char *slash = strrchr(file_name, '/');

		paths[0] = xasprintf("%.*s/%s", slash ? (int)(slash - file_name) : 1,
				     slash ? file_name : ".", altname);
		paths[1] = xstrdup(paths[0]);
	}
	root = proc_root_path(sm->s->pid, "/usr/lib/debug");
	paths[2] = xasprintf("%s/.build-id/%.2s/%s.debug", root, hex, hex + 2);
	paths[3] = xasprintf("/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	free(root);
	for (int i = 0; i < 4; i++) {
		if (fd < 0) {
			fd = io_open(sm->s, paths[i]);
			if (fd >= 0 && !has_build_id(fd, id, len)) {
				close(fd);
				fd = -1;
			}
			if (fd >= 0) {
				*debuginfo_file_name = paths[i];
				continue;
			}
		}
		free(paths[i]);
	}
	return fd;
}

/* A debug file fetched for the module's build ID (debuginfod.h). */
static int find_fetched(struct smod *sm, Dwfl_Module *mod, char **debuginfo_file_name)
{
	struct symbolizer *s = sm->s;
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr), fd;

	for (size_t i = 0; i < s->nfetched; i++) {
		if (s->fetched[i].len != len || memcmp(s->fetched[i].id, id, len))
			continue;
		fd = io_open(s, s->fetched[i].path);
		if (fd >= 0)
			*debuginfo_file_name = xstrdup(s->fetched[i].path);
		return fd;
	}
	return -1;
}

/* libdwfl's find_debuginfo, for objects without DWARF (or .symtab) of
 * their own, and for the dwz file of a DWARF that has one.  Never
 * debuginfod: a stack dump must not wait on the network. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink,
			  GElf_Word crc, char **debuginfo_file_name)
{
	struct smod *sm = *userdata;
	int fd;

	(void)modname;
	(void)base;
	if (!sm)
		return -1;
	/* Never the module's own debug file for its dwz file. */
	if (debuglink && crc == 0) {
		fd = find_alt(sm, file_name, debuglink, debuginfo_file_name);
		if (fd != -2)
			return fd;
	}
	/* libdwfl asks again after refusing a file (a build ID that does
	 * not match, a corrupt ELF), for every address, and each time
	 * forgets the name it was given: once per module is enough. */
	if (sm->asked == mod)
		return -1;
	sm->asked = mod;
	fd = find_fetched(sm, mod, debuginfo_file_name);
	if (fd < 0)
		fd = find_by_build_id(sm, mod, debuginfo_file_name);
	fd = same_build_id(mod, fd, debuginfo_file_name);
	if (fd < 0)
		fd = find_by_debuglink(sm, debuglink, crc, debuginfo_file_name);
	return same_build_id(mod, fd, debuginfo_file_name);
}

/* --- cache ------------------------------------------------------------ */

static void centry_free(struct centry *e)
{
	free((char *)e->ns.function);
	free((char *)e->ns.file);
	free(e);
}

static void cache_clear(struct symbolizer *s)
{
	for (uint32_t i = 0; i < s->ncache; i++)
		centry_free(s->cache[i]);
	s->ncache = 0;
	hashidx_clear(&s->cache_index);
}

/* --- modules ---------------------------------------------------------- */

static void smod_free(struct smod *sm)
{
	free(sm->fdes);
	free(sm->syms);
	free(sm->image);
	free(sm->path);
	free(sm);
}

/* sm lost its Dwfl_Module, and with it the ELF data its symbols point
 * into; smod_free() comes at the next forgetting report. */
static void smod_drop(struct smod *sm)
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

static bool is_object(const struct proc_map *m)
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
static bool report_maps(struct symbolizer *s, bool forget)
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

static struct smod *module_at(struct symbolizer *s, uint64_t addr)
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

static const char *function_at(struct smod *sm, uint64_t addr)
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
static const char *start_name(struct smod *sm, uint64_t addr)
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
static bool fde_start(struct smod *sm, uint64_t addr, uint64_t *start)
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

/* --- through the helper ------------------------------------------------ */

/* The path of an answer, kept as long as the symbolizer: results point
 * into it. */
static const char *remote_path(struct symbolizer *s, char *path)
{
	for (size_t i = 0; i < s->nrpaths; i++) {
		if (!strcmp(s->rpaths[i], path)) {
			free(path);
			return s->rpaths[i];
		}
	}
	ALLOC_GROW(s->rpaths, s->nrpaths + 1, s->rpaths_alloc);
	s->rpaths[s->nrpaths++] = path;
	return path;
}

static void set_object(struct symbolizer *s, struct native_sym *ns, char *path)
{
	const char *slash;

	ns->path = remote_path(s, path);
	slash = strrchr(ns->path, '/');
	ns->library = slash ? slash + 1 : ns->path;
}

/* One error, counted and said once: from now on lib+0xOFFSET. */
static void helper_lost(struct symbolizer *s, const char *why)
{
	errorf("symbolization helper lost (%s): native frames are named "
	       "library+0xOFFSET from now on", why);
	s->helper_errors++;
	symhelper_stop(s->helper);
	s->helper = NULL;
}

/* Without the helper: the object from the maps, no file parsed, the
 * offset from its first mapping (the link-time address for shared
 * objects and PIEs, which start at 0). */
static void resolve_by_maps(struct symbolizer *s, struct native_sym *ns, bool exact)
{
	uint64_t addr = exact ? ns->pc : ns->pc - 1;
	const struct proc_maps *pm = &s->rmaps;

	if (!s->rmaps_read)
		s->rmaps_read = proc_maps_read(s->pid, &s->rmaps) == 0;
	for (size_t i = 0; i < pm->n; i++) {
		if (addr < pm->v[i].start || addr >= pm->v[i].end || !is_object(&pm->v[i]))
			continue;
		for (size_t j = i + 1; j-- > 0;) {
			if (strcmp(pm->v[j].path, pm->v[i].path) || pm->v[j].offset != 0)
				continue;
			set_object(s, ns, xstrdup(pm->v[i].path));
			ns->offset = ns->pc - pm->v[j].start;
			return;
		}
	}
}

static void resolve_remote(struct symbolizer *s, struct native_sym *ns, bool exact)
{
	struct symhelper_answer a;
	char err[128];

	if (s->helper && symhelper_lookup(s->helper, ns->pc, exact, &a, err, sizeof(err)) < 0)
		helper_lost(s, err);
	if (!s->helper) {
		resolve_by_maps(s, ns, exact);
		return;
	}
	if (a.path)
		set_object(s, ns, a.path);
	ns->offset = a.offset;
	ns->function = a.function;
	ns->file = a.file;
	ns->line = a.file ? a.line : 0;
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

unsigned symbolizer_errors(const struct symbolizer *s)
{
	return s->helper_errors;
}

pid_t symbolizer_helper_pid(const struct symbolizer *s)
{
	return s->helper ? symhelper_pid(s->helper) : 0;
}

void symbolizer_check(struct symbolizer *s)
{
	if (s->helper && !symhelper_alive(s->helper))
		helper_lost(s, "it exited");
}

static bool refresh_remote(struct symbolizer *s)
{
	char err[128];
	int rc = 1;

	if (s->helper && (rc = symhelper_refresh(s->helper, err, sizeof(err))) < 0)
		helper_lost(s, err);
	if (!s->helper) {
		proc_maps_free(&s->rmaps);
		s->rmaps_read = false;
		rc = 1;
	}
	if (rc)
		cache_clear(s);
	return rc;
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
