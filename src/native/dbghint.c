#include "native/dbghint.h"
#include "native/symstore.h"
#include "process/elffile.h"
#include "process/proc.h"
#include "util/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID_MAX 64

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *dbg_package(const char *base, char *buf, size_t len)
{
	const char *v = NULL;
	size_t n = 0;

	/* Debian ships the interpreter's and libpython's debug files in the
	 * debug interpreter's package. */
	if (!strncmp(base, "python3.", 8))
		v = base + 8;
	else if (!strncmp(base, "libpython3.", 11))
		v = base + 11;
	if (v) {
		while (isdigit((unsigned char)v[n]))
			n++;
		if (!n)
			return NULL;
		snprintf(buf, len, "python3.%.*s-dbg", (int)n, v);
		return buf;
	}
	if (!strncmp(base, "libc.so.", 8))
		return "libc6-dbg";
	return NULL;
}

/* The start of lib's mapping of its first page, and its path there. */
static bool find_mapping(pid_t pid, const char *lib, uint64_t *low, char **path)
{
	struct proc_maps maps = { 0 };
	bool found = false;

	if (proc_maps_read(pid, &maps) < 0)
		return false;
	for (size_t i = 0; i < maps.n && !found; i++) {
		const struct proc_map *m = &maps.v[i];

		if (m->offset || !m->path[0] ||
		    (strcmp(m->path, lib) && strcmp(base_name(m->path), lib)))
			continue;
		*low = m->start;
		*path = xstrdup(m->path);
		found = true;
	}
	proc_maps_free(&maps);
	return found;
}

/* Whether the file has a symbol table, which names its static functions:
 * then an unnamed frame is no matter of debug files. */
static bool has_symtab(pid_t pid, const char *path)
{
	char *file = proc_root_path(pid, path);
	struct elffile *ef = elffile_open(file);
	uint64_t addr, size;
	bool yes = ef && elffile_section(ef, ".symtab", &addr, &size) == 0;

	elffile_close(ef);
	free(file);
	return yes;
}

/* "/usr/lib/debug/.build-id/57/1d98....debug", and whether it is there,
 * in pid's root or ours (where the symbolizer looks). */
static bool debug_file(pid_t pid, const unsigned char *id, int n, char *rel, size_t len)
{
	char hex[2 * ID_MAX + 1], *in_root;
	bool there;

	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(rel, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	in_root = proc_root_path(pid, rel);
	there = access(in_root, F_OK) == 0 || access(rel, F_OK) == 0;
	free(in_root);
	return there;
}

bool dbg_hint(pid_t pid, const char *lib, char *buf, size_t len)
{
	unsigned char id[ID_MAX];
	char rel[2 * ID_MAX + 64], pkg[64], install[128];
	const char *base, *package;
	uint64_t low;
	char *path = NULL;
	int n;

	if (!find_mapping(pid, lib, &low, &path) || has_symtab(pid, path)) {
		free(path);
		return false;
	}
	base = base_name(path);
	package = dbg_package(base, pkg, sizeof(pkg));
	if (package)
		snprintf(install, sizeof(install), "Debian, Ubuntu: apt install %s, of %s's version",
			 package, base);
	else
		snprintf(install, sizeof(install), "its distribution's debug-symbols package: "
			 "-dbgsym, -dbg or -debuginfo");
	n = symstore_build_id(pid, low, id, ID_MAX);
	if (n > 0 && debug_file(pid, id, n, rel, sizeof(rel))) {
		free(path);
		return false;
	}
	if (n > 0)
		snprintf(buf, len, "note: %s has no symbols, so its frames read %s+0xOFFSET: its "
			 "debug file %s would name them (%s)", path, base, rel, install);
	else
		snprintf(buf, len, "note: %s has no symbols, so its frames read %s+0xOFFSET: its "
			 "debug symbols would name them (%s)", path, base, install);
	free(path);
	return true;
}
