/* Short labels for C++ and Rust function names; see shortname.h.
 *
 * The name is read left to right once, with its bracketed groups matched
 * by a bounded stack.  Inside template arguments, angle brackets count;
 * inside (), [] and {} they do not (a comparison in an expression, or a
 * template inside a parameter type, is balanced by the parentheses around
 * it), and "operator<" and its kin are names, not brackets.
 */
#include "profile/shortname.h"
#include "util/util.h"

#include <string.h>

/* Names longer than this are only cut: demangled names of a few kB exist
 * (nested templates), tens of kB are not a name anyone reads. */
#define SCAN_MAX	16384
#define DEPTH_MAX	64
#define NONE		((size_t)-1)
#define ELLIPSIS	"\xe2\x80\xa6"

/* What follows "operator" in an operator's name, longest first where one
 * starts another: these brackets belong to the name. */
static const char *const op_tokens[] = {
	"<<=", ">>=", "<=>", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->",
	"==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"<", ">", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", ",",
	" new[]", " delete[]", " new", " delete", " co_await", "\"\" ", "\"\"",
};

/* Words that start special names, kept as they are ("non-virtual thunk to
 * X::f()" must not read as a return type followed by a name). */
static const char *const prefixes[] = {
	"non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
	"transaction clone for ", "construction vtable for ", "vtable for ", "VTT for ",
	"typeinfo name for ", "typeinfo for ", "guard variable for ",
	"TLS init function for ", "TLS wrapper function for ",
};

/* What ends a parameter list's function type: cv and ref qualifiers,
 * exception specifications, GCC's suffixes. */
static const char *const qualifiers[] = {
	" const", " volatile", " &&", " &", "&&", "&", " noexcept", " transaction_safe",
};

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

static size_t starts(const char *s, size_t i, size_t end, const char *word)
{
	size_t n = strlen(word);

	return end - i >= n && !memcmp(s + i, word, n) ? n : 0;
}

/* The length of the word "operator" and its token at s[i], or 0 when no
 * operator name starts there.  A conversion operator's type is not part
 * of it: "operator" alone is 8. */
static size_t operator_at(const char *s, size_t i, size_t end)
{
	size_t n;

	if ((i > 0 && ident_char(s[i - 1])) || !starts(s, i, end, "operator"))
		return 0;
	if (i + 8 < end && ident_char(s[i + 8]))
		return 0;	/* operator_x, operators */
	for (size_t k = 0; k < ARRAY_SIZE(op_tokens); k++)
		if ((n = starts(s, i + 8, end, op_tokens[k])))
			return 8 + n;
	return 8;
}

static char closer(char c)
{
	return c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
}

/* The index just past the group that opens at s[i], or NONE when it does
 * not close before end or nests deeper than DEPTH_MAX. */
static size_t skip_group(const char *s, size_t i, size_t end)
{
	char want[DEPTH_MAX];
	int d = 0;

	for (; i < end; i++) {
		char c = s[i];
		size_t op;

		if (d > 0 && want[d - 1] == '>' && (op = operator_at(s, i, end))) {
			i += op - 1;
			continue;
		}
		if (c == '<' && d > 0 && want[d - 1] != '>')
			continue;
		if (c == '>' && d > 0 && want[d - 1] != '>')
			continue;
		if (c == '(' || c == '[' || c == '{' || c == '<') {
			if (d == DEPTH_MAX)
				return NONE;
			want[d++] = closer(c);
		} else if (c == ')' || c == ']' || c == '}' || c == '>') {
			if (want[d - 1] != c)
				return NONE;
			if (--d == 0)
				return i + 1;
		}
	}
	return NONE;
}

/* After a parameter list: its qualifiers and any [clone .cold] or [abi:x]
 * groups, skipped; returns where the name goes on ("::" of a local
 * entity, or its end). */
static size_t skip_qualifiers(const char *s, size_t i, size_t end)
{
	for (;;) {
		size_t n = 0, j;

		for (size_t k = 0; k < ARRAY_SIZE(qualifiers) && !n; k++)
			if ((n = starts(s, i, end, qualifiers[k])) && i + n < end &&
			    ident_char(s[i + n]))
				n = 0;	/* " constexpr..." is not " const" */
		if (n) {
			i += n;
			continue;
		}
		j = i + (i < end && s[i] == ' ');
		if (j < end && s[j] == '[' && (n = skip_group(s, j, end)) != NONE) {
			i = n;
			continue;
		}
		return i;
	}
}

static void truncate_to(struct strbuf *sb, size_t len)
{
	if (sb->len > len) {
		sb->len = len;
		sb->buf[len] = '\0';
	}
}

static bool shorten(struct strbuf *out, const char *s, size_t i, size_t end, bool top, int depth);

/* A conversion operator's type, after "operator ": up to its parameter
 * list, templates shortened, blanks kept ("operator unsigned long"). */
static size_t conversion_type(struct strbuf *out, const char *s, size_t i, size_t end)
{
	size_t j;

	while (i < end && s[i] != '(') {
		if (s[i] == '<') {
			if ((j = skip_group(s, i, end)) == NONE)
				return NONE;
			sb_puts(out, "<" ELLIPSIS ">");
			i = j;
			continue;
		}
		sb_putc(out, s[i++]);
	}
	return i;
}

/* A bracketed group at s[i] (not a parameter list): where the name goes
 * on after it, or NONE. */
static size_t group(struct strbuf *out, const char *s, size_t i, size_t end, size_t keep,
		    int depth)
{
	size_t j = skip_group(s, i, end);

	if (j == NONE)
		return NONE;
	switch (s[i]) {
	case '<':
		/* Template arguments go; Rust's "<T as Trait>::f" at the start
		 * of a name is the name itself. */
		if (out->len != keep) {
			sb_puts(out, "<" ELLIPSIS ">");
			return j;
		}
		/* fall through */
	case '{':		/* {lambda(int)#1}, {unnamed type#1}, Rust's {{closure}} */
		sb_putc(out, s[i]);
		if (!shorten(out, s, i + 1, j - 1, false, depth + 1))
			return NONE;
		sb_putc(out, s[j - 1]);
		return j;
	default:		/* '[': [abi:cxx11], [clone .cold] */
		return j;
	}
}

/* Shorten s[i, end) onto out.  top: a whole name, where a blank ends a
 * return type (and what came before it goes); else the inside of a {} or
 * <> group, where blanks are kept.  false when it does not parse. */
static bool shorten(struct strbuf *out, const char *s, size_t i, size_t end, bool top, int depth)
{
	size_t keep = out->len, n;

	if (depth > DEPTH_MAX)
		return false;
	for (size_t k = 0; top && k < ARRAY_SIZE(prefixes); k++)
		if ((n = starts(s, i, end, prefixes[k]))) {
			sb_add(out, s + i, n);
			i += n;
			keep = out->len;
		}
	while (i < end) {
		char c = s[i];

		if ((n = operator_at(s, i, end))) {
			sb_add(out, s + i, n);
			i += n;
			if (n == 8 && i < end && s[i] == ' ' && (i = conversion_type(out, s, i, end)) == NONE)
				return false;
			if (i + 1 < end && s[i] == ' ' && s[i + 1] == '<') {
				sb_putc(out, ' ');	/* "operator< <int>" */
				i++;
			}
			continue;
		}
		switch (c) {
		case '(':
			if ((n = starts(s, i, end, "(anonymous namespace)"))) {
				sb_add(out, s + i, n);
				i += n;
				continue;
			}
			if ((n = skip_group(s, i, end)) == NONE)
				return false;
			/* "void (*f(int))(double)": f returns a function pointer. */
			if (top && out->len == keep && i + 1 < end && (s[i + 1] == '*' || s[i + 1] == '&') &&
			    !shorten(out, s, i + 2, n - 1, true, depth + 1))
				return false;
			i = skip_qualifiers(s, n, end);
			continue;
		case '<':
		case '{':
		case '[':
			if ((i = group(out, s, i, end, keep, depth)) == NONE)
				return false;
			continue;
		case ')':
		case '>':
		case '}':
		case ']':
			return false;
		case ' ':
			if (!top)
				break;
			n = skip_qualifiers(s, i, end);
			if (n == i)	/* a return type ends */
				truncate_to(out, keep);
			i = n + (n == i);
			continue;
		}
		sb_putc(out, c);
		i++;
	}
	return !top || out->len > keep;	/* a name is left */
}

/* The end of the name without a Rust legacy hash, "::h" and 16 hex digits. */
static size_t without_hash(const char *s, size_t len)
{
	if (len < 19 || memcmp(s + len - 19, "::h", 3))
		return len;
	for (size_t i = len - 16; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return len;
	return len - 19;
}

/* The byte offset of code point k of s (len bytes), a byte of broken
 * UTF-8 counting as one: each count below goes forward, so that they
 * agree on what broken input is. */
static size_t char_offset(const char *s, size_t len, size_t k)
{
	size_t i = 0;

	for (size_t c = 0; c < k && i < len; c++) {
		int n = utf8_char(s + i, NULL);

		i += n > 0 ? (size_t)n : 1;
	}
	return i < len ? i : len;
}

/* s cut in the middle to SHORT_NAME_MAX code points, "…" for what goes. */
static char *cut(const char *s, size_t len)
{
	const size_t keep_head = SHORT_NAME_MAX / 2, keep_tail = SHORT_NAME_MAX - keep_head - 1;
	struct strbuf sb = STRBUF_INIT;
	size_t chars = 0, head, tail;

	for (size_t i = 0; i < len; chars++) {
		int n = utf8_char(s + i, NULL);

		i += n > 0 ? (size_t)n : 1;
	}
	if (chars <= SHORT_NAME_MAX) {
		sb_add(&sb, s, len);
		return sb_detach(&sb);
	}
	head = char_offset(s, len, keep_head);
	tail = char_offset(s, len, chars - keep_tail);
	sb_add(&sb, s, head);
	sb_puts(&sb, ELLIPSIS);
	sb_add(&sb, s + tail, len - tail);
	return sb_detach(&sb);
}

char *short_name(const char *name)
{
	size_t len = strlen(name), end = without_hash(name, len);
	struct strbuf sb = STRBUF_INIT;
	char *label;

	if (len <= SCAN_MAX && shorten(&sb, name, 0, end, true, 0) && sb.len > 0)
		label = cut(sb.buf, sb.len);
	else
		label = cut(name, len);
	sb_release(&sb);
	return label;
}
