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
#include "profile/output.h"
#include "profile/profile_read.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FG_WIDTH	1200
#define FG_XPAD		10
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

#define STR_(x) #x
#define STR(x) STR_(x)

struct fnode {
	uint32_t frame;		/* UINT32_MAX for the "all" root */
	uint32_t parent;
	uint32_t child, sibling;	/* first child, next sibling; 0 = none */
	uint64_t value;
	uint64_t self;		/* samples whose stack ends here */
	uint64_t base, base_self;	/* the same in out_opts.diff_base */
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

/* Clean text cut to what fits in width pixels, with "..": the byte length
 * to write, or 0 when not even three characters fit. */
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

static void draw_node(struct fg *g, uint32_t id, uint64_t start, uint32_t depth)
{
	const struct fnode *n = &g->nodes[id];
	double scale = (double)(FG_WIDTH - 2 * FG_XPAD) / g->total;
	double x = FG_XPAD + start * scale, w = n->value * scale;
	int y = FG_TOP + depth * FG_ROW;
	const char *l = label(g, n->frame), *t = title(g, n->frame);
	char colour[8];
	size_t len;
	bool cut;

	if (diff_mode(g))
		diff_colour(g, n, colour);
	else
		frame_colour(g, n->frame, colour);
	fprintf(g->f, "<g data-s=\"%llu\" data-n=\"%llu\"",
		(unsigned long long)start, (unsigned long long)n->value);
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
	fprintf(g->f, "%s</text></g>\n", cut ? ".." : "");
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
static void draw_tree(struct fg *g, uint32_t id, uint64_t start, uint32_t depth)
{
	uint32_t *kids, nkids = 0;

	draw_node(g, id, start, depth);
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
	for (uint32_t i = 0; i < nkids; i++) {
		draw_tree(g, kids[i], start, depth + 1);
		start += g->nodes[kids[i]].value;
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

static const char style[] =
	"<style type=\"text/css\"><![CDATA[\n"
	"text{font:12px Verdana,sans-serif;fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{fill:#555;text-anchor:middle}\n"
	"#frames text{pointer-events:none}\n"
	"#frames rect{rx:2px;ry:2px}\n"
	"#frames g:hover rect{stroke:#000;stroke-width:.5}\n"
	".btn{cursor:pointer}.btn:hover{fill:#d00}\n"
	".hide{display:none}.dim rect{fill-opacity:.45}.dim text{fill:#777}\n"
	"g[data-mark] rect{stroke:#000;stroke-width:1;stroke-dasharray:4,2}\n"
	"]]></style>\n";

/* Kept small and ES5: it reads frames from their attributes and title,
 * and only ever sets text content, attributes and styles.  The functions
 * put on window are for tests and for people poking at the console. */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function(){'use strict';\n"
	"var W=" STR(FG_WIDTH) ",PAD=" STR(FG_XPAD) ",CW=" STR(FG_CHAR_W) ",\n"
	" fr=[],total=0,re=null,ic=false;\n"
	"function $(id){return document.getElementById(id);}\n"
	"function fmt(n){var p=total?100*n/total:0;\n"
	" return (p>=1||p===0?p.toFixed(1):p.toFixed(2))+'%';}\n"
	"function fit(l,w){var n=Math.floor((w-6)/CW),a=Array.from?Array.from(l):l.split('');\n"
	" if(n<3)return '';return a.length<=n?l:a.slice(0,n-2).join('')+'..';}\n"
	"function init(){var gs=$('frames').getElementsByTagName('g');\n"
	" for(var i=0;i<gs.length;i++){var g=gs[i],r=g.getElementsByTagName('rect')[0],\n"
	"  t=g.getElementsByTagName('title')[0].textContent;\n"
	"  var f={g:g,r:r,t:g.getElementsByTagName('text')[0],s:+g.getAttribute('data-s'),\n"
	"   n:+g.getAttribute('data-n'),x:+r.getAttribute('x'),w:+r.getAttribute('width'),\n"
	"   y:+r.getAttribute('y'),title:t,full:t.split('\\n')[0].replace(/ \\(\\d+ samples?, [\\d.]+%\\)$/,'')};\n"
	"  f.l=g.getAttribute('data-l')||f.full;g.pf=f;fr.push(f);if(f.n>total)total=f.n;}\n"
	" var fs=$('frames');\n"
	" fs.addEventListener('mouseover',function(e){var f=frameOf(e.target);\n"
	"  $('details').textContent=f?f.title.replace(/\\n/g,'; '):' ';});\n"
	" fs.addEventListener('mouseout',function(){$('details').textContent=' ';});\n"
	" fs.addEventListener('click',function(e){var f=frameOf(e.target);if(f)zoom(f);});\n"
	" $('unzoom').addEventListener('click',unzoom);\n"
	" $('search').addEventListener('click',ask);\n"
	" $('clear').addEventListener('click',clear);\n"
	" $('ic').addEventListener('click',function(){ic=!ic;\n"
	"  $('ic').style.fill=ic?'#d00':'';if(re)search(re.source);});\n"
	" window.addEventListener('keydown',function(e){\n"
	"  if(((e.ctrlKey||e.metaKey)&&e.keyCode===70)||(e.key==='/'&&!e.ctrlKey)){\n"
	"   e.preventDefault();ask();}else if(e.keyCode===27)clear();});\n"
	" window.pystrobeSearch=search;window.pystrobeClear=clear;window.pystrobeReset=unzoom;\n"
	" window.pystrobeZoom=function(g){zoom(g.pf);};}\n"
	"function frameOf(el){while(el&&!el.pf)el=el.parentNode;return el?el.pf:null;}\n"
	"function place(f,x,w){f.r.setAttribute('x',x.toFixed(1));\n"
	" f.r.setAttribute('width',w.toFixed(1));f.t.setAttribute('x',(x+3).toFixed(1));\n"
	" f.t.textContent=fit(f.l,w);}\n"
	"function cls(f,c){f.g.setAttribute('class',c);}\n"
	/* Frames are intervals [s, s+n) of samples: the subtree of z lies inside
	 * its interval at or below its row, its ancestors contain it above.
	 * Rows do not move: the frame clicked stays where the pointer is. */
	"function zoom(z){var sc=(W-2*PAD)/z.n;$('unzoom').setAttribute('class','btn');\n"
	" for(var i=0;i<fr.length;i++){var f=fr[i];\n"
	"  if(f.s>=z.s&&f.s+f.n<=z.s+z.n&&f.y>=z.y){cls(f,'');place(f,PAD+(f.s-z.s)*sc,f.n*sc);}\n"
	"  else if(f.y<z.y&&f.s<=z.s&&f.s+f.n>=z.s+z.n){cls(f,'dim');place(f,PAD,W-2*PAD);}\n"
	"  else cls(f,'hide');}}\n"
	"function unzoom(){$('unzoom').setAttribute('class','btn hide');\n"
	" for(var i=0;i<fr.length;i++){cls(fr[i],'');place(fr[i],fr[i].x,fr[i].w);}}\n"
	"function ask(){var t=window.prompt('Search for a regular expression '+\n"
	"  '(matched against \"function (file:line)\")',re?re.source:'');if(t)search(t);}\n"
	"function search(t){var r;try{r=new RegExp(t,ic?'i':'');}catch(e){\n"
	"  $('matched').textContent='Bad regex';return null;}\n"
	" re=r;var m=[];for(var i=0;i<fr.length;i++){var f=fr[i];\n"
	"  if(r.test(f.l)||r.test(f.full)){f.r.style.fill='#e600e6';m.push(f);}else f.r.style.fill='';}\n"
	/* A match inside a matched ancestor is not counted again: sorted by
	 * start, ancestors first, a match starting inside the last counted one
	 * is nested in it. */
	" m.sort(function(a,b){return a.s-b.s||b.n-a.n||a.y-b.y;});\n"
	" var sum=0,end=-1;\n"
	" for(i=0;i<m.length;i++)if(m[i].s>=end){sum+=m[i].n;end=m[i].s+m[i].n;}\n"
	" var txt='Matched: '+fmt(sum);$('matched').textContent=txt;\n"
	" $('clear').setAttribute('class','btn');return txt;}\n"
	"function clear(){re=null;for(var i=0;i<fr.length;i++)fr[i].r.style.fill='';\n"
	" $('matched').textContent='';$('clear').setAttribute('class','btn hide');}\n"
	"init();})();\n"
	"]]></script>\n";

static void put_diff_legend(struct fg *g)
{
	const char *names[] = { "grew", "shrank", "unchanged",
				g->o->diff_negate ? "gone in AFTER" : "new in AFTER" };
	static const char *colours[] = { "#ff3737", "#3737ff", "#ffffff" };
	int x = FG_WIDTH / 2 - 200;

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

static void put_legend(const struct fg *g)
{
	static const char *colours[] = { "#e8641a", "#e6e050", "#46c8a0", "#8c78f0", "#c0c0c0",
					 "#eb50aa" };
	size_t n = ARRAY_SIZE(cat_names) - !has_waits(g->p);
	int x = FG_WIDTH / 2 - 220;

	for (size_t i = 0; i < n; i++) {
		fprintf(g->f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" rx=\"2\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			x, FG_BAR_Y - 10, colours[i], x + 16, FG_BAR_Y, cat_names[i]);
		x += 30 + 7 * (int)strlen(cat_names[i]);
	}
}

static void put_head(struct fg *g, int height)
{
	const struct profile *p = g->p;
	FILE *f = g->f;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<!-- Flame graph written by pystrobe: click a frame to zoom, "
		"Ctrl-F or / to search. -->\n"
		"<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/>"
		"<stop stop-color=\"#eeeeb0\" offset=\"95%%\"/></linearGradient></defs>\n",
		FG_WIDTH, height, FG_WIDTH, height);
	fputs(style, f);
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
	}
	fprintf(f, "</text>\n"
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"%d\">"
		"<title>Search for a regular expression (Ctrl-F or /)</title>Search</text>\n"
		"<text id=\"ic\" class=\"btn\" x=\"%d\" y=\"%d\">"
		"<title>Ignore case when searching</title>ic</text>\n"
		"<text id=\"clear\" class=\"btn hide\" x=\"%d\" y=\"%d\">"
		"<title>Clear the search (Esc)</title>Clear</text>\n",
		FG_XPAD, FG_BAR_Y, FG_WIDTH - FG_XPAD - 150, FG_BAR_Y,
		FG_WIDTH - FG_XPAD - 100, FG_BAR_Y, FG_WIDTH - FG_XPAD - 70, FG_BAR_Y);
	if (diff_mode(g))
		put_diff_legend(g);
	else
		put_legend(g);
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
	fprintf(g->f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" style=\"text-anchor:end\"></text>\n",
		FG_XPAD, FG_DETAILS_Y, FG_WIDTH - FG_XPAD, FG_DETAILS_Y);
	fputs(script, g->f);
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
	height = FG_TOP + (g.max_depth + 1) * FG_ROW + FG_BOTTOM;
	put_head(&g, height);
	fputs("<g id=\"frames\">\n", f);
	if (g.total)
		draw_tree(&g, 0, 0, 0);
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
