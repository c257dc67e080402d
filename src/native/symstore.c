/* Symbols shared by build ID, loaded in a background thread; see
 * symstore.h.
 *
 * Locks: the store's mutex guards entries, answers, the queue and owner
 * reference counts, and is held only for short bookkeeping.  Each owner's
 * mutex guards its symbolizer, which libdwfl does not let two threads use;
 * a load holds it for as long as the file takes (seconds for libtorch), so
 * the sampling thread only ever try-locks it, and answers provisionally
 * when it is busy.  Lock order: an owner's, then the store's.
 */
#include "native/debuginfod.h"
#include "native/symstore.h"
#include "process/proc.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define BUILD_ID_MAX 64
/* Answers kept in the store, all files together: beyond it, answers are
 * looked up each time (nsample keeps its own per-process result anyway). */
#define ANSWERS_MAX (1u << 18)
/* Least time between two reads of the maps prompted by unknown addresses. */
#define MAPS_REREAD_NS 200000000ull
#define PHDRS_MAX 128
#define NOTES_MAX 8192
/* The loading thread's nice: below the sampling thread, not so far below
 * that a busy machine starves it (at 19, loads took seconds under a load
 * of 7 on 2 CPUs, and the end of a recording waits for them). */
#define LOADER_NICE 10

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
	 * moved up once the views settle), and what they did, for the
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
	uint64_t n, total_ns, max_ns, load_ns, settle_ns;
	bool final;		/* settled: lookups wait rather than answer provisionally */
};

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct store *store;
static struct symstore_stats stats;

/* --- build IDs, from the target's memory ------------------------------------ */

static bool peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* The NT_GNU_BUILD_ID note among notes[0..len). */
static int note_build_id(const unsigned char *notes, size_t len, unsigned char *id, int max)
{
	size_t at = 0;

	while (at + sizeof(Elf64_Nhdr) <= len) {
		Elf64_Nhdr nh;
		size_t name, desc;

		memcpy(&nh, notes + at, sizeof(nh));
		name = (nh.n_namesz + 3u) & ~3u;
		desc = (nh.n_descsz + 3u) & ~3u;
		at += sizeof(nh);
		if (name > len - at || desc > len - at - name)
			return -1;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(notes + at, "GNU", 4) && nh.n_descsz >= 2 && (int)nh.n_descsz <= max) {
			memcpy(id, notes + at + name, nh.n_descsz);
			return (int)nh.n_descsz;
		}
		at += name + desc;
	}
	return -1;
}

int symstore_build_id(pid_t pid, uint64_t low, unsigned char *id, int max)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PHDRS_MAX];
	unsigned char notes[NOTES_MAX];
	uint64_t bias = 0;
	bool have_bias = false;
	int n;

	if (!peek(pid, low, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > PHDRS_MAX || eh.e_phoff > 65536)
		return -1;
	n = eh.e_phnum;
	if (!peek(pid, low + eh.e_phoff, ph, n * sizeof(*ph)))
		return -1;
	/* The segment holding file offset 0 is mapped at low. */
	for (int i = 0; i < n && !have_bias; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			bias = low - (ph[i].p_vaddr & ~0xfffull);
			have_bias = true;
		}
	}
	for (int i = 0; i < n && have_bias; i++) {
		size_t len = ph[i].p_filesz < NOTES_MAX ? ph[i].p_filesz : NOTES_MAX;
		int got;

		if (ph[i].p_type != PT_NOTE || !len || !peek(pid, bias + ph[i].p_vaddr, notes, len))
			continue;
		got = note_build_id(notes, len, id, max);
		if (got > 0)
			return got;
	}
	return -1;
}

/* --- keys --------------------------------------------------------------------- */

/* How a file is known: its build ID (and size), else what stat says of
 * the very file mapped (map_files, then the path inside the process's
 * root), else only as this mapping of this process. */
static void make_key(pid_t pid, const struct proc_map *m, struct key *k)
{
	struct stat st;
	char *path;
	int rc;

	memset(k, 0, sizeof(*k));
	path = xasprintf("/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)m->start,
			 (unsigned long long)m->end);
	rc = stat(path, &st);
	free(path);
	if (rc != 0) {
		path = proc_root_path(pid, m->path);
		rc = stat(path, &st);
		free(path);
	}
	rc = rc == 0 && S_ISREG(st.st_mode) ? 0 : -1;
	k->idlen = symstore_build_id(pid, m->start, k->id, BUILD_ID_MAX);
	if (k->idlen > 0) {
		/* A stripped copy keeps the build ID of the file it was
		 * stripped from, not its symbols: the size tells them apart. */
		k->size = rc == 0 ? st.st_size : 0;
		return;
	}
	k->idlen = 0;
	if (rc == 0) {
		k->dev = st.st_dev;
		k->ino = st.st_ino;
		k->size = st.st_size;
		k->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		return;
	}
	k->pid = pid;
	k->low = m->start;
}

static uint32_t key_hash(const struct key *k)
{
	if (k->idlen > 0)
		return hash_bytes(hash_bytes(1, k->id, k->idlen), &k->size, sizeof(k->size));
	return hash_bytes(2, &k->dev, offsetof(struct key, low) + sizeof(k->low) -
				      offsetof(struct key, dev));
}

static bool key_eq(const struct key *a, const struct key *b)
{
	if (a->idlen != b->idlen)
		return false;
	if (a->idlen > 0)
		return !memcmp(a->id, b->id, a->idlen) && a->size == b->size;
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->pid == b->pid && a->low == b->low;
}

/* --- owners ------------------------------------------------------------------- */

static struct owner *owner_new(pid_t pid, unsigned flags)
{
	struct owner *o = xcalloc(1, sizeof(*o));

	o->pid = pid;
	o->flags = flags;
	pthread_mutex_init(&o->lock, NULL);
	o->refs = 1;
	return o;
}

/* Under the store's lock; the symbolizer (and its helper) ends outside. */
static struct owner *owner_put(struct owner *o)
{
	return o && --o->refs == 0 ? o : NULL;
}

static void owner_free(struct owner *o)
{
	if (!o)
		return;
	symbolizer_free(o->sym);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* --- entries and answers ------------------------------------------------------- */

static struct sfile *find_file(const struct key *k)
{
	uint32_t h = key_hash(k), id;
	struct hashidx_pos pos;
	struct sfile *f;

	for (id = hashidx_first(&store->file_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&store->file_index, &pos)) {
		if (key_eq(&store->files[id]->key, k)) {
			stats.shared++;
			return store->files[id];
		}
	}
	f = xcalloc(1, sizeof(*f));
	f->key = *k;
	ALLOC_GROW(store->files, store->nfiles + 1, store->files_alloc);
	store->files[store->nfiles] = f;
	hashidx_add(&store->file_index, h, (uint32_t)store->nfiles++);
	stats.files++;
	stats.by_id += k->idlen > 0;
	return f;
}

static const struct answer *find_answer(const struct sfile *f, uint64_t key)
{
	struct hashidx_pos pos;
	uint32_t id;

	for (id = hashidx_first(&f->ans_index, hash_u64(key), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&f->ans_index, &pos))
		if (f->ans[id].key == key)
			return &f->ans[id];
	return NULL;
}

static void push_job(struct sfile *f, uint64_t key);

/* Keep a answer of the owner's symbolizer (under the store's lock): the
 * first without a name sends for the file's debug file, if wanted. */
static const struct answer *keep_answer(struct sfile *f, uint64_t key, const struct native_sym *ns)
{
	struct answer *a = (struct answer *)find_answer(f, key);

	if (a && !a->pending)
		return a;
	if (!a && store->answers >= ANSWERS_MAX)
		return NULL;
	if (!a) {
		ALLOC_GROW(f->ans, f->nans + 1, f->ans_alloc);
		a = &f->ans[f->nans];
		hashidx_add(&f->ans_index, hash_u64(key), f->nans++);
		store->answers++;
		stats.answers++;
	}
	a->key = key;
	a->pending = false;
	a->function = ns->function ? xstrdup(ns->function) : NULL;
	a->file = ns->file ? xstrdup(ns->file) : NULL;
	a->line = ns->line;
	a->offset = ns->offset;
	if (!a->function && ns->library && f->fetch == FETCH_WANTED) {
		f->fetch = FETCH_QUEUED;
		push_job(f, FETCH_FILE);
	}
	return a;
}

/* A placeholder for an answer asked of the loading thread. */
static void keep_pending(struct sfile *f, uint64_t key)
{
	struct answer *a;

	ALLOC_GROW(f->ans, f->nans + 1, f->ans_alloc);
	a = &f->ans[f->nans];
	memset(a, 0, sizeof(*a));
	a->key = key;
	a->pending = true;
	hashidx_add(&f->ans_index, hash_u64(key), f->nans++);
	store->answers++;
	stats.answers++;
}

static void file_free(struct sfile *f)
{
	for (uint32_t i = 0; i < f->nans; i++) {
		free((char *)f->ans[i].function);
		free((char *)f->ans[i].file);
	}
	free(f->ans);
	hashidx_release(&f->ans_index);
	free(f->owner_base);
	free(f);
}

/* Forget f's answers (under the store's lock): its debug file came. */
static void drop_answers(struct sfile *f)
{
	for (uint32_t i = 0; i < f->nans; i++) {
		free((char *)f->ans[i].function);
		free((char *)f->ans[i].file);
	}
	store->answers -= f->nans;
	f->nans = 0;
	hashidx_clear(&f->ans_index);
}

/* Is ns an answer about f?  An owner that has unmapped the file (or whose
 * maps were stale) answers about something else, or nothing. */
static bool answer_fits(const struct sfile *f, const struct native_sym *ns)
{
	return ns->library && !strcmp(ns->library, f->owner_base);
}

/* --- loading ----------------------------------------------------------------- */

/* Look up f's probe in its owner's symbolizer, which loads the file: with
 * the owner's lock held, outside the store's. */
/* Under o's lock, in the loading thread: its helper (which parses for
 * it, and which the sampling thread started) at this thread's nice. */
static void renice_helper(struct owner *o)
{
	pid_t pid = o->sym ? symbolizer_helper_pid(o->sym) : 0;

	if (o->reniced || !pid)
		return;
	setpriority(PRIO_PROCESS, (id_t)pid, LOADER_NICE);
	o->reniced = true;
}

/* Under f's owner's lock, its file loaded: should its debug file be
 * fetched?  One with a build ID that has neither a symbol table nor a
 * debug file found, when the view asked for debuginfod and
 * DEBUGINFOD_URLS names servers. */
static bool wants_fetch(const struct sfile *f)
{
	const struct owner *o = f->owner;

	return (o->flags & SYMBOLIZE_DEBUGINFOD) && f->key.idlen > 0 && !f->lost &&
	       dfetch_wanted() && symbolizer_wants_debug(o->sym, f->owner_low);
}

static void load_file(struct sfile *f)
{
	struct owner *o = f->owner;
	const struct native_sym *ns;
	bool fetch;

	pthread_mutex_lock(&o->lock);
	if (!f->sync)
		renice_helper(o);
	/* Libraries loaded since the owner last read its maps. */
	if (!o->sym)
		o->sym = symbolizer_new(o->pid, o->flags);
	else
		symbolizer_refresh(o->sym);
	ns = symbolize(o->sym, f->owner_low + f->probe, f->probe_exact);
	fetch = wants_fetch(f);
	pthread_mutex_lock(&store->lock);
	if (fetch)
		f->fetch = FETCH_WANTED;
	if (answer_fits(f, ns))
		keep_answer(f, f->probe << 1 | f->probe_exact, ns);
	f->state = F_READY;
	stats.loads++;
	pthread_cond_broadcast(&store->loaded);
	pthread_mutex_unlock(&store->lock);
	pthread_mutex_unlock(&o->lock);
}

/* Answer a lookup the sampling thread left to this thread: the first in
 * a part of a file (a DWARF unit) may load its line table. */
static void answer_job(struct sfile *f, uint64_t key)
{
	static const struct native_sym none;
	struct owner *o = f->owner;
	const struct native_sym *ns;

	pthread_mutex_lock(&o->lock);
	renice_helper(o);
	ns = symbolize(o->sym, f->owner_low + (key >> 1), key & 1);
	pthread_mutex_lock(&store->lock);
	/* Nothing to say about it: final all the same, without a name. */
	keep_answer(f, key, answer_fits(f, ns) ? ns : &none);
	pthread_mutex_unlock(&store->lock);
	pthread_mutex_unlock(&o->lock);
}

/* One fetch's outcome into the summary's lists. */
static void note_fetch(struct strbuf *sb, const char *base, const char *why)
{
	sb_printf(sb, "%s%s", sb->len ? ", " : "", base);
	if (why)
		sb_printf(sb, " (%s)", why);
}

/* The loading thread's part of a fetch, without any lock: the file, or
 * -1 and why not. */
static int fetch_path(struct sfile *f, char **path, char *why, size_t len)
{
	uint64_t now = mono_ns(), end;

	*path = NULL;
	if (!store->df_tried) {
		store->df_tried = true;
		store->df = dfetch_open(store->df_why, sizeof(store->df_why));
	}
	if (!store->df) {
		snprintf(why, len, "%s", store->df_why);
		return -1;
	}
	end = __atomic_load_n(&store->fetch_end, __ATOMIC_RELAXED);
	if (now >= end) {
		snprintf(why, len, "the recording ended before its turn");
		return -1;
	}
	__atomic_store_n(&store->fetch_deadline,
			 now + DFETCH_MAX_NS < end ? now + DFETCH_MAX_NS : end, __ATOMIC_RELAXED);
	return dfetch_get(store->df, f->key.id, f->key.idlen, &store->fetch_deadline, path, why,
			  len);
}

/* Fetch f's debug file from debuginfod and hand it to its owner, which
 * loads it here: then f's answers are asked again, and its frames that
 * were addresses get their names (provisional until now: lookup()). */
static void fetch_job(struct sfile *f)
{
	struct owner *o = f->owner;
	char why[256], *path;
	bool named = false;
	int rc = fetch_path(f, &path, why, sizeof(why));

	pthread_mutex_lock(&o->lock);
	if (rc == 0) {
		symbolizer_add_debug(o->sym, f->key.id, f->key.idlen, path);
		symbolize(o->sym, f->owner_low + f->probe, f->probe_exact);
		named = !symbolizer_wants_debug(o->sym, f->owner_low);
		if (!named)
			snprintf(why, sizeof(why), "the file it sent is not its debug file");
	}
	pthread_mutex_lock(&store->lock);
	if (named) {
		drop_answers(f);
		note_fetch(&store->fetched, f->owner_base, NULL);
	} else {
		note_fetch(&store->failed, f->owner_base, why);
	}
	f->fetch = FETCH_DONE;
	pthread_mutex_unlock(&store->lock);
	pthread_mutex_unlock(&o->lock);
	free(path);
}

/* Jobs run in order, but a fetch goes first: it waits on the network,
 * not the CPU, and it names frames, where the answers queued before it
 * (line tables) only add lines. */
static void push_job(struct sfile *f, uint64_t key)
{
	struct job j = { f, key };

	if (store->head == store->nqueue)
		store->head = store->nqueue = 0;
	ALLOC_GROW(store->queue, store->nqueue + 1, store->queue_alloc);
	if (key == FETCH_FILE && store->head > 0) {
		store->queue[--store->head] = j;
	} else if (key == FETCH_FILE) {
		memmove(store->queue + 1, store->queue, store->nqueue * sizeof(*store->queue));
		store->queue[0] = j;
		store->nqueue++;
	} else {
		store->queue[store->nqueue++] = j;
	}
	store->jobs++;
	pthread_cond_signal(&store->wake);
}

static void *loader(void *arg)
{
	(void)arg;
	/* Loads may wait; the sampling thread and the target may not.  Nice
	 * is per thread on Linux; the helpers that parse a foreign root's
	 * files for this thread get it too (renice_helper()). */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), LOADER_NICE);
	pthread_mutex_lock(&store->lock);
	for (;;) {
		struct job j;

		while (!store->quit && store->head == store->nqueue)
			pthread_cond_wait(&store->wake, &store->lock);
		if (store->quit)
			break;
		j = store->queue[store->head++];
		pthread_mutex_unlock(&store->lock);
		if (j.key == LOAD_FILE)
			load_file(j.f);
		else if (j.key == FETCH_FILE)
			fetch_job(j.f);
		else
			answer_job(j.f, j.key);
		pthread_mutex_lock(&store->lock);
		store->jobs--;
		pthread_cond_broadcast(&store->loaded);
	}
	pthread_mutex_unlock(&store->lock);
	return NULL;
}

/* Claim f for owner o, which maps it as m, under the store's lock. */
static void claim(struct sfile *f, struct owner *o, const struct vmod *m, uint64_t off, bool exact)
{
	f->state = F_LOADING;
	f->owner = o;
	o->refs++;
	f->owner_low = m->low;
	f->owner_base = xstrdup(m->base);
	f->probe = off;
	f->probe_exact = exact;
}

/* --- the store ---------------------------------------------------------------- */

/* Start the loader with the signals a handler of pystrobe takes blocked:
 * they are the sampling thread's.  A stop signal (Ctrl-Z) taken here
 * while that thread holds the target stopped would stop pystrobe with the
 * target held (process/selfstop.h).  A fault stays the thread's own. */
static int start_loader(void)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	sigset_t set, old;
	int rc;

	sigfillset(&set);
	for (size_t i = 0; i < sizeof(faults) / sizeof(*faults); i++)
		sigdelset(&set, faults[i]);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rc = pthread_create(&store->thread, NULL, loader, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void store_make(void)
{
	store = xcalloc(1, sizeof(*store));
	memset(&stats, 0, sizeof(stats));
	pthread_mutex_init(&store->lock, NULL);
	pthread_cond_init(&store->wake, NULL);
	pthread_cond_init(&store->loaded, NULL);
	store->fetch_end = store->fetch_deadline = UINT64_MAX;
	if (start_loader() != 0) {
		errorf("symbols: cannot start the loading thread: %s", strerror(errno));
		exit(EXIT_ERROR);
	}
}

/* The summary's line of what debuginfod gave. */
static void say_fetches(void)
{
	if (store->fetched.len)
		errorf("debuginfod: fetched the debug files of %s", store->fetched.buf);
	if (store->failed.len)
		errorf("debuginfod: no debug file for %s: their functions without symbols read "
		       "library+0xSTART", store->failed.buf);
	sb_release(&store->fetched);
	sb_release(&store->failed);
}

static void store_end(void)
{
	pthread_mutex_lock(&store->lock);
	store->quit = true;
	/* A fetch under way now has no frame left to name (settling waited
	 * for those that had): it ends at its next progress call. */
	__atomic_store_n(&store->fetch_end, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&store->fetch_deadline, 0, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&store->wake);
	pthread_mutex_unlock(&store->lock);
	pthread_join(store->thread, NULL);
	say_fetches();
	dfetch_close(store->df);
	for (size_t i = 0; i < store->nfiles; i++) {
		owner_free(owner_put(store->files[i]->owner));
		file_free(store->files[i]);
	}
	free(store->files);
	free(store->queue);
	hashidx_release(&store->file_index);
	pthread_cond_destroy(&store->wake);
	pthread_cond_destroy(&store->loaded);
	pthread_mutex_destroy(&store->lock);
	free(store);
	store = NULL;
}

void symstore_get_stats(struct symstore_stats *st)
{
	pthread_mutex_lock(&store_lock);
	if (store)
		pthread_mutex_lock(&store->lock);
	*st = stats;
	if (store)
		pthread_mutex_unlock(&store->lock);
	pthread_mutex_unlock(&store_lock);
}

/* --- views -------------------------------------------------------------------- */

static bool is_code(const struct proc_maps *pm, size_t i, uint64_t *high)
{
	const struct proc_map *m = &pm->v[i];
	bool exec = m->perms[2] == 'x';

	if ((m->path[0] != '/' && strcmp(m->path, "[vdso]")) || m->offset != 0)
		return false;
	*high = m->end;
	for (size_t j = i + 1; j < pm->n && !strcmp(pm->v[j].path, m->path) &&
	     pm->v[j].offset != 0; j++) {
		*high = pm->v[j].end;
		exec |= pm->v[j].perms[2] == 'x';
	}
	return exec;
}

/* The view's module at [m->start, high) as it was, if it still is. */
static struct sfile *known(const struct symview *v, const struct proc_map *m, uint64_t high)
{
	for (size_t k = 0; k < v->nmods; k++)
		if (v->mods[k].low == m->start && v->mods[k].high == high &&
		    !strcmp(v->mods[k].path, m->path))
			return v->mods[k].file;
	return NULL;
}

static void free_mods(struct symview *v)
{
	for (size_t k = 0; k < v->nmods; k++)
		free(v->mods[k].path);
	free(v->mods);
}

/* Read the maps into the view's modules; build IDs only of new ones. */
static bool read_view(struct symview *v)
{
	struct proc_maps pm;
	struct vmod *mods = NULL;
	size_t n = 0, alloc = 0;
	bool changed;

	v->maps_ns = mono_ns();
	if (proc_maps_read(v->pid, &pm) < 0)
		return false;
	for (size_t i = 0; i < pm.n; i++) {
		uint64_t high;
		struct sfile *f;
		const char *slash;
		struct key k;

		if (!is_code(&pm, i, &high))
			continue;
		f = known(v, &pm.v[i], high);
		if (!f) {
			make_key(v->pid, &pm.v[i], &k);
			pthread_mutex_lock(&store->lock);
			f = find_file(&k);
			pthread_mutex_unlock(&store->lock);
		}
		ALLOC_GROW(mods, n + 1, alloc);
		mods[n] = (struct vmod){ pm.v[i].start, high, xstrdup(pm.v[i].path), NULL, f };
		slash = strrchr(mods[n].path, '/');
		mods[n].base = slash ? slash + 1 : mods[n].path;
		n++;
	}
	proc_maps_free(&pm);
	changed = n != v->nmods;
	for (size_t k = 0; k < n && !changed; k++)
		changed = mods[k].low != v->mods[k].low || mods[k].file != v->mods[k].file;
	free_mods(v);
	v->mods = mods;
	v->nmods = n;
	v->mods_alloc = alloc;
	return changed;
}

struct symview *symview_open(pid_t pid, unsigned flags)
{
	struct symview *v = xcalloc(1, sizeof(*v));

	pthread_mutex_lock(&store_lock);
	if (!store)
		store_make();
	store->views++;
	pthread_mutex_unlock(&store_lock);
	v->pid = pid;
	v->flags = flags;
	v->owner = owner_new(pid, flags);
	/* Made now, in this thread, as before the store: its helper is the
	 * process's first, and dies with this thread's process rather than
	 * with the loading thread (PR_SET_PDEATHSIG is per thread). */
	v->owner->sym = symbolizer_new(pid, flags);
	read_view(v);
	return v;
}

void symview_close(struct symview *v)
{
	struct owner *a, *b;

	if (!v)
		return;
	if (getenv("PYSTROBE_SYMSTATS"))
		fprintf(stderr, "symstats: process lookups %llu, total %.1f ms, longest %.1f ms; "
			"interpreter's load %.1f ms, at the end %.1f ms\n",
			(unsigned long long)v->n, v->total_ns / 1e6, v->max_ns / 1e6,
			v->load_ns / 1e6, v->settle_ns / 1e6);
	pthread_mutex_lock(&store_lock);
	pthread_mutex_lock(&store->lock);
	a = owner_put(v->owner);
	b = owner_put(v->own_interp);
	pthread_mutex_unlock(&store->lock);
	owner_free(a);
	owner_free(b);
	if (--store->views == 0) {
		if (getenv("PYSTROBE_SYMSTATS"))
			fprintf(stderr, "symstats: store: %lu files (%lu by build ID), %lu loads, "
				"%lu modules shared, %lu answers, %lu provisional\n",
				stats.files, stats.by_id, stats.loads, stats.shared,
				stats.answers, stats.provisional);
		store_end();
	}
	pthread_mutex_unlock(&store_lock);
	free_mods(v);
	free(v->scratch[0]);
	free(v->scratch[1]);
	free(v);
}

/* Refresh an owner's symbolizer if no load holds it, as before the
 * store: this is also how a lost helper is noticed.  When it is, the
 * answers of its files are dropped (what a helper said may be what broke
 * it), and from then on their frames are library+0xOFFSET, as
 * symbolize.h promises; true then. */
static bool refresh_owner(struct owner *o, bool maps)
{
	bool lost;

	if (!o || !o->sym || pthread_mutex_trylock(&o->lock) != 0)
		return false;
	lost = symbolizer_errors(o->sym) != 0;
	if (maps)
		symbolizer_refresh(o->sym);
	else
		symbolizer_check(o->sym);
	lost = !lost && symbolizer_errors(o->sym) != 0;
	pthread_mutex_unlock(&o->lock);
	if (!lost)
		return false;
	pthread_mutex_lock(&store->lock);
	for (size_t i = 0; i < store->nfiles; i++)
		if (store->files[i]->owner == o)
			store->files[i]->lost = true;
	pthread_mutex_unlock(&store->lock);
	return true;
}

bool symview_refresh(struct symview *v)
{
	bool changed = read_view(v);

	changed |= refresh_owner(v->owner, true);
	changed |= refresh_owner(v->own_interp, true);
	return changed;
}

bool symview_check(struct symview *v)
{
	bool changed = refresh_owner(v->owner, false);

	return refresh_owner(v->own_interp, false) || changed;
}

unsigned symview_errors(const struct symview *v)
{
	const struct owner *o[2] = { v->owner, v->own_interp };
	unsigned n = 0;

	/* Read without the owners' locks: a word, and only ever 0 -> 1. */
	for (int i = 0; i < 2; i++)
		n |= o[i] && o[i]->sym ? symbolizer_errors(o[i]->sym) : 0;
	return n;
}

static const struct vmod *module_at(struct symview *v, uint64_t addr)
{
	for (int pass = 0; pass < 2; pass++) {
		size_t lo = 0, hi = v->nmods;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (addr < v->mods[mid].low)
				hi = mid;
			else if (addr >= v->mods[mid].high)
				lo = mid + 1;
			else
				return &v->mods[mid];
		}
		/* A library loaded since?  Not more often than this, so that
		 * JIT code cannot make every lookup read the maps. */
		if (pass || mono_ns() - v->maps_ns < MAPS_REREAD_NS)
			break;
		read_view(v);
	}
	return NULL;
}

/* --- lookups ------------------------------------------------------------------ */

static void fill(struct native_sym *ns, const struct answer *a)
{
	ns->function = a->function;
	ns->file = a->file;
	ns->line = a->line;
	ns->offset = a->offset;
}

/* An answer the store has no room for, kept by the view until its next. */
static void fill_scratch(struct symview *v, struct native_sym *ns, const struct native_sym *r)
{
	for (int i = 0; i < 2; i++)
		free(v->scratch[i]);
	v->scratch[0] = r->function ? xstrdup(r->function) : NULL;
	v->scratch[1] = r->file ? xstrdup(r->file) : NULL;
	ns->function = v->scratch[0];
	ns->file = v->scratch[1];
	ns->line = r->line;
	ns->offset = r->offset;
}

/* Ask f's owner about offset off of f, and keep the answer.  false when
 * the owner is busy (loading a file) and wait is not set. */
static bool ask_owner(struct symview *v, struct sfile *f, uint64_t off, bool exact, bool wait,
		      struct native_sym *ns)
{
	struct owner *o = f->owner;
	const struct native_sym *r;
	const struct answer *a;

	if (wait)
		pthread_mutex_lock(&o->lock);
	else if (pthread_mutex_trylock(&o->lock) != 0)
		return false;
	r = symbolize(o->sym, f->owner_low + off, exact);
	if (answer_fits(f, r)) {
		pthread_mutex_lock(&store->lock);
		a = keep_answer(f, off << 1 | exact, r);
		if (a)
			fill(ns, a);
		else
			fill_scratch(v, ns, r);
		pthread_mutex_unlock(&store->lock);
	}
	pthread_mutex_unlock(&o->lock);
	return true;
}

static struct native_sym lookup(struct symview *v, uint64_t pc, bool exact, bool *ready,
				const void **obj);

struct native_sym symview_lookup(struct symview *v, uint64_t pc, bool exact, bool *ready,
				 const void **obj)
{
	uint64_t t0 = mono_ns(), d;
	const void *dummy;
	struct native_sym ns = lookup(v, pc, exact, ready, obj ? obj : &dummy);

	d = mono_ns() - t0;
	/* The end's waits count apart: no sampling is left to delay. */
	if (v->final) {
		v->settle_ns += d;
		return ns;
	}
	v->n++;
	v->total_ns += d;
	if (d > v->max_ns)
		v->max_ns = d;
	return ns;
}

/* Under the store's lock: have f loaded, by this view's owner, in the
 * loading thread; or now, waiting, once the view is settled.  Returns
 * whether it is loaded. */
static bool ensure_loaded(struct symview *v, struct sfile *f, const struct vmod *m, uint64_t off,
			  bool exact)
{
	if (f->state == F_NEW) {
		claim(f, v->owner, m, off, exact);
		if (!v->final) {
			push_job(f, LOAD_FILE);
			return false;
		}
		pthread_mutex_unlock(&store->lock);
		load_file(f);
		pthread_mutex_lock(&store->lock);
	}
	while (v->final && f->state != F_READY)
		pthread_cond_wait(&store->loaded, &store->lock);
	return f->state == F_READY;
}

/* Under the store's lock: the kept answer for key, asked of the loading
 * thread when there is none (*pending: not there yet), or waited for once
 * the view is settled.  NULL: ask the owner here. */
static const struct answer *kept_answer(struct symview *v, struct sfile *f, uint64_t key,
					bool *pending)
{
	const struct answer *a = find_answer(f, key);

	/* The interpreter's names are needed now: never left to the thread. */
	if (!a && !f->sync && !v->final && store->answers < ANSWERS_MAX) {
		keep_pending(f, key);
		push_job(f, key);
		a = find_answer(f, key);
	}
	/* Answers move when the loading thread adds one: look again. */
	while (a && a->pending && v->final) {
		pthread_cond_wait(&store->loaded, &store->lock);
		a = find_answer(f, key);
	}
	*pending = a && a->pending;
	if (*pending)
		stats.provisional++;
	return a;
}

static struct native_sym lookup(struct symview *v, uint64_t pc, bool exact, bool *ready,
				const void **obj)
{
	struct native_sym ns = { .pc = pc };
	const struct vmod *m = module_at(v, exact ? pc : pc - 1);
	const struct answer *a = NULL;
	struct sfile *f;
	uint64_t off;
	bool loaded, pending = false, fetching;

	*ready = true;
	*obj = NULL;
	if (!m)
		return ns;
	f = m->file;
	*obj = f;
	off = pc - m->low;
	ns.path = m->path;
	ns.library = m->base;
	ns.offset = off;
	pthread_mutex_lock(&store->lock);
	if (f->lost) {
		pthread_mutex_unlock(&store->lock);
		return ns;
	}
	loaded = ensure_loaded(v, f, m, off, exact);
	if (loaded)
		a = kept_answer(v, f, off << 1 | exact, &pending);
	else
		stats.provisional++;
	if (a && !pending)
		fill(&ns, a);
	fetching = f->fetch == FETCH_QUEUED;
	pthread_mutex_unlock(&store->lock);
	if (!loaded || pending) {
		*ready = false;
		return ns;
	}
	/* The interpreter's lookups wait for its owner, but not while a
	 * fetch may hold it, loading the debug file that came. */
	if (!a && !ask_owner(v, f, off, exact, (f->sync && !fetching) || v->final, &ns))
		*ready = false;
	pthread_mutex_lock(&store->lock);
	/* A name may be on its way from debuginfod (sent for by this very
	 * answer, perhaps): until it comes, the frame's name is provisional,
	 * and renamed then. */
	if (!ns.function && f->fetch == FETCH_QUEUED)
		*ready = false;
	stats.provisional += !*ready;
	pthread_mutex_unlock(&store->lock);
	return ns;
}

bool symview_load_object(struct symview *v, const char *path)
{
	const struct vmod *m = NULL;
	uint64_t t0 = mono_ns();
	struct sfile *f;
	bool mine = false;

	for (size_t k = 0; k < v->nmods && !m; k++)
		if (!strcmp(v->mods[k].path, path))
			m = &v->mods[k];
	if (!m)
		return false;
	f = m->file;
	pthread_mutex_lock(&store->lock);
	if (f->state == F_NEW) {
		/* An owner of its own, which no other load keeps busy. */
		if (!v->own_interp)
			v->own_interp = owner_new(v->pid, v->flags);
		claim(f, v->own_interp, m, 0, true);
		f->sync = true;
		mine = true;
	}
	while (!mine && f->state != F_READY)
		pthread_cond_wait(&store->loaded, &store->lock);
	pthread_mutex_unlock(&store->lock);
	if (mine)
		load_file(f);
	v->load_ns += mono_ns() - t0;
	return true;
}

void symview_settle(struct symview *v)
{
	uint64_t t0 = mono_ns(), end = t0 + DFETCH_MAX_NS;

	pthread_mutex_lock(&store->lock);
	/* Fetches still to come or under way get this long, all together. */
	if (end < store->fetch_end) {
		__atomic_store_n(&store->fetch_end, end, __ATOMIC_RELAXED);
		if (end < __atomic_load_n(&store->fetch_deadline, __ATOMIC_RELAXED))
			__atomic_store_n(&store->fetch_deadline, end, __ATOMIC_RELAXED);
	}
	while (store->jobs > 0)
		pthread_cond_wait(&store->loaded, &store->lock);
	pthread_mutex_unlock(&store->lock);
	v->final = true;
	v->settle_ns += mono_ns() - t0;
}
