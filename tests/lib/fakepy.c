/* Synthetic CPython memory: see fakepy.h.
 *
 * The builder only ever places fields through the layout table, never by
 * version number, except where CPython itself encodes something differently
 * (state bits, the lasti models, the 3.11/3.12 cframe): a fake that knew
 * more than the table would hide the table's mistakes.
 */
#include "fakepy.h"
#include "process/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_MAX	(64u << 20)
#define PAGE		4096u

static void die(const char *what)
{
	fprintf(stderr, "fakepy: %s\n", what);
	abort();
}

static void *zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

/* The furthest of the offsets (layout_span() counts the word after it). */
#define MAX_OFF(...) \
	(layout_span((const uint32_t[]){ __VA_ARGS__ }, \
		     sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t)) - 8)

/* --- raw memory ----------------------------------------------------------- */

uint64_t fp_alloc(struct fakepy *fp, enum fp_arena a, size_t size)
{
	struct fp_arena_buf *ab = &fp->arena[a];
	size_t start = (ab->used + 15) & ~(size_t)15;
	size_t end = start + size;

	if (end > ARENA_MAX || end < start)
		die("arena full");
	if (end > ab->cap) {
		size_t cap = ab->cap ? ab->cap : 64 * 1024;

		while (cap < end)
			cap *= 2;
		ab->data = realloc(ab->data, cap);
		if (!ab->data)
			die("out of memory");
		memset(ab->data + ab->cap, 0, cap - ab->cap);
		ab->cap = cap;
	}
	ab->used = end;
	return FP_ARENA_BASE(a) + start;
}

void *fp_ptr(struct fakepy *fp, uint64_t addr, size_t len)
{
	for (int a = 0; a < FP_NARENAS; a++) {
		struct fp_arena_buf *ab = &fp->arena[a];
		uint64_t base = FP_ARENA_BASE(a);

		if (addr >= base && addr - base <= ab->used && len <= ab->used - (addr - base))
			return ab->data + (addr - base);
	}
	fprintf(stderr, "fakepy: %#llx+%zu is not allocated\n", (unsigned long long)addr, len);
	abort();
}

void fp_w64(struct fakepy *fp, uint64_t addr, uint64_t v)
{
	memcpy(fp_ptr(fp, addr, 8), &v, 8);
}

void fp_w32(struct fakepy *fp, uint64_t addr, uint32_t v)
{
	memcpy(fp_ptr(fp, addr, 4), &v, 4);
}

void fp_w8(struct fakepy *fp, uint64_t addr, uint8_t v)
{
	*(uint8_t *)fp_ptr(fp, addr, 1) = v;
}

uint64_t fp_r64(struct fakepy *fp, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, fp_ptr(fp, addr, 8), 8);
	return v;
}

static void fp_wbytes(struct fakepy *fp, uint64_t addr, const void *data, size_t n)
{
	if (n)
		memcpy(fp_ptr(fp, addr, n), data, n);
}

struct mem *fp_mem(const struct fakepy *fp)
{
	struct mem *m = mem_fake_new();

	for (int a = 0; a < FP_NARENAS; a++) {
		const struct fp_arena_buf *ab = &fp->arena[a];
		/* Whole pages, as a process maps them: C strings are read in
		 * 64-byte chunks that may run past the last object. */
		size_t len = (ab->used + PAGE - 1) & ~(size_t)(PAGE - 1);

		if (!ab->used)
			continue;
		if (len > ab->cap)
			len = ab->cap;
		if (mem_fake_add(m, FP_ARENA_BASE(a), ab->data, len) < 0)
			die("mem_fake_add failed");
	}
	return m;
}

static int now_read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return mem_read(((struct fp_now *)m)->cur, addr, buf, len);
}

static void now_close(struct mem *m)
{
	mem_close(((struct fp_now *)m)->cur);
}

void fp_now_init(struct fp_now *now)
{
	memset(now, 0, sizeof(*now));
	now->mem.read = now_read;
	now->mem.close = now_close;
}

void fp_now_take(struct fp_now *now, const struct fakepy *fp)
{
	mem_close(now->cur);
	now->cur = fp_mem(fp);
}

void fp_pyinterp(const struct fakepy *fp, struct pyinterp *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->pid = 1;
	pi->runtime = fp->runtime;
	pi->minor = fp->L->minor;
	snprintf(pi->version, sizeof(pi->version), "3.%d", fp->L->minor);
	pi->layout = *fp->L;
}

/* --- objects -------------------------------------------------------------- */

static uint64_t type_size(const struct py_layout *L)
{
	return MAX_OFF(L->obj.tp_name, L->obj.tp_flags, L->obj.tp_basicsize,
		       L->obj.tp_dictoffset, L->obj.ht_cached_keys) + 8;
}

uint64_t fp_object(struct fakepy *fp, enum fp_arena a, uint64_t type, size_t size)
{
	uint64_t obj = fp_alloc(fp, a, size < 16 ? 16 : size);

	fp_w64(fp, obj, 1);
	fp_w64(fp, obj + fp->L->obj.ob_type, type);
	return obj;
}

static uint64_t cstring(struct fakepy *fp, const char *s)
{
	uint64_t p = fp_alloc(fp, FP_OBJ, strlen(s) + 1);

	fp_wbytes(fp, p, s, strlen(s) + 1);
	return p;
}

uint64_t fp_type(struct fakepy *fp, const char *name)
{
	const struct py_layout *L = fp->L;
	uint64_t t = fp_object(fp, FP_OBJ, fp->t.type, type_size(L));

	/* The first type made is "type" itself, its own type. */
	if (!fp->t.type)
		fp_w64(fp, t + L->obj.ob_type, t);
	fp_w64(fp, t + L->obj.tp_name, cstring(fp, name));
	fp_w64(fp, t + L->obj.tp_basicsize, 16);
	return t;
}

/* Decode UTF-8 (trusted: it is our own test input) into code points. */
static size_t decode_utf8(const char *s, uint32_t *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p) {
		uint32_t cp;
		int extra;

		if (*p < 0x80)
			cp = *p, extra = 0;
		else if (*p < 0xe0)
			cp = *p & 0x1f, extra = 1;
		else if (*p < 0xf0)
			cp = *p & 0x0f, extra = 2;
		else
			cp = *p & 0x07, extra = 3;
		p++;
		while (extra-- > 0 && *p)
			cp = cp << 6 | (*p++ & 0x3f);
		out[n++] = cp;
	}
	return n;
}

uint64_t fp_str(struct fakepy *fp, const char *utf8)
{
	uint32_t *cps = zalloc((strlen(utf8) + 1) * sizeof(*cps));
	size_t n = decode_utf8(utf8, cps);
	uint32_t maxcp = 0;
	unsigned kind;
	uint64_t s;

	for (size_t i = 0; i < n; i++)
		if (cps[i] > maxcp)
			maxcp = cps[i];
	kind = maxcp < 0x100 ? 1 : maxcp < 0x10000 ? 2 : 4;
	s = fp_str_cps(fp, cps, n, kind, maxcp < 0x80, true);
	free(cps);
	return s;
}

uint64_t fp_str_cps(struct fakepy *fp, const uint32_t *cps, size_t n, unsigned kind,
		    bool ascii, bool compact)
{
	const struct py_layout *L = fp->L;
	uint32_t hdr = ascii && compact ? L->str.ascii_size : L->str.compact_size;
	uint32_t state = FP_STATE_KIND(kind) | (ascii ? FP_STATE_ASCII : 0);
	uint64_t s, data;

	if (L->minor <= 11)
		state |= FP_STATE_READY;
	if (compact) {
		state |= FP_STATE_COMPACT;
		s = fp_object(fp, FP_OBJ, fp->t.str, hdr + (n + 1) * kind);
		data = s + hdr;
	} else {
		/* A legacy string: PyUnicodeObject, data.any after the
		 * compact header. */
		s = fp_object(fp, FP_OBJ, fp->t.str, L->str.compact_size + 8);
		data = fp_alloc(fp, FP_OBJ, (n + 1) * kind);
		fp_w64(fp, s + L->str.compact_size, data);
	}
	fp_w64(fp, s + L->str.length, n);
	fp_w64(fp, s + L->str.length + 8, (uint64_t)-1);	/* hash: not computed */
	fp_w32(fp, s + L->str.state, state);
	for (size_t i = 0; i < n; i++) {
		if (kind == 1)
			fp_w8(fp, data + i, (uint8_t)cps[i]);
		else if (kind == 2)
			fp_wbytes(fp, data + 2 * i, &(uint16_t){ (uint16_t)cps[i] }, 2);
		else
			fp_w32(fp, data + 4 * i, cps[i]);
	}
	return s;
}

void fp_str_set_length(struct fakepy *fp, uint64_t str, uint64_t length)
{
	fp_w64(fp, str + fp->L->str.length, length);
}

void fp_str_set_state(struct fakepy *fp, uint64_t str, uint32_t state)
{
	fp_w32(fp, str + fp->L->str.state, state);
}

uint32_t fp_str_state(struct fakepy *fp, uint64_t str)
{
	uint32_t v;

	memcpy(&v, fp_ptr(fp, str + fp->L->str.state, 4), 4);
	return v;
}

uint64_t fp_str_data_slot(struct fakepy *fp, uint64_t str)
{
	return str + fp->L->str.compact_size;
}

uint64_t fp_bytes(struct fakepy *fp, const void *data, size_t n)
{
	const struct py_layout *L = fp->L;
	uint64_t b = fp_object(fp, FP_OBJ, fp->t.bytes, L->o.bytes_sval + n + 1);

	fp_w64(fp, b + L->o.ob_size, n);
	fp_w64(fp, b + L->o.ob_size + 8, (uint64_t)-1);	/* ob_shash */
	fp_wbytes(fp, b + L->o.bytes_sval, data, n);
	return b;
}

static uint64_t long_of_type(struct fakepy *fp, uint64_t type, int sign,
			     const uint32_t *digits, size_t n)
{
	const struct py_layout *L = fp->L;
	uint64_t o = fp_object(fp, FP_OBJ, type, L->o.long_digits + 4 * (n ? n : 1));
	uint64_t tag;

	if (L->longs == LONG_LV_TAG)
		tag = (uint64_t)n << 3 | (uint64_t)(1 - sign);
	else
		tag = (uint64_t)(sign * (int64_t)n);
	fp_w64(fp, o + L->o.long_tag, tag);
	for (size_t i = 0; i < n; i++)
		fp_w32(fp, o + L->o.long_digits + 4 * i, digits[i]);
	return o;
}

uint64_t fp_long_digits(struct fakepy *fp, int sign, const uint32_t *digits, size_t n)
{
	return long_of_type(fp, fp->t.int_, sign, digits, n);
}

static size_t to_digits(int64_t v, uint32_t *d)
{
	uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v;
	size_t n = 0;

	for (; a; a >>= 30)
		d[n++] = a & 0x3fffffff;
	return n;
}

uint64_t fp_long(struct fakepy *fp, int64_t v)
{
	uint32_t d[3];
	size_t n = to_digits(v, d);

	return fp_long_digits(fp, v < 0 ? -1 : v > 0, d, n);
}

uint64_t fp_float(struct fakepy *fp, double d)
{
	uint64_t o = fp_object(fp, FP_OBJ, fp->t.float_, fp->L->o.float_val + 8);

	fp_wbytes(fp, o + fp->L->o.float_val, &d, 8);
	return o;
}

uint64_t fp_tuple(struct fakepy *fp, const uint64_t *items, size_t n)
{
	const struct py_layout *L = fp->L;
	uint64_t t = fp_object(fp, FP_OBJ, fp->t.tuple, L->o.tuple_item + 8 * (n ? n : 1));

	fp_w64(fp, t + L->o.ob_size, n);
	for (size_t i = 0; i < n; i++)
		fp_w64(fp, t + L->o.tuple_item + 8 * i, items ? items[i] : 0);
	return t;
}

uint64_t fp_list(struct fakepy *fp, const uint64_t *items, size_t n)
{
	const struct py_layout *L = fp->L;
	uint64_t l = fp_object(fp, FP_OBJ, fp->t.list, L->o.list_item + 16);
	uint64_t arr = fp_alloc(fp, FP_OBJ, 8 * (n ? n : 1));

	fp_w64(fp, l + L->o.ob_size, n);
	fp_w64(fp, l + L->o.list_item, arr);
	fp_w64(fp, l + L->o.list_item + 8, n);	/* allocated */
	for (size_t i = 0; i < n; i++)
		fp_w64(fp, arr + 8 * i, items[i]);
	return l;
}

uint64_t fp_module(struct fakepy *fp, uint64_t dict)
{
	uint64_t mod = fp_object(fp, FP_OBJ, fp->t.module, fp->L->o.module_dict + 48);

	fp_w64(fp, mod + fp->L->o.module_dict, dict);
	return mod;
}

/* --- dicts ---------------------------------------------------------------- */

/* CPython's USABLE_FRACTION: a table of size n holds 2n/3 entries. */
static size_t usable(size_t size)
{
	return (size << 1) / 3;
}

static size_t table_size(size_t n)
{
	size_t size = 8;

	while (usable(size) < n)
		size *= 2;
	return size;
}

static unsigned log2u(size_t v)
{
	unsigned l = 0;

	while ((size_t)1 << l < v)
		l++;
	return l;
}

/* Bytes per index: DK_IXSIZE. */
static size_t ixsize(size_t size)
{
	return size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffu ? 4 : 8;
}

static void put_index(struct fakepy *fp, uint64_t at, size_t ix, int64_t v)
{
	uint64_t u = (uint64_t)v;

	fp_wbytes(fp, at, &u, ix);	/* little-endian: the low ix bytes */
}

static enum fp_dict_kind auto_kind(struct fakepy *fp, const uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i] && fp_r64(fp, keys[i] + fp->L->obj.ob_type) != fp->t.str)
			return FP_DICT_GENERAL;
	return FP_DICT_UNICODE;
}

uint64_t fp_dict_keys(struct fakepy *fp, const uint64_t *keys, const uint64_t *values,
		      size_t n, enum fp_dict_kind kind)
{
	size_t size = table_size(n), ix = ixsize(size);
	size_t hdr, esize, koff;
	uint64_t dk, entries;

	if (kind == FP_DICT_AUTO)
		kind = auto_kind(fp, keys, n);
	if (fp->L->dictkeys == DICTKEYS_310) {
		hdr = 40;
		esize = 24;
		koff = 8;
	} else {
		hdr = 32;
		esize = kind == FP_DICT_GENERAL ? 24 : 16;
		koff = kind == FP_DICT_GENERAL ? 8 : 0;
	}
	dk = fp_alloc(fp, FP_OBJ, hdr + size * ix + usable(size) * esize);
	entries = dk + hdr + size * ix;
	fp_w64(fp, dk, 1);	/* dk_refcnt */
	if (fp->L->dictkeys == DICTKEYS_310) {
		fp_w64(fp, dk + 8, size);
		fp_w64(fp, dk + 24, usable(size) - n);
		fp_w64(fp, dk + 32, n);
	} else {
		fp_w8(fp, dk + 8, (uint8_t)log2u(size));
		fp_w8(fp, dk + 9, (uint8_t)log2u(size * ix));
		fp_w8(fp, dk + 10, (uint8_t)kind);
		fp_w64(fp, dk + 16, usable(size) - n);
		fp_w64(fp, dk + 24, n);
	}
	/* The index is not a real hash table (the reader scans entries in
	 * order), but it is well formed: entry i in slot i, the rest empty. */
	for (size_t i = 0; i < size; i++)
		put_index(fp, dk + hdr + i * ix, ix, i < n ? (int64_t)i : -1);
	for (size_t i = 0; i < n; i++) {
		uint64_t e = entries + i * esize;

		if (esize == 24)
			fp_w64(fp, e, 0x1000 + i);	/* me_hash */
		fp_w64(fp, e + koff, keys[i]);
		if (values)
			fp_w64(fp, e + koff + 8, values[i]);
	}
	return dk;
}

uint64_t fp_dict_keys_nentries(struct fakepy *fp, uint64_t keys)
{
	return keys + (fp->L->dictkeys == DICTKEYS_310 ? 32 : 24);
}

uint64_t fp_dict_values(struct fakepy *fp, const uint64_t *values, size_t n)
{
	const struct py_layout *L = fp->L;
	uint64_t v = fp_alloc(fp, FP_OBJ, L->o.dictvalues_values + 8 * (n ? n : 1));

	if (L->o.dictvalues_values >= 4) {
		/* 3.13+: capacity, size, embedded, valid. */
		fp_w8(fp, v, (uint8_t)n);
		fp_w8(fp, v + 1, (uint8_t)n);
		fp_w8(fp, v + 3, 1);
	}
	for (size_t i = 0; i < n; i++)
		fp_w64(fp, v + L->o.dictvalues_values + 8 * i, values[i]);
	return v;
}

uint64_t fp_dict_ex(struct fakepy *fp, const uint64_t *keys, const uint64_t *values,
		    size_t n, enum fp_dict_kind kind)
{
	const struct py_layout *L = fp->L;
	uint64_t d = fp_object(fp, FP_OBJ, fp->t.dict, L->o.dict_values + 8);
	bool split = kind == FP_DICT_SPLIT;
	size_t used = 0;

	for (size_t i = 0; i < n; i++)
		used += keys[i] != 0;
	fp_w64(fp, d + L->o.dict_used, used);
	fp_w64(fp, d + L->o.dict_keys, fp_dict_keys(fp, keys, split ? NULL : values, n, kind));
	if (split)
		fp_w64(fp, d + L->o.dict_values, fp_dict_values(fp, values, n));
	return d;
}

uint64_t fp_dict(struct fakepy *fp, const uint64_t *keys, const uint64_t *values, size_t n)
{
	return fp_dict_ex(fp, keys, values, n, FP_DICT_AUTO);
}

/* --- instances ------------------------------------------------------------ */

#define TPFLAGS_INLINE_VALUES	(1ul << 2)
/* Room before an object for the GC header and the managed dict/values
 * words CPython keeps at negative offsets. */
#define PREHEADER		32

uint64_t fp_instance(struct fakepy *fp, const char *type_name, const char *const *names,
		     const uint64_t *values, size_t n, bool shared)
{
	const struct py_layout *L = fp->L;
	uint64_t type = fp_type(fp, type_name);
	uint64_t *keys = zalloc((n ? n : 1) * sizeof(*keys));
	uint64_t block, obj, dict = 0, vals = 0;

	for (size_t i = 0; i < n; i++)
		keys[i] = fp_str(fp, names[i]);
	if (L->attrs == ATTRS_DICTOFFSET || !shared)
		dict = fp_dict(fp, keys, values, n);
	else
		fp_w64(fp, type + L->obj.ht_cached_keys,
		       fp_dict_keys(fp, keys, NULL, n, FP_DICT_SPLIT));
	free(keys);

	if (L->attrs == ATTRS_INLINE_313 && shared) {
		/* The values live inline, right after the 16-byte object. */
		block = fp_alloc(fp, FP_OBJ, PREHEADER + 16 + L->o.dictvalues_values + 8 * n);
		obj = block + PREHEADER;
		fp_w64(fp, type + L->obj.tp_flags, TPFLAGS_INLINE_VALUES);
		fp_w8(fp, obj + 16, (uint8_t)n);
		fp_w8(fp, obj + 16 + 1, (uint8_t)n);
		fp_w8(fp, obj + 16 + 2, 1);	/* embedded */
		fp_w8(fp, obj + 16 + 3, 1);	/* valid */
		for (size_t i = 0; i < n; i++)
			fp_w64(fp, obj + 16 + L->o.dictvalues_values + 8 * i, values[i]);
	} else {
		block = fp_alloc(fp, FP_OBJ, PREHEADER + 24);
		obj = block + PREHEADER;
		if (shared && L->attrs != ATTRS_DICTOFFSET)
			vals = fp_dict_values(fp, values, n);
	}
	fp_w64(fp, obj, 1);
	fp_w64(fp, obj + L->obj.ob_type, type);

	switch (L->attrs) {
	case ATTRS_DICTOFFSET:
		fp_w64(fp, type + L->obj.tp_dictoffset, 16);
		fp_w64(fp, type + L->obj.tp_basicsize, 24);
		fp_w64(fp, obj + 16, dict);
		break;
	case ATTRS_MANAGED_311:
		fp_w64(fp, obj - 24, dict);
		fp_w64(fp, obj - 32, vals);
		break;
	case ATTRS_MANAGED_312:
		/* A values pointer is stored minus one, so it is odd. */
		fp_w64(fp, obj - 24, dict ? dict : vals - 1);
		break;
	case ATTRS_INLINE_313:
		fp_w64(fp, obj - 24, dict);
		break;
	}
	/* A managed dict: CPython makes tp_dictoffset negative. */
	if (L->attrs != ATTRS_DICTOFFSET)
		fp_w64(fp, type + L->obj.tp_dictoffset, (uint64_t)-1);
	return obj;
}

uint64_t fp_instance_again(struct fakepy *fp, uint64_t obj)
{
	uint64_t block = fp_alloc(fp, FP_OBJ, PREHEADER + 24);

	memcpy(fp_ptr(fp, block, PREHEADER + 24), fp_ptr(fp, obj - PREHEADER, PREHEADER + 24),
	       PREHEADER + 24);
	return block + PREHEADER;
}

/* --- code objects --------------------------------------------------------- */

/* 3.7-3.9 co_lnotab: (address increment, line increment) pairs, each
 * increment split over several pairs when it does not fit a byte. */
static size_t lnotab(const struct fp_code_spec *s, uint8_t *t)
{
	int64_t line = s->firstlineno, addr = 0;
	size_t n = 0;

	for (int i = 0; i < s->ninstr; i++) {
		int64_t da = 2 * i - addr, dl = s->lines[i] - line;

		if (!dl)
			continue;
		for (; da > 255; da -= 255)
			t[n++] = 255, t[n++] = 0;
		do {
			int64_t step = dl > 127 ? 127 : dl < -128 ? -128 : dl;

			t[n++] = (uint8_t)da;
			t[n++] = (uint8_t)(int8_t)step;
			da = 0;
			dl -= step;
		} while (dl);
		addr = 2 * i;
		line = s->lines[i];
	}
	return n;
}

/* 3.10 co_linetable: one (2 bytes, line delta) pair per instruction, big
 * deltas carried by zero-length pairs first. */
static size_t linetable310(const struct fp_code_spec *s, uint8_t *t)
{
	int64_t line = s->firstlineno;
	size_t n = 0;

	for (int i = 0; i < s->ninstr; i++) {
		int64_t dl = s->lines[i] - line;

		while (dl > 127 || dl < -127) {
			int64_t step = dl > 0 ? 127 : -127;

			t[n++] = 0;
			t[n++] = (uint8_t)(int8_t)step;
			dl -= step;
		}
		t[n++] = 2;
		t[n++] = (uint8_t)(int8_t)dl;
		line = s->lines[i];
	}
	return n;
}

/* 3.11+ location table: one entry per code unit.  Small steps use the
 * one-line forms (codes 10-12, columns follow); the rest the no-column form
 * 13 with a signed varint line delta; -1 as a line is an entry with none. */
static size_t locations(const struct fp_code_spec *s, uint8_t *t)
{
	int64_t line = s->firstlineno;
	size_t n = 0;

	for (int i = 0; i < s->ninstr; i++) {
		int64_t dl;
		uint64_t v;

		if (s->lines[i] < 0) {
			t[n++] = 0x80 | 15 << 3;
			continue;
		}
		dl = s->lines[i] - line;
		line = s->lines[i];
		if (dl >= 0 && dl <= 2) {
			t[n++] = (uint8_t)(0x80 | (10 + dl) << 3);
			t[n++] = 4;	/* start column */
			t[n++] = 9;	/* end column */
			continue;
		}
		t[n++] = 0x80 | 13 << 3;
		v = dl < 0 ? (uint64_t)-dl << 1 | 1 : (uint64_t)dl << 1;
		while (v >= 64) {
			t[n++] = 0x40 | (v & 63);
			v >>= 6;
		}
		t[n++] = (uint8_t)v;
	}
	return n;
}

static uint64_t line_table(struct fakepy *fp, const struct fp_code_spec *s)
{
	/* Worst case per instruction: a line jump of up to 2^31 in 127s. */
	uint8_t *t;
	size_t n, cap = 64;
	uint64_t b;

	for (int i = 0; i < s->ninstr; i++) {
		int64_t d = (int64_t)s->lines[i] - (i ? s->lines[i - 1] : s->firstlineno);

		cap += 8 + 2 * (size_t)((d < 0 ? -d : d) / 127 + 1);
	}
	t = zalloc(cap);
	if (fp->L->lines == LT_LNOTAB)
		n = lnotab(s, t);
	else if (fp->L->lines == LT_LINETABLE)
		n = linetable310(s, t);
	else
		n = locations(s, t);
	b = fp_bytes(fp, t, n);
	free(t);
	return b;
}

static uint64_t code_size(const struct py_layout *L, int ninstr)
{
	uint32_t end = MAX_OFF(L->code.argcount, L->code.kwonlyargcount, L->code.nlocals,
			       L->code.flags, L->code.firstlineno, L->code.varnames,
			       L->code.localspluskinds, L->code.filename, L->code.name,
			       L->code.qualname, L->code.linetable) + 8;

	if (L->code.code_adaptive != NONE)
		end = L->code.code_adaptive + 2 * (ninstr + 1);
	return end;
}

uint64_t fp_code(struct fakepy *fp, const struct fp_code_spec *s)
{
	const struct py_layout *L = fp->L;
	uint64_t co = fp_object(fp, FP_CODE, fp->t.code, code_size(L, s->ninstr));
	uint64_t *names = zalloc((s->nvarnames + 1) * sizeof(*names));
	uint8_t *kinds = zalloc(s->nvarnames + 1);
	int nlocals = 0;

	for (int i = 0; i < s->nvarnames; i++) {
		names[i] = fp_str(fp, s->varnames[i]);
		kinds[i] = s->kinds ? s->kinds[i] : FP_KIND_LOCAL;
		nlocals += !!(kinds[i] & FP_KIND_LOCAL);
	}
	fp_w32(fp, co + L->code.argcount, s->argcount);
	fp_w32(fp, co + L->code.kwonlyargcount, s->kwonlyargcount);
	fp_w32(fp, co + L->code.flags, s->flags);
	fp_w32(fp, co + L->code.firstlineno, s->firstlineno);
	if (L->code.nlocals != NONE)
		fp_w32(fp, co + L->code.nlocals, nlocals);
	fp_w64(fp, co + L->code.varnames, fp_tuple(fp, names, s->nvarnames));
	if (L->code.localspluskinds != NONE)
		fp_w64(fp, co + L->code.localspluskinds, fp_bytes(fp, kinds, s->nvarnames));
	fp_w64(fp, co + L->code.filename, fp_str(fp, s->filename));
	fp_w64(fp, co + L->code.name, fp_str(fp, s->name));
	if (L->code.qualname != NONE)
		fp_w64(fp, co + L->code.qualname, fp_str(fp, s->qualname ? s->qualname : s->name));
	fp_w64(fp, co + L->code.linetable, line_table(fp, s));
	/* 3.11+: the bytecode is inside the object, ob_size code units long. */
	if (L->code.code_adaptive != NONE)
		fp_w64(fp, co + L->o.ob_size, (uint64_t)s->ninstr);
	free(names);
	free(kinds);
	return co;
}

uint64_t fp_code_field(const struct fakepy *fp, uint64_t code, uint32_t off)
{
	return fp_r64((struct fakepy *)fp, code + off);
}

/* --- frames --------------------------------------------------------------- */

int fp_owner_shim(const struct fakepy *fp)
{
	return fp->L->frame.owner_shim == 255 ? 0 : fp->L->frame.owner_shim;
}

/* What the frame stores for "running instruction instr". */
static uint64_t lasti_value(const struct fakepy *fp, uint64_t code, int instr)
{
	const struct py_layout *L = fp->L;
	uint64_t first = code + (L->code.code_adaptive != NONE ? L->code.code_adaptive : 0);

	switch (L->lasti) {
	case LASTI_BYTES:
		return (uint32_t)(instr < 0 ? -1 : 2 * instr);
	case LASTI_UNITS:
		return (uint32_t)(instr < 0 ? -1 : instr);
	case LASTI_PTR:
		break;
	}
	/* 3.11/3.12 prev_instr points at the last instruction run, one unit
	 * before the code when none has; 3.13+ instr_ptr at the next one. */
	if (instr < 0)
		return L->minor <= 12 ? first - 2 : first;
	return first + 2 * (uint64_t)instr;
}

uint64_t fp_frame_ex(struct fakepy *fp, const struct fp_frame_spec *s)
{
	const struct py_layout *L = fp->L;
	uint64_t tag = s->tag && L->frame.code_tagged ? 1 : 0;
	uint64_t f, lasti = lasti_value(fp, s->code, s->instr);
	size_t size = L->frame.localsplus + 8 * (s->nlocals + 1);

	if (L->frames == FRAMES_OBJECTS) {
		f = fp_object(fp, FP_FRAME, fp->t.frame, size);
		fp_w64(fp, f + 16, s->nlocals);	/* ob_size */
		fp_w32(fp, f + L->frame.lasti, (uint32_t)lasti);
	} else {
		f = fp_alloc(fp, FP_FRAME, size);
		fp_w64(fp, f + L->frame.lasti, lasti);
		fp_w8(fp, f + L->frame.owner, (uint8_t)s->owner);
	}
	fp_w64(fp, f + L->frame.back, s->back);
	fp_w64(fp, f + L->frame.code, s->code | tag);
	for (int i = 0; i < s->nlocals; i++) {
		uint64_t v = s->locals[i];

		fp_w64(fp, f + L->frame.localsplus + 8 * i, v ? v | tag : 0);
	}
	return f;
}

uint64_t fp_frame(struct fakepy *fp, uint64_t code, int instr, uint64_t back)
{
	struct fp_frame_spec s = { .code = code, .instr = instr, .back = back };

	return fp_frame_ex(fp, &s);
}

void fp_frame_set_code(struct fakepy *fp, uint64_t frame, uint64_t code, int instr)
{
	const struct py_layout *L = fp->L;
	uint64_t lasti = lasti_value(fp, code, instr);

	fp_w64(fp, frame + L->frame.code, code);
	if (L->lasti == LASTI_PTR)
		fp_w64(fp, frame + L->frame.lasti, lasti);
	else
		fp_w32(fp, frame + L->frame.lasti, (uint32_t)lasti);
}

/* --- the interpreter ------------------------------------------------------ */

uint64_t fp_thread(struct fakepy *fp, uint64_t frame, uint64_t ident, uint32_t tid)
{
	uint64_t ts = fp_thread_in(fp, fp->interp, frame, ident, tid);

	fp->last_thread = ts;
	return ts;
}

/* The last thread state of interp's list, or 0 (the builder's own lists
 * end; the bound is for one a test has made loop). */
static uint64_t thread_tail(struct fakepy *fp, uint64_t interp)
{
	uint64_t ts = fp_r64(fp, interp + fp->L->interp.threads_head), next;

	for (int i = 0; ts && i < 100000; i++) {
		next = fp_r64(fp, ts + fp->L->tstate.next);
		if (!next)
			break;
		ts = next;
	}
	return ts;
}

uint64_t fp_thread_in(struct fakepy *fp, uint64_t interp, uint64_t frame, uint64_t ident,
		      uint32_t tid)
{
	const struct py_layout *L = fp->L;
	size_t need = MAX_OFF(L->tstate.next, L->tstate.interp, L->tstate.frame,
			      L->tstate.thread_id, L->tstate.native_thread_id) + 8;
	uint64_t ts = fp_alloc(fp, FP_STATE, need > fp->tstate_size ? need : fp->tstate_size);
	uint64_t last = thread_tail(fp, interp);

	fp_w64(fp, ts + L->tstate.interp, interp);
	if (L->tstate.cframe_frame != NONE) {
		/* 3.11/3.12: ts->cframe->current_frame. */
		uint64_t cf = fp_alloc(fp, FP_STATE, 32);

		fp_w64(fp, cf + L->tstate.cframe_frame, frame);
		fp_w64(fp, ts + L->tstate.frame, cf);
	} else {
		fp_w64(fp, ts + L->tstate.frame, frame);
	}
	fp_w64(fp, ts + L->tstate.thread_id, ident);
	if (L->tstate.native_thread_id != NONE)
		fp_w64(fp, ts + L->tstate.native_thread_id, tid);
	if (last) {
		fp_w64(fp, last + L->tstate.next, ts);
		fp_w64(fp, ts, last);	/* prev */
	} else {
		fp_w64(fp, interp + L->interp.threads_head, ts);
	}
	return ts;
}

void fp_gil(struct fakepy *fp, uint64_t tstate, bool locked)
{
	fp_gil_in(fp, fp->interp, tstate, locked);
}

void fp_gil_in(struct fakepy *fp, uint64_t interp, uint64_t tstate, bool locked)
{
	const struct py_layout *L = fp->L;
	uint64_t gil;

	if (L->runtime.gil_locked != NONE) {
		fp_w32(fp, fp->runtime + L->runtime.gil_locked, locked);
		fp_w64(fp, fp->runtime + L->runtime.gil_holder, tstate);
		return;
	}
	/* The main one's from fp->gil: a test may have broken its pointer. */
	gil = interp == fp->interp ? fp->gil : fp_r64(fp, interp + L->interp.gil_ptr);
	fp_w32(fp, gil + L->gil.locked, locked);
	fp_w64(fp, gil + L->gil.holder, tstate);
}

/* An interpreter state with no threads, and from 3.12 a GIL of its own. */
static uint64_t new_interp(struct fakepy *fp, int64_t id)
{
	const struct py_layout *L = fp->L;
	uint64_t interp = fp_alloc(fp, FP_STATE,
				   MAX_OFF(L->interp.next, L->interp.threads_head, L->interp.id,
					   L->interp.modules, L->interp.gil_ptr) + 8);

	fp_w64(fp, interp + L->interp.id, (uint64_t)id);
	if (L->interp.gil_ptr != NONE) {
		uint64_t gil = fp_alloc(fp, FP_STATE, MAX_OFF(L->gil.locked, L->gil.holder) + 8);

		fp_w64(fp, interp + L->interp.gil_ptr, gil);
	}
	return interp;
}

uint64_t fp_interp(struct fakepy *fp, int64_t id)
{
	uint64_t at = fp->runtime + fp->L->runtime.interpreters_head;
	uint64_t interp = new_interp(fp, id);

	fp_w64(fp, interp + fp->L->interp.next, fp_r64(fp, at));
	fp_w64(fp, at, interp);
	return interp;
}

void fp_set_modules(struct fakepy *fp, uint64_t dict)
{
	fp_w64(fp, fp->interp + fp->L->interp.modules, dict);
}

static void make_types(struct fakepy *fp)
{
	fp->t.type = fp_type(fp, "type");
	fp->t.object = fp_type(fp, "object");
	fp->t.str = fp_type(fp, "str");
	fp->t.bytes = fp_type(fp, "bytes");
	fp->t.int_ = fp_type(fp, "int");
	fp->t.bool_ = fp_type(fp, "bool");
	fp->t.float_ = fp_type(fp, "float");
	fp->t.tuple = fp_type(fp, "tuple");
	fp->t.list = fp_type(fp, "list");
	fp->t.dict = fp_type(fp, "dict");
	fp->t.none = fp_type(fp, "NoneType");
	fp->t.module = fp_type(fp, "module");
	fp->t.code = fp_type(fp, "code");
	fp->t.frame = fp_type(fp, "frame");
	fp->t.function = fp_type(fp, "function");
	fp->t.cell = fp_type(fp, "cell");
}

struct fakepy *fp_new(const struct py_layout *L)
{
	struct fakepy *fp = zalloc(sizeof(*fp));
	uint32_t one = 1;

	fp->L = L;
	fp->runtime = fp_alloc(fp, FP_STATE,
			       MAX_OFF(L->runtime.interpreters_head, L->runtime.gil_locked,
				       L->runtime.gil_holder) + 8);
	fp->interp = new_interp(fp, 0);
	fp_w64(fp, fp->runtime + L->runtime.interpreters_head, fp->interp);
	if (L->interp.gil_ptr != NONE)
		fp->gil = fp_r64(fp, fp->interp + L->interp.gil_ptr);
	make_types(fp);
	fp->none = fp_object(fp, FP_OBJ, fp->t.none, 16);
	fp->false_ = long_of_type(fp, fp->t.bool_, 0, NULL, 0);
	fp->true_ = long_of_type(fp, fp->t.bool_, 1, &one, 1);
	return fp;
}

void fp_free(struct fakepy *fp)
{
	if (!fp)
		return;
	for (int a = 0; a < FP_NARENAS; a++)
		free(fp->arena[a].data);
	free(fp);
}
