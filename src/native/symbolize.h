/* Names for code addresses of a process: function (demangled), object and
 * offset in it, source file and line, through libdwfl.
 *
 * Objects are opened the way the process sees them (/proc/PID/map_files,
 * then /proc/PID/root + path), the vDSO is read from the process's memory,
 * and separate debug files are looked up by build ID in /usr/lib/debug of
 * the process's root, then ours, and by .gnu_debuglink (beside the object,
 * in .debug/ there, under /usr/lib/debug + its directory), only when the
 * file's CRC is the one the link records, and among the files handed to
 * symbolizer_add_debug().  The symbolizer never asks debuginfod itself.
 *
 * A name is given only when a symbol's extent covers the address: the
 * nearest exported symbol before a static function is not its name.  The
 * symbols are .symtab's, else the debug file's, else .dynsym's with those
 * of .gnu_debugdata (MiniDebugInfo, bounded: debugdata.h).  An address no
 * symbol covers is put to the function that holds it by the FDE of its
 * unwind tables (.eh_frame, .debug_frame): named by a symbol starting
 * there if one does (an exported entry point without a size), else the
 * frame reads "lib.so+0xSTART", the function's start in the object's own
 * (link-time) terms, what addr2line -e lib.so wants, so that all its
 * samples add to one frame.
 *
 * Results are cached per address.  A result stays valid until
 * symbolizer_refresh() or symbolizer_free().
 */
#ifndef PYSTROBE_SYMBOLIZE_H
#define PYSTROBE_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

enum {
	SYMBOLIZE_LINES = 1,	/* also source file:line (loads DWARF: slower first time) */
	SYMBOLIZE_DEBUGINFOD = 2,	/* the symbol store may fetch debug files
					 * (symstore.h); the symbolizer never does */
};

struct native_sym {
	uint64_t pc;
	const char *function;	/* demangled; NULL when no symbol covers pc */
	const char *path;	/* the object as the target names it; NULL if none */
	const char *library;	/* its base name ("libc.so.6", "[vdso]") */
	uint64_t offset;	/* pc in the object's link-time addresses; when
				 * function is NULL, the start of the function
				 * holding pc where its FDE tells it */
	const char *file;	/* source file, NULL when unknown */
	int line;		/* 0 when unknown */
};

/* flags: SYMBOLIZE_*.  Never NULL. */
struct symbolizer *symbolizer_new(pid_t pid, unsigned flags);
void symbolizer_free(struct symbolizer *s);

/* What is at pc.  exact: pc is the instruction being executed (innermost
 * frame, signal frames) rather than a return address, which is looked up
 * as pc - 1 so that a call at the very end of a function is not taken for
 * the next one.  Valid until symbolizer_refresh() or symbolizer_free(). */
const struct native_sym *symbolize(struct symbolizer *s, uint64_t pc, bool exact);

/* Would a debug file name more of the object mapped at addr?  It has no
 * .symtab and no debug file was found for it (nor can be: false for a
 * process whose files the helper parses). */
bool symbolizer_wants_debug(struct symbolizer *s, uint64_t addr);

/* path is the debug file of the objects with build ID id[0..len) (one
 * fetched: debuginfod.h): they are read again, with it, when next looked
 * up, and every result is forgotten, as by a refresh that changed
 * something.  Its build ID is checked like any debug file's. */
void symbolizer_add_debug(struct symbolizer *s, const unsigned char *id, int len,
			  const char *path);

/* Read the target's mappings again (libraries loaded or unloaded since);
 * forgets cached results if anything changed, and says so.  Unknown addresses make the
 * symbolizer look at the maps by itself (at most every 200 ms), but only
 * this notices an unloaded library's range reused by another. */
bool symbolizer_refresh(struct symbolizer *s);

/* What symbolizer_refresh() notices of a lost helper, without reading the
 * maps: the refresh for when they did not change (see symview_check()). */
void symbolizer_check(struct symbolizer *s);

/* As root, a process whose root is not ours has its files parsed by an
 * unprivileged helper process (symhelper.h); if that fails or dies, frames
 * are named library+0xOFFSET from the maps alone, and this counts it (0 or
 * 1), the reason said once on stderr. */
unsigned symbolizer_errors(const struct symbolizer *s);
/* The helper's pid while one runs, else 0. */
pid_t symbolizer_helper_pid(const struct symbolizer *s);

/* Where a symbolizer gets its bytes: every file it reads is opened by
 * open(arg, path), the process's "/proc/PID/maps" and "/proc/PID/mem" (for
 * the vDSO) included, as a read-only file descriptor or -1.  The fuzz
 * harness hands it crafted files; symbolizer_new() opens paths itself. */
struct symbolize_io {
	int (*open)(void *arg, const char *path);
	void *arg;
};
struct symbolizer *symbolizer_new_io(pid_t pid, unsigned flags, const struct symbolize_io *io);

/* open(2) of a regular file (or /proc's), read-only, that never waits (a
 * FIFO where a library should be is refused); fd or -1. */
int symbolize_open_file(const char *path);

/* "name" for C++ symbols demangled by libstdc++'s __cxa_demangle, loaded
 * with dlopen on first need (pystrobe does not link it); a new string, or
 * NULL when name is not mangled or cannot be demangled. */
char *symbolize_demangle(const char *name);

#endif
