/* libFuzzer harness: the object readers on arbitrary memory, for every
 * layout.
 *
 * Input (see fuzzmem.h): "PSO1", a minor version (the layout tried first;
 * all are tried), flags, the length of a key, the address of an object, an
 * int key, the str key, then regions of memory.  Every reader in pyobj.h
 * runs on the object: str, bytes, repr, int, sizes, type name, tuple item,
 * dict lookups by str and by int, and instance attributes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzmem.h"
#include "interp/layout.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "python/deeprepr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A str result must be a C string; touching every byte lets ASan check the
 * allocation covers it. */
static void consume(const char *s)
{
	volatile size_t n;

	if (s)
		n = strlen(s);
	(void)n;
}

static void readers(const struct pyctx *c, uint64_t addr, const char *key, int64_t ikey,
		    size_t max_chars)
{
	char *s, *type, *repr, tname[128];
	uint8_t *b;
	size_t len;
	int64_t v;
	uint64_t val, vals[3];
	int rc[3];

	if (py_str(c, addr, max_chars, &s) == 0)
		consume(s);
	free(s);
	if (py_bytes(c, addr, max_chars, &b, &len) == 0) {
		volatile uint8_t x = len ? b[len - 1] : 0;
		(void)x;
	}
	free(b);
	if (py_repr(c, addr, max_chars, &type, &repr) == 0) {
		consume(type);
		consume(repr);
	}
	free(type);
	free(repr);
	if (py_repr_deep(c, addr, max_chars, &type, &repr) == 0) {
		consume(type);
		consume(repr);
	}
	free(type);
	free(repr);
	py_long(c, addr, &v);
	py_varsize(c, addr, &v);
	if (py_type_name(c, addr, tname, sizeof(tname)) == 0)
		consume(tname);
	py_tuple_item(c, addr, ikey & 0xff, &val);
	rc[0] = py_dict_get_str(c, addr, key, &val);
	vals[0] = val;
	rc[1] = py_dict_get_int(c, addr, ikey, &val);
	vals[1] = val;
	rc[2] = py_instance_attr(c, addr, key, &val);
	vals[2] = val;
	/* FUZZ_PYOBJ_VERBOSE=1 ./fuzz_pyobj SEED...: what the seeds reach. */
	if (getenv("FUZZ_PYOBJ_VERBOSE")) {
		char *t = NULL, *r = NULL;

		py_repr(c, addr, max_chars, &t, &r);
		fprintf(stderr, "3.%d %#llx: %s = %s; [\"%s\"] %d %#llx; [%lld] %d %#llx; .%s %d %#llx\n",
			c->L->minor, (unsigned long long)addr, t ? t : "?", r ? r : "?", key,
			rc[0], (unsigned long long)vals[0], (long long)ikey, rc[1],
			(unsigned long long)vals[1], key, rc[2], (unsigned long long)vals[2]);
		free(t);
		free(r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t max_chars[] = { 64, 4096, PYSTR_MAX_CHARS, 1 };
	struct mem *m;
	char key[256];
	uint64_t addr;
	int64_t ikey;
	size_t keylen;
	int minor;

	if (size < FZ_PYOBJ_HDR || memcmp(data, FZ_PYOBJ_MAGIC, 4) != 0)
		return 0;
	minor = fz_minor(data[4]);
	keylen = data[6];
	addr = fz_le64(data + 8);
	ikey = (int64_t)fz_le64(data + 16);
	if (keylen > size - FZ_PYOBJ_HDR)
		keylen = size - FZ_PYOBJ_HDR;
	memcpy(key, data + FZ_PYOBJ_HDR, keylen);
	key[keylen] = 0;

	m = mem_fake_new();
	fz_add_regions(data + FZ_PYOBJ_HDR + keylen, size - FZ_PYOBJ_HDR - keylen, m, NULL);
	for (int i = 0; i <= LAYOUT_MAX_MINOR - LAYOUT_MIN_MINOR; i++) {
		int mi = LAYOUT_MIN_MINOR + (minor - LAYOUT_MIN_MINOR + i) %
			 (LAYOUT_MAX_MINOR - LAYOUT_MIN_MINOR + 1);
		struct pyctx c = { m, layout_for_minor(mi) };

		readers(&c, addr, key, ikey, max_chars[data[5] & 3]);
	}
	mem_close(m);
	return 0;
}
