/* Source lines of a target's Python files, as a traceback shows them.
 *
 * Files are read through /proc/PID/root (relative names through
 * /proc/PID/cwd), so a process in a container or chroot shows its own
 * files.  A file whose modification time is later than the process's
 * start is marked: the line on disk may not be the line that runs.
 * Bounded: files over SOURCE_MAX_BYTES are not read, lines are cut at
 * SOURCE_MAX_LINE bytes (ending in "…"), at most SOURCE_MAX_FILES files
 * per process.  Call after the threads are released: it reads files, not
 * memory, and can take a while.
 */
#ifndef PYSTROBE_SOURCE_H
#define PYSTROBE_SOURCE_H

#include <stdbool.h>
#include <sys/types.h>

#define SOURCE_MAX_BYTES (8u << 20)
#define SOURCE_MAX_LINE 512
#define SOURCE_MAX_FILES 1024

struct source_cache;

struct source_cache *source_open(pid_t pid);
/* The same for a core: absolute paths under root (NULL: "/"), marked
 * changed when modified after since_ns (the core's time: a core does not
 * record when its process started). */
struct source_cache *source_open_root(const char *root, unsigned long long since_ns);
void source_close(struct source_cache *sc);

/* Line `line` (from 1) of `path`, stripped of surrounding whitespace as
 * traceback does; NULL when there is no such file or line.  *changed says
 * the file was modified after the process started.  The string belongs to
 * the cache. */
const char *source_line(struct source_cache *sc, const char *path, int line, bool *changed);

/* The start of a process in nanoseconds since the epoch (from its
 * starttime and the boot time), 0 when unknown. */
unsigned long long proc_start_ns(pid_t pid);

#endif
