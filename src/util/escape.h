/* The one rule for text that came from the target.
 *
 * Names, reprs, command lines: anything read from a target may hold bytes
 * that drive a terminal (C0 and C1 controls, escape sequences), text that
 * lies about itself (bidi overrides, zero-width characters), or invalid
 * UTF-8.  Every output writes such text through sb_add_escaped(), which
 * never writes a raw control character, a Unicode format character (Cf,
 * and the line and paragraph separators) or invalid UTF-8:
 *
 *   ESC_TEXT   terminal text and text-like files: \xNN for a byte that is
 *              not UTF-8 and for C0, DEL and C1 controls, \uXXXX and
 *              \UXXXXXXXX for format characters, a backslash doubled (so
 *              "\x1b" written by the target stays told apart from ESC).
 *   ESC_JSON   a JSON string body: JSON's own escapes, \u00XX for controls,
 *              \uXXXX for format characters, U+FFFD for invalid UTF-8.
 *
 * Flags for ESC_TEXT:
 *   ESC_REPR   s is already a Python repr (its backslashes are its own
 *              escapes): backslashes are not doubled.
 *   ESC_SEMI   ';' also as \x3b (collapsed stacks split at ';').
 */
#ifndef PYSTROBE_ESCAPE_H
#define PYSTROBE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

enum {
	ESC_TEXT = 0,
	ESC_JSON = 1 << 0,
	ESC_REPR = 1 << 1,
	ESC_SEMI = 1 << 2,
};

/* Would cp be written escaped (in either style)? */
bool esc_unsafe(uint32_t cp);

/* Append the first len bytes of s (NULs included) to sb, escaped. */
void sb_add_escaped(struct strbuf *sb, const char *s, size_t len, unsigned flags);

#endif
