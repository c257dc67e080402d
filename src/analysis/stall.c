/* The stall detector: threads' stacks over time, judged as stall.h says. */
#include "analysis/stall.h"

#include <stdlib.h>
#include <string.h>

#include "python/asynctasks.h"
#include "util/util.h"

static const char *const kind_names[STALL_KINDS] = {
	[STALL_NONE] = "",
	[STALL_ASYNCIO] = "asyncio",
	[STALL_COLLECTIVE] = "collective",
	[STALL_DATA] = "data",
	[STALL_LIVELOCK] = "livelock",
	[STALL_DEADLOCK] = "deadlock",
	[STALL_NO_PROGRESS] = "no-progress",
};

const char *stall_kind_name(enum stall_kind k)
{
	return k < STALL_KINDS ? kind_names[k] : "";
}

void stall_init(struct stall_model *m, const struct stall_opts *o, uint64_t now_ns)
{
	memset(m, 0, sizeof(*m));
	m->o = *o;
	m->progress_ns = now_ns;
	m->r.odd = -1;
}

static void thread_release(struct stall_thread *t)
{
	free(t->name);
	free(t->where);
}

static void proc_release(struct stall_proc *p)
{
	for (int i = 0; i < p->nt; i++)
		thread_release(&p->t[i]);
	free(p->t);
	free(p->command);
	free(p->why);
	free(p->async_why);
}

void stall_release(struct stall_model *m)
{
	for (int i = 0; i < m->np; i++)
		proc_release(&m->p[i]);
	free(m->p);
	free(m->r.why);
}

int stall_proc_find(const struct stall_model *m, pid_t pid)
{
	for (int i = 0; i < m->np; i++)
		if (m->p[i].pid == pid)
			return i;
	return -1;
}

int stall_proc_seen(struct stall_model *m, uint64_t now_ns, pid_t pid, pid_t ppid, int rank,
		    const char *command)
{
	int i = stall_proc_find(m, pid);
	struct stall_proc *p;

	if (i >= 0) {
		m->p[i].seen_ns = now_ns;
		return i;
	}
	ALLOC_GROW(m->p, m->np + 1, m->cap);
	p = &m->p[m->np];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = ppid;
	p->rank = rank;
	p->command = xstrdup(command ? command : "");
	p->first_ns = p->seen_ns = now_ns;
	return m->np++;
}

static struct stall_thread *find_thread(struct stall_proc *p, pid_t tid)
{
	for (int i = 0; i < p->nt; i++)
		if (p->t[i].tid == tid)
			return &p->t[i];
	return NULL;
}

static struct stall_thread *add_thread(struct stall_proc *p, pid_t tid, uint64_t now_ns)
{
	struct stall_thread *t;

	ALLOC_GROW(p->t, p->nt + 1, p->cap);
	t = &p->t[p->nt++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->first_ns = t->run.few_since_ns = t->stack_since_ns = now_ns;
	return t;
}

/* The run is in no new stack since now: what the thread did before, the
 * CPU it burnt on its way here above all, says nothing of how it runs
 * from now on.  A thread that worked a few seconds and then blocked would
 * otherwise look busy until that work was diluted below
 * STALL_BLOCKED_CPU, many thresholds later.  CPU time is counted from
 * the next reading. */
static void restart_counts(struct stall_run *run, uint64_t now_ns)
{
	memset(run, 0, sizeof(*run));
	run->few_since_ns = run->still_since_ns = now_ns;
}

/* A new run of few stacks begins now, with this one. */
static void restart_few(struct stall_thread *t, uint64_t stack, uint64_t now_ns)
{
	t->few[0].stack = stack;
	t->few[0].first_ns = t->few[0].last_ns = now_ns;
	t->nfew = 1;
	t->fresh_on = false;
	restart_counts(&t->run, now_ns);
}

/* The thread is back in a stack it had before its latest new one: not a
 * move from one place to another but a loop among its few stacks (a spin
 * whose rarer lines were first caught only now), still since the first
 * of them was seen (of those since `from`: a fresh run's own).  Taking
 * the latest new stack's time instead put the start of a spin up to a
 * threshold late. */
static void back_to_few(struct stall_thread *t, struct stall_run *run, uint64_t from_ns)
{
	for (int i = 0; i < t->nfew; i++)
		if (t->few[i].first_ns >= from_ns && t->few[i].first_ns < run->still_since_ns)
			run->still_since_ns = t->few[i].first_ns;
}

/* The thread is in a stack of its few again, first seen at first_ns. */
static void back_in(struct stall_thread *t, uint64_t first_ns)
{
	/* A stack of the old run: the fresh one was its rare lines. */
	if (t->fresh_on && first_ns < t->fresh_from_ns)
		t->fresh_on = false;
	if (t->fresh_on && first_ns < t->fresh.few_since_ns)
		back_to_few(t, &t->fresh, t->fresh_from_ns);
	else if (!t->fresh_on && first_ns < t->run.few_since_ns)
		back_to_few(t, &t->run, 0);
}

/* A fresh run that has lasted the threshold with none of the old run's
 * stacks is the thread's run: it left them for good at fresh_from_ns,
 * and what it did before (an hour of work in a loop of few stacks, which
 * kept still by that measure) is not what it does now.  Judging a stop
 * that follows such work by the old run put it off by as long as the
 * work had lasted, or for ever (issue 39). */
static void settle(struct stall_thread *t, uint64_t now_ns, uint64_t threshold_ns)
{
	int k = 0;

	if (!t->fresh_on || now_ns - t->fresh_from_ns < threshold_ns)
		return;
	t->run = t->fresh;
	t->fresh_on = false;
	for (int i = 0; i < t->nfew; i++)
		if (t->few[i].first_ns >= t->fresh_from_ns)
			t->few[k++] = t->few[i];
	t->nfew = k;
}

/* Note stack in the thread's set of recent stacks.  Stacks last seen
 * before the threshold make room; one more than the set holds means the
 * thread moved. */
static void note_stack(struct stall_thread *t, uint64_t stack, uint64_t now_ns,
		       uint64_t threshold_ns)
{
	int k = 0;

	for (int i = 0; i < t->nfew; i++) {
		if (t->few[i].stack == stack) {
			t->few[i].last_ns = now_ns;
			back_in(t, t->few[i].first_ns);
			return;
		}
	}
	for (int i = 0; i < t->nfew; i++)
		if (now_ns - t->few[i].last_ns < threshold_ns)
			t->few[k++] = t->few[i];
	t->nfew = k;
	if (t->nfew == STALL_FEW_STACKS) {
		restart_few(t, stack, now_ns);
		return;
	}
	/* Still few, but a stack not seen lately: it moved just now, unless
	 * it has kept still a threshold already.  Then only more than the
	 * few stacks move it: a spin's rare lines, seen again after a
	 * threshold, do not; but it may have left for good (work ended in a
	 * lock wait), which a fresh run beside the old one tells. */
	t->few[t->nfew].stack = stack;
	t->few[t->nfew].first_ns = t->few[t->nfew].last_ns = now_ns;
	t->nfew++;
	if (t->fresh_on) {
		restart_counts(&t->fresh, now_ns);
	} else if (now_ns - t->run.few_since_ns < threshold_ns) {
		restart_counts(&t->run, now_ns);
	} else {
		restart_counts(&t->fresh, now_ns);
		t->fresh_from_ns = now_ns;
		t->fresh_on = true;
	}
}

void stall_thread_seen(struct stall_model *m, int pi, uint64_t now_ns, pid_t tid,
		       const char *name, uint64_t stack, enum wait_class cls,
		       const char *where)
{
	struct stall_proc *p = &m->p[pi];
	struct stall_thread *t = find_thread(p, tid);

	if (!t) {
		t = add_thread(p, tid, now_ns);
		restart_few(t, stack, now_ns);
	} else {
		settle(t, now_ns, m->o.threshold_ns);
		if (t->stack != stack) {
			t->stack_since_ns = now_ns;
			t->blocked_at_ns = 0;
		}
		note_stack(t, stack, now_ns, m->o.threshold_ns);
	}
	if (!t->where || t->stack != stack || strcmp(t->where, where ? where : "") != 0) {
		free(t->where);
		t->where = xstrdup(where ? where : "");
	}
	if (name && (!t->name || strcmp(t->name, name) != 0)) {
		free(t->name);
		t->name = xstrdup(name);
	}
	t->stack = stack;
	t->frames_class = cls;
	t->seen_ns = now_ns;
	t->run.samples++;
	t->fresh.samples += t->fresh_on;
}

/* A reading of the scheduler into a run's counts. */
static void count_reading(struct stall_run *run, uint64_t now_ns, char state, uint64_t cpu_ns)
{
	run->readings++;
	run->runnable += state == 'R';
	if (!run->cpu0_known) {
		run->cpu0_ns = cpu_ns;
		run->cpu0_at_ns = now_ns;
		run->cpu0_known = true;
	}
}

void stall_thread_cpu(struct stall_model *m, int pi, pid_t tid, uint64_t now_ns, char state,
		      uint64_t cpu_ns)
{
	struct stall_thread *t = find_thread(&m->p[pi], tid);

	if (!t)
		return;
	t->state = state;
	t->cpu_ns = cpu_ns;
	t->cpu_at_ns = now_ns;
	t->cpu_known = true;
	count_reading(&t->run, now_ns, state, cpu_ns);
	if (t->fresh_on)
		count_reading(&t->fresh, now_ns, state, cpu_ns);
}

void stall_thread_syscall(struct stall_model *m, int pi, pid_t tid, enum wait_class cls,
			  bool timed)
{
	struct stall_thread *t = find_thread(&m->p[pi], tid);

	if (!t)
		return;
	t->sys_class = cls;
	t->sys_timed = timed;
	t->sys_known = true;
	/* Read with its CPU time, just before. */
	if (cls != WC_LOCK || timed || !t->cpu_known || t->state == 'R')
		t->blocked_at_ns = 0;
	else if (!t->blocked_at_ns)
		t->blocked_at_ns = t->cpu_at_ns;
}

void stall_set_async(struct stall_model *m, int pi, const char *why, uint64_t now_ns)
{
	struct stall_proc *p = &m->p[pi];

	if (why && !p->async_why)
		p->async_since_ns = now_ns;
	free(p->async_why);
	p->async_why = why ? xstrdup(why) : NULL;
}

void stall_progress(struct stall_model *m, uint64_t now_ns)
{
	m->progress_ns = now_ns;
}

void stall_forget(struct stall_model *m, uint64_t now_ns)
{
	int k = 0;

	for (int i = 0; i < m->np; i++) {
		struct stall_proc *p = &m->p[i];
		int kt = 0;

		for (int j = 0; j < p->nt; j++) {
			if (now_ns - p->t[j].seen_ns <= m->o.gone_ns)
				p->t[kt++] = p->t[j];
			else
				thread_release(&p->t[j]);
		}
		p->nt = kt;
		if (now_ns - p->seen_ns <= m->o.gone_ns)
			m->p[k++] = *p;
		else
			proc_release(p);
	}
	m->np = k;
}

/* Since when the process's threads have all kept still: the latest of
 * their few_since_ns (when the counts began, which judging waits on), or
 * as reported, of their still_since_ns (see back_to_few()). */
static uint64_t proc_since(const struct stall_model *m, int pi, bool reported)
{
	const struct stall_proc *p = &m->p[pi];
	uint64_t since = 0;

	for (int i = 0; i < p->nt; i++) {
		uint64_t t = reported ? p->t[i].run.still_since_ns : p->t[i].run.few_since_ns;

		if (t > since)
			since = t;
	}
	return since;
}

uint64_t stall_still_since(const struct stall_model *m, int pi)
{
	return proc_since(m, pi, false);
}

bool stall_stuck(const struct stall_model *m, int pi, uint64_t now_ns, uint64_t *since_ns)
{
	uint64_t since = stall_still_since(m, pi);

	if (!m->p[pi].nt)
		return false;
	if (since_ns)
		*since_ns = since;
	return now_ns >= since && now_ns - since >= m->o.threshold_ns;
}

enum wait_class stall_thread_class(const struct stall_thread *t)
{
	if (t->frames_class != WC_NONE && t->frames_class <= WC_GC)
		return t->frames_class;
	if (t->sys_known && t->state != 'R' && t->sys_class != WC_NONE)
		return t->sys_class;
	if (t->frames_class != WC_NONE)
		return t->frames_class;
	return t->state == 'R' ? WC_CPU : WC_NONE;
}

enum wait_class stall_sample_class(const struct stall_model *m, int pi, pid_t tid)
{
	const struct stall_proc *p = &m->p[pi];
	const struct stall_thread *t = NULL;

	for (int i = 0; i < p->nt && !t; i++)
		if (p->t[i].tid == tid)
			t = &p->t[i];
	if (!t)
		return WC_NONE;
	if (t->frames_class != WC_NONE)
		return t->frames_class;
	/* The reading is of this stack only when it came after the thread
	 * entered it. */
	if (!t->sys_known || !t->cpu_known || t->cpu_at_ns < t->stack_since_ns ||
	    t->state == 'R' || (t->sys_class == WC_LOCK && t->sys_timed))
		return WC_NONE;
	return t->sys_class;
}

double stall_thread_busy(const struct stall_thread *t)
{
	if (!t->run.cpu0_known || t->cpu_at_ns <= t->run.cpu0_at_ns)
		return -1;
	return (double)(t->cpu_ns - t->run.cpu0_ns) / (double)(t->cpu_at_ns - t->run.cpu0_at_ns);
}

double stall_thread_runnable(const struct stall_thread *t)
{
	return t->run.readings ? (double)t->run.runnable / t->run.readings : -1;
}

/* --- the verdict of one process ----------------------------------------- */

/* Room for the threads a why names before "and N more". */
#define WHY_THREADS 8

static void put_thread(struct strbuf *sb, const struct stall_thread *t)
{
	sb_printf(sb, "%d", (int)t->tid);
	if (t->name)
		sb_printf(sb, " \"%s\"", t->name);
}

static const struct stall_thread *thread_of_class(const struct stall_proc *p,
						  enum wait_class cls)
{
	for (int i = 0; i < p->nt; i++)
		if (stall_thread_class(&p->t[i]) == cls)
			return &p->t[i];
	return NULL;
}

/* What a spin is (stall.h): the share of the time a thread ran, and of
 * the readings that found it runnable, at least; one row is enough. */
static const struct {
	double ran, runnable;
} spin_rules[] = {
	{ STALL_LIVELOCK_CPU, 0 },				/* on a CPU, any machine */
	{ STALL_LIVELOCK_LOADED_CPU, STALL_LIVELOCK_RUNNABLE },	/* a loaded machine */
};

static bool spins(const struct stall_thread *t, uint64_t threshold_ns)
{
	/* Half the threshold of readings at least: a fresh reading of a
	 * thread that just woke says little. */
	if (!t->run.cpu0_known || t->cpu_at_ns - t->run.cpu0_at_ns < threshold_ns / 2)
		return false;
	/* A collection under way hides the program's own stack. */
	if (t->frames_class == WC_GC || t->run.samples < STALL_LIVELOCK_REPEATS * (uint32_t)t->nfew)
		return false;
	for (size_t i = 0; i < sizeof(spin_rules) / sizeof(spin_rules[0]); i++)
		if (stall_thread_busy(t) >= spin_rules[i].ran &&
		    stall_thread_runnable(t) >= spin_rules[i].runnable)
			return true;
	return false;
}

/* The thread that spun: the busiest of those that spin. */
static const struct stall_thread *spinner(const struct stall_proc *p, uint64_t threshold_ns)
{
	const struct stall_thread *best = NULL;

	for (int i = 0; i < p->nt; i++)
		if (spins(&p->t[i], threshold_ns) &&
		    (!best || stall_thread_busy(&p->t[i]) > stall_thread_busy(best)))
			best = &p->t[i];
	return best;
}

/* Every thread blocked without timeout in a lock wait, none running, and
 * seen in its stack by a round after the reading that first found it so:
 * the stack the round before showed may be one it has just left (light
 * work in a few stacks, then a lock: a deadlock "since" the work began,
 * reported at once). */
static bool deadlocked(const struct stall_proc *p)
{
	for (int i = 0; i < p->nt; i++) {
		const struct stall_thread *t = &p->t[i];
		double busy = stall_thread_busy(t);

		if (!t->sys_known || t->sys_class != WC_LOCK || t->sys_timed || t->state == 'R' ||
		    busy < 0 || busy > STALL_BLOCKED_CPU || !t->blocked_at_ns ||
		    t->seen_ns <= t->blocked_at_ns)
			return false;
	}
	return p->nt > 0;
}

static void why_deadlock(struct strbuf *sb, const struct stall_proc *p)
{
	sb_puts(sb, p->nt == 1 ? "thread " : "threads ");
	for (int i = 0; i < p->nt && i < WHY_THREADS; i++) {
		if (i)
			sb_puts(sb, ", ");
		put_thread(sb, &p->t[i]);
	}
	if (p->nt > WHY_THREADS)
		sb_printf(sb, " and %d more", p->nt - WHY_THREADS);
	sb_puts(sb, " blocked in a lock wait without timeout, stacks unchanged");
}

static void why_waiting(struct strbuf *sb, const struct stall_thread *t, const char *what,
			uint64_t now_ns)
{
	sb_puts(sb, "thread ");
	put_thread(sb, t);
	sb_printf(sb, " %s in %s for %.0f s", what, t->where,
		  (now_ns - t->stack_since_ns) / 1e9);
}

/* Whether a thread of p may have left its old run of few stacks (a
 * fresh run, see settle()): until that is known, p may move, and its
 * verdict waits (a threshold at most). */
static bool undecided(const struct stall_proc *p)
{
	for (int i = 0; i < p->nt; i++)
		if (p->t[i].fresh_on)
			return true;
	return false;
}

/* Does any process of the job move? */
static bool job_moves(const struct stall_model *m, uint64_t now_ns)
{
	for (int i = 0; i < m->np; i++)
		if (m->p[i].nt && (!stall_stuck(m, i, now_ns, NULL) || undecided(&m->p[i])))
			return true;
	return false;
}

static enum stall_kind judge_proc(const struct stall_model *m, const struct stall_proc *p,
				  uint64_t now_ns, struct strbuf *why)
{
	const struct stall_thread *t;

	if (!stall_stuck(m, (int)(p - m->p), now_ns, NULL) || undecided(p))
		return STALL_NONE;
	if (p->async_why && now_ns - p->async_since_ns >= m->o.threshold_ns) {
		sb_puts(why, p->async_why);
		return STALL_ASYNCIO;
	}
	/* Waiting on others: a stall once the others are stuck too. */
	if ((t = thread_of_class(p, WC_COLLECTIVE))) {
		if (job_moves(m, now_ns))
			return STALL_NONE;
		why_waiting(why, t, "waits for the other ranks", now_ns);
		return STALL_COLLECTIVE;
	}
	if ((t = thread_of_class(p, WC_DATA))) {
		if (job_moves(m, now_ns))
			return STALL_NONE;
		why_waiting(why, t, "waits for its input pipeline", now_ns);
		return STALL_DATA;
	}
	if ((t = spinner(p, m->o.threshold_ns))) {
		sb_puts(why, "thread ");
		put_thread(why, t);
		sb_printf(why, " ran %.0f%% of the last %.0f s (runnable %.0f%%) in %d stack%s, "
			  "in %s", 100 * stall_thread_busy(t), (now_ns - t->run.few_since_ns) / 1e9,
			  100 * stall_thread_runnable(t), t->nfew, t->nfew == 1 ? "" : "s",
			  t->where);
		return STALL_LIVELOCK;
	}
	if (deadlocked(p)) {
		why_deadlock(why, p);
		return STALL_DEADLOCK;
	}
	return STALL_NONE;
}

/* --- the job ------------------------------------------------------------ */

/* The thread that speaks for a process: its main thread, else its first. */
static const struct stall_thread *main_thread(const struct stall_proc *p)
{
	for (int i = 0; i < p->nt; i++)
		if (p->t[i].tid == p->pid)
			return &p->t[i];
	return p->nt ? &p->t[0] : NULL;
}

/* The first process of each rank speaks for it: a rank's DataLoader
 * workers inherit its RANK. */
static bool rank_leader(const struct stall_model *m, int pi)
{
	for (int i = 0; i < pi; i++)
		if (m->p[i].rank == m->p[pi].rank)
			return false;
	return m->p[pi].rank >= 0;
}

/* "ranks 0, 2 in all_reduce (job.py:35); rank 1 in load_batch (job.py:12)
 * for 94 s": the ranks in a collective, and each that is not.  The odd
 * one out is the first of those, or -1 when every rank waits alike. */
static int why_collective(const struct stall_model *m, uint64_t now_ns, struct strbuf *sb,
			  uint64_t *odd_for_ns)
{
	const struct stall_thread *t, *in = NULL;
	struct strbuf ranks = STRBUF_INIT;
	int odd = -1, nin = 0;

	for (int i = 0; i < m->np; i++)
		if (rank_leader(m, i) && (t = thread_of_class(&m->p[i], WC_COLLECTIVE))) {
			sb_printf(&ranks, "%s%d", nin ? ", " : "", m->p[i].rank);
			in = in ? in : t;
			nin++;
		}
	if (nin)
		sb_printf(sb, "rank%s %s in %s", nin == 1 ? "" : "s", ranks.buf, in->where);
	sb_release(&ranks);
	for (int i = 0; nin && i < m->np; i++) {
		if (!rank_leader(m, i) || thread_of_class(&m->p[i], WC_COLLECTIVE) ||
		    !(t = main_thread(&m->p[i])))
			continue;
		sb_printf(sb, "; rank %d in %s for %.0f s", m->p[i].rank, t->where,
			  (now_ns - t->stack_since_ns) / 1e9);
		if (odd < 0) {
			odd = i;
			*odd_for_ns = now_ns - t->stack_since_ns;
		}
	}
	return odd;
}

/* Process pi's verdict as the job's. */
static void report_proc(const struct stall_model *m, int pi, struct stall_report *r)
{
	const struct stall_proc *p = &m->p[pi];
	uint64_t since = proc_since(m, pi, true);

	/* Tasks that deadlocked while the thread looked stuck already. */
	if (p->verdict == STALL_ASYNCIO && p->async_since_ns > since)
		since = p->async_since_ns;
	r->kind = p->verdict;
	r->proc = pi;
	r->since_ns = since;
}

/* Every process's verdict; the job's kind is the first kind any has. */
static void judge_all(struct stall_model *m, uint64_t now_ns, struct stall_report *r)
{
	r->kind = STALL_NONE;
	r->proc = r->odd = -1;
	for (int i = 0; i < m->np; i++)
		for (int k = 0; k < m->p[i].nt; k++)
			settle(&m->p[i].t[k], now_ns, m->o.threshold_ns);
	for (int i = 0; i < m->np; i++) {
		struct stall_proc *p = &m->p[i];
		struct strbuf why = STRBUF_INIT;

		free(p->why);
		p->why = NULL;
		p->verdict = judge_proc(m, p, now_ns, &why);
		if (p->verdict != STALL_NONE)
			p->why = sb_detach(&why);
		sb_release(&why);
		if (p->verdict == STALL_NONE || (r->kind != STALL_NONE && p->verdict >= r->kind))
			continue;
		report_proc(m, i, r);
	}
}

/* Fill m->r for the stall found: its why, and for a collective the odd
 * one out, which it is then reported for. */
static void describe(struct stall_model *m, uint64_t now_ns)
{
	struct stall_report *r = &m->r;
	struct strbuf sb = STRBUF_INIT;
	int odd = -1;

	free(r->why);
	r->odd = -1;
	if (r->kind == STALL_COLLECTIVE)
		odd = why_collective(m, now_ns, &sb, &r->odd_for_ns);
	if (odd >= 0)
		r->odd = r->proc = odd;
	/* Ranks unknown: the process's own words. */
	if (!sb.len && r->proc >= 0)
		sb_printf(&sb, "process %d: %s", (int)m->p[r->proc].pid, m->p[r->proc].why);
	if (m->o.progress) {
		r->progress_unchanged_ns = now_ns - m->progress_ns;
		sb_printf(&sb, "%sthe progress file has not changed for %.0f s", sb.len ? "; " : "",
			  r->progress_unchanged_ns / 1e9);
	}
	r->why = sb_detach(&sb);
}

/* Has the job moved since the stall was reported?  The progress file
 * changed, or the process it was reported for moved or is gone. */
static bool moved(const struct stall_model *m, uint64_t now_ns)
{
	if (m->o.progress)
		return now_ns - m->progress_ns < m->o.threshold_ns;
	for (int i = 0; i < m->np; i++)
		if (m->p[i].pid == m->stalled_pid)
			return !stall_stuck(m, i, now_ns, NULL);
	return true;
}

/* r is a stall to report: it is the model's now. */
static enum stall_event tell(struct stall_model *m, uint64_t now_ns, struct stall_report *r)
{
	m->pending_ns = 0;
	r->why = m->r.why;
	m->r = *r;
	describe(m, now_ns);
	m->stalled = true;
	m->stalled_pid = m->r.proc >= 0 ? m->p[m->r.proc].pid : 0;
	return STALL_EV_NEW;
}

/* While a livelock is reported: its process has stopped spinning and
 * come to a stall of another kind (a deadlock, its threads blocked for
 * good), into r.  That is reported a threshold after it began, not when
 * the job next moves: the threads' new stacks do not move the process
 * (one new stack after a threshold in few is not a move).  Any other
 * stall names the whole job (a collective its odd one out), and a
 * verdict of another process or kind under it is part of it.  The
 * progress file decides alone when there is one. */
static bool livelock_ended(const struct stall_model *m, struct stall_report *r)
{
	if (m->o.progress || m->r.kind != STALL_LIVELOCK)
		return false;
	for (int i = 0; i < m->np; i++) {
		enum stall_kind k = m->p[i].verdict;

		if (m->p[i].pid == m->stalled_pid && k != STALL_NONE && k != STALL_LIVELOCK) {
			report_proc(m, i, r);
			return true;
		}
	}
	return false;
}

enum stall_event stall_judge(struct stall_model *m, uint64_t now_ns)
{
	struct stall_report r = { 0 };
	bool stalled;

	judge_all(m, now_ns, &r);
	if (m->stalled) {
		if (!moved(m, now_ns))
			return livelock_ended(m, &r) ? tell(m, now_ns, &r) : STALL_EV_NONE;
		m->stalled = false;
		m->r.moved_after_ns = now_ns - m->r.since_ns;
		return STALL_EV_MOVED;
	}
	if (m->o.progress) {
		stalled = now_ns - m->progress_ns >= m->o.threshold_ns;
		if (stalled && r.kind == STALL_NONE) {
			r.kind = STALL_NO_PROGRESS;
			r.proc = m->np ? 0 : -1;
		}
		r.since_ns = m->progress_ns;
	} else {
		stalled = r.kind != STALL_NONE;
		if (!stalled)
			m->pending_ns = 0;
		else if (!m->pending_ns)
			m->pending_ns = now_ns;
		/* Others still move: what they come to may say more. */
		if (stalled && job_moves(m, now_ns) &&
		    now_ns - m->pending_ns < m->o.threshold_ns)
			return STALL_EV_NONE;
	}
	return stalled ? tell(m, now_ns, &r) : STALL_EV_NONE;
}

/* --- asyncio ------------------------------------------------------------- */

/* Whether its event loop waits without a timeout: nothing scheduled,
 * only the world (or another thread) can wake it. */
static bool loop_untimed(const struct stall_proc *p)
{
	for (int i = 0; i < p->nt; i++)
		if (p->t[i].sys_known && p->t[i].sys_class == WC_IO && !p->t[i].sys_timed)
			return true;
	return false;
}

/* A task that awaits no other task, waiting on a locked asyncio.Lock. */
static bool waits_on_lock(const struct py_task *t)
{
	return t->wait.kind && !strcmp(t->wait.kind, "asyncio.Lock") && t->wait.state &&
	       !strcmp(t->wait.state, "locked");
}

/* Whether every pending task that awaits no other task waits on a locked
 * asyncio.Lock (whoever holds those locks waits too), and there is one. */
static bool all_on_locks(const struct py_tasks *tasks)
{
	int n = 0;

	for (int i = 0; i < tasks->n; i++) {
		const struct py_task *t = &tasks->v[i];

		if (t->state != TASK_PENDING || t->nawaiting)
			continue;
		if (!waits_on_lock(t))
			return false;
		n++;
	}
	return n > 0;
}

/* The names of the tasks in a cycle, or (cycles 0) of those waiting on
 * locks, at most WHY_TASKS of them. */
#define WHY_TASKS 8

static void put_tasks(struct strbuf *sb, const struct py_tasks *tasks, bool cycles)
{
	int n = 0;

	for (int i = 0; i < tasks->n; i++) {
		const struct py_task *t = &tasks->v[i];

		if (cycles ? t->cycle <= 0 : (t->state != TASK_PENDING || t->nawaiting))
			continue;
		if (n++ < WHY_TASKS) {
			sb_puts(sb, n > 1 ? ", \"" : "\"");
			sb_add_printable(sb, t->name ? t->name : "?");
			sb_putc(sb, '"');
		}
	}
	if (n > WHY_TASKS)
		sb_printf(sb, " and %d more", n - WHY_TASKS);
}

char *stall_async_why(const struct stall_proc *p, const struct py_tasks *tasks)
{
	struct strbuf sb = STRBUF_INIT;

	if (tasks->ncycles) {
		sb_puts(&sb, "asyncio tasks ");
		put_tasks(&sb, tasks, true);
		sb_printf(&sb, " await each other in %d cycle%s", tasks->ncycles,
			  tasks->ncycles == 1 ? "" : "s");
	} else if (loop_untimed(p) && all_on_locks(tasks)) {
		sb_puts(&sb, "asyncio tasks ");
		put_tasks(&sb, tasks, false);
		sb_puts(&sb, " each wait on a locked asyncio.Lock, and the event loop has "
			"nothing scheduled: the holders wait too");
	}
	return sb.len ? sb_detach(&sb) : NULL;
}
