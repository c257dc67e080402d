/* One line of a target's source file, for rules that read the line a
 * thread is on (analysis/waitclass.h's line rules).
 *
 * The file is the target's, so hostile: only a regular file is read (a
 * FIFO or device would hang or never end; it is opened O_NONBLOCK and
 * checked with fstat), at most SRCLINE_MAX_BYTES of it, a line cut at
 * SRCLINE_MAX_LINE bytes.  Files stay cached by path, device, inode,
 * modification time and size, at most SRCLINE_MAX_FILES of them: a file
 * rewritten in place is read again.  A file that cannot be read gives no
 * line, never an error.
 */
#ifndef PYSTROBE_SRCLINE_H
#define PYSTROBE_SRCLINE_H

#include <stddef.h>
#include <sys/stat.h>

#define SRCLINE_MAX_BYTES (4u << 20)
#define SRCLINE_MAX_LINE 512
#define SRCLINE_MAX_FILES 64

struct srcline_cache;

struct srcline_cache *srcline_new(void);
void srcline_free(struct srcline_cache *c);

/* Line `line` (from 1) of path as a process sees it: an absolute path
 * under root ("/proc/PID/root", "" for this process's own view), a
 * relative one under cwd ("/proc/PID/cwd"; NULL: none).  NULL when there
 * is no such file or line.  The string, without its line end, belongs to
 * the cache until the next call. */
const char *srcline_get(struct srcline_cache *c, const char *root, const char *cwd,
			const char *path, int line);

/* The whole of file `full` if it is a regular file of at most max bytes,
 * NUL-terminated (*len without the NUL), its fstat in *st; NULL
 * otherwise.  Never blocks on a FIFO. */
char *srcline_slurp(const char *full, size_t max, struct stat *st, size_t *len);

#endif
