/* pprof's profile.proto, gzip-compressed, for `go tool pprof` and the
 * tools that read it (github.com/google/pprof, proto/profile.proto).
 *
 * The protobuf is written by hand: a handful of varints and length-delimited
 * fields do not justify a code generator.
 *
 *  - Two sample types, samples/count and cpu/nanoseconds (count times the
 *    sampling interval); the period is the interval.
 *  - One Sample per distinct stack, its locations leaf first.
 *  - One Location per frame (a frame is a function and a line), one
 *    Function per (name, file, def line): pprof's own notion of a function,
 *    and what keeps two lambdas of one file apart.  File names are the
 *    target's full paths, whatever --full-filenames says: pprof trims paths
 *    itself and its source views need the real ones.
 *  - Process and thread root frames are not locations, or every profile
 *    would have two fake callers on top.  They become the sample's string
 *    labels "process" and "thread" (the root's text), and when all of a
 *    stack's samples came from one thread, numeric labels "pid" and "tid".
 *  - `merge`'s roots "NAME=VALUE" (PF_LABEL) become the string label NAME,
 *    so Pyroscope and Parca can filter by rank or host.
 *  - No mappings: Python code has no addresses, and pprof accepts
 *    locations without a mapping.
 *
 * proto3 strings must be UTF-8 (Go's decoder rejects anything else) and
 * pprof prints names straight to the terminal, so every string from the
 * target is written as sb_add_printable() shows it: control characters and
 * invalid bytes as \xNN, backslashes doubled.
 */
#include "profile/output.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Wire types. */
#define WT_VARINT 0
#define WT_LEN 2

/* Field numbers, from profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	LOCATION_ID = 1, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4, FUNCTION_START_LINE = 5,
};

/* --- protobuf encoding, into a strbuf used as a byte buffer ------------- */

static void pb_varint(struct strbuf *b, uint64_t v)
{
	char buf[10];
	int n = 0;

	do {
		buf[n] = v & 0x7f;
		v >>= 7;
		if (v)
			buf[n] |= 0x80;
		n++;
	} while (v);
	sb_add(b, buf, n);
}

static void pb_key(struct strbuf *b, int field, int wire_type)
{
	pb_varint(b, (uint64_t)field << 3 | wire_type);
}

/* A scalar; zero is the default and is left out, as proto3 does. */
static void pb_uint(struct strbuf *b, int field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WT_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct strbuf *b, int field, const void *data, size_t len)
{
	pb_key(b, field, WT_LEN);
	pb_varint(b, len);
	if (len)
		sb_add(b, data, len);
}

/* Embed a finished sub-message and empty its buffer for the next one. */
static void pb_msg(struct strbuf *b, int field, struct strbuf *msg)
{
	pb_bytes(b, field, msg->buf, msg->len);
	msg->len = 0;
}

/* --- interning ---------------------------------------------------------- */

/* Strings to ids 0.. in order of first appearance. */
struct strtab {
	char **strs;
	uint32_t n, cap;
	struct hashidx index;
};

/* The id of s, adding it (the table takes ownership) when new. */
static uint32_t strtab_take(struct strtab *t, char *s, bool *added)
{
	uint32_t h = hash_str(HASH_INIT, s), id;
	struct hashidx_pos pos;

	*added = false;
	for (id = hashidx_first(&t->index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&t->index, &pos)) {
		if (!strcmp(t->strs[id], s)) {
			free(s);
			return id;
		}
	}
	ALLOC_GROW(t->strs, t->n + 1, t->cap);
	id = t->n++;
	t->strs[id] = s;
	hashidx_add(&t->index, h, id);
	*added = true;
	return id;
}

static void strtab_free(struct strtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	hashidx_release(&t->index);
}

struct pp {
	const struct profile *p;
	struct strtab strings;	/* the string table */
	struct strtab funcs;	/* "name file line" keys; id + 1 is the Function id */
	struct strbuf functions;	/* encoded Function messages */
	struct strbuf locations;	/* encoded Location messages */
	uint32_t *loc_of;	/* frame id -> Location id, 0: none yet */
	uint32_t nlocs;
	struct strbuf msg, sub, packed;	/* scratch */
};

/* A string-table index; strings from the target are made printable. */
static uint32_t str_id(struct pp *pp, const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	bool added;

	if (!s || !*s)
		return 0;
	sb_add_printable(&sb, s);
	return strtab_take(&pp->strings, sb_detach(&sb), &added);
}

static uint32_t function_id(struct pp *pp, const struct pframe *f)
{
	uint32_t name = str_id(pp, f->name), file = str_id(pp, f->file);
	int start = f->firstlineno > 0 ? f->firstlineno : 0;
	char *key = xasprintf("%u %u %d", name, file, start);
	bool added;
	uint32_t id = strtab_take(&pp->funcs, key, &added) + 1;
	struct strbuf *m = &pp->msg;

	if (!added)
		return id;
	pb_uint(m, FUNCTION_ID, id);
	pb_uint(m, FUNCTION_NAME, name);
	pb_uint(m, FUNCTION_SYSTEM_NAME, name);
	pb_uint(m, FUNCTION_FILENAME, file);
	pb_uint(m, FUNCTION_START_LINE, start);
	pb_msg(&pp->functions, PROFILE_FUNCTION, m);
	return id;
}

static uint32_t location_id(struct pp *pp, uint32_t frame)
{
	const struct pframe *f = &pp->p->frames[frame];
	uint32_t func;

	if (pp->loc_of[frame])
		return pp->loc_of[frame];
	func = function_id(pp, f);
	pp->loc_of[frame] = ++pp->nlocs;
	pb_uint(&pp->sub, LINE_FUNCTION_ID, func);
	pb_uint(&pp->sub, LINE_LINE, f->line > 0 ? f->line : 0);
	pb_uint(&pp->msg, LOCATION_ID, pp->nlocs);
	pb_msg(&pp->msg, LOCATION_LINE, &pp->sub);
	pb_msg(&pp->locations, PROFILE_LOCATION, &pp->msg);
	return pp->nlocs;
}

/* --- samples ------------------------------------------------------------ */

static void label_str(struct pp *pp, struct strbuf *sample, const char *key, const char *val)
{
	pb_uint(&pp->sub, LABEL_KEY, str_id(pp, key));
	pb_uint(&pp->sub, LABEL_STR, str_id(pp, val));
	pb_msg(sample, SAMPLE_LABEL, &pp->sub);
}

/* "NAME=VALUE" as the label NAME; a root without '=' is a "label". */
static void label_pair(struct pp *pp, struct strbuf *sample, const char *root)
{
	const char *eq = strchr(root, '=');
	char *key;

	if (!eq || eq == root) {
		label_str(pp, sample, "label", root);
		return;
	}
	key = xasprintf("%.*s", (int)(eq - root), root);
	label_str(pp, sample, key, eq + 1);
	free(key);
}

static void label_num(struct pp *pp, struct strbuf *sample, const char *key, int64_t v)
{
	pb_uint(&pp->sub, LABEL_KEY, str_id(pp, key));
	pb_uint(&pp->sub, LABEL_NUM, (uint64_t)v);
	pb_msg(sample, SAMPLE_LABEL, &pp->sub);
}

static void encode_sample(struct pp *pp, struct strbuf *out, uint32_t id)
{
	const struct profile *p = pp->p;
	const struct pstack *s = &p->stacks[id];
	struct strbuf sample = STRBUF_INIT;
	uint32_t t = s->thread;

	/* Leaf first. */
	for (uint32_t d = s->depth; d-- > 0;) {
		enum pframe_kind kind = p->frames[s->frames[d]].kind;

		if (kind != PF_PROCESS && kind != PF_THREAD && kind != PF_LABEL)
			pb_varint(&pp->packed, location_id(pp, s->frames[d]));
	}
	if (pp->packed.len)
		pb_msg(&sample, SAMPLE_LOCATION_ID, &pp->packed);
	pb_varint(&pp->packed, s->count);
	pb_varint(&pp->packed, s->count * p->interval_ns);
	pb_msg(&sample, SAMPLE_VALUE, &pp->packed);

	for (uint32_t d = 0; d < s->depth; d++) {
		const struct pframe *f = &p->frames[s->frames[d]];

		if (f->kind == PF_PROCESS)
			label_str(pp, &sample, "process", f->name);
		else if (f->kind == PF_THREAD)
			label_str(pp, &sample, "thread", f->name);
		else if (f->kind == PF_LABEL)
			label_pair(pp, &sample, f->name);
	}
	if (t < p->nthreads) {
		label_num(pp, &sample, "pid", p->threads[t].pid);
		label_num(pp, &sample, "tid", p->threads[t].tid);
	}
	pb_msg(out, PROFILE_SAMPLE, &sample);
	sb_release(&sample);
}

static void value_type(struct pp *pp, struct strbuf *out, int field, const char *type,
		       const char *unit)
{
	pb_uint(&pp->sub, VALUETYPE_TYPE, str_id(pp, type));
	pb_uint(&pp->sub, VALUETYPE_UNIT, str_id(pp, unit));
	pb_msg(out, field, &pp->sub);
}

/* The whole Profile message.  The string table goes after everything
 * that interns strings; field order does not matter to protobuf. */
static void encode_profile(struct pp *pp, struct strbuf *out)
{
	const struct profile *p = pp->p;
	struct strbuf samples = STRBUF_INIT, tail = STRBUF_INIT;
	char *version = p->python_version ? xasprintf("Python %s", p->python_version) : NULL;
	bool added;

	strtab_take(&pp->strings, xstrdup(""), &added);	/* string_table[0] */
	value_type(pp, out, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(pp, out, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].count)
			encode_sample(pp, &samples, i);

	pb_uint(&tail, PROFILE_TIME_NANOS, p->start_unix_ns);
	pb_uint(&tail, PROFILE_DURATION_NANOS, p->duration_ns);
	value_type(pp, &tail, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	pb_uint(&tail, PROFILE_PERIOD, p->interval_ns);
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, "pystrobe"));
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, p->command));
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, version));
	pb_uint(&tail, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(pp, "cpu"));

	sb_add(out, samples.buf, samples.len);
	sb_add(out, pp->locations.buf, pp->locations.len);
	sb_add(out, pp->functions.buf, pp->functions.len);
	for (uint32_t i = 0; i < pp->strings.n; i++)
		pb_bytes(out, PROFILE_STRING_TABLE, pp->strings.strs[i], strlen(pp->strings.strs[i]));
	sb_add(out, tail.buf, tail.len);
	sb_release(&samples);
	sb_release(&tail);
	free(version);
}

static int write_gzip(FILE *f, const void *data, size_t len)
{
	unsigned char out[64 * 1024];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: the largest window, with a gzip header and trailer. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		rc = deflate(&z, Z_FINISH);
		fwrite(out, 1, sizeof(out) - z.avail_out, f);
	} while (rc == Z_OK);
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int out_pprof(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct pp pp = { .p = p };
	struct strbuf out = STRBUF_INIT;
	int ret;

	(void)o;
	pp.loc_of = xcalloc(p->nframes ? p->nframes : 1, sizeof(*pp.loc_of));
	encode_profile(&pp, &out);
	ret = write_gzip(f, out.buf ? out.buf : "", out.len);

	sb_release(&out);
	sb_release(&pp.functions);
	sb_release(&pp.locations);
	sb_release(&pp.msg);
	sb_release(&pp.sub);
	sb_release(&pp.packed);
	strtab_free(&pp.strings);
	strtab_free(&pp.funcs);
	free(pp.loc_of);
	if (ret)
		return ret;
	return out_finish(f);
}
