/* Hand-built reproducers for findings that need more structure than a
 * fuzzer finds in minutes: each is a fuzz_walk input, written from a
 * tests/lib/fakepy.c scene.
 *
 * Usage: mkrepro DIR	writes DIR/walk-codecache-leak, DIR/walk-slow-threads
 *
 * walk-codecache-leak: code_cache_frame() once emptied a slot in the
 * middle of a linear-probing cluster when a cached code object's identity
 * changed and its new decode failed; an entry further along the cluster
 * became unreachable, was inserted a second time, and when the table next
 * grew the second copy overwrote the first in the new table, leaking its
 * strings (LeakSanitizer).  The cache is now an array of entries found
 * through a struct hashidx, which never empties a slot, and the input
 * still builds the case: A and B in one probe chain of the index, A's
 * decode failing, B looked up after it, then the index growing.  Layout
 * 3.12, two snapshots:
 *   snapshot 1: thread 1 runs A, then B (home slots equal in every index
 *     of up to 1024 slots, so B sits after A in the probe chain);
 *   snapshot 2: A's name and qualname point nowhere (its identity changed,
 *     the new decode fails); thread 1 runs A alone, thread 2 runs B (found
 *     behind A, or inserted again if A's slot were emptied) and 511 new
 *     code objects (the index grows from 1024 to 2048 slots at its 513th
 *     entry, as the old table did).
 *
 * walk-slow-threads: the work of one walk is bounded per thread and per
 * frame but not in total: 4096 thread states (the limit) that all share
 * one chain of frames, each frame on the same code object at another
 * instruction so that its line table (a long one) is decoded anew, take
 * minutes for one pystack_threads() call from a few hundred kilobytes of
 * input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fakepy.h"
#include "fuzzmem.h"
#include "interp/layout.h"
#include "util/hashidx.h"

static const char *outdir;

static FILE *open_out(const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

/* [from, to) of an arena as one region. */
static void put_range(FILE *f, struct fakepy *fp, uint64_t from, uint64_t to, uint8_t rflags)
{
	if (to > from)
		fz_put_region(f, from, fp_ptr(fp, from, to - from), (uint32_t)(to - from), rflags);
}

static void put_arena(FILE *f, struct fakepy *fp, enum fp_arena a, uint8_t rflags)
{
	uint64_t base = FP_ARENA_BASE(a);

	put_range(f, fp, base, base + fp->arena[a].used, rflags);
}

/* A copy of code object tmpl at a new address: same names, same table. */
static uint64_t clone_code(struct fakepy *fp, uint64_t tmpl, size_t size)
{
	uint64_t c = fp_alloc(fp, FP_CODE, size);

	memcpy(fp_ptr(fp, c, size), fp_ptr(fp, tmpl, size), size);
	return c;
}

/* A chain of frames running codes[0] (innermost) .. codes[n-1]. */
static uint64_t chain(struct fakepy *fp, const uint64_t *codes, int n)
{
	uint64_t back = 0;

	for (int i = n - 1; i >= 0; i--)
		back = fp_frame(fp, codes[i], 0, back);
	return back;
}

static void codecache_leak(void)
{
	static const int lines[] = { 1 };
	const struct py_layout *L = layout_for_minor(12);
	struct fakepy *fp = fp_new(L);
	size_t size = L->code.code_adaptive + 4;
	enum { NEW = 511 };
	uint64_t tmpl, a = 0, b = 0, codes[NEW + 1], ts1, ts2, f1, f2;
	uint64_t seen[1024] = { 0 };
	uint64_t code_lo, code_hi;
	FILE *f;

	tmpl = fp_code(fp, &(struct fp_code_spec){ .name = "f", .filename = "f.py",
						   .firstlineno = 1, .lines = lines, .ninstr = 1 });
	code_lo = fp_alloc(fp, FP_CODE, 0);
	/* Two clones with the same home slot in the code cache's index (it
	 * hashes addresses with hash_u64) at every size up to 1024 slots. */
	while (!b) {
		uint64_t c = clone_code(fp, tmpl, size);
		uint32_t h = hash_u64(c) & 1023;

		if (seen[h]) {
			a = seen[h];
			b = c;
		}
		seen[h] = c;
	}
	code_hi = fp_alloc(fp, FP_CODE, 0);
	for (int i = 1; i <= NEW; i++)
		codes[i] = clone_code(fp, tmpl, size);

	/* Snapshot 1: thread 1 runs A then B; thread 2 nothing. */
	f1 = chain(fp, (uint64_t[]){ a, b }, 2);
	ts1 = fp_thread(fp, f1, 0x1000, 1);
	ts2 = fp_thread(fp, 0, 0x2000, 2);
	f = open_out("walk-codecache-leak");
	fz_put_walk_header(f, 12, FZW_TWO_PHASE, 0, fp->runtime);
	put_arena(f, fp, FP_OBJ, 0);
	put_arena(f, fp, FP_STATE, FZR_NOT_SECOND);
	put_arena(f, fp, FP_FRAME, FZR_NOT_SECOND);
	put_range(f, fp, FP_ARENA_BASE(FP_CODE), a, 0);
	put_range(f, fp, a, a + size, FZR_NOT_SECOND);
	put_range(f, fp, a + size, FP_ARENA_BASE(FP_CODE) + fp->arena[FP_CODE].used, 0);

	/* Snapshot 2: A renamed to nothing readable; thread 1 runs A alone,
	 * thread 2 runs B and the new code objects. */
	fp_w64(fp, a + L->code.name, FP_UNMAPPED);
	fp_w64(fp, a + L->code.qualname, FP_UNMAPPED);
	codes[0] = b;
	f2 = chain(fp, codes, NEW + 1);
	fp_w64(fp, fp_r64(fp, ts1 + L->tstate.frame) + L->tstate.cframe_frame,
	       fp_frame(fp, a, 0, 0));
	fp_w64(fp, fp_r64(fp, ts2 + L->tstate.frame) + L->tstate.cframe_frame, f2);
	put_arena(f, fp, FP_STATE, FZR_NOT_FIRST);
	put_arena(f, fp, FP_FRAME, FZR_NOT_FIRST);
	put_range(f, fp, a, a + size, FZR_NOT_FIRST);
	fclose(f);
	(void)code_lo;
	(void)code_hi;
	fp_free(fp);
}

static void slow_threads(void)
{
	enum { DEPTH = 512, THREADS = 32, NINSTR = 20000 };
	const struct py_layout *L = layout_for_minor(12);
	struct fakepy *fp = fp_new(L);
	int *lines = calloc(NINSTR, sizeof(*lines));
	uint64_t code, back = 0;
	FILE *f;

	for (int i = 0; i < NINSTR; i++)
		lines[i] = 1 + i;
	code = fp_code(fp, &(struct fp_code_spec){ .name = "f", .filename = "f.py",
						   .firstlineno = 1, .lines = lines,
						   .ninstr = NINSTR });
	/* Deepest frame last in the table: each decodes most of it. */
	for (int i = 0; i < DEPTH; i++)
		back = fp_frame(fp, code, NINSTR - 1 - i, back);
	for (int t = 0; t < THREADS; t++)
		fp_thread(fp, back, 0x1000 + (uint64_t)t, (uint32_t)t + 1);
	f = open_out("walk-slow-threads");
	fz_put_walk_header(f, 12, 0, 0, fp->runtime);
	for (int a = 0; a < FP_NARENAS; a++)
		put_arena(f, fp, (enum fp_arena)a, 0);
	fclose(f);
	free(lines);
	fp_free(fp);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkrepro DIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0777) < 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	codecache_leak();
	slow_threads();
	return 0;
}
