/* The line-table decoders against every offset of thousands of real code
 * objects: tests/gen_linetable.py writes, on each interpreter on this
 * machine, what the interpreter itself says (co_lines() or
 * dis.findlinestarts()), and each offset is decoded here and compared.
 * The hand-made tables and the fuzz are unit/check_linetable.c.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "interp/linetable.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* ---- every offset of real code objects -------------------------------- */

struct fixture_result {
	char version[32];
	char format[16];
	long codes;
	long declared;		/* from the "end" record; -1 if none */
	long offsets;
	long mismatches;
	char first_mismatch[512];
	char error[512];	/* the fixture could not be read */
};

static enum lt_format format_for(int minor)
{
	if (minor <= 9)
		return LT_LNOTAB;
	if (minor == 10)
		return LT_LINETABLE;
	return LT_LOCATIONS;
}

static const char *format_name(enum lt_format fmt)
{
	switch (fmt) {
	case LT_LNOTAB:
		return "lnotab";
	case LT_LINETABLE:
		return "linetable";
	case LT_LOCATIONS:
		return "locations";
	}
	return "?";
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "-" or an even run of lower-case hex digits; returns the byte count. */
static long parse_hex(const char *s, uint8_t **out)
{
	size_t n = strlen(s);
	uint8_t *buf;

	*out = NULL;
	if (!strcmp(s, "-"))
		return 0;
	if (n % 2)
		return -1;
	buf = malloc(n / 2 + 1);
	if (!buf)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return -1;
		}
		buf[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*out = buf;
	return (long)(n / 2);
}

/* "lines RUN..." into exactly n expected lines; false if the count differs. */
static bool parse_lines(const char *s, int *want, long n)
{
	long have = 0;
	char *end;

	if (strncmp(s, "lines", 5))
		return false;
	s += 5;
	for (;;) {
		long line, count = 1;

		while (*s == ' ')
			s++;
		if (!*s || *s == '\n')
			break;
		errno = 0;
		line = strtol(s, &end, 10);
		if (end == s || errno || line < -1 || line > INT_MAX)
			return false;
		s = end;
		if (*s == '*') {
			count = strtol(s + 1, &end, 10);
			if (end == s + 1 || count < 1)
				return false;
			s = end;
		}
		if (count > n - have)
			return false;
		while (count--)
			want[have++] = (int)line;
	}
	return have == n;
}

static void note_mismatch(const struct test_interp *ti, struct fixture_result *r,
			  const char *name, int first, uint32_t off, int got, int want)
{
	char msg[sizeof(r->first_mismatch)];

	snprintf(msg, sizeof(msg), "%s: %s (firstlineno %d) offset %u: got line %d, want %d",
		 ti->label, name, first, off, got, want);
	if (!r->mismatches++)
		memcpy(r->first_mismatch, msg, sizeof(msg));
	if (r->mismatches <= 20)
		fprintf(stderr, "linetable: MISMATCH %s\n", msg);
}

/* One "code" record and the "lines" record after it. */
static bool check_code(const struct test_interp *ti, struct fixture_result *r,
		       enum lt_format fmt, char *rec, FILE *f, char **buf, size_t *cap)
{
	char name[256], hex_field[16];
	int first;
	long codelen, tlen;
	uint8_t *table;
	int *want;
	bool ok;

	if (sscanf(rec, "code %255s %d %ld %15s", name, &first, &codelen,
		   hex_field) != 4 || codelen < 0 || codelen % 2) {
		snprintf(r->error, sizeof(r->error), "bad code record: %.200s", rec);
		return false;
	}
	/* The table field may be long: take it in place, not through %s. */
	rec[strcspn(rec, "\n")] = 0;
	tlen = parse_hex(strrchr(rec, ' ') + 1, &table);
	if (tlen < 0) {
		snprintf(r->error, sizeof(r->error), "bad table for %s", name);
		return false;
	}
	want = malloc((codelen / 2 + 1) * sizeof(*want));
	ok = want && getline(buf, cap, f) > 0 && parse_lines(*buf, want, codelen / 2);
	if (!ok) {
		snprintf(r->error, sizeof(r->error), "bad lines record for %s", name);
	} else {
		struct lt_ranges rs;

		/* Both the scan and the decoded ranges the sampler uses. */
		ck_assert_int_eq(linetable_ranges(fmt, table, (size_t)tlen, first, &rs), 0);
		for (long i = 0; i < codelen / 2; i++) {
			uint32_t off = (uint32_t)(2 * i);
			int got = linetable_line(fmt, table, (size_t)tlen, first, off);
			int got_r = linetable_ranges_line(&rs, off);

			if (got != want[i])
				note_mismatch(ti, r, name, first, off, got, want[i]);
			else if (got_r != want[i])
				note_mismatch(ti, r, name, first, off, got_r, want[i]);
		}
		linetable_ranges_free(&rs);
		r->codes++;
		r->offsets += codelen / 2;
	}
	free(want);
	free(table);
	return ok;
}

static void check_fixture(const struct test_interp *ti, const char *path,
			  struct fixture_result *r)
{
	enum lt_format fmt = format_for(ti->minor);
	char *buf = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	r->declared = -1;
	if (!f) {
		snprintf(r->error, sizeof(r->error), "cannot open %.300s: %s", path, strerror(errno));
		return;
	}
	if (getline(&buf, &cap, f) <= 0 ||
	    sscanf(buf, "pystrobe-linetable 1 %31s %15s", r->version, r->format) != 2) {
		snprintf(r->error, sizeof(r->error), "%.300s: no fixture header", path);
		goto out;
	}
	/* The label's minor picks the format: make sure the interpreter agrees. */
	if (strcmp(r->format, format_name(fmt))) {
		snprintf(r->error, sizeof(r->error), "interpreter %s writes %s, label says 3.%d (%s)",
			 r->version, r->format, ti->minor, format_name(fmt));
		goto out;
	}
	while (getline(&buf, &cap, f) > 0) {
		if (!strncmp(buf, "end ", 4)) {
			r->declared = strtol(buf + 4, NULL, 10);
			break;
		}
		if (!check_code(ti, r, fmt, buf, f, &buf, &cap))
			break;
	}
out:
	free(buf);
	fclose(f);
}

START_TEST(test_interp_fixture)
{
	const struct test_interp *ti = &interps[_i];
	char script[PATH_MAX], host[PATH_MAX], inside[PATH_MAX];
	char fhost[PATH_MAX + 32], finside[PATH_MAX + 32];
	struct fixture_result r;
	int status = 0;
	pid_t pid;

	memset(&r, 0, sizeof(r));
	test_interp_script(ti, "tests/gen_linetable.py", script, sizeof(script));
	test_interp_shared_dir(ti, host, inside, sizeof(host));
	ck_assert_msg(host[0], "%s: could not make a shared directory", ti->label);
	snprintf(fhost, sizeof(fhost), "%s/linetable.txt", host);
	snprintf(finside, sizeof(finside), "%s/linetable.txt", inside);

	char *argv[] = { "python", script, finside, NULL };
	pid = test_interp_spawn(ti, argv, 1);
	ck_assert_msg(pid > 0, "%s: fork failed", ti->label);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		check_fixture(ti, fhost, &r);
	unlink(fhost);
	rmdir(host);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: gen_linetable.py failed (wait status %#x)", ti->label, status);
	printf("linetable: %s: %ld code objects, %ld offsets, %ld mismatches\n",
	       ti->label, r.codes, r.offsets, r.mismatches);
	fflush(stdout);
	ck_assert_msg(!r.error[0], "%s: %s", ti->label, r.error);
	ck_assert_msg(r.declared == r.codes, "%s: fixture has %ld code objects, read %ld",
		      ti->label, r.declared, r.codes);
	/* Thousands are expected; a few would mean the modules went missing. */
	ck_assert_msg(r.codes >= 1000, "%s: only %ld code objects", ti->label, r.codes);
	ck_assert_msg(r.mismatches == 0, "%s: %ld of %ld offsets wrong, first: %s",
		      ti->label, r.mismatches, r.offsets, r.first_mismatch);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("linetable_real");
	TCase *tc;

	ninterps = test_interps(&interps);

	tc = tcase_create("interpreters");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_interp_fixture, 0, ninterps);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
