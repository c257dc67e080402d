#include "util/json.h"
#include "util/escape.h"

#include <string.h>

void json_init(struct json *j, struct strbuf *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
}

/* Called before every value and key: a comma unless first in its container. */
static void sep(struct json *j)
{
	if (j->depth <= 0)
		return;
	if (j->need_comma[j->depth])
		sb_putc(j->out, ',');
	j->need_comma[j->depth] = true;
}

static void open_container(struct json *j, char c)
{
	sep(j);
	sb_putc(j->out, c);
	if (j->depth < (int)ARRAY_SIZE(j->need_comma) - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct json *j, char c)
{
	sb_putc(j->out, c);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_begin(struct json *j) { open_container(j, '{'); }
void json_obj_end(struct json *j) { close_container(j, '}'); }
void json_arr_begin(struct json *j) { open_container(j, '['); }
void json_arr_end(struct json *j) { close_container(j, ']'); }

void json_key(struct json *j, const char *key)
{
	sep(j);
	sb_putc(j->out, '"');
	json_escape(j->out, key);
	sb_puts(j->out, "\":");
	/* The value that follows must not get a comma of its own. */
	j->need_comma[j->depth] = false;
}

/* After a key's value, the next key needs a comma again. */
static void value_done(struct json *j)
{
	j->need_comma[j->depth] = true;
}

void json_str(struct json *j, const char *s)
{
	if (!s) {
		json_null(j);
		return;
	}
	sep(j);
	sb_putc(j->out, '"');
	json_escape(j->out, s);
	sb_putc(j->out, '"');
	value_done(j);
}

void json_int(struct json *j, int64_t v)
{
	sep(j);
	sb_printf(j->out, "%lld", (long long)v);
	value_done(j);
}

void json_fixed(struct json *j, double v, int decimals)
{
	sep(j);
	sb_printf(j->out, "%.*f", decimals, v);
	value_done(j);
}

void json_uint(struct json *j, uint64_t v)
{
	sep(j);
	sb_printf(j->out, "%llu", (unsigned long long)v);
	value_done(j);
}

void json_bool(struct json *j, bool v)
{
	sep(j);
	sb_puts(j->out, v ? "true" : "false");
	value_done(j);
}

void json_null(struct json *j)
{
	sep(j);
	sb_puts(j->out, "null");
	value_done(j);
}

void json_escape(struct strbuf *sb, const char *s)
{
	sb_add_escaped(sb, s, strlen(s), ESC_JSON);
}

void json_quote(struct strbuf *sb, const char *s)
{
	sb_putc(sb, '"');
	json_escape(sb, s);
	sb_putc(sb, '"');
}

void json_kstr(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_kint(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_kuint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void json_kbool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}
