/* What pystrobe knows about Unicode: which code points Python's
 * str.isprintable() calls printable (for exact reprs), and which are
 * format characters that must never reach an output raw.  The tables are
 * generated from one Python's unicodedata by src/util/gen_unicode.py;
 * uni_version says which Unicode that was. */
#ifndef PYSTROBE_UNICODE_H
#define PYSTROBE_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uni_range {
	uint32_t first, last;	/* inclusive */
};

extern const char uni_version[];
extern const struct uni_range uni_nonprintable[];
extern const size_t uni_nonprintable_n;
extern const struct uni_range uni_format[];
extern const size_t uni_format_n;

/* str.isprintable() of the one character cp (false past U+10FFFF). */
bool uni_printable(uint32_t cp);

/* Cf, Zl or Zp: bidi controls, zero-width characters, line separators. */
bool uni_is_format(uint32_t cp);

#endif
