/* Seed inputs for the fuzz harnesses, from tests/lib/fakepy.c scenes, for
 * every layout 3.7 .. 3.14.
 *
 * Usage: mkseeds DIR	writes DIR/walk/fake-*, DIR/pyobj/fake-*,
 *			DIR/linetable/fake-*
 *
 * walk: an interpreter with three threads (one idle, one holding the GIL),
 * frames with locals of every type the repr knows, shim and not-started
 * frames where the version has them, and a threading module naming the
 * threads; once plain, once as two snapshots (code objects renamed, a
 * frame moved to other code) read through the page cache.
 * pyobj: each kind of object the readers decode, the key to look up set.
 * linetable: tables of each format for line sequences with big jumps both
 * ways and instructions without a line.
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

static const char *outdir;

static FILE *open_seed(const char *corpus, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, corpus);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, corpus, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

static void close_seed(FILE *f)
{
	if (fclose(f) != 0) {
		perror("mkseeds: write");
		exit(1);
	}
}

/* Every arena as it is now, as regions.  Most of an arena is zeros (type
 * objects, the 3.13+ interpreter state are mostly padding to us), so only
 * the 64-byte blocks holding something are written, up to GAP_BLOCKS dead
 * ones between two live ones and the one after each run kept (the zero
 * fields of one struct stay with the rest): a seed stays a few kilobytes.  A field that is zero
 * and alone in its block reads as unmapped; the readers treat both as
 * nothing there.  Blocks of 64 keep whole the chunks C strings are read in. */
#define BLOCK 64
#define GAP_BLOCKS 4

static bool live(const struct fp_arena_buf *ab, size_t blk)
{
	for (size_t i = blk * BLOCK; i < (blk + 1) * BLOCK && i < ab->used; i++)
		if (ab->data[i])
			return true;
	return false;
}

static void put_arenas(FILE *f, const struct fakepy *fp, uint8_t rflags)
{
	for (int a = 0; a < FP_NARENAS; a++) {
		const struct fp_arena_buf *ab = &fp->arena[a];
		size_t nblk = (ab->used + BLOCK - 1) / BLOCK;
		size_t b = 0;

		while (b < nblk) {
			size_t start, end;

			if (!live(ab, b)) {
				b++;
				continue;
			}
			start = b;
			end = b + 1;
			for (;;) {
				size_t next = end;

				while (next < nblk && next - end < GAP_BLOCKS && !live(ab, next))
					next++;
				if (next >= nblk || !live(ab, next))
					break;
				end = next + 1;
			}
			/* And the block after: a struct's last fields may be
			 * zeros read together with the ones before. */
			if (end < nblk)
				end++;
			fz_put_region(f, FP_ARENA_BASE(a) + start * BLOCK, ab->data + start * BLOCK,
				      (uint32_t)((end - start) * BLOCK), rflags);
			b = end;
		}
	}
}

/* --- walk ----------------------------------------------------------------- */

static const int main_lines[] = { 1, 1, 5, 7, 30 };
static const int foo_lines[] = { 10, 11, 12, 200, 13 };
static const int bar_lines[] = { 400, 401, 150, 151 };
static const int run_lines[] = { 50, 51, 52 };
static const int wait_lines[] = { 300, 320, 1000 };
static const int none_lines[] = { 70, -1, 71, -1 };

static const char *const foo_vars[] = {
	"self", "n", "answer", "negative", "big", "greeting", "accented", "wide",
	"nothing", "flag", "ratio", "items", "mapping", "pair", "blob", "thing",
	"cell",
};
#define NFOO (int)(sizeof(foo_vars) / sizeof(foo_vars[0]))

struct walk_scene {
	struct fakepy *fp;
	uint64_t code_main, code_foo, code_bar, code_run, code_wait, code_none;
	uint64_t f_main, f_foo, f_bar, f_wait;
	uint64_t ts[3];
};

static uint64_t locals_values(struct fakepy *fp, uint64_t *v)
{
	static const uint32_t big[] = { 1, 2, 3, 4 };
	static const uint32_t wide[] = { 0x65e5, 0x672c, 0x1f600 };
	uint64_t k[2], val[2], items[3];
	int i = 0;

	k[0] = fp_str(fp, "one");
	k[1] = fp_str(fp, "two");
	val[0] = fp_long(fp, 1);
	val[1] = fp_long(fp, 2);
	items[0] = fp_long(fp, 10);
	items[1] = fp_float(fp, -0.0);
	items[2] = fp->none;
	v[i++] = fp_instance(fp, "Service", (const char *const[]){ "_name" },
			     (const uint64_t[]){ fp_str(fp, "svc") }, 1, false);
	v[i++] = fp_long(fp, 3);
	v[i++] = fp_long(fp, 42);
	v[i++] = fp_long(fp, -7);
	v[i++] = fp_long_digits(fp, 1, big, 4);
	v[i++] = fp_str(fp, "hello 'quoted'\n");
	v[i++] = fp_str(fp, "h\xc3\xa9llo w\xc3\xb6rld");
	v[i++] = fp_str_cps(fp, wide, 3, 4, false, true);
	v[i++] = fp->none;
	v[i++] = fp->true_;
	v[i++] = fp_float(fp, 2.5);
	v[i++] = fp_list(fp, items, 3);
	v[i++] = fp_dict(fp, k, val, 2);
	v[i++] = fp_tuple(fp, k, 2);
	v[i++] = fp_bytes(fp, "\x00\x01\x7f\x80\xffok", 7);
	v[i++] = fp_object(fp, FP_OBJ, fp->t.function, 64);
	v[i++] = fp_object(fp, FP_OBJ, fp->t.cell, 32);
	return (uint64_t)i;
}

/* sys.modules with a threading module whose _active names threads 0, 1. */
static void add_threading(struct fakepy *fp, const uint64_t *idents)
{
	static const char *const attr_names[] = { "_target", "_name", "_daemonic" };
	uint64_t th[2], keys[3], vals[3], tmod;

	for (int i = 0; i < 2; i++) {
		const char *name = i ? "worker-\xc3\xa9" : "MainThread";
		uint64_t v[3] = { fp->none, fp_str(fp, name), fp->false_ };

		th[i] = fp_instance(fp, i ? "Worker" : "_MainThread", attr_names, v, 3, i == 1);
		keys[i] = fp_long(fp, (int64_t)idents[i]);
	}
	vals[0] = fp_dict(fp, keys, th, 2);
	keys[0] = fp_str(fp, "_active");
	keys[1] = fp_str(fp, "_limbo");
	vals[1] = fp_dict(fp, NULL, NULL, 0);
	tmod = fp_module(fp, fp_dict(fp, keys, vals, 2));
	keys[0] = fp_str(fp, "sys");
	keys[1] = fp_str(fp, "threading");
	keys[2] = fp_str(fp, "os");
	vals[0] = fp_module(fp, fp_dict(fp, NULL, NULL, 0));
	vals[1] = tmod;
	vals[2] = vals[0];
	fp_set_modules(fp, fp_dict(fp, keys, vals, 3));
}

static void walk_scene_init(struct walk_scene *sc, const struct py_layout *L)
{
	static const uint64_t idents[3] = { 0x7f0000001000, 0x7f0000002000, 0x7f0000003000 };
	uint8_t kinds[NFOO];
	uint64_t vals[NFOO];
	struct fakepy *fp;
	uint64_t f_main, f_foo, f_run, f_shim, ts1;
	int shim = 0;

	memset(sc, 0, sizeof(*sc));
	fp = sc->fp = fp_new(L);
	for (int i = 0; i < NFOO; i++)
		kinds[i] = i == NFOO - 1 ? FP_KIND_CELL : FP_KIND_LOCAL;
	sc->code_main = fp_code(fp, &(struct fp_code_spec){
		.name = "<module>", .filename = "/app/main.py", .firstlineno = 1,
		.lines = main_lines, .ninstr = 5 });
	sc->code_foo = fp_code(fp, &(struct fp_code_spec){
		.name = "foo", .qualname = "Service.foo", .filename = "/app/service.py",
		.firstlineno = 10, .lines = foo_lines, .ninstr = 5, .argcount = 2,
		.flags = FP_CO_VARARGS, .varnames = foo_vars, .nvarnames = NFOO,
		.kinds = L->code.localspluskinds != NONE ? kinds : NULL });
	sc->code_bar = fp_code(fp, &(struct fp_code_spec){
		.name = "bar", .qualname = "outer.<locals>.bar",
		.filename = "/srv/donn\xc3\xa9" "es/\xe6\x97\xa5.py", .firstlineno = 400,
		.lines = bar_lines, .ninstr = 4 });
	sc->code_run = fp_code(fp, &(struct fp_code_spec){
		.name = "run", .qualname = "Worker.run", .filename = "/app/worker.py",
		.firstlineno = 50, .lines = run_lines, .ninstr = 3 });
	sc->code_wait = fp_code(fp, &(struct fp_code_spec){
		.name = "wait", .qualname = "Condition.wait",
		.filename = "/usr/lib/python3/threading.py", .firstlineno = 300,
		.lines = wait_lines, .ninstr = 3 });
	sc->code_none = fp_code(fp, &(struct fp_code_spec){
		.name = "gen", .filename = "/app/gen.py", .firstlineno = 70,
		.lines = none_lines, .ninstr = 4 });

	locals_values(fp, vals);
	sc->f_main = f_main = fp_frame(fp, sc->code_main, 3, 0);
	sc->f_foo = f_foo = fp_frame_ex(fp, &(struct fp_frame_spec){
		.code = sc->code_foo, .instr = 3, .back = f_main, .tag = true,
		.locals = vals, .nlocals = NFOO });
	/* A C call between foo and bar: a shim frame where there are any. */
	shim = fp_owner_shim(fp);
	f_shim = shim ? fp_frame_ex(fp, &(struct fp_frame_spec){
				.code = fp->none, .instr = 0, .back = f_foo, .owner = shim })
		      : f_foo;
	sc->f_bar = fp_frame(fp, sc->code_bar, 2, f_shim);
	/* A frame not started yet on top of thread 1. */
	f_run = fp_frame(fp, sc->code_run, 1, 0);
	sc->f_wait = fp_frame(fp, sc->code_wait, 2, f_run);
	sc->f_wait = fp_frame(fp, sc->code_none, 1,
			      fp_frame(fp, sc->code_none, -1, sc->f_wait));
	sc->ts[0] = fp_thread(fp, sc->f_bar, idents[0], 100);
	sc->ts[1] = ts1 = fp_thread(fp, sc->f_wait, idents[1], 101);
	sc->ts[2] = fp_thread(fp, 0, idents[2], 102);
	fp_gil(fp, ts1, true);
	add_threading(fp, idents);
}

static void write_walk(const struct py_layout *L)
{
	struct walk_scene sc;
	char name[64];
	FILE *f;

	walk_scene_init(&sc, L);
	snprintf(name, sizeof(name), "fake-3.%d", L->minor);
	f = open_seed("walk", name);
	fz_put_walk_header(f, L->minor, 0, 0, sc.fp->runtime);
	put_arenas(f, sc.fp, 0);
	close_seed(f);

	/* Two snapshots: code objects renamed and a frame moved in the
	 * second, as between two samples; by function on odd versions. */
	snprintf(name, sizeof(name), "fake-3.%d-phases", L->minor);
	f = open_seed("walk", name);
	fz_put_walk_header(f, L->minor,
			   FZW_MEM_CACHE | FZW_TWO_PHASE | (L->minor % 2 ? FZW_BY_FUNCTION : 0),
			   64, sc.fp->runtime);
	put_arenas(f, sc.fp, FZR_NOT_SECOND);
	fp_w64(sc.fp, sc.code_bar + L->code.name, fp_str(sc.fp, "baz"));
	if (L->code.qualname != NONE)
		fp_w64(sc.fp, sc.code_bar + L->code.qualname, fp_str(sc.fp, "outer.<locals>.baz"));
	fp_w32(sc.fp, sc.code_wait + L->code.firstlineno, 299);
	fp_frame_set_code(sc.fp, sc.f_bar, sc.code_run, 2);
	put_arenas(f, sc.fp, FZR_NOT_FIRST);
	close_seed(f);
	fp_free(sc.fp);
}

/* The scene broken in one way each, for the walker's error paths: a
 * frame chain that loops, a thread list that loops, a thread state of
 * another interpreter, a stack deeper than max_depth, a frame with more
 * locals than are shown and fewer kinds than names, a hole of unmapped
 * memory among a frame's locals. */
enum variant { V_LOOP, V_TSLOOP, V_TSBAD, V_TRUNC, V_MANYLOCALS, V_CUT, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {
	"loop", "tsloop", "tsbad", "truncated", "manylocals", "cut",
};

static void write_variant(const struct py_layout *L, enum variant v)
{
	struct walk_scene sc;
	struct fakepy *fp;
	uint16_t max_depth = 0;
	char name[64];
	FILE *f;

	walk_scene_init(&sc, L);
	fp = sc.fp;
	switch (v) {
	case V_LOOP:
		fp_w64(fp, sc.f_main + L->frame.back, sc.f_bar);
		break;
	case V_TSLOOP:
		fp_w64(fp, sc.ts[2] + L->tstate.next, sc.ts[0]);
		break;
	case V_TSBAD:
		fp_w64(fp, sc.ts[1] + L->tstate.interp, sc.ts[1]);
		break;
	case V_TRUNC:
		max_depth = 2;
		break;
	case V_MANYLOCALS: {
		enum { N = 300 };
		static char names[N][8];
		const char *vn[N];
		uint64_t vals[N], code, frame;

		for (int i = 0; i < N; i++) {
			snprintf(names[i], sizeof(names[i]), "v%d", i);
			vn[i] = names[i];
			vals[i] = i % 7 ? fp->none : 0;
		}
		code = fp_code(fp, &(struct fp_code_spec){
			.name = "many", .filename = "/app/many.py", .firstlineno = 1,
			.lines = main_lines, .ninstr = 5, .argcount = 3,
			.flags = FP_CO_VARKEYWORDS, .varnames = vn, .nvarnames = N });
		if (L->code.localspluskinds != NONE) {
			uint64_t kinds = fp_code_field(fp, code, L->code.localspluskinds);

			fp_w64(fp, kinds + L->o.ob_size, 100);	/* fewer kinds than names */
		}
		frame = fp_frame_ex(fp, &(struct fp_frame_spec){
			.code = code, .instr = 2, .back = sc.f_bar, .locals = vals, .nlocals = N });
		fp_w64(fp, L->tstate.cframe_frame != NONE
			   ? fp_r64(fp, sc.ts[0] + L->tstate.frame) + L->tstate.cframe_frame
			   : sc.ts[0] + L->tstate.frame, frame);
		break;
	}
	case V_CUT:
		break;
	default:
		break;
	}
	snprintf(name, sizeof(name), "fake-3.%d-%s", L->minor, variant_names[v]);
	f = open_seed("walk", name);
	fz_put_walk_header(f, L->minor, 0, max_depth, fp->runtime);
	if (v == V_CUT) {
		/* Everything but the frames, then the frames with a hole in
		 * the middle of foo's locals. */
		struct fp_arena_buf saved = fp->arena[FP_FRAME];
		uint64_t base = FP_ARENA_BASE(FP_FRAME);
		uint64_t cut = sc.f_foo + L->frame.localsplus + 8 * 6 - base;

		fp->arena[FP_FRAME].used = 0;
		put_arenas(f, fp, 0);
		fp->arena[FP_FRAME] = saved;
		fz_put_region(f, base, saved.data, (uint32_t)cut, 0);
		fz_put_region(f, base + cut + 16, saved.data + cut + 16,
			      (uint32_t)(saved.used - cut - 16), 0);
	} else {
		put_arenas(f, fp, 0);
	}
	close_seed(f);
	fp_free(fp);
}

/* --- pyobj ---------------------------------------------------------------- */

static void put_pyobj(const struct fakepy *fp, const char *what, uint64_t addr,
		      const char *key, int64_t ikey, uint8_t flags)
{
	char name[96];
	size_t keylen = strlen(key);
	FILE *f;

	snprintf(name, sizeof(name), "fake-3.%d-%s", fp->L->minor, what);
	f = open_seed("pyobj", name);
	fwrite(FZ_PYOBJ_MAGIC, 1, 4, f);
	fputc(fp->L->minor, f);
	fputc(flags, f);
	fputc((int)keylen, f);
	fputc(0, f);
	fz_put64(f, addr);
	fz_put64(f, (uint64_t)ikey);
	fwrite(key, 1, keylen, f);
	put_arenas(f, fp, 0);
	close_seed(f);
}

static void write_pyobj(const struct py_layout *L)
{
	static const uint32_t latin[] = { 'c', 0xe9, 0xff };
	static const uint32_t ucs2[] = { 0x442, 0x435, 0x441, 0x442 };
	static const uint32_t ucs4[] = { 0x1f600, 'x' };
	static const uint32_t big[] = { 0x3fffffff, 0x3fffffff, 0x3fffffff, 1 };
	static const char *const names[] = { "_target", "_name", "_daemonic" };
	struct fakepy *fp = fp_new(L);
	uint64_t o[16], k[3], v[3];
	int n = 0;

	/* Everything in one address space; one seed per object. */
	o[n++] = fp_str(fp, "MainThread");
	o[n++] = fp_str_cps(fp, latin, 3, 1, false, true);
	o[n++] = fp_str_cps(fp, ucs2, 4, 2, false, true);
	o[n++] = fp_str_cps(fp, ucs4, 2, 4, false, true);
	o[n++] = fp_str_cps(fp, latin, 3, 1, false, false);
	o[n++] = fp_bytes(fp, "b\x00yt\xe9s'", 7);
	o[n++] = fp_long(fp, -1234567890123ll);
	o[n++] = fp_long_digits(fp, -1, big, 4);
	o[n++] = fp_float(fp, 1e-7);
	k[0] = fp_str(fp, "_active");
	k[1] = fp_long(fp, 140000000000123ll);
	k[2] = fp_str(fp, "\xc3\xa9t\xc3\xa9");
	v[0] = fp->true_;
	v[1] = fp->none;
	v[2] = fp->false_;
	o[n++] = fp_tuple(fp, k, 3);
	o[n++] = fp_list(fp, k, 3);
	o[n++] = fp_dict(fp, k, v, 3);			/* general keys */
	o[n++] = fp_dict_ex(fp, (uint64_t[]){ k[0], k[2] }, v, 2, FP_DICT_SPLIT);
	v[0] = fp_str(fp, "worker");
	o[n++] = fp_instance(fp, "Thread", names, v, 3, false);
	o[n++] = fp_instance(fp, "Worker", names, v, 3, true);
	o[n++] = fp_module(fp, o[11]);

	static const char *const what[] = {
		"str", "latin1", "ucs2", "ucs4", "legacy", "bytes", "int", "bigint", "float",
		"tuple", "list", "dict", "split", "instance", "shared", "module",
	};
	for (int i = 0; i < n; i++)
		put_pyobj(fp, what[i], o[i], i >= 13 ? "_name" : i == 12 ? "\xc3\xa9t\xc3\xa9" : "_active",
			  i == 9 ? 1 : 140000000000123ll, (uint8_t)i);
	fp_free(fp);
}

/* --- linetable ------------------------------------------------------------ */

static void write_linetables(const struct py_layout *L)
{
	static const int jumps[] = { 5, 5, 400, 3, 300000, 1, -1, 7, 7, 8 };
	static const int plain[] = { 1, 2, 3, 4, 4, 4, 9, 2 };
	const struct { const int *lines; int n; const char *what; } specs[] = {
		{ jumps, 10, "jumps" }, { plain, 8, "plain" },
	};
	struct fakepy *fp = fp_new(L);

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		int lines[16];
		uint64_t code, table;
		int64_t len;
		char name[64];
		FILE *f;

		/* Instructions without a line exist only from 3.11. */
		for (int i = 0; i < specs[s].n; i++)
			lines[i] = specs[s].lines[i] < 0 && L->lines != LT_LOCATIONS
				   ? 6 : specs[s].lines[i];
		code = fp_code(fp, &(struct fp_code_spec){
			.name = "f", .filename = "f.py", .firstlineno = 2,
			.lines = lines, .ninstr = specs[s].n });
		table = fp_code_field(fp, code, L->code.linetable);
		memcpy(&len, fp_ptr(fp, table + L->o.ob_size, 8), 8);
		snprintf(name, sizeof(name), "fake-3.%d-%s", L->minor, specs[s].what);
		f = open_seed("linetable", name);
		fputc(L->lines, f);
		fz_put32(f, 2);
		fz_put32(f, 2 * (uint32_t)(specs[s].n / 2));
		fwrite(fp_ptr(fp, table + L->o.bytes_sval, (size_t)len), 1, (size_t)len, f);
		close_seed(f);
	}
	fp_free(fp);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0777) < 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	for (int minor = LAYOUT_MIN_MINOR; minor <= LAYOUT_MAX_MINOR; minor++) {
		const struct py_layout *L = layout_for_minor(minor);

		write_walk(L);
		/* The error paths for each frame and thread model. */
		if (minor == 9 || minor == 11 || minor == 12 || minor == 14)
			for (int v = 0; v < NVARIANTS; v++)
				write_variant(L, (enum variant)v);
		/* The pyobj harness reads every object with every layout; one
		 * set per attribute model is enough. */
		if (minor >= 10 && minor <= 13)
			write_pyobj(L);
		/* One set per format is enough. */
		if (minor == 7 || minor == 10 || minor == 11)
			write_linetables(L);
	}
	return 0;
}
