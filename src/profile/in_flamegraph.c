/* Reading pystrobe's flame graph back: the folded stacks it carries in
 * its SVG_STACKS_TAG element (out_flamegraph.c), with the rate, duration
 * and start its attributes give. */
#include "profile/profile_read_int.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The character the entity at s stands for, and the entity's length; 0
 * for none that out_flamegraph.c writes.  (An XML tool that rewrote the
 * file may have left a quote bare, which is fine.) */
static size_t xml_entity(const char *s, size_t len, char *c)
{
	static const struct { const char *ent; char c; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
		{ "&#39;", '\'' }, { "&apos;", '\'' },
	};

	for (size_t k = 0; k < ARRAY_SIZE(ents); k++) {
		size_t n = strlen(ents[k].ent);

		if (n <= len && !memcmp(s, ents[k].ent, n)) {
			*c = ents[k].c;
			return n;
		}
	}
	return 0;
}

/* The XML text of the stacks element, entities undone.  out_flamegraph.c
 * writes no markup inside it. */
static int xml_text(struct reader *r, const char *s, size_t len, struct strbuf *out)
{
	for (size_t i = 0; i < len; i++) {
		size_t n;
		char c;

		if (s[i] == '<')
			return reader_fail(r, "markup inside pystrobe's stack data: not as "
					   "pystrobe writes it");
		if (s[i] != '&') {
			sb_putc(out, s[i]);
			continue;
		}
		n = xml_entity(s + i, len - i, &c);
		if (!n)
			return reader_fail(r, "an XML entity in pystrobe's stack data that "
					   "pystrobe does not write");
		sb_putc(out, c);
		i += n - 1;
	}
	return 0;
}

/* The value [*v, *ve) of attribute name="..." in the tag [s, e). */
static bool attr_value(const char *s, const char *e, const char *name, const char **v,
		       const char **ve)
{
	size_t n = strlen(name);
	const char *a;

	for (a = s; (a = memmem(a, e - a, name, n)); a += n)
		if (a > s && a[-1] == ' ' && e - a > (ptrdiff_t)n + 1 && !memcmp(a + n, "=\"", 2))
			break;
	if (!a)
		return false;
	*v = a + n + 2;
	*ve = memchr(*v, '"', e - *v);
	return *ve != NULL;
}

static bool attr_u64(const char *s, const char *e, const char *name, uint64_t *out)
{
	const char *v, *ve;

	return attr_value(s, e, name, &v, &ve) && reader_parse_count(v, ve, out) == 0;
}

/* What the stacks element's attributes say about the recording. */
static void svg_metadata(struct reader *r, const char *s, const char *e)
{
	struct profile *p = r->p;
	const char *v, *ve;
	char buf[32];
	double hz;
	uint64_t wall = 0;

	if (attr_value(s, e, "data-rate-hz", &v, &ve) && ve - v < (ptrdiff_t)sizeof(buf)) {
		memcpy(buf, v, ve - v);
		buf[ve - v] = 0;
		if (parse_number(buf, 1e-3, 1e9, &hz) == 0) {
			p->rate_hz = hz;
			p->interval_ns = (uint64_t)(1e9 / hz);
		}
	}
	attr_u64(s, e, "data-duration-ns", &p->duration_ns);
	attr_u64(s, e, "data-start-unix-ns", &p->start_unix_ns);
	p->wall = attr_u64(s, e, "data-wall", &wall) && wall == 1;
}

static size_t count_lines(const char *s, const char *e)
{
	size_t n = 0;

	while ((s = memchr(s, '\n', e - s))) {
		n++;
		s++;
	}
	return n;
}

/* The stacks a flame graph of pystrobe's carries (out_flamegraph.c). */
int read_svg(struct reader *r, const char *data, size_t len)
{
	const char *end = data + len, *tag, *body, *stop;
	struct strbuf text = STRBUF_INIT;
	int ret;

	tag = memmem(data, len, SVG_STACKS_TAG, strlen(SVG_STACKS_TAG));
	if (!tag)
		return reader_fail(r, "an SVG or XML file without pystrobe's stack data "
				   "(another tool's, pystrobe diff's or an older pystrobe's "
				   "flame graph); " PROFILE_READ_FORMATS);
	body = memchr(tag, '>', end - tag);
	stop = body ? memmem(body, end - body, "</metadata>", 11) : NULL;
	if (!stop)
		return reader_fail(r, "pystrobe's stack data is cut short (no </metadata>)");
	svg_metadata(r, tag, body++);
	ret = xml_text(r, body, stop - body, &text);
	if (!ret)
		ret = read_folded(r, text.buf ? text.buf : "", text.len, count_lines(data, body));
	sb_release(&text);
	return ret;
}
