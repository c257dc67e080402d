/* Reading folded stacks, `frame;frame;...;leaf COUNT` per line, as
 * out_collapsed.c, flamegraph.pl's stackcollapse scripts, perf and inferno
 * write them; see profile_read.h. */
#include "profile/profile_read_int.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reader_parse_count(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;

	if (s == e)
		return -1;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* One frame's text, without the blanks around it: tools differ in how
 * they space "a; b" and a name never starts or ends with one. */
static void folded_frame(struct reader *r, const char *s, const char *e)
{
	struct pframe f = { PF_PYTHON, NULL, NULL, -1, -1 };

	while (s < e && is_blank(*s))
		s++;
	while (e > s && is_blank(e[-1]))
		e--;
	if (s == e)
		return;
	f.name = reader_unescape(s, e - s);
	reader_push_frame(r, &f);
	free(f.name);
}

/* "frame;frame;...;leaf COUNT": the count is the last word, the frames
 * are everything before it split at ';' (names may hold spaces). */
static int folded_line(struct reader *r, const char *s, const char *e, size_t lineno)
{
	const char *c;
	uint64_t count;
	char where[40];

	while (e > s && is_blank(e[-1]))
		e--;
	while (s < e && is_blank(*s))
		s++;
	if (s == e)
		return 0;
	snprintf(where, sizeof(where), "line %zu", lineno);
	for (c = e; c > s && !is_blank(c[-1]); c--)
		;
	if (c == s)
		return reader_fail(r, "%s: no sample count after the stack", where);
	if (reader_parse_count(c, e, &count) < 0)
		return reader_fail(r, "%s: '%.*s' is not a sample count (a whole number)", where,
				   (int)(e - c > 40 ? 40 : e - c), c);
	for (e = c; s < e;) {
		const char *semi = memchr(s, ';', e - s);

		folded_frame(r, s, semi ? semi : e);
		s = semi ? semi + 1 : e;
	}
	return reader_end_stack(r, count, where);
}

/* Folded stacks; line numbers in messages count from first_line + 1 (the
 * text may be part of a bigger file). */
int read_folded(struct reader *r, const char *data, size_t len, size_t first_line)
{
	const char *s = data, *end = data + len;
	size_t lineno = first_line;

	if (memchr(data, 0, len))
		return reader_fail(r, "binary data that is neither folded stacks nor pprof");
	while (s < end) {
		const char *nl = memchr(s, '\n', end - s);

		if (folded_line(r, s, nl ? nl : end, ++lineno) < 0)
			return -1;
		s = nl ? nl + 1 : end;
	}
	return 0;
}
