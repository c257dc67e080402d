/* The insides of dump's formatter, shared by dump_format.c (the entry,
 * the order of tasks, the groups), dump_text.c and dump_json.c.  Internal
 * to them: callers see only dump_format.h. */
#ifndef PYSTROBE_DUMP_FORMAT_INT_H
#define PYSTROBE_DUMP_FORMAT_INT_H

#include <stdbool.h>
#include <sys/types.h>

#include "cmd/dump_format.h"
#include "cmd/dump_group.h"
#include "process/source.h"
#include "util/json.h"
#include "util/util.h"

/* How one process is shown: what the options ask for, and its files. */
struct view {
	bool locals;
	bool async;
	bool group;
	bool full_filenames;
	bool full_names;	/* native names whole in text, not short */
	struct source_cache *src;	/* NULL with --no-source */
};

/* A thread of the dump: process snaps[snap], its thread `thread`. */
struct member {
	int snap, thread;
};

static inline const struct py_thread *member_thread(const struct snapshot *snaps,
						    const struct member *m)
{
	return &snaps[m->snap].threads[m->thread];
}

static inline bool crashed(const struct snapshot *s, const struct py_thread *t)
{
	return s && s->signo && t->tid == s->crash_tid;
}

/* --- dump_format.c ------------------------------------------------------ */

/* The tasks of t in the order shown, as indices into t->v (new). */
int *dump_task_order(const struct py_tasks *t);
/* How many processes a group's members are in. */
int dump_group_processes(const struct dump_group *g, const struct member *mem);

/* --- dump_text.c: text, and the groups, whose keys are text ------------- */

void dump_text_snapshot(struct strbuf *sb, const struct snapshot *s, pid_t ppid,
			const struct view *v);
void dump_text_grouped(struct strbuf *out, const struct snapshot *snaps, int n,
		       const pid_t *ppids, const struct view *views, const struct grouping *gr,
		       const struct member *mem);
/* Tasks, by position in order, grouped by how their text reads. */
void dump_group_tasks(const struct py_tasks *t, const int *order, const struct view *v,
		      struct grouping *gr);
/* Every thread of every process, grouped by its stack's text (new). */
struct member *dump_group_threads(const struct snapshot *snaps, int n,
				  const struct view *views, struct grouping *gr);

/* --- dump_json.c -------------------------------------------------------- */

void dump_json_snapshot(struct json *j, const struct snapshot *s, pid_t ppid,
			const struct view *v);
void dump_json_failed(struct json *j, const struct dump_failure *f);
void dump_json_groups(struct json *j, const struct snapshot *snaps, const struct grouping *gr,
		      const struct member *mem);

#endif
