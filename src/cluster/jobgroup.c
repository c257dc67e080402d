/* Grouping a job's threads by stack, and the verdict (jobgroup.h). */
#include "cluster/jobgroup.h"
#include "cluster/ranges.h"
#include "profile/profile.h"

#include <stdlib.h>
#include <string.h>

/* Named in the verdict before the rest are counted: a line, not a list. */
#define VERDICT_NAMED 3

static uint32_t proc_hash(const char *node, long pid)
{
	return hash_u64((uint64_t)(uintptr_t)node * 0x9e3779b97f4a7c15ull ^ (uint64_t)pid);
}

/* The index of the process pid on node, or -1.  A pid is of its node
 * (two nodes may share a PID namespace): node names are interned, so the
 * pointers compare. */
static long find_proc(const struct job_dump *jd, const struct hashidx *ix, const char *node,
		      long pid)
{
	struct hashidx_pos pos;

	for (uint32_t id = hashidx_first(ix, proc_hash(node, pid), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(ix, &pos))
		if (jd->procs[id].pid == pid && jd->procs[id].node == node)
			return id;
	return -1;
}

static bool from(const struct job_proc *p, const char *how)
{
	return p->job.rank_from && !strcmp(p->job.rank_from, how);
}

/* torchrun's agent is srun's task: SLURM_PROCID gives it the node's
 * index as a rank, which a real rank of torchrun's also has.  It is the
 * parent of ranks torchrun numbered; it is no rank itself. */
static void mark_launchers(struct job_grouping *gr, const struct hashidx *ix)
{
	const struct job_dump *jd = gr->jd;

	for (size_t i = 0; i < jd->nprocs; i++) {
		const struct job_proc *p = &jd->procs[i];
		long pp;

		if (p->job.rank < 0 || !from(p, "torchrun"))
			continue;
		pp = find_proc(jd, ix, p->node, p->ppid);
		if (pp >= 0 && from(&jd->procs[pp], "slurm"))
			gr->role[pp] = ROLE_LAUNCHER;
	}
}

/* A rank's main process is one whose parent is no process of its rank;
 * a DataLoader worker inherits RANK from its parent. */
static void assign_roles(struct job_grouping *gr)
{
	const struct job_dump *jd = gr->jd;
	struct hashidx ix = HASHIDX_INIT;

	for (size_t i = 0; i < jd->nprocs; i++)
		hashidx_add(&ix, proc_hash(jd->procs[i].node, jd->procs[i].pid), (uint32_t)i);
	mark_launchers(gr, &ix);
	for (size_t i = 0; i < jd->nprocs; i++) {
		const struct job_proc *p = &jd->procs[i];
		long pp;

		if (p->job.rank < 0 || gr->role[i] == ROLE_LAUNCHER)
			continue;
		/* pid 1 of a container may be its own parent's number */
		pp = p->ppid && p->ppid != p->pid ? find_proc(jd, &ix, p->node, p->ppid) : -1;
		gr->role[i] = pp >= 0 && gr->role[pp] != ROLE_LAUNCHER &&
			      jd->procs[pp].job.rank == p->job.rank ? ROLE_WORKER : ROLE_MAIN;
	}
	hashidx_release(&ix);
}

long jobgroup_rank(const struct job_grouping *gr, uint32_t proc)
{
	enum job_role r = gr->role[proc];

	return r == ROLE_MAIN || r == ROLE_WORKER ? gr->jd->procs[proc].job.rank : -1;
}

/* The thread a rank's verdict is about: the one whose tid is the pid,
 * else (a dump that lost it) the first. */
static bool is_main_thread(const struct job_dump *jd, uint32_t t)
{
	const struct job_proc *p = &jd->procs[jd->threads[t].proc];

	if (jd->threads[t].main)
		return true;
	for (uint32_t k = p->thread0; k < p->thread0 + p->nthreads; k++)
		if (jd->threads[k].main)
			return false;
	return t == p->thread0;
}

static enum job_tier tier_of(const struct job_grouping *gr, uint32_t t)
{
	switch (gr->role[gr->jd->threads[t].proc]) {
	case ROLE_MAIN:
		return is_main_thread(gr->jd, t) ? TIER_MAIN : TIER_RANK;
	case ROLE_WORKER:
		return TIER_WORKER;
	case ROLE_LAUNCHER:
		return TIER_LAUNCHER;
	default:
		return TIER_NONE;
	}
}

static void add_thread(struct job_grouping *gr, uint32_t t)
{
	uint32_t stack = gr->jd->threads[t].stack, h, id;
	enum job_tier tier = tier_of(gr, t);
	struct hashidx_pos pos;
	struct job_group *g;

	h = hash_u64((uint64_t)stack << 8 | tier);
	for (id = hashidx_first(&gr->ix, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&gr->ix, &pos))
		if (gr->g[id].stack == stack && gr->g[id].tier == tier)
			break;
	if (id == HASHIDX_NONE) {
		ALLOC_GROW(gr->g, gr->n + 1, gr->alloc);
		id = (uint32_t)gr->n++;
		gr->g[id] = (struct job_group){ .stack = stack, .tier = tier };
		hashidx_add(&gr->ix, h, id);
	}
	g = &gr->g[id];
	ALLOC_GROW(g->threads, g->n + 1, g->alloc);
	g->threads[g->n++] = t;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Processes and distinct ranks (or processes, for those with none). */
static void count_group(const struct job_grouping *gr, struct job_group *g, long *tmp)
{
	const struct job_dump *jd = gr->jd;
	uint32_t last = UINT32_MAX, n = 0;

	g->nprocs = 0;
	for (uint32_t k = 0; k < g->n; k++) {
		uint32_t p = jd->threads[g->threads[k]].proc;

		if (p == last)
			continue;	/* a process's threads are added together */
		last = p;
		g->nprocs++;
		tmp[n++] = g->tier == TIER_NONE || g->tier == TIER_LAUNCHER ? (long)p
			   : jd->procs[p].job.rank;
	}
	qsort(tmp, n, sizeof(*tmp), cmp_long);
	g->nranks = 0;
	for (uint32_t k = 0; k < n; k++)
		if (!k || tmp[k] != tmp[k - 1])
			g->nranks++;
}

/* Tier, then the fewest ranks first; ties in the order first read. */
static int cmp_group(const void *a, const void *b)
{
	const struct job_group *x = a, *y = b;

	if (x->tier != y->tier)
		return (int)x->tier - (int)y->tier;
	if (x->nranks != y->nranks)
		return x->nranks < y->nranks ? -1 : 1;
	return x->threads[0] < y->threads[0] ? -1 : x->threads[0] > y->threads[0];
}

/* "rank 3", "ranks 0-2": the word by how many distinct numbers. */
static void put_numbered(struct strbuf *sb, const char *one, const char *many, long *v,
			 size_t n)
{
	size_t distinct = 0;

	qsort(v, n, sizeof(*v), cmp_long);
	for (size_t k = 0; k < n; k++)
		if (!k || v[k] != v[k - 1])
			distinct++;
	sb_printf(sb, "%s ", distinct == 1 ? one : many);
	ranges_format(sb, v, n);
}

static const struct {
	const char *one, *many;
	bool by_pid;
} tier_words[TIER_NR] = {
	[TIER_MAIN] = { "rank", "ranks", false },
	[TIER_RANK] = { "rank", "ranks", false },
	[TIER_WORKER] = { "rank", "ranks", false },	/* after "worker(s) of" */
	[TIER_LAUNCHER] = { "launcher pid", "launchers, pids", true },
	[TIER_NONE] = { "pid", "pids", true },
};

/* Who the n processes procs are, as a group of tier tier; all: "all 4
 * ranks", the numbers left out. */
static void who_procs(struct strbuf *sb, const struct job_grouping *gr, enum job_tier tier,
		      const uint32_t *procs, size_t n, bool all)
{
	const struct job_dump *jd = gr->jd;
	long *nums = xcalloc(n ? n : 1, sizeof(*nums));
	const char **nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	struct strbuf hosts = STRBUF_INIT;

	for (size_t k = 0; k < n; k++) {
		const struct job_proc *p = &jd->procs[procs[k]];

		nums[k] = tier_words[tier].by_pid ? p->pid : p->job.rank;
		nodes[k] = p->node ? p->node : "?";
	}
	if (tier == TIER_WORKER)
		sb_puts(sb, n == 1 ? "worker of " : "workers of ");
	if (all)
		sb_printf(sb, "all %u %s", gr->nmain, tier_words[tier].many);
	else
		put_numbered(sb, tier_words[tier].one, tier_words[tier].many, nums, n);
	hostlist_format(&hosts, nodes, n);
	sb_puts(sb, " on ");
	sb_add_printable(sb, hosts.buf ? hosts.buf : "?");
	sb_release(&hosts);
	free(nodes);
	free(nums);
}

/* The group's processes, each once (its threads are neighbours). */
static uint32_t *group_procs(const struct job_dump *jd, const struct job_group *g, size_t *n)
{
	uint32_t *procs = xcalloc(g->n ? g->n : 1, sizeof(*procs));

	*n = 0;
	for (uint32_t k = 0; k < g->n; k++) {
		uint32_t p = jd->threads[g->threads[k]].proc;

		if (!*n || procs[*n - 1] != p)
			procs[(*n)++] = p;
	}
	return procs;
}

void jobgroup_who(struct strbuf *sb, const struct job_grouping *gr, const struct job_group *g)
{
	size_t n;
	uint32_t *procs = group_procs(gr->jd, g, &n);

	who_procs(sb, gr, g->tier, procs, n, false);
	free(procs);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

void jobgroup_where(struct strbuf *sb, const struct job_dump *jd, uint32_t stack)
{
	const struct job_frame *f = jobdump_innermost(jd, stack);
	const struct job_stack *s = &jd->stacks[stack];

	if (!f) {
		sb_puts(sb, s->n ? "in native code" : "with no Python frame");
		return;
	}
	sb_puts(sb, "in ");
	sb_add_printable(sb, f->function ? f->function : "?");
	sb_puts(sb, " (");
	sb_add_printable(sb, f->file ? base_name(f->file) : "?");
	if (f->line >= 0)
		sb_printf(sb, ":%ld", f->line);
	sb_putc(sb, ')');
}

/* "rank 3 on hnode2 differs: in fetch_shard (train.py:10)". */
static void clause(struct strbuf *sb, const struct job_grouping *gr, const struct job_group *g,
		   bool differs)
{
	jobgroup_who(sb, gr, g);
	if (differs)
		sb_puts(sb, g->nranks == 1 ? " differs:" : " differ:");
	sb_putc(sb, ' ');
	jobgroup_where(sb, gr->jd, g->stack);
}

/* The rank processes that could not be read: a rank whose stack is not
 * known differs from every rank whose stack is. */
static void unread_clause(struct strbuf *sb, const struct job_grouping *gr)
{
	uint32_t *procs = xcalloc(gr->nunread + 1, sizeof(*procs));
	size_t n = 0;

	for (size_t k = 0; k < gr->nunread; k++)
		if (gr->role[gr->unread[k]] == ROLE_MAIN)
			procs[n++] = gr->unread[k];
	if (n) {
		if (sb->len)
			sb_puts(sb, "; ");
		who_procs(sb, gr, TIER_MAIN, procs, n, false);
		sb_puts(sb, n == 1 ? " could not be read: " : " could not be read, the first: ");
		sb_add_printable(sb, gr->jd->procs[procs[0]].error);
	}
	free(procs);
}

/* Minority first, VERDICT_NAMED of them, then the rest counted, the
 * unread, and the majority last: the odd ones are what the line is for. */
static void verdict_split(struct strbuf *sb, const struct job_grouping *gr, size_t m, bool tie)
{
	size_t named = tie || !m ? m : m - 1, more = 0, more_ranks = 0;

	if (tie)
		sb_puts(sb, "no majority: ");
	for (size_t k = 0; k < named; k++) {
		if (k >= VERDICT_NAMED) {
			more++;
			more_ranks += gr->g[k].nranks;
			continue;
		}
		if (k)
			sb_puts(sb, "; ");
		clause(sb, gr, &gr->g[k], !tie);
	}
	if (more)
		sb_printf(sb, "; and %zu more stack%s (%zu rank%s)", more, more == 1 ? "" : "s",
			  more_ranks, more_ranks == 1 ? "" : "s");
	unread_clause(sb, gr);
	if (!tie && m) {
		if (sb->len)
			sb_puts(sb, "; ");
		clause(sb, gr, &gr->g[m - 1], false);
	}
}

/* From the ranks' main threads, which are the first m groups. */
static char *verdict(const struct job_grouping *gr)
{
	struct strbuf sb = STRBUF_INIT;
	size_t m = 0;
	bool unread = false;

	while (m < gr->n && gr->g[m].tier == TIER_MAIN)
		m++;
	for (size_t k = 0; k < gr->nunread; k++)
		unread |= gr->role[gr->unread[k]] == ROLE_MAIN;
	if (!m && !unread)
		return NULL;
	if (m == 1 && !unread) {
		size_t n;
		uint32_t *procs = group_procs(gr->jd, &gr->g[0], &n);

		who_procs(&sb, gr, TIER_MAIN, procs, n, gr->nmain > 1);
		sb_putc(&sb, ' ');
		jobgroup_where(&sb, gr->jd, gr->g[0].stack);
		free(procs);
		return sb_detach(&sb);
	}
	/* Ties are read in order, so the last of the largest is a majority
	 * only when the one before it is smaller. */
	verdict_split(&sb, gr, m, m >= 2 && gr->g[m - 2].nranks == gr->g[m - 1].nranks);
	return sb_detach(&sb);
}

static void count_main(struct job_grouping *gr)
{
	const struct job_dump *jd = gr->jd;
	long *ranks = xcalloc(jd->nprocs + 1, sizeof(*ranks));
	size_t n = 0;

	for (size_t i = 0; i < jd->nprocs; i++)
		if (gr->role[i] == ROLE_MAIN)
			ranks[n++] = jd->procs[i].job.rank;
	qsort(ranks, n, sizeof(*ranks), cmp_long);
	gr->nmain = 0;
	for (size_t k = 0; k < n; k++)
		if (!k || ranks[k] != ranks[k - 1])
			gr->nmain++;
	free(ranks);
}

void jobgroup_build(struct job_grouping *gr, const struct job_dump *jd)
{
	long *tmp = xcalloc(jd->nthreads + 1, sizeof(*tmp));

	memset(gr, 0, sizeof(*gr));
	gr->jd = jd;
	gr->role = xcalloc(jd->nprocs + 1, sizeof(*gr->role));
	gr->unread = xcalloc(jd->nprocs + 1, sizeof(*gr->unread));
	assign_roles(gr);
	for (size_t i = 0; i < jd->nprocs; i++) {
		if (!jd->procs[i].error)
			continue;
		gr->unread[gr->nunread++] = (uint32_t)i;
	}
	for (size_t t = 0; t < jd->nthreads; t++)
		add_thread(gr, (uint32_t)t);
	hashidx_release(&gr->ix);
	for (size_t k = 0; k < gr->n; k++)
		count_group(gr, &gr->g[k], tmp);
	if (gr->n)	/* qsort() of NULL is undefined, even of nothing */
		qsort(gr->g, gr->n, sizeof(*gr->g), cmp_group);
	count_main(gr);
	gr->verdict = verdict(gr);
	free(tmp);
}

void jobgroup_release(struct job_grouping *gr)
{
	for (size_t k = 0; k < gr->n; k++)
		free(gr->g[k].threads);
	free(gr->g);
	free(gr->role);
	free(gr->unread);
	free(gr->verdict);
	hashidx_release(&gr->ix);
	memset(gr, 0, sizeof(*gr));
}
