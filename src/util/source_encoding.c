#include "util/source_encoding.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Longest encoding name we take (Python's codec names are short). */
#define CODING_NAME_MAX 64

/* One line, from s up to its newline (not included). */
static size_t line_len(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);

	return nl ? (size_t)(nl - s) : n;
}

/* tokenize's blank_re: spaces, then '#', a newline or nothing. */
static bool blank_or_comment(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f'))
		i++;
	return i == n || s[i] == '#' || s[i] == '\r' || s[i] == '\n';
}

/* tokenize's cookie_re, ^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+): the name
 * into name; false when the line has none. */
static bool find_cookie(const char *s, size_t n, char *name)
{
	size_t i = 0, k = 0;
	const char *p;

	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f'))
		i++;
	if (i == n || s[i] != '#')
		return false;
	/* The first "coding" followed by ':' or '=' (.*? is lazy). */
	for (p = s + i; (p = memmem(p, n - (size_t)(p - s), "coding", 6)); p += 6) {
		size_t j = (size_t)(p - s) + 6;

		if (j >= n || (s[j] != ':' && s[j] != '='))
			continue;
		for (j++; j < n && (s[j] == ' ' || s[j] == '\t'); j++)
			;
		while (j < n && k < CODING_NAME_MAX - 1 &&
		       (isalnum((unsigned char)s[j]) || s[j] == '-' || s[j] == '_' || s[j] == '.'))
			name[k++] = s[j++];
		name[k] = 0;
		return k > 0;
	}
	return false;
}

/* tokenize's _get_normal_name. */
static void normal_name(char *name)
{
	char low[13];
	size_t i;

	for (i = 0; i < 12 && name[i]; i++)
		low[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
	low[i] = 0;
	if (!strcmp(low, "utf-8") || !strncmp(low, "utf-8-", 6)) {
		strcpy(name, "UTF-8");
		return;
	}
	if (!strcmp(low, "latin-1") || !strcmp(low, "iso-8859-1") || !strcmp(low, "iso-latin-1") ||
	    !strncmp(low, "latin-1-", 8) || !strncmp(low, "iso-8859-1-", 11) ||
	    !strncmp(low, "iso-latin-1-", 12)) {
		strcpy(name, "ISO-8859-1");
	}
}

/* A converter from name, as Python spells it or with '-' for '_' (Python
 * says euc_jp, iconv EUC-JP). */
static iconv_t open_from(const char *name)
{
	char dashed[CODING_NAME_MAX];
	iconv_t cd = iconv_open("UTF-8", name);

	if (cd != (iconv_t)-1)
		return cd;
	for (size_t i = 0; i < sizeof(dashed); i++)
		if (!(dashed[i] = name[i] == '_' ? '-' : name[i]))
			break;
	return iconv_open("UTF-8", dashed);
}

/* The declared encoding into name ("" for none). */
static void declared(const char *s, size_t n, char *name)
{
	size_t first = line_len(s, n);

	name[0] = 0;
	if (find_cookie(s, first, name) || !blank_or_comment(s, first) || first >= n)
		return;
	s += first + 1;
	n -= first + 1;
	find_cookie(s, line_len(s, n), name);
}

static int convert(const char *from, char **text, size_t *len)
{
	iconv_t cd = open_from(from);
	size_t cap = *len * 4 + 16, left_in = *len, left_out = cap - 1;
	char *out, *in = *text, *o;

	if (cd == (iconv_t)-1)
		return -1;
	out = o = xmalloc(cap);
	if (iconv(cd, &in, &left_in, &o, &left_out) == (size_t)-1) {
		iconv_close(cd);
		free(out);
		return -1;
	}
	iconv_close(cd);
	*o = 0;
	free(*text);
	*text = out;
	*len = (size_t)(o - out);
	return 0;
}

int source_to_utf8(char **text, size_t *len)
{
	char name[CODING_NAME_MAX];
	bool bom = *len >= 3 && !memcmp(*text, "\xef\xbb\xbf", 3);

	if (bom) {
		memmove(*text, *text + 3, *len - 3 + 1);
		*len -= 3;
	}
	declared(*text, *len, name);
	if (!name[0])
		return 0;
	normal_name(name);
	if (!strcmp(name, "UTF-8"))
		return 0;
	if (bom)
		return -1;	/* a BOM says UTF-8: anything else is an error */
	return convert(name, text, len);
}
