/* What dump prints, shared with watch's reports: the snapshots dump_read.c
 * took, as text (dump_text.c) or JSON (dump_json.c); dump_format_all(). */
#include "cmd/dump_format_int.h"
#include "cmd/dump_group.h"
#include "process/source.h"
#include "util/json.h"
#include "util/util.h"

#include <stdlib.h>
#include <unistd.h>

static int by_task_name(const void *a, const void *b, void *arg)
{
	const struct py_task *v = arg, *x = &v[*(const int *)a], *y = &v[*(const int *)b];
	int c = natural_cmp(x->name ? x->name : "", y->name ? y->name : "");

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The tasks as indices into t->v, by name with numbers by value, then by
 * address.  They are read in the order of a set (3.12+: by hash), new
 * every dump; asyncio names an unnamed task Task-N from a counter it
 * counts up as it creates them, so these come in the order created, and
 * named ones (worker-2 before worker-10) where a reader looks for them. */
int *dump_task_order(const struct py_tasks *t)
{
	int *order = xcalloc(t->n ? t->n : 1, sizeof(*order));

	for (int i = 0; i < t->n; i++)
		order[i] = i;
	qsort_r(order, t->n, sizeof(*order), by_task_name, t->v);
	return order;
}

/* How many processes a group's members are in (they come in process order). */
int dump_group_processes(const struct dump_group *g, const struct member *mem)
{
	int n = 0, last = -1;

	for (uint32_t i = 0; i < g->n; i++) {
		if (mem[g->members[i]].snap != last)
			n++;
		last = mem[g->members[i]].snap;
	}
	return n;
}

/* The host's name as gethostname() has it: what tells one host's dump
 * from another's when many are grouped (pystrobe group). */
static void json_host(struct json *j)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = 0;
	json_kstr(j, "host", host[0] ? host : NULL);
}

static void format_json(struct strbuf *out, const struct snapshot *snaps, int n,
			const pid_t *ppids, const struct view *views, const struct dump_opts *o,
			const struct grouping *gr, const struct member *mem)
{
	struct json j;

	json_init(&j, out);
	json_obj_begin(&j);
	json_host(&j);
	if (o->node) {
		json_kstr(&j, "node", o->node);
		json_kstr(&j, "job", o->job);
	}
	json_key(&j, "processes");
	json_arr_begin(&j);
	for (int i = 0; i < n; i++)
		dump_json_snapshot(&j, &snaps[i], ppids[i], &views[i]);
	for (int i = 0; i < o->nfailed; i++)
		dump_json_failed(&j, &o->failed[i]);
	json_arr_end(&j);
	if (o->group)
		dump_json_groups(&j, snaps, gr, mem);
	json_obj_end(&j);
	sb_putc(out, '\n');
}

void dump_format_all(struct strbuf *out, const struct snapshot *snaps, int n,
		     const struct proc_node *procs, int nprocs, const struct dump_opts *o)
{
	struct grouping gr = GROUPING_INIT;
	struct member *mem = NULL;
	pid_t *ppids = xcalloc(n, sizeof(*ppids));
	struct view *views = xcalloc(n, sizeof(*views));

	for (int i = 0; i < n; i++) {
		for (int k = 1; k < nprocs; k++)
			if (procs[k].pid == snaps[i].pid)
				ppids[i] = procs[k].ppid;
		views[i].locals = o->locals;
		views[i].async = o->async;
		views[i].full_filenames = o->full_filenames;
		views[i].full_names = o->full_names;
		views[i].group = o->group;
		if (o->no_source)
			views[i].src = NULL;
		else if (snaps[i].core)
			views[i].src = source_open_root(snaps[i].root, snaps[i].core_ns);
		else
			views[i].src = source_open(snaps[i].pid);
	}
	if (o->group)
		mem = dump_group_threads(snaps, n, views, &gr);
	if (!o->json && o->group) {
		dump_text_grouped(out, snaps, n, ppids, views, &gr, mem);
		goto out;
	}
	if (!o->json) {
		for (int i = 0; i < n; i++) {
			if (i)
				sb_puts(out, "\n\n");
			dump_text_snapshot(out, &snaps[i], ppids[i], &views[i]);
		}
		goto out;
	}
	format_json(out, snaps, n, ppids, views, o, &gr, mem);
out:
	for (int i = 0; i < n; i++)
		source_close(views[i].src);
	free(views);
	grouping_release(&gr);
	free(mem);
	free(ppids);
}
