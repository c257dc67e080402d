#include "python/pyobj.h"
#include "python/repr.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PyUnicode state bits, the same in every non-free-threaded 3.7–3.14. */
#define STATE_KIND(s)	(((s) >> 2) & 7)
#define STATE_COMPACT	(1u << 5)
#define STATE_ASCII	(1u << 6)

#define TPFLAGS_INLINE_VALUES	(1ul << 2)
#define TPFLAGS_MANAGED_DICT	(1ul << 4)	/* 3.11+: the dict before the object */
#define TPFLAGS_HEAPTYPE	(1ul << 9)	/* a class made by Python code */

static int rd64(const struct pyctx *c, uint64_t addr, uint64_t *v)
{
	return mem_read_u64(c->m, addr, v);
}

/* Longest str or bytes value we believe: past this the length field is
 * garbage.  Names (of functions, files, threads) are believed up to
 * NAME_MAX_LENGTH only. */
#define STR_MAX_LENGTH (1ull << 36)
#define NAME_MAX_LENGTH (1ull << 30)

static int str_cps(const struct pyctx *c, uint64_t addr, size_t max_chars, uint64_t max_length,
		   uint32_t **out, size_t *n, uint64_t *whole)
{
	const struct py_layout *L = c->L;
	uint64_t length, data;
	uint32_t state, *cps;
	unsigned kind;
	uint8_t *raw;
	int rc;

	*out = NULL;
	if (!addr)
		return -EFAULT;
	if ((rc = rd64(c, addr + L->str.length, &length)) < 0 ||
	    (rc = mem_read_u32(c->m, addr + L->str.state, &state)) < 0)
		return rc;
	kind = STATE_KIND(state);
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	/* ASCII strings are kind 1; str subclasses are ASCII but not compact. */
	if ((state & STATE_ASCII) && kind != 1)
		return -EINVAL;
	if (length > max_length)
		return -EINVAL;
	if (state & STATE_COMPACT)
		data = addr + ((state & STATE_ASCII) ? L->str.ascii_size : L->str.compact_size);
	else if ((rc = rd64(c, addr + L->str.compact_size, &data)) < 0)
		return rc;
	*n = length < max_chars ? length : max_chars;
	*whole = length;
	raw = xmalloc(*n * kind + 1);
	rc = mem_read(c->m, data, raw, *n * kind);
	if (rc < 0) {
		free(raw);
		return rc;
	}
	cps = xcalloc(*n + 1, sizeof(*cps));
	for (size_t i = 0; i < *n; i++) {
		if (kind == 1)
			cps[i] = raw[i];
		else if (kind == 2)
			cps[i] = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&cps[i], raw + 4 * i, 4);
	}
	free(raw);
	*out = cps;
	return 0;
}

int py_str_cps(const struct pyctx *c, uint64_t addr, size_t max_chars, uint32_t **out,
	       size_t *n, uint64_t *whole)
{
	return str_cps(c, addr, max_chars, STR_MAX_LENGTH, out, n, whole);
}

int py_str(const struct pyctx *c, uint64_t addr, size_t max_chars, char **out)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t whole;
	uint32_t *cps;
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = str_cps(c, addr, max_chars, NAME_MAX_LENGTH, &cps, &n, &whole)) < 0)
		return rc;
	/* Names are text, not reprs: a NUL would end the C string early,
	 * so it shows as U+FFFD (as a lone surrogate does). */
	for (size_t i = 0; i < n; i++)
		sb_add_utf8(&sb, cps[i] ? cps[i] : 0xfffd);
	free(cps);
	if (n < whole)
		sb_puts(&sb, "...");
	*out = sb_detach(&sb);
	return 0;
}

int py_varsize(const struct pyctx *c, uint64_t addr, int64_t *size)
{
	return mem_read(c->m, addr + c->L->o.ob_size, size, sizeof(*size));
}

int py_bytes(const struct pyctx *c, uint64_t addr, size_t max, uint8_t **out, size_t *len)
{
	int64_t size;
	int rc;

	*out = NULL;
	if ((rc = py_varsize(c, addr, &size)) < 0)
		return rc;
	if (size < 0 || size > (1 << 30))
		return -EINVAL;
	*len = (size_t)size < max ? (size_t)size : max;
	*out = xmalloc(*len + 1);
	rc = mem_read(c->m, addr + c->L->o.bytes_sval, *out, *len);
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

int py_type_name(const struct pyctx *c, uint64_t addr, char *buf, size_t len)
{
	uint64_t type, name;
	int rc;

	if ((rc = rd64(c, addr + c->L->obj.ob_type, &type)) < 0 ||
	    (rc = rd64(c, type + c->L->obj.tp_name, &name)) < 0)
		return rc;
	return mem_read_cstr(c->m, name, buf, len);
}

/* Digits of an int: sign (-1, 0, 1) and up to maxd 30-bit digits. */
static int long_digits(const struct pyctx *c, uint64_t addr, int *sign,
		       uint32_t *digits, size_t maxd, size_t *nd)
{
	int64_t tag;
	size_t n;
	int rc;

	if ((rc = mem_read(c->m, addr + c->L->o.long_tag, &tag, sizeof(tag))) < 0)
		return rc;
	if (c->L->longs == LONG_LV_TAG) {
		n = (uint64_t)tag >> 3;
		*sign = 1 - (int)(tag & 3);
	} else {
		*sign = tag < 0 ? -1 : tag > 0;
		n = tag < 0 ? (size_t)-(tag + 1) + 1 : (size_t)tag;
	}
	if (*sign < -1 || *sign > 1)
		return -EINVAL;
	*nd = n;
	if (n > maxd)
		return -ERANGE;
	return mem_read(c->m, addr + c->L->o.long_digits, digits, n * sizeof(*digits));
}

int py_long(const struct pyctx *c, uint64_t addr, int64_t *value)
{
	uint32_t d[3];
	size_t nd;
	int sign, rc;
	unsigned __int128 v = 0;

	if ((rc = long_digits(c, addr, &sign, d, 3, &nd)) < 0)
		return rc;
	for (size_t i = nd; i-- > 0;)
		v = v << 30 | (d[i] & 0x3fffffff);
	if (v > (unsigned __int128)INT64_MAX + (sign < 0))
		return -ERANGE;
	*value = sign < 0 ? (int64_t)-v : (int64_t)v;
	return 0;
}

/* Digits past this many (8 GiB of int) mean the size field is garbage. */
#define LONG_MAX_DIGITS (1u << 28)

/* The width in bits of an int of nd digits whose top digit is top. */
static uint64_t long_bits(size_t nd, uint32_t top)
{
	top &= 0x3fffffff;
	if (!nd)
		return 0;
	return (uint64_t)(nd - 1) * 30 + (top ? 32 - __builtin_clz(top) : 0);
}

/* An int in decimal up to REPR_INT_MAX_BITS, its width beyond. */
static int repr_long(const struct pyctx *c, uint64_t addr, struct strbuf *sb)
{
	uint32_t d[REPR_INT_MAX_DIGITS], top;
	size_t nd = 0;
	int sign, rc = long_digits(c, addr, &sign, d, REPR_INT_MAX_DIGITS, &nd);

	if (rc == 0 && long_bits(nd, nd ? d[nd - 1] : 0) <= REPR_INT_MAX_BITS) {
		repr_int(sb, sign, d, nd);
		return 0;
	}
	if (rc < 0 && rc != -ERANGE)
		return rc;
	if (nd > LONG_MAX_DIGITS)
		return -EINVAL;
	/* Too wide for decimal: say how wide, from its top digit. */
	if ((rc = mem_read_u32(c->m, addr + c->L->o.long_digits + 4 * (nd - 1), &top)) < 0)
		return rc;
	repr_int_bits(sb, sign, long_bits(nd, top));
	return 0;
}

enum py_container py_container_kind(const char *type)
{
	static const char *const names[] = {
		[PY_LIST] = "list", [PY_TUPLE] = "tuple", [PY_DICT] = "dict",
		[PY_SET] = "set", [PY_FROZENSET] = "frozenset",
	};

	for (size_t k = PY_LIST; k < sizeof(names) / sizeof(names[0]); k++)
		if (strcmp(type, names[k]) == 0)
			return (enum py_container)k;
	return PY_NOT_CONTAINER;
}

int py_container_size(const struct pyctx *c, uint64_t addr, enum py_container kind, int64_t *n)
{
	const struct py_layout *L = c->L;
	int rc;

	if (kind == PY_DICT)
		rc = mem_read(c->m, addr + L->o.dict_used, n, sizeof(*n));
	else if (kind == PY_SET || kind == PY_FROZENSET)
		rc = mem_read(c->m, addr + L->o.set_used, n, sizeof(*n));
	else
		rc = py_varsize(c, addr, n);
	if (rc < 0)
		return rc;
	if (*n < 0 || *n > (1ll << 40))
		return -EINVAL;
	return 0;
}

static int repr_container(const struct pyctx *c, uint64_t addr, const char *type,
			  struct strbuf *sb)
{
	int64_t n;
	int rc;

	if ((rc = py_container_size(c, addr, py_container_kind(type), &n)) < 0)
		return rc;
	sb_printf(sb, "<%s of %lld item%s>", type, (long long)n, n == 1 ? "" : "s");
	return 0;
}

static int repr_str_obj(const struct pyctx *c, uint64_t addr, size_t max, struct strbuf *sb)
{
	uint32_t *cps;
	uint64_t whole;
	size_t n;
	int rc = py_str_cps(c, addr, max, &cps, &n, &whole);

	if (rc < 0)
		return rc;
	repr_str(sb, cps, n, whole);
	free(cps);
	return 0;
}

static int repr_bytes_obj(const struct pyctx *c, uint64_t addr, size_t max, struct strbuf *sb)
{
	int64_t size;
	uint8_t *b;
	size_t n;
	int rc;

	if ((rc = py_varsize(c, addr, &size)) < 0)
		return rc;
	if (size < 0 || (uint64_t)size > STR_MAX_LENGTH)
		return -EINVAL;
	n = (uint64_t)size < max ? (size_t)size : max;
	b = xmalloc(n + 1);
	rc = mem_read(c->m, addr + c->L->o.bytes_sval, b, n);
	if (rc == 0)
		repr_bytes(sb, b, n, (uint64_t)size);
	free(b);
	return rc;
}

/* An attribute of an instance and its type's name: 0, or < 0 when
 * absent or unreadable. */
static int typed_attr(const struct pyctx *c, uint64_t obj, const char *name, uint64_t *v,
		      char *type, size_t len)
{
	int rc = py_instance_attr(c, obj, name, v);

	if (rc < 0)
		return rc;
	return *v ? py_type_name(c, *v, type, len) : -ENOENT;
}

/* A bool attribute of an instance: 0, or < 0 when absent or not a bool. */
static int bool_attr(const struct pyctx *c, uint64_t obj, const char *name, bool *v)
{
	char type[16];
	uint64_t a;
	int64_t n;
	int rc;

	if ((rc = typed_attr(c, obj, name, &a, type, sizeof(type))) < 0)
		return rc;
	if (strcmp(type, "bool"))
		return -EINVAL;
	if ((rc = py_long(c, a, &n)) < 0)
		return rc;
	*v = n != 0;
	return 0;
}

/* The longest thread name shown whole (then cut, "..."). */
#define THREAD_NAME_MAX 256

/* _ident and _name of a thread object into t (name a new string). */
static int thread_ident_name(const struct pyctx *c, uint64_t addr, struct repr_thread *t,
			     char **name)
{
	char type[16];
	uint64_t v;
	int64_t id;
	int rc;

	if ((rc = typed_attr(c, addr, "_ident", &v, type, sizeof(type))) < 0)
		return rc;
	if (!strcmp(type, "int")) {
		if ((rc = py_long(c, v, &id)) < 0)
			return rc;
		t->has_ident = true;
		t->ident = (uint64_t)id;
	} else if (strcmp(type, "NoneType")) {
		return -EINVAL;
	}
	if ((rc = typed_attr(c, addr, "_name", &v, type, sizeof(type))) < 0)
		return rc;
	if (strcmp(type, "str"))
		return -EINVAL;
	return py_str(c, v, THREAD_NAME_MAX, name);
}

/* A threading.Thread (or an instance of a subclass) as Thread.__repr__
 * shows it, from what Thread.__init__ put in its __dict__: 0, or < 0 when
 * addr is not one (no __dict__, or not those attributes).  Whether a
 * thread that ended is stopped is not in the __dict__ from 3.13 on (the C
 * thread handle keeps it): such a thread shows as started, as it does
 * before 3.13 until the program joins it or asks is_alive(). */
static int repr_thread_obj(const struct pyctx *c, uint64_t addr, const char *type,
			   struct strbuf *sb)
{
	struct repr_thread t = { .cls = type };
	uint64_t tp, flags, started;
	bool init = false;
	char *name = NULL;
	int rc;

	/* Only a class of Python code's, with a __dict__ to read. */
	if ((rc = rd64(c, addr + c->L->obj.ob_type, &tp)) < 0 ||
	    (rc = rd64(c, tp + c->L->obj.tp_flags, &flags)) < 0)
		return rc;
	if (!(flags & TPFLAGS_HEAPTYPE) ||
	    (c->L->attrs != ATTRS_DICTOFFSET && !(flags & TPFLAGS_MANAGED_DICT)))
		return -ENOENT;
	if ((rc = py_instance_attr(c, addr, "_started", &started)) < 0)
		return rc;
	if (!started)
		return -ENOENT;
	if ((rc = bool_attr(c, addr, "_initialized", &init)) < 0 ||
	    (rc = bool_attr(c, started, "_flag", &t.started)) < 0 ||
	    (rc = bool_attr(c, addr, "_daemonic", &t.daemon)) < 0)
		return rc;
	if (!init)
		return -ENOENT;
	if (bool_attr(c, addr, "_is_stopped", &t.stopped) < 0)
		t.stopped = false;
	if ((rc = thread_ident_name(c, addr, &t, &name)) < 0)
		return rc;
	t.name = name;
	repr_thread(sb, &t);
	free(name);
	return 0;
}

int py_repr_scalar(const struct pyctx *c, uint64_t addr, const char *type, size_t max_chars,
		   struct strbuf *sb)
{
	int rc = 0;

	if (strcmp(type, "NoneType") == 0) {
		sb_puts(sb, "None");
	} else if (strcmp(type, "bool") == 0) {
		int64_t v = 0;
		rc = py_long(c, addr, &v);
		sb_puts(sb, v ? "True" : "False");
	} else if (strcmp(type, "int") == 0) {
		rc = repr_long(c, addr, sb);
	} else if (strcmp(type, "float") == 0) {
		double d;
		rc = mem_read(c->m, addr + c->L->o.float_val, &d, sizeof(d));
		if (rc == 0)
			repr_float(sb, d);
	} else if (strcmp(type, "str") == 0) {
		rc = repr_str_obj(c, addr, max_chars, sb);
	} else if (strcmp(type, "bytes") == 0) {
		rc = repr_bytes_obj(c, addr, max_chars, sb);
	} else if (py_container_kind(type) != PY_NOT_CONTAINER) {
		rc = repr_container(c, addr, type, sb);
	} else if (repr_thread_obj(c, addr, type, sb) < 0) {
		sb_printf(sb, "<%s object>", type);
	}
	return rc;
}

int py_repr(const struct pyctx *c, uint64_t addr, size_t max_chars, char **typep, char **reprp)
{
	struct strbuf sb = STRBUF_INIT;
	char type[128];
	int rc;

	*typep = *reprp = NULL;
	if ((rc = py_type_name(c, addr, type, sizeof(type))) < 0)
		return rc;
	rc = py_repr_scalar(c, addr, type, max_chars, &sb);
	if (rc < 0) {
		sb_release(&sb);
		return rc;
	}
	*typep = xstrdup(type);
	*reprp = sb_detach(&sb);
	return 0;
}

int py_tuple_item(const struct pyctx *c, uint64_t tuple, int64_t i, uint64_t *item)
{
	int64_t n;
	int rc = py_varsize(c, tuple, &n);

	if (rc < 0)
		return rc;
	if (i < 0 || i >= n)
		return -ERANGE;
	return rd64(c, tuple + c->L->o.tuple_item + 8 * (uint64_t)i, item);
}

/* --- dicts ---------------------------------------------------------------- */

/* Where a dict's entries are and how to read them. */
struct dict_view {
	uint64_t entries;	/* address of entry 0 */
	uint64_t values;	/* split table: address of values[0]; else 0 */
	size_t entry_size;	/* 24 (hash, key, value) or 16 (key, value) */
	size_t key_off;
	int64_t n;		/* entries in use (dk_nentries) */
};

static int keys_view(const struct pyctx *c, uint64_t keys, struct dict_view *v)
{
	uint8_t hdr[40];
	int64_t size, nentries;
	size_t index_bytes;
	int rc;

	if ((rc = mem_read(c->m, keys, hdr, sizeof(hdr))) < 0)
		return rc;
	if (c->L->dictkeys == DICTKEYS_310) {
		memcpy(&size, hdr + 8, 8);
		memcpy(&nentries, hdr + 32, 8);
		if (size <= 0 || size > (1 << 26) || (size & (size - 1)))
			return -EINVAL;
		index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		v->entries = keys + 40 + (uint64_t)size * index_bytes;
		v->entry_size = 24;
		v->key_off = 8;
	} else {
		unsigned log2_size = hdr[8], log2_index = hdr[9], kind = hdr[10];

		memcpy(&nentries, hdr + 24, 8);
		if (log2_size > 26 || log2_index > 29 || kind > 2)
			return -EINVAL;
		size = (int64_t)1 << log2_size;
		v->entries = keys + 32 + ((uint64_t)1 << log2_index);
		/* DICT_KEYS_GENERAL (0) keeps the hash; unicode-keyed do not. */
		v->entry_size = kind == 0 ? 24 : 16;
		v->key_off = kind == 0 ? 8 : 0;
	}
	if (nentries < 0 || nentries > size || nentries > PYDICT_MAX_ENTRIES)
		return -EINVAL;
	v->n = nentries;
	v->values = 0;
	return 0;
}

static int dict_view(const struct pyctx *c, uint64_t dict, struct dict_view *v)
{
	uint64_t keys, values;
	int rc;

	if ((rc = rd64(c, dict + c->L->o.dict_keys, &keys)) < 0 ||
	    (rc = rd64(c, dict + c->L->o.dict_values, &values)) < 0)
		return rc;
	if ((rc = keys_view(c, keys, v)) < 0)
		return rc;
	if (values)
		v->values = values + c->L->o.dictvalues_values;
	return 0;
}

typedef int (*key_match_fn)(const struct pyctx *c, uint64_t key, const void *arg);

/* Find the value whose key matches; *value = 0 when there is none, else
 * *at its entry's index. */
static int dict_find_at(const struct pyctx *c, const struct dict_view *v, key_match_fn match,
			const void *arg, uint64_t *value, int64_t *at)
{
	uint8_t chunk[64 * 24];
	int64_t per = (int64_t)(sizeof(chunk) / v->entry_size);

	*value = 0;
	for (int64_t base = 0; base < v->n; base += per) {
		int64_t cnt = v->n - base < per ? v->n - base : per;
		int rc = mem_read(c->m, v->entries + base * v->entry_size, chunk,
				  cnt * v->entry_size);
		if (rc < 0)
			return rc;
		for (int64_t i = 0; i < cnt; i++) {
			uint64_t key, val;
			const uint8_t *e = chunk + i * v->entry_size;

			memcpy(&key, e + v->key_off, 8);
			if (!key || match(c, key, arg) != 1)
				continue;
			if (v->values)
				rc = rd64(c, v->values + 8 * (uint64_t)(base + i), &val);
			else
				memcpy(&val, e + v->key_off + 8, 8);
			if (rc < 0)
				return rc;
			*value = val;
			*at = base + i;
			return 0;
		}
	}
	return 0;
}

static int dict_find(const struct pyctx *c, const struct dict_view *v,
		     key_match_fn match, const void *arg, uint64_t *value)
{
	int64_t at;

	return dict_find_at(c, v, match, arg, value, &at);
}

/* Characters (not bytes) in a UTF-8 string. */
static uint64_t utf8_count(const char *s)
{
	uint64_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int match_str(const struct pyctx *c, uint64_t key, const void *arg)
{
	const char *want = arg;
	uint64_t length;
	char *s;
	int eq;

	/* Cheap first: a length mismatch settles it without reading text. */
	if (rd64(c, key + c->L->str.length, &length) < 0 || length != utf8_count(want))
		return 0;
	if (py_str(c, key, length, &s) < 0)
		return 0;
	eq = strcmp(s, want) == 0;
	free(s);
	return eq;
}

static int match_int(const struct pyctx *c, uint64_t key, const void *arg)
{
	char type[8];
	int64_t v;

	if (py_type_name(c, key, type, sizeof(type)) < 0 || strcmp(type, "int") != 0)
		return 0;
	if (py_long(c, key, &v) < 0)
		return 0;
	return v == *(const int64_t *)arg;
}

int py_dict_get_str(const struct pyctx *c, uint64_t dict, const char *key, uint64_t *value)
{
	struct dict_view v;
	int rc = dict_view(c, dict, &v);

	if (rc < 0)
		return rc;
	return dict_find(c, &v, match_str, key, value);
}

int py_dict_slot_str(const struct pyctx *c, uint64_t dict, const char *key,
		     struct py_dict_slot *s)
{
	struct dict_view v;
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = dict_view(c, dict, &v)) < 0 ||
	    (rc = rd64(c, dict + c->L->o.dict_keys, &s->keys)) < 0 ||
	    (rc = dict_find_at(c, &v, match_str, key, &s->value, &s->index)) < 0)
		return rc;
	if (s->value && !v.values) {
		s->dict = dict;
		s->entry = v.entries + (uint64_t)s->index * v.entry_size + v.key_off;
		rc = rd64(c, s->entry, &s->key);
	}
	return rc < 0 ? rc : 0;
}

bool py_dict_slot_holds(const struct pyctx *c, const struct py_dict_slot *s, const char *key)
{
	struct dict_view v;
	uint64_t keys, kv[2];

	/* The same keys object, combined, the entry inside what it uses, the
	 * entry's key and value as found, and the key (alive: the entry holds
	 * it) still the text asked for. */
	return s->entry && rd64(c, s->dict + c->L->o.dict_keys, &keys) == 0 && keys == s->keys &&
	       dict_view(c, s->dict, &v) == 0 && !v.values && s->index < v.n &&
	       s->entry == v.entries + (uint64_t)s->index * v.entry_size + v.key_off &&
	       mem_read(c->m, s->entry, kv, sizeof(kv)) == 0 && kv[0] == s->key &&
	       kv[1] == s->value && match_str(c, s->key, key) == 1;
}

int py_dict_get_int(const struct pyctx *c, uint64_t dict, int64_t key, uint64_t *value)
{
	struct dict_view v;
	int rc = dict_view(c, dict, &v);

	if (rc < 0)
		return rc;
	return dict_find(c, &v, match_int, &key, value);
}

/* Attributes kept as values beside the object with the keys shared by the
 * type (3.11+): look the name up in the type's cached keys. */
static int shared_keys_attr(const struct pyctx *c, uint64_t obj, uint64_t values,
			    const char *name, uint64_t *value)
{
	struct dict_view v;
	uint64_t type, keys;
	int rc;

	if ((rc = rd64(c, obj + c->L->obj.ob_type, &type)) < 0 ||
	    (rc = rd64(c, type + c->L->obj.ht_cached_keys, &keys)) < 0)
		return rc;
	if (!keys)
		return -ENOENT;
	if ((rc = keys_view(c, keys, &v)) < 0)
		return rc;
	v.values = values;
	return dict_find(c, &v, match_str, name, value);
}

int py_instance_attr(const struct pyctx *c, uint64_t obj, const char *name, uint64_t *value)
{
	const struct py_layout *L = c->L;
	uint64_t type, dict = 0, values = 0;
	int64_t dictoffset;
	uint64_t flags, basicsize;
	int rc;

	*value = 0;
	switch (L->attrs) {
	case ATTRS_DICTOFFSET:
		if ((rc = rd64(c, obj + L->obj.ob_type, &type)) < 0 ||
		    (rc = mem_read(c->m, type + L->obj.tp_dictoffset, &dictoffset, 8)) < 0)
			return rc;
		if (dictoffset <= 0 || dictoffset > 4096)
			return -ENOENT;
		if ((rc = rd64(c, obj + dictoffset, &dict)) < 0)
			return rc;
		break;
	case ATTRS_MANAGED_311:
		if ((rc = rd64(c, obj - 24, &dict)) < 0)
			return rc;
		if (!dict) {
			if ((rc = rd64(c, obj - 32, &values)) < 0)
				return rc;
			if (!values)
				return -ENOENT;
			return shared_keys_attr(c, obj, values + L->o.dictvalues_values, name, value);
		}
		break;
	case ATTRS_MANAGED_312:
		if ((rc = rd64(c, obj - 24, &dict)) < 0)
			return rc;
		/* Tagged: an odd word is a values pointer stored minus one. */
		if (dict & 1)
			return shared_keys_attr(c, obj, dict + 1 + L->o.dictvalues_values, name, value);
		break;
	case ATTRS_INLINE_313:
		if ((rc = rd64(c, obj - L->obj.managed_dict, &dict)) < 0)
			return rc;
		if (dict)
			break;
		if ((rc = rd64(c, obj + L->obj.ob_type, &type)) < 0 ||
		    (rc = rd64(c, type + L->obj.tp_flags, &flags)) < 0 ||
		    (rc = rd64(c, type + L->obj.tp_basicsize, &basicsize)) < 0)
			return rc;
		if (!(flags & TPFLAGS_INLINE_VALUES) || basicsize > 4096)
			return -ENOENT;
		values = obj + basicsize;
		return shared_keys_attr(c, obj, values + L->o.dictvalues_values, name, value);
	}
	if (!dict)
		return -ENOENT;
	return py_dict_get_str(c, dict, name, value);
}

/* --- container items ---------------------------------------------------- */

int py_seq_items(const struct pyctx *c, uint64_t addr, enum py_container kind,
		 uint64_t *items, size_t max, size_t *n)
{
	uint64_t base = addr + c->L->o.tuple_item;
	int64_t size;
	int rc;

	*n = 0;
	if ((rc = py_varsize(c, addr, &size)) < 0)
		return rc;
	if (size < 0 || size > (1ll << 40))
		return -EINVAL;
	if (kind == PY_LIST && (rc = rd64(c, addr + c->L->o.list_item, &base)) < 0)
		return rc;
	if (!size)
		return 0;
	*n = (uint64_t)size < max ? (size_t)size : max;
	rc = mem_read(c->m, base, items, *n * sizeof(*items));
	if (rc < 0)
		*n = 0;
	return rc;
}

int py_dict_items(const struct pyctx *c, uint64_t dict, uint64_t *keys, uint64_t *values,
		  size_t max, size_t *n)
{
	uint8_t chunk[64 * 24];
	struct dict_view v;
	int64_t per;
	int rc;

	*n = 0;
	if ((rc = dict_view(c, dict, &v)) < 0)
		return rc;
	/* A split table's order is kept apart from its entries (3.11+). */
	if (v.values)
		return -ENOTSUP;
	per = (int64_t)(sizeof(chunk) / v.entry_size);
	for (int64_t base = 0; base < v.n && *n < max; base += per) {
		int64_t cnt = v.n - base < per ? v.n - base : per;

		if ((rc = mem_read(c->m, v.entries + base * v.entry_size, chunk,
				   cnt * v.entry_size)) < 0)
			return rc;
		for (int64_t i = 0; i < cnt && *n < max; i++) {
			const uint8_t *e = chunk + i * v.entry_size;
			uint64_t key, val;

			memcpy(&key, e + v.key_off, 8);
			memcpy(&val, e + v.key_off + 8, 8);
			if (!key || !val)
				continue;	/* deleted */
			keys[*n] = key;
			values[*n] = val;
			(*n)++;
		}
	}
	return 0;
}

/* Slots of a set's table scanned at most: past this, the items shown are
 * the ones found so far. */
#define SET_MAX_SLOTS (1 << 16)

/* A deleted slot holds set's one dummy key (of its own type). */
static bool set_dummy(const struct pyctx *c, uint64_t key, uint64_t *dummy)
{
	char type[32];

	if (*dummy)
		return key == *dummy;
	if (py_type_name(c, key, type, sizeof(type)) < 0 || strcmp(type, "<dummy key> type") != 0)
		return false;
	*dummy = key;
	return true;
}

int py_set_items(const struct pyctx *c, uint64_t set, uint64_t *items, size_t max, size_t *n)
{
	uint64_t mask, table, dummy = 0, chunk[2 * 64];
	int rc;

	*n = 0;
	if ((rc = rd64(c, set + c->L->o.set_mask, &mask)) < 0 ||
	    (rc = rd64(c, set + c->L->o.set_table, &table)) < 0)
		return rc;
	if (mask >= (1ull << 40) || (mask & (mask + 1)))
		return -EINVAL;
	for (uint64_t base = 0; base <= mask && base < SET_MAX_SLOTS && *n < max; base += 64) {
		uint64_t cnt = mask + 1 - base < 64 ? mask + 1 - base : 64;

		if ((rc = mem_read(c->m, table + 16 * base, chunk, 16 * cnt)) < 0)
			return rc;
		for (uint64_t i = 0; i < cnt && *n < max; i++) {
			uint64_t key = chunk[2 * i];

			if (key && !set_dummy(c, key, &dummy))
				items[(*n)++] = key;
		}
	}
	return 0;
}
