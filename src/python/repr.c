#include "python/repr.h"
#include "util/unicode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The quote repr() picks: ' unless the text has ' and no ". */
static char pick_quote(bool squote, bool dquote)
{
	return squote && !dquote ? '"' : '\'';
}

/* Escapes every repr shares, for str and bytes alike: the quote and the
 * backslash, \t \n \r, and the rest of ASCII's controls as \xNN.  Returns
 * false for a character it does not handle (printable ASCII, or more). */
static bool ascii_escape(struct strbuf *sb, uint32_t ch, char quote)
{
	if (ch == (uint32_t)quote || ch == '\\') {
		sb_putc(sb, '\\');
		sb_putc(sb, (char)ch);
	} else if (ch == '\t') {
		sb_puts(sb, "\\t");
	} else if (ch == '\n') {
		sb_puts(sb, "\\n");
	} else if (ch == '\r') {
		sb_puts(sb, "\\r");
	} else if (ch < 0x20 || ch == 0x7f) {
		sb_printf(sb, "\\x%02x", ch);
	} else {
		return false;
	}
	return true;
}

void repr_cut_mark(struct strbuf *sb, uint64_t whole, const char *unit)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)whole;
	int u = -1;

	if (strcmp(unit, "bytes") != 0 || whole < (1u << 20)) {
		sb_printf(sb, "\xe2\x80\xa6 (%llu %s)", (unsigned long long)whole, unit);
		return;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (v == floor(v))
		sb_printf(sb, "\xe2\x80\xa6 (%.0f %s)", v, units[u]);
	else
		sb_printf(sb, "\xe2\x80\xa6 (%.1f %s)", v, units[u]);
}

/* unicode_repr() in Objects/unicodeobject.c. */
void repr_str(struct strbuf *sb, const uint32_t *cps, size_t n, uint64_t whole)
{
	bool squote = false, dquote = false;
	char quote;

	for (size_t i = 0; i < n; i++) {
		squote |= cps[i] == '\'';
		dquote |= cps[i] == '"';
	}
	quote = pick_quote(squote, dquote);
	sb_putc(sb, quote);
	for (size_t i = 0; i < n; i++) {
		uint32_t ch = cps[i];

		if (ascii_escape(sb, ch, quote))
			continue;
		if (ch < 0x7f || uni_printable(ch))
			sb_add_utf8(sb, ch);
		else if (ch <= 0xff)
			sb_printf(sb, "\\x%02x", ch);
		else if (ch <= 0xffff)
			sb_printf(sb, "\\u%04x", ch);
		else
			sb_printf(sb, "\\U%08x", ch);
	}
	sb_putc(sb, quote);
	if (n < whole)
		repr_cut_mark(sb, whole, "characters");
}

/* bytes_repr() in Objects/bytesobject.c. */
void repr_bytes(struct strbuf *sb, const uint8_t *b, size_t n, uint64_t whole)
{
	bool squote = memchr(b, '\'', n) != NULL, dquote = memchr(b, '"', n) != NULL;
	char quote = pick_quote(squote, dquote);

	sb_putc(sb, 'b');
	sb_putc(sb, quote);
	for (size_t i = 0; i < n; i++) {
		if (ascii_escape(sb, b[i], quote))
			continue;
		if (b[i] >= 0x80)
			sb_printf(sb, "\\x%02x", b[i]);
		else
			sb_putc(sb, (char)b[i]);
	}
	sb_putc(sb, quote);
	if (n < whole)
		repr_cut_mark(sb, whole, "bytes");
}

/* float_repr(): the shortest digits that read back as the same double
 * (what %.17g is not), in fixed notation when the decimal exponent is
 * in [-4, 16), else as 1e+16 / 1.5e-05 (at least two exponent digits). */
void repr_float(struct strbuf *sb, double d)
{
	char buf[64], mant[32], *e;
	int prec, exp;

	if (isnan(d)) {
		sb_puts(sb, "nan");
		return;
	}
	if (isinf(d)) {
		sb_puts(sb, d < 0 ? "-inf" : "inf");
		return;
	}
	/* %.Ne is correctly rounded: if any N-digit decimal reads back as
	 * d, the nearest one does, and that is the one printed. */
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
	e = strchr(buf, 'e');
	exp = atoi(e + 1);
	if (exp < -4 || exp >= 16) {
		snprintf(mant, sizeof(mant), "%.*s", (int)(e - buf), buf);
		sb_printf(sb, "%se%c%02d", mant, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, d);
	sb_puts(sb, buf);
	if (!strchr(buf, '.'))
		sb_puts(sb, ".0");
}

void repr_int_bits(struct strbuf *sb, int sign, uint64_t bits)
{
	sb_printf(sb, "<%sint of %llu bits>", sign < 0 ? "negative " : "",
		  (unsigned long long)bits);
}

/* Long division of the 30-bit digits by 10^9, most significant first:
 * the remainder is the next nine decimal digits from the right. */
static uint32_t divmod_1e9(uint32_t *d, size_t *nd)
{
	uint64_t rem = 0;

	for (size_t i = *nd; i-- > 0;) {
		uint64_t cur = rem << 30 | d[i];

		d[i] = (uint32_t)(cur / 1000000000u);
		rem = cur % 1000000000u;
	}
	while (*nd && !d[*nd - 1])
		(*nd)--;
	return (uint32_t)rem;
}

void repr_int(struct strbuf *sb, int sign, const uint32_t *digits, size_t nd)
{
	uint32_t d[REPR_INT_MAX_DIGITS], chunks[REPR_INT_MAX_DIGITS * 30 / 29 + 2];
	size_t nc = 0;

	if (nd > REPR_INT_MAX_DIGITS)
		nd = REPR_INT_MAX_DIGITS;
	for (size_t i = 0; i < nd; i++)
		d[i] = digits[i] & 0x3fffffff;
	while (nd && !d[nd - 1])
		nd--;
	if (!nd || !sign) {
		sb_putc(sb, '0');
		return;
	}
	/* Each 30-bit digit gives at most 9.03 decimal digits: the chunks of
	 * nine can outnumber the digits by one in 29, plus one. */
	while (nd && nc < ARRAY_SIZE(chunks))
		chunks[nc++] = divmod_1e9(d, &nd);
	if (sign < 0)
		sb_putc(sb, '-');
	sb_printf(sb, "%u", chunks[nc - 1]);
	for (size_t i = nc - 1; i-- > 0;)
		sb_printf(sb, "%09u", chunks[i]);
}

/* Thread.__repr__ in Lib/threading.py: the name as %s gives it (not a
 * repr), the status "initial", "started" or "stopped", then " daemon" and
 * the ident when set. */
void repr_thread(struct strbuf *sb, const struct repr_thread *t)
{
	sb_printf(sb, "<%s(%s, %s", t->cls, t->name,
		  t->stopped ? "stopped" : t->started ? "started" : "initial");
	if (t->daemon)
		sb_puts(sb, " daemon");
	if (t->has_ident)
		sb_printf(sb, " %llu", (unsigned long long)t->ident);
	sb_puts(sb, ")>");
}
