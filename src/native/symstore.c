/* The symbol store: an entry per file, keyed by build ID (read from the
 * target's memory) or identity on disk, the answers kept for it, the
 * owners whose symbolizers load files, and the store's making and end.
 * See symstore.h, and symstore_int.h for the locks.
 */
#include "native/debuginfod.h"
#include "native/symstore_int.h"
#include "process/proc.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define PHDRS_MAX 128
#define NOTES_MAX 8192

pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
struct store *store;
struct symstore_stats stats;

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
void make_key(pid_t pid, const struct proc_map *m, struct key *k)
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

struct owner *owner_new(pid_t pid, unsigned flags)
{
	struct owner *o = xcalloc(1, sizeof(*o));

	o->pid = pid;
	o->flags = flags;
	pthread_mutex_init(&o->lock, NULL);
	o->refs = 1;
	return o;
}

/* Under the store's lock; the symbolizer (and its helper) ends outside. */
struct owner *owner_put(struct owner *o)
{
	return o && --o->refs == 0 ? o : NULL;
}

void owner_free(struct owner *o)
{
	if (!o)
		return;
	symbolizer_free(o->sym);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* --- entries and answers ------------------------------------------------------- */

struct sfile *find_file(const struct key *k)
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

const struct answer *find_answer(const struct sfile *f, uint64_t key)
{
	struct hashidx_pos pos;
	uint32_t id;

	for (id = hashidx_first(&f->ans_index, hash_u64(key), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&f->ans_index, &pos))
		if (f->ans[id].key == key)
			return &f->ans[id];
	return NULL;
}

/* Keep a answer of the owner's symbolizer (under the store's lock): the
 * first without a name sends for the file's debug file, if wanted. */
const struct answer *keep_answer(struct sfile *f, uint64_t key, const struct native_sym *ns)
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
void keep_pending(struct sfile *f, uint64_t key)
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
void drop_answers(struct sfile *f)
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
bool answer_fits(const struct sfile *f, const struct native_sym *ns)
{
	return ns->library && !strcmp(ns->library, f->owner_base);
}

/* --- the store ---------------------------------------------------------------- */

void store_make(void)
{
	int rc;

	store = xcalloc(1, sizeof(*store));
	memset(&stats, 0, sizeof(stats));
	pthread_mutex_init(&store->lock, NULL);
	pthread_cond_init(&store->wake, NULL);
	pthread_cond_init(&store->loaded, NULL);
	store->fetch_end = store->fetch_deadline = UINT64_MAX;
	if ((rc = start_loader()) < 0) {
		errorf("symbols: cannot start the loading thread: %s", strerror(-rc));
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

void store_end(void)
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

