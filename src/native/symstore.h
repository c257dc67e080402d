/* Symbols shared by every process of a recording, loaded off the sampling
 * path.
 *
 * A recording of a process tree (record -s --native) meets the same files
 * in many processes: a DataLoader's workers are forks of the main process
 * and map libtorch at the same place.  Each object file is one entry here,
 * keyed by its GNU build ID, read from the target's memory (the note in
 * its first pages), and its size (a stripped copy keeps the ID, not the
 * symbols), or, for a file without one, by its identity on disk (device,
 * inode, size, mtime).  The first process whose sample needs an
 * entry becomes its owner: its symbolizer (symbolize.h, with its helper
 * for a foreign root) loads the file once, in a background thread, and
 * answers for every process that maps the same file, at that file's
 * offset.  Answers are kept per entry, by offset, up to a bound.
 *
 * A lookup never waits for a load: until the entry is ready, the answer
 * is provisional (function NULL, "library+0xOFFSET"), and the caller asks
 * again later (symview_lookup()'s *ready) to rename the frame.  Nothing
 * here runs while the target is stopped: views read the maps at open and
 * refresh, the build IDs when a new object shows, both before a pause.
 *
 * Not thread-safe per view: one sampling thread uses a view.  The store
 * itself (entries, answers, the owners' symbolizers) is guarded.
 */
#ifndef PYSTROBE_SYMSTORE_H
#define PYSTROBE_SYMSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "native/symbolize.h"

struct symview;

/* The view of one process; flags: SYMBOLIZE_*.  The first view makes the
 * store (and its thread), the last one closed ends it.  Never NULL. */
struct symview *symview_open(pid_t pid, unsigned flags);
void symview_close(struct symview *v);

/* Read the maps again (libraries loaded or unloaded), and refresh the
 * view's symbolizers when no load holds them (which notices a lost
 * helper: the files it answered for are then named from the maps alone).
 * True when something changed: earlier answers may be stale, ask again. */
bool symview_refresh(struct symview *v);

/* symview_refresh() when the maps are known not to have changed (the
 * unwinder read them): only whether a helper was lost, without asking it
 * to read the maps again (a round trip that costs a torch process in a
 * container more than a round: bench/README, "scale").  True as above. */
bool symview_check(struct symview *v);

/* What is at pc (exact: as symbolize()).  *ready false: a provisional
 * answer (the object's load is pending or its owner busy): ask again
 * later.  *obj (when obj is not NULL): the object the answer is about,
 * to compare with a later answer's (the maps may have changed between).
 * The strings stay valid until the next lookup on the view. */
struct native_sym symview_lookup(struct symview *v, uint64_t pc, bool exact, bool *ready,
				 const void **obj);

/* Load the object the process maps as path now, in this thread, or wait
 * for its load: the interpreter's own, whose names decide how stacks
 * merge.  It gets an owner of its own, which no other load keeps busy, so
 * that later lookups in it may wait.  Call before pausing.  false when
 * the process maps no such object. */
bool symview_load_object(struct symview *v, const char *path);

/* Wait until every load asked for so far is done, and from then on make
 * the view's lookups wait for their answers rather than answer
 * provisionally: at the end, so that no frame keeps a provisional name. */
void symview_finish_loading(struct symview *v);

/* 1 once the view's own symbolization helper was lost, else 0. */
unsigned symview_errors(const struct symview *v);

/* Counters of the store, for tests and measurements. */
struct symstore_stats {
	unsigned long files;		/* entries (distinct files met) */
	unsigned long loads;		/* files loaded (by an owner's symbolizer) */
	unsigned long shared;		/* views' modules that found their entry made */
	unsigned long answers;		/* answers kept */
	unsigned long provisional;	/* lookups answered provisionally */
	unsigned long by_id;		/* entries keyed by build ID */
};
void symstore_get_stats(struct symstore_stats *st);

/* The GNU build ID of the ELF object whose first page is mapped at low
 * in pid, read from its memory, into id[0..max); its length, or -1. */
int symstore_build_id(pid_t pid, uint64_t low, unsigned char *id, int max);

#endif
