/* pystrobe top: a live, top-like view of where a Python process spends its
 * time.
 *
 * One thread does everything: it steps the fleet's sampling clock (the
 * rounds and walks fleet_run makes), and between them it reads keys and,
 * every --delay
 * seconds, ends an interval and redraws.  The samples of an interval are
 * read from the profile's runs, which carry the thread, and then dropped,
 * so memory does not grow with the length of the session: each (thread,
 * stack) pair keeps a cumulative count and the count of the last interval.
 * The table is computed from those: a function's own samples are the
 * stacks it is the leaf of, its total samples the stacks it is on
 * (counted once per stack, however deep it recurses).
 *
 * Everything the target names (functions, files, threads, its command
 * line) goes through sb_add_printable() before it reaches the terminal.
 */
#define NCURSES_WIDECHAR 1

#include "cmd/cmd.h"
#include "sample/fleet.h"
#include "target/pause.h"
#include "target/launch.h"
#include "python/locate.h"
#include "target/mem.h"
#include "target/proc.h"
#include "profile/profile.h"
#include "sample/sampler.h"
#include "cmd/quit.h"
#include "sample/target_opts.h"
#include "util/util.h"

#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

static const char top_usage[] =
	"usage: pystrobe top [options] --pid PID\n"
	"       pystrobe top [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Show live which functions a Python process spends its time in.\n"
	"\n"
	"  -p, --pid PID          watch a running process\n"
	"  -r, --rate HZ          samples per second (default 100)\n"
	"  -d, --delay SECS       refresh every SECS seconds (default 1)\n"
	"      --idle             include threads that are not running\n"
	"      --gil              only the thread holding the GIL\n"
	"      --function         aggregate by function instead of line\n"
	"      --full-filenames   show whole file paths\n"
	"      --blocking         pause the threads for each sample (exact stacks)\n"
	"      --native           C/C++ functions too, merged with the Python ones\n"
	"                         (pauses the threads: implies --blocking)\n"
	"  -s, --subprocesses     also every process started by the target\n"
	"  -h, --help             show this help\n"
	"\n"
	"Columns: %Own and %Total are shares of the last refresh interval (100% is\n"
	"one thread for the whole interval) in which the function was running\n"
	"itself, or was anywhere on the stack; OwnTime and TotalTime are the same\n"
	"in seconds since the start.\n"
	"\n"
	"Keys: 1-4 sort by column, L lines/functions, I idle threads, T all, one\n"
	"process or one thread, / filter, Space pause, R reset, ? help, q quit.\n"
	"\n"
	"When standard output is not a terminal, a plain-text snapshot (the top 20\n"
	"rows) is printed every --delay seconds until the target exits or SIGINT.\n"
	"A launched command's input and output are /dev/null while the full-screen\n"
	"view is shown.  q ends it (SIGTERM) if it is still running, and pystrobe\n"
	"exits with its status.\n";

#define SNAPSHOT_ROWS	20
#define CHILD_GRACE_MS	5000	/* after quitting, before SIGKILL */
#define HEADER_LINES	4	/* above the column titles */

enum sort_col { SORT_OWN_PCT, SORT_TOTAL_PCT, SORT_OWN_TIME, SORT_TOTAL_TIME };

static const char *const sort_names[] = { "%Own", "%Total", "OwnTime", "TotalTime" };

/* Samples of one thread with one stack. */
struct entry {
	uint32_t thread, stack;
	uint64_t cum;		/* since the start or the reset */
	uint64_t last;		/* in the last interval */
};

struct row {
	const char *label;	/* printable; owned by the label caches */
	uint64_t own, total;	/* samples since the start or the reset */
	uint64_t own_last, total_last;	/* in the last interval */
};

/* What the header shows, as of the end of an interval. */
struct stats {
	double elapsed_s;	/* since the start or the reset */
	uint64_t samples;	/* sampling rounds since then */
	double interval_s;	/* length of the interval */
	uint64_t rounds;	/* sampling rounds in it */
	uint64_t lagged;	/* rounds in it that started late */
	double max_lag_ms;
	double error_pct, gil_pct, active_pct;	/* < 0: nothing to tell */
	int nthreads;
	int nprocs;		/* processes sampled now */
};

struct top {
	struct target_opts o;
	double delay_s;		/* --delay */
	struct profile p;
	struct fleet *f;
	pid_t pid;
	struct child child;	/* launch mode */
	char *what;		/* the command line, printable */
	char *version;		/* the Python version, printable, or NULL */
	bool tty;		/* full screen, else snapshots */
	bool quit;

	/* sampling */
	struct fleet_clock clock;
	bool exited;

	/* the interval under way */
	uint64_t iv_start_ns, iv_rounds, iv_lagged;	/* clock counts at its start */
	struct sampler_counts iv_base;
	uint64_t reset_ns, reset_rounds;
	uint64_t next_refresh;
	struct stats live;	/* as of the latest interval */

	/* (thread, stack) -> samples */
	struct entry *entries;
	uint32_t nentries, entries_cap;
	uint32_t *entry_index;	/* open addressing: entry + 1 */
	uint32_t entry_index_size;

	/* printable labels of frames, and of functions (name + file) */
	char **frame_labels;
	uint32_t nframe_labels;
	struct profile funcs;	/* interns functions: its frames have line -1 */
	uint32_t *func_of;	/* profile frame -> funcs frame */
	uint32_t nfunc_of;
	char **func_labels;
	uint32_t nfunc_labels;

	/* the view */
	struct row *rows;
	uint32_t nrows, rows_cap;
	struct stats shown;
	enum sort_col sort;
	bool by_function;
	int thread_sel;		/* -1: all threads, else a profile thread */
	pid_t proc_sel;		/* 0: all processes, else the one shown */
	bool paused, help, prompting;
	char filter[256];	/* UTF-8 */
	int scroll;
	bool dirty;
	bool utf8;		/* the terminal's locale is UTF-8 */
	bool colors;
	SCREEN *scr;
};

/* --- signals and the terminal -------------------------------------------- */

static bool curses_on;

static void install_signals(void)
{
	quit_on_signals();
	/* A closed pipe ends the snapshots through a failed write instead. */
	signal(SIGPIPE, SIG_IGN);
}

static void restore_terminal(void)
{
	if (curses_on) {
		curses_on = false;
		endwin();
	}
}

/* A crash must not leave the terminal raw and on the alternate screen
 * either; endwin() is not async-signal-safe, but we are dying anyway. */
static void on_crash(int sig)
{
	restore_terminal();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_crash_handlers(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on_crash);
}

enum {
	PAIR_BAR = 1,		/* key bar labels */
	PAIR_TITLES,		/* column titles */
	PAIR_SORTED,		/* the sorted column's title */
	PAIR_WARN,
	PAIR_BANNER,
	PAIR_LABEL,		/* header labels */
	PAIR_TITLE,		/* the program's name */
};

static int start_curses(struct top *t)
{
	const char *codeset;

	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		errorf("top: cannot use the terminal (TERM=%s)",
		       getenv("TERM") ? getenv("TERM") : "");
		return -1;
	}
	set_term(t->scr);
	curses_on = true;
	atexit(restore_terminal);
	install_crash_handlers();
	codeset = nl_langinfo(CODESET);
	t->utf8 = codeset && !strcmp(codeset, "UTF-8");
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	t->colors = has_colors();
	if (t->colors) {
		start_color();
		use_default_colors();
		init_pair(PAIR_BAR, COLOR_BLACK, COLOR_CYAN);
		init_pair(PAIR_TITLES, COLOR_BLACK, COLOR_GREEN);
		init_pair(PAIR_SORTED, COLOR_BLACK, COLOR_CYAN);
		init_pair(PAIR_WARN, COLOR_RED, -1);
		init_pair(PAIR_BANNER, COLOR_WHITE, COLOR_RED);
		init_pair(PAIR_LABEL, COLOR_CYAN, -1);
		init_pair(PAIR_TITLE, COLOR_GREEN, -1);
	}
	return 0;
}

static attr_t color(const struct top *t, int pair, attr_t mono)
{
	return t->colors ? COLOR_PAIR(pair) : mono;
}

/* --- small helpers -------------------------------------------------------- */

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

static void fmt_secs(char *buf, size_t size, double s)
{
	if (s < 1e4)
		snprintf(buf, size, "%.2fs", s);
	else if (s < 1e6)
		snprintf(buf, size, "%.0fs", s);
	else
		snprintf(buf, size, "%.0fh", s / 3600);
}

static void fmt_elapsed(char *buf, size_t size, double s)
{
	unsigned long v = (unsigned long)s;

	if (v >= 3600)
		snprintf(buf, size, "%lu:%02lu:%02lu", v / 3600, v / 60 % 60, v % 60);
	else
		snprintf(buf, size, "%lu:%02lu", v / 60, v % 60);
}

static void fmt_pct(char *buf, size_t size, double v)
{
	if (v < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.1f%%", v);
}

/* --- samples per (thread, stack) ------------------------------------------ */

static uint32_t entry_slot(uint64_t key, uint32_t size)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (size - 1);
}

static void entry_index_grow(struct top *t)
{
	uint32_t size = t->entry_index_size ? t->entry_index_size * 2 : 1024;
	uint32_t *idx = xcalloc(size, sizeof(*idx));

	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct entry *e = &t->entries[i];
		uint32_t slot = entry_slot((uint64_t)e->thread << 32 | e->stack, size);

		while (idx[slot])
			slot = (slot + 1) & (size - 1);
		idx[slot] = i + 1;
	}
	free(t->entry_index);
	t->entry_index = idx;
	t->entry_index_size = size;
}

static struct entry *entry_get(struct top *t, uint32_t thread, uint32_t stack)
{
	uint64_t key = (uint64_t)thread << 32 | stack;
	uint32_t slot, i;
	struct entry *e;

	if ((t->nentries + 1) * 2 > t->entry_index_size)
		entry_index_grow(t);
	slot = entry_slot(key, t->entry_index_size);
	while ((i = t->entry_index[slot])) {
		e = &t->entries[i - 1];
		if (e->thread == thread && e->stack == stack)
			return e;
		slot = (slot + 1) & (t->entry_index_size - 1);
	}
	if (t->nentries == t->entries_cap) {
		t->entries_cap = t->entries_cap ? t->entries_cap * 2 : 256;
		t->entries = xrealloc(t->entries, t->entries_cap * sizeof(*t->entries));
	}
	e = &t->entries[t->nentries];
	memset(e, 0, sizeof(*e));
	e->thread = thread;
	e->stack = stack;
	t->entry_index[slot] = ++t->nentries;
	return e;
}

/* Move the samples since the last look from the profile's runs into the
 * entries' cumulative counts (with cum) and those of the last interval
 * (with last), and drop the runs: top needs no timeline. */
static void take_runs(struct top *t, bool cum, bool last)
{
	struct profile *p = &t->p;

	for (uint32_t i = 0; i < p->nruns && (cum || last); i++) {
		const struct prun *r = &p->runs[i];
		struct entry *e = entry_get(t, r->thread, r->stack);

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

static const char *frame_label(struct top *t, uint32_t id)
{
	if (id >= t->nframe_labels) {
		uint32_t n = t->p.nframes;

		t->frame_labels = xrealloc(t->frame_labels, n * sizeof(*t->frame_labels));
		memset(t->frame_labels + t->nframe_labels, 0,
		       (n - t->nframe_labels) * sizeof(*t->frame_labels));
		t->nframe_labels = n;
	}
	if (!t->frame_labels[id]) {
		char *raw = pframe_label(&t->p.frames[id], t->o.full_filenames);

		t->frame_labels[id] = printable(raw);
		free(raw);
	}
	return t->frame_labels[id];
}

/* The function (name + file) of a profile frame, as an id in t->funcs. */
static uint32_t func_of(struct top *t, uint32_t id)
{
	if (id >= t->nfunc_of) {
		uint32_t n = t->p.nframes;

		t->func_of = xrealloc(t->func_of, n * sizeof(*t->func_of));
		for (uint32_t i = t->nfunc_of; i < n; i++) {
			const struct pframe *f = &t->p.frames[i];
			struct pframe fn = { f->kind, f->name, f->file, -1, f->firstlineno };

			t->func_of[i] = profile_frame(&t->funcs, &fn);
		}
		t->nfunc_of = n;
	}
	return t->func_of[id];
}

static const char *func_label(struct top *t, uint32_t id)
{
	if (id >= t->nfunc_labels) {
		uint32_t n = t->funcs.nframes;

		t->func_labels = xrealloc(t->func_labels, n * sizeof(*t->func_labels));
		memset(t->func_labels + t->nfunc_labels, 0,
		       (n - t->nfunc_labels) * sizeof(*t->func_labels));
		t->nfunc_labels = n;
	}
	if (!t->func_labels[id]) {
		char *raw = pframe_label(&t->funcs.frames[id], t->o.full_filenames);

		t->func_labels[id] = printable(raw);
		free(raw);
	}
	return t->func_labels[id];
}

/* --- the table ------------------------------------------------------------ */

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;	/* larger first */
}

static enum sort_col sort_by;

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	uint64_t ka[3], kb[3];
	int c;

	switch (sort_by) {
	case SORT_OWN_PCT:
		ka[0] = a->own_last, ka[1] = a->own, ka[2] = a->total_last;
		kb[0] = b->own_last, kb[1] = b->own, kb[2] = b->total_last;
		break;
	case SORT_TOTAL_PCT:
		ka[0] = a->total_last, ka[1] = a->total, ka[2] = a->own_last;
		kb[0] = b->total_last, kb[1] = b->total, kb[2] = b->own_last;
		break;
	case SORT_OWN_TIME:
		ka[0] = a->own, ka[1] = a->own_last, ka[2] = a->total;
		kb[0] = b->own, kb[1] = b->own_last, kb[2] = b->total;
		break;
	default:
		ka[0] = a->total, ka[1] = a->total_last, ka[2] = a->own;
		kb[0] = b->total, kb[1] = b->total_last, kb[2] = b->own;
		break;
	}
	for (int i = 0; i < 3; i++)
		if ((c = cmp_u64(ka[i], kb[i])))
			return c;
	return strcmp(a->label, b->label);
}

static void sort_rows(struct top *t)
{
	sort_by = t->sort;
	if (t->nrows > 1)
		qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
}

/* A row of the table: Python functions, and C ones with --native. */
static bool is_function(const struct pframe *f)
{
	return f->kind == PF_PYTHON || f->kind == PF_NATIVE;
}

/* Rebuild the rows from the entries of the thread(s) shown. */
static void build_rows(struct top *t)
{
	struct profile *p = &t->p;
	uint32_t nkeys, visit = 0;
	uint64_t *own, *own_last, *total, *total_last;
	uint32_t *stamp;

	if (t->by_function) {
		if (p->nframes)
			func_of(t, p->nframes - 1);
		nkeys = t->funcs.nframes;
	} else {
		nkeys = p->nframes;
	}
	own = xcalloc(nkeys + 1, sizeof(*own));
	own_last = xcalloc(nkeys + 1, sizeof(*own_last));
	total = xcalloc(nkeys + 1, sizeof(*total));
	total_last = xcalloc(nkeys + 1, sizeof(*total_last));
	stamp = xcalloc(nkeys + 1, sizeof(*stamp));

	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct entry *e = &t->entries[i];
		const struct pstack *st = &p->stacks[e->stack];
		uint32_t leaf, key;

		if (t->thread_sel >= 0 && e->thread != (uint32_t)t->thread_sel)
			continue;
		if (t->proc_sel && p->threads[e->thread].pid != t->proc_sel)
			continue;
		if ((!e->cum && !e->last) || !st->depth)
			continue;
		leaf = st->frames[st->depth - 1];
		if (is_function(&p->frames[leaf])) {
			key = t->by_function ? func_of(t, leaf) : leaf;
			own[key] += e->cum;
			own_last[key] += e->last;
		}
		/* Once per stack, however often a function recurses in it. */
		visit++;
		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t f = st->frames[d];

			if (!is_function(&p->frames[f]))
				continue;
			key = t->by_function ? func_of(t, f) : f;
			if (stamp[key] == visit)
				continue;
			stamp[key] = visit;
			total[key] += e->cum;
			total_last[key] += e->last;
		}
	}

	t->nrows = 0;
	for (uint32_t k = 0; k < nkeys; k++) {
		struct row *r;

		if (!total[k] && !total_last[k])
			continue;
		if (t->nrows == t->rows_cap) {
			t->rows_cap = t->rows_cap ? t->rows_cap * 2 : 256;
			t->rows = xrealloc(t->rows, t->rows_cap * sizeof(*t->rows));
		}
		r = &t->rows[t->nrows++];
		r->label = t->by_function ? func_label(t, k) : frame_label(t, k);
		r->own = own[k];
		r->own_last = own_last[k];
		r->total = total[k];
		r->total_last = total_last[k];
	}
	free(own);
	free(own_last);
	free(total);
	free(total_last);
	free(stamp);
	sort_rows(t);
}

static bool row_shown(const struct top *t, const struct row *r)
{
	return !t->filter[0] || strcasestr(r->label, t->filter);
}

static uint32_t rows_shown(const struct top *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nrows; i++)
		n += row_shown(t, &t->rows[i]);
	return n;
}

/* The view shows the latest interval. */
static void update_view(struct top *t)
{
	t->shown = t->live;
	build_rows(t);
	t->dirty = true;
}

/* --- intervals ------------------------------------------------------------ */

static void end_interval(struct top *t, uint64_t now)
{
	struct sampler_counts c;
	struct stats *st = &t->live;
	uint64_t rounds, errors = 0, stacks;

	for (uint32_t i = 0; i < t->nentries; i++)
		t->entries[i].last = 0;
	take_runs(t, true, true);

	fleet_counts(t->f, &c);
	rounds = c.rounds - t->iv_base.rounds;
	for (int i = 0; i < SERR_COUNT; i++)
		errors += c.errors[i] - t->iv_base.errors[i];
	stacks = c.stacks - t->iv_base.stacks;
	/* A merge error's stack is counted too, with its Python frames:
	 * out of the stacks, not on top of them. */
	stacks -= c.errors[SERR_MERGE] - t->iv_base.errors[SERR_MERGE];

	st->elapsed_s = (now - t->reset_ns) / 1e9;
	st->samples = t->clock.rounds - t->reset_rounds;
	st->interval_s = (now - t->iv_start_ns) / 1e9;
	st->rounds = t->clock.rounds - t->iv_rounds;
	st->lagged = t->clock.lagged - t->iv_lagged;
	st->max_lag_ms = t->clock.max_lag_ns / 1e6;
	st->gil_pct = rounds ? pct(c.gil_rounds - t->iv_base.gil_rounds, rounds) : -1;
	st->active_pct = c.threads > t->iv_base.threads ?
		pct(c.active - t->iv_base.active, c.threads - t->iv_base.threads) : -1;
	st->error_pct = errors + stacks ? pct(errors, errors + stacks) : rounds ? 0 : -1;
	st->nthreads = c.nthreads;
	st->nprocs = fleet_nprocs(t->f);
	if (!t->version && fleet_python_version(t->f))
		t->version = printable(fleet_python_version(t->f));

	t->iv_base = c;
	t->iv_start_ns = now;
	t->iv_rounds = t->clock.rounds;
	t->iv_lagged = t->clock.lagged;
	t->clock.max_lag_ns = 0;
}

/* Start counting afresh: R, and a change of what is sampled. */
static void reset_counts(struct top *t)
{
	uint64_t now = mono_ns();

	take_runs(t, false, false);
	for (uint32_t i = 0; i < t->nentries; i++)
		t->entries[i].cum = t->entries[i].last = 0;
	fleet_counts(t->f, &t->iv_base);
	t->iv_start_ns = now;
	t->iv_rounds = t->clock.rounds;
	t->iv_lagged = t->clock.lagged;
	t->clock.max_lag_ns = 0;
	t->reset_ns = now;
	t->reset_rounds = t->clock.rounds;
	memset(&t->live, 0, sizeof(t->live));
	t->live.gil_pct = t->live.active_pct = t->live.error_pct = -1;
	t->live.nthreads = t->shown.nthreads;
	t->live.nprocs = t->shown.nprocs;
	t->next_refresh = now + (uint64_t)(t->delay_s * 1e9);
	t->scroll = 0;
	update_view(t);
}

/* --- the process ---------------------------------------------------------- */

/* End a launched command and return its exit status.  sig is how we were
 * asked to stop: q ends the command with SIGTERM. */
static int finish_child(struct top *t, int sig)
{
	return child_finish(&t->child, sig, CHILD_GRACE_MS);
}

static void print_snapshot(struct top *t);

static void target_exited(struct top *t)
{
	uint64_t now;

	t->exited = true;
	child_reap(&t->child, 2000);
	now = mono_ns();
	if (t->live.rounds && t->clock.rounds - t->iv_rounds < t->delay_s * t->o.so.rate_hz / 2) {
		/* The last bit of an interval would give noisy shares: its
		 * samples go to the times only. */
		take_runs(t, true, false);
		t->live.samples = t->clock.rounds - t->reset_rounds;
		t->live.elapsed_s = (now - t->reset_ns) / 1e9;
	} else {
		end_interval(t, now);
	}
	update_view(t);
	t->paused = false;
	if (!t->tty) {
		print_snapshot(t);
		if (t->child.pid && t->child.reaped)
			printf("pystrobe top: process %d exited (status %d)\n", (int)t->pid,
			       child_exit_status(&t->child));
		else
			printf("pystrobe top: process %d exited\n", (int)t->pid);
		fflush(stdout);
	}
}

/* --- plain-text snapshots ------------------------------------------------- */

static void stats_line(const struct top *t, struct strbuf *sb)
{
	const struct stats *st = &t->shown;
	char e[16], g[16], a[16];

	fmt_pct(e, sizeof(e), st->error_pct);
	fmt_pct(g, sizeof(g), st->gil_pct);
	fmt_pct(a, sizeof(a), st->active_pct);
	sb_printf(sb, "%.1f s, %llu samples, %.1f Hz, errors %s, GIL %s, active %s, %d thread%s",
		  st->elapsed_s, (unsigned long long)st->samples,
		  st->interval_s > 0 ? st->rounds / st->interval_s : 0, e, g, a, st->nthreads,
		  st->nthreads == 1 ? "" : "s");
	if (t->o.fo.subprocesses)
		sb_printf(sb, ", %d process%s", st->nprocs, st->nprocs == 1 ? "" : "es");
	if (st->lagged)
		sb_printf(sb, ", LAGGING (%llu late, up to %.1f ms)",
			  (unsigned long long)st->lagged, st->max_lag_ms);
}

static void row_text(const struct top *t, const struct row *r, char *buf, size_t size)
{
	char ot[24], tt[24];
	double iv = t->p.interval_ns / 1e9;

	fmt_secs(ot, sizeof(ot), r->own * iv);
	fmt_secs(tt, sizeof(tt), r->total * iv);
	snprintf(buf, size, "%6.1f %7.1f %9s %10s  ", pct(r->own_last, t->shown.rounds),
		 pct(r->total_last, t->shown.rounds), ot, tt);
}

static const char *titles_text(const struct top *t)
{
	return t->by_function ? "  %Own  %Total   OwnTime  TotalTime  Function (file)"
			      : "  %Own  %Total   OwnTime  TotalTime  Function (file:line)";
}

static void print_snapshot(struct top *t)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t n = 0;

	sb_printf(&sb, "pystrobe top: pid %d: %s", (int)t->pid, t->what);
	if (t->version)
		sb_printf(&sb, ", Python %s", t->version);
	sb_puts(&sb, " | ");
	stats_line(t, &sb);
	sb_printf(&sb, "\n%s\n", titles_text(t));
	for (uint32_t i = 0; i < t->nrows && n < SNAPSHOT_ROWS; i++) {
		char buf[96];

		if (!row_shown(t, &t->rows[i]))
			continue;
		row_text(t, &t->rows[i], buf, sizeof(buf));
		sb_printf(&sb, "%s%s\n", buf, t->rows[i].label);
		n++;
	}
	sb_putc(&sb, '\n');
	if (fputs(sb.buf, stdout) == EOF || fflush(stdout) != 0)
		t->quit = true;
	sb_release(&sb);
}

/* --- drawing -------------------------------------------------------------- */

/* Put printable UTF-8 text at (y, x), at most up to column maxx (exclusive);
 * returns the column after it.  Wide characters take two columns; in a
 * locale that is not UTF-8 anything past ASCII is shown as '?'. */
static int put(struct top *t, int y, int x, int maxx, attr_t attr, const char *s)
{
	wchar_t buf[512];
	int n = 0, col = x;

	while (*s && n < (int)ARRAY_SIZE(buf) - 1) {
		uint32_t cp = '?';
		int len = utf8_char(s, &cp), w;

		if (len <= 0) {		/* cannot happen after sb_add_printable */
			len = 1;
			cp = '?';
		}
		s += len;
		if (cp >= 0x80 && !t->utf8)
			cp = '?';
		w = cp < 0x80 ? 1 : wcwidth((wchar_t)cp);
		if (w < 0) {
			cp = 0xfffd;
			w = 1;
		}
		if (cp < 0x20 || cp == 0x7f)	/* never, but never raw */
			cp = '?';
		if (col + w > maxx)
			break;
		/* A zero-width character needs one to lean on. */
		if (w == 0 && n == 0)
			continue;
		buf[n++] = (wchar_t)cp;
		col += w;
	}
	buf[n] = 0;
	if (n) {
		attron(attr);
		mvaddnwstr(y, x, buf, n);
		attroff(attr);
	}
	return col;
}

static int putf(struct top *t, int y, int x, int maxx, attr_t attr, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int putf(struct top *t, int y, int x, int maxx, attr_t attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put(t, y, x, maxx, attr, buf);
}

static void fill_line(int y, attr_t attr)
{
	attron(attr);
	mvhline(y, 0, ' ', COLS);
	attroff(attr);
}

/* "Label: value", left out whole when it does not fit (cut short when it
 * is the first on its line). */
static int label_value(struct top *t, int y, int x, const char *label, const char *value)
{
	if (x > 0 && x + (int)strlen(label) + (int)strlen(value) > COLS)
		return COLS;
	x = put(t, y, x, COLS, color(t, PAIR_LABEL, A_BOLD), label);
	x = put(t, y, x, COLS, A_BOLD, value);
	return x + 3;
}

/* T steps through the views in this order: all, then each process (when
 * there are several), then each thread, by process and thread id. */
static bool thread_before(const struct top *t, uint32_t a, uint32_t b)
{
	const struct pthread_info *x = &t->p.threads[a], *y = &t->p.threads[b];

	if (x->pid != y->pid)
		return x->pid < y->pid;
	return x->tid != y->tid ? x->tid < y->tid : a < b;
}

/* The smallest pid above after among the threads seen, or 0; *count gets
 * the number of processes and *pos the position of after among them. */
static pid_t next_process(const struct top *t, pid_t after, int *count, int *pos)
{
	pid_t best = 0;

	*count = *pos = 0;
	for (uint32_t i = 0; i < t->p.nthreads; i++) {
		pid_t pid = t->p.threads[i].pid;
		bool first = true;

		for (uint32_t k = 0; k < i && first; k++)
			first = t->p.threads[k].pid != pid;
		if (!first)
			continue;
		(*count)++;
		*pos += pid <= after;
		if (pid > after && (!best || pid < best))
			best = pid;
	}
	return best;
}

static int thread_position(const struct top *t, int *count)
{
	int pos = 0;

	*count = (int)t->p.nthreads;
	for (uint32_t i = 0; t->thread_sel >= 0 && i < t->p.nthreads; i++)
		pos += i == (uint32_t)t->thread_sel || thread_before(t, i, t->thread_sel);
	return pos;
}

static void thread_desc(const struct top *t, struct strbuf *sb)
{
	const struct pthread_info *th;
	int count, pos;

	if (t->proc_sel) {
		next_process(t, t->proc_sel, &count, &pos);
		sb_printf(sb, "process %d (%d of %d)", (int)t->proc_sel, pos, count);
		return;
	}
	if (t->thread_sel < 0) {
		sb_puts(sb, t->o.fo.subprocesses ? "all processes" : "all threads");
		return;
	}
	th = &t->p.threads[t->thread_sel];
	pos = thread_position(t, &count);
	sb_printf(sb, "thread %d", (int)th->tid);
	if (th->name) {
		sb_puts(sb, " \"");
		sb_add_printable(sb, th->name);
		sb_putc(sb, '"');
	}
	if (t->o.fo.subprocesses)
		sb_printf(sb, " of process %d", (int)th->pid);
	sb_printf(sb, " (%d of %d)", pos, count);
}

static void draw_header(struct top *t)
{
	const struct stats *st = &t->shown;
	struct strbuf sb = STRBUF_INIT;
	char buf[96], el[32], e[16], g[16], a[16];
	int x, right = COLS;

	/* 0: what is profiled */
	if (t->version) {
		snprintf(buf, sizeof(buf), "Python %s", t->version);
		right = COLS - (int)strlen(buf) - 1;
		if (right > 40)
			put(t, 0, right, COLS, A_BOLD, buf);
		else
			right = COLS;
	}
	x = put(t, 0, 0, right, color(t, PAIR_TITLE, 0) | A_BOLD, "pystrobe top");
	x = putf(t, 0, x + 2, right, A_BOLD, "pid %d", (int)t->pid);
	put(t, 0, x + 2, right - 1, 0, t->what);

	/* 1: sampling (fits in 80 columns) */
	fmt_elapsed(el, sizeof(el), st->elapsed_s);
	snprintf(buf, sizeof(buf), "%llu in %s (%.1f Hz)", (unsigned long long)st->samples, el,
		 st->interval_s > 0 ? st->rounds / st->interval_s : 0);
	x = label_value(t, 1, 0, "Samples: ", buf);
	fmt_pct(e, sizeof(e), st->error_pct);
	x = label_value(t, 1, x, "Errors: ", e);
	fmt_pct(g, sizeof(g), st->gil_pct);
	x = label_value(t, 1, x, "GIL: ", g);
	fmt_pct(a, sizeof(a), st->active_pct);
	label_value(t, 1, x, "Active: ", a);

	/* 2: what is shown */
	x = 0;
	if (t->o.fo.subprocesses) {
		snprintf(buf, sizeof(buf), "%d", st->nprocs);
		x = label_value(t, 2, x, "Processes: ", buf);
	}
	snprintf(buf, sizeof(buf), "%d", st->nthreads);
	x = label_value(t, 2, x, "Threads: ", buf);
	thread_desc(t, &sb);
	x = label_value(t, 2, x, "Showing: ", sb.buf);
	x = label_value(t, 2, x, "By: ", t->by_function ? "function" : "line");
	x = label_value(t, 2, x, "Idle: ", t->o.so.idle ? "shown" : "hidden");
	x = label_value(t, 2, x, "Sort: ", sort_names[t->sort]);
	sb_release(&sb);
	if (t->filter[0]) {
		sb_add_printable(&sb, t->filter);
		sb_printf(&sb, " (%u of %u)", rows_shown(t), t->nrows);
		label_value(t, 2, x, "Filter: ", sb.buf);
		sb_release(&sb);
	}

	/* 3: the state of things */
	if (t->exited) {
		if (t->child.pid && t->child.reaped)
			snprintf(buf, sizeof(buf), " process %d exited (status %d) ", (int)t->pid,
				 child_exit_status(&t->child));
		else
			snprintf(buf, sizeof(buf), " process %d exited ", (int)t->pid);
		x = put(t, 3, 0, COLS, color(t, PAIR_BANNER, A_REVERSE) | A_BOLD, buf);
		put(t, 3, x + 1, COLS, 0, "last view kept; q quits");
	} else if (t->paused) {
		x = put(t, 3, 0, COLS, A_REVERSE | A_BOLD, " PAUSED ");
		put(t, 3, x + 1, COLS, 0, "sampling goes on; Space resumes");
	} else if (st->lagged) {
		putf(t, 3, 0, COLS, color(t, PAIR_WARN, 0) | A_BOLD,
		     "sampling lags: %llu of %llu rounds late (up to %.1f ms); try a lower --rate",
		     (unsigned long long)st->lagged, (unsigned long long)st->rounds, st->max_lag_ms);
	} else if (!st->rounds && !st->samples) {
		put(t, 3, 0, COLS, A_DIM, "collecting samples...");
	}
}

static void draw_titles(struct top *t, int y)
{
	static const int widths[] = { 6, 8, 10, 11 };	/* with the space before */
	int x = 0;

	fill_line(y, color(t, PAIR_TITLES, A_REVERSE));
	for (int i = 0; i < 4; i++) {
		attr_t attr = i == (int)t->sort ? color(t, PAIR_SORTED, A_BOLD) | A_BOLD
						: color(t, PAIR_TITLES, A_REVERSE);
		char buf[16];

		snprintf(buf, sizeof(buf), "%*s", widths[i], sort_names[i]);
		x = put(t, y, x, COLS, attr, buf);
	}
	put(t, y, x, COLS, color(t, PAIR_TITLES, A_REVERSE),
	    t->by_function ? "  Function (file)" : "  Function (file:line)");
}

static void draw_table(struct top *t, int top, int bottom)
{
	int height = bottom - top, y = top, skipped = 0;
	int nshown = (int)rows_shown(t);

	if (t->scroll > nshown - height)
		t->scroll = nshown - height;
	if (t->scroll < 0)
		t->scroll = 0;
	for (uint32_t i = 0; i < t->nrows && y < bottom; i++) {
		const struct row *r = &t->rows[i];
		char buf[96];
		int x;

		if (!row_shown(t, r) || skipped++ < t->scroll)
			continue;
		row_text(t, r, buf, sizeof(buf));
		x = put(t, y, 0, COLS, 0, buf);
		put(t, y, x, COLS, r->own_last ? A_BOLD : 0, r->label);
		y++;
	}
	if (!nshown && t->nrows && t->filter[0])
		put(t, top, 2, COLS, A_DIM, "no function matches the filter (Esc clears it)");
}

static void draw_keybar(struct top *t, int y)
{
	const struct { const char *key, *label; } keys[] = {
		{ "1-4", "Sort" },
		{ "L", t->by_function ? "Lines" : "Funcs" },
		{ "I", t->o.so.idle ? "NoIdle" : "Idle" },
		{ "T", "Thread" }, { "/", "Filter" },
		{ "Spc", t->paused ? "Resume" : "Pause" },
		{ "R", "Reset" }, { "?", "Help" }, { "q", "Quit" },
	};
	int x = 0;

	if (t->prompting) {
		struct strbuf sb = STRBUF_INIT;

		sb_add_printable(&sb, t->filter);
		x = put(t, y, 0, COLS, color(t, PAIR_BAR, A_REVERSE), "Filter:");
		x = put(t, y, x + 1, COLS - 1, 0, sb.buf ? sb.buf : "");
		put(t, y, x + 2, COLS, A_DIM, "  (Enter keeps it, Esc clears it)");
		move(y, x < COLS ? x : COLS - 1);
		sb_release(&sb);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys) && x < COLS; i++) {
		char label[16];

		/* htop's look: labels at least six wide, one space apart. */
		snprintf(label, sizeof(label), "%-5s ", keys[i].label);
		x = put(t, y, x, COLS, A_BOLD, keys[i].key);
		x = put(t, y, x, COLS, color(t, PAIR_BAR, A_REVERSE), label);
	}
	if (x < COLS) {
		attron(color(t, PAIR_BAR, A_REVERSE));
		mvhline(y, x, ' ', COLS - x);
		attroff(color(t, PAIR_BAR, A_REVERSE));
	}
}

static void draw_help(struct top *t)
{
	static const char *const lines[] = {
		"pystrobe top: keys",
		"",
		"1 2 3 4    sort by %Own, %Total, OwnTime, TotalTime",
		"L          lines or functions (name and file)",
		"I          show or hide idle threads (counts start again)",
		"T          all, then each process (with -s), then each thread",
		"/          filter by substring: Enter keeps it, Esc clears it",
		"Esc        clear the filter",
		"Space      pause the display (sampling goes on)",
		"R          reset the counts",
		"Arrows, PgUp, PgDn, Home, End    scroll",
		"q, Ctrl-C  quit",
		"",
		"%Own       share of the last interval spent in the function itself",
		"%Total     ... in it or in what it called",
		"           100% is one thread for the whole interval",
		"OwnTime    the same in seconds, since the start or the reset",
		"TotalTime",
		"",
		"Press any key to close this.",
	};
	int h = (int)ARRAY_SIZE(lines) + 2, w = 0, y0, x0;

	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		if ((int)strlen(lines[i]) > w)
			w = (int)strlen(lines[i]);
	w += 4;
	if (w > COLS)
		w = COLS;
	if (h > LINES)
		h = LINES;
	y0 = (LINES - h) / 2;
	x0 = (COLS - w) / 2;
	for (int y = 0; y < h; y++) {
		attron(A_REVERSE);
		mvhline(y0 + y, x0, ' ', w);
		attroff(A_REVERSE);
	}
	for (int i = 0; i < h - 2; i++)
		put(t, y0 + 1 + i, x0 + 2, x0 + w - 1, A_REVERSE | (i == 0 ? A_BOLD : 0), lines[i]);
}

static void draw(struct top *t)
{
	t->dirty = false;
	erase();
	curs_set(t->prompting ? 1 : 0);
	if (LINES < HEADER_LINES + 4 || COLS < 40) {
		put(t, 0, 0, COLS, A_BOLD, "pystrobe top: terminal too small");
		refresh();
		return;
	}
	draw_header(t);
	draw_titles(t, HEADER_LINES);
	draw_table(t, HEADER_LINES + 1, LINES - 1);
	if (t->help)
		draw_help(t);
	draw_keybar(t, LINES - 1);
	refresh();
}

/* --- keys ----------------------------------------------------------------- */

static void next_view(struct top *t)
{
	int nprocs, pos, best = -1;
	pid_t pid;

	if (t->thread_sel < 0 && t->o.fo.subprocesses) {
		pid = next_process(t, t->proc_sel, &nprocs, &pos);
		t->proc_sel = nprocs > 1 ? pid : 0;
		if (t->proc_sel)
			return;
	}
	for (uint32_t i = 0; i < t->p.nthreads; i++) {
		if (t->thread_sel >= 0 && !thread_before(t, t->thread_sel, i))
			continue;
		if (best < 0 || thread_before(t, i, best))
			best = (int)i;
	}
	t->thread_sel = best;
}

static void filter_del(struct top *t)
{
	size_t n = strlen(t->filter);

	/* Back over continuation bytes to the start of the last character. */
	while (n > 0 && ((unsigned char)t->filter[n - 1] & 0xc0) == 0x80)
		n--;
	if (n > 0)
		n--;
	t->filter[n] = 0;
}

static void filter_add(struct top *t, wint_t c)
{
	char mb[MB_LEN_MAX];
	mbstate_t ps;
	size_t n, len = strlen(t->filter);

	memset(&ps, 0, sizeof(ps));
	n = wcrtomb(mb, (wchar_t)c, &ps);
	if (n == (size_t)-1 || len + n >= sizeof(t->filter))
		return;
	memcpy(t->filter + len, mb, n);
	t->filter[len + n] = 0;
}

static void prompt_key(struct top *t, int kind, wint_t c)
{
	if (kind == KEY_CODE_YES) {
		if (c == KEY_BACKSPACE)
			filter_del(t);
		else if (c == KEY_ENTER)
			t->prompting = false;
	} else if (c == '\r' || c == '\n') {
		t->prompting = false;
	} else if (c == 27) {
		t->filter[0] = 0;
		t->prompting = false;
	} else if (c == 127 || c == 8) {
		filter_del(t);
	} else if (c == 21) {		/* Ctrl-U */
		t->filter[0] = 0;
	} else if (iswprint(c)) {
		filter_add(t, c);
	}
	t->scroll = 0;
}

static void key(struct top *t, int kind, wint_t c)
{
	int page = LINES - HEADER_LINES - 2;

	t->dirty = true;
	if (t->help) {
		t->help = false;
		return;
	}
	if (t->prompting) {
		prompt_key(t, kind, c);
		return;
	}
	if (kind == KEY_CODE_YES) {
		switch (c) {
		case KEY_RESIZE: break;
		case KEY_UP: t->scroll--; break;
		case KEY_DOWN: t->scroll++; break;
		case KEY_PPAGE: t->scroll -= page; break;
		case KEY_NPAGE: t->scroll += page; break;
		case KEY_HOME: t->scroll = 0; break;
		case KEY_END: t->scroll = (int)t->nrows; break;
		case KEY_F(1): t->help = true; break;
		}
		return;
	}
	/* The last view of an exited process stays as it is. */
	if (t->exited && strchr("IiRr ", (int)c))
		return;
	switch (c) {
	case '1': case '2': case '3': case '4':
		t->sort = (enum sort_col)(c - '1');
		sort_rows(t);
		break;
	case 'L': case 'l':
		t->by_function = !t->by_function;
		build_rows(t);
		break;
	case 'I': case 'i':
		t->o.so.idle = !t->o.so.idle;
		fleet_set_idle(t->f, t->o.so.idle);
		/* Counts with and without idle threads do not add up. */
		reset_counts(t);
		break;
	case 'T': case 't':
		next_view(t);
		t->scroll = 0;
		build_rows(t);
		break;
	case ' ':
		t->paused = !t->paused;
		if (!t->paused)
			update_view(t);
		break;
	case 'R': case 'r':
		reset_counts(t);
		break;
	case '/':
		t->prompting = true;
		break;
	case 27:
		t->filter[0] = 0;
		break;
	case '?': case 'h': case 'H':
		t->help = true;
		break;
	case 12:			/* Ctrl-L */
		clearok(curscr, TRUE);
		break;
	case 'q': case 'Q':
		t->quit = true;
		break;
	}
}

static void read_keys(struct top *t)
{
	wint_t c;
	int kind;

	while ((kind = get_wch(&c)) != ERR)
		key(t, kind, c);
}

/* --- the loop ------------------------------------------------------------- */

static void wait_event(struct top *t)
{
	uint64_t now = mono_ns(), until = UINT64_MAX;
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	struct timespec ts;
	bool keys = t->tty && isatty(STDIN_FILENO);

	if (t->quit || quit_requested)
		return;
	if (!t->exited) {
		until = fleet_due(t->f, &t->clock);
		if (t->next_refresh < until)
			until = t->next_refresh;
		if (until <= now)
			return;
		ts.tv_sec = (time_t)((until - now) / 1000000000ull);
		ts.tv_nsec = (long)((until - now) % 1000000000ull);
	} else {
		/* Only keys to wait for; a signal that came just before the
		 * ppoll() is seen this late at most. */
		ts.tv_sec = 0;
		ts.tv_nsec = 250000000;
	}
	/* Interrupted by a signal (a stop, a resize): the loop looks. */
	ppoll(keys ? &pfd : NULL, keys ? 1 : 0, &ts, NULL);
}

static void run(struct top *t)
{
	uint64_t delay = (uint64_t)(t->delay_s * 1e9);

	fleet_start(t->f, &t->clock);
	t->iv_start_ns = t->reset_ns = t->clock.start_ns;
	t->next_refresh = t->clock.start_ns + delay;
	fleet_counts(t->f, &t->iv_base);
	t->live.gil_pct = t->live.active_pct = t->live.error_pct = -1;
	t->shown = t->live;
	t->dirty = true;

	while (!quit_requested && !t->quit) {
		uint64_t now;

		/* exec() into another program ends the view as an exit does. */
		if (!t->exited && fleet_step(t->f, &t->clock) < 0) {
			target_exited(t);
			if (!t->tty)
				break;
		}
		now = mono_ns();
		if (!t->exited && now >= t->next_refresh) {
			end_interval(t, now);
			if (!t->paused)
				update_view(t);
			t->next_refresh += delay;
			if (t->next_refresh <= now)
				t->next_refresh = now + delay;
			if (!t->tty)
				print_snapshot(t);
		}
		if (t->tty) {
			read_keys(t);
			if (t->dirty && !t->quit)
				draw(t);
		}
		wait_event(t);
	}
}

/* --- options -------------------------------------------------------------- */

static int parse_args(struct target_opts *o, double *delay_s, int argc, char **argv)
{
	static const struct option longopts[] = {
		TARGET_LONGOPTS,
		{ "delay", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	target_opts_init(o);
	*delay_s = 1;
	optind = 1;
	opterr = 0;
	/* "+": stop at the first non-option, the command to launch. */
	while ((c = getopt_long(argc, argv, "+:" TARGET_SHORTOPTS "d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (parse_number(optarg, 0.05, 86400, delay_s) < 0)
				return usage_error("top", "--delay must be between 0.05 and 86400 "
						   "seconds, not '%s'", optarg);
			break;
		case 'h':
			fputs(top_usage, stdout);
			return 1;
		default:
			if (target_opt(o, c, optarg, argv, "top") < 0)
				return -1;
		}
	}
	return target_opts_finish(o, argc, argv, "top");
}

/* --- the command ---------------------------------------------------------- */

static char *describe_process(pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	char **argv;
	int argc = 0;

	argv = proc_cmdline(pid, &argc);
	for (int i = 0; argv && i < argc && argv[i]; i++) {
		if (i)
			sb_putc(&sb, ' ');
		sb_add_printable(&sb, argv[i]);
	}
	if (!argv || !argc)
		sb_puts(&sb, "?");
	proc_cmdline_free(argv);
	return sb_detach(&sb);
}

static void top_free(struct top *t)
{
	fleet_close(t->f);
	for (uint32_t i = 0; i < t->nframe_labels; i++)
		free(t->frame_labels[i]);
	for (uint32_t i = 0; i < t->nfunc_labels; i++)
		free(t->func_labels[i]);
	free(t->frame_labels);
	free(t->func_labels);
	free(t->func_of);
	free(t->entries);
	free(t->entry_index);
	free(t->rows);
	free(t->what);
	free(t->version);
	profile_free(&t->funcs);
	profile_free(&t->p);
}

int cmd_top(int argc, char **argv)
{
	struct top t;
	char err[512];
	int rc, status = EXIT_OK;

	memset(&t, 0, sizeof(t));
	t.thread_sel = -1;
	t.sort = SORT_OWN_TIME;
	rc = parse_args(&t.o, &t.delay_s, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : EXIT_USAGE;
	t.by_function = t.o.by_function;
	t.tty = isatty(STDOUT_FILENO);
	install_signals();
	profile_init(&t.p, t.o.so.rate_hz);
	profile_init(&t.funcs, t.o.so.rate_hz);
	t.pid = t.o.pid;

	/* With --subprocesses only until it has started: the Python may be
	 * further down. */
	if (t.o.command &&
	    child_start(&t.child, t.o.command, "top", t.tty, t.o.fo.subprocesses,
			&quit_requested, &status) < 0) {
		if (quit_requested)
			status = finish_child(&t, quit_signal);
		top_free(&t);
		return status;
	}
	if (t.o.command)
		t.pid = t.child.pid;
	t.f = fleet_open(t.pid, &t.o.so, &t.o.fo, &t.p, &rc, err, sizeof(err));
	if (!t.f) {
		errorf("%s", err);
		status = t.child.pid ? finish_child(&t, SIGTERM) : rc;
		top_free(&t);
		return status;
	}
	t.what = describe_process(t.pid);
	if (fleet_python_version(t.f))
		t.version = printable(fleet_python_version(t.f));

	setlocale(LC_ALL, "");
	setlocale(LC_NUMERIC, "C");
	if (t.tty && start_curses(&t) < 0) {
		status = t.child.pid ? finish_child(&t, SIGTERM) : EXIT_ERROR;
		top_free(&t);
		return status;
	}

	run(&t);

	restore_terminal();
	status = finish_child(&t, quit_requested ? quit_signal : t.exited ? 0 : SIGTERM);
	top_free(&t);
	return status;
}
