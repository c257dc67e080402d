/* libFuzzer harness: the asyncio task readers on arbitrary memory.
 *
 * Input (see fuzzmem.h): "PSA1", the minor version (11 to 15), flags, two
 * bytes of padding, the address of _PyRuntime, the 104 bytes of the
 * _asyncio module's .AsyncioDebug section, then regions of memory.  What
 * the dump and the sampler do with tasks runs on it:
 *
 *   - 3.14+ (asyncio314.c): the section is checked and parsed
 *     (asyncio_layout_parse), and the interpreter's layout taken from
 *     _Py_DebugOffsets at _PyRuntime;
 *   - 3.11-3.13 (asyncio_legacy.c): the section is not read; the layout
 *     is the version's table (3.13: _Py_DebugOffsets' with FZA_DEBUG_OFFSETS,
 *     as a live 3.13 has it) and asyncio_legacy_locate() finds
 *     asyncio.tasks and checks its Task type, as asyncio_locate() does;
 *   - asyncio_tasks() (dump --async: lists, awaiters, cycles, frames),
 *     paused, or re-checked against a second snapshot (FZA_RECHECK: the
 *     torn-task path of --nonblocking);
 *   - asyncio_awaiter_chain() for every task found (record --async; the
 *     first LEGACY_CHAINS on 3.11-3.13);
 *   - asyncio_running_task() for each thread (the sampler's running task);
 *   - asyncio_tasks_memo() over the first snapshot and then the second
 *     (FZA_TWO_PHASE), as record --async=all reads round after round: the
 *     memo's proofs (process/readset.c) must drop what changed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzmem.h"
#include "interp/layout.h"
#include "python/asyncio.h"
#include "python/asyncio_legacy.h"
#include "python/pystack.h"
#include "process/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

_Static_assert(FZ_ASYNCIO_HDR - 16 == ASYNCIO_SECTION_SIZE, "fuzzmem.h: the section's size");

static void show(const struct py_tasks *t)
{
	fprintf(stderr, "%d tasks, %d torn, %d cycles\n", t->n, t->torn, t->ncycles);
	for (int i = 0; i < t->n; i++) {
		const struct py_task *k = &t->v[i];

		fprintf(stderr, "task %#llx %s %s: %d frames, %d awaiting, %d awaited by%s%s\n",
			(unsigned long long)k->addr, k->name, task_state_name(k->state),
			k->nframes, k->nawaiting, k->nawaited_by, k->wait.kind ? ", in " : "",
			k->wait.kind ? k->wait.kind : "");
		for (int f = 0; f < k->nframes; f++)
			fprintf(stderr, "  %s (%s:%d)\n", k->frames[f].function, k->frames[f].file,
				k->frames[f].line);
	}
}

/* The legacy reader reads the whole graph for each awaiter chain: the
 * chains of a few tasks say as much as all of them. */
#define LEGACY_CHAINS 3

/* The dump's read, and the sampler's awaiter chains of what it found. */
static void dump(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		 struct mem *recheck)
{
	struct py_tasks t;
	char err[256], *names[ASYNCIO_CHAIN_MAX];

	if (asyncio_tasks(m, pi, A, recheck, &t, err, sizeof(err)) < 0)
		return;
	if (getenv("FUZZ_ASYNCIO_VERBOSE"))
		show(&t);
	for (int i = 0; i < t.n; i++) {
		int n = A->legacy.on && i >= LEGACY_CHAINS ? 0 :
			asyncio_awaiter_chain(m, pi, A, t.v[i].addr, names, ASYNCIO_CHAIN_MAX);

		for (int k = 0; k < n; k++)
			free(names[k]);
		if (py_tasks_find(&t, t.v[i].addr) != &t.v[i])
			abort();	/* an address listed twice */
	}
	py_tasks_free(&t);
}

/* The sampler's question for each thread: which task it runs. */
#define THREADS 64
static void running(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A)
{
	struct py_tstate ts[THREADS];
	uint64_t gil, task, frame;
	char err[256];
	int n = pystack_tstates(m, pi, ts, THREADS, &gil, err, sizeof(err));

	for (int i = 0; i < n; i++)
		asyncio_running_task(m, pi, A, &ts[i], &task, &frame);
}

/* record --async=all: rounds through one memo, the memory changing
 * between them where the input says so. */
static void rounds(struct fz_switch *sw, struct mem *first, struct mem *second,
		   const struct pyinterp *pi, const struct asyncio_layout *A, uint8_t flags)
{
	struct asyncio_memo *memo = asyncio_memo_new(&sw->mem);
	struct py_tasks t;
	char err[256];

	for (int round = 0; round < 3; round++) {
		sw->cur = round && second ? second : first;
		if (asyncio_tasks_memo(&sw->mem, pi, A, (flags & FZA_RECHECK) ? &sw->mem : NULL,
				       memo, &t, err, sizeof(err)) < 0)
			continue;
		py_tasks_index(&t);
		for (int i = 0; i < t.n; i++)
			if (py_tasks_find(&t, t.v[i].addr) != &t.v[i])
				abort();
		py_tasks_free(&t);
	}
	asyncio_memo_free(memo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_switch sw = FZ_SWITCH_INIT;
	struct mem *first, *second = NULL;
	struct asyncio_layout A;
	struct pyinterp pi;
	uint8_t flags;
	char err[256];
	bool legacy;

	if (size < FZ_ASYNCIO_HDR || memcmp(data, FZ_ASYNCIO_MAGIC, 4) != 0)
		return 0;
	flags = data[5];
	memset(&pi, 0, sizeof(pi));
	pi.pid = 1;
	pi.minor = fz_asyncio_minor(data[4]);
	pi.runtime = fz_le64(data + 8);
	snprintf(pi.version, sizeof(pi.version), "3.%d", pi.minor);
	pi.layout = *layout_for_minor(pi.minor);
	legacy = asyncio_legacy_version(pi.minor, pi.layout.free_threaded, &A);
	if (!legacy && asyncio_layout_parse(pi.minor, data + 16, ASYNCIO_SECTION_SIZE, &A, err,
					    sizeof(err)) < 0)
		return 0;

	first = mem_fake_new();
	if (flags & FZA_TWO_PHASE)
		second = mem_fake_new();
	fz_add_regions(data + FZ_ASYNCIO_HDR, size - FZ_ASYNCIO_HDR, first, second);
	if ((!legacy || (flags & FZA_DEBUG_OFFSETS)) &&
	    debug_offsets_layout(first, pi.runtime, &pi.layout, err, sizeof(err)) < 0)
		goto out;
	if (legacy && asyncio_legacy_locate(first, &pi, "fuzz", &A, err, sizeof(err)) != 0)
		goto out;

	sw.cur = first;
	dump(&sw.mem, &pi, &A, NULL);
	running(first, &pi, &A);
	if (second) {
		/* Read from the first snapshot, re-checked against the second:
		 * whatever changed in between must be dropped, not shown. */
		dump(first, &pi, &A, second);
	}
	rounds(&sw, first, second, &pi, &A, flags);
out:
	mem_close(first);
	mem_close(second);
	return 0;
}
