/* The flame graph: one self-contained, interactive SVG.
 *
 * The profile's stacks (root first) are merged into a tree whose nodes are
 * (parent, frame) with a sample count, and drawn root at the top, callees
 * below their callers (an icicle graph, py-spy's and speedscope's layout).
 * The rows near the root are the program's own: drawn the other way up, as
 * flamegraph.pl does, a deep but thin stack (imports are 30 frames deep)
 * pushes them below the first screen.  The hover details are drawn at the
 * top for the same reason.  Siblings are ordered by label, so the layout
 * does not depend on sampling order.
 *
 * A differential flame graph (out_opts.diff_base) draws the same tree, each
 * node coloured by how its self time changed from BEFORE to AFTER: red
 * grew, blue shrank, white unchanged, the strength relative to the largest
 * change drawn.  Nodes are paths, so a function that got slower under one
 * caller only is red there only.  A frame the other profile does not have
 * at all is marked (data-mark, drawn dashed).  Changes are in AFTER's
 * samples: BEFORE's counts are scaled to AFTER's total unless diff_raw.
 *
 * A native frame's label is its short name (profile/shortname.h) unless
 * out_opts.full_names; its tooltip has the whole one, and the label drawn
 * is then in data-l for the script, which searches both.
 *
 * The drawing is pruned and labels are cut, so the picture cannot be read
 * back; the file also carries the profile itself, every stack as
 * `record -f collapsed` writes it, XML-escaped in a <metadata> element
 * (SVG_STACKS_TAG in profile_read.h), so that diff and merge take what
 * record writes by default.  A differential graph carries none: it is a
 * comparison, not a profile.
 *
 * Every string comes from the target and may hold anything: it is made
 * valid XML text (no invalid UTF-8, no control characters) and escaped.
 * The script never builds code or markup from it: it reads attributes and
 * text content, and writes only text content, attributes and styles.
 */
#include "profile/fg_script.h"
#include "profile/loss.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FG_ROW		16		/* a row; the rect is one pixel shorter */
#define FG_BAR_Y	66		/* the legend and buttons */
#define FG_DETAILS_Y	88		/* the hovered frame, what a search matched */
#define FG_TOP		100		/* the root's row */
#define FG_BOTTOM	10
#define FG_CHAR_W	7.08		/* 12px Verdana, as flamegraph.pl estimates */
/* Nodes narrower than 1/FG_PRUNE of all samples are left out with their
 * subtrees: they would be barely a pixel wide, and without pruning a long
 * recording's long tail of rare stacks makes the file huge. */
#define FG_PRUNE	1000

/* The helper threads (see mark_helpers()) take this share of the width
 * at most while drawn narrow, and are drawn narrow only where that makes
 * them at most half as wide as their samples would. */
#define FG_HELPER_SHARE	0.05
#define FG_HELPER_MIN_CUT	0.5
/* The buttons at the right of the bar; the legend is centred left of them. */
#define FG_RIGHT	(FG_WIDTH - FG_XPAD - 190)
#define FG_LEGEND_L	100

struct fnode {
	uint32_t frame;		/* UINT32_MAX for the "all" root */
	uint32_t parent;
	uint32_t child, sibling;	/* first child, next sibling; 0 = none */
	uint64_t value;
	uint64_t self;		/* samples whose stack ends here */
	uint64_t base, base_self;	/* the same in out_opts.diff_base */
	uint64_t helper;	/* samples in the helper subtrees at or under it */
	bool plain;		/* its subtree holds no frame of the program's own */
	uint8_t helper_root;	/* 1: the top of a helper subtree */
};

struct fg {
	const struct profile *p;
	const struct out_opts *o;
	FILE *f;
	struct fnode *nodes;
	uint32_t nnodes, cap;
	struct hashidx index;	/* (parent, frame) -> node, all but the root */
	/* Per frame, valid XML text, made on first use: the label drawn (a
	 * native name short unless full_names), and the whole one for the
	 * tooltip, NULL where they are the same. */
	char **labels, **titles;
	uint64_t total;
	uint32_t max_depth;	/* of drawn nodes; 0 is the "all" row */
	/* diff mode: */
	uint64_t base_total;
	bool *in_base;		/* per frame: in some stack of the base */
	double max_delta;	/* the largest self change drawn, in samples */
	/* Helper threads: drawn narrow, each sample of theirs as k of one. */
	double k;
	double dtotal;		/* the width of everything, in such samples */
};

static const char *cat_names[] = { "user", "stdlib", "site-packages", "native", "root",
				   "waiting" };

/* --- strings from the target ------------------------------------------ */

/* s as text XML accepts: escaped by the one rule (util/escape.h), which
 * leaves no control character, invalid UTF-8 or non-character XML refuses. */
static char *xml_clean(const char *str)
{
	struct strbuf sb = STRBUF_INIT;

	sb_add_printable(&sb, str);
	return sb_detach(&sb);
}

/* Write the first len bytes of clean text, escaped for text and attributes. */
static void put_esc(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: putc(s[i], f);
		}
	}
}

static void put_text(FILE *f, const char *raw)
{
	char *s = xml_clean(raw ? raw : "");

	put_esc(f, s, strlen(s));
	free(s);
}

static void make_labels(struct fg *g, uint32_t frame)
{
	const struct pframe *f = &g->p->frames[frame];
	char *shown = pframe_shown_label(f, g->o->full_filenames, g->o->full_names);
	char *full = pframe_label(f, g->o->full_filenames);

	g->labels[frame] = xml_clean(shown);
	if (strcmp(shown, full))
		g->titles[frame] = xml_clean(full);
	free(shown);
	free(full);
}

static const char *label(struct fg *g, uint32_t frame)
{
	if (frame == UINT32_MAX)
		return "all";
	if (!g->labels[frame])
		make_labels(g, frame);
	return g->labels[frame];
}

/* The tooltip's name: the whole label. */
static const char *title(struct fg *g, uint32_t frame)
{
	const char *l = label(g, frame);

	return frame != UINT32_MAX && g->titles[frame] ? g->titles[frame] : l;
}

/* Clean text cut to what fits in width pixels, with an ellipsis: the byte
 * length to write, or 0 when not even three characters fit.  The estimate
 * is Verdana's (the script measures the font the page got instead). */
static size_t fit_text(const char *s, double width, bool *cut)
{
	long fit = (long)((width - 6) / FG_CHAR_W);
	size_t len = 0, cut_at = 0;
	long chars = 0;

	*cut = false;
	if (fit < 3)
		return 0;
	while (s[len]) {
		if (chars == fit - 2)
			cut_at = len;
		if (chars == fit) {
			*cut = true;
			return cut_at;
		}
		/* Clean text is valid UTF-8: skip continuation bytes. */
		len++;
		while ((s[len] & 0xc0) == 0x80)
			len++;
		chars++;
	}
	return len;
}

/* --- the tree ----------------------------------------------------------- */

static uint32_t node_hash(uint32_t parent, uint32_t frame)
{
	return hash_u64((uint64_t)parent << 32 | frame);
}

/* The node, or HASHIDX_NONE. */
static uint32_t node_find(const struct fg *g, uint32_t parent, uint32_t frame)
{
	struct hashidx_pos pos;
	uint32_t id;

	for (id = hashidx_first(&g->index, node_hash(parent, frame), &pos); id != HASHIDX_NONE;
	     id = hashidx_next(&g->index, &pos))
		if (g->nodes[id].parent == parent && g->nodes[id].frame == frame)
			return id;
	return HASHIDX_NONE;
}

static uint32_t node_new(struct fg *g, uint32_t parent, uint32_t frame)
{
	uint32_t id;
	struct fnode *n;

	ALLOC_GROW(g->nodes, g->nnodes + 1, g->cap);
	id = g->nnodes++;
	n = &g->nodes[id];
	memset(n, 0, sizeof(*n));
	n->frame = frame;
	n->parent = parent;
	return id;
}

static uint32_t node_child(struct fg *g, uint32_t parent, uint32_t frame)
{
	uint32_t id = node_find(g, parent, frame);

	if (id != HASHIDX_NONE)
		return id;
	id = node_new(g, parent, frame);
	g->nodes[id].sibling = g->nodes[parent].child;
	g->nodes[parent].child = id;
	hashidx_add(&g->index, node_hash(parent, frame), id);
	return id;
}

static void build_tree(struct fg *g)
{
	const struct profile *p = g->p;

	node_new(g, 0, UINT32_MAX);	/* the root, "all", not indexed */
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];
		uint32_t n = 0;

		if (!s->count)
			continue;
		g->nodes[0].value += s->count;
		for (uint32_t d = 0; d < s->depth; d++) {
			n = node_child(g, n, s->frames[d]);
			g->nodes[n].value += s->count;
		}
		g->nodes[n].self += s->count;
	}
	g->total = g->nodes[0].value;
}

/* The base's counts on the nodes drawn; paths only the base has are not
 * drawn, and are not needed. */
static void add_base(struct fg *g)
{
	const struct profile *b = g->o->diff_base;

	g->in_base = xcalloc(g->p->nframes ? g->p->nframes : 1, sizeof(*g->in_base));
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct pstack *s = &b->stacks[i];
		uint32_t n = 0, d;

		if (!s->count)
			continue;
		g->base_total += s->count;
		g->nodes[0].base += s->count;
		for (d = 0; d < s->depth; d++)
			if (s->frames[d] < g->p->nframes)
				g->in_base[s->frames[d]] = true;
		for (d = 0; d < s->depth; d++) {
			n = node_find(g, n, s->frames[d]);
			if (n == HASHIDX_NONE)
				break;
			g->nodes[n].base += s->count;
		}
		if (d == s->depth)
			g->nodes[n].base_self += s->count;
	}
}

static bool diff_mode(const struct fg *g);

/* --- helper threads ------------------------------------------------------ */

/* In a recording of idle threads too (--idle, --training) the threads that
 * only ever wait take the width: each of multiprocessing's queue feeders, a
 * pool's task and result handlers, a listener, the resource tracker gets as
 * much of it as the main thread.  They are told by what they run: a helper
 * subtree is a drawn node that has, in its subtree and on its path from the
 * root, only frames of the standard library, native code, roots and
 * markers (and the <module> of a `python -c` string, as multiprocessing
 * starts its helper processes, where no stack ends).  A frame of the
 * program's own, of site-packages or a <wait:...> leaf is none: what the
 * program does, and what it waits for, keeps its width.  A CPU profile
 * has none: a helper thread there used the CPU. */
static bool frame_plain(const struct fg *g, const struct fnode *n)
{
	const struct pframe *f;

	if (n->frame == UINT32_MAX)
		return true;
	f = &g->p->frames[n->frame];
	switch (pframe_category(f)) {
	case CAT_STDLIB:
	case CAT_NATIVE:
	case CAT_ROOT:
		return true;
	case CAT_USER:
		return f->file && !strcmp(f->file, "<string>") && !n->self;
	default:
		return false;
	}
}

static bool mark_plain(struct fg *g, uint32_t id)
{
	bool plain = frame_plain(g, &g->nodes[id]);

	for (uint32_t c = g->nodes[id].child; c; c = g->nodes[c].sibling)
		plain &= mark_plain(g, c);
	g->nodes[id].plain = plain;
	return plain;
}

static bool drawn(const struct fg *g, uint32_t id);

/* Mark the helper subtrees under id, whose path from the root is plain;
 * returns their samples. */
static uint64_t mark_helpers(struct fg *g, uint32_t id, bool path)
{
	struct fnode *n = &g->nodes[id];

	path = path && frame_plain(g, n);
	if (id && path && n->plain) {
		n->helper_root = 1;
		n->helper = n->value;
		return n->helper;
	}
	for (uint32_t c = n->child; c; c = g->nodes[c].sibling)
		if (drawn(g, c))
			n->helper += mark_helpers(g, c, path);
	return n->helper;
}

/* Whether to draw the helper threads narrow, and how narrow: together
 * FG_HELPER_SHARE of the width, where that is a real cut. */
static void find_helpers(struct fg *g)
{
	uint64_t h, rest;

	g->k = 1;
	g->dtotal = (double)g->total;
	if (!g->p->wall || diff_mode(g) || !g->total)
		return;
	mark_plain(g, 0);
	h = mark_helpers(g, 0, true);
	rest = g->total - h;
	if (!h || !rest)
		return;
	g->k = FG_HELPER_SHARE / (1 - FG_HELPER_SHARE) * (double)rest / (double)h;
	if (g->k > FG_HELPER_MIN_CUT)
		g->k = 1;
	else
		g->dtotal = rest + h * g->k;
}

/* How wide a node is drawn, in samples as wide as the program's own. */
static double drawn_width(const struct fg *g, const struct fnode *n, bool helper)
{
	return helper ? n->value * g->k : n->value - n->helper * (1 - g->k);
}

/* --- drawing ------------------------------------------------------------ */

/* A colour from the category's palette, varied by a hash of the function
 * name so that a function keeps its colour wherever it appears. */
static void frame_colour(struct fg *g, uint32_t frame, char out[8])
{
	enum pframe_category cat = CAT_ROOT;
	uint32_t h = 0x5bd1e995;
	double v1, v2, v3;
	int r, gr, b;

	if (frame != UINT32_MAX) {
		cat = pframe_category(&g->p->frames[frame]);
		h = hash_str(HASH_INIT, g->p->frames[frame].name);
	}
	v1 = (h & 0xff) / 255.0;
	v2 = ((h >> 8) & 0xff) / 255.0;
	v3 = ((h >> 16) & 0xff) / 255.0;
	switch (cat) {
	case CAT_USER:		/* red to orange, never as yellow as stdlib */
		r = 210 + 45 * v3;
		gr = 50 + 100 * v1;
		b = 40 * v2;
		break;
	case CAT_STDLIB:	/* yellow */
		r = 200 + 40 * v1;
		gr = 190 + 45 * v1;
		b = 40 + 40 * v2;
		break;
	case CAT_SITE:		/* aqua to green */
		r = 40 + 60 * v1;
		gr = 180 + 50 * v2;
		b = 120 + 80 * v3;
		break;
	case CAT_NATIVE:	/* blue to purple */
		r = 100 + 80 * v1;
		gr = 100 + 40 * v2;
		b = 210 + 45 * v3;
		break;
	case CAT_WAIT:		/* one pink for every class: the label says which */
		r = 235;
		gr = 80;
		b = 170;
		break;
	default:		/* grey */
		r = gr = b = 175 + 40 * v1;
		break;
	}
	snprintf(out, 8, "#%02x%02x%02x", r, gr, b);
}

/* --- differential colours and tooltips ----------------------------------- */

static bool diff_mode(const struct fg *g)
{
	return g->o->diff_base != NULL;
}

/* A node's counts and totals as BEFORE and AFTER, whichever is drawn. */
struct change {
	uint64_t before, after, before_total, after_total;
	double delta;		/* in AFTER's samples */
};

static void node_change(const struct fg *g, const struct fnode *n, bool self, struct change *c)
{
	uint64_t drawn = self ? n->self : n->value, other = self ? n->base_self : n->base;

	c->before = g->o->diff_negate ? drawn : other;
	c->after = g->o->diff_negate ? other : drawn;
	c->before_total = g->o->diff_negate ? g->total : g->base_total;
	c->after_total = g->o->diff_negate ? g->base_total : g->total;
	if (g->o->diff_raw || !c->before_total)
		c->delta = (double)c->after - (double)c->before;
	else
		c->delta = c->after - (double)c->before * c->after_total / c->before_total;
}

static void max_delta(struct fg *g)
{
	for (uint32_t i = 1; i < g->nnodes; i++) {
		struct change c;

		if (g->nodes[i].value * FG_PRUNE < g->total)
			continue;
		node_change(g, &g->nodes[i], true, &c);
		if (fabs(c.delta) > g->max_delta)
			g->max_delta = fabs(c.delta);
	}
}

static void diff_colour(const struct fg *g, const struct fnode *n, char out[8])
{
	struct change c;
	double strength;
	int v;

	node_change(g, n, true, &c);
	strength = g->max_delta > 0 ? fabs(c.delta) / g->max_delta : 0;
	v = (int)lround(255 - 200 * strength);
	if (c.delta > 0)
		snprintf(out, 8, "#ff%02x%02x", v, v);
	else if (c.delta < 0)
		snprintf(out, 8, "#%02x%02xff", v, v);
	else
		snprintf(out, 8, "#ffffff");
}

/* Whether the node's frame is missing from the other profile altogether. */
static bool diff_only_here(const struct fg *g, const struct fnode *n)
{
	return n->frame != UINT32_MAX && !g->in_base[n->frame];
}

static void put_percent(FILE *f, uint64_t n, uint64_t total);

static void put_change(FILE *f, const struct change *c)
{
	double pts = (c->after_total ? 100.0 * c->after / c->after_total : 0) -
		     (c->before_total ? 100.0 * c->before / c->before_total : 0);

	fprintf(f, "before %llu (", (unsigned long long)c->before);
	put_percent(f, c->before, c->before_total);
	fprintf(f, "), after %llu (", (unsigned long long)c->after);
	put_percent(f, c->after, c->after_total);
	fprintf(f, "), delta %+lld (%+.2f pts)", (long long)llround(c->delta), pts);
}

/* The second line of a tooltip: the self and total change. */
static void put_diff_title(struct fg *g, const struct fnode *n)
{
	struct change c;

	fputc('\n', g->f);
	if (diff_only_here(g, n))
		fputs(g->o->diff_negate ? "gone in AFTER; " : "new in AFTER; ", g->f);
	node_change(g, n, true, &c);
	fputs("self: ", g->f);
	put_change(g->f, &c);
	node_change(g, n, false, &c);
	fputs("; total: ", g->f);
	put_change(g->f, &c);
}

static void put_percent(FILE *f, uint64_t n, uint64_t total)
{
	double pc = total ? 100.0 * n / total : 0;

	/* Same rule as fmt() in the script. */
	if (pc >= 1 || pc == 0)
		fprintf(f, "%.1f%%", pc);
	else
		fprintf(f, "%.2f%%", pc);
}

/* Where a node is drawn: its first sample, and the same in drawn samples
 * (helper threads narrow); whether it is in a helper subtree. */
struct at {
	uint64_t start;
	double dstart;
	uint32_t depth;
	bool helper;
};

static void draw_node(struct fg *g, uint32_t id, const struct at *at)
{
	const struct fnode *n = &g->nodes[id];
	double scale = (FG_WIDTH - 2 * FG_XPAD) / g->dtotal;
	double x = FG_XPAD + at->dstart * scale, w = drawn_width(g, n, at->helper) * scale;
	int y = FG_TOP + at->depth * FG_ROW;
	const char *l = label(g, n->frame), *t = title(g, n->frame);
	char colour[8];
	size_t len;
	bool cut;

	if (diff_mode(g))
		diff_colour(g, n, colour);
	else
		frame_colour(g, n->frame, colour);
	fprintf(g->f, "<g data-s=\"%llu\" data-n=\"%llu\"",
		(unsigned long long)at->start, (unsigned long long)n->value);
	if (at->helper)
		fprintf(g->f, " data-h=\"%d\"", n->helper_root ? 1 : 2);
	if (diff_mode(g) && diff_only_here(g, n))
		fprintf(g->f, " data-mark=\"%s\"", g->o->diff_negate ? "gone" : "new");
	if (t != l) {
		fputs(" data-l=\"", g->f);
		put_esc(g->f, l, strlen(l));
		fputc('"', g->f);
	}
	fputs("><title>", g->f);
	put_esc(g->f, t, strlen(t));
	fprintf(g->f, " (%llu sample%s, ", (unsigned long long)n->value,
		n->value == 1 ? "" : "s");
	put_percent(g->f, n->value, g->total);
	fputc(')', g->f);
	if (diff_mode(g))
		put_diff_title(g, n);
	fprintf(g->f, "</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">", x, y, w, FG_ROW - 1, colour, x + 3, y + 11.5);
	len = fit_text(l, w, &cut);
	put_esc(g->f, l, len);
	fprintf(g->f, "%s</text></g>\n", cut ? "\xe2\x80\xa6" : "");
}

static bool drawn(const struct fg *g, uint32_t id)
{
	return g->nodes[id].value * FG_PRUNE >= g->total;
}

static int cmp_children(const void *a, const void *b, void *arg)
{
	struct fg *g = arg;
	uint32_t fa = g->nodes[*(const uint32_t *)a].frame;
	uint32_t fb = g->nodes[*(const uint32_t *)b].frame;
	int c = strcmp(label(g, fa), label(g, fb));

	if (c)
		return c;
	return fa < fb ? -1 : fa > fb;
}

/* Draw a node and, left to right in label order, the children wide enough
 * to keep. */
static void draw_tree(struct fg *g, uint32_t id, struct at at)
{
	uint32_t *kids, nkids = 0;

	at.helper = at.helper || (g->k < 1 && g->nodes[id].helper_root);
	draw_node(g, id, &at);
	for (uint32_t c = g->nodes[id].child; c; c = g->nodes[c].sibling)
		nkids += drawn(g, c);
	if (!nkids)
		return;
	kids = xmalloc(nkids * sizeof(*kids));
	nkids = 0;
	for (uint32_t c = g->nodes[id].child; c; c = g->nodes[c].sibling)
		if (drawn(g, c))
			kids[nkids++] = c;
	qsort_r(kids, nkids, sizeof(*kids), cmp_children, g);
	at.depth++;
	for (uint32_t i = 0; i < nkids; i++) {
		draw_tree(g, kids[i], at);
		at.start += g->nodes[kids[i]].value;
		at.dstart += drawn_width(g, &g->nodes[kids[i]], at.helper);
	}
	free(kids);
}

static uint32_t tree_depth(const struct fg *g, uint32_t id)
{
	uint32_t max = 0;

	for (uint32_t c = g->nodes[id].child; c; c = g->nodes[c].sibling) {
		uint32_t d;

		if (!drawn(g, c))
			continue;
		d = 1 + tree_depth(g, c);
		if (d > max)
			max = d;
	}
	return max;
}

/* --- the document around the frames ------------------------------------ */

/* A checkbox: a box ticked or not, and its label, all one control. */
static void put_check(FILE *f, const char *id, bool on, int x, const char *tip,
		      const char *label)
{
	fprintf(f, "<g id=\"%s\" class=\"btn check\" role=\"checkbox\" aria-checked=\"%s\">"
		"<title>%s</title><rect class=\"box\" x=\"%d\" y=\"%d\" width=\"11\" height=\"11\" "
		"rx=\"2\"/><path class=\"tick\" d=\"M%d %dl3 3l5-7\"/><text x=\"%d\" y=\"%d\">%s</text>"
		"</g>\n", id, on ? "true" : "false", tip, x, FG_BAR_Y - 10, x + 2, FG_BAR_Y - 5,
		x + 16, FG_BAR_Y, label);
}

/* Legend entries, each 30 + 7 pixels a character wide, centred between
 * the left margin's "Reset Zoom" and the buttons. */
static int legend_x(int width)
{
	return FG_LEGEND_L + (FG_RIGHT - 15 - FG_LEGEND_L - width) / 2;
}

static void put_diff_legend(struct fg *g)
{
	const char *names[] = { "grew", "shrank", "unchanged",
				g->o->diff_negate ? "gone in AFTER" : "new in AFTER" };
	static const char *colours[] = { "#ff3737", "#3737ff", "#ffffff" };
	int x = 0;

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		x += 30 + 7 * (int)strlen(names[i]);
	x = legend_x(x);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		fprintf(g->f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" rx=\"2\" "
			"fill=\"%s\" stroke=\"#000\" stroke-width=\"%s\"%s/>"
			"<text x=\"%d\" y=\"%d\">%s</text>\n", x, FG_BAR_Y - 10,
			i < 3 ? colours[i] : "#ffffff", i < 3 ? ".3" : "1",
			i < 3 ? "" : " stroke-dasharray=\"4,2\"", x + 16, FG_BAR_Y, names[i]);
		x += 30 + 7 * (int)strlen(names[i]);
	}
}

/* Whether a frame is a wait leaf: the legend names that colour only then,
 * so that a profile without them is drawn as before. */
static bool has_waits(const struct profile *p)
{
	for (uint32_t i = 0; i < p->nframes; i++)
		if (pframe_category(&p->frames[i]) == CAT_WAIT)
			return true;
	return false;
}

static const char helpers_tip[] =
	"Threads and processes that run only the standard library: multiprocessing's "
	"queue feeders, a pool's task and result handlers, listeners, the resource tracker. "
	"Recorded with idle threads, they mostly wait, and would take most of the width. "
	"Ticked, they share 5% of it (drawn faded) and the rest goes to your code; "
	"untick to draw them at their true width, or click one to zoom into it. "
	"Percentages and searches count their samples either way.";

static void put_legend(const struct fg *g)
{
	static const char *colours[] = { "#e8641a", "#e6e050", "#46c8a0", "#8c78f0", "#c0c0c0",
					 "#eb50aa" };
	size_t n = ARRAY_SIZE(cat_names) - !has_waits(g->p);
	char helpers[64];
	int x = 0;

	snprintf(helpers, sizeof(helpers), "narrow helper threads (%.0f%%)",
		 100.0 * g->nodes[0].helper / (g->total ? g->total : 1));
	for (size_t i = 0; i < n; i++)
		x += 30 + 7 * (int)strlen(cat_names[i]);
	if (g->k < 1)
		x += 16 + 7 * (int)strlen(helpers);
	x = legend_x(x);
	for (size_t i = 0; i < n; i++) {
		fprintf(g->f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" rx=\"2\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			x, FG_BAR_Y - 10, colours[i], x + 16, FG_BAR_Y, cat_names[i]);
		x += 30 + 7 * (int)strlen(cat_names[i]);
	}
	if (g->k < 1)
		put_check(g->f, "helpers", true, x, helpers_tip, helpers);
}

/* The buttons at the right, and what a search matched below them: moved
 * as one to the window's right edge by the script. */
static void put_buttons(struct fg *g)
{
	fprintf(g->f, "<g id=\"right\">\n<text id=\"search\" class=\"btn\" x=\"%d\" y=\"%d\">"
		"<title>Search for a regular expression (Ctrl-F or /)</title>Search</text>\n",
		FG_RIGHT, FG_BAR_Y);
	put_check(g->f, "ic", false, FG_RIGHT + 56,
		  "Ignore case when searching: a search for work then also matches Work and WORK",
		  "ignore case");
	fprintf(g->f, "<text id=\"clear\" class=\"btn hide\" x=\"%d\" y=\"%d\">"
		"<title>Clear the search (Esc)</title>Clear</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" style=\"text-anchor:end\"></text>\n</g>\n",
		FG_WIDTH - FG_XPAD - 38, FG_BAR_Y, FG_WIDTH - FG_XPAD, FG_DETAILS_Y);
}

/* What the recording lost (profile/loss.h), after the subtitle's counts. */
static void put_losses(FILE *f, const struct profile *p)
{
	struct strbuf sb = STRBUF_INIT;

	if (profile_loss_note(p, &sb)) {
		fputs("; ", f);
		put_text(f, sb.buf);
	}
	sb_release(&sb);
}

static void put_head(struct fg *g, int height)
{
	const struct profile *p = g->p;
	FILE *f = g->f;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<!-- Flame graph written by pystrobe: click a frame to zoom, "
		"Ctrl-F or / to search.  A browser lays it out for the window's width; "
		"without a script it is drawn %d pixels wide. -->\n"
		"<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/>"
		"<stop stop-color=\"#eeeeb0\" offset=\"95%%\"/></linearGradient></defs>\n",
		FG_WIDTH, height, FG_WIDTH, height, FG_WIDTH);
	fputs(fg_style, f);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"url(#bg)\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">", FG_WIDTH / 2);
	if (g->o->title) {
		put_text(f, g->o->title);
	} else {
		fputs("pystrobe: ", f);
		put_text(f, p->command ? p->command : "(unknown command)");
	}
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", FG_WIDTH / 2);
	if (g->o->subtitle) {
		put_text(f, g->o->subtitle);
	} else {
		fprintf(f, "pid %d, Python ", (int)p->pid);
		put_text(f, p->python_version ? p->python_version : "?");
		fprintf(f, ", %.2f s, %g Hz, %llu samples", p->duration_ns / 1e9, p->rate_hz,
			(unsigned long long)g->total);
		if (p->errors)
			fprintf(f, ", %llu failed", (unsigned long long)p->errors);
		put_losses(f, p);
	}
	fprintf(f, "</text>\n"
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n",
		FG_XPAD, FG_BAR_Y);
	put_buttons(g);
	fputs("<g id=\"legend\">\n", f);
	if (diff_mode(g))
		put_diff_legend(g);
	else
		put_legend(g);
	fputs("</g>\n", f);
}

/* The profile's stacks, for diff and merge.  Folded text holds no control
 * characters (out_collapsed.c escapes them) and is valid UTF-8, so
 * escaping the markup characters is all XML needs.  Returns -errno when
 * memory for the text ran out. */
static int put_stacks(struct fg *g)
{
	const struct profile *p = g->p;
	struct out_opts o = { .full_filenames = g->o->full_filenames };
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int rc = m ? out_collapsed(p, m, &o) : -errno;

	if (m && fclose(m) == EOF && rc == 0)
		rc = -errno;
	if (rc < 0) {
		free(text);
		return rc;
	}
	fputs("<!-- The profile's stacks, as `pystrobe record -f collapsed` writes them: "
	      "pystrobe diff and merge read them back. -->\n", g->f);
	fprintf(g->f, SVG_STACKS_TAG " data-duration-ns=\"%llu\" data-start-unix-ns=\"%llu\"",
		(unsigned long long)p->duration_ns, (unsigned long long)p->start_unix_ns);
	if (p->rate_hz > 0)
		fprintf(g->f, " data-rate-hz=\"%.17g\"", p->rate_hz);
	if (p->wall)
		fputs(" data-wall=\"1\"", g->f);
	fputs(">\n", g->f);
	put_esc(g->f, text, len);
	fputs("</metadata>\n", g->f);
	free(text);
	return 0;
}

static void put_tail(struct fg *g)
{
	fprintf(g->f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		FG_XPAD, FG_DETAILS_Y);
	fputs(fg_script, g->f);
	fputs("</svg>\n", g->f);
}

int out_flamegraph(const struct profile *p, FILE *f, const struct out_opts *o)
{
	static const struct out_opts defaults = { .full_filenames = false };
	struct fg g = { .p = p, .o = o ? o : &defaults, .f = f };
	int height, rc = 0;

	build_tree(&g);
	if (diff_mode(&g)) {
		add_base(&g);
		max_delta(&g);
	}
	g.labels = xcalloc(p->nframes ? p->nframes : 1, sizeof(*g.labels));
	g.titles = xcalloc(p->nframes ? p->nframes : 1, sizeof(*g.titles));
	g.max_depth = g.total ? tree_depth(&g, 0) : 0;
	find_helpers(&g);
	height = FG_TOP + (g.max_depth + 1) * FG_ROW + FG_BOTTOM;
	put_head(&g, height);
	fputs("<g id=\"frames\"", f);
	if (g.k < 1)
		fprintf(f, " data-k=\"%.6g\"", g.k);
	fputs(">\n", f);
	if (g.total)
		draw_tree(&g, 0, (struct at){ 0 });
	else
		fprintf(f, "<text x=\"%d\" y=\"%d\">No samples</text>\n", FG_XPAD, FG_TOP + 12);
	fputs("</g>\n", f);
	if (!diff_mode(&g))
		rc = put_stacks(&g);
	put_tail(&g);

	for (uint32_t i = 0; i < p->nframes; i++) {
		free(g.labels[i]);
		free(g.titles[i]);
	}
	free(g.labels);
	free(g.titles);
	free(g.in_base);
	free(g.nodes);
	hashidx_release(&g.index);
	return rc < 0 ? rc : out_finish(f);
}
