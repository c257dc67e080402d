/* The files a symbolizer reads, through its io: the very objects the
 * process mapped (its vDSO from its memory) and their debug files, by
 * build ID, .gnu_debuglink, dwz link, or handed over (fetched): libdwfl's
 * find_elf and find_debuginfo.
 */
#include "native/debugdata.h"
#include "native/symbolize_int.h"
#include "process/proc.h"
#include "util/util.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* The vDSO is a page or two; refuse anything that is not. */
#define VDSO_MAX (1u << 20)

/* --- finding files ---------------------------------------------------- */

int io_open(struct symbolizer *s, const char *path)
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
int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
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
int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
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

