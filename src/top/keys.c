/* The keys of top; see keys.h. */
#define NCURSES_WIDECHAR 1

#include "top/keys.h"

#include <curses.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

/* --- the actions ---------------------------------------------------------- */

static int act_sort(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)ui;
	top_model_set_sort(m, (enum top_sort)(c - '1'));
	return TOP_REDRAW;
}

static int act_lines(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)ui, (void)c;
	top_model_set_by_function(m, !m->by_function);
	return TOP_REDRAW;
}

/* Needs the samplers told, and their totals to count afresh from. */
static int act_idle(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)c;
	ui->scroll = 0;
	return TOP_REDRAW | TOP_IDLE;
}

static int act_view(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)c;
	top_model_next_view(m);
	ui->scroll = 0;
	return TOP_REDRAW;
}

static int act_filter(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)c;
	ui->prompting = true;
	return TOP_REDRAW;
}

static int act_clear_filter(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)ui, (void)c;
	m->filter[0] = 0;
	return TOP_REDRAW;
}

static int act_pause(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)ui, (void)c;
	top_model_set_paused(m, !m->paused);
	return TOP_REDRAW;
}

static int act_reset(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)c;
	ui->scroll = 0;
	return TOP_REDRAW | TOP_RESET;
}

/* The view brings scroll back within the rows when it draws. */
static int act_scroll(struct top_model *m, struct top_ui *ui, wint_t c)
{
	int page = LINES - ui->chrome;

	switch (c) {
	case KEY_UP: ui->scroll--; break;
	case KEY_DOWN: ui->scroll++; break;
	case KEY_PPAGE: ui->scroll -= page; break;
	case KEY_NPAGE: ui->scroll += page; break;
	case KEY_HOME: ui->scroll = 0; break;
	case KEY_END: ui->scroll = (int)m->nrows; break;
	}
	return TOP_REDRAW;
}

static int act_help(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)c;
	ui->help = true;
	return TOP_REDRAW;
}

static int act_quit(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)ui, (void)c;
	return TOP_QUIT;
}

static int act_repaint(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)ui, (void)c;
	return TOP_REDRAW | TOP_REPAINT;
}

/* A resize: curses has the new size already. */
static int act_redraw(struct top_model *m, struct top_ui *ui, wint_t c)
{
	(void)m, (void)ui, (void)c;
	return TOP_REDRAW;
}

static bool by_function(const struct top_model *m)
{
	return m->by_function;
}

static bool idle(const struct top_model *m)
{
	return m->idle;
}

static bool paused(const struct top_model *m)
{
	return m->paused;
}

/* --- the table ------------------------------------------------------------ */

/* In the order of the help screen and the key bar.  Keys that change the
 * counts are not live: the last view of an exited process stays as it
 * is. */
const struct top_key top_keys[] = {
	{ .chars = "1234", .help = "1 2 3 4    sort by %Own, %Total, OwnTime, TotalTime",
	  .bar_key = "1-4", .bar_label = "Sort", .action = act_sort },
	{ .chars = "Ll", .help = "L          lines or functions (name and file)",
	  .bar_key = "L", .bar_label = "Funcs", .bar_label_on = "Lines", .on = by_function,
	  .action = act_lines },
	{ .chars = "Ii", .help = "I          show or hide idle threads (counts start again)",
	  .bar_key = "I", .bar_label = "Idle", .bar_label_on = "NoIdle", .on = idle,
	  .live = true, .action = act_idle },
	{ .chars = "Tt", .help = "T          all, each process (-s) or node and rank (--slurm), each thread",
	  .bar_key = "T", .bar_label = "Thread", .action = act_view },
	{ .chars = "/", .help = "/          filter by substring: Enter keeps it, Esc clears it",
	  .bar_key = "/", .bar_label = "Filter", .action = act_filter },
	{ .chars = "\033", .help = "Esc        clear the filter", .action = act_clear_filter },
	{ .chars = " ", .help = "Space      pause the display (sampling goes on)",
	  .bar_key = "Spc", .bar_label = "Pause", .bar_label_on = "Resume", .on = paused,
	  .live = true, .action = act_pause },
	{ .chars = "Rr", .help = "R          reset the counts",
	  .bar_key = "R", .bar_label = "Reset", .live = true, .action = act_reset },
	{ .codes = { KEY_UP, KEY_DOWN, KEY_PPAGE, KEY_NPAGE, KEY_HOME, KEY_END },
	  .help = "Arrows, PgUp, PgDn, Home, End    scroll", .action = act_scroll },
	{ .chars = "?hH", .codes = { KEY_F(1) }, .bar_key = "?", .bar_label = "Help",
	  .action = act_help },
	{ .chars = "qQ", .help = "q, Ctrl-C  quit", .bar_key = "q", .bar_label = "Quit",
	  .action = act_quit },
	{ .chars = "\014", .action = act_repaint },	/* Ctrl-L */
	{ .codes = { KEY_RESIZE }, .action = act_redraw },
};
const size_t top_nkeys = ARRAY_SIZE(top_keys);

const char *top_key_label(const struct top_key *k, const struct top_model *m)
{
	return k->on && k->on(m) ? k->bar_label_on : k->bar_label;
}

static bool presses(const struct top_key *k, int kind, wint_t c)
{
	if (kind == KEY_CODE_YES) {
		for (const int *code = k->codes; *code; code++)
			if ((wint_t)*code == c)
				return true;
		return false;
	}
	/* strchr() would find the terminator of every key for a NUL. */
	return k->chars && c && c < 0x80 && strchr(k->chars, (int)c);
}

/* --- the filter prompt ---------------------------------------------------- */

static void filter_del(struct top_model *m)
{
	size_t n = strlen(m->filter);

	/* Back over continuation bytes to the start of the last character. */
	while (n > 0 && ((unsigned char)m->filter[n - 1] & 0xc0) == 0x80)
		n--;
	if (n > 0)
		n--;
	m->filter[n] = 0;
}

static void filter_add(struct top_model *m, wint_t c)
{
	char mb[MB_LEN_MAX];
	mbstate_t ps;
	size_t n, len = strlen(m->filter);

	memset(&ps, 0, sizeof(ps));
	n = wcrtomb(mb, (wchar_t)c, &ps);
	if (n == (size_t)-1 || len + n >= sizeof(m->filter))
		return;
	memcpy(m->filter + len, mb, n);
	m->filter[len + n] = 0;
}

static void prompt_key(struct top_model *m, struct top_ui *ui, int kind, wint_t c)
{
	if (kind == KEY_CODE_YES) {
		if (c == KEY_BACKSPACE)
			filter_del(m);
		else if (c == KEY_ENTER)
			ui->prompting = false;
	} else if (c == '\r' || c == '\n') {
		ui->prompting = false;
	} else if (c == 27) {
		m->filter[0] = 0;
		ui->prompting = false;
	} else if (c == 127 || c == 8) {
		filter_del(m);
	} else if (c == 21) {		/* Ctrl-U */
		m->filter[0] = 0;
	} else if (iswprint(c)) {
		filter_add(m, c);
	}
	ui->scroll = 0;
}

/* --- dispatch ------------------------------------------------------------- */

int top_key_press(struct top_model *m, struct top_ui *ui, int kind, wint_t c)
{
	if (ui->help) {			/* any key closes it */
		ui->help = false;
		return TOP_REDRAW;
	}
	if (ui->prompting) {
		prompt_key(m, ui, kind, c);
		return TOP_REDRAW;
	}
	for (size_t i = 0; i < top_nkeys; i++) {
		const struct top_key *k = &top_keys[i];

		if (!presses(k, kind, c))
			continue;
		if (k->live && m->exited)
			return TOP_REDRAW;
		return TOP_REDRAW | k->action(m, ui, c);
	}
	return TOP_REDRAW;
}
