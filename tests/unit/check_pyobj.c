/* Tests for the object readers (src/python/pyobj.c) on synthetic memory.
 *
 * Every test runs once per layout in the table (3.7 to 3.14), on objects
 * laid out by tests/lib/fakepy.c from that layout's offsets, so a reader that
 * only works for the version its author had at hand fails here.
 *
 * The "regressions" case holds tests for bugs these tests found in the
 * readers; each comment says what was wrong.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "python/deeprepr.h"
#include "util/util.h"
#include "suite.h"

struct env {
	struct fakepy *fp;
	struct mem *m;
	struct pyctx c;
};

static void env_init(struct env *e, int minor)
{
	const struct py_layout *L = layout_for_minor(minor);

	ck_assert_msg(L, "no layout for 3.%d", minor);
	e->fp = fp_new(L);
	e->m = NULL;
	e->c.L = L;
	e->c.m = NULL;
}

/* Take a (new) snapshot of the fake's memory for the readers. */
static void env_mem(struct env *e)
{
	mem_close(e->m);
	e->m = fp_mem(e->fp);
	e->c.m = e->m;
}

static void env_done(struct env *e)
{
	mem_close(e->m);
	fp_free(e->fp);
}

/* py_str must give exactly `want`. */
static void check_str(struct env *e, uint64_t s, size_t max, const char *want)
{
	char *out = (char *)"unset";
	int rc = py_str(&e->c, s, max, &out);

	ck_assert_msg(rc == 0, "3.%d: py_str(%s) failed: %d", e->c.L->minor, want, rc);
	ck_assert_str_eq(out, want);
	free(out);
}

/* py_str must fail cleanly, leaving *out NULL. */
static int str_error(struct env *e, uint64_t s, size_t max)
{
	char *out = (char *)"unset";
	int rc = py_str(&e->c, s, max, &out);

	ck_assert_msg(rc < 0, "3.%d: py_str succeeded with \"%s\"", e->c.L->minor,
		      rc == 0 ? out : "");
	ck_assert_ptr_null(out);
	return rc;
}

/* ---- str ----------------------------------------------------------------- */

START_TEST(test_str_kinds)
{
	static const uint32_t legacy[] = { 0x65e5, 0x672c };
	/* Each text, and the kind bits CPython would give it (0: not
	 * checked). */
	static const struct {
		const char *text;
		unsigned state;
	} strs[] = {
		{ "hello", FP_STATE_ASCII | FP_STATE_COMPACT | 4 },
		{ "h\xc3\xa9llo", FP_STATE_COMPACT | 4 },
		{ "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", FP_STATE_COMPACT | 8 },
		{ "\xf0\x9f\x98\x80", FP_STATE_COMPACT | 16 },
		{ "a\xf0\x9f\x98\x80\xc3\xa9z", 0 },
		{ "", 0 },
	};
	struct env e;
	uint64_t objs[ARRAY_SIZE(strs)], old;

	env_init(&e, _i);
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		objs[i] = fp_str(e.fp, strs[i].text);
	old = fp_str_cps(e.fp, legacy, 2, 2, false, false);

	/* The builder picked the kinds CPython would have. */
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		if (strs[i].state)
			ck_assert_uint_eq(fp_str_state(e.fp, objs[i]) & 0x7c, strs[i].state);
	env_mem(&e);

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		check_str(&e, objs[i], 100, strs[i].text);
	check_str(&e, old, 100, "\xe6\x97\xa5\xe6\x9c\xac");
	env_done(&e);
}
END_TEST

START_TEST(test_str_truncate)
{
	struct env e;
	uint64_t s, wide;

	env_init(&e, _i);
	s = fp_str(e.fp, "abcdefghij");
	wide = fp_str(e.fp, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
	env_mem(&e);

	check_str(&e, s, 4, "abcd...");
	check_str(&e, s, 9, "abcdefghi...");
	check_str(&e, s, 10, "abcdefghij");
	check_str(&e, s, 11, "abcdefghij");
	check_str(&e, s, 0, "...");
	/* Cut in characters, not bytes. */
	check_str(&e, wide, 2, "\xe6\x97\xa5\xe6\x9c\xac...");
	env_done(&e);
}
END_TEST

START_TEST(test_str_odd_chars)
{
	static const uint32_t nul[] = { 'a', 0, 'b' };
	static const uint32_t lone[] = { 0xd800, 'x', 0xdfff };
	static const uint32_t lone4[] = { 0xdc00, 0x110000, 0x10ffff };
	struct env e;
	uint64_t s1, s2, s3, s4;

	env_init(&e, _i);
	s1 = fp_str_cps(e.fp, nul, 3, 1, true, true);
	s2 = fp_str_cps(e.fp, lone, 3, 2, false, true);
	s3 = fp_str_cps(e.fp, lone4, 3, 4, false, true);
	s4 = fp_str_cps(e.fp, nul, 3, 4, false, false);
	env_mem(&e);

	/* A NUL would end the C string: it shows as U+FFFD. */
	check_str(&e, s1, 100, "a\xef\xbf\xbd" "b");
	check_str(&e, s4, 100, "a\xef\xbf\xbd" "b");
	/* Lone surrogates and out-of-range code points are not UTF-8. */
	check_str(&e, s2, 100, "\xef\xbf\xbdx\xef\xbf\xbd");
	check_str(&e, s3, 100, "\xef\xbf\xbd\xef\xbf\xbd\xf4\x8f\xbf\xbf");
	env_done(&e);
}
END_TEST

START_TEST(test_str_bad)
{
	static const uint32_t two[] = { 'o', 'k' };
	struct env e;
	uint64_t huge, big, kind0, kind3, kind5, kind7, asciiwide, nodata, ok;

	env_init(&e, _i);
	huge = fp_str(e.fp, "x");
	fp_str_set_length(e.fp, huge, 1ull << 40);
	big = fp_str(e.fp, "x");
	fp_str_set_length(e.fp, big, (1ull << 30) + 1);
	kind0 = fp_str(e.fp, "x");
	fp_str_set_state(e.fp, kind0, FP_STATE_COMPACT | FP_STATE_KIND(0));
	kind3 = fp_str(e.fp, "x");
	fp_str_set_state(e.fp, kind3, FP_STATE_COMPACT | FP_STATE_KIND(3));
	kind5 = fp_str(e.fp, "x");
	fp_str_set_state(e.fp, kind5, FP_STATE_COMPACT | FP_STATE_KIND(5));
	kind7 = fp_str(e.fp, "x");
	fp_str_set_state(e.fp, kind7, FP_STATE_COMPACT | FP_STATE_KIND(7));
	/* ASCII is only ever a compact kind-1 string. */
	asciiwide = fp_str(e.fp, "x");
	fp_str_set_state(e.fp, asciiwide, FP_STATE_COMPACT | FP_STATE_ASCII | FP_STATE_KIND(2));
	nodata = fp_str_cps(e.fp, two, 2, 2, false, false);
	fp_w64(e.fp, fp_str_data_slot(e.fp, nodata), FP_UNMAPPED);
	ok = fp_str(e.fp, "ok");
	env_mem(&e);

	ck_assert_int_eq(str_error(&e, huge, PYSTR_MAX_CHARS), -EINVAL);
	ck_assert_int_eq(str_error(&e, big, PYSTR_MAX_CHARS), -EINVAL);
	ck_assert_int_eq(str_error(&e, kind0, 100), -EINVAL);
	ck_assert_int_eq(str_error(&e, kind3, 100), -EINVAL);
	ck_assert_int_eq(str_error(&e, kind5, 100), -EINVAL);
	ck_assert_int_eq(str_error(&e, kind7, 100), -EINVAL);
	ck_assert_int_eq(str_error(&e, asciiwide, 100), -EINVAL);
	ck_assert_int_eq(str_error(&e, nodata, 100), -EFAULT);
	ck_assert_int_eq(str_error(&e, 0, 100), -EFAULT);
	ck_assert_int_eq(str_error(&e, FP_UNMAPPED, 100), -EFAULT);
	/* Each refusal is a read or two, not a scan. */
	ck_assert_uint_lt(mem_fake_reads(e.m), 40);
	/* A header that claims more than is mapped: the data read fails. */
	fp_str_set_length(e.fp, ok, 1u << 29);
	env_mem(&e);
	ck_assert_int_eq(str_error(&e, ok, 1u << 29), -EFAULT);
	env_done(&e);
}
END_TEST

/* ---- bytes --------------------------------------------------------------- */

START_TEST(test_bytes)
{
	static const uint8_t data[] = { 'a', 'b', 0, 'c', 0xff };
	struct env e;
	uint64_t b, empty, neg, huge;
	uint8_t *out;
	size_t len;

	env_init(&e, _i);
	b = fp_bytes(e.fp, data, sizeof(data));
	empty = fp_bytes(e.fp, "", 0);
	neg = fp_bytes(e.fp, "x", 1);
	fp_w64(e.fp, neg + e.c.L->o.ob_size, (uint64_t)-1);
	huge = fp_bytes(e.fp, "x", 1);
	fp_w64(e.fp, huge + e.c.L->o.ob_size, 1ull << 40);
	env_mem(&e);

	ck_assert_int_eq(py_bytes(&e.c, b, 100, &out, &len), 0);
	ck_assert_uint_eq(len, sizeof(data));
	ck_assert_mem_eq(out, data, sizeof(data));
	free(out);

	ck_assert_int_eq(py_bytes(&e.c, b, 3, &out, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_mem_eq(out, data, 3);
	free(out);

	ck_assert_int_eq(py_bytes(&e.c, empty, 100, &out, &len), 0);
	ck_assert_uint_eq(len, 0);
	free(out);

	ck_assert_int_eq(py_bytes(&e.c, neg, 100, &out, &len), -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(py_bytes(&e.c, huge, 100, &out, &len), -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(py_bytes(&e.c, FP_UNMAPPED, 100, &out, &len), -EFAULT);
	ck_assert_ptr_null(out);
	env_done(&e);
}
END_TEST

/* ---- int ----------------------------------------------------------------- */

static const int64_t long_values[] = {
	0, 1, -1, 42, -42, (1 << 30) - 1, 1 << 30, -(1 << 30),
	(int64_t)1 << 60, ((int64_t)1 << 62), -((int64_t)1 << 62),
	INT64_MAX, INT64_MIN + 1, INT64_MIN,
};

START_TEST(test_long)
{
	struct env e;
	uint64_t objs[ARRAY_SIZE(long_values)];

	env_init(&e, _i);
	for (size_t i = 0; i < ARRAY_SIZE(long_values); i++)
		objs[i] = fp_long(e.fp, long_values[i]);
	env_mem(&e);

	for (size_t i = 0; i < ARRAY_SIZE(long_values); i++) {
		int64_t v = 12345;

		ck_assert_msg(py_long(&e.c, objs[i], &v) == 0, "3.%d: %lld", _i,
			      (long long)long_values[i]);
		ck_assert_msg(v == long_values[i], "3.%d: read %lld for %lld", _i,
			      (long long)v, (long long)long_values[i]);
	}
	env_done(&e);
}
END_TEST

/* The two representations really are different: check what the builder
 * wrote for -5 against the documented encodings. */
START_TEST(test_long_encoding)
{
	struct env e;
	uint64_t o;
	int64_t tag;

	env_init(&e, _i);
	o = fp_long(e.fp, -5);
	tag = (int64_t)fp_r64(e.fp, o + e.c.L->o.long_tag);
	if (e.c.L->longs == LONG_LV_TAG)
		ck_assert_int_eq(tag, 1 << 3 | 2);
	else
		ck_assert_int_eq(tag, -1);
	ck_assert_int_eq(e.c.L->longs, _i >= 12 ? LONG_LV_TAG : LONG_OB_SIZE);
	env_done(&e);
}
END_TEST

START_TEST(test_long_range)
{
	static const uint32_t two63[] = { 0, 0, 8 };		/* 2^63 */
	static const uint32_t top[] = { 0x3fffffff, 0x3fffffff, 0x3fffffff };
	static const uint32_t four[] = { 1, 0, 0, 1 };
	struct env e;
	uint64_t pos63, neg63, big, four_digits, badsign, hugetag;
	int64_t v;

	env_init(&e, _i);
	pos63 = fp_long_digits(e.fp, 1, two63, 3);
	neg63 = fp_long_digits(e.fp, -1, two63, 3);
	big = fp_long_digits(e.fp, -1, top, 3);
	four_digits = fp_long_digits(e.fp, 1, four, 4);
	badsign = fp_long(e.fp, 7);
	hugetag = fp_long(e.fp, 7);
	if (e.c.L->longs == LONG_LV_TAG) {
		/* Sign bits 3 do not exist. */
		fp_w64(e.fp, badsign + e.c.L->o.long_tag, 1 << 3 | 3);
		fp_w64(e.fp, hugetag + e.c.L->o.long_tag, (uint64_t)1 << 62);
	} else {
		fp_w64(e.fp, hugetag + e.c.L->o.long_tag, (uint64_t)INT64_MIN);
	}
	env_mem(&e);

	ck_assert_int_eq(py_long(&e.c, pos63, &v), -ERANGE);
	ck_assert_int_eq(py_long(&e.c, neg63, &v), 0);
	ck_assert_int_eq(v, INT64_MIN);
	ck_assert_int_eq(py_long(&e.c, big, &v), -ERANGE);
	ck_assert_int_eq(py_long(&e.c, four_digits, &v), -ERANGE);
	ck_assert_int_eq(py_long(&e.c, hugetag, &v), -ERANGE);
	if (e.c.L->longs == LONG_LV_TAG)
		ck_assert_int_eq(py_long(&e.c, badsign, &v), -EINVAL);
	ck_assert_int_lt(py_long(&e.c, FP_UNMAPPED, &v), 0);
	env_done(&e);
}
END_TEST

/* ---- repr ---------------------------------------------------------------- */

static void check_repr(struct env *e, uint64_t obj, size_t max, const char *type,
		       const char *want)
{
	char *t = (char *)"unset", *r = (char *)"unset";
	int rc = py_repr(&e->c, obj, max, &t, &r);

	ck_assert_msg(rc == 0, "3.%d: py_repr for %s failed: %d", e->c.L->minor, want, rc);
	ck_assert_str_eq(t, type);
	ck_assert_str_eq(r, want);
	free(t);
	free(r);
}

static void repr_error(struct env *e, uint64_t obj)
{
	char *t = (char *)"unset", *r = (char *)"unset";

	ck_assert_int_lt(py_repr(&e->c, obj, 64, &t, &r), 0);
	ck_assert_ptr_null(t);
	ck_assert_ptr_null(r);
}

static void check_deep(struct env *e, uint64_t obj, const char *want)
{
	char *t = NULL, *r = NULL;
	int rc = py_repr_deep(&e->c, obj, 64, &t, &r);

	ck_assert_msg(rc == 0, "3.%d: py_repr_deep for %s failed: %d", e->c.L->minor, want, rc);
	ck_assert_msg(!strcmp(r, want), "3.%d: got %s, want %s", e->c.L->minor, r, want);
	free(t);
	free(r);
}

/* Point item i of list l at obj. */
static void set_list_item(struct env *e, uint64_t l, size_t i, uint64_t obj)
{
	fp_w64(e->fp, fp_r64(e->fp, l + e->c.L->o.list_item) + 8 * i, obj);
}

/* --locals=deep: items as repr() shows them, cycles as [...], every bound
 * held on memory that lies. */
START_TEST(test_repr_deep)
{
	struct env e;
	uint64_t one, a, none, t1, d, l, self, many, a2, b2, nest, liar, k[1], v[1];
	uint64_t items[1000];

	env_init(&e, _i);
	one = fp_long(e.fp, 1);
	a = fp_str(e.fp, "a");
	none = fp_object(e.fp, FP_OBJ, fp_type(e.fp, "NoneType"), 16);
	t1 = fp_tuple(e.fp, (uint64_t[]){ fp_long(e.fp, 2) }, 1);
	k[0] = fp_str(e.fp, "k");
	v[0] = none;
	d = fp_dict(e.fp, k, v, 1);
	l = fp_list(e.fp, (uint64_t[]){ one, a, t1, d }, 4);
	self = fp_list(e.fp, (uint64_t[]){ one, one }, 2);
	for (size_t i = 0; i < 1000; i++)
		items[i] = one;
	many = fp_list(e.fp, items, 1000);
	set_list_item(&e, many, 0, many);
	a2 = fp_list(e.fp, (uint64_t[]){ one }, 1);
	b2 = fp_list(e.fp, (uint64_t[]){ a2 }, 1);
	set_list_item(&e, a2, 0, b2);
	nest = one;
	for (int i = 0; i < 8; i++)
		nest = fp_list(e.fp, (uint64_t[]){ nest }, 1);
	liar = fp_list(e.fp, (uint64_t[]){ one }, 1);
	fp_w64(e.fp, liar + e.c.L->o.ob_size, 1ull << 39);
	fp_w64(e.fp, liar + e.c.L->o.list_item, FP_UNMAPPED);
	set_list_item(&e, self, 1, self);
	env_mem(&e);

	check_deep(&e, l, "[1, 'a', (2,), {'k': None}]");
	check_deep(&e, self, "[1, [...]]");
	check_deep(&e, a2, "[[[...]]]");
	check_deep(&e, many, "[[...], 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
		   "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, \xe2\x80\xa6 (1000 items)]");
	check_deep(&e, nest, "[[[[<list of 1 item>]]]]");
	/* Items that cannot be read: its size, as plain --locals shows it. */
	check_deep(&e, liar, "<list of 549755813888 items>");
	/* Not a container: py_repr()'s answer. */
	check_deep(&e, a, "'a'");
	env_done(&e);
}
END_TEST

START_TEST(test_repr_scalars)
{
	static const uint32_t d70[] = { 0, 0, 1 << 10 };	/* 2^70 */
	static uint32_t wide[80];	/* -2^2370 */
	struct env e;
	uint64_t i42, ineg, ibig, iwide;

	env_init(&e, _i);
	i42 = fp_long(e.fp, 42);
	ineg = fp_long(e.fp, -7000000000);
	ibig = fp_long_digits(e.fp, 1, d70, 3);
	wide[79] = 1;
	iwide = fp_long_digits(e.fp, -1, wide, 80);
	env_mem(&e);

	check_repr(&e, e.fp->none, 64, "NoneType", "None");
	check_repr(&e, e.fp->true_, 64, "bool", "True");
	check_repr(&e, e.fp->false_, 64, "bool", "False");
	check_repr(&e, i42, 64, "int", "42");
	check_repr(&e, ineg, 64, "int", "-7000000000");
	check_repr(&e, ibig, 64, "int", "1180591620717411303424");
	check_repr(&e, iwide, 64, "int", "<negative int of 2371 bits>");
	env_done(&e);
}
END_TEST

/* Floats print as Python's repr does: the shortest string that reads back
 * as the same double. */
static const struct {
	double d;
	const char *want;
} floats[] = {
	{ 0.1, "0.1" }, { 1e100, "1e+100" }, { 1.5, "1.5" }, { -2.25, "-2.25" },
	{ 3.0, "3.0" }, { 0.0, "0.0" }, { -0.0, "-0.0" }, { 1e-05, "1e-05" },
	{ 0.0001, "0.0001" }, { 1.0 / 3, "0.3333333333333333" }, { 1e22, "1e+22" },
	{ 123456789.0, "123456789.0" }, { 2.5e-300, "2.5e-300" },
	{ 1.7976931348623157e308, "1.7976931348623157e+308" },
	{ 5e-324, "5e-324" }, { 0.30000000000000004, "0.30000000000000004" },
	{ 1e16, "1e+16" },
};

START_TEST(test_repr_float)
{
	struct env e;
	uint64_t objs[ARRAY_SIZE(floats)], inf, ninf, nan_;

	env_init(&e, _i);
	for (size_t i = 0; i < ARRAY_SIZE(floats); i++)
		objs[i] = fp_float(e.fp, floats[i].d);
	inf = fp_float(e.fp, INFINITY);
	ninf = fp_float(e.fp, -INFINITY);
	nan_ = fp_float(e.fp, NAN);
	env_mem(&e);

	for (size_t i = 0; i < ARRAY_SIZE(floats); i++)
		check_repr(&e, objs[i], 64, "float", floats[i].want);
	check_repr(&e, inf, 64, "float", "inf");
	check_repr(&e, ninf, 64, "float", "-inf");
	check_repr(&e, nan_, 64, "float", "nan");
	env_done(&e);
}
END_TEST

/* Strs print quoted and escaped, cut at max characters. */
static const struct {
	const char *text;
	size_t max;
	const char *want;
} str_reprs[] = {
	{ "it's \"x\"", 64, "'it\\'s \"x\"'" },
	{ "a\\b", 64, "'a\\\\b'" },
	{ "t\tn\nb\x01\x7f", 64, "'t\\tn\\nb\\x01\\x7f'" },
	{ "h\xc3\xa9llo \xe6\x97\xa5", 64, "'h\xc3\xa9llo \xe6\x97\xa5'" },
	{ "abcdefgh", 5, "'abcde'\xe2\x80\xa6 (8 characters)" },
};

START_TEST(test_repr_text)
{
	static const uint8_t raw[] = { 'h', 'i', 0xff, '\'', '\\', '\n' };
	struct env e;
	uint64_t strs[ARRAY_SIZE(str_reprs)], b, bnul;

	env_init(&e, _i);
	for (size_t i = 0; i < ARRAY_SIZE(str_reprs); i++)
		strs[i] = fp_str(e.fp, str_reprs[i].text);
	b = fp_bytes(e.fp, raw, sizeof(raw));
	bnul = fp_bytes(e.fp, "ab\0cd", 5);
	env_mem(&e);

	for (size_t i = 0; i < ARRAY_SIZE(str_reprs); i++)
		check_repr(&e, strs[i], str_reprs[i].max, "str", str_reprs[i].want);
	/* Only ' in it: repr() quotes it with ". */
	check_repr(&e, b, 64, "bytes", "b\"hi\\xff'\\\\\\n\"");
	/* Every byte, NULs too. */
	check_repr(&e, bnul, 64, "bytes", "b'ab\\x00cd'");
	env_done(&e);
}
END_TEST

START_TEST(test_repr_containers)
{
	struct env e;
	uint64_t items[3], t3, t0, l1, d0, d2, inst, notype, badname, badtype;
	uint64_t keys[2], vals[2];

	env_init(&e, _i);
	items[0] = fp_long(e.fp, 1);
	items[1] = fp_str(e.fp, "two");
	items[2] = e.fp->none;
	t3 = fp_tuple(e.fp, items, 3);
	t0 = fp_tuple(e.fp, NULL, 0);
	l1 = fp_list(e.fp, items, 1);
	d0 = fp_dict(e.fp, NULL, NULL, 0);
	keys[0] = fp_str(e.fp, "a");
	keys[1] = fp_str(e.fp, "b");
	vals[0] = vals[1] = e.fp->none;
	d2 = fp_dict(e.fp, keys, vals, 2);
	inst = fp_object(e.fp, FP_OBJ, fp_type(e.fp, "Foo"), 16);
	notype = fp_object(e.fp, FP_OBJ, FP_UNMAPPED, 16);
	badtype = fp_type(e.fp, "Bad");
	fp_w64(e.fp, badtype + e.c.L->obj.tp_name, FP_UNMAPPED);
	badname = fp_object(e.fp, FP_OBJ, badtype, 16);
	env_mem(&e);

	check_repr(&e, t3, 64, "tuple", "<tuple of 3 items>");
	check_repr(&e, t0, 64, "tuple", "<tuple of 0 items>");
	check_repr(&e, l1, 64, "list", "<list of 1 item>");
	check_repr(&e, d0, 64, "dict", "<dict of 0 items>");
	check_repr(&e, d2, 64, "dict", "<dict of 2 items>");
	check_repr(&e, inst, 64, "Foo", "<Foo object>");
	repr_error(&e, notype);
	repr_error(&e, badname);
	repr_error(&e, FP_UNMAPPED);
	env_done(&e);
}
END_TEST

/* ---- dicts --------------------------------------------------------------- */

/* A dict of one entry, {key: 1}, in e's memory from now on; *v is the 1. */
static uint64_t dict_of_one(struct env *e, const char *key, uint64_t *v)
{
	uint64_t k, d;

	k = fp_str(e->fp, key);
	*v = fp_long(e->fp, 1);
	d = fp_dict(e->fp, &k, v, 1);
	env_mem(e);
	return d;
}

static void check_get_str(struct env *e, uint64_t d, const char *key, uint64_t want)
{
	uint64_t v = 0xbad;

	ck_assert_msg(py_dict_get_str(&e->c, d, key, &v) == 0, "3.%d: get %s", e->c.L->minor, key);
	ck_assert_msg(v == want, "3.%d: [%s] = %#llx, want %#llx", e->c.L->minor, key,
		      (unsigned long long)v, (unsigned long long)want);
}

static void check_get_int(struct env *e, uint64_t d, int64_t key, uint64_t want)
{
	uint64_t v = 0xbad;

	ck_assert_msg(py_dict_get_int(&e->c, d, key, &v) == 0, "3.%d: get %lld",
		      e->c.L->minor, (long long)key);
	ck_assert_msg(v == want, "3.%d: [%lld] = %#llx, want %#llx", e->c.L->minor,
		      (long long)key, (unsigned long long)v, (unsigned long long)want);
}

static const enum fp_dict_kind str_kinds[] = { FP_DICT_UNICODE, FP_DICT_GENERAL, FP_DICT_SPLIT };

START_TEST(test_dict_str)
{
	struct env e;
	uint64_t keys[4], vals[4], d[3];

	env_init(&e, _i);
	keys[0] = fp_str(e.fp, "alpha");
	keys[1] = 0;	/* a deleted entry */
	keys[2] = fp_str(e.fp, "beta");
	keys[3] = fp_str(e.fp, "g\xc3\xa9mma");
	for (int i = 0; i < 4; i++)
		vals[i] = fp_long(e.fp, 100 + i);
	/* Every entry format: unicode keys, general, and a split table. */
	for (int k = 0; k < 3; k++)
		d[k] = fp_dict_ex(e.fp, keys, vals, 4, str_kinds[k]);
	env_mem(&e);

	for (int k = 0; k < 3; k++) {
		check_get_str(&e, d[k], "alpha", vals[0]);
		check_get_str(&e, d[k], "beta", vals[2]);
		check_get_str(&e, d[k], "bet", 0);
		check_get_str(&e, d[k], "betas", 0);
		check_get_str(&e, d[k], "", 0);
		check_get_str(&e, d[k], "delta", 0);
	}
	env_done(&e);
}
END_TEST

/* A slot found once is proved by what leads to it, and fails the proof
 * once any of that moves; a split table gives no slot to prove. */
START_TEST(test_dict_slot)
{
	struct env e;
	uint64_t keys[3], vals[3], d[3], other;
	struct py_dict_slot s;

	env_init(&e, _i);
	keys[0] = fp_str(e.fp, "alpha");
	keys[1] = fp_str(e.fp, "beta");
	keys[2] = fp_str(e.fp, "gamma");
	for (int i = 0; i < 3; i++)
		vals[i] = fp_long(e.fp, 100 + i);
	other = fp_long(e.fp, 7);
	for (int k = 0; k < 3; k++)
		d[k] = fp_dict_ex(e.fp, keys, vals, 3, str_kinds[k]);
	env_mem(&e);

	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(py_dict_slot_str(&e.c, d[k], "beta", &s), 0);
		ck_assert(s.value == vals[1]);
		if (str_kinds[k] == FP_DICT_SPLIT) {
			ck_assert(!s.entry && !py_dict_slot_holds(&e.c, &s, "beta"));
			continue;
		}
		ck_assert(py_dict_slot_holds(&e.c, &s, "beta"));
		ck_assert(!py_dict_slot_holds(&e.c, &s, "gamma"));
		/* The entry's value replaced: no longer proved. */
		fp_w64(e.fp, s.entry + 8, other);
		env_mem(&e);
		ck_assert(!py_dict_slot_holds(&e.c, &s, "beta"));
		fp_w64(e.fp, s.entry + 8, vals[1]);
		env_mem(&e);
		ck_assert(py_dict_slot_holds(&e.c, &s, "beta"));
		/* Another key object in the entry. */
		fp_w64(e.fp, s.entry, keys[2]);
		env_mem(&e);
		ck_assert(!py_dict_slot_holds(&e.c, &s, "beta"));
		fp_w64(e.fp, s.entry, keys[1]);
		/* The dict given another keys object. */
		fp_w64(e.fp, d[k] + e.c.L->o.dict_keys, s.keys + 8);
		env_mem(&e);
		ck_assert(!py_dict_slot_holds(&e.c, &s, "beta"));
		fp_w64(e.fp, d[k] + e.c.L->o.dict_keys, s.keys);
		env_mem(&e);
		ck_assert(py_dict_slot_holds(&e.c, &s, "beta"));
		ck_assert_int_eq(py_dict_slot_str(&e.c, d[k], "delta", &s), 0);
		ck_assert(!s.value && !s.entry && !py_dict_slot_holds(&e.c, &s, "delta"));
	}
	env_done(&e);
}
END_TEST

START_TEST(test_dict_int)
{
	static const int64_t ks[] = { 1, (int64_t)1 << 40, -5, 0, 0x7f0012345678 };
	struct env e;
	uint64_t keys[5], vals[5], d, mixed, mk[2], mv[2];

	env_init(&e, _i);
	for (int i = 0; i < 5; i++) {
		keys[i] = fp_long(e.fp, ks[i]);
		vals[i] = fp_str(e.fp, "v");
	}
	d = fp_dict(e.fp, keys, vals, 5);
	mk[0] = fp_str(e.fp, "name");
	mk[1] = fp_long(e.fp, 7);
	mv[0] = fp_long(e.fp, 1);
	mv[1] = fp_long(e.fp, 2);
	mixed = fp_dict(e.fp, mk, mv, 2);
	env_mem(&e);

	for (int i = 0; i < 5; i++)
		check_get_int(&e, d, ks[i], vals[i]);
	check_get_int(&e, d, 2, 0);
	check_get_int(&e, d, -1, 0);
	check_get_int(&e, d, INT64_MIN, 0);
	/* A dict with both kinds of key: each lookup finds its own. */
	check_get_int(&e, mixed, 7, mv[1]);
	check_get_str(&e, mixed, "name", mv[0]);
	check_get_str(&e, mixed, "nope", 0);
	env_done(&e);
}
END_TEST

/* Enough entries for 2-byte indices and several chunks of entries. */
START_TEST(test_dict_big)
{
	enum { N = 300 };
	struct env e;
	uint64_t keys[N], vals[N], d;
	char name[16];

	env_init(&e, _i);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		keys[i] = fp_str(e.fp, name);
		vals[i] = 0x1000 + i;
	}
	d = fp_dict(e.fp, keys, vals, N);
	env_mem(&e);

	for (int i = 0; i < N; i += 13) {
		snprintf(name, sizeof(name), "k%d", i);
		check_get_str(&e, d, name, vals[i]);
	}
	check_get_str(&e, d, "k299", vals[299]);
	check_get_str(&e, d, "k300", 0);
	env_done(&e);
}
END_TEST

START_TEST(test_dict_corrupt)
{
	struct env e;
	uint64_t keys[2], vals[2], d, dk, nk, u;
	uint64_t absurd, oversize, toomany, unmapped_entries, badsize, badkind, nokeys;
	unsigned long before;

	env_init(&e, _i);
	keys[0] = fp_str(e.fp, "a");
	keys[1] = fp_str(e.fp, "b");
	vals[0] = vals[1] = e.fp->none;
	d = fp_dict(e.fp, keys, vals, 2);
	dk = fp_r64(e.fp, d + e.c.L->o.dict_keys);

	/* dk_nentries far beyond anything. */
	absurd = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, absurd + e.c.L->o.dict_keys);
	fp_w64(e.fp, fp_dict_keys_nentries(e.fp, nk), 1ull << 40);
	/* More entries than the table has slots. */
	oversize = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, oversize + e.c.L->o.dict_keys);
	fp_w64(e.fp, fp_dict_keys_nentries(e.fp, nk), 9);
	/* A huge table claiming to be full: over the entry limit. */
	toomany = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, toomany + e.c.L->o.dict_keys);
	if (e.c.L->dictkeys == DICTKEYS_310)
		fp_w64(e.fp, nk + 8, 1u << 24);
	else
		fp_w8(e.fp, nk + 8, 24);
	fp_w64(e.fp, fp_dict_keys_nentries(e.fp, nk), (1u << 16) + 1);
	/* Within the limits, but the entries run off the mapping. */
	unmapped_entries = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, unmapped_entries + e.c.L->o.dict_keys);
	if (e.c.L->dictkeys == DICTKEYS_310)
		fp_w64(e.fp, nk + 8, 1u << 17);
	else
		fp_w8(e.fp, nk + 8, 17);
	fp_w64(e.fp, fp_dict_keys_nentries(e.fp, nk), 60000);
	/* A size that is not a power of two, or an unknown keys kind. */
	badsize = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, badsize + e.c.L->o.dict_keys);
	if (e.c.L->dictkeys == DICTKEYS_310)
		fp_w64(e.fp, nk + 8, 12);
	else
		fp_w8(e.fp, nk + 8, 27);
	badkind = fp_dict(e.fp, keys, vals, 2);
	nk = fp_r64(e.fp, badkind + e.c.L->o.dict_keys);
	if (e.c.L->dictkeys == DICTKEYS_311)
		fp_w8(e.fp, nk + 10, 3);
	else
		fp_w64(e.fp, nk + 8, 0);
	nokeys = fp_dict(e.fp, keys, vals, 2);
	fp_w64(e.fp, nokeys + e.c.L->o.dict_keys, FP_UNMAPPED);
	env_mem(&e);

	check_get_str(&e, d, "b", vals[1]);
	ck_assert_uint_ne(dk, 0);
	before = mem_fake_reads(e.m);
	ck_assert_int_eq(py_dict_get_str(&e.c, absurd, "b", &u), -EINVAL);
	ck_assert_int_eq(py_dict_get_int(&e.c, absurd, 1, &u), -EINVAL);
	ck_assert_int_eq(py_dict_get_str(&e.c, oversize, "b", &u), -EINVAL);
	ck_assert_int_eq(py_dict_get_str(&e.c, toomany, "b", &u), -EINVAL);
	ck_assert_int_lt(py_dict_get_str(&e.c, unmapped_entries, "zz", &u), 0);
	ck_assert_int_eq(py_dict_get_str(&e.c, badsize, "b", &u), -EINVAL);
	ck_assert_int_eq(py_dict_get_str(&e.c, badkind, "b", &u), -EINVAL);
	ck_assert_int_eq(py_dict_get_str(&e.c, nokeys, "b", &u), -EFAULT);
	ck_assert_int_lt(py_dict_get_str(&e.c, FP_UNMAPPED, "b", &u), 0);
	/* Refusals cost a few reads each, not a walk over 2^40 entries. */
	ck_assert_uint_lt(mem_fake_reads(e.m) - before, 100);
	env_done(&e);
}
END_TEST

/* ---- attributes and tuples ----------------------------------------------- */

START_TEST(test_instance_attr)
{
	static const char *const names[] = { "_name", "daemon", "_ident" };
	struct env e;
	uint64_t vals[3], plain, shared, bare, v;

	env_init(&e, _i);
	vals[0] = fp_str(e.fp, "worker-1");
	vals[1] = e.fp->true_;
	vals[2] = fp_long(e.fp, 1234);
	plain = fp_instance(e.fp, "Thread", names, vals, 3, false);
	shared = fp_instance(e.fp, "Thread", names, vals, 3, true);
	bare = fp_object(e.fp, FP_OBJ, fp_type(e.fp, "object"), 48);
	env_mem(&e);

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(py_instance_attr(&e.c, plain, names[i], &v), 0);
		ck_assert_uint_eq(v, vals[i]);
		ck_assert_int_eq(py_instance_attr(&e.c, shared, names[i], &v), 0);
		ck_assert_uint_eq(v, vals[i]);
	}
	ck_assert_int_eq(py_instance_attr(&e.c, plain, "missing", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(py_instance_attr(&e.c, shared, "missing", &v), 0);
	ck_assert_uint_eq(v, 0);
	/* No dict and no values anywhere. */
	ck_assert_int_lt(py_instance_attr(&e.c, bare + 32, "_name", &v), 0);
	ck_assert_int_lt(py_instance_attr(&e.c, FP_UNMAPPED, "_name", &v), 0);
	env_done(&e);
}
END_TEST

START_TEST(test_tuple_item)
{
	struct env e;
	uint64_t items[2] = { 0x1111, 0x2222 }, t, v;
	int64_t size;

	env_init(&e, _i);
	t = fp_tuple(e.fp, items, 2);
	env_mem(&e);

	ck_assert_int_eq(py_varsize(&e.c, t, &size), 0);
	ck_assert_int_eq(size, 2);
	ck_assert_int_eq(py_tuple_item(&e.c, t, 0, &v), 0);
	ck_assert_uint_eq(v, 0x1111);
	ck_assert_int_eq(py_tuple_item(&e.c, t, 1, &v), 0);
	ck_assert_uint_eq(v, 0x2222);
	ck_assert_int_eq(py_tuple_item(&e.c, t, 2, &v), -ERANGE);
	ck_assert_int_eq(py_tuple_item(&e.c, t, -1, &v), -ERANGE);
	ck_assert_int_lt(py_tuple_item(&e.c, FP_UNMAPPED, 0, &v), 0);
	env_done(&e);
}
END_TEST

START_TEST(test_type_name)
{
	struct env e;
	uint64_t o;
	char buf[8];

	env_init(&e, _i);
	o = fp_object(e.fp, FP_OBJ, fp_type(e.fp, "averylongtypename"), 16);
	env_mem(&e);

	ck_assert_int_eq(py_type_name(&e.c, o, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "averylo");
	env_done(&e);
}
END_TEST

/* ---- regressions: bugs these tests found, since fixed ----------------------------------- */

/* Floats print as Python prints them, without an exponent inside
 * 1e-4 <= |x| < 1e16.  repr_float() used to format with "%.*g", which
 * switches to an exponent as soon as the exponent reaches the precision:
 * 100.0 printed "1e+02". */
START_TEST(test_float_exponent)
{
	static const struct {
		double d;
		const char *want;
	} cases[] = {
		{ 100.0, "100.0" }, { 10.0, "10.0" }, { 2e5, "200000.0" },
		{ 1e15, "1000000000000000.0" }, { -3e3, "-3000.0" },
	};
	struct env e;
	uint64_t objs[5];

	env_init(&e, _i);
	for (int i = 0; i < 5; i++)
		objs[i] = fp_float(e.fp, cases[i].d);
	env_mem(&e);
	for (int i = 0; i < 5; i++)
		check_repr(&e, objs[i], 64, "float", cases[i].want);
	env_done(&e);
}
END_TEST

/* A non-compact string with the ASCII bit is read.  CPython makes exactly
 * those for instances of str subclasses (unicode_subtype_new copies the
 * ascii bit and clears compact; the data sits behind data.any); py_str()
 * used to refuse them. */
START_TEST(test_legacy_ascii)
{
	static const uint32_t two[] = { 'o', 'k' };
	struct env e;
	uint64_t s;

	env_init(&e, _i);
	s = fp_str_cps(e.fp, two, 2, 1, true, false);
	env_mem(&e);
	check_str(&e, s, 100, "ok");
	env_done(&e);
}
END_TEST

/* A non-ASCII key is found.  match_str() used to compare the key's length
 * in characters with strlen() of the wanted UTF-8, and never found one. */
START_TEST(test_non_ascii_key)
{
	struct env e;
	uint64_t v, d;

	env_init(&e, _i);
	d = dict_of_one(&e, "g\xc3\xa9mma", &v);
	check_get_str(&e, d, "g\xc3\xa9mma", v);
	env_done(&e);
}
END_TEST

/* A str key is not an int key, even one whose length and hash decode as
 * the wanted number.  match_int() used to read any key as an int without
 * checking its type, and matched it. */
START_TEST(test_int_key_type)
{
	struct env e;
	uint64_t v, d;

	env_init(&e, _i);
	d = dict_of_one(&e, "x", &v);
	/* "x" has length 1 and hash -1: as an ob_size int that is one
	 * digit 0x3fffffff; as an lv_tag int, zero. */
	check_get_int(&e, d, e.c.L->longs == LONG_LV_TAG ? 0 : 0x3fffffff, 0);
	env_done(&e);
}
END_TEST

int main(void)
{
	const int lo = LAYOUT_MIN_MINOR, hi = LAYOUT_MAX_MINOR + 1;
	const struct test_group groups[] = {
		{ "str", .tests = { test_str_kinds, test_str_truncate, test_str_odd_chars,
		                    test_str_bad, test_bytes } },
		{ "int", .tests = { test_long, test_long_encoding, test_long_range } },
		{ "repr", .tests = { test_repr_scalars, test_repr_float, test_repr_text,
		                     test_repr_containers, test_repr_deep } },
		{ "dict", .tests = { test_dict_str, test_dict_int, test_dict_slot, test_dict_big,
		                     test_dict_corrupt, test_instance_attr, test_tuple_item,
		                     test_type_name } },
		{ "regressions", .tests = { test_float_exponent, test_int_key_type,
		                            test_legacy_ascii, test_non_ascii_key } },
	};

	return run_groups("pyobj", groups, ARRAY_SIZE(groups), lo, hi);
}
