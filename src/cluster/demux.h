/* What every node sent back through srun, told apart by task.
 *
 * srun --label puts "<task>: " before each line a task writes, on srun's
 * own stdout or stderr as the task wrote it.  On stdout each node writes
 * one framed reply (cluster/demux.c says how); on stderr, its messages.
 * Lines without a label are srun's own ("srun: error: ...").
 *
 * Everything here comes from other machines: a task number out of range, a
 * frame out of order, a reply cut short or longer than it said are all
 * possible, and each leaves the reply incomplete, never a crash.
 */
#ifndef PYSTROBE_DEMUX_H
#define PYSTROBE_DEMUX_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* A node's reply may not grow past this: a dump of a whole node is a few
 * MiB at most; more is a node gone wrong. */
#define REPLY_MAX ((size_t)256 << 20)

struct node_reply {
	char *node;		/* as the node named itself, or NULL */
	struct strbuf json;	/* the payload, put back together */
	struct strbuf err;	/* what it wrote on stderr, lines */
	int status;		/* its exit status, from the end frame */
	size_t declared;	/* the bytes the end frame said */
	bool started;		/* its first frame came */
	bool ended;		/* its end frame came */
	bool broken;		/* a frame out of place, or over REPLY_MAX */
};

/* A stream (top and watch under --slurm): each node sends one reply after
 * another; each whole one is handed over as it ends, and the next one
 * starts afresh. */
typedef void (*demux_reply_fn)(void *arg, int task, struct node_reply *r);

struct demux {
	struct node_reply *r;
	int n;			/* tasks: srun's 0..n-1 */
	demux_reply_fn on_reply;	/* set: a stream */
	void *arg;
	struct strbuf srun_err;	/* srun's own lines */
	struct strbuf part[2];	/* a line not ended yet, per stream */
};

void demux_init(struct demux *d, int ntasks);
/* A stream: on_reply gets each whole reply (its node, json and status);
 * a reply cut short or garbled is dropped, and the task's next one is
 * taken still. */
void demux_stream(struct demux *d, demux_reply_fn on_reply, void *arg);
void demux_release(struct demux *d);
/* Bytes from srun's stdout (stream 0) or stderr (1), any split. */
void demux_feed(struct demux *d, int stream, const char *buf, size_t len);
/* The end of both streams: a line left without its newline is taken. */
void demux_finish(struct demux *d);
/* Whether task i's reply is whole: started, ended, as long as it said. */
bool reply_complete(const struct node_reply *r);

#endif
