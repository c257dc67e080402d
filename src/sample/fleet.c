/* Sampling a process tree: which processes to sample, and the loop.
 *
 * A process is named by its pid and start time; its image (what it runs
 * since its last exec) by where its code and stack start, which the kernel
 * places anew at every exec.  A worker started with "spawn" is first a copy of
 * its parent, then execs a fresh interpreter under the same pid: caught
 * in between, its sampler would go on reading the old layout, so a new
 * image means a new sampler.
 */
#include "sample/fleet.h"
#include "sample/fleetprio.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "process/selfstop.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* How many walks a process that is not (yet) Python is looked at again:
 * a fresh interpreter takes a few milliseconds to map libpython, a
 * launcher may exec one later; after a second, it is left alone unless it
 * execs. */
#define PENDING_TRIES 20
/* Longest command line shown in a root frame. */
#define LABEL_MAX 200

enum mstate {
	M_PENDING,	/* not Python yet, as far as we know */
	M_SAMPLING,
	M_SKIPPED,	/* not Python, or not ours to read */
};

struct member {
	struct proc_node node;
	enum mstate state;
	int tries;
	struct sampler *s;
	bool seen;	/* in the latest walk */
};

struct fleet {
	pid_t pid;
	struct sampler_opts so;
	struct fleet_opts fo;
	struct profile *p;
	struct member *m;
	int n;
	size_t cap;
	int ever;			/* processes sampled, ever */
	struct sampler_counts gone;	/* totals of samplers closed */
	uint64_t next_walk_ns;
	char *version;
	/* The first Python process's pid and command line, read when it
	 * was found: what the profile is of, not the launcher above it. */
	pid_t first_pid;
	char **first_argv;
	int first_argc;
	/* Why the first process that looked like Python could not be read
	 * (permission, version), to tell when none could: its exit code. */
	int why_code;
	char why[256];
	char merge_error[256];	/* the latest of a sampler closed since */
	struct proc_node walk[PROCTREE_MAX];
};

/* --- root frames ---------------------------------------------------------- */

/* Workers of one pool differ in their command lines only by numbers
 * (spawn's pipe_handle=7, a --rank 3): with --group-processes they are
 * one group.  The program's own path keeps its digits (python3.12). */
static void put_arg(struct strbuf *sb, const char *arg, bool numbers)
{
	for (const char *c = arg; *c; c++) {
		if (numbers || !isdigit((unsigned char)*c)) {
			sb_putc(sb, *c);
			continue;
		}
		sb_putc(sb, '#');
		while (isdigit((unsigned char)c[1]))
			c++;
	}
}

/* The command line of pid, for a root frame: "process PID: CMD", or for a
 * group "processes: CMD" with the numbers of its arguments as '#'. */
static char *root_label(pid_t pid, bool group)
{
	struct strbuf sb = STRBUF_INIT;
	int argc = 0;
	char **argv = proc_cmdline(pid, &argc);

	if (group)
		sb_puts(&sb, "processes: ");
	else
		sb_printf(&sb, "process %d: ", (int)pid);
	for (int i = 0; argv && i < argc && sb.len < LABEL_MAX; i++) {
		if (i)
			sb_putc(&sb, ' ');
		put_arg(&sb, argv[i], !group || i == 0);
	}
	proc_cmdline_free(argv);
	if (sb.len > LABEL_MAX) {
		sb.len = LABEL_MAX;
		sb.buf[sb.len] = 0;
		sb_puts(&sb, "...");
	}
	return sb_detach(&sb);
}

static void set_root(struct fleet *f, struct member *mb)
{
	char *label;

	if (!f->fo.subprocesses)
		return;
	label = root_label(mb->node.pid, f->fo.group && mb->node.pid != f->pid);
	sampler_set_root(mb->s, label);
	free(label);
}

/* --- members -------------------------------------------------------------- */

static void add_counts(struct sampler_counts *to, const struct sampler_counts *c)
{
	to->rounds += c->rounds;
	to->gil_rounds += c->gil_rounds;
	to->ft_rounds += c->ft_rounds;
	to->attached += c->attached;
	to->threads += c->threads;
	to->active += c->active;
	to->checked += c->checked;
	to->stacks += c->stacks;
	to->unchanged_stacks += c->unchanged_stacks;
	to->still_stacks += c->still_stacks;
	to->matched_stacks += c->matched_stacks;
	to->unready += c->unready;
	to->pauses += c->pauses;
	to->pause_ns += c->pause_ns;
	if (c->max_pause_ns > to->max_pause_ns)
		to->max_pause_ns = c->max_pause_ns;
	hist_merge(&to->pause_hist, &c->pause_hist);
	to->late += c->late;
	if (c->max_late > to->max_late)
		to->max_late = c->max_late;
	to->stops += c->stops;
	to->stopped_stacks += c->stopped_stacks;
	to->stop_ns += c->stop_ns;
	if (c->max_stop_ns > to->max_stop_ns)
		to->max_stop_ns = c->max_stop_ns;
	to->stop_refused |= c->stop_refused;
	for (int i = 0; i < SERR_COUNT; i++)
		to->errors[i] += c->errors[i];
}

static void stop_sampling(struct fleet *f, struct member *mb)
{
	struct sampler_counts c;

	if (!mb->s)
		return;
	sampler_counts(mb->s, &c);
	add_counts(&f->gone, &c);
	if (sampler_merge_error(mb->s))
		snprintf(f->merge_error, sizeof(f->merge_error), "%s", sampler_merge_error(mb->s));
	sampler_close(mb->s);
	mb->s = NULL;
}

/* Try to start sampling a member.  Returns 0, or what sampler_open() says
 * why not. */
static int try_open(struct fleet *f, struct member *mb, char *err, size_t errlen)
{
	int rc = sampler_open(mb->node.pid, &f->so, f->p, &mb->s, err, errlen);
	int code = exit_code(rc);

	if (rc < 0) {
		mb->tries++;
		if (code != EXIT_NOT_PYTHON || mb->tries >= PENDING_TRIES)
			mb->state = M_SKIPPED;
		if (code != EXIT_NOT_PYTHON && code != EXIT_NO_PROCESS && code != EXIT_EXITED &&
		    !f->why_code) {
			f->why_code = code;
			snprintf(f->why, sizeof(f->why), "%s", err);
		}
		return rc;
	}
	mb->state = M_SAMPLING;
	f->ever++;
	if (!f->version) {
		f->version = xstrdup(sampler_python_version(mb->s));
		f->first_pid = mb->node.pid;
		f->first_argv = proc_cmdline(mb->node.pid, &f->first_argc);
	}
	set_root(f, mb);
	return 0;
}

static struct member *add_member(struct fleet *f, const struct proc_node *node)
{
	struct member *mb;

	ALLOC_GROW(f->m, f->n + 1, f->cap);
	mb = &f->m[f->n++];
	memset(mb, 0, sizeof(*mb));
	mb->node = *node;
	mb->state = M_PENDING;
	return mb;
}

static struct member *find_member(struct fleet *f, pid_t pid)
{
	for (int i = 0; i < f->n; i++)
		if (f->m[i].node.pid == pid)
			return &f->m[i];
	return NULL;
}

/* Drop members not seen in the latest walk: they exited, or left the
 * tree (reparented when their parent exited). */
static void drop_unseen(struct fleet *f)
{
	int j = 0;

	for (int i = 0; i < f->n; i++) {
		if (!f->m[i].seen) {
			stop_sampling(f, &f->m[i]);
			continue;
		}
		f->m[i].seen = false;
		f->m[j++] = f->m[i];
	}
	f->n = j;
}

/* Is node still the process, and the program, that mb was made for? */
static bool same_image(const struct member *mb, const struct proc_node *node)
{
	return mb->node.start == node->start && mb->node.code == node->code &&
	       mb->node.stack == node->stack;
}

/* Bring the members up to date with the process tree. */
static void walk(struct fleet *f)
{
	char err[256];
	int n = f->fo.list ? f->fo.list(f->fo.list_arg, f->walk, PROCTREE_MAX) :
			     proctree_list(f->pid, f->walk, PROCTREE_MAX);

	for (int i = 0; i < n; i++) {
		const struct proc_node *node = &f->walk[i];
		struct member *mb = find_member(f, node->pid);

		if (mb && !same_image(mb, node)) {
			/* Another process under a reused pid, or an exec. */
			stop_sampling(f, mb);
			mb->node = *node;
			mb->state = M_PENDING;
			mb->tries = 0;
		}
		if (!mb)
			mb = add_member(f, node);
		mb->seen = true;
		if (mb->state == M_PENDING)
			try_open(f, mb, err, sizeof(err));
	}
	drop_unseen(f);
}

int fleet_open(pid_t pid, const struct sampler_opts *so, const struct fleet_opts *fo,
	       struct profile *p, struct fleet **out, char *err, size_t errlen)
{
	struct fleet *f = xcalloc(1, sizeof(*f));
	struct member *mb;
	int rc;

	*out = NULL;
	f->pid = pid;
	f->so = *so;
	f->fo = *fo;
	f->p = p;
	if (fo->subprocesses) {
		if (!fo->list && (rc = proc_check(pid)) < 0) {
			snprintf(err, errlen, "no such process: %d (%s)", (int)pid, NO_PROCESS_HINT);
			goto fail;
		}
		walk(f);
		/* Not allowed to read the target itself: the same answer as
		 * without -s, not an empty profile. */
		if (f->why_code == EXIT_PERMISSION && f->n && f->m[0].node.pid == pid &&
		    f->m[0].state == M_SKIPPED) {
			rc = status_fail(f->why_code);
			snprintf(err, errlen, "%s", f->why);
			goto fail;
		}
		*out = f;
		return 0;
	}
	/* One process: it must be Python, and it is never walked. */
	mb = add_member(f, &(struct proc_node){ .pid = pid });
	if ((rc = try_open(f, mb, err, errlen)) < 0)
		goto fail;
	f->next_walk_ns = UINT64_MAX;
	*out = f;
	return 0;
fail:
	fleet_close(f);
	return rc;
}

void fleet_close(struct fleet *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++)
		sampler_close(f->m[i].s);
	free(f->m);
	free(f->version);
	proc_cmdline_free(f->first_argv);
	free(f);
}

/* --- sampling ------------------------------------------------------------- */

static bool target_gone(struct fleet *f)
{
	if (!f->fo.subprocesses)
		return f->n == 0 || !f->m[0].s;
	if (f->fo.list)
		return f->n == 0;
	return find_member(f, f->pid) == NULL;
}

static void walk_if_due(struct fleet *f, uint64_t t_ns)
{
	if (f->fo.subprocesses && t_ns >= f->next_walk_ns) {
		walk(f);
		f->next_walk_ns = t_ns + (f->fo.walk_ns ? f->fo.walk_ns : FLEET_WALK_NS);
	}
}

/* One round: a sample of every process, and a walk of the tree when one
 * is due.  Returns 0, or what fleet_step() says when the target is gone. */
static int fleet_sample(struct fleet *f, uint64_t t_ns)
{
	walk_if_due(f, t_ns);
	for (int i = 0; i < f->n; i++) {
		struct member *mb = &f->m[i];
		int rc;

		if (mb->state != M_SAMPLING || !mb->s)
			continue;
		rc = sampler_sample(mb->s, t_ns);
		if (is_fail(rc, EXIT_EXITED)) {
			/* Gone, or going: the next walk drops it. */
			stop_sampling(f, mb);
			mb->state = M_SKIPPED;
		} else if (is_fail(rc, EXIT_NOT_PYTHON)) {
			/* It ran exec().  The target alone ends the run; a
			 * process of the tree may become Python again (a
			 * launcher, or spawn's fork then exec of a fresh
			 * interpreter, without ASLR to tell the walk). */
			stop_sampling(f, mb);
			if (!f->fo.subprocesses)
				return status_fail(EXIT_NOT_PYTHON);
			mb->state = M_PENDING;
			mb->tries = 0;
		}
	}
	if (target_gone(f))
		return status_fail(EXIT_EXITED);
	/* The target may be a shell that has exited while its children
	 * live on; then the walk no longer finds it and the run ends. */
	return 0;
}

void fleet_counts(const struct fleet *f, struct sampler_counts *c)
{
	*c = f->gone;
	c->nthreads = 0;
	for (int i = 0; i < f->n; i++) {
		struct sampler_counts one;

		if (!f->m[i].s)
			continue;
		sampler_counts(f->m[i].s, &one);
		add_counts(c, &one);
		c->nthreads += one.nthreads;
	}
}

int fleet_nprocs(const struct fleet *f)
{
	int n = 0;

	for (int i = 0; i < f->n; i++)
		n += f->m[i].s != NULL;
	return n;
}

int fleet_nprocs_ever(const struct fleet *f)
{
	return f->ever;
}

int fleet_why_none(const struct fleet *f, char *err, size_t errlen)
{
	if (!f->why_code) {
		snprintf(err, errlen, "no Python process found in the tree of process %d",
			 (int)f->pid);
		return status_fail(EXIT_NOT_PYTHON);
	}
	snprintf(err, errlen, "%s", f->why);
	return status_fail(f->why_code);
}

const char *fleet_merge_error(const struct fleet *f)
{
	for (int i = 0; i < f->n; i++)
		if (f->m[i].s && sampler_merge_error(f->m[i].s))
			return sampler_merge_error(f->m[i].s);
	return f->merge_error[0] ? f->merge_error : NULL;
}

const char *fleet_python_version(const struct fleet *f)
{
	return f->version;
}

char **fleet_python_cmdline(const struct fleet *f, pid_t *pid, int *argc)
{
	*pid = f->first_pid;
	*argc = f->first_argc;
	return f->first_argv;
}

void fleet_set_idle(struct fleet *f, bool idle)
{
	f->so.idle = idle;
	for (int i = 0; i < f->n; i++)
		if (f->m[i].s)
			sampler_set_idle(f->m[i].s, idle);
}

/* --- the loop ------------------------------------------------------------- */

/* The kernel may wake a sleeper up to its timer slack late (50 us by
 * default), which at 20 kHz and above is a whole interval.  A tenth of the
 * interval keeps the rate, and at low rates the default lets the kernel
 * batch wake-ups. */
static void set_slack(uint64_t interval_ns)
{
	unsigned long slack = interval_ns / 10;

	if (slack > 50000)
		slack = 50000;
	prctl(PR_SET_TIMERSLACK, slack ? slack : 1, 0, 0, 0);
}

void fleet_start(struct fleet *f, struct fleet_clock *c)
{
	if (f->fo.no_priority)
		fleet_prio_forbid();
	memset(c, 0, sizeof(*c));
	c->interval_ns = sampler_interval_ns(f->so.rate_hz);
	set_slack(c->interval_ns);
	c->suspend_seen = selfstop_total_ns();
	c->start_ns = mono_ns();
	c->cell_ns = c->deadline_ns = c->start_ns;
	rng_seed_auto(&c->rng);
	if (f->so.duration_s > 0)
		c->end_ns = c->start_ns + (uint64_t)(f->so.duration_s * 1e9);
}

/* After a round: the next cell, one interval on, and its instant (see
 * fleet.h).  Late but within the next cell, or past its instant, the next
 * round starts at once (no sleep); once the whole next cell is past, the
 * cells missed are skipped (and counted) instead of fired in a burst, and
 * the round is due in the cell now under way: one round per cell stays
 * the rate aimed at.  The lag is the time since the first cell missed
 * began, a whole interval or more, as on a grid of deadlines. */
void fleet_clock_advance(struct fleet_clock *c, uint64_t now)
{
	uint64_t interval = c->interval_ns, missed;

	c->rounds++;
	c->cell_ns += interval;
	if (interval && now >= c->cell_ns + interval) {
		c->lagged++;
		if (now - c->cell_ns > c->max_lag_ns)
			c->max_lag_ns = now - c->cell_ns;
		missed = (now - c->cell_ns) / interval;
		c->skipped += missed;
		c->cell_ns += missed * interval;
	}
	c->deadline_ns = c->cell_ns + rng_below(&c->rng, interval);
	if (c->end_ns && c->deadline_ns > c->end_ns)
		c->deadline_ns = c->end_ns;
}

/* Shift the clock's schedule (its cell, the instant due in it, and the
 * end) d later: time that was not sampling's. */
static void clock_shift(struct fleet_clock *c, uint64_t d)
{
	c->cell_ns += d;
	c->deadline_ns += d;
	if (c->end_ns)
		c->end_ns += d;
}

/* Move the clock past the time pystrobe was stopped since it last
 * looked: the rounds it missed were not its to take. */
static void skip_stopped(struct fleet_clock *c)
{
	uint64_t total = selfstop_total_ns(), d = total - c->suspend_seen;

	if (!d)
		return;
	c->suspend_seen = total;
	c->stopped_ns += d;
	clock_shift(c, d);
}

/* The first round reads every process for the first time: its threads'
 * names, its code objects, with --native the unwind tables and symbols of
 * every library on its stacks (many intervals for a 200-thread torch
 * process: bench/README, "scale").  That is start-up, as pystrobe's own
 * is: the clock starts over at its end, so that it is neither lag nor
 * skipped rounds, and the
 * duration and the rate are of the sampling after it.  A process found
 * later (-s) pays its own first round as lag. */
static void first_round(struct fleet_clock *c, uint64_t began, uint64_t interval)
{
	uint64_t took = mono_ns() - began;

	if (took <= interval)
		return;
	c->startup_ns = took - interval;
	clock_shift(c, c->startup_ns);
}

int fleet_step(struct fleet *f, struct fleet_clock *c)
{
	uint64_t now = mono_ns();
	int rc;

	skip_stopped(c);

	if (c->end_ns && now >= c->end_ns)
		return FLEET_OVER;
	if (now < c->deadline_ns) {
		/* At a low rate the tree is still walked every 50 ms, so a
		 * new worker's first sample is its first due one. */
		walk_if_due(f, now - c->start_ns);
		return FLEET_WAIT;
	}
	hist_add(&c->late, now - c->deadline_ns);
	if (now - c->deadline_ns >= FLEET_LATE_NS)
		c->late_rounds++;
	rc = fleet_sample(f, now - c->start_ns);
	if (rc < 0)
		return rc;
	if (!c->rounds)
		first_round(c, now, c->interval_ns);
	fleet_clock_advance(c, mono_ns());
	return FLEET_ROUND;
}

uint64_t fleet_due(const struct fleet *f, const struct fleet_clock *c)
{
	/* Without subprocesses next_walk_ns is UINT64_MAX: never. */
	if (f->fo.subprocesses && c->start_ns + f->next_walk_ns < c->deadline_ns)
		return c->start_ns + f->next_walk_ns;
	return c->deadline_ns;
}

/* --- waiting for a deadline ------------------------------------------------
 *
 * A sleep ends late: by the timer slack, the wake-up itself and, on a busy
 * machine, the time the woken task waits for a CPU.  Late by less than an
 * interval minus a round costs nothing (deadlines are absolute: the next
 * round is on time), so at ordinary rates the loop only sleeps.  At the
 * highest rates wake-ups end nearly an interval late even on an idle
 * machine at a small slack (bench/README, "rates"): every such round
 * would lag.  So where the lateness of its sleeps is half an interval or
 * more, the loop sleeps until that much before the deadline and spins the
 * rest, and where even that leaves no time to sleep, it only spins.
 * Spinning is CPU spent for the rate, and counted in it: only at intervals
 * up to SPIN_INTERVAL_NS, at most an interval per round. */

/* The longest interval at which the loop may spin (4 kHz and up). */
#define SPIN_INTERVAL_NS 250000ull
/* Margin added to the lateness estimate, for its spread. */
#define SPIN_HEADROOM_NS 3000ull
/* Spinning through whole intervals, the estimate is halved this often, so
 * that a sleep is tried again (wake-ups get faster when the machine
 * quietens): a lagged round at most every second or so. */
#define SPIN_DECAY_NS 500000000ull

struct waiter {
	uint64_t interval;
	uint64_t late_ns;	/* how late a sleep ends, estimated */
	uint64_t spin_since;	/* spinning whole intervals since, or 0 */
	bool can_spin;		/* interval short enough to spin */
	bool realtime;		/* the loop is at real-time priority: never spin */
};

static void waiter_init(struct waiter *w, uint64_t interval_ns)
{
	memset(w, 0, sizeof(*w));
	w->interval = interval_ns;
	w->can_spin = interval_ns && interval_ns <= SPIN_INTERVAL_NS;
}

/* A sleep that ended `late` ns after it was due.  The estimate follows the
 * low part of the spread (down fast, up slowly): what a wake-up costs when
 * a CPU is free.  The long tail is waiting for a CPU, which spinning does
 * not shorten (a spinner on a busy CPU is preempted as well), and spinning
 * for it would take that CPU from the target. */
static void waiter_learn(struct waiter *w, uint64_t late)
{
	if (late > w->interval)
		late = w->interval;
	if (late > w->late_ns)
		w->late_ns += (late - w->late_ns) / 8;
	else
		w->late_ns -= (w->late_ns - late) / 4;
}

/* How long before a deadline to stop sleeping and spin. */
static uint64_t spin_margin(const struct waiter *w)
{
	if (!w->can_spin || w->realtime || 2 * w->late_ns < w->interval)
		return 0;
	return w->late_ns + SPIN_HEADROOM_NS;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void spin_until(uint64_t ns, uint64_t now, volatile sig_atomic_t *stop)
{
	while (now < ns && !*stop) {
		cpu_relax();
		now = mono_ns();
	}
}

/* Wait until ns, unless it has passed: a round that is late starts at
 * once, without a trip through the scheduler. */
static void wait_until(struct waiter *w, uint64_t ns, volatile sig_atomic_t *stop)
{
	uint64_t now = mono_ns(), margin = spin_margin(w), wake;
	struct timespec ts;

	if (now >= ns)
		return;
	if (margin >= ns - now) {
		if (!w->spin_since) {
			w->spin_since = now;
		} else if (now - w->spin_since >= SPIN_DECAY_NS) {
			w->late_ns /= 2;
			w->spin_since = now;
		}
		spin_until(ns, now, stop);
		return;
	}
	w->spin_since = 0;
	wake = ns - margin;
	ts = (struct timespec){ (time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull) };
	/* Interrupted by a signal: the caller checks its stop flag. */
	if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		return;
	if (!w->can_spin || w->realtime)
		return;
	now = mono_ns();
	waiter_learn(w, now > wake ? now - wake : 0);
	spin_until(ns, now, stop);
}

static void fill_status(const struct fleet *f, const struct fleet_clock *c,
			struct sampler_status *st)
{
	struct sampler_counts counts;

	fleet_counts(f, &counts);
	st->elapsed_s = (mono_ns() - c->start_ns - c->stopped_ns - c->startup_ns) / 1e9;
	st->rounds = c->rounds;
	st->stacks = counts.stacks;
	memcpy(st->errors, counts.errors, sizeof(st->errors));
	st->rate_hz = st->elapsed_s > 0 ? c->rounds / st->elapsed_s : 0;
	st->processes = fleet_nprocs(f);
	st->processes_ever = fleet_nprocs_ever(f);
	st->lagged = c->lagged;
	st->skipped = c->skipped;
	st->max_lag_ms = c->max_lag_ns / 1e6;
	st->late_rounds = c->late_rounds;
	st->late_p99_ms = hist_quantile(&c->late, 0.99) / 1e6;
}

void fleet_run(struct fleet *f, volatile sig_atomic_t *stop,
	       void (*status)(void *arg, const struct sampler_status *st), void *arg,
	       struct sampler_status *final)
{
	struct sampler_counts counts;
	struct fleet_clock c;
	struct waiter w;
	struct fleet_prio prio = { 0 };
	uint64_t next_status;
	int rc = FLEET_WAIT;

	memset(final, 0, sizeof(*final));
	fleet_start(f, &c);
	waiter_init(&w, c.interval_ns);
	next_status = c.start_ns;
	while (!*stop) {
		rc = fleet_step(f, &c);
		if (rc < 0 || rc == FLEET_OVER)
			break;
		fleet_prio_after(&prio, rc == FLEET_ROUND);
		w.realtime = prio.realtime;
		if (rc == FLEET_ROUND && status && mono_ns() >= next_status) {
			struct sampler_status st = { 0 };

			fill_status(f, &c, &st);
			status(arg, &st);
			next_status = mono_ns() + 250000000ull;
		}
		wait_until(&w, fleet_due(f, &c), stop);
	}
	fleet_prio_end(&prio);
	fill_status(f, &c, final);
	final->target_exited = is_fail(rc, EXIT_EXITED);
	final->target_execd = is_fail(rc, EXIT_NOT_PYTHON);
	final->duration_over = rc == FLEET_OVER;
	f->p->duration_ns = mono_ns() - c.start_ns - c.stopped_ns - c.startup_ns;
	fleet_counts(f, &counts);
	f->p->rounds_lost = final->errors[SERR_STATE] + final->errors[SERR_PAUSE];
	f->p->rounds_due = counts.rounds + f->p->rounds_lost;
	f->p->errors = 0;
	for (int i = 0; i < SERR_COUNT; i++)
		if (serr_is_error(i))
			f->p->errors += final->errors[i];
}
