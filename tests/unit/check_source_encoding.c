/* PEP 263 coding declarations (src/util/source_encoding.c) on synthetic files.
 * Each case's outcome is what Python's tokenize.detect_encoding() and
 * linecache make of the same bytes (checked with Python 3.11 when the
 * cases were written): the text as UTF-8, or no text at all. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "util/source_encoding.h"
#include "util/util.h"
#include "suite.h"

struct coding_case {
	const char *in;
	const char *want;	/* NULL: no text (linecache shows no line) */
};

static const struct coding_case cases[] = {
	/* No declaration: UTF-8, kept as it is. */
	{ "x = 1  # caf\xc3\xa9\n", "x = 1  # caf\xc3\xa9\n" },
	/* latin-1 and its spellings, on line 1. */
	{ "# -*- coding: latin-1 -*-\nx  # caf\xe9\n", "# -*- coding: latin-1 -*-\nx  # caf\xc3\xa9\n" },
	{ "# coding=iso_8859_1\n\xa3\n", "# coding=iso_8859_1\n\xc2\xa3\n" },
	{ "#coding:Latin-1-unix\n\xff\n", "#coding:Latin-1-unix\n\xc3\xbf\n" },
	/* On line 2 after a comment or a blank line, not after code. */
	{ "#!/usr/bin/python\n# vim: set fileencoding=cp1252 :\n\x80\n",
	  "#!/usr/bin/python\n# vim: set fileencoding=cp1252 :\n\xe2\x82\xac\n" },
	{ "\n# coding: latin-1\n\xe9\n", "\n# coding: latin-1\n\xc3\xa9\n" },
	{ "x = 1\n# coding: latin-1\nz\n", "x = 1\n# coding: latin-1\nz\n" },
	/* Not on line 3. */
	{ "#\n#\n# coding: latin-1\n", "#\n#\n# coding: latin-1\n" },
	/* A name with '_' where iconv has '-'. */
	{ "# coding: euc_jp\n\xa4\xa2\n", "# coding: euc_jp\n\xe3\x81\x82\n" },
	/* A BOM is dropped; with a UTF-8 declaration too. */
	{ "\xef\xbb\xbfx = 1\n", "x = 1\n" },
	{ "\xef\xbb\xbf# coding: utf-8\n", "# coding: utf-8\n" },
	/* A BOM and another encoding, an unknown encoding, a byte the
	 * encoding does not have: errors, no text. */
	{ "\xef\xbb\xbf# coding: latin-1\n", NULL },
	{ "# coding: no-such-codec\nx\n", NULL },
	{ "# coding: ascii\n\xe9\n", NULL },
	/* "coding" without ':' or '=' is no declaration. */
	{ "# coding latin-1\n\xc3\xa9\n", "# coding latin-1\n\xc3\xa9\n" },
};

START_TEST(test_coding)
{
	const struct coding_case *c = &cases[_i];
	size_t len = strlen(c->in);
	char *text = xstrdup(c->in);
	int rc = source_to_utf8(&text, &len);

	if (!c->want) {
		ck_assert_msg(rc < 0, "case %d: %s: converted, want an error", _i, c->in);
	} else {
		ck_assert_msg(rc == 0, "case %d: %s: error", _i, c->in);
		ck_assert_uint_eq(len, strlen(c->want));
		ck_assert_str_eq(text, c->want);
	}
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coding");
	TCase *tc = tcase_create("coding");

	tcase_add_loop_test(tc, test_coding, 0, sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	return run_suite(s);
}
