/* A node's reply, as it crosses srun (cluster/demux.h):
 *
 *   #pystrobe-node NAME          first
 *   =<up to 400 bytes of JSON>   as many as it takes
 *   #pystrobe-end STATUS BYTES   last
 *
 * The payload is cut into short lines because srun carries a task's output
 * in messages of a bounded size: a long line may come back in pieces, each
 * with its label, so the pieces of one line are put back together by
 * concatenation, which is right however srun cut them.  The byte count in
 * the end frame proves nothing was lost on the way.
 */
#include "cluster/demux.h"

#include <stdlib.h>
#include <string.h>

#define NODE_FRAME "#pystrobe-node "
#define END_FRAME "#pystrobe-end "

void demux_init(struct demux *d, int ntasks)
{
	memset(d, 0, sizeof(*d));
	d->n = ntasks;
	d->r = xcalloc(ntasks > 0 ? ntasks : 1, sizeof(*d->r));
	for (int i = 0; i < ntasks; i++)
		d->r[i].status = -1;
}

void demux_stream(struct demux *d, demux_reply_fn on_reply, void *arg)
{
	d->on_reply = on_reply;
	d->arg = arg;
}

void demux_release(struct demux *d)
{
	for (int i = 0; i < d->n; i++) {
		free(d->r[i].node);
		sb_release(&d->r[i].json);
		sb_release(&d->r[i].err);
	}
	free(d->r);
	sb_release(&d->srun_err);
	sb_release(&d->part[0]);
	sb_release(&d->part[1]);
	memset(d, 0, sizeof(*d));
}

/* The task of a labelled line ("12: text", srun may pad the number), its
 * text in *rest; -1 for a line srun wrote itself. */
static int label_of(const char *line, const char **rest)
{
	const char *p = line;
	long task = 0;
	int digits = 0;

	while (*p == ' ')
		p++;
	for (; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
		task = task * 10 + (*p - '0');
	if (!digits || p[0] != ':' || p[1] != ' ')
		return -1;
	*rest = p + 2;
	return (int)task;
}

static bool parse_end(struct node_reply *r, const char *s)
{
	char *end;
	long status = strtol(s, &end, 10);
	unsigned long long bytes;

	if (end == s || *end != ' ' || status < 0 || status > 255)
		return false;
	s = end + 1;
	bytes = strtoull(s, &end, 10);
	if (end == s || *end || bytes > REPLY_MAX)
		return false;
	r->status = (int)status;
	r->declared = (size_t)bytes;
	return true;
}

/* One line of a task's stdout: a frame, in its place. */
static void reply_line(struct node_reply *r, const char *s)
{
	if (r->broken || r->ended) {
		r->broken = true;
		return;
	}
	if (!strncmp(s, NODE_FRAME, strlen(NODE_FRAME))) {
		if (r->started || !s[strlen(NODE_FRAME)])
			r->broken = true;
		else
			r->node = xstrdup(s + strlen(NODE_FRAME));
		r->started = true;
		return;
	}
	if (!r->started) {
		r->broken = true;
		return;
	}
	if (s[0] == '=') {
		if (r->json.len + strlen(s + 1) > REPLY_MAX)
			r->broken = true;
		else
			sb_puts(&r->json, s + 1);
		return;
	}
	if (!strncmp(s, END_FRAME, strlen(END_FRAME)) && parse_end(r, s + strlen(END_FRAME))) {
		r->ended = true;
		return;
	}
	r->broken = true;
}

/* A task's stderr is kept to name what went wrong there: the first 64 KiB. */
static void err_line(struct strbuf *err, const char *s)
{
	if (err->len + strlen(s) + 1 > 65536)
		return;
	sb_puts(err, s);
	sb_putc(err, '\n');
}

/* In a stream, a node's next reply: the last one's state goes, its name
 * stays (the stream's first reply named it). */
static void next_reply(struct node_reply *r)
{
	r->json.len = 0;
	if (r->json.buf)
		r->json.buf[0] = '\0';
	r->status = -1;
	r->declared = 0;
	r->started = r->ended = r->broken = false;
}

static void stream_line(struct demux *d, int task, const char *s)
{
	struct node_reply *r = &d->r[task];

	/* A first frame ends what came before it, whole or not. */
	if (r->started && !strncmp(s, NODE_FRAME, strlen(NODE_FRAME))) {
		next_reply(r);
		free(r->node);
		r->node = NULL;
	}
	reply_line(r, s);
	if (r->ended && reply_complete(r))
		d->on_reply(d->arg, task, r);
}

static void take_line(struct demux *d, int stream, const char *line)
{
	const char *rest;
	int task = label_of(line, &rest);

	if (task < 0 || task >= d->n) {
		err_line(&d->srun_err, line);
		return;
	}
	if (stream == 1)
		err_line(&d->r[task].err, rest);
	else if (d->on_reply)
		stream_line(d, task, rest);
	else
		reply_line(&d->r[task], rest);
}

void demux_feed(struct demux *d, int stream, const char *buf, size_t len)
{
	struct strbuf *part = &d->part[stream];

	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			/* A line longer than any frame is junk: keep its start. */
			if (part->len < 4096)
				sb_putc(part, buf[i] ? buf[i] : '?');
			continue;
		}
		take_line(d, stream, part->len ? part->buf : "");
		part->len = 0;
		if (part->buf)
			part->buf[0] = '\0';
	}
}

void demux_finish(struct demux *d)
{
	for (int s = 0; s < 2; s++)
		if (d->part[s].len)
			demux_feed(d, s, "\n", 1);
}

bool reply_complete(const struct node_reply *r)
{
	return r->started && r->ended && !r->broken && r->json.len == r->declared;
}
