/* pprof's profile.proto, gzip-compressed, for `go tool pprof` and the
 * tools that read it (github.com/google/pprof, proto/profile.proto).
 *
 * The protobuf is written by hand: a handful of varints and length-delimited
 * fields do not justify a code generator.
 *
 *  - Two sample types, samples/count and cpu/nanoseconds (count times the
 *    sampling interval), or wall/nanoseconds when idle threads were sampled
 *    too (--idle); the period is the interval.
 *  - One Sample per distinct stack, its locations leaf first.
 *  - One Location per frame (a frame is a function and a line), one
 *    Function per (name, file, def line): pprof's own notion of a function,
 *    and what keeps two lambdas of one file apart.  File names are the
 *    target's full paths, whatever --full-filenames says: pprof trims paths
 *    itself and its source views need the real ones.  A frame read from a
 *    folded file is only its text, "function (file:line)": that is split
 *    back into the three, so that pprof's -list finds the line.
 *  - No system_name: pprof takes a function whose system_name equals its
 *    name for a mangled C++ symbol and "simplifies" it, deleting anything
 *    between < and > ("<module>" became "") and between ( and ).
 *  - Process and thread root frames are not locations, or every profile
 *    would have two fake callers on top.  They become the sample's string
 *    labels "process" and "thread" (the root's text).  A stack sampled on
 *    several threads is one Sample per thread, with numeric labels "pid"
 *    and "tid" (from the runs, or from the pprof file it was read from).
 *  - `merge`'s roots "NAME=VALUE" (PF_LABEL) become the string label NAME,
 *    so Pyroscope and Parca can filter by rank or host.
 *  - record --waits' leaf "<wait:gpu>" stays a location and also becomes
 *    the string label "wait" ("gpu"), to filter or group by (-tagfocus).
 *  - One Mapping, the program (the command's first word), marked as
 *    having functions, files and lines: Python code has no addresses, and
 *    without it pprof looks for a binary to symbolize and prints "Main
 *    binary filename not available" on every command.
 *
 * proto3 strings must be UTF-8 (Go's decoder rejects anything else) and
 * pprof prints names straight to the terminal, so every string from the
 * target is written as sb_add_printable() shows it: control characters and
 * invalid bytes as \xNN, backslashes doubled.
 */
#include "profile/output.h"
#include "profile/loss.h"
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
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_FILENAME = 4, FUNCTION_START_LINE = 5,
};

/* --- protobuf encoding, into a strbuf used as a byte buffer ------------- */

static void pb_varint(struct strbuf *b, uint64_t v)
{
	sb_put_varint(b, v);
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
	struct pstack_thread *st;	/* samples per (stack, thread), by stack */
	uint32_t nst;
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
	pb_uint(m, FUNCTION_FILENAME, file);
	pb_uint(m, FUNCTION_START_LINE, start);
	pb_msg(&pp->functions, PROFILE_FUNCTION, m);
	return id;
}

/* A frame that is only text (read from a folded file), "NAME (FILE:LINE)"
 * or "NAME (FILE)", as its three parts in *out (name and file new
 * strings); false when the text has no such form. */
static bool split_label(const struct pframe *f, struct pframe *out)
{
	const char *s = f->name, *open = NULL, *colon, *end = s + strlen(s), *q;
	long line = -1;

	if (f->file || (f->kind != PF_PYTHON && f->kind != PF_NATIVE) || end - s < 4 ||
	    end[-1] != ')')
		return false;
	for (q = s; (q = strstr(q, " (")); q++)
		open = q;
	if (!open || open == s || open + 3 >= end)
		return false;
	colon = memrchr(open + 2, ':', end - 1 - (open + 2));
	if (colon && colon + 1 < end - 1 && strspn(colon + 1, "0123456789") ==
	    (size_t)(end - 1 - (colon + 1)) && end - 1 - (colon + 1) <= 9)
		line = strtol(colon + 1, NULL, 10);
	else
		colon = end - 1;
	if (colon == open + 2)
		return false;
	*out = *f;
	out->name = xasprintf("%.*s", (int)(open - s), s);
	out->file = xasprintf("%.*s", (int)(colon - (open + 2)), open + 2);
	out->line = (int)line;
	return true;
}

static uint32_t location_id(struct pp *pp, uint32_t frame)
{
	const struct pframe *f = &pp->p->frames[frame];
	struct pframe split;
	bool was_split;
	uint32_t func;

	if (pp->loc_of[frame])
		return pp->loc_of[frame];
	was_split = split_label(f, &split);
	if (was_split)
		f = &split;
	func = function_id(pp, f);
	pp->loc_of[frame] = ++pp->nlocs;
	pb_uint(&pp->sub, LINE_FUNCTION_ID, func);
	pb_uint(&pp->sub, LINE_LINE, f->line > 0 ? f->line : 0);
	pb_uint(&pp->msg, LOCATION_ID, pp->nlocs);
	pb_uint(&pp->msg, LOCATION_MAPPING_ID, 1);
	pb_msg(&pp->msg, LOCATION_LINE, &pp->sub);
	if (was_split) {
		free(split.name);
		free(split.file);
	}
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

static int cmp_stack_thread(const void *a, const void *b)
{
	const struct pstack_thread *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* How many samples of each stack came from each thread: from the runs of
 * a recording, or what a profile read from pprof knew.  Sorted by stack,
 * one entry per (stack, thread). */
static void map_threads(struct pp *pp)
{
	const struct profile *p = pp->p;
	uint32_t n = p->nruns + p->nstack_threads, k = 0;

	pp->st = xmalloc((n ? n : 1) * sizeof(*pp->st));
	for (uint32_t i = 0; i < p->nruns; i++)
		pp->st[i] = (struct pstack_thread){ p->runs[i].stack, p->runs[i].thread,
						    p->runs[i].samples };
	if (p->nstack_threads)
		memcpy(pp->st + p->nruns, p->stack_threads, p->nstack_threads * sizeof(*pp->st));
	qsort(pp->st, n, sizeof(*pp->st), cmp_stack_thread);
	for (uint32_t i = 0; i < n; i++) {
		if (k && !cmp_stack_thread(&pp->st[k - 1], &pp->st[i]))
			pp->st[k - 1].count += pp->st[i].count;
		else
			pp->st[k++] = pp->st[i];
	}
	pp->nst = k;
}

/* The sample's locations, leaf first, into pp->packed. */
static void sample_locations(struct pp *pp, const struct pstack *s)
{
	for (uint32_t d = s->depth; d-- > 0;) {
		enum pframe_kind kind = pp->p->frames[s->frames[d]].kind;

		if (kind != PF_PROCESS && kind != PF_THREAD && kind != PF_LABEL)
			pb_varint(&pp->packed, location_id(pp, s->frames[d]));
	}
}

/* A wait leaf "<wait:gpu>" as the label wait=gpu. */
static void put_wait(struct pp *pp, struct strbuf *sample, const struct pstack *s)
{
	const struct pframe *f;
	char *cls;
	size_t n;

	if (!s->depth)
		return;
	f = &pp->p->frames[s->frames[s->depth - 1]];
	if (pframe_category(f) != CAT_WAIT)
		return;
	cls = xstrdup(f->name + strlen(PFRAME_WAIT_PREFIX));
	n = strlen(cls);
	if (n && cls[n - 1] == '>')
		cls[n - 1] = 0;
	label_str(pp, sample, "wait", cls);
	free(cls);
}

/* count samples of stack id, from thread t (UINT32_MAX: not known). */
static void encode_sample(struct pp *pp, struct strbuf *out, uint32_t id, uint64_t count,
			  uint32_t t)
{
	const struct profile *p = pp->p;
	const struct pstack *s = &p->stacks[id];
	struct strbuf sample = STRBUF_INIT;

	sample_locations(pp, s);
	if (pp->packed.len)
		pb_msg(&sample, SAMPLE_LOCATION_ID, &pp->packed);
	pb_varint(&pp->packed, count);
	pb_varint(&pp->packed, count * p->interval_ns);
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
	put_wait(pp, &sample, s);
	if (t < p->nthreads) {
		label_num(pp, &sample, "pid", p->threads[t].pid);
		label_num(pp, &sample, "tid", p->threads[t].tid);
	}
	pb_msg(out, PROFILE_SAMPLE, &sample);
	sb_release(&sample);
}

/* All samples: per stack one Sample per thread it was seen on, and one
 * without a thread for what no thread accounts for. */
static void encode_samples(struct pp *pp, struct strbuf *out)
{
	const struct profile *p = pp->p;
	uint32_t k = 0;

	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint64_t left = p->stacks[i].count;

		for (; k < pp->nst && pp->st[k].stack < i; k++)
			;
		for (; k < pp->nst && pp->st[k].stack == i; k++) {
			uint64_t c = pp->st[k].count < left ? pp->st[k].count : left;

			if (c)
				encode_sample(pp, out, i, c, pp->st[k].thread);
			left -= c;
		}
		if (left)
			encode_sample(pp, out, i, left, UINT32_MAX);
	}
}

/* The program as pprof's main binary: see the top of this file. */
static void encode_mapping(struct pp *pp, struct strbuf *out)
{
	const char *cmd = pp->p->command;
	size_t n = cmd ? strcspn(cmd, " ") : 0;
	char *file = n ? xasprintf("%.*s", (int)n, cmd) : xstrdup("python");

	pb_uint(&pp->msg, MAPPING_ID, 1);
	pb_uint(&pp->msg, MAPPING_FILENAME, str_id(pp, file));
	pb_uint(&pp->msg, MAPPING_HAS_FUNCTIONS, 1);
	pb_uint(&pp->msg, MAPPING_HAS_FILENAMES, 1);
	pb_uint(&pp->msg, MAPPING_HAS_LINE_NUMBERS, 1);
	pb_msg(out, PROFILE_MAPPING, &pp->msg);
	free(file);
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
	struct strbuf samples = STRBUF_INIT, tail = STRBUF_INIT, loss = STRBUF_INIT;
	char *version = p->python_version ? xasprintf("Python %s", p->python_version) : NULL;
	const char *time = p->wall ? "wall" : "cpu";
	bool added;

	strtab_take(&pp->strings, xstrdup(""), &added);	/* string_table[0] */
	value_type(pp, out, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(pp, out, PROFILE_SAMPLE_TYPE, time, "nanoseconds");
	encode_samples(pp, &samples);
	encode_mapping(pp, &tail);

	pb_uint(&tail, PROFILE_TIME_NANOS, p->start_unix_ns);
	pb_uint(&tail, PROFILE_DURATION_NANOS, p->duration_ns);
	value_type(pp, &tail, PROFILE_PERIOD_TYPE, time, "nanoseconds");
	pb_uint(&tail, PROFILE_PERIOD, p->interval_ns);
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, "pystrobe"));
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, p->command));
	pb_uint(&tail, PROFILE_COMMENT, str_id(pp, version));
	/* What the recording lost (profile/loss.h): pprof -comments. */
	if (profile_loss_note(p, &loss))
		pb_uint(&tail, PROFILE_COMMENT, str_id(pp, loss.buf));
	pb_uint(&tail, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(pp, time));

	sb_add(out, samples.buf, samples.len);
	sb_add(out, pp->locations.buf, pp->locations.len);
	sb_add(out, pp->functions.buf, pp->functions.len);
	for (uint32_t i = 0; i < pp->strings.n; i++)
		pb_bytes(out, PROFILE_STRING_TABLE, pp->strings.strs[i], strlen(pp->strings.strs[i]));
	sb_add(out, tail.buf, tail.len);
	sb_release(&samples);
	sb_release(&tail);
	sb_release(&loss);
	free(version);
}

int out_write_gzip(FILE *f, const void *data, size_t len)
{
	unsigned char out[64 * 1024];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: the largest window, with a gzip header and trailer. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		return -ENOMEM;
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
	return rc == Z_STREAM_END ? 0 : -EIO;
}

int out_pprof(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct pp pp = { .p = p };
	struct strbuf out = STRBUF_INIT;
	int ret;

	(void)o;
	pp.loc_of = xcalloc(p->nframes ? p->nframes : 1, sizeof(*pp.loc_of));
	map_threads(&pp);
	encode_profile(&pp, &out);
	ret = out_write_gzip(f, out.buf ? out.buf : "", out.len);

	sb_release(&out);
	sb_release(&pp.functions);
	sb_release(&pp.locations);
	sb_release(&pp.msg);
	sb_release(&pp.sub);
	sb_release(&pp.packed);
	strtab_free(&pp.strings);
	strtab_free(&pp.funcs);
	free(pp.loc_of);
	free(pp.st);
	if (ret)
		return ret;
	return out_finish(f);
}
