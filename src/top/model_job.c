/* top --slurm in the model (top/model.h): the threads of every node of a
 * job, each placed on its node and rank, and the views T steps through.
 *
 * A node's reply carries its samples since the last one, per (stack,
 * thread); they become runs of the model's profile, which the interval
 * takes as it takes a local sampler's.  pids and tids are the node's own:
 * two nodes may use the same ones, so a thread is known by (node, pid,
 * tid), never by its ids alone.
 */
#include "top/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *printable(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	sb_add_printable(&sb, s ? s : "?");
	return sb_detach(&sb);
}

void top_job_init(struct top_model *m, const char *spec, const char *nodelist,
		  char *const *nodes, int nnodes)
{
	struct top_job *j = xcalloc(1, sizeof(*j));

	j->spec = printable(spec);
	j->nodelist = printable(nodelist);
	j->nodes = xcalloc(nnodes > 0 ? (size_t)nnodes : 1, sizeof(*j->nodes));
	j->nnodes = nnodes;
	for (int i = 0; i < nnodes; i++)
		j->nodes[i].name = printable(nodes[i]);
	j->node_sel = -1;
	j->rank_sel = -1;
	m->job = j;
	/* Processes are many, and each is shown apart. */
	m->subprocesses = true;
}

void top_job_free(struct top_model *m)
{
	struct top_job *j = m->job;

	if (!j)
		return;
	for (int i = 0; i < j->nnodes; i++) {
		top_job_node_gpus(m, i, NULL, 0, NULL);
		free(j->nodes[i].name);
	}
	free(j->nodes);
	free(j->place);
	hashidx_release(&j->index);
	free(j->spec);
	free(j->nodelist);
	free(j);
	m->job = NULL;
}

/* --- threads and samples ---------------------------------------------------- */

static uint32_t place_hash(int node, pid_t pid, pid_t tid)
{
	return hash_u64((uint64_t)(uint32_t)node << 40 ^ (uint64_t)(uint32_t)pid << 20 ^
			(uint64_t)(uint32_t)tid);
}

/* The model's thread for node's (pid, tid), made the first time. */
static uint32_t job_thread(struct top_model *m, int node, const struct pthread_info *ti,
			   long rank)
{
	struct top_job *j = m->job;
	uint32_t h = place_hash(node, ti->pid, ti->tid), id;
	struct hashidx_pos pos;

	for (id = hashidx_first(&j->index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&j->index, &pos)) {
		struct pthread_info *t = &m->p.threads[id];

		if (j->place[id].node != node || t->pid != ti->pid || t->tid != ti->tid)
			continue;
		j->place[id].rank = rank;
		/* Threads are named late (threading sets the name after start). */
		if (ti->name && (!t->name || strcmp(t->name, ti->name))) {
			free(t->name);
			t->name = xstrdup(ti->name);
		}
		return id;
	}
	id = profile_thread_new(&m->p, ti->pid, ti->tid, ti->name);
	ALLOC_GROW(j->place, id + 1, j->place_alloc);
	for (; j->nplace <= id; j->nplace++)
		j->place[j->nplace] = (struct top_place){ -1, -1 };
	j->place[id] = (struct top_place){ node, rank };
	hashidx_add(&j->index, h, id);
	return id;
}

/* src's stacks as the model's: each frame interned, then the stack. */
static uint32_t *map_stacks(struct top_model *m, const struct profile *src)
{
	uint32_t *frame = xmalloc((src->nframes ? src->nframes : 1) * sizeof(*frame));
	uint32_t *stack = xmalloc((src->nstacks ? src->nstacks : 1) * sizeof(*stack));
	uint32_t *buf = NULL, cap = 0;

	for (uint32_t i = 0; i < src->nframes; i++)
		frame[i] = profile_frame(&m->p, &src->frames[i]);
	for (uint32_t i = 0; i < src->nstacks; i++) {
		const struct pstack *s = &src->stacks[i];

		ALLOC_GROW(buf, s->depth + 1, cap);
		for (uint32_t d = 0; d < s->depth; d++)
			buf[d] = frame[s->frames[d]];
		stack[i] = profile_stack(&m->p, buf, s->depth);
	}
	free(buf);
	free(frame);
	return stack;
}

static void add_run(struct profile *p, uint32_t thread, uint32_t stack, uint64_t count)
{
	ALLOC_GROW(p->runs, p->nruns + 1, p->runs_cap);
	p->runs[p->nruns++] = (struct prun){ thread, stack, 0, 0,
					     count > UINT32_MAX ? UINT32_MAX : (uint32_t)count };
	p->threads[thread].samples += count;
	p->samples += count;
}

void top_job_add(struct top_model *m, int node, const struct profile *src,
		 long (*rank_of)(void *arg, pid_t pid), void *arg)
{
	uint32_t *stack;

	if (!m->job || node < 0 || node >= m->job->nnodes)
		return;
	stack = map_stacks(m, src);
	for (uint32_t i = 0; i < src->nstack_threads; i++) {
		const struct pstack_thread *st = &src->stack_threads[i];
		const struct pthread_info *ti;

		if (st->thread >= src->nthreads || st->stack >= src->nstacks || !st->count)
			continue;
		ti = &src->threads[st->thread];
		add_run(&m->p, job_thread(m, node, ti, rank_of(arg, ti->pid)), stack[st->stack],
			st->count);
	}
	free(stack);
}

/* --- the nodes -------------------------------------------------------------- */

void top_job_node_seen(struct top_model *m, int node, uint64_t now, int ranks, int procs,
		       int threads)
{
	struct top_node *n;

	if (!m->job || node < 0 || node >= m->job->nnodes)
		return;
	n = &m->job->nodes[node];
	n->last_ns = now;
	n->ranks = ranks;
	n->procs = procs;
	n->threads = threads;
	n->late = false;
}

void top_job_node_gone(struct top_model *m, int node, bool ended)
{
	if (!m->job || node < 0 || node >= m->job->nnodes)
		return;
	m->job->nodes[node].gone = true;
	m->job->nodes[node].ended |= ended;
}

int top_job_check(struct top_model *m, uint64_t now, uint64_t start, uint64_t first_ns,
		  uint64_t late_ns)
{
	int missing = 0;

	for (int i = 0; m->job && i < m->job->nnodes; i++) {
		struct top_node *n = &m->job->nodes[i];
		uint64_t last = n->last_ns ? n->last_ns : start, wait = n->last_ns ? late_ns : first_ns;

		n->late = now > last && now - last > wait;
		missing += n->late || n->gone;
	}
	return missing;
}

void top_job_header(const struct top_model *m, struct strbuf *sb)
{
	const struct top_job *j = m->job;
	int answer = 0, ranks = 0;

	for (int i = 0; i < j->nnodes; i++) {
		const struct top_node *n = &j->nodes[i];

		if (n->last_ns && !n->late && !n->gone) {
			answer++;
			ranks += n->ranks;
		}
	}
	sb_printf(sb, "Slurm job %s on %s: %d of %d node%s, %d rank%s", j->spec, j->nodelist,
		  answer, j->nnodes, j->nnodes == 1 ? "" : "s", ranks, ranks == 1 ? "" : "s");
}

/* The names of the nodes for which is(n) holds, after what. */
static void names(const struct top_job *j, bool (*is)(const struct top_node *),
		  const char *what, struct strbuf *sb)
{
	int k = 0;

	for (int i = 0; i < j->nnodes; i++) {
		if (!is(&j->nodes[i]))
			continue;
		sb_puts(sb, k++ ? ", " : sb->len ? "; " : "");
		if (k == 1)
			sb_puts(sb, what);
		sb_puts(sb, j->nodes[i].name);
	}
}

static bool is_gone(const struct top_node *n)
{
	return n->gone && !n->ended;
}

static bool is_ended(const struct top_node *n)
{
	return n->ended;
}

static bool is_late(const struct top_node *n)
{
	return n->late && !n->gone && n->last_ns;
}

static bool is_waited(const struct top_node *n)
{
	return n->late && !n->gone && !n->last_ns;
}

void top_job_missing(const struct top_model *m, struct strbuf *sb)
{
	names(m->job, is_ended, "the job's processes ended on: ", sb);
	names(m->job, is_gone, "stopped answering: ", sb);
	names(m->job, is_late, "not answering: ", sb);
	names(m->job, is_waited, "never answered: ", sb);
}

/* --- the views -------------------------------------------------------------- */

bool top_job_narrowed(const struct top_model *m)
{
	return m->job && (m->job->node_sel >= 0 || m->job->rank_sel >= 0);
}

bool top_job_shows(const struct top_model *m, uint32_t t)
{
	const struct top_job *j = m->job;
	const struct top_place *pl = t < j->nplace ? &j->place[t] : NULL;

	if (j->node_sel >= 0 && (!pl || pl->node != j->node_sel))
		return false;
	return j->rank_sel < 0 || (pl && pl->rank == j->rank_sel);
}

/* T's order of threads: by node, rank, pid and tid. */
static bool job_before(const struct top_model *m, uint32_t a, uint32_t b)
{
	const struct top_place *x = &m->job->place[a], *y = &m->job->place[b];
	const struct pthread_info *s = &m->p.threads[a], *t = &m->p.threads[b];

	if (x->node != y->node)
		return x->node < y->node;
	if (x->rank != y->rank)
		return x->rank < y->rank;
	if (s->pid != t->pid)
		return s->pid < t->pid;
	return s->tid != t->tid ? s->tid < t->tid : a < b;
}

/* The thread after cur (-1: the first), or -1 after the last. */
static int next_thread(const struct top_model *m, int cur)
{
	int best = -1;

	for (uint32_t i = 0; i < m->job->nplace && i < m->p.nthreads; i++) {
		if (m->job->place[i].node < 0 || (cur >= 0 && !job_before(m, (uint32_t)cur, i)))
			continue;
		if (best < 0 || job_before(m, i, (uint32_t)best))
			best = (int)i;
	}
	return best;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The smallest rank above after, or -1; *count ranks in all, *pos the
 * position of after among them.  Sorted once per call: a job has
 * thousands of threads, and T is pressed by hand. */
static long next_rank(const struct top_model *m, long after, int *count, int *pos)
{
	const struct top_job *j = m->job;
	long *r = xmalloc((j->nplace ? j->nplace : 1) * sizeof(*r)), best = -1;
	uint32_t n = 0;

	for (uint32_t i = 0; i < j->nplace; i++)
		if (j->place[i].rank >= 0)
			r[n++] = j->place[i].rank;
	qsort(r, n, sizeof(*r), cmp_long);
	*count = *pos = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (i && r[i] == r[i - 1])
			continue;
		(*count)++;
		*pos += r[i] <= after;
		if (r[i] > after && best < 0)
			best = r[i];
	}
	free(r);
	return best;
}

static void step_view(struct top_model *m)
{
	struct top_job *j = m->job;
	int count, pos;

	if (m->thread_sel < 0 && j->rank_sel < 0) {
		if (j->nnodes > 1 && j->node_sel + 1 < j->nnodes) {
			j->node_sel++;
			return;
		}
		j->node_sel = -1;
	}
	if (m->thread_sel < 0) {
		j->rank_sel = next_rank(m, j->rank_sel, &count, &pos);
		if (j->rank_sel >= 0)
			return;
	}
	m->thread_sel = next_thread(m, m->thread_sel);
}

/* The GPUs shown follow the view: a node's, a rank's. */
void top_job_next_view(struct top_model *m)
{
	step_view(m);
	top_job_gpu_lines(m);
}

/* The node a rank runs on: its first thread's. */
static const char *rank_node(const struct top_job *j, long rank)
{
	for (uint32_t i = 0; i < j->nplace; i++)
		if (j->place[i].rank == rank && j->place[i].node >= 0)
			return j->nodes[j->place[i].node].name;
	return "?";
}

static void describe_thread(const struct top_model *m, bool position, struct strbuf *sb)
{
	const struct top_place *pl = &m->job->place[m->thread_sel];
	const struct pthread_info *th = &m->p.threads[m->thread_sel];
	int count = 0, pos = 0;

	sb_printf(sb, "thread %d", (int)th->tid);
	if (th->name) {
		sb_puts(sb, " \"");
		sb_add_printable(sb, th->name);
		sb_putc(sb, '"');
	}
	if (pl->rank >= 0)
		sb_printf(sb, " of rank %ld", pl->rank);
	else
		sb_printf(sb, " of process %d", (int)th->pid);
	sb_printf(sb, " on %s", m->job->nodes[pl->node].name);
	for (uint32_t t = 0; t < m->job->nplace && t < m->p.nthreads; t++) {
		if (m->job->place[t].node < 0)
			continue;
		count++;
		pos += t == (uint32_t)m->thread_sel || job_before(m, t, (uint32_t)m->thread_sel);
	}
	if (position)
		sb_printf(sb, " (%d of %d)", pos, count);
}

bool top_job_describe(const struct top_model *m, bool position, struct strbuf *sb)
{
	const struct top_job *j = m->job;
	int count, pos;

	if (!j)
		return false;
	if (m->thread_sel >= 0 && (uint32_t)m->thread_sel < j->nplace) {
		describe_thread(m, position, sb);
	} else if (j->rank_sel >= 0) {
		next_rank(m, j->rank_sel, &count, &pos);
		sb_printf(sb, "rank %ld on %s", j->rank_sel, rank_node(j, j->rank_sel));
		if (position)
			sb_printf(sb, " (%d of %d)", pos, count);
	} else if (j->node_sel >= 0) {
		sb_printf(sb, "node %s", j->nodes[j->node_sel].name);
		if (position)
			sb_printf(sb, " (%d of %d)", j->node_sel + 1, j->nnodes);
	} else {
		sb_puts(sb, "all ranks");
	}
	return true;
}

/* --- the GPUs (--gpu) ------------------------------------------------------- */

#define GIB (1024.0 * 1024 * 1024)
/* A reading this old: the node's driver does not answer (single-host
 * top's rule, analysis/gpusample.c). */
#define LATE_S 2

static void gpu_copy(struct top_gpu *to, const struct top_gpu *from)
{
	int k = 0;

	*to = *from;
	to->name = printable(from->name ? from->name : "GPU");
	to->lost = from->lost ? printable(from->lost) : NULL;
	to->ranks = xmalloc((from->nranks > 0 ? (size_t)from->nranks : 1) * sizeof(long));
	if (from->nranks > 0)
		memcpy(to->ranks, from->ranks, (size_t)from->nranks * sizeof(long));
	qsort(to->ranks, from->nranks > 0 ? (size_t)from->nranks : 0, sizeof(long), cmp_long);
	for (int i = 0; i < from->nranks; i++)
		if (!k || to->ranks[k - 1] != to->ranks[i])
			to->ranks[k++] = to->ranks[i];
	to->nranks = k;
}

void top_gpus_free(struct top_gpu *g, int n)
{
	for (int i = 0; i < n; i++) {
		free(g[i].name);
		free(g[i].lost);
		free(g[i].ranks);
	}
	free(g);
}

void top_job_node_gpus(struct top_model *m, int node, const struct top_gpu *gpus, int n,
		       const char *note)
{
	struct top_node *nd;

	if (!m->job || node < 0 || node >= m->job->nnodes)
		return;
	nd = &m->job->nodes[node];
	top_gpus_free(nd->gpus, nd->ngpus);
	free(nd->gpu_note);
	nd->gpus = NULL;
	nd->gpu_note = NULL;
	nd->ngpus = 0;
	nd->gpu_known = gpus || note;
	if (n < 0 || !gpus) {
		nd->gpu_note = note ? printable(note) : NULL;
		return;
	}
	nd->gpus = xcalloc(n > 0 ? (size_t)n : 1, sizeof(*nd->gpus));
	for (; nd->ngpus < n; nd->ngpus++)
		gpu_copy(&nd->gpus[nd->ngpus], &gpus[nd->ngpus]);
}

/* " rank 3", " ranks 0-2,5": runs of consecutive ranks as ranges. */
static void put_ranks(struct strbuf *sb, const long *r, int n)
{
	sb_puts(sb, n == 1 ? " rank " : " ranks ");
	for (int i = 0; i < n;) {
		int k = i;

		while (k + 1 < n && r[k + 1] == r[k] + 1)
			k++;
		sb_printf(sb, "%s%ld", i ? "," : "", r[i]);
		if (k > i)
			sb_printf(sb, "-%ld", r[k]);
		i = k + 1;
	}
}

/* Who is on it: the job's ranks, its processes without one, others. */
static void put_users(struct strbuf *sb, const struct top_gpu *g)
{
	if (g->nranks)
		put_ranks(sb, g->ranks, g->nranks);
	if (g->unranked)
		sb_printf(sb, "%s %d process%s of the job", g->nranks ? "," : "", g->unranked,
			  g->unranked == 1 ? "" : "es");
	if (g->others)
		sb_printf(sb, "%s %d other%s", g->nranks || g->unranked ? "," : "", g->others,
			  g->others == 1 ? "" : "s");
	if (!g->nranks && !g->unranked && !g->others)
		sb_puts(sb, " idle");
}

/* Why a node has no figures to show, or NULL when it has. */
static const char *no_figures(const struct top_node *n)
{
	if (n->late || n->gone)
		return "no GPU figures (the node does not answer)";
	if (!n->gpu_known)
		return "no GPU figures yet";
	return NULL;
}

/* A node's line in the view of all ranks: each GPU short. */
static void node_line(const struct top_node *n, struct strbuf *sb)
{
	const char *why = no_figures(n);

	sb_printf(sb, "%s: ", n->name);
	if (why || n->gpu_note) {
		sb_printf(sb, "%s%s\n", why ? why : "no GPU figures: ", why ? "" : n->gpu_note);
		return;
	}
	if (!n->ngpus)
		sb_puts(sb, "no GPU");
	for (int i = 0; i < n->ngpus; i++) {
		const struct top_gpu *g = &n->gpus[i];

		sb_printf(sb, "%sGPU %u", i ? "; " : "", g->index);
		if (g->lost)
			sb_puts(sb, " lost");
		else if (g->gpu_pct < 0)
			sb_puts(sb, " no reading");
		else
			sb_printf(sb, " %d%% %.1f GiB", g->gpu_pct, g->mem_used / GIB);
		if (!g->lost && g->gpu_pct >= 0 && g->age_s > LATE_S)
			sb_printf(sb, " (%u s old)", g->age_s);
		if (g->nranks)
			put_ranks(sb, g->ranks, g->nranks);
	}
	sb_putc(sb, '\n');
}

/* Is a busier than b to the eye of one looking for the odd GPU: one that
 * runs ranks of the job and idles is what a stalled rank leaves. */
static bool less_busy(const struct top_gpu *a, const struct top_gpu *b)
{
	if (!b)
		return true;
	if (!a->nranks != !b->nranks)
		return a->nranks > 0;
	return a->gpu_pct < b->gpu_pct;
}

/* The job's GPUs in one line: how many, their mean, their memory, and
 * the least busy of those the ranks are on. */
static void summary_line(const struct top_job *j, struct strbuf *sb)
{
	const struct top_gpu *least = NULL;
	const char *least_node = NULL;
	int ngpus = 0, nnodes = 0, nread = 0;
	double sum = 0, used = 0, total = 0;

	for (int i = 0; i < j->nnodes; i++) {
		const struct top_node *n = &j->nodes[i];

		if (no_figures(n) || !n->ngpus)
			continue;
		nnodes++;
		for (int k = 0; k < n->ngpus; k++) {
			const struct top_gpu *g = &n->gpus[k];

			ngpus++;
			if (g->lost || g->gpu_pct < 0)
				continue;
			nread++;
			sum += g->gpu_pct;
			used += (double)g->mem_used;
			total += (double)g->mem_total;
			if (less_busy(g, least)) {
				least = g;
				least_node = n->name;
			}
		}
	}
	if (!ngpus) {
		sb_puts(sb, "GPUs: none on the nodes that answer\n");
		return;
	}
	sb_printf(sb, "GPUs: %d on %d node%s", ngpus, nnodes, nnodes == 1 ? "" : "s");
	if (!nread) {
		sb_puts(sb, ", no reading yet\n");
		return;
	}
	sb_printf(sb, ", %.0f%% busy on average, %.1f of %.1f GiB used; least busy: GPU %u on "
		  "%s, %d%%", sum / nread, used / GIB, total / GIB, least->index, least_node,
		  least->gpu_pct);
	if (least->nranks)
		put_ranks(sb, least->ranks, least->nranks);
	sb_putc(sb, '\n');
}

/* One GPU in full, as single-host top shows it, with its node and users. */
static void gpu_line(const struct top_node *n, const struct top_gpu *g, struct strbuf *sb)
{
	sb_printf(sb, "GPU %u (%s) on %s: ", g->index, g->name, n->name);
	if (g->lost)
		sb_printf(sb, "lost (%s),", g->lost);
	else if (g->gpu_pct < 0)
		sb_puts(sb, "no reading yet,");
	else
		sb_printf(sb, "%d%% busy, memory %d%% busy, %.1f of %.1f GiB%s", g->gpu_pct,
			  g->mem_pct, g->mem_used / GIB, g->mem_total / GIB,
			  g->age_s > LATE_S ? "" : ",");
	if (!g->lost && g->gpu_pct >= 0 && g->age_s > LATE_S)
		sb_printf(sb, " (no answer for %u s),", g->age_s);
	put_users(sb, g);
	sb_putc(sb, '\n');
}

static bool on_gpu(const struct top_gpu *g, long rank)
{
	for (int i = 0; i < g->nranks; i++)
		if (g->ranks[i] == rank)
			return true;
	return false;
}

/* The GPUs of one node: with rank >= 0, those the rank is on (all of
 * them when it is on none that NVML names). */
static void node_gpus(const struct top_node *n, long rank, struct strbuf *sb)
{
	bool any = false;
	int shown = 0;

	if (no_figures(n) || n->gpu_note || !n->ngpus) {
		node_line(n, sb);
		return;
	}
	for (int i = 0; i < n->ngpus && rank >= 0 && !any; i++)
		any = on_gpu(&n->gpus[i], rank);
	for (int i = 0; i < n->ngpus; i++) {
		if (any && !on_gpu(&n->gpus[i], rank))
			continue;
		if (shown++ == TOP_GPU_LINES - 1 && i + 1 < n->ngpus) {
			sb_printf(sb, "and %d more GPUs on %s\n", n->ngpus - i, n->name);
			return;
		}
		gpu_line(n, &n->gpus[i], sb);
	}
}

/* The view of all ranks: the summary, then a line a node, as many as fit. */
static void job_gpus(const struct top_job *j, struct strbuf *sb)
{
	summary_line(j, sb);
	for (int i = 0; i < j->nnodes; i++) {
		if (i == TOP_GPU_LINES - 2 && j->nnodes > TOP_GPU_LINES - 1) {
			sb_printf(sb, "and %d more nodes: T shows each node's GPUs\n", j->nnodes - i);
			return;
		}
		node_line(&j->nodes[i], sb);
	}
}

static void set_lines(struct top_model *m, const char *text)
{
	for (int i = 0; i < m->ngpu; i++)
		free(m->gpu[i]);
	m->ngpu = 0;
	while (*text && m->ngpu < TOP_GPU_LINES) {
		const char *nl = strchrnul(text, '\n');

		m->gpu[m->ngpu++] = xstrndup(text, (size_t)(nl - text));
		text = *nl ? nl + 1 : nl;
	}
}

void top_job_gpu_lines(struct top_model *m)
{
	const struct top_job *j = m->job;
	struct strbuf sb = STRBUF_INIT;
	int node = -1;
	long rank = -1;

	if (!j || !j->gpu)
		return;
	if (m->thread_sel >= 0 && (uint32_t)m->thread_sel < j->nplace) {
		node = j->place[m->thread_sel].node;
		rank = j->place[m->thread_sel].rank;
	} else if (j->rank_sel >= 0) {
		rank = j->rank_sel;
		for (uint32_t i = 0; i < j->nplace && node < 0; i++)
			if (j->place[i].rank == rank)
				node = j->place[i].node;
	} else {
		node = j->node_sel;
	}
	if (node >= 0 && node < j->nnodes)
		node_gpus(&j->nodes[node], rank, &sb);
	else
		job_gpus(j, &sb);
	set_lines(m, sb.buf ? sb.buf : "");
	sb_release(&sb);
}
