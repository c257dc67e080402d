/* libFuzzer harness: the whole interpreter walk on arbitrary memory.
 *
 * Input (see fuzzmem.h): "PSW1", the layout's minor version, flags, a
 * max_depth (0: the default), the address of _PyRuntime, then regions of
 * memory.  Everything the dump and the sampler do to a target runs on it:
 *
 *   - on 3.13+ with FZW_DEBUG_OFFSETS, the layout comes from the
 *     _Py_DebugOffsets found at _PyRuntime, as locate_python() gets it;
 *   - pystack_threads() without and with locals, then pystack_names() and
 *     pystack_tid_offset() for the idents it found (the dump);
 *   - pystack_tstates() + pystack_walk() with a visitor that resolves every
 *     frame through frame_reuse_resolve() (last round's ids where proved
 *     valid, else code_cache_frame()) into a profile (the sampler), twice:
 *     on the same memory (cache hits), then, with FZW_TWO_PHASE, on a second
 *     snapshot in which regions may have changed, as they do between
 *     samples (the cache's identity re-checks), optionally through
 *     mem_cache and aggregated by function.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/codecache.h"
#include "python/framereuse.h"
#include "fuzzmem.h"
#include "interp/layout.h"
#include "python/locate.h"
#include "process/mem.h"
#include "profile/profile.h"
#include "python/pystack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sample_ctx {
	struct code_cache *cc;
	struct profile *p;
	struct frame_reuse *reuse;	/* per thread state index */
	struct reuse_frame raw[PYSTACK_MAX_DEPTH];
	uint32_t frames[PYSTACK_MAX_DEPTH];
	int nframes;
};

static int collect(void *arg, uint64_t frame, uint64_t code, uint64_t lasti)
{
	struct sample_ctx *s = arg;

	if (s->nframes < PYSTACK_MAX_DEPTH)
		s->raw[s->nframes++] = (struct reuse_frame){ frame, code, lasti, 0, 0 };
	return 0;
}

/* One sample, as sampler.c takes it. */
static void sample(struct mem *m, const struct pyinterp *pi, int max_depth,
		   struct sample_ctx *s, struct py_tstate *ts, uint64_t t_ns)
{
	char err[256];
	uint64_t gil;
	int n = pystack_tstates(m, pi, ts, PYSTACK_MAX_THREADS, &gil, err, sizeof(err));

	code_cache_round(s->cc);
	for (int i = 0; i < n; i++) {
		uint32_t stack[PYSTACK_MAX_DEPTH];
		uint32_t depth = 0, th;
		enum walk_end end;
		int nf, rc;

		if (ts[i].frame_err < 0)
			continue;
		s->nframes = 0;
		end = pystack_walk(m, &pi->layout, ts[i].frame, max_depth, collect, s, &nf, &rc);
		if (end == WALK_LOOP || end == WALK_READ_ERROR || end == WALK_VISIT_ERROR ||
		    s->nframes == 0)
			continue;
		if (frame_reuse_resolve(&s->reuse[i], s->cc, s->raw, (uint32_t)s->nframes,
					s->frames) < 0)
			continue;
		for (int k = s->nframes - 1; k >= 0; k--)
			stack[depth++] = s->frames[k];
		th = profile_thread(s->p, 1, ts[i].tid, NULL);
		profile_add(s->p, th, stack, depth, t_ns, 1);
	}
}

/* FUZZ_WALK_VERBOSE=1 ./fuzz_walk SEED... prints what the walk found, to
 * check that seeds reach as far as they should. */
static void show(const struct py_thread *t, int n, char **names)
{
	for (int i = 0; i < n; i++) {
		fprintf(stderr, "thread %#llx ident %#llx tid %d name %s gil %d%s%s%s\n",
			(unsigned long long)t[i].tstate, (unsigned long long)t[i].ident,
			(int)t[i].tid, names[i] ? names[i] : "-", t[i].gil,
			t[i].truncated ? " truncated" : "", t[i].error ? " error: " : "",
			t[i].error ? t[i].error : "");
		for (int j = 0; j < t[i].nframes; j++) {
			const struct py_frame *f = &t[i].frames[j];

			fprintf(stderr, "  %s (%s:%d)\n", f->function, f->file, f->line);
			for (int k = 0; k < f->nlocals; k++)
				fprintf(stderr, "    %s%s: %s = %s\n", f->locals[k].name,
					f->locals[k].arg ? " (arg)" : "", f->locals[k].type,
					f->locals[k].repr);
		}
	}
}

static void dump(struct mem *m, const struct pyinterp *pi, int max_depth, bool locals)
{
	struct walk_opts o = { .locals = locals, .max_depth = max_depth };
	struct py_thread *t = NULL;
	char err[256];
	int n = pystack_threads(m, pi, &o, &t, err, sizeof(err));

	if (n > 0) {
		uint64_t *idents = calloc((size_t)n, sizeof(*idents));
		char **names = calloc((size_t)n, sizeof(*names));

		for (int i = 0; i < n; i++)
			idents[i] = t[i].ident;
		/* The dump names threads through pystack_thread_names(). */
		if (locals) {
			pystack_thread_names(m, pi, t, n);
			for (int i = 0; i < n; i++)
				names[i] = t[i].name ? strdup(t[i].name) : NULL;
		} else {
			pystack_names(m, pi, idents, n, names);
		}
		/* Before 3.11 the OS thread ids are found inside the C
		 * library's thread structs the idents point at (snapshot.c,
		 * sthreads.c); the ids themselves come from /proc. */
		if (!locals) {
			static const pid_t tids[] = { 100, 101, 102, 5000, 5001, 5002, 5003 };

			pystack_tid_offset(m, idents, n, tids, (int)(sizeof(tids) / sizeof(tids[0])));
		}
		if (locals && getenv("FUZZ_WALK_VERBOSE"))
			show(t, n, names);
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
		free(idents);
	} else if (n < 0 && locals && getenv("FUZZ_WALK_VERBOSE"))
		fprintf(stderr, "pystack_threads: %s\n", err);
	if (n >= 0)
		py_threads_free(t, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sample_ctx sc;	/* 16 KiB of frame ids: keep it off the stack */
	struct mem *first, *second = NULL, *reader;
	struct fz_switch sw = FZ_SWITCH_INIT;
	struct pyinterp pi;
	struct profile prof;
	struct py_tstate *ts;
	uint8_t flags;
	int minor, max_depth;
	char err[256];

	if (size < FZ_WALK_HDR || memcmp(data, FZ_WALK_MAGIC, 4) != 0)
		return 0;
	minor = fz_minor(data[4]);
	flags = data[5];
	max_depth = fz_le16(data + 6);
	if (max_depth > PYSTACK_MAX_DEPTH)
		max_depth = PYSTACK_MAX_DEPTH;

	memset(&pi, 0, sizeof(pi));
	pi.pid = 1;
	pi.runtime = fz_le64(data + 8);
	pi.minor = minor;
	snprintf(pi.version, sizeof(pi.version), "3.%d", minor);
	pi.layout = *layout_for_minor(minor);

	first = mem_fake_new();
	if (flags & FZW_TWO_PHASE)
		second = mem_fake_new();
	fz_add_regions(data + FZ_WALK_HDR, size - FZ_WALK_HDR, first, second);

	if ((flags & FZW_DEBUG_OFFSETS) && minor >= 13 &&
	    debug_offsets_layout(first, pi.runtime, &pi.layout, err, sizeof(err)) < 0)
		goto out;

	/* The dump. */
	dump(first, &pi, max_depth, false);
	dump(first, &pi, max_depth, true);

	/* The sampler. */
	profile_init(&prof, 100);
	sw.cur = first;
	reader = (flags & FZW_MEM_CACHE) ? mem_cache_new(&sw.mem) : &sw.mem;
	ts = calloc(PYSTACK_MAX_THREADS, sizeof(*ts));
	sc.p = &prof;
	sc.cc = code_cache_new(reader, &pi.layout, &prof, flags & FZW_BY_FUNCTION);
	sc.reuse = calloc(PYSTACK_MAX_THREADS, sizeof(*sc.reuse));
	for (int round = 0; round < 3; round++) {
		if (round == 2) {
			if (!second)
				break;
			sw.cur = second;
		}
		if (flags & FZW_MEM_CACHE)
			mem_cache_reset(reader);
		sample(reader, &pi, max_depth, &sc, ts, 1000000ull * (uint64_t)round);
	}
	for (int i = 0; i < PYSTACK_MAX_THREADS; i++)
		frame_reuse_release(&sc.reuse[i]);
	free(sc.reuse);
	code_cache_free(sc.cc);
	free(ts);
	if (reader != &sw.mem)
		mem_close(reader);
	profile_free(&prof);
out:
	mem_close(first);
	mem_close(second);
	return 0;
}
