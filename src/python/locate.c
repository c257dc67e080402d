#include "python/locate.h"
#include "process/core.h"
#include "process/elffile.h"
#include "process/mem.h"
#include "process/proc.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int version_from_filename(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *p;
	int minor;

	base = base ? base + 1 : path;
	p = strstr(base, "python3.");
	if (!p)
		return -1;
	if (sscanf(p + 8, "%d", &minor) != 1 || minor < 0 || minor > 99)
		return -1;
	return minor;
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static int is_file_mapping(const struct proc_map *m)
{
	return m->path[0] == '/';
}

/* The lowest mapping of the object at path (where file offset 0 lives). */
static const struct proc_map *first_mapping(const struct proc_maps *maps, const char *path)
{
	const struct proc_map *best = NULL;

	for (size_t i = 0; i < maps->n; i++) {
		if (strcmp(maps->v[i].path, path) != 0)
			continue;
		if (!best || maps->v[i].offset < best->offset)
			best = &maps->v[i];
	}
	return best;
}

/* Open the file behind a mapping.  /proc/PID/map_files and /proc/PID/exe
 * reach the very file the process mapped, even if it was replaced, deleted,
 * or lives in another mount namespace; /proc/PID/root + path is the fallback
 * (map_files needs privileges on older kernels), and the path as we see it
 * the last resort (a chroot sharing our mount namespace shows host paths). */
static struct elffile *open_live(const struct locate_src *src, const struct proc_map *c,
				 bool is_exe)
{
	struct elffile *ef;
	pid_t pid = src->pid;
	char *paths[4];
	int n = 0;

	paths[n++] = xasprintf("/proc/%d/map_files/%llx-%llx", (int)pid,
			       (unsigned long long)c->start, (unsigned long long)c->end);
	if (is_exe)
		paths[n++] = xasprintf("/proc/%d/exe", (int)pid);
	paths[n++] = proc_root_path(pid, c->path);
	paths[n++] = xstrdup(c->path);
	ef = NULL;
	for (int i = 0; i < n; i++) {
		if (!ef)
			ef = elffile_open(paths[i]);
		free(paths[i]);
	}
	return ef;
}

/* Read a version string like "3.9.18 (main, ...)" into pi->version. */
static int parse_version(const char *s, struct pyinterp *pi)
{
	int major, minor, micro;

	if (sscanf(s, "%d.%d.%d", &major, &minor, &micro) != 3 || major != 3)
		return -1;
	if (minor < 0 || minor > 99 || micro < 0 || micro > 999)
		return -1;
	pi->minor = minor;
	snprintf(pi->version, sizeof(pi->version), "3.%d.%d", minor, micro);
	return 0;
}

static void version_from_hex(uint64_t hex, struct pyinterp *pi)
{
	static const char *const level[] = { "a", "b", "rc" };
	unsigned minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff;
	unsigned lvl = (hex >> 4) & 0xf, serial = hex & 0xf;

	pi->minor = (int)minor;
	if (lvl >= 0xa && lvl <= 0xc)
		snprintf(pi->version, sizeof(pi->version), "3.%u.%u%s%u", minor, micro,
			 level[lvl - 0xa], serial);
	else
		snprintf(pi->version, sizeof(pi->version), "3.%u.%u", minor, micro);
}

/* The version, most trustworthy source first: _Py_DebugOffsets (3.13+),
 * Py_Version (3.11+), the string Py_GetVersion() keeps (older), the file
 * name.  Each later source only fills in what the earlier ones could not. */
static int find_version(struct mem *m, struct elffile *ef, struct pyinterp *pi)
{
	struct debug_offsets_info info;
	uint64_t addr;
	uint32_t hex;
	char buf[64];
	int minor;

	if (debug_offsets_probe(m, pi->runtime, &info) == 0 && (info.version_hex >> 24) == 3) {
		version_from_hex(info.version_hex, pi);
		return 0;
	}
	if (elffile_symbol(ef, "Py_Version", &addr, NULL) == 0 &&
	    mem_read_u32(m, addr + pi->bias, &hex) == 0 && (hex >> 24) == 3) {
		version_from_hex(hex, pi);
		return 0;
	}
	if (elffile_symbol(ef, "version.0", &addr, NULL) == 0 ||
	    elffile_symbol(ef, "version", &addr, NULL) == 0) {
		if (mem_read_cstr(m, addr + pi->bias, buf, sizeof(buf)) == 0 &&
		    parse_version(buf, pi) == 0)
			return 0;
	}
	minor = version_from_filename(pi->path);
	if (minor < 0)
		return -1;
	pi->minor = minor;
	snprintf(pi->version, sizeof(pi->version), "3.%d", minor);
	return 0;
}

/* Does the object at c hold an interpreter?  Fills pi on success. */
static int try_candidate(const struct locate_src *src, struct mem *m, const struct proc_map *c,
			 bool is_exe, struct pyinterp *pi)
{
	struct elffile *ef = src->open(src, c, is_exe);
	uint64_t addr;
	int rc = -1;

	if (!ef)
		return -1;
	if (elffile_symbol(ef, "_PyRuntime", &addr, NULL) != 0 &&
	    elffile_section(ef, ".PyRuntime", &addr, NULL) != 0)
		goto out;
	if (elffile_load_bias(ef, c->start, c->offset, &pi->bias) != 0)
		goto out;
	pi->runtime = addr + pi->bias;
	pi->path = xstrdup(c->path);
	if (find_version(m, ef, pi) != 0) {
		/* An interpreter, but of no version we can tell. */
		pi->minor = -1;
		snprintf(pi->version, sizeof(pi->version), "unknown");
	}
	rc = 0;
out:
	elffile_close(ef);
	return rc;
}

static int exe_path_in_maps(pid_t pid, const struct proc_maps *maps, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* The link may carry " (deleted)"; maps names the same file. */
	for (size_t i = 0; i < maps->n; i++)
		if (strcmp(maps->v[i].path, buf) == 0)
			return 0;
	return -1;
}

void locate_src_live(struct locate_src *src, pid_t pid)
{
	struct proc_maps *maps = xcalloc(1, sizeof(*maps));
	char exe[4096];

	memset(src, 0, sizeof(*src));
	src->pid = pid;
	src->what = xasprintf("process %d", (int)pid);
	src->maps = maps;
	src->open = open_live;
	if (proc_check(pid) < 0)
		src->unreadable = -ESRCH;
	else
		src->unreadable = proc_maps_read(pid, maps);
	if (!src->unreadable && exe_path_in_maps(pid, maps, exe, sizeof(exe)) == 0)
		src->exe = xstrdup(exe);
}

static struct elffile *open_core_file(const struct locate_src *src, const struct proc_map *first,
				      bool is_exe)
{
	const char *host = core_host_path(src->arg, first->path);

	(void)is_exe;	/* core.c knows it, from the entry point */
	return host ? elffile_open(host) : NULL;
}

void locate_src_core(struct locate_src *src, struct core *c, const char *path)
{
	memset(src, 0, sizeof(*src));
	src->what = xasprintf("the process of core %s", path);
	src->maps = core_maps(c);
	src->exe = core_exe(c);
	src->open = open_core_file;
	src->arg = c;
}

void locate_src_release(struct locate_src *src)
{
	if (src->pid) {
		/* A live source's mappings and executable are its own. */
		proc_maps_free((struct proc_maps *)src->maps);
		free((struct proc_maps *)src->maps);
		free((char *)src->exe);
	}
	free((char *)src->what);
	memset(src, 0, sizeof(*src));
}

/* Try candidates in order: a mapped libpython, the executable, then any
 * other mapped object (an embedder linking Python statically). */
static int find_interpreter(const struct locate_src *src, struct mem *m, struct pyinterp *pi)
{
	const struct proc_maps *maps = src->maps;

	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < maps->n; i++) {
			const struct proc_map *mp = &maps->v[i];
			bool is_exe = src->exe && strcmp(mp->path, src->exe) == 0;
			bool is_lib = strncmp(basename_of(mp->path), "libpython3", 10) == 0;

			if (!is_file_mapping(mp))
				continue;
			if ((pass == 0 && !is_lib) || (pass == 1 && !is_exe) ||
			    (pass == 2 && (is_lib || is_exe)))
				continue;
			if (first_mapping(maps, mp->path) != mp)
				continue;	/* each object once, at its first mapping */
			if (try_candidate(src, m, mp, is_exe, pi) == 0)
				return 0;
		}
	}
	return -1;
}

/* Nothing with a _PyRuntime: an old Python (3.6 and before have none), a
 * process that is exiting, or not Python at all. */
static int no_interpreter(const struct locate_src *src, char *err, size_t errlen)
{
	const struct proc_maps *maps = src->maps;

	for (size_t i = 0; i < maps->n; i++) {
		const char *base = basename_of(maps->v[i].path);
		int minor = version_from_filename(base);

		const char *two = strstr(base, "python2.");
		int minor2;

		if (two && (two == base || !strncmp(base, "libpython2.", 11)) &&
		    sscanf(two + 8, "%d", &minor2) == 1) {
			snprintf(err, errlen, "unsupported Python version 2.%d in %s "
				 "(pystrobe reads 3.%d to 3.%d)", minor2, src->what,
				 LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR);
			return status_fail(EXIT_UNSUPPORTED);
		}
		if (minor >= 0 && minor < LAYOUT_MIN_MINOR &&
		    (!strncmp(base, "python3.", 8) || !strncmp(base, "libpython3.", 11))) {
			snprintf(err, errlen, "unsupported Python version 3.%d in %s "
				 "(pystrobe reads 3.%d to 3.%d)", minor, src->what,
				 LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR);
			return status_fail(EXIT_UNSUPPORTED);
		}
	}
	if (src->pid && proc_exiting(src->pid)) {
		snprintf(err, errlen, "%s has exited", src->what);
		return status_fail(EXIT_EXITED);
	}
	snprintf(err, errlen, "%s is not a Python process (no CPython interpreter found in its mappings)",
		 src->what);
	return status_fail(EXIT_NOT_PYTHON);
}

/* The layout of pi's version: from the tables in interp/, or for 3.13+ from
 * the _Py_DebugOffsets the interpreter publishes. */
static int choose_layout(const struct locate_src *src, struct mem *m, struct pyinterp *pi,
			 char *err, size_t errlen)
{
	if (pi->minor < 0) {
		snprintf(err, errlen, "cannot tell the Python version of %s (%s)",
			 src->what, pi->path);
		return status_fail(EXIT_UNSUPPORTED);
	}
	if (pi->minor >= 13)
		return debug_offsets_layout(m, pi->runtime, &pi->layout, err, errlen);
	if (pi->minor < LAYOUT_MIN_MINOR || !layout_for_minor(pi->minor)) {
		snprintf(err, errlen, "unsupported Python version %s (pystrobe reads 3.%d to 3.%d)",
			 pi->version, LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR);
		return status_fail(EXIT_UNSUPPORTED);
	}
	pi->layout = *layout_for_minor(pi->minor);
	return 0;
}

/* A live process whose mappings tell nothing: gone, forbidden, or
 * (nothing mapped) exiting or never Python. */
static int live_unreadable(const struct locate_src *src, char *err, size_t errlen)
{
	pid_t pid = src->pid;
	int rc = src->unreadable;

	if (rc == -ESRCH) {
		snprintf(err, errlen, "no such process: %d (%s)", (int)pid, NO_PROCESS_HINT);
		return status_fail(EXIT_NO_PROCESS);
	}
	if (is_fail(rc, EXIT_PERMISSION)) {
		permission_message(pid, err, errlen);
		return rc;
	}
	if (rc < 0) {
		snprintf(err, errlen, "process %d exited", (int)pid);
		return status_fail(EXIT_EXITED);
	}
	/* A process that has exited but not been reaped maps nothing. */
	if (proc_exiting(pid)) {
		snprintf(err, errlen, "process %d has exited", (int)pid);
		return status_fail(EXIT_EXITED);
	}
	snprintf(err, errlen, "process %d is not a Python process (no memory mappings)", (int)pid);
	return status_fail(EXIT_NOT_PYTHON);
}

int locate_python(const struct locate_src *src, struct mem *m, struct pyinterp *pi,
		  char *err, size_t errlen)
{
	int rc;

	memset(pi, 0, sizeof(*pi));
	if (src->pid && (src->unreadable < 0 || !src->maps->n))
		return live_unreadable(src, err, errlen);
	pi->pid = src->pid;
	if (find_interpreter(src, m, pi) < 0)
		return no_interpreter(src, err, errlen);
	/* An interpreter found, but no layout for it (or a 3.13+ process
	 * whose debug offsets cannot be read yet, starting or exiting): the
	 * caller gets nothing to free. */
	rc = choose_layout(src, m, pi, err, errlen);
	if (rc < 0)
		pyinterp_free(pi);
	return rc;
}

void pyinterp_free(struct pyinterp *pi)
{
	free(pi->path);
	pi->path = NULL;
}

/* Read the section from the object at mp into buf; its size in *len. */
static int read_section_of(const struct locate_src *src, struct mem *m, const struct proc_map *mp,
			   bool is_exe, const char *section, void *buf, size_t max, size_t *len)
{
	struct elffile *ef = src->open(src, mp, is_exe);
	uint64_t addr, size, bias;
	int rc = -ENOENT;

	if (!ef)
		return -ENOENT;
	if (elffile_section(ef, section, &addr, &size) != 0 ||
	    elffile_load_bias(ef, mp->start, mp->offset, &bias) != 0)
		goto out;
	*len = size < max ? size : max;
	rc = mem_read(m, addr + bias, buf, *len);
out:
	elffile_close(ef);
	return rc;
}

int locate_section(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		   const char *prefix, const char *section, void *buf, size_t max, size_t *len)
{
	const struct proc_maps *maps = src->maps;
	int rc = -ENOENT;

	if (src->unreadable < 0)
		return -ESRCH;

	/* The interpreter's own object first (a built-in module), then
	 * extension modules by name, each at its first mapping. */
	for (int pass = 0; pass < 2 && rc < 0; pass++) {
		for (size_t i = 0; i < maps->n && rc < 0; i++) {
			const struct proc_map *mp = &maps->v[i];
			bool mine = strcmp(mp->path, pi->path) == 0;

			if (!is_file_mapping(mp) || first_mapping(maps, mp->path) != mp)
				continue;
			if (pass == 0 ? !mine
				      : mine || strncmp(basename_of(mp->path), prefix, strlen(prefix)))
				continue;
			rc = read_section_of(src, m, mp, pass == 0, section, buf, max, len);
		}
	}
	return rc;
}
