/* Reading Python objects out of the target: strings, bytes, numbers, the
 * sizes of containers, dict lookups and instance attributes.
 *
 * Every function is bounded: lengths are capped, loops have limits, and a
 * read that fails or finds nonsense returns an error instead of guessing.
 */
#ifndef PYSTROBE_PYOBJ_H
#define PYSTROBE_PYOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/layout.h"

struct mem;

/* Longest string we decode (in characters), and dict size we walk. */
#define PYSTR_MAX_CHARS 16384
#define PYDICT_MAX_ENTRIES (1 << 16)

struct pyctx {
	struct mem *m;
	const struct py_layout *L;
};

/* Decode a str object to UTF-8 into a new string (*out).  Strings longer
 * than max_chars are cut and end in "...".  0 or a negative errno. */
int py_str(const struct pyctx *c, uint64_t addr, size_t max_chars, char **out);

/* The code points of a str object, at most max_chars of them (*n), NULs
 * and lone surrogates as they are; *whole is its length.  *out is a new
 * array. */
int py_str_cps(const struct pyctx *c, uint64_t addr, size_t max_chars, uint32_t **out,
	       size_t *n, uint64_t *whole);

/* The contents of a bytes object, at most max bytes (*len set). */
int py_bytes(const struct pyctx *c, uint64_t addr, size_t max, uint8_t **out, size_t *len);

/* ob_size of a var-sized object (tuple, list, bytes). */
int py_varsize(const struct pyctx *c, uint64_t addr, int64_t *size);

/* tp_name of the object's type into buf. */
int py_type_name(const struct pyctx *c, uint64_t addr, char *buf, size_t len);

/* The value of an int that fits in 64 bits (-ERANGE if it does not). */
int py_long(const struct pyctx *c, uint64_t addr, int64_t *value);

/* The repr of an object: exactly Python's for None, bool, int (decimal
 * up to REPR_INT_MAX_BITS), float, str and bytes (the first max_chars
 * characters or bytes, then a mark with the whole length: see
 * python/repr.h), the size for tuple, list and dict, a threading.Thread's
 * as Thread.__repr__ (from its __dict__), the type name otherwise.  *type
 * gets the type name.  Both are new strings. */
int py_repr(const struct pyctx *c, uint64_t addr, size_t max_chars, char **type, char **repr);

struct strbuf;
/* The same repr appended to sb, for an object whose type name is known. */
int py_repr_scalar(const struct pyctx *c, uint64_t addr, const char *type, size_t max_chars,
		   struct strbuf *sb);

/* The containers whose items can be read (by exact type name). */
enum py_container { PY_NOT_CONTAINER, PY_LIST, PY_TUPLE, PY_DICT, PY_SET, PY_FROZENSET };
enum py_container py_container_kind(const char *type);
/* How many items it has (len()). */
int py_container_size(const struct pyctx *c, uint64_t addr, enum py_container kind, int64_t *n);

/* The first items of a list or tuple, at most max (*n of them). */
int py_seq_items(const struct pyctx *c, uint64_t addr, enum py_container kind,
		 uint64_t *items, size_t max, size_t *n);
/* The first max key/value pairs of a dict, in iteration order; -ENOTSUP
 * for a split table (an instance's __dict__), whose order is kept apart. */
int py_dict_items(const struct pyctx *c, uint64_t dict, uint64_t *keys, uint64_t *values,
		  size_t max, size_t *n);
/* The first max items of a set or frozenset, in iteration order (among
 * its first 65536 slots). */
int py_set_items(const struct pyctx *c, uint64_t set, uint64_t *items, size_t max, size_t *n);

/* Look up a str key in a dict; *value is 0 when absent (and 0 returned). */
int py_dict_get_str(const struct pyctx *c, uint64_t dict, const char *key, uint64_t *value);
/* Where a str key's entry was found in a dict (a combined table only), so
 * that a later lookup can prove it instead of scanning again. */
struct py_dict_slot {
	uint64_t dict, keys, entry, key, value;
	int64_t index;
};
/* py_dict_get_str(), noting where: s->entry is 0 when the key is absent
 * or the table split (nothing to prove later). */
int py_dict_slot_str(const struct pyctx *c, uint64_t dict, const char *key,
		     struct py_dict_slot *s);
/* Does dict's entry for key still hold s->value?  Re-reads the few words
 * that lead there (the dict's keys object, its entry count, the entry, the
 * key's text): true only when all are as found. */
bool py_dict_slot_holds(const struct pyctx *c, const struct py_dict_slot *s, const char *key);
/* Look up an int key in a dict. */
int py_dict_get_int(const struct pyctx *c, uint64_t dict, int64_t key, uint64_t *value);
/* An attribute from an instance's __dict__ (not from its type). */
int py_instance_attr(const struct pyctx *c, uint64_t obj, const char *name, uint64_t *value);

/* Item i of a tuple. */
int py_tuple_item(const struct pyctx *c, uint64_t tuple, int64_t i, uint64_t *item);

#endif
