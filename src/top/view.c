/* What top puts on the terminal; see view.h.
 *
 * Everything the target names (functions, files, threads, its command
 * line) reaches here already printable (the model made it so); put()
 * still never writes a control character.
 */
#include "top/view.h"

#include <errno.h>
#include <langinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define SNAPSHOT_ROWS	20
#define HEADER_LINES	4	/* above the column titles */

enum {
	PAIR_BAR = 1,		/* key bar labels */
	PAIR_TITLES,		/* column titles */
	PAIR_SORTED,		/* the sorted column's title */
	PAIR_WARN,
	PAIR_BANNER,
	PAIR_LABEL,		/* header labels */
	PAIR_TITLE,		/* the program's name */
};

/* --- the terminal --------------------------------------------------------- */

static bool curses_on;

void top_view_end(void)
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
	top_view_end();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_crash_handlers(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on_crash);
}

static void start_colors(void)
{
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

int top_view_start(struct top_view *v, struct top_ui *ui)
{
	const char *codeset;

	v->scr = newterm(NULL, stdout, stdin);
	if (!v->scr) {
		errorf("top: cannot use the terminal (TERM=%s)",
		       getenv("TERM") ? getenv("TERM") : "");
		return status_fail(EXIT_ERROR);
	}
	set_term(v->scr);
	curses_on = true;
	atexit(top_view_end);
	install_crash_handlers();
	codeset = nl_langinfo(CODESET);
	v->utf8 = codeset && !strcmp(codeset, "UTF-8");
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	v->colors = has_colors();
	if (v->colors)
		start_colors();
	/* The header, the titles and the key bar. */
	ui->chrome = HEADER_LINES + 2;
	return 0;
}

void top_view_repaint(void)
{
	clearok(curscr, TRUE);
}

static attr_t color(const struct top_view *v, int pair, attr_t mono)
{
	return v->colors ? COLOR_PAIR(pair) : mono;
}

/* --- numbers -------------------------------------------------------------- */

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

/* The GIL's share of the rounds into buf, or on a free-threaded build,
 * which has no GIL, how many threads were attached to the interpreter a
 * round: true for that. */
static bool fmt_gil(char *buf, size_t size, const struct top_stats *st)
{
	if (st->gil_pct < 0 && st->attached >= 0) {
		snprintf(buf, size, "%.1f", st->attached);
		return true;
	}
	fmt_pct(buf, size, st->gil_pct);
	return false;
}

static double rate_hz(const struct top_stats *st)
{
	return st->interval_s > 0 ? st->rounds / st->interval_s : 0;
}

/* The numbers of a row, up to its label. */
static void row_text(const struct top_model *m, const struct top_row *r, char *buf,
		     size_t size)
{
	char ot[24], tt[24];

	fmt_secs(ot, sizeof(ot), top_row_own_s(m, r));
	fmt_secs(tt, sizeof(tt), top_row_total_s(m, r));
	snprintf(buf, size, "%6.1f %7.1f %9s %10s  ", top_row_own_pct(m, r),
		 top_row_total_pct(m, r), ot, tt);
}

/* --- plain-text snapshots ------------------------------------------------- */

static void stats_line(const struct top_model *m, struct strbuf *sb)
{
	const struct top_stats *st = &m->shown;
	char e[16], g[16], a[16];
	bool ft;

	fmt_pct(e, sizeof(e), st->error_pct);
	ft = fmt_gil(g, sizeof(g), st);
	fmt_pct(a, sizeof(a), st->active_pct);
	/* "GIL 98.0%", or on a free-threaded build "attached 2.0" */
	sb_printf(sb, "%.1f s, %llu samples, %.1f Hz, errors %s, %s %s, active %s, %d thread%s",
		  st->elapsed_s, (unsigned long long)st->samples, rate_hz(st), e,
		  ft ? "attached" : "GIL", g, a, st->nthreads,
		  st->nthreads == 1 ? "" : "s");
	if (m->subprocesses)
		sb_printf(sb, ", %d process%s", st->nprocs, st->nprocs == 1 ? "" : "es");
	if (st->late_pct > 0)
		sb_printf(sb, ", %.1f%% without native frames (not stopped in time)", st->late_pct);
	if (st->lagged)
		sb_printf(sb, ", %llu round%s late (up to %.1f ms)", (unsigned long long)st->lagged,
			  st->lagged == 1 ? "" : "s", st->max_lag_ms);
}

static const char *titles_text(const struct top_model *m)
{
	return m->by_function ? "  %Own  %Total   OwnTime  TotalTime  Function (file)"
			      : "  %Own  %Total   OwnTime  TotalTime  Function (file:line)";
}

/* Why no row is of the last interval, in parentheses under the rows;
 * not that some threads were idle: a log gets that line at every
 * snapshot. */
static void snapshot_hint(const struct top_model *m, struct strbuf *sb)
{
	struct strbuf hint = STRBUF_INIT;

	switch (top_model_hint(m, false, &hint)) {
	case TOP_HINT_NONE:
	case TOP_HINT_COLLECTING:
	case TOP_HINT_SOME_IDLE:
		break;
	default:
		sb_printf(sb, "  (%s)\n", hint.buf);
	}
	sb_release(&hint);
}

/* What is watched: a process, or a Slurm job. */
static void snapshot_target(const struct top_model *m, struct strbuf *sb)
{
	if (!m->job)
		sb_printf(sb, "pystrobe top: pid %d: %s", (int)m->pid, m->what);
	else {
		sb_puts(sb, "pystrobe top: ");
		top_job_header(m, sb);
	}
	if (m->version)
		sb_printf(sb, ", Python %s", m->version);
}

/* Under --slurm, the nodes that do not answer, on a line of their own:
 * a log is read for them. */
static void snapshot_missing(const struct top_model *m, struct strbuf *sb)
{
	struct strbuf missing = STRBUF_INIT;

	if (m->job)
		top_job_missing(m, &missing);
	if (missing.len)
		sb_printf(sb, "\n%s", missing.buf);
	sb_release(&missing);
}

int top_view_snapshot(const struct top_model *m, FILE *out)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t n = 0;
	int rc = 0;

	snapshot_target(m, &sb);
	sb_puts(&sb, " | ");
	stats_line(m, &sb);
	snapshot_missing(m, &sb);
	for (int i = 0; i < m->ngpu; i++)
		sb_printf(&sb, "\n%s", m->gpu[i]);
	sb_printf(&sb, "\n%s\n", titles_text(m));
	for (uint32_t i = 0; i < m->nrows && n < SNAPSHOT_ROWS; i++) {
		char buf[96];

		if (!top_row_shown(m, &m->rows[i]))
			continue;
		row_text(m, &m->rows[i], buf, sizeof(buf));
		sb_printf(&sb, "%s%s\n", buf, m->rows[i].label);
		n++;
	}
	snapshot_hint(m, &sb);
	sb_putc(&sb, '\n');
	if (fputs(sb.buf, out) == EOF || fflush(out) != 0)
		rc = errno ? -errno : -EIO;
	sb_release(&sb);
	return rc;
}

void top_view_exited(const struct top_model *m, FILE *out)
{
	if (m->exit_status >= 0)
		fprintf(out, "pystrobe top: process %d exited (status %d)\n", (int)m->pid,
			m->exit_status);
	else
		fprintf(out, "pystrobe top: process %d exited\n", (int)m->pid);
	fflush(out);
}

/* --- putting text --------------------------------------------------------- */

/* Put printable UTF-8 text at (y, x), at most up to column maxx (exclusive);
 * returns the column after it.  Wide characters take two columns; in a
 * locale that is not UTF-8 anything past ASCII is shown as '?'. */
static int put(const struct top_view *v, int y, int x, int maxx, attr_t attr, const char *s)
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
		if (cp >= 0x80 && !v->utf8)
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

static int putf(const struct top_view *v, int y, int x, int maxx, attr_t attr,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int putf(const struct top_view *v, int y, int x, int maxx, attr_t attr,
		const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put(v, y, x, maxx, attr, buf);
}

static void fill_line(int y, int x, attr_t attr)
{
	attron(attr);
	mvhline(y, x, ' ', COLS - x);
	attroff(attr);
}

/* "Label: value", left out whole when it does not fit (cut short when it
 * is the first on its line). */
static int label_value(const struct top_view *v, int y, int x, const char *label,
		       const char *value)
{
	if (x > 0 && x + (int)strlen(label) + (int)strlen(value) > COLS)
		return COLS;
	x = put(v, y, x, COLS, color(v, PAIR_LABEL, A_BOLD), label);
	x = put(v, y, x, COLS, A_BOLD, value);
	return x + 3;
}

/* --- the header ----------------------------------------------------------- */

/* 0: what is profiled. */
static void draw_target(const struct top_view *v, const struct top_model *m)
{
	char buf[96];
	int x, right = COLS;

	if (m->version) {
		snprintf(buf, sizeof(buf), "Python %s", m->version);
		right = COLS - (int)strlen(buf) - 1;
		if (right > 40)
			put(v, 0, right, COLS, A_BOLD, buf);
		else
			right = COLS;
	}
	x = put(v, 0, 0, right, color(v, PAIR_TITLE, 0) | A_BOLD, "pystrobe top");
	if (m->job) {
		struct strbuf sb = STRBUF_INIT;

		top_job_header(m, &sb);
		put(v, 0, x + 2, right - 1, A_BOLD, sb.buf);
		sb_release(&sb);
		return;
	}
	x = putf(v, 0, x + 2, right, A_BOLD, "pid %d", (int)m->pid);
	put(v, 0, x + 2, right - 1, 0, m->what);
}

/* 3 under --slurm: the nodes that do not answer, before all else. */
static bool draw_missing(const struct top_view *v, const struct top_model *m)
{
	struct strbuf sb = STRBUF_INIT;
	bool any;

	if (m->job)
		top_job_missing(m, &sb);
	any = sb.len > 0;
	if (any)
		put(v, 3, 0, COLS, color(v, PAIR_WARN, 0) | A_BOLD, sb.buf);
	sb_release(&sb);
	return any;
}

/* 1: sampling (fits in 80 columns). */
static void draw_sampling(const struct top_view *v, const struct top_stats *st)
{
	char buf[96], el[32], e[48], g[16], a[16];
	int x;

	fmt_elapsed(el, sizeof(el), st->elapsed_s);
	snprintf(buf, sizeof(buf), "%llu in %s (%.1f Hz)", (unsigned long long)st->samples, el,
		 rate_hz(st));
	x = label_value(v, 1, 0, "Samples: ", buf);
	fmt_pct(e, sizeof(e), st->error_pct);
	/* Not errors, but samples without their native part. */
	if (st->late_pct > 0)
		snprintf(e + strlen(e), sizeof(e) - strlen(e), " +%.1f%% late", st->late_pct);
	x = label_value(v, 1, x, "Errors: ", e);
	x = label_value(v, 1, x, fmt_gil(g, sizeof(g), st) ? "Attached: " : "GIL: ", g);
	fmt_pct(a, sizeof(a), st->active_pct);
	label_value(v, 1, x, "Active: ", a);
}

/* 2: what is shown. */
static void draw_shown(const struct top_view *v, const struct top_model *m)
{
	const struct top_stats *st = &m->shown;
	struct strbuf sb = STRBUF_INIT;
	char buf[32];
	int x = 0;

	if (m->subprocesses) {
		snprintf(buf, sizeof(buf), "%d", st->nprocs);
		x = label_value(v, 2, x, "Processes: ", buf);
	}
	snprintf(buf, sizeof(buf), "%d", st->nthreads);
	x = label_value(v, 2, x, "Threads: ", buf);
	top_model_describe_view(m, &sb);
	x = label_value(v, 2, x, "Showing: ", sb.buf);
	x = label_value(v, 2, x, "By: ", m->by_function ? "function" : "line");
	x = label_value(v, 2, x, "Idle: ", m->idle ? "shown" : "hidden");
	x = label_value(v, 2, x, "Sort: ", top_sort_names[m->sort]);
	sb_release(&sb);
	if (m->filter[0]) {
		sb_add_printable(&sb, m->filter);
		sb_printf(&sb, " (%u of %u)", top_model_rows_shown(m), m->nrows);
		label_value(v, 2, x, "Filter: ", sb.buf);
		sb_release(&sb);
	}
}

/* Rows are shown, but not every thread's (some were idle), or none of
 * the last interval's: why, and the key that helps. */
static void state_hint(const struct top_view *v, const struct top_model *m)
{
	struct strbuf sb = STRBUF_INIT;

	if (top_model_hint(m, true, &sb) != TOP_HINT_NONE && sb.buf)
		put(v, 3, 0, COLS, A_DIM, sb.buf);
	sb_release(&sb);
}

/* 3: the state of things. */
static void draw_state(const struct top_view *v, const struct top_model *m)
{
	const struct top_stats *st = &m->shown;
	char buf[96];
	int x;

	if (draw_missing(v, m))
		return;
	if (m->exited) {
		if (m->exit_status >= 0)
			snprintf(buf, sizeof(buf), " process %d exited (status %d) ", (int)m->pid,
				 m->exit_status);
		else
			snprintf(buf, sizeof(buf), " process %d exited ", (int)m->pid);
		x = put(v, 3, 0, COLS, color(v, PAIR_BANNER, A_REVERSE) | A_BOLD, buf);
		put(v, 3, x + 1, COLS, 0, "last view kept; q quits");
	} else if (m->paused) {
		x = put(v, 3, 0, COLS, A_REVERSE | A_BOLD, " PAUSED ");
		put(v, 3, x + 1, COLS, 0, "sampling goes on; Space resumes");
	} else if (st->lagged) {
		putf(v, 3, 0, COLS, color(v, PAIR_WARN, 0) | A_BOLD,
		     "sampling lags: %llu of %llu rounds late (up to %.1f ms); try a lower --rate",
		     (unsigned long long)st->lagged, (unsigned long long)st->rounds, st->max_lag_ms);
	} else if (!st->rounds && !st->samples) {
		put(v, 3, 0, COLS, A_DIM, "collecting samples...");
	} else if (top_model_rows_shown(m)) {
		state_hint(v, m);
	}
}

/* 4...: a line per GPU (--gpu), as many as fit above a few rows. */
static int draw_gpus(const struct top_view *v, const struct top_model *m)
{
	int n = m->ngpu < LINES - HEADER_LINES - 4 ? m->ngpu : LINES - HEADER_LINES - 4;

	for (int i = 0; i < n; i++)
		put(v, HEADER_LINES + i, 0, COLS, 0, m->gpu[i]);
	return n > 0 ? n : 0;
}

/* --- the table ------------------------------------------------------------ */

static void draw_titles(const struct top_view *v, const struct top_model *m, int y)
{
	static const int widths[] = { 6, 8, 10, 11 };	/* with the space before */
	int x = 0;

	fill_line(y, 0, color(v, PAIR_TITLES, A_REVERSE));
	for (int i = 0; i < TOP_SORT_COUNT; i++) {
		attr_t attr = i == (int)m->sort ? color(v, PAIR_SORTED, A_BOLD) | A_BOLD
						: color(v, PAIR_TITLES, A_REVERSE);
		char buf[16];

		snprintf(buf, sizeof(buf), "%*s", widths[i], top_sort_names[i]);
		x = put(v, y, x, COLS, attr, buf);
	}
	put(v, y, x, COLS, color(v, PAIR_TITLES, A_REVERSE),
	    m->by_function ? "  Function (file)" : "  Function (file:line)");
}

/* Why the table is empty, in its empty space (htop's hint); what it
 * leaves out when it has rows goes on the state line (draw_state()). */
static void draw_hint(const struct top_view *v, const struct top_model *m, int y, int bottom)
{
	struct strbuf sb = STRBUF_INIT;
	enum top_hint hint = top_model_hint(m, true, &sb);

	if (y + 1 < bottom && hint != TOP_HINT_NONE && hint != TOP_HINT_COLLECTING)
		put(v, y + 1, 2, COLS, A_BOLD, sb.buf);
	sb_release(&sb);
}

static void draw_table(const struct top_view *v, const struct top_model *m,
		       struct top_ui *ui, int top, int bottom)
{
	int height = bottom - top, y = top, skipped = 0;
	int nshown = (int)top_model_rows_shown(m);

	if (ui->scroll > nshown - height)
		ui->scroll = nshown - height;
	if (ui->scroll < 0)
		ui->scroll = 0;
	for (uint32_t i = 0; i < m->nrows && y < bottom; i++) {
		const struct top_row *r = &m->rows[i];
		char buf[96];
		int x;

		if (!top_row_shown(m, r) || skipped++ < ui->scroll)
			continue;
		row_text(m, r, buf, sizeof(buf));
		x = put(v, y, 0, COLS, 0, buf);
		put(v, y, x, COLS, r->own_last ? A_BOLD : 0, r->label);
		y++;
	}
	if (y == top)
		draw_hint(v, m, y, bottom);
}

/* --- the key bar and help, from the key table ----------------------------- */

static void draw_prompt(const struct top_view *v, const struct top_model *m, int y)
{
	struct strbuf sb = STRBUF_INIT;
	int x;

	sb_add_printable(&sb, m->filter);
	x = put(v, y, 0, COLS, color(v, PAIR_BAR, A_REVERSE), "Filter:");
	x = put(v, y, x + 1, COLS - 1, 0, sb.buf ? sb.buf : "");
	put(v, y, x + 2, COLS, A_DIM, "  (Enter keeps it, Esc clears it)");
	move(y, x < COLS ? x : COLS - 1);
	sb_release(&sb);
}

static void draw_keybar(const struct top_view *v, const struct top_model *m,
			const struct top_ui *ui, int y)
{
	int x = 0;

	if (ui->prompting) {
		draw_prompt(v, m, y);
		return;
	}
	for (size_t i = 0; i < top_nkeys && x < COLS; i++) {
		const struct top_key *k = &top_keys[i];
		char label[16];

		if (!k->bar_key)
			continue;
		/* htop's look: labels at least six wide, one space apart. */
		snprintf(label, sizeof(label), "%-5s ", top_key_label(k, m));
		x = put(v, y, x, COLS, A_BOLD, k->bar_key);
		x = put(v, y, x, COLS, color(v, PAIR_BAR, A_REVERSE), label);
	}
	if (x < COLS)
		fill_line(y, x, color(v, PAIR_BAR, A_REVERSE));
}

static const char *const help_legend[] = {
	"",
	"%Own       share of the last interval spent in the function itself",
	"%Total     ... in it or in what it called",
	"           100% is one thread for the whole interval",
	"OwnTime    the same in seconds, since the start or the reset",
	"TotalTime",
	"",
	"Press any key to close this.",
};

/* The lines of the help screen: a title, the keys, the legend. */
static int help_lines(const char **lines, int max)
{
	int n = 0;

	lines[n++] = "pystrobe top: keys";
	lines[n++] = "";
	for (size_t i = 0; i < top_nkeys && n < max; i++)
		if (top_keys[i].help)
			lines[n++] = top_keys[i].help;
	for (size_t i = 0; i < ARRAY_SIZE(help_legend) && n < max; i++)
		lines[n++] = help_legend[i];
	return n;
}

static void draw_help(const struct top_view *v)
{
	const char *lines[64];
	int n = help_lines(lines, (int)ARRAY_SIZE(lines));
	int h = n + 2, w = 0, y0, x0;

	for (int i = 0; i < n; i++)
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
		put(v, y0 + 1 + i, x0 + 2, x0 + w - 1, A_REVERSE | (i == 0 ? A_BOLD : 0), lines[i]);
}

void top_view_draw(const struct top_view *v, const struct top_model *m, struct top_ui *ui)
{
	int header;

	erase();
	curs_set(ui->prompting ? 1 : 0);
	if (LINES < HEADER_LINES + 4 || COLS < 40) {
		put(v, 0, 0, COLS, A_BOLD, "pystrobe top: terminal too small");
		refresh();
		return;
	}
	draw_target(v, m);
	draw_sampling(v, &m->shown);
	draw_shown(v, m);
	draw_state(v, m);
	header = HEADER_LINES + draw_gpus(v, m);
	ui->chrome = header + 2;
	draw_titles(v, m, header);
	draw_table(v, m, ui, header + 1, LINES - 1);
	if (ui->help)
		draw_help(v);
	draw_keybar(v, m, ui, LINES - 1);
	refresh();
}
