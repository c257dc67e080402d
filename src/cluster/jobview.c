/* The job-wide view, text and JSON (jobview.h).  The stack lines are
 * dump's (cmd/dump_text.c), written here from the job's model: cluster is
 * below cmd and has no py_frame to hand it. */
#include "cluster/jobview.h"
#include "cluster/ranges.h"
#include "profile/profile.h"
#include "profile/shortname.h"
#include "util/json.h"

#include <stdlib.h>
#include <string.h>

/* Thread names listed in a group's header before the rest are counted. */
#define HEADER_NAMES 3

static void put_name(struct strbuf *sb, const char *s)
{
	sb_add_printable(sb, s ? s : "?");
}

static void text_frame(struct strbuf *sb, const struct job_frame *f,
		       const struct jobview_opts *o)
{
	if (f->kind == JF_GC) {
		sb_puts(sb, "    <gc> (the garbage collector is running)\n");
		return;
	}
	if (f->kind == JF_NATIVE) {
		char *name = f->function && !o->full_names ? short_name(f->function) : NULL;

		sb_puts(sb, "    [native] ");
		if (f->function) {
			put_name(sb, name ? name : f->function);
			sb_puts(sb, " (");
		}
		put_name(sb, f->library);
		sb_printf(sb, "+0x%llx%s", (unsigned long long)f->offset, f->function ? ")" : "");
		if (f->file) {
			sb_puts(sb, " at ");
			put_name(sb, f->file);
			sb_printf(sb, ":%ld", f->line);
		}
		sb_putc(sb, '\n');
		free(name);
		return;
	}
	sb_puts(sb, "    ");
	put_name(sb, f->function);
	sb_puts(sb, " (");
	put_name(sb, f->file ? profile_display_file(f->file, o->full_filenames) : NULL);
	if (f->line >= 0)
		sb_printf(sb, ":%ld", f->line);
	sb_puts(sb, ")\n");
	if (f->source && *f->source && !o->no_source) {
		sb_puts(sb, "        ");
		put_name(sb, f->source);
		sb_putc(sb, '\n');
	}
}

static void text_stack(struct strbuf *sb, const struct job_dump *jd, uint32_t stack,
		       const struct jobview_opts *o)
{
	const struct job_stack *s = &jd->stacks[stack];

	if (!s->n)
		sb_puts(sb, "    (no Python frame)\n");
	for (uint32_t i = 0; i < s->n; i++)
		text_frame(sb, &jd->frames[jd->stackv[s->at + i]], o);
}

/* "MainThread", "Thread-1, Thread-2, pin_memory and 5 more names":
 * names are interned, so distinct ones compare as pointers. */
static void header_names(struct strbuf *sb, const struct job_dump *jd,
			 const struct job_group *g)
{
	const char *seen[HEADER_NAMES];
	size_t nseen = 0, more = 0;

	for (uint32_t k = 0; k < g->n; k++) {
		const char *name = jd->threads[g->threads[k]].name;
		size_t i = 0;

		while (i < nseen && seen[i] != name)
			i++;
		if (i < nseen)
			continue;
		if (nseen == HEADER_NAMES) {
			more++;	/* a name counted twice here is counted twice: a bound, not a set */
			continue;
		}
		if (nseen)
			sb_puts(sb, ", ");
		put_name(sb, name ? name : "(no name)");
		seen[nseen++] = name;
	}
	if (more)
		sb_printf(sb, " and %zu more", more);
}

/* ", idle", ", active", ", 3 of them active". */
static void header_state(struct strbuf *sb, const struct job_dump *jd,
			 const struct job_group *g)
{
	uint32_t active = 0, known = 0;

	for (uint32_t k = 0; k < g->n; k++) {
		int idle = jd->threads[g->threads[k]].idle;

		known += idle >= 0;
		active += idle == 0;
	}
	if (!known)
		return;
	if (!active)
		sb_puts(sb, ", idle");
	else if (active == g->n)
		sb_puts(sb, ", active");
	else
		sb_printf(sb, ", %u of them active", active);
}

static void text_group(struct strbuf *sb, const struct job_grouping *gr,
		       const struct job_group *g, const struct jobview_opts *o)
{
	jobgroup_who(sb, gr, g);
	sb_printf(sb, " (%u process%s", g->nprocs, g->nprocs == 1 ? "" : "es");
	if (g->n != g->nprocs)
		sb_printf(sb, ", %u threads", g->n);
	sb_puts(sb, ", ");
	header_names(sb, gr->jd, g);
	header_state(sb, gr->jd, g);
	sb_puts(sb, ")\n");
	text_stack(sb, gr->jd, g->stack, o);
}

static const char *const tier_titles[TIER_NR] = {
	[TIER_RANK] = "the ranks' other threads",
	[TIER_WORKER] = "workers (DataLoader and the like: they inherited their parent's rank)",
	[TIER_LAUNCHER] = "launchers (torchrun's agent, started by srun)",
	[TIER_NONE] = "processes with no rank (no RANK or SLURM_PROCID in their environment)",
};

/* "job 123: 64 ranks, 80 processes on hnode[1-4], 5 stacks". */
static void text_summary(struct strbuf *sb, const struct job_grouping *gr)
{
	const struct job_dump *jd = gr->jd;
	const char **nodes = xcalloc(jd->nnodes + 1, sizeof(*nodes));
	struct strbuf hosts = STRBUF_INIT;

	size_t n = 0, nerr = 0;

	/* The nodes that answered; the others have a line each below. */
	for (size_t i = 0; i < jd->nnodes; i++) {
		if (jd->nodes[i].error)
			nerr++;
		else
			nodes[n++] = jd->nodes[i].name ? jd->nodes[i].name : "?";
	}
	hostlist_format(&hosts, nodes, n);
	if (jd->job) {
		sb_puts(sb, "job ");
		put_name(sb, jd->job);
		sb_puts(sb, ": ");
	}
	if (gr->nmain)
		sb_printf(sb, "%u rank%s, ", gr->nmain, gr->nmain == 1 ? "" : "s");
	sb_printf(sb, "%zu process%s on ", jd->nprocs, jd->nprocs == 1 ? "" : "es");
	put_name(sb, hosts.buf ? hosts.buf : "no node");
	sb_printf(sb, ", %zu distinct stack%s", gr->n, gr->n == 1 ? "" : "s");
	if (nerr)
		sb_printf(sb, "; %zu did not answer or could not be read", nerr);
	sb_putc(sb, '\n');
	sb_release(&hosts);
	free(nodes);
}

/* Nodes that did not answer, processes that could not be read. */
static void text_unread(struct strbuf *sb, const struct job_grouping *gr)
{
	const struct job_dump *jd = gr->jd;

	for (size_t i = 0; i < jd->nnodes; i++) {
		if (!jd->nodes[i].error)
			continue;
		put_name(sb, jd->nodes[i].name);
		sb_puts(sb, ": ");
		put_name(sb, jd->nodes[i].error);
		sb_putc(sb, '\n');
	}
	for (size_t k = 0; k < gr->nunread; k++) {
		const struct job_proc *p = &jd->procs[gr->unread[k]];
		long rank = jobgroup_rank(gr, gr->unread[k]);

		if (rank >= 0)
			sb_printf(sb, "rank %ld, ", rank);
		sb_printf(sb, "pid %ld on ", p->pid);
		put_name(sb, p->node);
		sb_puts(sb, ": could not be read: ");
		put_name(sb, p->error);
		sb_putc(sb, '\n');
	}
}

void jobview_text(struct strbuf *out, const struct job_grouping *gr,
		  const struct jobview_opts *o)
{
	int tier = -1;

	text_summary(out, gr);
	if (gr->verdict) {
		sb_puts(out, gr->verdict);	/* its names are escaped already */
		sb_putc(out, '\n');
	}
	text_unread(out, gr);
	for (size_t k = 0; k < gr->n; k++) {
		const struct job_group *g = &gr->g[k];

		sb_putc(out, '\n');
		if ((int)g->tier != tier && tier_titles[g->tier])
			sb_printf(out, "--- %s ---\n\n", tier_titles[g->tier]);
		tier = (int)g->tier;
		text_group(out, gr, g, o);
	}
}

/* --- JSON --------------------------------------------------------------- */

static void json_frame(struct json *j, const struct job_frame *f)
{
	static const char *const kinds[] = { [JF_PYTHON] = "python", [JF_NATIVE] = "native",
					     [JF_GC] = "gc" };

	json_obj_begin(j);
	json_kstr(j, "kind", kinds[f->kind]);
	json_kstr(j, "function", f->function);
	if (f->kind == JF_NATIVE) {
		json_kstr(j, "library", f->library);
		json_kuint(j, "offset", f->offset);
	}
	json_kstr(j, "file", f->file);
	json_key(j, "line");
	if (f->line >= 0)
		json_int(j, f->line);
	else
		json_null(j);
	if (f->kind == JF_PYTHON)
		json_kstr(j, "source", f->source);
	json_obj_end(j);
}

static void json_stack(struct json *j, const struct job_dump *jd, uint32_t stack)
{
	const struct job_stack *s = &jd->stacks[stack];

	json_key(j, "frames");
	json_arr_begin(j);
	for (uint32_t i = 0; i < s->n; i++)
		json_frame(j, &jd->frames[jd->stackv[s->at + i]]);
	json_arr_end(j);
}

static void json_long_or_null(struct json *j, const char *key, long v)
{
	json_key(j, key);
	if (v >= 0)
		json_int(j, v);
	else
		json_null(j);
}

/* As dump writes it (design38.md, section 1), for jobdump to read back. */
static void json_ident(struct json *j, const struct jobdump_ident *id)
{
	json_key(j, "job");
	if (!id->present) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_kstr(j, "id", id->id);
	json_kstr(j, "step", id->step);
	json_kstr(j, "node", id->node);
	json_long_or_null(j, "rank", id->rank);
	json_long_or_null(j, "local_rank", id->local_rank);
	json_long_or_null(j, "world_size", id->world_size);
	json_kstr(j, "rank_from", id->rank_from);
	json_obj_end(j);
}

static void json_thread(struct json *j, const struct job_dump *jd, const struct job_thread *t)
{
	json_obj_begin(j);
	json_kint(j, "tid", t->tid);
	json_kstr(j, "name", t->name);
	json_kbool(j, "gil", t->gil);
	json_key(j, "idle");
	if (t->idle >= 0)
		json_bool(j, t->idle);
	else
		json_null(j);
	json_stack(j, jd, t->stack);
	json_obj_end(j);
}

static const char *const role_names[] = {
	[ROLE_NONE] = NULL, [ROLE_MAIN] = "main", [ROLE_WORKER] = "worker",
	[ROLE_LAUNCHER] = "launcher",
};

static void json_proc(struct json *j, const struct job_grouping *gr, uint32_t i)
{
	const struct job_proc *p = &gr->jd->procs[i];

	json_obj_begin(j);
	json_kstr(j, "node", p->node);
	json_kstr(j, "host", p->host);
	json_kint(j, "pid", p->pid);
	json_kint(j, "ppid", p->ppid);
	json_long_or_null(j, "rank", jobgroup_rank(gr, i));
	json_kstr(j, "role", role_names[gr->role[i]]);
	json_ident(j, &p->job);
	json_key(j, "cmdline");
	json_arr_begin(j);
	for (uint32_t k = 0; k < p->argc; k++)
		json_str(j, p->argv[k]);
	json_arr_end(j);
	json_key(j, "python");
	json_obj_begin(j);
	json_kstr(j, "version", p->python);
	json_obj_end(j);
	json_kstr(j, "error", p->error);
	json_key(j, "threads");
	json_arr_begin(j);
	for (uint32_t k = 0; k < p->nthreads; k++)
		json_thread(j, gr->jd, &gr->jd->threads[p->thread0 + k]);
	json_arr_end(j);
	json_obj_end(j);
}

static const char *const tier_names[TIER_NR] = {
	[TIER_MAIN] = "main", [TIER_RANK] = "thread", [TIER_WORKER] = "worker",
	[TIER_LAUNCHER] = "launcher", [TIER_NONE] = "none",
};

static void json_members(struct json *j, const struct job_grouping *gr, const struct job_group *g)
{
	json_key(j, "members");
	json_arr_begin(j);
	for (uint32_t k = 0; k < g->n; k++) {
		const struct job_thread *t = &gr->jd->threads[g->threads[k]];
		const struct job_proc *p = &gr->jd->procs[t->proc];

		json_obj_begin(j);
		json_kstr(j, "node", p->node);
		json_kint(j, "pid", p->pid);
		json_kint(j, "tid", t->tid);
		json_long_or_null(j, "rank", jobgroup_rank(gr, t->proc));
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* "who" and "where" are the text's words; members the ids a script needs. */
static void json_group(struct json *j, const struct job_grouping *gr, const struct job_group *g)
{
	struct strbuf sb = STRBUF_INIT;

	json_obj_begin(j);
	json_kstr(j, "tier", tier_names[g->tier]);
	jobgroup_who(&sb, gr, g);
	json_kstr(j, "who", sb.buf);
	sb.len = 0;
	jobgroup_where(&sb, gr->jd, g->stack);
	json_kstr(j, "where", sb.buf);
	json_kuint(j, "ranks", g->tier == TIER_NONE || g->tier == TIER_LAUNCHER ? 0 : g->nranks);
	json_kuint(j, "processes", g->nprocs);
	json_kuint(j, "threads", g->n);
	json_stack(j, gr->jd, g->stack);
	json_members(j, gr, g);
	json_obj_end(j);
	sb_release(&sb);
}

void jobview_json(struct strbuf *out, const struct job_grouping *gr)
{
	const struct job_dump *jd = gr->jd;
	struct json j;

	json_init(&j, out);
	json_obj_begin(&j);
	json_kstr(&j, "job", jd->job);
	json_kstr(&j, "verdict", gr->verdict);
	json_key(&j, "nodes");
	json_arr_begin(&j);
	for (size_t i = 0; i < jd->nnodes; i++) {
		json_obj_begin(&j);
		json_kstr(&j, "name", jd->nodes[i].name);
		json_kstr(&j, "error", jd->nodes[i].error);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "processes");
	json_arr_begin(&j);
	for (size_t i = 0; i < jd->nprocs; i++)
		json_proc(&j, gr, (uint32_t)i);
	json_arr_end(&j);
	json_key(&j, "groups");
	json_arr_begin(&j);
	for (size_t k = 0; k < gr->n; k++)
		json_group(&j, gr, &gr->g[k]);
	json_arr_end(&j);
	json_obj_end(&j);
	sb_putc(out, '\n');
}
