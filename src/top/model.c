/* What top shows, computed from samples; see model.h. */
#include "top/model.h"
#include "util/escape.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const top_sort_names[TOP_SORT_COUNT] = {
	"%Own", "%Total", "OwnTime", "TotalTime",
};

static char *printable(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	sb_add_printable(&sb, s ? s : "?");
	return sb_detach(&sb);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0;
}

void top_model_init(struct top_model *m, double rate_hz, double delay_s)
{
	memset(m, 0, sizeof(*m));
	profile_init(&m->p, rate_hz);
	profile_init(&m->funcs, rate_hz);
	m->delay_s = delay_s;
	m->sort = TOP_SORT_OWN_TIME;
	m->thread_sel = -1;
	m->exit_status = -1;
	m->live.gil_pct = m->live.active_pct = m->live.error_pct = m->live.attached = -1;
	m->shown = m->live;
}

static void labels_free(struct top_labels *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		free(l->label[i]);
	free(l->label);
}

void top_model_set_gpu(struct top_model *m, const char *text)
{
	for (int i = 0; i < m->ngpu; i++)
		free(m->gpu[i]);
	m->ngpu = 0;
	while (*text && m->ngpu < TOP_GPU_LINES) {
		const char *nl = strchrnul(text, '\n');
		struct strbuf sb = STRBUF_INIT;

		sb_add_escaped(&sb, text, (size_t)(nl - text), ESC_TEXT);
		m->gpu[m->ngpu++] = sb_detach(&sb);
		text = *nl ? nl + 1 : nl;
	}
}

void top_model_free(struct top_model *m)
{
	labels_free(&m->frame_labels);
	labels_free(&m->func_labels);
	free(m->func_of);
	free(m->entries);
	hashidx_release(&m->entry_index);
	free(m->rows);
	free(m->what);
	free(m->version);
	top_model_set_gpu(m, "");
	top_job_free(m);
	profile_free(&m->funcs);
	profile_free(&m->p);
}

void top_model_set_target(struct top_model *m, pid_t pid, char **argv, int argc)
{
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; argv && i < argc && argv[i]; i++) {
		if (i)
			sb_putc(&sb, ' ');
		sb_add_printable(&sb, argv[i]);
	}
	if (!argv || !argc)
		sb_puts(&sb, "?");
	m->pid = pid;
	free(m->what);
	m->what = sb_detach(&sb);
}

/* --- samples per (thread, stack) ------------------------------------------ */

static struct top_entry *entry_get(struct top_model *m, uint32_t thread, uint32_t stack)
{
	uint32_t h = hash_u64((uint64_t)thread << 32 | stack), id;
	struct hashidx_pos pos;
	struct top_entry *e;

	for (id = hashidx_first(&m->entry_index, h, &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&m->entry_index, &pos)) {
		e = &m->entries[id];
		if (e->thread == thread && e->stack == stack)
			return e;
	}
	ALLOC_GROW(m->entries, m->nentries + 1, m->entries_alloc);
	id = m->nentries++;
	e = &m->entries[id];
	memset(e, 0, sizeof(*e));
	e->thread = thread;
	e->stack = stack;
	hashidx_add(&m->entry_index, h, id);
	return e;
}

/* Move the samples since the last look from the profile's runs into the
 * entries' cumulative counts (with cum) and those of the last interval
 * (with last), and drop the runs: top needs no timeline. */
static void take_runs(struct top_model *m, bool cum, bool last)
{
	struct profile *p = &m->p;

	for (uint32_t i = 0; i < p->nruns && (cum || last); i++) {
		const struct prun *r = &p->runs[i];
		struct top_entry *e = entry_get(m, r->thread, r->stack);

		if (cum)
			e->cum += r->samples;
		if (last)
			e->last += r->samples;
	}
	p->nruns = 0;
	for (uint32_t i = 0; i < p->nthreads; i++)
		p->threads[i].last_run = UINT32_MAX;
}

/* --- labels --------------------------------------------------------------- */

/* The printable label of frame id of p, made once. */
static const char *label_of(struct top_labels *l, const struct profile *p, uint32_t id,
			    const struct top_model *m)
{
	if (id >= l->n) {
		uint32_t n = p->nframes;

		l->label = xreallocarray(l->label, n, sizeof(*l->label));
		memset(l->label + l->n, 0, (n - l->n) * sizeof(*l->label));
		l->n = n;
	}
	if (!l->label[id]) {
		char *raw = pframe_shown_label(&p->frames[id], m->full_filenames, m->full_names);

		l->label[id] = printable(raw);
		free(raw);
	}
	return l->label[id];
}

/* The function (name + file) of a profile frame, as an id in m->funcs. */
static uint32_t func_of(struct top_model *m, uint32_t id)
{
	if (id >= m->nfunc_of) {
		uint32_t n = m->p.nframes;

		m->func_of = xreallocarray(m->func_of, n, sizeof(*m->func_of));
		for (uint32_t i = m->nfunc_of; i < n; i++) {
			const struct pframe *f = &m->p.frames[i];
			struct pframe fn = { f->kind, f->name, f->file, -1, f->firstlineno };

			m->func_of[i] = profile_frame(&m->funcs, &fn);
		}
		m->nfunc_of = n;
	}
	return m->func_of[id];
}

/* --- the rows ------------------------------------------------------------- */

/* The keys of each order, most significant first: the column itself, the
 * same count over the other span, then the other kind of count. */
static const size_t sort_keys[TOP_SORT_COUNT][3] = {
	[TOP_SORT_OWN_PCT] = { offsetof(struct top_row, own_last), offsetof(struct top_row, own),
			       offsetof(struct top_row, total_last) },
	[TOP_SORT_TOTAL_PCT] = { offsetof(struct top_row, total_last),
				 offsetof(struct top_row, total),
				 offsetof(struct top_row, own_last) },
	[TOP_SORT_OWN_TIME] = { offsetof(struct top_row, own), offsetof(struct top_row, own_last),
				offsetof(struct top_row, total) },
	[TOP_SORT_TOTAL_TIME] = { offsetof(struct top_row, total),
				  offsetof(struct top_row, total_last),
				  offsetof(struct top_row, own) },
};

static uint64_t row_key(const struct top_row *r, size_t offset)
{
	return *(const uint64_t *)((const char *)r + offset);
}

/* Larger first; ties by label, so the order does not flicker. */
static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const struct top_row *a = pa, *b = pb;
	const size_t *keys = sort_keys[*(const enum top_sort *)arg];

	for (int i = 0; i < 3; i++) {
		uint64_t ka = row_key(a, keys[i]), kb = row_key(b, keys[i]);

		if (ka != kb)
			return ka < kb ? 1 : -1;
	}
	return strcmp(a->label, b->label);
}

static void sort_rows(struct top_model *m)
{
	if (m->nrows > 1)
		qsort_r(m->rows, m->nrows, sizeof(*m->rows), row_cmp, &m->sort);
}

/* A row of the table: Python functions, C ones with --native, with
 * --async the "task NAME" frames the sampler puts above a task's stack
 * (their %Total is the time the task was sampled), and with --waits the
 * "<wait:gpu>" leaves (their %Own is the time spent waiting so). */
static bool is_function(const struct pframe *f)
{
	return f->kind == PF_PYTHON || f->kind == PF_NATIVE ||
	       (f->kind == PF_MARKER && (!strncmp(f->name, "task ", 5) ||
					 !strncmp(f->name, PFRAME_WAIT_PREFIX,
						  strlen(PFRAME_WAIT_PREFIX))));
}

/* The counts of one row while the rows are made. */
struct sums {
	uint64_t own, own_last, total, total_last;
	uint32_t stamp;		/* the last stack counted in total */
};

static bool entry_shown(const struct top_model *m, const struct top_entry *e)
{
	if (m->thread_sel >= 0 && e->thread != (uint32_t)m->thread_sel)
		return false;
	if (m->proc_sel && m->p.threads[e->thread].pid != m->proc_sel)
		return false;
	if (m->job && !top_job_shows(m, e->thread))
		return false;
	return e->cum || e->last;
}

static uint32_t key_of(struct top_model *m, uint32_t frame)
{
	return m->by_function ? func_of(m, frame) : frame;
}

/* Add the samples of one entry, the visit-th counted, to the sums. */
static void add_entry(struct top_model *m, const struct top_entry *e, struct sums *s,
		      uint32_t visit)
{
	const struct pstack *st = &m->p.stacks[e->stack];
	uint32_t leaf = st->frames[st->depth - 1];

	if (is_function(&m->p.frames[leaf])) {
		s[key_of(m, leaf)].own += e->cum;
		s[key_of(m, leaf)].own_last += e->last;
	}
	/* Once per stack, however often a function recurses in it. */
	for (uint32_t d = 0; d < st->depth; d++) {
		uint32_t f = st->frames[d], key;

		if (!is_function(&m->p.frames[f]))
			continue;
		key = key_of(m, f);
		if (s[key].stamp == visit)
			continue;
		s[key].stamp = visit;
		s[key].total += e->cum;
		s[key].total_last += e->last;
	}
}

static void add_row(struct top_model *m, const struct sums *s, uint32_t key)
{
	struct top_row *r;

	ALLOC_GROW(m->rows, m->nrows + 1, m->rows_alloc);
	r = &m->rows[m->nrows++];
	r->label = m->by_function ? label_of(&m->func_labels, &m->funcs, key, m)
				  : label_of(&m->frame_labels, &m->p, key, m);
	r->own = s->own;
	r->own_last = s->own_last;
	r->total = s->total;
	r->total_last = s->total_last;
}

/* Make the rows again from the entries of the thread(s) shown. */
static void build_rows(struct top_model *m)
{
	uint32_t nkeys, visit = 0;
	struct sums *sums;
	bool *ran;

	/* Native frames named since (their symbols loaded in the
	 * background): labels and functions made before are stale. */
	if (m->p.renamed != m->seen_renamed) {
		labels_free(&m->frame_labels);
		memset(&m->frame_labels, 0, sizeof(m->frame_labels));
		m->nfunc_of = 0;
		m->seen_renamed = m->p.renamed;
	}
	if (m->by_function && m->p.nframes)
		func_of(m, m->p.nframes - 1);	/* every frame has its function */
	nkeys = m->by_function ? m->funcs.nframes : m->p.nframes;
	sums = xcalloc(nkeys + 1, sizeof(*sums));
	ran = xcalloc(m->p.nthreads + 1, sizeof(*ran));
	m->ran = 0;
	for (uint32_t i = 0; i < m->nentries; i++) {
		const struct top_entry *e = &m->entries[i];

		if (!entry_shown(m, e) || !m->p.stacks[e->stack].depth)
			continue;
		add_entry(m, e, sums, ++visit);
		if (e->last && !ran[e->thread]) {
			ran[e->thread] = true;
			m->ran++;
		}
	}
	free(ran);
	m->nrows = 0;
	for (uint32_t k = 0; k < nkeys; k++)
		if (sums[k].total || sums[k].total_last)
			add_row(m, &sums[k], k);
	free(sums);
	sort_rows(m);
}

bool top_row_shown(const struct top_model *m, const struct top_row *r)
{
	return !m->filter[0] || strcasestr(r->label, m->filter);
}

uint32_t top_model_rows_shown(const struct top_model *m)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->nrows; i++)
		n += top_row_shown(m, &m->rows[i]);
	return n;
}

double top_row_own_pct(const struct top_model *m, const struct top_row *r)
{
	return pct(r->own_last, m->shown.rounds);
}

double top_row_total_pct(const struct top_model *m, const struct top_row *r)
{
	return pct(r->total_last, m->shown.rounds);
}

double top_row_own_s(const struct top_model *m, const struct top_row *r)
{
	return r->own * (m->p.interval_ns / 1e9);
}

double top_row_total_s(const struct top_model *m, const struct top_row *r)
{
	return r->total * (m->p.interval_ns / 1e9);
}

/* --- the hint ------------------------------------------------------------ */

/* --slurm, one node or rank shown: "no thread of rank 3 on hnode2 ran". */
static void hint_job(const struct top_model *m, struct strbuf *sb)
{
	sb_puts(sb, "no thread of ");
	top_job_describe(m, false, sb);
	sb_puts(sb, " ran");
}

/* No thread of the view ran in the last interval of secs seconds: short
 * enough for 80 columns, what helps last. */
static void hint_all_idle(const struct top_model *m, bool keys, const char *secs,
			  struct strbuf *sb)
{
	int n = m->shown.nthreads;

	if (m->thread_sel >= 0)
		sb_printf(sb, "thread %d did not run", (int)m->p.threads[m->thread_sel].tid);
	else if (top_job_narrowed(m))
		hint_job(m, sb);
	else if (m->proc_sel)
		sb_printf(sb, "no thread of process %d ran", (int)m->proc_sel);
	else if (n == 1)
		sb_puts(sb, "the only thread did not run");
	else if (n > 1)
		sb_printf(sb, "none of the %d threads ran", n);
	else
		sb_puts(sb, "no thread ran");
	sb_printf(sb, " in the last %s s", secs);
	/* What shows them: I, or --idle where no key is read. */
	sb_puts(sb, keys ? "; press I to show idle threads" : "; --idle shows idle threads");
}

enum top_hint top_model_hint(const struct top_model *m, bool keys, struct strbuf *sb)
{
	const struct top_stats *st = &m->shown;
	char secs[32];

	if (m->nrows && m->filter[0] && !top_model_rows_shown(m)) {
		sb_puts(sb, keys ? "no function matches the filter (Esc clears it)"
				 : "no function matches the filter");
		return TOP_HINT_FILTERED;
	}
	if (!st->rounds && !st->samples)
		return TOP_HINT_COLLECTING;
	/* The keys do nothing on an exited target's last view. */
	if (m->ran && (m->idle || m->gil_only || m->ran >= (uint32_t)st->nthreads ||
		       m->thread_sel >= 0 || m->proc_sel || top_job_narrowed(m) || m->exited))
		return TOP_HINT_NONE;
	/* The interval as it was: the last one of a --duration is short. */
	snprintf(secs, sizeof(secs), st->interval_s < 10 ? "%.2g" : "%.0f", st->interval_s);
	if (m->ran) {
		sb_printf(sb, "%u of %d threads ran in the last %s s", m->ran, st->nthreads, secs);
		sb_printf(sb, keys ? "; press I to show the %d idle ones too"
				   : "; --idle shows the %d idle ones too", st->nthreads - (int)m->ran);
		return TOP_HINT_SOME_IDLE;
	}
	if (m->exited || !st->rounds)
		return TOP_HINT_NONE;
	if (m->gil_only && st->attached >= 0) {
		sb_printf(sb, "no thread was attached to the interpreter in the last %s s "
			  "(--gil samples only those on a build without a GIL)", secs);
		return TOP_HINT_NO_GIL;
	}
	if (m->gil_only) {
		sb_printf(sb, "no thread held the GIL in the last %s s (--gil samples only "
			  "its holder)", secs);
		return TOP_HINT_NO_GIL;
	}
	if (m->idle) {
		sb_printf(sb, "nothing was sampled in the last %s s", secs);
		if (st->error_pct > 0)
			sb_printf(sb, " (errors %.1f%%)", st->error_pct);
		return TOP_HINT_NOTHING;
	}
	hint_all_idle(m, keys, secs, sb);
	return TOP_HINT_ALL_IDLE;
}

/* The view shows the latest interval. */
static void show(struct top_model *m)
{
	m->shown = m->live;
	build_rows(m);
}

void top_model_set_sort(struct top_model *m, enum top_sort sort)
{
	m->sort = sort;
	sort_rows(m);
}

void top_model_set_by_function(struct top_model *m, bool by_function)
{
	m->by_function = by_function;
	build_rows(m);
}

void top_model_set_paused(struct top_model *m, bool paused)
{
	m->paused = paused;
	if (!paused)
		show(m);
}

/* --- intervals ------------------------------------------------------------ */

/* The next interval starts at t. */
static void start_interval(struct top_model *m, const struct top_tick *t)
{
	m->iv_base = t->counts;
	m->iv_start_ns = t->now_ns;
	m->iv_rounds = t->rounds;
	m->iv_lagged = t->lagged;
	if (!m->version && t->version)
		m->version = printable(t->version);
}

/* The figures of the interval that ends at t. */
static void figures(struct top_model *m, const struct top_tick *t)
{
	const struct sampler_counts *c = &t->counts, *b = &m->iv_base;
	struct top_stats *st = &m->live;
	uint64_t rounds = c->rounds - b->rounds, errors = 0, stacks, ft;

	for (int i = 0; i < SERR_COUNT; i++)
		if (serr_is_error(i))
			errors += c->errors[i] - b->errors[i];
	/* A merge error's stack is counted too, with its Python frames,
	 * as is a gap's: out of the stacks, not on top of them. */
	stacks = c->stacks - b->stacks - (c->errors[SERR_MERGE] - b->errors[SERR_MERGE]) -
		 (c->errors[SERR_GAP] - b->errors[SERR_GAP]);

	st->elapsed_s = (t->now_ns - m->reset_ns) / 1e9;
	st->samples = t->rounds - m->reset_rounds;
	st->interval_s = (t->now_ns - m->iv_start_ns) / 1e9;
	st->rounds = t->rounds - m->iv_rounds;
	st->lagged = t->lagged - m->iv_lagged;
	st->max_lag_ms = t->max_lag_ns / 1e6;
	ft = c->ft_rounds - b->ft_rounds;
	/* Of the rounds of builds with a GIL: a free-threaded one has none. */
	st->gil_pct = rounds > ft ? pct(c->gil_rounds - b->gil_rounds, rounds - ft) : -1;
	st->attached = ft ? (double)(c->attached - b->attached) / ft : -1;
	st->active_pct = c->checked > b->checked ?
		pct(c->active - b->active, c->checked - b->checked) : -1;
	st->error_pct = errors + stacks ? pct(errors, errors + stacks) : rounds ? 0 : -1;
	st->late_pct = stacks ? pct(c->late - b->late, stacks) : 0;
	st->nthreads = c->nthreads;
	st->nprocs = t->nprocs;
}

static void end_interval(struct top_model *m, const struct top_tick *t)
{
	for (uint32_t i = 0; i < m->nentries; i++)
		m->entries[i].last = 0;
	take_runs(m, true, true);
	figures(m, t);
	start_interval(m, t);
}

void top_model_start(struct top_model *m, const struct top_tick *t)
{
	start_interval(m, t);
	m->reset_ns = t->now_ns;
	m->reset_rounds = t->rounds;
}

void top_model_interval(struct top_model *m, const struct top_tick *t)
{
	end_interval(m, t);
	if (!m->paused)
		show(m);
}

void top_model_exited(struct top_model *m, const struct top_tick *t)
{
	m->exited = true;
	if (m->live.rounds && t->rounds - m->iv_rounds < m->delay_s * m->p.rate_hz / 2) {
		/* The last bit of an interval would give noisy shares: its
		 * samples go to the times only. */
		take_runs(m, true, false);
		m->live.samples = t->rounds - m->reset_rounds;
		m->live.elapsed_s = (t->now_ns - m->reset_ns) / 1e9;
	} else {
		end_interval(m, t);
	}
	show(m);
	m->paused = false;
}

void top_model_reset(struct top_model *m, const struct top_tick *t)
{
	take_runs(m, false, false);
	for (uint32_t i = 0; i < m->nentries; i++)
		m->entries[i].cum = m->entries[i].last = 0;
	start_interval(m, t);
	m->reset_ns = t->now_ns;
	m->reset_rounds = t->rounds;
	memset(&m->live, 0, sizeof(m->live));
	m->live.gil_pct = m->live.active_pct = m->live.error_pct = m->live.attached = -1;
	m->live.nthreads = m->shown.nthreads;
	m->live.nprocs = m->shown.nprocs;
	show(m);
}

void top_model_set_idle(struct top_model *m, bool idle, const struct top_tick *t)
{
	m->idle = idle;
	top_model_reset(m, t);
}

/* --- which threads ------------------------------------------------------- */

/* T steps through the views in this order: all, then each process (when
 * there are several), then each thread, by process and thread id. */
static bool thread_before(const struct top_model *m, uint32_t a, uint32_t b)
{
	const struct pthread_info *x = &m->p.threads[a], *y = &m->p.threads[b];

	if (x->pid != y->pid)
		return x->pid < y->pid;
	return x->tid != y->tid ? x->tid < y->tid : a < b;
}

/* The smallest pid above after among the threads seen, or 0; *count gets
 * the number of processes and *pos the position of after among them. */
static pid_t next_process(const struct top_model *m, pid_t after, int *count, int *pos)
{
	pid_t best = 0;

	*count = *pos = 0;
	for (uint32_t i = 0; i < m->p.nthreads; i++) {
		pid_t pid = m->p.threads[i].pid;
		bool first = true;

		for (uint32_t k = 0; k < i && first; k++)
			first = m->p.threads[k].pid != pid;
		if (!first)
			continue;
		(*count)++;
		*pos += pid <= after;
		if (pid > after && (!best || pid < best))
			best = pid;
	}
	return best;
}

static int thread_position(const struct top_model *m, int *count)
{
	int pos = 0;

	*count = (int)m->p.nthreads;
	for (uint32_t i = 0; m->thread_sel >= 0 && i < m->p.nthreads; i++)
		pos += i == (uint32_t)m->thread_sel || thread_before(m, i, m->thread_sel);
	return pos;
}

static void next_view(struct top_model *m)
{
	int nprocs, pos, best = -1;
	pid_t pid;

	if (m->thread_sel < 0 && m->subprocesses) {
		pid = next_process(m, m->proc_sel, &nprocs, &pos);
		m->proc_sel = nprocs > 1 ? pid : 0;
		if (m->proc_sel)
			return;
	}
	for (uint32_t i = 0; i < m->p.nthreads; i++) {
		if (m->thread_sel >= 0 && !thread_before(m, m->thread_sel, i))
			continue;
		if (best < 0 || thread_before(m, i, best))
			best = (int)i;
	}
	m->thread_sel = best;
}

void top_model_next_view(struct top_model *m)
{
	if (m->job)
		top_job_next_view(m);
	else
		next_view(m);
	build_rows(m);
}

void top_model_describe_view(const struct top_model *m, struct strbuf *sb)
{
	const struct pthread_info *th;
	int count, pos;

	if (top_job_describe(m, true, sb))
		return;
	if (m->proc_sel) {
		next_process(m, m->proc_sel, &count, &pos);
		sb_printf(sb, "process %d (%d of %d)", (int)m->proc_sel, pos, count);
		return;
	}
	if (m->thread_sel < 0) {
		sb_puts(sb, m->subprocesses ? "all processes" : "all threads");
		return;
	}
	th = &m->p.threads[m->thread_sel];
	pos = thread_position(m, &count);
	sb_printf(sb, "thread %d", (int)th->tid);
	if (th->name) {
		sb_puts(sb, " \"");
		sb_add_printable(sb, th->name);
		sb_putc(sb, '"');
	}
	if (m->subprocesses)
		sb_printf(sb, " of process %d", (int)th->pid);
	sb_printf(sb, " (%d of %d)", pos, count);
}
