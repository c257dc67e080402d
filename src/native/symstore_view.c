/* A process's view of the store: its objects from its maps, each on the
 * store's entry for its file, and the lookups, which never wait for a
 * load once its loading is finished (symstore.h).
 */
#include "native/debuginfod.h"
#include "native/symstore_int.h"
#include "process/proc.h"
#include "util/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Least time between two reads of the maps prompted by unknown addresses. */
#define MAPS_REREAD_NS 200000000ull

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
			v->load_ns / 1e6, v->finish_ns / 1e6);
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
		v->finish_ns += d;
		return ns;
	}
	v->n++;
	v->total_ns += d;
	if (d > v->max_ns)
		v->max_ns = d;
	return ns;
}

/* Under the store's lock: have f loaded, by this view's owner, in the
 * loading thread; or now, waiting, once its loading is finished.  Returns
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
 * its loading is finished.  NULL: ask the owner here. */
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

void symview_finish_loading(struct symview *v)
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
	v->finish_ns += mono_ns() - t0;
}
