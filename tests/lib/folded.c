/* Folded stack files for the tests; see folded.h. */
#include "folded.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/util.h"

static bool number(const char *s, const char *e, uint64_t *v)
{
	char *end;

	if (s == e || *s < '0' || *s > '9')
		return false;
	*v = strtoull(s, &end, 10);
	return end == e;
}

int folded_parse(const char *text, struct folded *f)
{
	size_t cap = 0;
	int bad = 0;

	memset(f, 0, sizeof(*f));
	while (*text) {
		const char *nl = strchr(text, '\n'), *e = nl ? nl : text + strlen(text);
		const char *sp = e, *sp2;
		uint64_t c = 0, c2 = 0;

		while (sp > text && sp[-1] != ' ')
			sp--;
		if (sp == text || !number(sp, e, &c)) {
			bad += e > text;
			goto next;
		}
		/* "STACK BEFORE AFTER": a second number before the last. */
		sp2 = sp - 1;
		while (sp2 > text && sp2[-1] != ' ')
			sp2--;
		if (sp2 > text && number(sp2, sp - 1, &c2)) {
			uint64_t t = c2;

			c2 = c;
			c = t;
			sp = sp2;
		}
		if (f->n == cap) {
			cap = cap ? cap * 2 : 64;
			f->stacks = xrealloc(f->stacks, cap * sizeof(*f->stacks));
			f->counts = xrealloc(f->counts, cap * sizeof(*f->counts));
			f->counts2 = xrealloc(f->counts2, cap * sizeof(*f->counts2));
		}
		f->stacks[f->n] = xasprintf("%.*s", (int)(sp - 1 - text), text);
		f->counts[f->n] = c;
		f->counts2[f->n++] = c2;
		f->total += c;
		f->total2 += c2;
next:
		text = nl ? nl + 1 : e;
	}
	return bad;
}

void folded_free(struct folded *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->stacks[i]);
	free(f->stacks);
	free(f->counts);
	free(f->counts2);
	memset(f, 0, sizeof(*f));
}

void folded_path(const struct folded *f, const char *path, uint64_t *self, uint64_t *total)
{
	size_t n = strlen(path);

	*self = *total = 0;
	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->stacks[i];

		if (!n || (!strncmp(s, path, n) && (s[n] == ';' || !s[n])))
			*total += f->counts[i];
		if (n && !strcmp(s, path))
			*self += f->counts[i];
	}
}

/* Whether frame label is one of the frames of stack s. */
static bool has_frame(const char *s, const char *label, bool leaf_only)
{
	size_t n = strlen(label);

	for (const char *p = s; p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
		if (strncmp(p, label, n) || (p[n] && p[n] != ';'))
			continue;
		if (!leaf_only || !p[n])
			return true;
	}
	return false;
}

void folded_frame(const struct folded *f, const char *label, uint64_t *self, uint64_t *total)
{
	*self = *total = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (has_frame(f->stacks[i], label, true))
			*self += f->counts[i];
		if (has_frame(f->stacks[i], label, false))
			*total += f->counts[i];
	}
}

uint64_t folded_count(const struct folded *f, const char *stack)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->stacks[i], stack))
			n += f->counts[i];
	return n;
}

char *test_tmpdir(const char *prefix)
{
	const char *dir = getenv("TMPDIR");
	char *path = xasprintf("%s/%s.XXXXXX", dir && *dir ? dir : "/tmp", prefix);

	ck_assert_msg(mkdtemp(path), "mkdtemp %s: %s", path, strerror(errno));
	return path;
}

char *test_file(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

void test_rmdir(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);

	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(cmd);
}

char *test_slurp(const char *path)
{
	char *s = read_file(path, NULL);

	ck_assert_msg(s, "%s: %s", path, strerror(errno));
	return s;
}

char *test_gunzip(const char *gz, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	char *raw = xmalloc(cap);
	z_stream z;

	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)raw;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	inflateEnd(&z);
	return raw;
}
