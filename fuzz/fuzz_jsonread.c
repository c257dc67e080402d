/* libFuzzer harness: the JSON reader (src/util/jsonread.c) and the job
 * model built on it (src/cluster/), whose input is a dump another machine
 * wrote, or a file a user collected.  Input: the text.  Whatever it is, a
 * parse either fails with "byte N: ..." (N within the input) or gives a
 * tree whose every node is in bounds and whose every string is NUL-free
 * valid UTF-8 of its stated length; a parse that keeps "frames" raw fails
 * exactly where the full one does; and the text goes through jobdump
 * (twice: the second time its "frames" are known texts, the same verdict
 * wanted), jobgroup and both views, as `pystrobe group` takes it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/jobdump.h"
#include "cluster/jobgroup.h"
#include "cluster/jobview.h"
#include "util/jsonread.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t n)
{
	if (strlen(s) != n)
		abort();
	for (size_t i = 0; i < n;) {
		int k = utf8_char(s + i, NULL);

		if (k <= 0)
			abort();
		i += (size_t)k;
	}
}

/* Iterative over the node array: each node once. */
static void check_tree(const struct jdoc *d)
{
	for (size_t i = 0; i < d->nv; i++) {
		const struct jv *v = &d->v[i];

		if (v->key != UINT32_MAX && (v->key >= d->nstr || !jv_key(d, v)))
			abort();
		if (v->type == JV_STR)
			check_str(jv_str(d, v), v->n);
		if ((v->type == JV_ARR || v->type == JV_OBJ) &&
		    (v->n > d->nv || v->at > d->nv - v->n || (v->n && v->at + v->n > i)))
			abort();
	}
}

/* The checking of a raw member is the full parse's, storing nothing. */
static void check_raw(const uint8_t *data, size_t size, int rc, const char *err)
{
	static const char *const keys[] = { "frames", "a", NULL };
	struct jdoc d = JDOC_INIT;
	char err2[160];

	d.raw_keys = keys;
	if (jdoc_parse(&d, (const char *)data, size, err2, sizeof(err2)) != rc ||
	    (rc && strcmp(err, err2)))
		abort();
	jdoc_release(&d);
}

static void check_job(const uint8_t *data, size_t size)
{
	struct job_dump jd = JOB_DUMP_INIT;
	struct jobview_opts o = { 0 };
	struct strbuf out = STRBUF_INIT;
	struct job_grouping gr;
	char err[256], err2[256];
	int rc = jobdump_add_json(&jd, (const char *)data, size, "fuzz", err, sizeof(err));

	/* Again: its "frames" texts are now known (jdoc's known_raw), and
	 * compared rather than read; the verdict is the same. */
	if (jobdump_add_json(&jd, (const char *)data, size, "fuzz", err2, sizeof(err2)) != rc ||
	    (rc && strcmp(err, err2)))
		abort();
	jobgroup_build(&gr, &jd);
	jobview_text(&out, &gr, &o);
	jobview_json(&out, &gr);
	sb_release(&out);
	jobgroup_release(&gr);
	jobdump_release(&jd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jdoc d = JDOC_INIT;
	char err[160] = "";
	size_t at;
	int rc = jdoc_parse(&d, (const char *)data, size, err, sizeof(err));

	if (rc == 0) {
		if (!jdoc_root(&d))
			abort();
		check_tree(&d);
	} else if (sscanf(err, "byte %zu:", &at) != 1 || at > size) {
		abort();
	}
	jdoc_release(&d);
	check_raw(data, size, rc, err);
	check_job(data, size);
	return 0;
}
