/* A small JSON writer.  Strings from the target may be anything: they are
 * written as valid JSON by util/escape.h's rule (invalid UTF-8 as U+FFFD,
 * controls and format characters as \uXXXX). */
#ifndef PYSTROBE_JSON_H
#define PYSTROBE_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "util/util.h"

struct json {
	struct strbuf *out;
	int depth;
	bool need_comma[64];
};

void json_init(struct json *j, struct strbuf *out);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
/* A key inside an object; the next value call writes its value. */
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);	/* NULL writes null */
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
void json_bool(struct json *j, bool v);
/* A number with this many decimals (seconds, shares): v must be finite. */
void json_fixed(struct json *j, double v, int decimals);
void json_null(struct json *j);
/* A key and its value in one call. */
void json_kstr(struct json *j, const char *key, const char *s);
void json_kint(struct json *j, const char *key, int64_t v);
void json_kuint(struct json *j, const char *key, uint64_t v);
void json_kbool(struct json *j, const char *key, bool v);

/* Escape s as a JSON string body (no quotes) onto sb: sb_add_escaped(ESC_JSON). */
void json_escape(struct strbuf *sb, const char *s);
/* The same between double quotes: a whole JSON string, for writers that
 * build their JSON by hand (the Chrome traces). */
void json_quote(struct strbuf *sb, const char *s);

#endif
