/* Finding the Python interpreter inside a process: which mapped object holds
 * it, where its _PyRuntime is, which version it is and so which layout to
 * read it with. */
#ifndef PYSTROBE_LOCATE_H
#define PYSTROBE_LOCATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "interp/layout.h"

struct mem;

struct pyinterp {
	pid_t pid;
	char *path;		/* the object holding the interpreter, as the target names it */
	uint64_t runtime;	/* address of _PyRuntime in the target */
	uint64_t bias;		/* load bias of that object */
	char version[32];	/* "3.12.1", or "3.9" when only the minor is known */
	int minor;
	struct py_layout layout;
};

struct elffile;
struct proc_map;
struct proc_maps;

/* Where the mapped objects of a process come from and how their files are
 * opened: a live process's /proc (locate_src_live()), or a core's NT_FILE
 * note (locate_src_core()).  Everything below reads a process through one. */
struct locate_src {
	pid_t pid;		/* the live process, 0 for a core */
	const char *what;	/* "process 1234", for messages */
	const struct proc_maps *maps;
	const char *exe;	/* the executable's path as maps names it, or NULL */
	/* Open the object whose lowest mapping is first; NULL when it
	 * cannot be (missing, or not the build the process had). */
	struct elffile *(*open)(const struct locate_src *src, const struct proc_map *first,
				bool is_exe);
	void *arg;		/* the source's own */
	/* A live process whose mappings could not be read: -ESRCH (no such
	 * process) or proc_maps_read()'s status, which locate_python()
	 * reports; 0 when they were. */
	int unreadable;
};

/* The live process pid, its mappings read now from /proc/PID/maps, its
 * files reached through /proc/PID (map_files, exe, root).  Never fails:
 * where the mappings cannot be read, the functions below say so.
 * locate_src_release() when done. */
void locate_src_live(struct locate_src *src, pid_t pid);
/* The process a core (process/core.h) was taken of, path naming it in
 * messages; its files are the ones core_open() found.  Released with
 * locate_src_release(), before the core is closed. */
struct core;
void locate_src_core(struct locate_src *src, struct core *c, const char *path);
void locate_src_release(struct locate_src *src);

/* Locate the interpreter among src's mapped objects, reading memory
 * through m.  Returns 0 (pyinterp_free() out when done), or
 * status_fail(EXIT_*) with a one-line reason in err (naming src->what)
 * and nothing to free. */
int locate_python(const struct locate_src *src, struct mem *m, struct pyinterp *out,
		  char *err, size_t errlen);
void pyinterp_free(struct pyinterp *pi);

/* Version from the name of a file alone: "libpython3.12.so.1.0" -> 12,
 * "python3.9" -> 9.  -1 when the name says nothing. */
int version_from_filename(const char *path);

/* Read up to max bytes of an ELF section of the target, as mapped, from
 * the interpreter's object or else from one of src's mapped objects whose
 * file name starts with prefix (an extension module: "_asyncio.").  *len
 * gets the bytes read.  0, or a negative errno (-ENOENT: no such section,
 * -ESRCH: src's mappings could not be read). */
int locate_section(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		   const char *prefix, const char *section, void *buf, size_t max, size_t *len);

#endif
