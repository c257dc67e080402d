/* A status line on a terminal: one line, redrawn in place while a
 * recording runs.
 *
 * Alone on the terminal (record --pid), it is the line the cursor is on,
 * redrawn after a carriage return.  Shared with a program that writes to
 * the same terminal (a launched command), that line would be broken by
 * the program's output: its logs, or the traceback of a Ctrl-C that only
 * the program receives, would start in the middle of it.  So there the
 * line is set apart: the terminal's scrolling region becomes every row
 * but the last, the status is drawn on the last, and the program's output
 * scrolls above it.  Each update is one write(), which the terminal does
 * not interleave with another writer's; statusline_end() gives the
 * terminal its whole screen back.
 */
#ifndef PYSTROBE_STATUSLINE_H
#define PYSTROBE_STATUSLINE_H

#include <stdbool.h>

struct statusline {
	int fd;
	bool shared;	/* a program writes to the same terminal */
	bool shown;	/* something is drawn */
	int rows;	/* with the last row set apart: the terminal's rows; or 0 */
};

void statusline_init(struct statusline *sl, int fd, bool shared);

/* Draw text (one line, cut to the terminal's width) in place of the last. */
void statusline_show(struct statusline *sl, const char *text);

/* Take the status line away, before anything else is said. */
void statusline_end(struct statusline *sl);

#endif
