/* Reading profiles back: telling the formats apart, gunzip, the parts
 * the readers share (profile_read_int.h) and a flight recording's time
 * slice; see profile_read.h.  Each format has its own reader file. */
#include "profile/profile_read_int.h"
#include "profile/flightrec.h"
#include "util/util.h"
#include "util/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

int reader_fail(struct reader *r, const char *fmt, ...)
{
	char msg[PROFILE_READ_ERR - 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s: %s", r->name, msg);
	return -1;
}

/* --- building stacks ---------------------------------------------------- */

/* Add a frame to the stack being built, root first.  Past the depth limit
 * frames are dropped and the stack ends in "<truncated>": deeper stacks
 * than `record` makes would only come from a broken or hostile file, and
 * the writers recurse per level. */
void reader_push_id(struct reader *r, uint32_t id)
{
	static const struct pframe cut = { PF_MARKER, "<truncated>", NULL, -1, -1 };

	if (r->depth > PROFILE_READ_DEPTH)
		return;
	if (r->depth == PROFILE_READ_DEPTH)
		id = profile_frame(r->p, &cut);
	r->stack[r->depth++] = id;
}

void reader_push_frame(struct reader *r, const struct pframe *f)
{
	if (r->depth <= PROFILE_READ_DEPTH)
		reader_push_id(r, profile_frame(r->p, f));
}

int reader_end_stack(struct reader *r, uint64_t count, const char *where)
{
	uint32_t depth = r->depth;

	r->depth = 0;
	if (!count)
		return 0;
	if (!depth)
		return reader_fail(r, "%s: a count without frames", where);
	if (!profile_add_count(r->p, r->stack, depth, count))
		return reader_fail(r, "%s: the counts add up to more than 2^64", where);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "\uXXXX" or "\UXXXXXXXX" at s, the escape of a format character: its
 * UTF-8 onto sb and the escape's length, or 0 when s is not one. */
static int unescape_cp(const char *s, size_t len, struct strbuf *sb)
{
	int digits = len > 1 && s[1] == 'u' ? 4 : len > 1 && s[1] == 'U' ? 8 : 0;
	uint32_t cp = 0;

	if (!digits || len < (size_t)digits + 2)
		return 0;
	for (int k = 0; k < digits; k++) {
		int v = hexval(s[2 + k]);

		if (v < 0)
			return 0;
		cp = cp << 4 | (uint32_t)v;
	}
	if (!esc_unsafe(cp) || cp < 0x100 || cp > 0x10ffff)
		return 0;
	sb_add_utf8(sb, cp);
	return digits + 2;
}

/* Undo pystrobe's escapes ("\\", "\xNN" for control characters,
 * invalid UTF-8 and ';', "\uXXXX" for format characters), so that a
 * frame read back is the frame that was written and a second write
 * escapes it the same way.  Other backslashes
 * are kept: other tools' names have their own (C:\path, regexes).  A NUL,
 * escaped or not, stays visible as "\x00" rather than cut the name. */
char *reader_unescape(const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < len; i++) {
		int hi, lo, n;

		if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\\') {
			sb_putc(&sb, '\\');
			i++;
		} else if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' &&
			   (hi = hexval(s[i + 2])) >= 0 && (lo = hexval(s[i + 3])) >= 0 &&
			   (hi | lo)) {
			sb_putc(&sb, (char)(hi << 4 | lo));
			i += 3;
		} else if (s[i] == '\\' && (n = unescape_cp(s + i, len - i, &sb)) > 0) {
			i += n - 1;
		} else if (!s[i]) {
			sb_puts(&sb, "\\x00");
		} else {
			sb_putc(&sb, s[i]);
		}
	}
	return sb_detach(&sb);
}

/* --- gzip ---------------------------------------------------------------- */

int gunzip_mem(const void *data, size_t len, size_t max, struct strbuf *out, char *err,
	       size_t errlen)
{
	char buf[64 * 1024];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		snprintf(err, errlen, "cannot start decompressing");
		return -1;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = (Bytef *)buf;
		z.avail_out = sizeof(buf);
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END)
			break;
		sb_add(out, buf, sizeof(buf) - z.avail_out);
		if (out->len > max) {
			inflateEnd(&z);
			snprintf(err, errlen, "more than %zu MiB once decompressed", max >> 20);
			return -1;
		}
	} while (rc != Z_STREAM_END);
	inflateEnd(&z);
	if (rc == Z_STREAM_END)
		return 0;
	if (rc == Z_BUF_ERROR)
		snprintf(err, errlen, "truncated gzip data");
	else
		snprintf(err, errlen, "corrupt gzip data (%s)", z.msg ? z.msg : "inflate failed");
	return -1;
}

static int gunzip(struct reader *r, const char *data, size_t len, struct strbuf *out)
{
	char err[256];

	if (gunzip_mem(data, len, PROFILE_READ_MAX, out, err, sizeof(err)) < 0)
		return reader_fail(r, "%s", err);
	return 0;
}

int profile_gunzip(const char *data, size_t len, const char *name, struct strbuf *out,
		   char *err, size_t errlen)
{
	struct reader r = { .name = name, .err = err, .errlen = errlen };

	return gunzip(&r, data, len, out) < 0 ? status_fail(EXIT_BAD_INPUT) : 0;
}

/* --- a flight recording -------------------------------------------------- */

/* Seconds from base, "-120.0 s", for messages about slices. */
static void rel_seconds(char *buf, size_t size, int64_t ns)
{
	if (ns == INT64_MIN || ns == INT64_MAX)
		snprintf(buf, size, "%s", ns < 0 ? "the start" : "the end");
	else
		snprintf(buf, size, "%+.1f s", (double)ns / 1e9);
}

/* An empty slice is the user's mistake: say what the recording holds. */
static int empty_slice(struct reader *r)
{
	const struct flightrec_info *in = r->info;
	char from[32], until[32], first[32], last[32];

	rel_seconds(from, sizeof(from), r->slice->from_ns);
	rel_seconds(until, sizeof(until), r->slice->until_ns);
	rel_seconds(first, sizeof(first),
		    (int64_t)in->first_unix_ns - (int64_t)in->base_unix_ns);
	rel_seconds(last, sizeof(last), (int64_t)in->last_unix_ns - (int64_t)in->base_unix_ns);
	reader_fail(r, "no samples from %s until %s of the %s; its %llu samples run from %s to %s",
		    from, until, in->mark_unix_ns ? "mark" : "last sample",
		    (unsigned long long)in->samples, first, last);
	return status_fail(EXIT_USAGE);
}

static int read_recording(struct reader *r, const char *data, size_t len)
{
	char why[PROFILE_READ_ERR - 256];

	r->recording = true;
	/* p was initialised empty; the parser starts it again. */
	profile_free(r->p);
	if (flightrec_parse(data, len, r->slice, r->p, r->info, why, sizeof(why)) < 0)
		return reader_fail(r, "%s", why);
	if (r->slice && !r->p->samples && r->info->samples)
		return empty_slice(r);
	return 0;
}

/* --- telling formats apart --------------------------------------------- */

static bool is_gzip(const char *data, size_t len)
{
	return len >= 2 && (uint8_t)data[0] == 0x1f && (uint8_t)data[1] == 0x8b;
}

/* Text holds no control characters but tab, CR and LF (pystrobe's folded
 * output escapes the others); pprof's protobuf nearly always does, in
 * its first kilobytes. */
static bool is_binary(const char *data, size_t len)
{
	for (size_t i = 0; i < len && i < 4096; i++) {
		unsigned char c = data[i];

		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			return true;
	}
	return false;
}

/* Binary data is pprof, or nothing we read: the protobuf's complaint says
 * why it is not pprof. */
static int read_binary(struct reader *r, const char *data, size_t len)
{
	char why[256];
	size_t skip = strlen(r->name) + 2;

	if (read_pprof_proto(r, (const uint8_t *)data, len) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", strlen(r->err) > skip ? r->err + skip : r->err);
	return reader_fail(r, "binary data that is not pprof (as pprof: %s); " PROFILE_READ_FORMATS,
			   why);
}

/* Whether the text (after blanks) starts as XML does: a flame graph, or
 * some other SVG or XML.  Not a bare '<': "<module> (x.py:1);f 3" is
 * folded. */
static bool is_xml(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && is_blank(data[i]))
		i++;
	return len - i >= 5 && (!strncmp(data + i, "<?xml", 5) || !strncmp(data + i, "<svg", 4));
}

/* What a text file we do not read is, by its first bytes: NULL when it
 * may be folded stacks. */
static const char *unreadable_text(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && is_blank(data[i]))
		i++;
	if (i < len && (data[i] == '{' || data[i] == '[')) {
		size_t n = len - i < 65536 ? len - i : 65536;

		if (memmem(data + i, n, "speedscope", 10))
			return "a speedscope JSON profile";
		if (data[i] == '[' || memmem(data + i, n, "\"traceEvents\"", 13))
			return "a Chrome trace (JSON)";
		return "JSON that is not a profile format";
	}
	return NULL;
}

/* Read data by what it is; inside a gzip stream once more (gzip of
 * folded stacks, of pprof, ...). */
static int read_any(struct reader *r, const char *data, size_t len, enum profile_format *fmt,
		    int gz_depth)
{
	const char *what;

	if (is_gzip(data, len)) {
		struct strbuf raw = STRBUF_INIT;
		int ret = gz_depth > 0 ? reader_fail(r, "gzip inside gzip inside gzip") :
					 gunzip(r, data, len, &raw);

		if (!ret)
			ret = read_any(r, raw.buf ? raw.buf : "", raw.len, fmt, gz_depth + 1);
		sb_release(&raw);
		return ret;
	}
	if (flightrec_is(data, len)) {
		*fmt = PROFILE_RECORDING;
		return read_recording(r, data, len);
	}
	if (is_binary(data, len)) {
		*fmt = PROFILE_PPROF;
		return read_binary(r, data, len);
	}
	*fmt = PROFILE_FOLDED;
	if (is_xml(data, len))
		return read_svg(r, data, len);
	what = unreadable_text(data, len);
	if (what)
		return reader_fail(r, "%s; " PROFILE_READ_FORMATS, what);
	return read_folded(r, data, len, 0);
}

/* --- entry points ------------------------------------------------------- */

/* The readers on data, with r's slice and info. */
static int read_mem(struct reader *r, const char *data, size_t len, struct profile *p,
		    enum profile_format *fmt)
{
	enum profile_format f = PROFILE_FOLDED;
	int ret;

	profile_init(p, 0);
	r->p = p;
	ret = read_any(r, data, len, &f, 0);
	if (fmt)
		*fmt = f;
	if (!ret && r->slice && !r->recording) {
		reader_fail(r, "not a flight recording: only recordings (pystrobe watch) have the "
			    "sample times --from and --until slice by");
		ret = status_fail(EXIT_USAGE);
	}
	if (!ret && !p->samples)
		ret = reader_fail(r, "no samples");
	if (ret)
		profile_free(p);
	/* The readers' -1 after fail(): a file that does not read. */
	return ret < 0 && !is_status_fail(ret) ? status_fail(EXIT_BAD_INPUT) : ret;
}

int profile_read_mem(const char *data, size_t len, const char *name, struct profile *p,
		     enum profile_format *fmt, char *err, size_t errlen)
{
	struct flightrec_info info;

	return profile_read_slice_mem(data, len, name, NULL, &info, p, fmt, err, errlen);
}

int profile_read_slice_mem(const char *data, size_t len, const char *name,
			   const struct flightrec_slice *slice, struct flightrec_info *info,
			   struct profile *p, enum profile_format *fmt, char *err, size_t errlen)
{
	struct reader *r = xcalloc(1, sizeof(*r));
	int ret;

	memset(info, 0, sizeof(*info));
	r->name = name;
	r->err = err;
	r->errlen = errlen;
	r->slice = slice;
	r->info = info;
	ret = read_mem(r, data, len, p, fmt);
	free(r);
	return ret;
}

int profile_read(const char *path, struct profile *p, enum profile_format *fmt,
		 char *err, size_t errlen)
{
	struct flightrec_info info;

	return profile_read_slice(path, NULL, &info, p, fmt, err, errlen);
}

int profile_read_slice(const char *path, const struct flightrec_slice *slice,
		       struct flightrec_info *info, struct profile *p, enum profile_format *fmt,
		       char *err, size_t errlen)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[64 * 1024];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return status_fail(EXIT_BAD_INPUT);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len <= PROFILE_READ_MAX)
		sb_add(&sb, buf, n);
	if (n < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else if (sb.len > PROFILE_READ_MAX)
		snprintf(err, errlen, "%s: larger than %u MiB", path, PROFILE_READ_MAX >> 20);
	close(fd);
	if (n < 0 || sb.len > PROFILE_READ_MAX) {
		sb_release(&sb);
		return status_fail(EXIT_BAD_INPUT);
	}
	ret = profile_read_slice_mem(sb.buf ? sb.buf : "", sb.len, path, slice, info, p, fmt,
				     err, errlen);
	sb_release(&sb);
	return ret;
}
