/* Reading pprof (profile.proto, uncompressed: profile_read.c gunzips),
 * with the little of protobuf's wire format it needs; see profile_read.h
 * for what becomes of its labels and values. */
#include "profile/profile_read_int.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- protobuf ----------------------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num;
	int wire;
	uint64_t v;		/* wire type 0 */
	struct pb sub;		/* wire type 2 */
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	return get_varint(&b->p, b->end, v);
}

/* The next field of a message: 1, 0 at its end, -1 when it is broken. */
static int pb_next(struct pb *b, struct pb_field *f)
{
	uint64_t key, len;

	if (b->p == b->end)
		return 0;
	if (pb_varint(b, &key) < 0 || key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wire = key & 7;
	f->v = 0;
	switch (f->wire) {
	case 0:
		return pb_varint(b, &f->v) < 0 ? -1 : 1;
	case 1:
	case 5:
		len = f->wire == 1 ? 8 : 4;
		break;
	case 2:
		if (pb_varint(b, &len) < 0)
			return -1;
		break;
	default:
		return -1;
	}
	if (len > (uint64_t)(b->end - b->p))
		return -1;
	f->sub.p = b->p;
	f->sub.end = b->p + len;
	b->p += len;
	return 1;
}

struct u64s {
	uint64_t *v;
	size_t n, cap;
};

static void u64_push(struct u64s *a, uint64_t v)
{
	ALLOC_GROW(a->v, a->n + 1, a->cap);
	a->v[a->n++] = v;
}

/* A repeated integer field, packed (proto3's default) or one per field. */
static int pb_ints(const struct pb_field *f, struct u64s *out)
{
	struct pb b = f->sub;
	uint64_t v;

	if (f->wire == 0) {
		u64_push(out, f->v);
		return 0;
	}
	if (f->wire != 2)
		return -1;
	while (b.p < b.end) {
		if (pb_varint(&b, &v) < 0)
			return -1;
		u64_push(out, v);
	}
	return 0;
}

/* --- pprof -------------------------------------------------------------- */

struct pp_func {
	uint64_t id;
	uint64_t name, file;	/* string indices */
	int64_t start;
};

struct pp_loc {
	uint64_t id;
	uint32_t first, n;	/* frame ids in pp.loc_frames, innermost first */
};

struct pp {
	struct reader *r;
	struct pb *strs;
	size_t nstrs, strs_cap;
	struct pp_func *funcs;
	size_t nfuncs, funcs_cap;
	struct pp_loc *locs;
	size_t nlocs, locs_cap;
	struct u64s loc_frames;
	struct pb *samples, *func_msgs, *loc_msgs;
	size_t nsamples, nfunc_msgs, nloc_msgs, samples_cap, func_cap, loc_cap;
	struct u64s types;	/* sample_type: type string index per value */
	struct u64s comments;
	uint64_t default_type, period, duration, time;
	size_t value_index;
};

static void span_push(struct pb **a, size_t *n, size_t *cap, struct pb s)
{
	ALLOC_GROW(*a, *n + 1, *cap);
	(*a)[(*n)++] = s;
}

static int bad(struct pp *pp, const char *what)
{
	return reader_fail(pp->r, "not a valid pprof profile (%s)", what);
}

/* String i of the table, unescaped, or NULL when out of range. */
static char *pp_str(struct pp *pp, uint64_t i)
{
	if (i >= pp->nstrs)
		return NULL;
	return reader_unescape((const char *)pp->strs[i].p, pp->strs[i].end - pp->strs[i].p);
}

static bool pp_str_is(struct pp *pp, uint64_t i, const char *s)
{
	size_t n = strlen(s);

	return i < pp->nstrs && (size_t)(pp->strs[i].end - pp->strs[i].p) == n &&
	       !memcmp(pp->strs[i].p, s, n);
}

/* The top-level fields; sub-messages are kept as spans for later. */
static int pp_scan(struct pp *pp, struct pb b)
{
	struct pb_field f;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		struct pb_field t;
		struct pb vt = f.sub;

		if ((f.num == 1 || f.num == 2 || f.num == 4 || f.num == 5 || f.num == 6) &&
		    f.wire != 2)
			return bad(pp, "a message field with the wrong wire type");
		switch (f.num) {
		case 1:		/* sample_type: ValueType { type = 1, unit = 2 } */
			u64_push(&pp->types, 0);
			while ((rc = pb_next(&vt, &t)) > 0)
				if (t.num == 1 && t.wire == 0)
					pp->types.v[pp->types.n - 1] = t.v;
			if (rc < 0)
				return bad(pp, "sample type");
			break;
		case 2: span_push(&pp->samples, &pp->nsamples, &pp->samples_cap, f.sub); break;
		case 4: span_push(&pp->loc_msgs, &pp->nloc_msgs, &pp->loc_cap, f.sub); break;
		case 5: span_push(&pp->func_msgs, &pp->nfunc_msgs, &pp->func_cap, f.sub); break;
		case 6: span_push(&pp->strs, &pp->nstrs, &pp->strs_cap, f.sub); break;
		case 9: pp->time = f.v; break;
		case 10: pp->duration = f.v; break;
		case 12: pp->period = f.v; break;
		case 13:
			if (pb_ints(&f, &pp->comments) < 0)
				return bad(pp, "comment");
			break;
		case 14: pp->default_type = f.v; break;
		default: break;
		}
	}
	if (rc < 0)
		return bad(pp, "a field runs past the end");
	if (!pp->nstrs || pp->strs[0].p != pp->strs[0].end)
		return bad(pp, "string_table[0] is not empty");
	if (!pp->types.n)
		return bad(pp, "no sample types");
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_func *)a)->id, y = ((const struct pp_func *)b)->id;

	return x < y ? -1 : x > y;
}

static int cmp_loc(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_loc *)a)->id, y = ((const struct pp_loc *)b)->id;

	return x < y ? -1 : x > y;
}

static int pp_functions(struct pp *pp)
{
	pp->funcs = xcalloc(pp->nfunc_msgs ? pp->nfunc_msgs : 1, sizeof(*pp->funcs));
	for (size_t i = 0; i < pp->nfunc_msgs; i++) {
		struct pp_func *fn = &pp->funcs[pp->nfuncs++];
		struct pb b = pp->func_msgs[i];
		struct pb_field f;
		uint64_t system = 0;
		int rc;

		while ((rc = pb_next(&b, &f)) > 0) {
			if (f.wire != 0)
				continue;
			switch (f.num) {
			case 1: fn->id = f.v; break;
			case 2: fn->name = f.v; break;
			case 3: system = f.v; break;
			case 4: fn->file = f.v; break;
			case 5: fn->start = (int64_t)f.v; break;
			}
		}
		if (rc < 0)
			return bad(pp, "function");
		if (!fn->name)
			fn->name = system;
		if (fn->name >= pp->nstrs || fn->file >= pp->nstrs)
			return bad(pp, "function names a string past the table");
	}
	if (pp->nfuncs)
		qsort(pp->funcs, pp->nfuncs, sizeof(*pp->funcs), cmp_func);
	return 0;
}

static const struct pp_func *find_func(struct pp *pp, uint64_t id)
{
	struct pp_func key = { .id = id };

	return pp->nfuncs ? bsearch(&key, pp->funcs, pp->nfuncs, sizeof(key), cmp_func) : NULL;
}

/* One Line { function_id = 1, line = 2 } of a location, as a frame. */
static int pp_line(struct pp *pp, struct pb b)
{
	struct pframe fr = { PF_PYTHON, NULL, NULL, -1, -1 };
	const struct pp_func *fn;
	uint64_t func = 0;
	int64_t line = 0;
	struct pb_field f;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && f.wire == 0)
			func = f.v;
		else if (f.num == 2 && f.wire == 0)
			line = (int64_t)f.v;
	}
	if (rc < 0 || !(fn = find_func(pp, func)))
		return bad(pp, "a location's line names no function");
	/* A nameless function would print as an empty frame, which a folded
	 * reader drops. */
	fr.name = pp_str(pp, fn->name);
	if (!*fr.name) {
		free(fr.name);
		fr.name = xstrdup("?");
	}
	fr.file = fn->file ? pp_str(pp, fn->file) : NULL;
	/* Line 0 is pprof's "unknown", which `record --function` writes. */
	fr.line = line > 0 && line <= INT32_MAX ? (int)line : -1;
	fr.firstlineno = fn->start > 0 && fn->start <= INT32_MAX ? (int)fn->start : -1;
	u64_push(&pp->loc_frames, profile_frame(pp->r->p, &fr));
	free(fr.name);
	free(fr.file);
	return 0;
}

static int pp_locations(struct pp *pp)
{
	pp->locs = xcalloc(pp->nloc_msgs ? pp->nloc_msgs : 1, sizeof(*pp->locs));
	for (size_t i = 0; i < pp->nloc_msgs; i++) {
		struct pp_loc *l = &pp->locs[pp->nlocs++];
		struct pb b = pp->loc_msgs[i];
		struct pb_field f;
		uint64_t address = 0;
		int rc;

		l->first = (uint32_t)pp->loc_frames.n;
		while ((rc = pb_next(&b, &f)) > 0) {
			if (f.num == 1 && f.wire == 0)
				l->id = f.v;
			else if (f.num == 3 && f.wire == 0)
				address = f.v;
			else if (f.num == 4 && f.wire == 2 && pp_line(pp, f.sub) < 0)
				return -1;
		}
		if (rc < 0)
			return bad(pp, "location");
		/* An unsymbolised address, as Go and perf converters leave them. */
		if (pp->loc_frames.n == l->first) {
			char *name = xasprintf("0x%llx", (unsigned long long)address);
			struct pframe fr = { PF_NATIVE, name, NULL, -1, -1 };

			u64_push(&pp->loc_frames, profile_frame(pp->r->p, &fr));
			free(name);
		}
		l->n = (uint32_t)(pp->loc_frames.n - l->first);
	}
	if (pp->nlocs)
		qsort(pp->locs, pp->nlocs, sizeof(*pp->locs), cmp_loc);
	return 0;
}

/* The numeric labels "pid" and "tid" of a sample, which out_pprof.c
 * writes: the thread its samples came from. */
struct pp_ids {
	int64_t pid, tid;
	bool have_pid, have_tid;
};

/* A string label as a root frame: "process" and "thread" are what
 * out_pprof.c makes of those roots, anything else a merge label. */
static int pp_label(struct pp *pp, struct pb b, struct pp_ids *ids)
{
	struct pframe fr = { PF_LABEL, NULL, NULL, -1, -1 };
	uint64_t key = 0, str = 0, num = 0;
	struct pb_field f;
	char *k, *v;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && f.wire == 0)
			key = f.v;
		else if (f.num == 2 && f.wire == 0)
			str = f.v;
		else if (f.num == 3 && f.wire == 0)
			num = f.v;
	}
	if (rc < 0 || key >= pp->nstrs || str >= pp->nstrs)
		return bad(pp, "label");
	if (!str && pp_str_is(pp, key, "pid") && num <= INT32_MAX) {
		ids->pid = (int64_t)num;
		ids->have_pid = true;
	} else if (!str && pp_str_is(pp, key, "tid") && num <= INT32_MAX) {
		ids->tid = (int64_t)num;
		ids->have_tid = true;
	}
	if (!str)
		return 0;	/* numeric: no root */
	k = pp_str(pp, key);
	v = pp_str(pp, str);
	if (!strcmp(k, "process")) {
		fr.kind = PF_PROCESS;
		fr.name = v;
	} else if (!strcmp(k, "thread")) {
		fr.kind = PF_THREAD;
		fr.name = v;
	} else if (!strcmp(k, "label")) {
		fr.name = v;	/* out_pprof.c's key for a root without '=' */
	} else {
		fr.name = xasprintf("%s=%s", k, v);
	}
	reader_push_frame(pp->r, &fr);
	if (fr.name != v)
		free(fr.name);
	free(k);
	free(v);
	return 0;
}

/* More threads than this in one file are not told apart (labels kept
 * only for the first ones): profile_thread() looks them up one by one. */
#define PP_MAX_THREADS 4096

/* The sample just counted came from the thread its labels say. */
static void pp_sample_thread(struct pp *pp, const struct pp_ids *ids, uint32_t depth,
			     uint64_t count)
{
	struct profile *p = pp->r->p;
	uint32_t t;

	if (!ids->have_pid || !ids->have_tid || !count || !depth ||
	    depth > PROFILE_READ_DEPTH + 1)
		return;
	for (t = 0; t < p->nthreads; t++)
		if (p->threads[t].pid == ids->pid && p->threads[t].tid == ids->tid)
			break;
	if (t == p->nthreads && t >= PP_MAX_THREADS)
		return;
	t = profile_thread(p, (pid_t)ids->pid, (pid_t)ids->tid, NULL);
	profile_add_stack_thread(p, profile_stack(p, pp->r->stack, depth), t, count);
}

static int pp_sample(struct pp *pp, struct pb b, size_t index)
{
	struct u64s locs = { 0 }, values = { 0 };
	struct pp_ids ids = { 0 };
	struct pb_field f;
	char where[48];
	uint32_t depth;
	int rc, ret = -1;

	snprintf(where, sizeof(where), "sample %zu", index);
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1)
			rc = pb_ints(&f, &locs);
		else if (f.num == 2)
			rc = pb_ints(&f, &values);
		else if (f.num == 3 && f.wire == 2)
			rc = pp_label(pp, f.sub, &ids);
		if (rc < 0)
			goto out;
	}
	if (rc < 0) {
		bad(pp, "sample");
		goto out;
	}
	if (values.n != pp->types.n) {
		reader_fail(pp->r, "%s: %zu values for %zu sample types", where, values.n,
			    pp->types.n);
		goto out;
	}
	if ((int64_t)values.v[pp->value_index] < 0) {
		reader_fail(pp->r, "%s: a negative count (a difference profile?)", where);
		goto out;
	}
	/* Leaf first in the file; each location's lines innermost first. */
	for (size_t i = locs.n; i-- > 0;) {
		struct pp_loc key = { .id = locs.v[i] }, *l;

		l = pp->nlocs ? bsearch(&key, pp->locs, pp->nlocs, sizeof(key), cmp_loc) : NULL;
		if (!l) {
			reader_fail(pp->r, "%s: location %llu does not exist", where,
				    (unsigned long long)locs.v[i]);
			goto out;
		}
		for (uint32_t k = l->n; k-- > 0;)
			reader_push_id(pp->r, (uint32_t)pp->loc_frames.v[l->first + k]);
	}
	depth = pp->r->depth;
	ret = reader_end_stack(pp->r, values.v[pp->value_index], where);
	if (!ret)
		pp_sample_thread(pp, &ids, depth, values.v[pp->value_index]);
out:
	pp->r->depth = 0;
	free(locs.v);
	free(values.v);
	return ret;
}

/* Which value is the count: "samples", else the default type, else the
 * first. */
static void pp_value_index(struct pp *pp)
{
	for (size_t i = 0; i < pp->types.n; i++)
		if (pp_str_is(pp, pp->types.v[i], "samples")) {
			pp->value_index = i;
			return;
		}
	for (size_t i = 0; i < pp->types.n; i++)
		if (pp->default_type && pp->types.v[i] == pp->default_type) {
			pp->value_index = i;
			return;
		}
	pp->value_index = 0;
}

static void pp_metadata(struct pp *pp)
{
	struct profile *p = pp->r->p;
	char *s;

	if (pp->period) {
		p->interval_ns = pp->period;
		p->rate_hz = 1e9 / (double)pp->period;
	}
	p->start_unix_ns = pp->time;
	p->duration_ns = pp->duration;
	/* out_pprof.c's "wall" for a recording of idle threads too. */
	for (size_t i = 0; i < pp->types.n; i++)
		p->wall |= pp_str_is(pp, pp->types.v[i], "wall");
	/* out_pprof.c writes "pystrobe", the command, "Python X.Y.Z". */
	if (pp->comments.n < 2 || !pp_str_is(pp, pp->comments.v[0], "pystrobe"))
		return;
	p->command = pp_str(pp, pp->comments.v[1]);
	s = pp->comments.n > 2 ? pp_str(pp, pp->comments.v[2]) : NULL;
	if (s && !strncmp(s, "Python ", 7))
		p->python_version = xstrdup(s + 7);
	free(s);
}

int read_pprof_proto(struct reader *r, const uint8_t *data, size_t len)
{
	struct pp pp = { .r = r };
	int ret = -1;

	if (pp_scan(&pp, (struct pb){ data, data + len }) < 0 || pp_functions(&pp) < 0 ||
	    pp_locations(&pp) < 0)
		goto out;
	pp_value_index(&pp);
	for (size_t i = 0; i < pp.nsamples; i++)
		if (pp_sample(&pp, pp.samples[i], i) < 0)
			goto out;
	pp_metadata(&pp);
	ret = 0;
out:
	free(pp.strs);
	free(pp.funcs);
	free(pp.locs);
	free(pp.loc_frames.v);
	free(pp.samples);
	free(pp.func_msgs);
	free(pp.loc_msgs);
	free(pp.types.v);
	free(pp.comments.v);
	return ret;
}
