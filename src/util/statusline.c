/* A status line on a terminal; see statusline.h. */
#include "util/statusline.h"
#include "util/util.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* A terminal this small keeps the plain line: a row set apart would
 * leave the program next to nothing. */
#define MIN_ROWS 4

/* One write() for the whole update: the terminal does not split it with
 * the program's output. */
static void put(const struct statusline *sl, const struct strbuf *sb)
{
	size_t done = 0;

	while (done < sb->len) {
		ssize_t n = write(sl->fd, sb->buf + done, sb->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		done += n;
	}
}

static void winsize(int fd, int *rows, int *cols)
{
	struct winsize ws;

	*rows = *cols = 0;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* Give the last row back: clear it, and the scrolling region is the
 * whole screen again.  DECSTBM homes the cursor: saved and restored. */
static void release_row(struct statusline *sl, struct strbuf *sb)
{
	if (!sl->rows)
		return;
	sb_printf(sb, "\0337\033[%d;1H\033[2K\033[r\0338", sl->rows);
	sl->rows = 0;
}

/* Set the last row apart.  The newline makes room for it: on the last
 * row it scrolls the screen up one, so the line the cursor was on is
 * still above the cursor once it moves back up. */
static void claim_row(struct statusline *sl, struct strbuf *sb, int rows)
{
	sb_printf(sb, "\n\0337\033[1;%dr\0338\033[1A", rows - 1);
	sl->rows = rows;
}

void statusline_init(struct statusline *sl, int fd, bool shared)
{
	sl->fd = fd;
	sl->shared = shared;
	sl->shown = false;
	sl->rows = 0;
}

void statusline_show(struct statusline *sl, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	int rows, cols;

	winsize(sl->fd, &rows, &cols);
	/* A row more or fewer (a resize): set apart the new last one. */
	if (sl->rows && sl->rows != rows)
		release_row(sl, &sb);
	if (sl->shared && rows >= MIN_ROWS && !sl->rows)
		claim_row(sl, &sb, rows);
	if (sl->rows)
		sb_printf(&sb, "\0337\033[%d;1H\033[2K", sl->rows);
	else
		sb_puts(&sb, "\r\033[K");
	/* Cut to the width: a wrapped line is redrawn in the wrong place. */
	sb_printf(&sb, "%.*s", cols > 1 ? cols - 1 : 1 << 16, text);
	if (sl->rows)
		sb_puts(&sb, "\0338");
	put(sl, &sb);
	sb_release(&sb);
	sl->shown = true;
}

void statusline_end(struct statusline *sl)
{
	struct strbuf sb = STRBUF_INIT;

	if (!sl->shown)
		return;
	if (sl->rows)
		release_row(sl, &sb);
	else
		sb_puts(&sb, "\r\033[K");
	put(sl, &sb);
	sb_release(&sb);
	sl->shown = false;
}
