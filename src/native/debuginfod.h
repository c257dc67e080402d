/* Debug files by build ID from debuginfod servers (DEBUGINFOD_URLS), with
 * elfutils' own client, libdebuginfod, loaded with dlopen when first
 * needed: pystrobe runs without it (a static build cannot link it), and
 * says so when DEBUGINFOD_URLS asks for it.  The client keeps what it
 * fetches in its own cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client) and honours its other variables
 * (DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXSIZE...).
 *
 * A fetch waits on the network for up to its deadline: only the symbol
 * store's loading thread calls it (symstore.h), never a thread that holds
 * a target stopped.  What comes back is a file a server chose: the
 * symbolizer checks its build ID and parses it as it does any debug file.
 */
#ifndef PYSTROBE_DEBUGINFOD_H
#define PYSTROBE_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest one fetch may take, and the most it may download. */
#define DFETCH_MAX_NS (30 * 1000000000ull)
#define DFETCH_MAX_BYTES (1ull << 30)

struct dfetch;

/* Is DEBUGINFOD_URLS set to something? */
bool dfetch_wanted(void);

/* The client, or NULL with the reason in why (libdebuginfod.so.1 not
 * installed). */
struct dfetch *dfetch_open(char *why, size_t len);
void dfetch_close(struct dfetch *d);

/* The debug file of the object with build ID id[0..len): 0 and *path (a
 * new string: the file in the client's cache), or -1 with the reason in
 * why.  Gives up once mono_ns() passes *deadline, which another thread
 * may move (read atomically), or after DFETCH_MAX_BYTES. */
int dfetch_get(struct dfetch *d, const unsigned char *id, int len, const uint64_t *deadline,
	       char **path, char *why, size_t whylen);

#endif
