/* Python's repr() rebuilt from values already read (src/python/repr.c),
 * and the one escaping rule for target text (src/util/escape.c), on
 * synthetic input: no target.  The expected reprs were printed by
 * Python 3.15 (Unicode 17.0.0, the version of src/util/unicode_tables.c)
 * and pasted here; tests/live/check_locals compares with every real
 * interpreter's own repr().  A threading.Thread's repr is also read from
 * synthetic objects (tests/lib/fakepy.c) of every layout, as py_repr()
 * reads it from a target. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "process/mem.h"
#include "python/pyobj.h"
#include "python/repr.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/unicode.h"
#include "util/util.h"
#include "suite.h"

struct str_case {
	uint32_t cps[16];
	size_t n;
	const char *want;
};

struct bytes_case {
	const char *b;
	size_t n;
	const char *want;
};

struct float_case {
	uint64_t bits;
	const char *want;
};

struct int_case {
	int sign;
	size_t nd;
	const char *want;
};

/* Generated: see the comment at the top. */
static const struct str_case str_cases[] = {
	{ { 0 }, 0, "''" },
	{ { 0x68, 0x65, 0x6c, 0x6c, 0x6f }, 5, "'hello'" },
	{ { 0x69, 0x74, 0x27, 0x73 }, 4, "\042it's\042" },
	{ { 0x73, 0x61, 0x79, 0x20, 0x22, 0x68, 0x69, 0x22 }, 8, "'say \042hi\042'" },
	{ { 0x62, 0x6f, 0x74, 0x68, 0x20, 0x27, 0x20, 0x61, 0x6e, 0x64, 0x20, 0x22 }, 12, "'both \134' and \042'" },
	{ { 0x61, 0x5c, 0x62 }, 3, "'a\134\134b'" },
	{ { 0x9, 0xa, 0xd, 0x0, 0x1, 0x1f, 0x7f }, 7, "'\134t\134n\134r\134x00\134x01\134x1f\134x7f'" },
	{ { 0x80, 0x85, 0x9f, 0xa0, 0xa1, 0xad, 0xff }, 7, "'\134x80\134x85\134x9f\134xa0\302\241\134xad\303\277'" },
	{ { 0x68, 0xe9, 0x6c, 0x6c, 0x6f, 0x20, 0x77, 0xf6, 0x72, 0x6c, 0x64 }, 11, "'h\303\251llo w\303\266rld'" },
	{ { 0x202e, 0x200b, 0x200d, 0x2028, 0x2066 }, 5, "'\134u202e\134u200b\134u200d\134u2028\134u2066'" },
	{ { 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x72, 0x65, 0x64, 0x7, 0x202e }, 10, "'\134x1b[31mred\134x07\134u202e'" },
	{ { 0xd800, 0xdfff }, 2, "'\134ud800\134udfff'" },
	{ { 0x1f600, 0xe0001, 0x10ffff, 0xf0000 }, 4, "'\360\237\230\200\134U000e0001\134U0010ffff\134U000f0000'" },
	{ { 0xfeff, 0xfffe, 0xffff, 0xfffd }, 4, "'\134ufeff\134ufffe\134uffff\357\277\275'" },
	{ { 0x378, 0x3000, 0x20, 0xa0 }, 4, "'\134u0378\134u3000 \134xa0'" },
	{ { 0x4e2d, 0x6587 }, 2, "'\344\270\255\346\226\207'" },
};
static const struct bytes_case bytes_cases[] = {
	{ "", 0, "b''" },
	{ "ab\000cd", 5, "b'ab\134x00cd'" },
	{ "\000\377", 2, "b'\134x00\134xff'" },
	{ "it's", 4, "b\042it's\042" },
	{ "\042", 1, "b'\042'" },
	{ "'\042", 2, "b'\134'\042'" },
	{ "\134\011\012\015\177\200", 6, "b'\134\134\134t\134n\134r\134x7f\134x80'" },
	{ "\000\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037 !\042#$%&'()*+,-./0123456789:;<=>\077@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\134]^_`abcdefghijklmnopqrstuvwxyz{|}~\177\200\201\202\203\204\205\206\207\210\211\212\213\214\215\216\217\220\221\222\223\224\225\226\227\230\231\232\233\234\235\236\237\240\241\242\243\244\245\246\247\250\251\252\253\254\255\256\257\260\261\262\263\264\265\266\267\270\271\272\273\274\275\276\277\300\301\302\303\304\305\306\307\310\311\312\313\314\315\316\317\320\321\322\323\324\325\326\327\330\331\332\333\334\335\336\337\340\341\342\343\344\345\346\347\350\351\352\353\354\355\356\357\360\361\362\363\364\365\366\367\370\371\372\373\374\375\376\377", 256, "b'\134x00\134x01\134x02\134x03\134x04\134x05\134x06\134x07\134x08\134t\134n\134x0b\134x0c\134r\134x0e\134x0f\134x10\134x11\134x12\134x13\134x14\134x15\134x16\134x17\134x18\134x19\134x1a\134x1b\134x1c\134x1d\134x1e\134x1f !\042#$%&\134'()*+,-./0123456789:;<=>\077@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\134\134]^_`abcdefghijklmnopqrstuvwxyz{|}~\134x7f\134x80\134x81\134x82\134x83\134x84\134x85\134x86\134x87\134x88\134x89\134x8a\134x8b\134x8c\134x8d\134x8e\134x8f\134x90\134x91\134x92\134x93\134x94\134x95\134x96\134x97\134x98\134x99\134x9a\134x9b\134x9c\134x9d\134x9e\134x9f\134xa0\134xa1\134xa2\134xa3\134xa4\134xa5\134xa6\134xa7\134xa8\134xa9\134xaa\134xab\134xac\134xad\134xae\134xaf\134xb0\134xb1\134xb2\134xb3\134xb4\134xb5\134xb6\134xb7\134xb8\134xb9\134xba\134xbb\134xbc\134xbd\134xbe\134xbf\134xc0\134xc1\134xc2\134xc3\134xc4\134xc5\134xc6\134xc7\134xc8\134xc9\134xca\134xcb\134xcc\134xcd\134xce\134xcf\134xd0\134xd1\134xd2\134xd3\134xd4\134xd5\134xd6\134xd7\134xd8\134xd9\134xda\134xdb\134xdc\134xdd\134xde\134xdf\134xe0\134xe1\134xe2\134xe3\134xe4\134xe5\134xe6\134xe7\134xe8\134xe9\134xea\134xeb\134xec\134xed\134xee\134xef\134xf0\134xf1\134xf2\134xf3\134xf4\134xf5\134xf6\134xf7\134xf8\134xf9\134xfa\134xfb\134xfc\134xfd\134xfe\134xff'" },
};
static const struct float_case float_cases[] = {
	{ 0x0000000000000000ull, "0.0" },	/* 0.0 */
	{ 0x8000000000000000ull, "-0.0" },	/* -0.0 */
	{ 0x3fb999999999999aull, "0.1" },	/* 0.1 */
	{ 0x3ff0000000000000ull, "1.0" },	/* 1.0 */
	{ 0x7e37e43c8800759cull, "1e+300" },	/* 1e+300 */
	{ 0x3ee4f8b588e368f1ull, "1e-05" },	/* 1e-05 */
	{ 0x3f1a36e2eb1c432dull, "0.0001" },	/* 0.0001 */
	{ 0x40f86a0000000000ull, "100000.0" },	/* 100000.0 */
	{ 0x4341c37937e08000ull, "1e+16" },	/* 1e+16 */
	{ 0x430c6bf526340000ull, "1000000000000000.0" },	/* 1000000000000000.0 */
	{ 0x437b69b4ba630f35ull, "1.2345678901234568e+17" },	/* 1.2345678901234568e+17 */
	{ 0x4004000000000000ull, "2.5" },	/* 2.5 */
	{ 0x3fd5555555555555ull, "0.3333333333333333" },	/* 0.3333333333333333 */
	{ 0x80001b9cd1295941ull, "-1.5e-310" },	/* -1.5e-310 */
	{ 0x0000000000000001ull, "5e-324" },	/* 5e-324 */
	{ 0x7fefffffffffffffull, "1.7976931348623157e+308" },	/* 1.7976931348623157e+308 */
	{ 0x3fd3333333333334ull, "0.30000000000000004" },	/* 0.30000000000000004 */
	{ 0x4340000000000000ull, "9007199254740992.0" },	/* 9007199254740992.0 */
	{ 0x43118b54f22aeb03ull, "1234567890123456.8" },	/* 1234567890123456.8 */
	{ 0x4345ee2a2eb5a5c4ull, "1.2345678901234568e+16" },	/* 1.2345678901234568e+16 */
};
static const uint32_t int_digits[][REPR_INT_MAX_DIGITS] = {
	{ 0 },
	{ 0x1 },
	{ 0x7 },
	{ 0x0, 0x1 },
	{ 0x0, 0x0, 0x10 },
	{ 0x0, 0x0, 0x0, 0x400 },
	{ 0x27640000, 0x3782dace },
	{ 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0x3fffffff, 0xff },
	{ 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x152f4dd1, 0x38575142, 0x2eaeb442, 0x3e8eccd0, 0x23fcda36, 0x2d0a1e9b, 0xbc177f7, 0x1f4b2341, 0x2a8f8e06, 0x324ed9eb, 0x856b3ad, 0x36742db3, 0xc100959, 0x228f56d2, 0x36f44abe, 0x21354b64, 0x1c571dbe, 0x27e4708, 0x2a4a4581, 0x335eab61, 0x8e14c7, 0x1d66e967, 0x243c8800, 0x5f },
};
static const struct int_case int_cases[] = {
	{ 0, 0, "0" },
	{ 1, 1, "1" },
	{ -1, 1, "-7" },
	{ 1, 2, "1073741824" },
	{ 1, 3, "18446744073709551616" },
	{ -1, 4, "-1267650600228229401496703205376" },
	{ 1, 2, "1000000000000000000" },
	{ 1, 69, "32317006071311007300714876688669951960444102669715484032130345427524655138867890893197201411522913463688717960921898019494119559150490921095088152386448283120630877367300996091750197750389652106796057638384067568276792218642619756161838094338476170470581645852036305042887575891541065808607552399123930385521914333389668342420684974786564569494856176035326322058077805659331026192708460314150258592864177116725943603718461857357598351152301645904403697613233287231227125684710820209725157101726931323469678542580656697935045997268352998638215525166389437335543602135433229604645318478604952148193555853611059596230655" },
	{ -1, 34, "-1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000" },
};


static void expect(struct strbuf *sb, const char *want, const char *what, int i)
{
	ck_assert_msg(sb->buf && strcmp(sb->buf, want) == 0, "%s %d: got [%s], want [%s]", what, i,
		      sb->buf ? sb->buf : "(null)", want);
	sb_release(sb);
}

START_TEST(test_str)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(str_cases); i++) {
		repr_str(&sb, str_cases[i].cps, str_cases[i].n, str_cases[i].n);
		expect(&sb, str_cases[i].want, "str", (int)i);
	}
}
END_TEST

START_TEST(test_bytes)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(bytes_cases); i++) {
		const struct bytes_case *c = &bytes_cases[i];

		repr_bytes(&sb, (const uint8_t *)c->b, c->n, c->n);
		expect(&sb, c->want, "bytes", (int)i);
	}
}
END_TEST

START_TEST(test_float)
{
	struct strbuf sb = STRBUF_INIT;
	double d;

	for (size_t i = 0; i < ARRAY_SIZE(float_cases); i++) {
		memcpy(&d, &float_cases[i].bits, sizeof(d));
		repr_float(&sb, d);
		expect(&sb, float_cases[i].want, "float", (int)i);
	}
	repr_float(&sb, __builtin_nan(""));
	expect(&sb, "nan", "float", -1);
	repr_float(&sb, -__builtin_nan(""));
	expect(&sb, "nan", "float", -2);
	repr_float(&sb, -__builtin_inf());
	expect(&sb, "-inf", "float", -3);
}
END_TEST

START_TEST(test_int)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(int_cases); i++) {
		repr_int(&sb, int_cases[i].sign, int_digits[i], int_cases[i].nd);
		expect(&sb, int_cases[i].want, "int", (int)i);
	}
	repr_int_bits(&sb, 1, 2049);
	expect(&sb, "<int of 2049 bits>", "int", -1);
	repr_int_bits(&sb, -1, 100000);
	expect(&sb, "<negative int of 100000 bits>", "int", -2);
}
END_TEST

/* A value read in part says how long the whole is. */
START_TEST(test_cut)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t abc[] = { 'a', 'b', 'c' };

	repr_str(&sb, abc, 3, 1048576);
	expect(&sb, "'abc'\xe2\x80\xa6 (1048576 characters)", "cut", 0);
	repr_bytes(&sb, (const uint8_t *)"\0\xff", 2, 200ull << 20);
	expect(&sb, "b'\\x00\\xff'\xe2\x80\xa6 (200 MiB)", "cut", 1);
	repr_bytes(&sb, (const uint8_t *)"x", 1, 1536ull << 20);
	expect(&sb, "b'x'\xe2\x80\xa6 (1.5 GiB)", "cut", 2);
	repr_bytes(&sb, (const uint8_t *)"x", 1, 2000);
	expect(&sb, "b'x'\xe2\x80\xa6 (2000 bytes)", "cut", 3);
}
END_TEST

START_TEST(test_printable)
{
	ck_assert(uni_printable('a'));
	ck_assert(uni_printable(' '));
	ck_assert(!uni_printable('\n'));
	ck_assert(!uni_printable(0x7f));
	ck_assert(!uni_printable(0xa0));
	ck_assert(uni_printable(0xe9));
	ck_assert(!uni_printable(0x202e));
	ck_assert(!uni_printable(0xd800));
	ck_assert(uni_printable(0x1f600));
	ck_assert(!uni_printable(0x10ffff));
	ck_assert(!uni_printable(0x110000));
	ck_assert(uni_is_format(0x202e));
	ck_assert(uni_is_format(0x200d));
	ck_assert(uni_is_format(0x2029));
	ck_assert(!uni_is_format(0xe9));
	ck_assert_str_eq(uni_version, "17.0.0");
}
END_TEST

/* The one rule: no control, format character or invalid UTF-8 raw, in
 * text and in JSON, NULs included. */
START_TEST(test_escape)
{
	static const char hostile[] = "a\\b\x1b[31m\x07\xe2\x80\xae\xe2\x80\x8b\xc2\x85\xff;\"\0z\xf3\xa0\x80\x81\xc3\xa9";
	struct strbuf sb = STRBUF_INIT;

	sb_add_escaped(&sb, hostile, sizeof(hostile) - 1, ESC_TEXT);
	expect(&sb, "a\\\\b\\x1b[31m\\x07\\u202e\\u200b\\x85\\xff;\"\\x00z\\U000e0001\xc3\xa9", "text", 0);
	sb_add_escaped(&sb, hostile, sizeof(hostile) - 1, ESC_TEXT | ESC_SEMI);
	expect(&sb, "a\\\\b\\x1b[31m\\x07\\u202e\\u200b\\x85\\xff\\x3b\"\\x00z\\U000e0001\xc3\xa9", "semi", 0);
	sb_add_escaped(&sb, hostile, sizeof(hostile) - 1, ESC_TEXT | ESC_REPR);
	expect(&sb, "a\\b\\x1b[31m\\x07\\u202e\\u200b\\x85\\xff;\"\\x00z\\U000e0001\xc3\xa9", "repr", 0);
	sb_add_escaped(&sb, hostile, sizeof(hostile) - 1, ESC_JSON);
	expect(&sb, "a\\\\b\\u001b[31m\\u0007\\u202e\\u200b\\u0085\\ufffd;\\\"\\u0000z\\udb40\\udc01\xc3\xa9", "json", 0);
	sb_add_printable(&sb, "tab\there");
	expect(&sb, "tab\\x09here", "printable", 0);
	json_escape(&sb, "\n\r\t");
	expect(&sb, "\\n\\r\\t", "json_escape", 0);
	/* A repr as repr() writes it passes through untouched. */
	sb_add_escaped(&sb, "'\\x1b\\u202e'", 12, ESC_TEXT | ESC_REPR);
	expect(&sb, "'\\x1b\\u202e'", "repr", 1);
}
END_TEST

/* Thread.__repr__'s form: the name as %s writes it, the status, daemon,
 * the ident. */
START_TEST(test_thread_form)
{
	struct strbuf sb = STRBUF_INIT;

	repr_thread(&sb, &(struct repr_thread){ "Thread", "worker-1", false, false, false,
						false, 0 });
	expect(&sb, "<Thread(worker-1, initial)>", "thread", 0);
	repr_thread(&sb, &(struct repr_thread){ "_MainThread", "MainThread", true, false, false,
						true, 140234567890112ull });
	expect(&sb, "<_MainThread(MainThread, started 140234567890112)>", "thread", 1);
	repr_thread(&sb, &(struct repr_thread){ "Worker", "it's \xc3\xa9", true, true, true,
						true, 7 });
	expect(&sb, "<Worker(it's \xc3\xa9, stopped daemon 7)>", "thread", 2);
	repr_thread(&sb, &(struct repr_thread){ "Timer", "Thread-1", false, false, true,
						false, 0 });
	expect(&sb, "<Timer(Thread-1, initial daemon)>", "thread", 3);
}
END_TEST

/* A thread object as Thread.__init__ leaves it, of a class of Python code
 * (a heap type, 3.11+ with a managed dict, as CPython flags them).  names
 * and values: its __dict__; started: its _started Event's _flag. */
static uint64_t fake_thread(struct fakepy *fp, const char *cls, const char *const *names,
			    const uint64_t *values, size_t n, bool started, bool shared)
{
	static const char *const event_names[] = { "_flag" };
	uint64_t event_values[1] = { started ? fp->true_ : fp->false_ };
	uint64_t vals[16], obj, type;
	const char *keys[16];

	ck_assert_uint_lt(n, 15);
	memcpy(keys, names, n * sizeof(*names));
	memcpy(vals, values, n * sizeof(*values));
	keys[n] = "_started";
	vals[n] = fp_instance(fp, "Event", event_names, event_values, 1, shared);
	obj = fp_instance(fp, cls, keys, vals, n + 1, shared);
	type = fp_r64(fp, obj + fp->L->obj.ob_type);
	fp_w64(fp, type + fp->L->obj.tp_flags,
	       fp_r64(fp, type + fp->L->obj.tp_flags) | 1ul << 9 |
	       (fp->L->attrs != ATTRS_DICTOFFSET ? 1ul << 4 : 0));
	return obj;
}

static void expect_repr(struct pyctx *c, uint64_t obj, const char *want)
{
	char *type = NULL, *repr = NULL;

	ck_assert_int_eq(py_repr(c, obj, 64, &type, &repr), 0);
	ck_assert_msg(!strcmp(repr, want), "3.%d: got [%s], want [%s]", c->L->minor, repr, want);
	free(type);
	free(repr);
}

/* py_repr() of thread objects of every layout: started, stopped where the
 * __dict__ says so (3.7 to 3.12), a subclass, not initialised, not a
 * class of Python code, a _name that is not a str. */
START_TEST(test_thread_objects)
{
	static const char *const names[] = { "_name", "_daemonic", "_ident", "_initialized",
					     "_is_stopped" };
	const struct py_layout *L = layout_for_minor(_i);
	struct fakepy *fp = fp_new(L);
	uint64_t v[5], running, done, sub, uninit, native, badname;
	struct pyctx c = { NULL, L };
	bool stops = _i <= 12;	/* 3.13 keeps it in the C thread handle */
	struct mem *m;

	v[0] = fp_str(fp, "worker-1");
	v[1] = fp->true_;
	v[2] = fp_long(fp, 140234567890112);
	v[3] = fp->true_;
	v[4] = fp->false_;
	running = fake_thread(fp, "Thread", names, v, stops ? 5 : 4, true, true);
	v[4] = fp->true_;
	done = fake_thread(fp, "Thread", names, v, stops ? 5 : 4, true, false);
	v[0] = fp_str(fp, "w-\xc3\xa9");
	v[1] = fp->false_;
	v[2] = fp->none;
	v[4] = fp->false_;
	sub = fake_thread(fp, "Worker", names, v, 5, false, false);
	v[3] = fp->false_;
	uninit = fake_thread(fp, "Thread", names, v, 4, false, false);
	v[3] = fp->true_;
	native = fake_thread(fp, "Thread", names, v, 4, false, false);
	fp_w64(fp, fp_r64(fp, native + L->obj.ob_type) + L->obj.tp_flags, 0);
	v[0] = fp_long(fp, 5);
	badname = fake_thread(fp, "Thread", names, v, 4, false, false);
	c.m = m = fp_mem(fp);
	expect_repr(&c, running, "<Thread(worker-1, started daemon 140234567890112)>");
	expect_repr(&c, done, stops ? "<Thread(worker-1, stopped daemon 140234567890112)>"
				    : "<Thread(worker-1, started daemon 140234567890112)>");
	expect_repr(&c, sub, "<Worker(w-\xc3\xa9, initial)>");
	expect_repr(&c, uninit, "<Thread object>");
	expect_repr(&c, native, "<Thread object>");
	expect_repr(&c, badname, "<Thread object>");
	mem_close(m);
	fp_free(fp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("repr");
	TCase *tc = tcase_create("repr");

	tcase_add_test(tc, test_str);
	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_float);
	tcase_add_test(tc, test_int);
	tcase_add_test(tc, test_cut);
	tcase_add_test(tc, test_printable);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_thread_form);
	tcase_add_loop_test(tc, test_thread_objects, LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR + 1);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
