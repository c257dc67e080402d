/* What the files of the symbol store share (symstore.h): the store and
 * its entries, one per file, with their answers (symstore.c), the loading
 * thread and its jobs (symstore_loader.c), and the views of processes that
 * look addresses up in it (symstore_view.c).
 *
 * Locks: the store's mutex guards entries, answers, the queue and owner
 * reference counts, and is held only for short bookkeeping.  Each owner's
 * mutex guards its symbolizer, which libdwfl does not let two threads use;
 * a load holds it for as long as the file takes (seconds for libtorch), so
 * the sampling thread only ever try-locks it, and answers provisionally
 * when it is busy.  Lock order: an owner's, then the store's.
 */
#ifndef PYSTROBE_SYMSTORE_INT_H
#define PYSTROBE_SYMSTORE_INT_H

#include "native/symstore.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dfetch;
struct proc_map;

#define BUILD_ID_MAX 64
/* Answers kept in the store, all files together: beyond it, answers are
 * looked up each time (nsample keeps its own per-process result anyway). */
#define ANSWERS_MAX (1u << 18)

/* A symbolizer of one process, which loads files for the whole store. */
struct owner {
	pid_t pid;
	unsigned flags;
	struct symbolizer *sym;	/* a view's: made with it; the interpreter's
				 * own: by its load */
	bool reniced;		/* its helper set to the loading thread's nice */
	pthread_mutex_t lock;
	int refs;		/* views and entries; under the store's lock */
};

struct key {
	int idlen;		/* > 0: by build ID alone */
	unsigned char id[BUILD_ID_MAX];
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	pid_t pid;		/* neither: this process's mapping alone */
	uint64_t low;
};

enum { F_NEW, F_LOADING, F_READY };
/* Its debug file from debuginfod: not wanted; wanted once a frame of it
 * has no name (one whose frames all have, as exported functions do, is
 * not worth a fetch); on its way; asked. */
enum { FETCH_NONE, FETCH_WANTED, FETCH_QUEUED, FETCH_DONE };

struct answer {
	uint64_t key;		/* offset << 1 | exact */
	bool pending;		/* asked of the loading thread, not answered yet */
	const char *function, *file;
	uint64_t offset;	/* link-time */
	int line;
};

struct sfile {
	struct key key;
	int state;
	struct owner *owner;	/* once not F_NEW */
	uint64_t owner_low;	/* where the owner maps it */
	char *owner_base;	/* and the base name it maps it by */
	uint64_t probe;		/* an offset to look up first: loads the file */
	bool probe_exact;
	bool sync;		/* the interpreter's: its owner is never busy long */
	bool lost;		/* its owner's helper was lost: names from the maps */
	int fetch;		/* FETCH_* */
	struct answer *ans;
	uint32_t nans, ans_alloc;
	struct hashidx ans_index;
};

struct store {
	pthread_mutex_t lock;
	pthread_cond_t wake, loaded;
	pthread_t thread;
	bool quit;
	int views;
	struct sfile **files;
	size_t nfiles, files_alloc;
	struct hashidx file_index;
	/* Work for the loading thread: a file to load (key LOAD_FILE), or an
	 * answer to find in a loaded one; taken from head on. */
	struct job *queue;
	size_t head, nqueue, queue_alloc;
	unsigned long answers;
	int jobs;		/* queued or under way */
	/* debuginfod: the client (made by the first fetch, in the loading
	 * thread), when the fetches must end (read by the fetch under way:
	 * moved up once the views finish loading), and what they did, for the
	 * summary. */
	struct dfetch *df;
	bool df_tried;
	char df_why[256];
	uint64_t fetch_end, fetch_deadline;
	struct strbuf fetched, failed;
};

/* Job keys beyond any answer's (offset << 1 | exact). */
#define LOAD_FILE UINT64_MAX
#define FETCH_FILE (UINT64_MAX - 1)

struct job {
	struct sfile *f;
	uint64_t key;
};

/* An object mapped in a view's process. */
struct vmod {
	uint64_t low, high;
	char *path;		/* as this process names it */
	const char *base;	/* inside path */
	struct sfile *file;
};

struct symview {
	pid_t pid;
	unsigned flags;
	struct owner *owner;	/* this process's symbolizer */
	struct owner *own_interp;	/* a second one, for the interpreter's file */
	struct vmod *mods;	/* sorted by low */
	size_t nmods, mods_alloc;
	uint64_t maps_ns;
	char *scratch[2];	/* an answer not kept in the store */
	/* Time the sampling thread spent in lookups (PYSTROBE_SYMSTATS=1
	 * prints it at the end), in the interpreter's load, and at the end
	 * (settling, then lookups that wait). */
	uint64_t n, total_ns, max_ns, load_ns, finish_ns;
	bool final;		/* finished loading: lookups wait rather than answer provisionally */
};

extern pthread_mutex_t store_lock;	/* guards store itself: made, ended */
extern struct store *store;
extern struct symstore_stats stats;

/* symstore.c */
void make_key(pid_t pid, const struct proc_map *m, struct key *k);
struct owner *owner_new(pid_t pid, unsigned flags);
struct owner *owner_put(struct owner *o);
void owner_free(struct owner *o);
struct sfile *find_file(const struct key *k);
const struct answer *find_answer(const struct sfile *f, uint64_t key);
const struct answer *keep_answer(struct sfile *f, uint64_t key, const struct native_sym *ns);
void keep_pending(struct sfile *f, uint64_t key);
void drop_answers(struct sfile *f);
bool answer_fits(const struct sfile *f, const struct native_sym *ns);
void store_make(void);
void store_end(void);

/* symstore_loader.c */
int start_loader(void);
void load_file(struct sfile *f);
void push_job(struct sfile *f, uint64_t key);

#endif
