/* The keys of top: one table from key to action, from which the dispatch,
 * the key bar and the help screen are all made, so they cannot disagree
 * (htop's Action.c).
 *
 * An action changes the model or the state of the screen, and returns
 * what the loop must do about the rest (htop's Htop_Reaction): count
 * afresh, tell the samplers about idle threads, quit.  So the keys know
 * neither the terminal's drawing nor the target.
 */
#ifndef PYSTROBE_TOP_KEYS_H
#define PYSTROBE_TOP_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <wchar.h>

#include "top/model.h"

/* The state of the screen that keys change, besides the model. */
struct top_ui {
	int scroll;		/* rows of the table scrolled past */
	int chrome;		/* lines that are not table rows (the view's) */
	bool help;		/* the help screen is open */
	bool prompting;		/* the filter is being typed */
};

/* What the loop must do after a key. */
enum {
	TOP_REDRAW = 1 << 0,
	TOP_RESET = 1 << 1,	/* count afresh: top_model_reset() */
	TOP_IDLE = 1 << 2,	/* sample idle threads, or stop: top_model_set_idle() */
	TOP_REPAINT = 1 << 3,	/* the terminal may be garbled: paint it whole */
	TOP_QUIT = 1 << 4,
};

struct top_key {
	const char *chars;	/* the characters that press it, or NULL */
	int codes[8];		/* the curses KEY_ codes that press it; 0 ends */
	const char *help;	/* its line on the help screen, or NULL */
	/* In the key bar (when bar_key is not NULL): its name, and what it
	 * does, or what it does while on() says so. */
	const char *bar_key, *bar_label, *bar_label_on;
	bool (*on)(const struct top_model *m);
	bool live;		/* does nothing once the target has exited */
	int (*action)(struct top_model *m, struct top_ui *ui, wint_t c);
};

extern const struct top_key top_keys[];
extern const size_t top_nkeys;

/* What k says in the key bar now. */
const char *top_key_label(const struct top_key *k, const struct top_model *m);

/* One key as get_wch() read it (kind OK or KEY_CODE_YES).  Returns what
 * the loop must do, TOP_REDRAW at least, before the next key is pressed
 * (I twice is idle threads on and off again). */
int top_key_press(struct top_model *m, struct top_ui *ui, int kind, wint_t c);

#endif
