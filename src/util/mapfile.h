/* A file's bytes, to read once: mapped when it is big, else read.
 *
 * `pystrobe group` reads thousands of dumps of a few hundred KB; copying
 * each into a buffer with read() was a fifth of its time (bench/README),
 * mapping it costs the page tables only.  A mapped file that shrinks
 * while it is read (a shell loop writing it again) would fault past its
 * new end with SIGBUS: mapfile's handler puts zeros there instead, which
 * a reader refuses, and mapfile_shrank() says so.  One file mapped at a
 * time, by one thread.
 *
 *	struct mapfile mf = MAPFILE_INIT;	(its buffer kept for the next)
 *	if (mapfile_load(&mf, fd) < 0) ...	-errno
 *	parse(mf.text, mf.len);
 *	if (mapfile_shrank(&mf)) ... what was read is not the file
 *	mapfile_unload(&mf);
 *	...
 *	mapfile_release(&mf);
 */
#ifndef PYSTROBE_MAPFILE_H
#define PYSTROBE_MAPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* Regular files of this many bytes or more are mapped: under it a copy
 * costs less than mapping and unmapping. */
#define MAPFILE_FROM (64u << 10)

struct mapfile {
	const char *text;
	size_t len;
	void *map;		/* the mapping, NULL when read into buf */
	struct strbuf buf;
};
#define MAPFILE_INIT { NULL, 0, NULL, STRBUF_INIT }

/* At most max bytes of fd (a reader told more refuses on its own: ask
 * one more than it takes); 0 or -errno. */
int mapfile_load(struct mapfile *mf, int fd, size_t max);
bool mapfile_shrank(const struct mapfile *mf);
void mapfile_unload(struct mapfile *mf);
void mapfile_release(struct mapfile *mf);

#endif
