#include "util/base64.h"

#include <errno.h>
#include <stdint.h>

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sb_add_base64(struct strbuf *sb, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		sb_putc(sb, alphabet[v >> 18 & 63]);
		sb_putc(sb, alphabet[v >> 12 & 63]);
		sb_putc(sb, left > 1 ? alphabet[v >> 6 & 63] : '=');
		sb_putc(sb, left > 2 ? alphabet[v & 63] : '=');
	}
}

static int value_of(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* One group of four characters: its 1 to 3 bytes, or -1. */
static int decode_quad(const char *q, bool last, unsigned char out[3])
{
	int v[4], pad = 0;

	for (int i = 0; i < 4; i++) {
		v[i] = value_of(q[i]);
		if (v[i] >= 0 && !pad)
			continue;
		/* '=' only at the end of the last group, at most two */
		if (q[i] != '=' || !last || i < 2)
			return -1;
		pad++;
		v[i] = 0;
	}
	out[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
	out[1] = (unsigned char)(v[1] << 4 | v[2] >> 2);
	out[2] = (unsigned char)(v[2] << 6 | v[3]);
	return 3 - pad;
}

int base64_decode(const char *s, size_t n, struct strbuf *out)
{
	size_t was = out->len;
	unsigned char b[3];

	if (n % 4)
		return -EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		int k = decode_quad(s + i, i + 4 == n, b);

		if (k < 0) {
			out->len = was;
			if (out->buf)
				out->buf[was] = '\0';
			return -EINVAL;
		}
		sb_add(out, (const char *)b, (size_t)k);
	}
	return 0;
}
