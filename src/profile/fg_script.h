/* The flame graph's style sheet and script (fg_script.c), kept apart from
 * the writer (out_flamegraph.c) that lays the frames out for them. */
#ifndef PYSTROBE_FG_SCRIPT_H
#define PYSTROBE_FG_SCRIPT_H

/* The width the file is drawn at without a script (an image viewer,
 * xmllint, rsvg), and the width the script's layout starts from. */
#define FG_WIDTH	1200
#define FG_XPAD		10
/* The narrowest window the script lays out for: below it, the page
 * scrolls sideways rather than crowd the buttons into the legend. */
#define FG_MIN_WIDTH	1000

extern const char fg_style[];
extern const char fg_script[];

#endif
