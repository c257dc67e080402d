#include "util/escape.h"
#include "util/unicode.h"

bool esc_unsafe(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return true;
	/* The two non-characters XML refuses; invisible anyway. */
	if (cp == 0xfffe || cp == 0xffff)
		return true;
	return cp >= 0xad && uni_is_format(cp);
}

static void text_cp(struct strbuf *sb, uint32_t cp)
{
	if (cp <= 0xff)
		sb_printf(sb, "\\x%02x", cp);
	else if (cp <= 0xffff)
		sb_printf(sb, "\\u%04x", cp);
	else
		sb_printf(sb, "\\U%08x", cp);
}

static void json_cp(struct strbuf *sb, uint32_t cp)
{
	switch (cp) {
	case '\n': sb_puts(sb, "\\n"); return;
	case '\r': sb_puts(sb, "\\r"); return;
	case '\t': sb_puts(sb, "\\t"); return;
	}
	if (cp <= 0xffff) {
		sb_printf(sb, "\\u%04x", cp);
		return;
	}
	/* Past the BMP, JSON spells a character as its surrogate pair. */
	cp -= 0x10000;
	sb_printf(sb, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
}

/* One ASCII character that is safe as such: quote or backslash need
 * their escape in some styles. */
static void put_ascii(struct strbuf *sb, char c, unsigned flags)
{
	if (flags & ESC_JSON) {
		if (c == '"' || c == '\\')
			sb_putc(sb, '\\');
	} else if (c == '\\' && !(flags & ESC_REPR)) {
		sb_putc(sb, '\\');
	} else if (c == ';' && (flags & ESC_SEMI)) {
		sb_puts(sb, "\\x3b");
		return;
	}
	sb_putc(sb, c);
}

/* utf8_char() stops at a NUL: a NUL byte is a character of its own here. */
static int next_char(const unsigned char *s, size_t left, uint32_t *cp)
{
	char buf[5] = { 0 };
	size_t n = left < 4 ? left : 4;

	if (!*s) {
		*cp = 0;
		return 1;
	}
	__builtin_memcpy(buf, s, n);
	return utf8_char(buf, cp);
}

void sb_add_escaped(struct strbuf *sb, const char *str, size_t len, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		uint32_t cp = 0;
		int n = next_char(s + i, len - i, &cp);

		if (n == 0) {
			if (flags & ESC_JSON)
				sb_puts(sb, "\\ufffd");
			else
				sb_printf(sb, "\\x%02x", s[i]);
			i++;
			continue;
		}
		if (esc_unsafe(cp)) {
			if (flags & ESC_JSON)
				json_cp(sb, cp);
			else
				text_cp(sb, cp);
		} else if (n == 1) {
			put_ascii(sb, (char)cp, flags);
		} else {
			sb_add(sb, (const char *)s + i, n);
		}
		i += n;
	}
}
