/* A seed corpus from real processes: attach to a live Python process, do
 * what `pystrobe dump --locals` does (locate the interpreter, walk every
 * thread with locals, name the threads) through a reader that records every
 * page it touches, and write what was read as a fuzz_walk input.
 *
 * Usage: capture [-d DBGFILE] [-l LTDIR] [-a ASYNCFILE] PID OUTFILE
 *
 *   OUTFILE	the fuzz_walk seed: the layout's minor version, _PyRuntime,
 *		and the bytes of every touched page that were actually
 *		read (runs under GAP bytes apart joined, so neighbouring
 *		reads make one region; wider gaps where that still makes
 *		more regions than a harness reads)
 *   -d FILE	also the first 1024 bytes at _PyRuntime (3.13+: the
 *		_Py_DebugOffsets table), a fuzz_debug_offsets seed
 *   -l DIR	also each frame's line table, with its offset and first
 *		line, as fuzz_linetable seeds DIR/real-3.X-N
 *   -a FILE	(3.11+) also what `dump --async` reads -- the _asyncio
 *		section (3.14+), _Py_DebugOffsets (3.13+), every task list or
 *		registry (3.11-3.13: asyncio.tasks' sets, found through
 *		sys.modules), task, coroutine and code object -- as a
 *		fuzz_asyncio seed
 *
 * Pages are copied the first time they are touched and every read is served
 * from the copies, so the walk sees one consistent snapshot even of threads
 * that keep running, and the seed replays exactly the walk that was seen.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzmem.h"
#include "interp/layout.h"
#include "python/asyncio.h"
#include "python/asyncio_legacy.h"
#include "python/locate.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "python/pystack.h"

#define PAGE 4096u
#define GAP 32u

struct rpage {
	uint64_t base;
	bool ok;		/* readable */
	uint8_t touched[PAGE / 8];	/* bitmap of the bytes read */
	uint8_t data[PAGE];
};

struct mem_rec {
	struct mem mem;
	struct mem *under;
	struct rpage **pages;	/* sorted by base */
	size_t n, cap;
};

static struct rpage *find_page(struct mem_rec *r, uint64_t base)
{
	size_t lo = 0, hi = r->n;
	struct rpage *p;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->pages[mid]->base == base)
			return r->pages[mid];
		if (r->pages[mid]->base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	p->base = base;
	p->ok = mem_read(r->under, base, p->data, PAGE) == 0;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->pages = realloc(r->pages, r->cap * sizeof(*r->pages));
		if (!r->pages)
			abort();
	}
	memmove(r->pages + lo + 1, r->pages + lo, (r->n - lo) * sizeof(*r->pages));
	r->pages[lo] = p;
	r->n++;
	return p;
}

static int rec_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	struct mem_rec *r = (struct mem_rec *)m;
	uint8_t *out = buf;
	uint64_t a = addr;
	size_t left = len;

	if (len == 0 || addr + len < addr)
		return mem_read(r->under, addr, buf, len);
	/* All pages first: a read that fails must record nothing. */
	for (uint64_t b = addr & ~(uint64_t)(PAGE - 1); b < addr + len; b += PAGE)
		if (!find_page(r, b)->ok)
			return -EFAULT;
	while (left) {
		struct rpage *p = find_page(r, a & ~(uint64_t)(PAGE - 1));
		uint32_t off = (uint32_t)(a - p->base);
		size_t n = PAGE - off < left ? PAGE - off : left;

		memcpy(out, p->data + off, n);
		for (size_t k = off; k < off + n; k++)
			p->touched[k / 8] |= (uint8_t)(1u << (k % 8));
		out += n;
		a += n;
		left -= n;
	}
	return 0;
}

static void rec_close(struct mem *m)
{
	struct mem_rec *r = (struct mem_rec *)m;

	for (size_t i = 0; i < r->n; i++)
		free(r->pages[i]);
	free(r->pages);
	mem_close(r->under);
	free(r);
}

static struct mem_rec *rec_open(pid_t pid)
{
	struct mem_rec *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->mem.read = rec_read;
	r->mem.close = rec_close;
	r->under = mem_proc_open(pid);
	return r;
}

static bool touched(const struct mem_rec *r, size_t i, uint32_t off)
{
	return r->pages[i]->ok && (r->pages[i]->touched[off / 8] >> (off % 8) & 1);
}

/* The touched bytes as regions, runs of them less than gap bytes apart
 * made one (the bytes between are in the captured pages too); returns how
 * many regions (f NULL: only counts them). */
static int put_regions(FILE *f, struct mem_rec *r, uint64_t gap)
{
	uint8_t *buf = malloc(PAGE);
	size_t cap = PAGE, len = 0;
	uint64_t start = 0, last = 0;	/* last: one past the last touched byte */
	int count = 0;

	if (!buf)
		abort();
	for (size_t i = 0; i < r->n; i++) {
		struct rpage *p = r->pages[i];

		for (uint32_t off = 0; off < PAGE; off++) {
			uint64_t a = p->base + off;

			if (!touched(r, i, off))
				continue;
			/* Join the current region if the gap is small and lies in
			 * captured pages: this one, or the one before when it
			 * is its neighbour. */
			if (len && a - last < gap &&
			    (last >= p->base ||
			     (i > 0 && r->pages[i - 1]->ok && r->pages[i - 1]->base + PAGE == p->base))) {
				for (uint64_t g = last; g < a; g++) {
					const struct rpage *q = g >= p->base ? p : r->pages[i - 1];

					if (len == cap && !(buf = realloc(buf, cap *= 2)))
						abort();
					buf[len++] = q->data[g - q->base];
				}
			} else {
				if (len && f)
					fz_put_region(f, start, buf, (uint32_t)len, 0);
				count += len > 0;
				start = a;
				len = 0;
			}
			if (len == cap && !(buf = realloc(buf, cap *= 2)))
				abort();
			buf[len++] = p->data[off];
			last = a + 1;
		}
	}
	if (len && f)
		fz_put_region(f, start, buf, (uint32_t)len, 0);
	count += len > 0;
	free(buf);
	return count;
}

/* The same, joined over gaps of GAP bytes, or wider where that makes more
 * regions than the harnesses read (FZ_MAX_REGIONS). */
static int write_regions(FILE *f, struct mem_rec *r)
{
	uint64_t gap = GAP;

	while (gap < PAGE && put_regions(NULL, r, gap) > FZ_MAX_REGIONS)
		gap *= 2;
	return put_regions(f, r, gap);
}

/* --- line tables ---------------------------------------------------------- */

struct lt_ctx {
	struct mem *m;
	const struct py_layout *L;
	const char *dir;
	int count;
};

static int dump_linetable(void *arg, uint64_t frame, uint64_t code, uint64_t lasti)
{
	struct lt_ctx *x = arg;
	const struct py_layout *L = x->L;
	struct pyctx c = { x->m, L };
	uint64_t table;
	int32_t first;
	int64_t offset;
	uint8_t *bytes;
	size_t len;
	char path[4096];
	FILE *f;

	(void)frame;
	if (mem_read_u64(x->m, code + L->code.linetable, &table) < 0 ||
	    mem_read_i32(x->m, code + L->code.firstlineno, &first) < 0 ||
	    py_bytes(&c, table, 1 << 16, &bytes, &len) < 0)
		return 0;
	if (L->lasti == LASTI_BYTES)
		offset = (int32_t)lasti;
	else if (L->lasti == LASTI_UNITS)
		offset = (int64_t)(int32_t)lasti * 2;
	else
		offset = (int64_t)(lasti - (code + L->code.code_adaptive));
	snprintf(path, sizeof(path), "%s/real-3.%d-%d", x->dir, L->minor, x->count++);
	f = fopen(path, "wb");
	if (f) {
		fputc(L->lines, f);
		fz_put32(f, (uint32_t)first);
		fz_put32(f, (uint32_t)offset);
		fwrite(bytes, 1, len, f);
		fclose(f);
	}
	free(bytes);
	return 0;
}

/* The fuzz_asyncio seed: what the task reader reads, from here on. */
static int capture_async(struct mem_rec *r, pid_t pid, const struct pyinterp *pi,
			 const char *file)
{
	uint8_t sec[ASYNCIO_SECTION_SIZE] = { 0 };
	struct asyncio_layout A;
	struct locate_src src;
	struct py_layout L;
	struct py_tasks t;
	char err[512];
	size_t len = 0;
	FILE *f;
	int nreg, rc = 0;
	bool legacy = asyncio_legacy_version(pi->minor, pi->layout.free_threaded, &A);

	if (!legacy) {
		locate_src_live(&src, pid);
		rc = locate_section(&src, &r->mem, pi, "_asyncio.", ASYNCIO_SECTION, sec,
				    sizeof(sec), &len);
		locate_src_release(&src);
	}
	if (!legacy &&
	    (rc < 0 || asyncio_layout_parse(pi->minor, sec, len, &A, err, sizeof(err)) < 0)) {
		fprintf(stderr, "capture: no asyncio section to read tasks by\n");
		return -1;
	}
	for (size_t i = 0; i < r->n; i++)
		memset(r->pages[i]->touched, 0, sizeof(r->pages[i]->touched));
	/* Read as the harness reads: the layout, where the version publishes
	 * it, then (3.11-3.13) what locating asyncio.tasks reads, the tasks. */
	if ((pi->minor >= 13 && debug_offsets_layout(&r->mem, pi->runtime, &L, err,
						      sizeof(err)) < 0) ||
	    (legacy && asyncio_legacy_locate(&r->mem, pi, "the target", &A, err, sizeof(err))) ||
	    asyncio_tasks(&r->mem, pi, &A, NULL, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "capture: %s\n", err);
		return -1;
	}
	f = fopen(file, "wb");
	if (!f) {
		perror(file);
		py_tasks_free(&t);
		return -1;
	}
	fz_put_asyncio_header(f, pi->minor, FZA_TWO_PHASE | FZA_RECHECK |
			      (pi->minor >= 13 ? FZA_DEBUG_OFFSETS : 0), pi->runtime, sec);
	nreg = write_regions(f, r);
	fprintf(stderr, "capture: %d tasks, %d regions -> %s\n", t.n, nreg, file);
	py_tasks_free(&t);
	return fclose(f) == 0 ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: capture [-d DBGFILE] [-l LTDIR] [-a ASYNCFILE] PID OUTFILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dbgfile = NULL, *ltdir = NULL, *asyncfile = NULL;
	struct walk_opts o = { .locals = true };
	struct py_thread *t = NULL;
	struct pyinterp pi;
	struct mem_rec *r;
	struct locate_src src;
	char err[512];
	pid_t pid;
	FILE *f;
	int opt, n, nreg;

	while ((opt = getopt(argc, argv, "d:l:a:")) != -1) {
		if (opt == 'd')
			dbgfile = optarg;
		else if (opt == 'a')
			asyncfile = optarg;
		else if (opt == 'l')
			ltdir = optarg;
		else
			usage();
	}
	if (argc - optind != 2)
		usage();
	pid = (pid_t)atoi(argv[optind]);
	r = rec_open(pid);
	locate_src_live(&src, pid);
	if (locate_python(&src, &r->mem, &pi, err, sizeof(err)) < 0) {
		fprintf(stderr, "capture: %s\n", err);
		return 1;
	}
	locate_src_release(&src);
	n = pystack_threads(&r->mem, &pi, &o, &t, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "capture: %s\n", err);
		return 1;
	}
	pystack_thread_names(&r->mem, &pi, t, n);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "capture: thread %s: %d frames%s%s\n",
			t[i].name ? t[i].name : "?", t[i].nframes,
			t[i].error ? ", " : "", t[i].error ? t[i].error : "");

	f = fopen(argv[optind + 1], "wb");
	if (!f) {
		perror(argv[optind + 1]);
		return 1;
	}
	fz_put_walk_header(f, pi.minor, pi.minor >= 13 ? FZW_DEBUG_OFFSETS : 0, 0, pi.runtime);
	nreg = write_regions(f, r);
	if (fclose(f) != 0) {
		perror(argv[optind + 1]);
		return 1;
	}
	fprintf(stderr, "capture: Python %s, %d threads, %zu pages, %d regions -> %s\n",
		pi.version, n, r->n, nreg, argv[optind + 1]);
	if (nreg > FZ_MAX_REGIONS)
		fprintf(stderr, "capture: warning: more than %d regions; the harness uses the first %d\n",
			FZ_MAX_REGIONS, FZ_MAX_REGIONS);

	/* After the seed is written: these reads are not part of it. */
	if (ltdir) {
		struct lt_ctx x = { &r->mem, &pi.layout, ltdir, 0 };
		struct py_tstate *ts = calloc(PYSTACK_MAX_THREADS, sizeof(*ts));
		uint64_t gil;
		int k = pystack_tstates(&r->mem, &pi, ts, PYSTACK_MAX_THREADS, &gil, err,
					sizeof(err));

		for (int j = 0; j < k; j++) {
			int nf, rc;

			if (ts[j].frame_err == 0 && ts[j].frame)
				pystack_walk(&r->mem, &pi.layout, ts[j].frame, 0, dump_linetable,
					     &x, &nf, &rc);
		}
		free(ts);
	}

	if (dbgfile) {
		uint8_t table[1024];

		if (mem_read(r->under, pi.runtime, table, sizeof(table)) < 0) {
			fprintf(stderr, "capture: cannot read _PyRuntime\n");
			return 1;
		}
		f = fopen(dbgfile, "wb");
		if (!f || fwrite(table, 1, sizeof(table), f) != sizeof(table) || fclose(f) != 0) {
			perror(dbgfile);
			return 1;
		}
	}
	if (asyncfile && capture_async(r, pid, &pi, asyncfile) < 0)
		return 1;
	py_threads_free(t, n);
	pyinterp_free(&pi);
	mem_close(&r->mem);
	return 0;
}
