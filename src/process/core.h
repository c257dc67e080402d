/* Reading a core file as if it were the process that wrote it.
 *
 * Memory comes from the core's PT_LOAD segments where the core holds it,
 * and from the files its NT_FILE note names where it does not (kernel cores
 * leave out unmodified file mappings: the text and read-only data of the
 * executable and libpython).  A file is only read after its GNU build ID
 * matches the one in the core's own copy of the file's first page: a file
 * changed since the crash is reported, never read in silence.  Threads and
 * their registers come from NT_PRSTATUS, the signal from NT_SIGINFO.
 *
 * The core is hostile input: every count and length in it is bounded, and
 * it is read with pread on demand, never whole (a 2 GiB core opens in
 * milliseconds).
 */
#ifndef PYSTROBE_CORE_H
#define PYSTROBE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/proc.h"

#define CORE_MAX_SEGMENTS (1 << 20)
#define CORE_MAX_THREADS 65536
#define CORE_MAX_FILES (1 << 20)
#define CORE_MAX_NOTES (64u << 20)	/* bytes of PT_NOTE read, in all */

struct core;
struct mem;

struct core_thread {
	pid_t tid;
	int signo;		/* pr_cursig: the signal it stopped with, or 0 */
	uint64_t regs[27];	/* struct user_regs_struct, x86-64 */
};

struct core_info {
	pid_t pid;
	char fname[17];		/* the command's name (comm) */
	char psargs[81];	/* its arguments, as the kernel keeps them (cut at 80) */
	/* The fatal signal and its thread (0 when the core was not written
	 * by one: gcore of a live process). */
	int signo, code;
	pid_t crash_tid;
	bool have_addr;		/* addr is meaningful (SIGSEGV, SIGBUS, SIGILL, SIGFPE) */
	uint64_t addr;
};

/* Open a core; files are looked up under root (NULL: "/"), the executable
 * at exe when given.  Returns 0, or status_fail(EXIT_BAD_CORE) with one
 * line in err. */
int core_open(const char *path, const char *root, const char *exe, struct core **out,
	      char *err, size_t errlen);
void core_close(struct core *c);

/* The process's memory.  It belongs to the core: mem_close() on it does
 * nothing, core_close() frees it. */
struct mem *core_mem(struct core *c);

/* The file mappings (NT_FILE), as proc_maps_read() gives a live process's. */
const struct proc_maps *core_maps(const struct core *c);

/* The same as the text of /proc/PID/maps (a new string). */
char *core_maps_text(const struct core *c);

/* Open what a reader of a live process would open for the core's process
 * (pid from the core): "/proc/PID/maps" (the text above),
 * "/proc/PID/root/FILE" and plain paths (a mapped file only if it is the
 * build the process had; others under the root); -1 for the rest. */
int core_open_path(struct core *c, const char *path);

/* The executable's path as the process named it, or NULL. */
const char *core_exe(const struct core *c);

/* Where to open the mapped file `path` on this machine: under the root,
 * or the --executable for the executable.  NULL when it is missing or is
 * not the build the process had (a note says so). */
const char *core_host_path(struct core *c, const char *path);

int core_threads(const struct core *c, const struct core_thread **threads);
const struct core_info *core_info(const struct core *c);

/* What could not be read as it should, one line each (truncation, files
 * missing or changed, a file read without a build ID to check), for the
 * caller to show.  core_incomplete(): one of them means something is
 * missing (not only unchecked). */
int core_notes(const struct core *c, const char *const **notes);
bool core_incomplete(const struct core *c);

/* "SIGSEGV"..., or NULL for a number with no name. */
const char *core_signal_name(int signo);

#endif
