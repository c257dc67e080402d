/* The top functions of a profile, as text; see toplist.h. */
#include "profile/toplist.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

struct func {
	char *label;		/* "name (file)" */
	uint64_t own, total;
	uint64_t seen;		/* 1 + the latest stack counted in total */
};

struct toplist {
	struct func *funcs;
	uint32_t nfuncs;
	uint32_t *func_of;	/* by frame id; UINT32_MAX: a root, no function */
};

static bool is_function(const struct pframe *f)
{
	return f->kind == PF_PYTHON || f->kind == PF_NATIVE;
}

static int by_label(const void *a, const void *b, void *labels)
{
	char **l = labels;

	return strcmp(l[*(const uint32_t *)a], l[*(const uint32_t *)b]);
}

/* One function per distinct "name (file)" as it is shown: frames of its
 * lines share it, and so do C++ overloads when names are short. */
static void make_funcs(struct toplist *t, const struct profile *p, bool full, bool full_names)
{
	char **labels = xcalloc(p->nframes ? p->nframes : 1, sizeof(*labels));
	uint32_t *order = xcalloc(p->nframes ? p->nframes : 1, sizeof(*order)), n = 0;

	t->func_of = xcalloc(p->nframes ? p->nframes : 1, sizeof(*t->func_of));
	t->funcs = xcalloc(p->nframes ? p->nframes : 1, sizeof(*t->funcs));
	for (uint32_t i = 0; i < p->nframes; i++) {
		struct pframe f = p->frames[i];

		t->func_of[i] = UINT32_MAX;
		if (!is_function(&f))
			continue;
		f.line = -1;
		labels[i] = pframe_shown_label(&f, full, full_names);
		order[n++] = i;
	}
	qsort_r(order, n, sizeof(*order), by_label, labels);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t id = order[k];

		if (!k || strcmp(labels[id], t->funcs[t->nfuncs - 1].label) != 0)
			t->funcs[t->nfuncs++].label = xstrdup(labels[id]);
		t->func_of[id] = t->nfuncs - 1;
	}
	for (uint32_t i = 0; i < p->nframes; i++)
		free(labels[i]);
	free(labels);
	free(order);
}

/* Own: the innermost function of each stack; total: each function on it,
 * once. */
static uint64_t count(struct toplist *t, const struct profile *p)
{
	uint64_t all = 0;

	for (uint32_t s = 0; s < p->nstacks; s++) {
		const struct pstack *st = &p->stacks[s];
		bool leaf = true;

		all += st->count;
		for (uint32_t d = st->depth; d-- > 0;) {
			uint32_t fn = t->func_of[st->frames[d]];

			if (fn == UINT32_MAX)
				continue;
			if (leaf)
				t->funcs[fn].own += st->count;
			leaf = false;
			if (t->funcs[fn].seen != s + 1ull) {
				t->funcs[fn].seen = s + 1ull;
				t->funcs[fn].total += st->count;
			}
		}
	}
	return all;
}

static int by_own(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->own != y->own)
		return x->own < y->own ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->label, y->label);
}

void toplist_print(const struct profile *p, int n, bool full_filenames, bool full_names,
		   const char *prefix, FILE *f)
{
	struct toplist t = { 0 };
	struct strbuf sb = STRBUF_INIT;
	uint64_t all;

	make_funcs(&t, p, full_filenames, full_names);
	all = count(&t, p);
	qsort(t.funcs, t.nfuncs, sizeof(*t.funcs), by_own);
	if (all && t.nfuncs) {
		fprintf(f, "%s%7s %7s  %s\n", prefix, "Own%", "Total%", "Function (own: running "
			"itself, total: anywhere on the stack)");
		/* By own share: a function with none is in the totals of
		 * those it called, shown already. */
		for (uint32_t i = 0; i < t.nfuncs && i < (uint32_t)n && t.funcs[i].own; i++) {
			sb.len = 0;
			/* Names come from the target: keep the terminal sane. */
			sb_add_printable(&sb, t.funcs[i].label);
			fprintf(f, "%s%7.1f %7.1f  %s\n", prefix, 100.0 * t.funcs[i].own / all,
				100.0 * t.funcs[i].total / all, sb.buf);
		}
	}
	for (uint32_t i = 0; i < t.nfuncs; i++)
		free(t.funcs[i].label);
	free(t.funcs);
	free(t.func_of);
	sb_release(&sb);
}
