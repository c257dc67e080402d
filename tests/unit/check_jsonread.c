/* Tests for the JSON reader (src/util/jsonread.c): documents it must read
 * exactly, text it must refuse with the right byte offset, and hostile
 * input (nesting past the bound, huge numbers, bad escapes, every prefix
 * of a valid document) that must fail cleanly, never crash or hang. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "util/jsonread.h"
#include "util/util.h"

static const char doc[] =
	" {\"pid\": 1838, \"neg\": -12, \"f\": 2.5e3, \"ok\": true, \"no\": false, \"none\": null,\n"
	"  \"s\": \"a\\\"b\\\\c\\/\\n\\t\\u00e9\\ud83d\\ude00\", \"arr\": [1, [2, 3], {}, []],\n"
	"  \"obj\": {\"k\": \"v\", \"deep\": {\"x\": [0]}}, \"big\": 123456789012345678901234} ";

static int parse(struct jdoc *d, const char *s, char *err)
{
	return jdoc_parse(d, s, strlen(s), err, 128);
}

START_TEST(test_valid)
{
	struct jdoc d = JDOC_INIT;
	char err[128] = "";
	const struct jv *r, *a;
	int64_t v;

	ck_assert_int_eq(parse(&d, doc, err), 0);
	r = jdoc_root(&d);
	ck_assert(jv_is(r, JV_OBJ));
	ck_assert(jv_int(jv_get(&d, r, "pid"), 0, 1 << 30, &v) && v == 1838);
	ck_assert(jv_int(jv_get(&d, r, "neg"), -100, 0, &v) && v == -12);
	ck_assert(!jv_int(jv_get(&d, r, "neg"), 0, 100, &v));
	ck_assert(!jv_int(jv_get(&d, r, "f"), 0, 100000, &v));
	ck_assert(jv_get(&d, r, "f")->num == 2500.0);
	ck_assert(jv_is(jv_get(&d, r, "ok"), JV_TRUE));
	ck_assert(jv_is(jv_get(&d, r, "no"), JV_FALSE));
	ck_assert(jv_is(jv_get(&d, r, "none"), JV_NULL));
	ck_assert_str_eq(jv_str(&d, jv_get(&d, r, "s")), "a\"b\\c/\n\t\xc3\xa9\xf0\x9f\x98\x80");
	a = jv_get(&d, r, "arr");
	ck_assert_uint_eq(jv_len(a), 4);
	ck_assert_uint_eq(jv_len(jv_at(&d, a, 1)), 2);
	ck_assert(jv_int(jv_at(&d, jv_at(&d, a, 1), 1), 0, 9, &v) && v == 3);
	ck_assert(jv_is(jv_at(&d, a, 2), JV_OBJ) && jv_len(jv_at(&d, a, 2)) == 0);
	ck_assert_ptr_null(jv_at(&d, a, 4));
	ck_assert_str_eq(jv_str(&d, jv_get(&d, jv_get(&d, r, "obj"), "k")), "v");
	ck_assert_str_eq(jv_key(&d, jv_get(&d, r, "obj")), "obj");
	ck_assert_ptr_null(jv_get(&d, r, "missing"));
	ck_assert_ptr_null(jv_get(&d, a, "pid"));	/* not an object */
	/* Too big for int64: a number, never an exact integer. */
	ck_assert(jv_is(jv_get(&d, r, "big"), JV_NUM));
	ck_assert(!jv_int(jv_get(&d, r, "big"), INT64_MIN, INT64_MAX, &v));
	jdoc_release(&d);
}
END_TEST

static const struct {
	const char *text;
	size_t at;
	const char *what;
} bad[] = {
	{ "", 0, "end of the text" },
	{ "{\"a\":1,}", 7, "member's name" },
	{ "[1 2]", 3, "expected ','" },
	{ "[01]", 2, "expected ','" },
	{ "[-]", 2, "digit" },
	{ "[1.]", 3, "'.'" },
	{ "[1e+]", 4, "exponent" },
	{ "{\"a\" 1}", 5, "':'" },
	{ "\"\\x\"", 2, "unknown escape" },
	{ "\"\\u12g4\"", 5, "hex digits" },
	{ "\"\\u0000\"", 7, "NUL" },
	{ "\"a\tb\"", 2, "control character" },
	{ "\"abc", 4, "ends inside a string" },
	{ "[1] x", 4, "after the end" },
	{ "nul", 0, "expected a value" },
	{ "[tru]", 1, "expected a value" },
	{ "{\"a\":[1,{\"b\":", 13, "end of the text" },
};

START_TEST(test_invalid)
{
	struct jdoc d = JDOC_INIT;
	char err[128], want[32];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(parse(&d, bad[i].text, err) == -EINVAL, "%s parsed", bad[i].text);
		snprintf(want, sizeof(want), "byte %zu: ", bad[i].at);
		ck_assert_msg(!strncmp(err, want, strlen(want)) && strstr(err, bad[i].what),
			      "%s: \"%s\", not at %zu (%s)", bad[i].text, err, bad[i].at, bad[i].what);
		ck_assert_ptr_null(jdoc_root(&d));
	}
	/* A failed parse keeps the buffers for the next document. */
	jdoc_release(&d);
}
END_TEST

/* Lone surrogates and bytes that are not UTF-8 read as U+FFFD, as the
 * writer writes them: a name is shown, never passed on raw. */
START_TEST(test_replacement)
{
	struct jdoc d = JDOC_INIT;
	char err[128];

	ck_assert_int_eq(parse(&d, "[\"\\ud800x\", \"\\udc00\", \"a\xff" "b\", \"\\ud800\\u0041\"]",
			       err), 0);
	ck_assert_str_eq(jv_str(&d, jv_at(&d, jdoc_root(&d), 0)), "\xef\xbf\xbdx");
	ck_assert_str_eq(jv_str(&d, jv_at(&d, jdoc_root(&d), 1)), "\xef\xbf\xbd");
	ck_assert_str_eq(jv_str(&d, jv_at(&d, jdoc_root(&d), 2)), "a\xef\xbf\xbd" "b");
	ck_assert_str_eq(jv_str(&d, jv_at(&d, jdoc_root(&d), 3)), "\xef\xbf\xbd" "A");
	jdoc_release(&d);
}
END_TEST

START_TEST(test_deep)
{
	struct jdoc d = JDOC_INIT;
	char err[128];
	size_t n = 100000;
	char *s = xmalloc(2 * n + 1);

	/* JSON_MAX_DEPTH levels read; one more is refused, and a hundred
	 * thousand never reach the C stack. */
	for (size_t depth = JSON_MAX_DEPTH; depth <= n; depth = depth == JSON_MAX_DEPTH ?
	     JSON_MAX_DEPTH + 1 : depth == JSON_MAX_DEPTH + 1 ? n : n + 1) {
		memset(s, '[', depth);
		memset(s + depth, ']', depth);
		s[2 * depth] = 0;
		if (depth == JSON_MAX_DEPTH) {
			ck_assert_int_eq(parse(&d, s, err), 0);
		} else {
			ck_assert_int_eq(parse(&d, s, err), -EINVAL);
			ck_assert_ptr_nonnull(strstr(err, "nested deeper"));
			ck_assert_ptr_nonnull(strstr(err, "byte 64:"));
		}
	}
	free(s);
	jdoc_release(&d);
}
END_TEST

START_TEST(test_huge_numbers)
{
	struct jdoc d = JDOC_INIT;
	char err[128];
	size_t n = 1 << 20;
	char *s = xmalloc(n + 3);
	int64_t v;

	s[0] = '[';
	memset(s + 1, '9', n);
	strcpy(s + 1 + n, "]");
	ck_assert_int_eq(parse(&d, s, err), 0);
	ck_assert(!jv_int(jv_at(&d, jdoc_root(&d), 0), INT64_MIN, INT64_MAX, &v));
	ck_assert_int_eq(parse(&d, "[1e999999, -1e999999, 9223372036854775807, -9223372036854775808]",
			       err), 0);
	ck_assert(jv_int(jv_at(&d, jdoc_root(&d), 2), INT64_MIN, INT64_MAX, &v) && v == INT64_MAX);
	ck_assert(jv_int(jv_at(&d, jdoc_root(&d), 3), INT64_MIN, INT64_MAX, &v) && v == INT64_MIN);
	free(s);
	jdoc_release(&d);
}
END_TEST

/* Every prefix of a valid document is refused (the document ends inside
 * it), and every byte changed to each of a few characters parses or fails
 * without a crash: ASan and the fuzzer (fuzz_jsonread) take it further. */
START_TEST(test_truncated_and_mutated)
{
	static const char marks[] = "\"\\{}[],:0-e\xff";
	size_t len = strlen(doc);
	struct jdoc d = JDOC_INIT;
	char err[128], *s = xmalloc(len + 1);

	for (size_t n = 0; n < len - 2; n++)
		ck_assert_msg(jdoc_parse(&d, doc, n, err, sizeof(err)) == -EINVAL,
			      "prefix of %zu bytes parsed", n);
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < sizeof(marks) - 1; k++) {
			memcpy(s, doc, len + 1);
			s[i] = marks[k];
			if (jdoc_parse(&d, s, len, err, sizeof(err)) == 0)
				ck_assert_ptr_nonnull(jdoc_root(&d));
			else
				ck_assert(!strncmp(err, "byte ", 5));
		}
	}
	free(s);
	jdoc_release(&d);
}
END_TEST

/* A raw member is checked as closely as any (its errors at their byte)
 * but not built: its text, exactly, and nothing of it in the tree. */
START_TEST(test_raw)
{
	static const char *const keys[] = { "frames", NULL };
	static const char text[] = "{\"a\": 1, \"frames\": [{\"f\": \"x\\u00e9\"}, 2] , \"b\": [3]}";
	struct jdoc d = JDOC_INIT;
	char err[128];
	const struct jv *raw;
	size_t len;
	int64_t v;

	d.raw_keys = keys;
	ck_assert_int_eq(parse(&d, text, err), 0);
	raw = jv_get(&d, jdoc_root(&d), "frames");
	ck_assert(jv_is(raw, JV_RAW));
	ck_assert_ptr_eq(jv_raw(&d, raw, &len), text + 19);
	ck_assert_uint_eq(len, strlen("[{\"f\": \"x\\u00e9\"}, 2]"));
	ck_assert_uint_eq(jv_len(raw), 0);
	ck_assert(jv_int(jv_at(&d, jv_get(&d, jdoc_root(&d), "b"), 0), 0, 9, &v) && v == 3);
	ck_assert_uint_eq(d.nv, 5);	/* root, a, frames, b, 3 */
	ck_assert_ptr_null(jv_raw(&d, jv_get(&d, jdoc_root(&d), "a"), &len));
	ck_assert_int_eq(parse(&d, "{\"frames\": [{\"f\": \"\\q\"}]}", err), -EINVAL);
	ck_assert_str_eq(err, "byte 20: unknown escape \\q");
	ck_assert_int_eq(parse(&d, "{\"frames\": [1,]}", err), -EINVAL);
	ck_assert_int_eq(parse(&d, "{\"x\": {\"frames\": [[[]]]}}", err), 0);
	ck_assert(jv_is(jv_get(&d, jv_get(&d, jdoc_root(&d), "x"), "frames"), JV_RAW));
	jdoc_release(&d);
}
END_TEST

/* A raw member is checked fast (check_value in jsonread.c), the full
 * reader only reading it again for the message: both must refuse the
 * same texts at the same byte.  Each text of bad[], the valid document
 * and its mutations, and a long string with each byte that ends a plain
 * run at each place of the eight-byte words it is read in. */
static void agree(const char *val, size_t n)
{
	static const char *const keys[] = { "frames", NULL };
	struct jdoc full = JDOC_INIT, raw = JDOC_INIT;
	struct strbuf sb = STRBUF_INIT;
	char e1[128] = "", e2[128] = "";
	int rc1, rc2;

	raw.raw_keys = keys;
	sb_puts(&sb, "{\"a\": [{\"frames\": ");
	sb_add(&sb, val, n);
	sb_puts(&sb, "}]}");
	rc1 = jdoc_parse(&full, sb.buf, sb.len, e1, sizeof(e1));
	rc2 = jdoc_parse(&raw, sb.buf, sb.len, e2, sizeof(e2));
	ck_assert_msg(rc1 == rc2 && !strcmp(e1, e2), "%s: \"%s\" (full) but \"%s\" (raw)",
		      sb.buf, e1, e2);
	jdoc_release(&full);
	jdoc_release(&raw);
	sb_release(&sb);
}

START_TEST(test_raw_agrees)
{
	static const char ends[] = "\"\\\x01\x1f\x7f\x80\xff un0";
	static const char *const more[] = {
		"\"\\ud800\\udc00\"", "\"\\ud800\\u0000\"", "\"\\ud800\\u12\"", "\"\\u00E9\"",
		"-0", "-01", "1.e5", "1e", "1E+5", "-x", "2.5e-3", "nulll", "truex", "fals", "[]",
		"{}", "[ ]", "{ }", "[1 ,2 ]", "{\"a\" :1 }", "[{\"a\":[true,false,null]}]",
	};
	char s[48], mut[sizeof(doc)];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		agree(bad[i].text, strlen(bad[i].text));
	for (size_t i = 0; i < ARRAY_SIZE(more); i++)
		agree(more[i], strlen(more[i]));
	agree(doc, strlen(doc));
	for (size_t i = 0; i < strlen(doc); i++) {
		for (size_t k = 0; k < 4; k++) {
			memcpy(mut, doc, sizeof(doc));
			mut[i] = "\"\\{]"[k];
			agree(mut, strlen(doc));
		}
	}
	for (size_t at = 1; at < sizeof(s) - 1; at++) {
		for (size_t k = 0; k < sizeof(ends) - 1; k++) {
			memset(s, 'a', sizeof(s));
			s[0] = s[sizeof(s) - 1] = '"';
			s[at] = ends[k];
			agree(s, sizeof(s));
			agree(s, at + 1);	/* cut short there */
		}
	}
}
END_TEST

/* Depth limits hold for a raw value as for any. */
START_TEST(test_raw_deep)
{
	char s[2 * JSON_MAX_DEPTH + 2];

	for (size_t depth = JSON_MAX_DEPTH - 3; depth <= JSON_MAX_DEPTH; depth++) {
		memset(s, '[', depth);
		memset(s + depth, ']', depth);
		agree(s, 2 * depth);
	}
}
END_TEST

/* Text the caller knows (known_raw) is taken as it is, with the name the
 * caller gave it; what it does not know, or knows longer than the text
 * left, is read. */
struct knows {
	const char *text;
	size_t extra;	/* claimed past its end */
};

static size_t known(void *ctx, const char *text, size_t avail, int depth, int64_t *name)
{
	const struct knows *k = ctx;

	ck_assert_int_eq(depth, 1);
	if (strlen(k->text) > avail || strncmp(text, k->text, strlen(k->text)))
		return 0;
	*name = 7;
	return strlen(k->text) + k->extra;
}

START_TEST(test_known_raw)
{
	static const char *const keys[] = { "frames", NULL };
	struct knows k = { "[1,2]", 0 };
	struct jdoc d = JDOC_INIT;
	char err[128];
	const struct jv *raw;
	size_t len;

	d.raw_keys = keys;
	d.known_raw = known;
	d.known_ctx = &k;
	ck_assert_int_eq(parse(&d, "{\"frames\": [1,2], \"b\": 3}", err), 0);
	raw = jv_get(&d, jdoc_root(&d), "frames");
	ck_assert(jv_is(raw, JV_RAW) && raw->i == 7 && raw->depth == 1);
	ck_assert_ptr_nonnull(jv_raw(&d, raw, &len));
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(parse(&d, "{\"frames\": [1,3]}", err), 0);
	ck_assert_int_eq(jv_get(&d, jdoc_root(&d), "frames")->i, 0);
	ck_assert_int_eq(parse(&d, "{\"frames\": [1,2] x}", err), -EINVAL);
	ck_assert_str_eq(err, "byte 17: expected ',' or '}', found something else");
	k.extra = 3;	/* past the end of the text: read, and refused */
	ck_assert_int_eq(parse(&d, "{\"frames\": [1,2]]]", err), -EINVAL);
	ck_assert_str_eq(err, "byte 16: expected ',' or '}', found something else");
	jdoc_release(&d);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "read", .tests = { test_valid, test_invalid, test_replacement, test_raw } },
		{ "raw", .tests = { test_raw_agrees, test_raw_deep, test_known_raw } },
		{ "hostile", .tests = { test_deep, test_huge_numbers, test_truncated_and_mutated } },
	};

	return run_groups("jsonread", groups, ARRAY_SIZE(groups), 0, 1);
}
