/* The store's loading thread and its jobs: load a file, answer a lookup
 * the sampling thread left to it, fetch a debug file from debuginfod.
 * Loads may wait; the sampling thread and the target may not.
 */
#include "native/debuginfod.h"
#include "native/symstore_int.h"
#include "util/util.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The loading thread's nice: below the sampling thread, not so far below
 * that a busy machine starves it (at 19, loads took seconds under a load
 * of 7 on 2 CPUs, and the end of a recording waits for them). */
#define LOADER_NICE 10

/* --- loading ----------------------------------------------------------------- */

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

/* Look up f's probe in its owner's symbolizer, which loads the file: with
 * the owner's lock held, outside the store's. */
void load_file(struct sfile *f)
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
void push_job(struct sfile *f, uint64_t key)
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

/* Start the loader with the signals a handler of pystrobe takes blocked:
 * they are the sampling thread's.  A stop signal (Ctrl-Z) taken here
 * while that thread holds the target stopped would stop pystrobe with the
 * target held (process/selfstop.h).  A fault stays the thread's own.
 * 0, or -errno. */
int start_loader(void)
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
	return -rc;
}
