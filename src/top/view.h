/* What top puts on the terminal: the full-screen view (curses), and the
 * plain-text snapshots printed when standard output is not a terminal.
 * Both only read the model; the help screen and the key bar are made from
 * the key table (keys.h).
 */
#ifndef PYSTROBE_TOP_VIEW_H
#define PYSTROBE_TOP_VIEW_H

#define NCURSES_WIDECHAR 1

#include <curses.h>
#include <stdbool.h>
#include <stdio.h>

#include "top/keys.h"
#include "top/model.h"

struct top_view {
	SCREEN *scr;
	bool utf8;		/* the terminal's locale is UTF-8 */
	bool colors;
};

/* Take the terminal: full screen, keys unechoed and not waited for.  It is
 * given back at exit and on a crash too.  Sets ui->chrome.  Returns 0, or
 * status_fail(EXIT_ERROR) (said on stderr). */
int top_view_start(struct top_view *v, struct top_ui *ui);

/* Give the terminal back as it was (again: nothing). */
void top_view_end(void);

/* Draw the screen; brings ui->scroll within the rows. */
void top_view_draw(const struct top_view *v, const struct top_model *m, struct top_ui *ui);

/* Paint the whole terminal at the next draw, not only what changed. */
void top_view_repaint(void);

/* A snapshot: the header on one line, the titles, the top rows and an
 * empty line.  Returns 0, or -errno when it could not be written. */
int top_view_snapshot(const struct top_model *m, FILE *out);

/* The line that ends the snapshots once the target has exited. */
void top_view_exited(const struct top_model *m, FILE *out);

#endif
