/* dump's JSON (--json): the processes, their threads and tasks, and with
 * --group the groups the text shows. */
#include "cmd/dump_format_int.h"
#include "process/core.h"
#include "cluster/nodereply.h"
#include "util/json.h"
#include "util/util.h"

#include <stdlib.h>

static void json_source(struct json *j, const struct py_frame *f, const struct view *v)
{
	bool changed;
	const char *line = source_line(v->src, f->file, f->line, &changed);

	json_kstr(j, "source", line);
	json_kbool(j, "source_changed", line && changed);
}

static void json_frame(struct json *j, const struct py_frame *f, const struct view *v)
{
	json_obj_begin(j);
	json_kstr(j, "kind", "python");
	json_kstr(j, "function", f->function);
	json_kstr(j, "file", f->file);
	json_kint(j, "line", f->line);
	json_kint(j, "interpreter", f->interp);
	if (v->src)
		json_source(j, f, v);
	if (v->locals) {
		json_key(j, "locals");
		json_arr_begin(j);
		for (int k = 0; k < f->nlocals; k++) {
			json_obj_begin(j);
			json_kstr(j, "name", f->locals[k].name);
			json_kbool(j, "arg", f->locals[k].arg);
			json_kstr(j, "type", f->locals[k].type);
			json_kstr(j, "repr", f->locals[k].repr);
			json_obj_end(j);
		}
		json_arr_end(j);
	}
	json_obj_end(j);
}

static void json_native_frame(struct json *j, const struct mixed_frame *f)
{
	json_obj_begin(j);
	json_kstr(j, "kind", "native");
	json_kstr(j, "function", f->function);
	json_kstr(j, "library", f->library);
	json_kuint(j, "offset", f->offset);
	json_kuint(j, "address", f->pc);
	json_kstr(j, "file", f->file);
	json_key(j, "line");
	if (f->file)
		json_int(j, f->line);
	else
		json_null(j);
	json_obj_end(j);
}

static void json_thread(struct json *j, const struct py_thread *t, const struct mixed_stack *ms,
			const struct view *v, const struct snapshot *s)
{
	json_obj_begin(j);
	json_kint(j, "tid", t->tid);
	if (s->core)
		json_kbool(j, "crashed", crashed(s, t));
	json_kint(j, "ns_tid", t->ns_tid);
	json_kuint(j, "ident", t->ident);
	json_kstr(j, "name", t->name);
	json_kbool(j, "gil", t->gil);
	/* A free-threaded build has no GIL: attached to the interpreter is
	 * what is true there.  null on a build with a GIL. */
	json_key(j, "attached");
	if (t->state == PY_STATE_UNKNOWN)
		json_null(j);
	else
		json_bool(j, t->state == PY_ATTACHED);
	/* null from a core, which records no run state */
	json_key(j, "idle");
	if (s->idle_known)
		json_bool(j, t->idle);
	else
		json_null(j);
	json_kbool(j, "truncated", t->truncated);
	json_kstr(j, "error", t->error);
	json_key(j, "interpreters");
	json_arr_begin(j);
	for (int i = 0; i < t->ninterps; i++)
		json_int(j, t->interps[i]);
	json_arr_end(j);
	if (ms) {
		json_kstr(j, "native_error", ms->error);
		json_kbool(j, "native_truncated", ms->truncated);
	}
	json_key(j, "frames");
	json_arr_begin(j);
	if (t->gc) {
		json_obj_begin(j);
		json_kstr(j, "kind", "gc");
		json_kstr(j, "function", "<gc>");
		json_obj_end(j);
	}
	if (ms && ms->frames) {
		for (int i = 0; i < ms->nframes; i++) {
			if (ms->frames[i].native)
				json_native_frame(j, &ms->frames[i]);
			else
				json_frame(j, &t->frames[ms->frames[i].py], v);
		}
	} else {
		for (int i = 0; i < t->nframes; i++)
			json_frame(j, &t->frames[i], v);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static void json_addrs(struct json *j, const char *key, const uint64_t *v, int n)
{
	json_key(j, key);
	json_arr_begin(j);
	for (int i = 0; i < n; i++)
		json_uint(j, v[i]);
	json_arr_end(j);
}

static void json_task(struct json *j, const struct py_task *t, const struct view *v)
{
	json_obj_begin(j);
	json_kuint(j, "address", t->addr);
	json_kstr(j, "name", t->name);
	json_kstr(j, "state", task_state_name(t->state));
	json_key(j, "thread");
	if (t->tid)
		json_int(j, t->tid);
	else
		json_null(j);
	json_addrs(j, "awaiting", t->awaiting, t->nawaiting);
	json_addrs(j, "awaited_by", t->awaited_by, t->nawaited_by);
	json_kstr(j, "waiting_on", t->waiting_on);
	json_key(j, "waiting_in");
	if (t->wait.kind) {
		json_obj_begin(j);
		json_kstr(j, "type", t->wait.kind);
		json_kuint(j, "address", t->wait.addr);
		json_kstr(j, "state", t->wait.state);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	json_key(j, "cycle");
	if (t->cycle)
		json_int(j, t->cycle);
	else
		json_null(j);
	json_kbool(j, "joined", t->joined);
	json_kbool(j, "truncated", t->frames_truncated);
	json_key(j, "frames");
	json_arr_begin(j);
	for (int i = 0; i < t->nframes; i++)
		json_frame(j, &t->frames[i], v);
	json_arr_end(j);
	json_obj_end(j);
}

/* "task_groups": [{"tasks": 1000, "members": [address, ...]}], as the
 * text groups them. */
static void json_task_groups(struct json *j, const struct py_tasks *t, const int *order,
			     const struct view *v)
{
	struct grouping gr = GROUPING_INIT;

	dump_group_tasks(t, order, v, &gr);
	json_key(j, "task_groups");
	json_arr_begin(j);
	for (uint32_t i = 0; i < gr.n; i++) {
		json_obj_begin(j);
		json_kuint(j, "tasks", gr.g[i].n);
		json_key(j, "members");
		json_arr_begin(j);
		for (uint32_t k = 0; k < gr.g[i].n; k++)
			json_uint(j, t->v[order[gr.g[i].members[k]]].addr);
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	grouping_release(&gr);
}

static void json_tasks(struct json *j, const struct snapshot *s, const struct view *v)
{
	int *order = dump_task_order(&s->tasks);

	json_kstr(j, "async_note", s->async_note);
	json_kint(j, "tasks_torn", s->tasks.torn);
	json_kint(j, "tasks_not_running", s->tasks.not_running);
	json_kbool(j, "tasks_truncated", s->tasks.truncated);
	json_kint(j, "deadlock_cycles", s->tasks.ncycles);
	json_key(j, "tasks");
	json_arr_begin(j);
	for (int i = 0; i < s->tasks.n; i++)
		json_task(j, &s->tasks.v[order[i]], v);
	json_arr_end(j);
	if (v->group)
		json_task_groups(j, &s->tasks, order, v);
	free(order);
}

/* "core": path, "crash": {signal, signo, tid, address} or null. */
static void json_core(struct json *j, const struct snapshot *s)
{
	json_kstr(j, "core", s->core);
	json_key(j, "crash");
	if (!s->signo) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_kstr(j, "signal", core_signal_name(s->signo));
	json_kint(j, "signo", s->signo);
	json_kint(j, "tid", s->crash_tid);
	json_key(j, "address");
	if (s->have_addr)
		json_uint(j, s->fault_addr);
	else
		json_null(j);
	json_obj_end(j);
}

static void json_cmdline(struct json *j, char **argv, int argc)
{
	json_key(j, "cmdline");
	json_arr_begin(j);
	for (int i = 0; argv && i < argc; i++)
		json_str(j, argv[i]);
	json_arr_end(j);
}

void dump_json_snapshot(struct json *j, const struct snapshot *s, pid_t ppid,
			const struct view *v)
{
	json_obj_begin(j);
	if (s->core)
		json_core(j, s);
	json_kint(j, "pid", s->pid);
	json_kint(j, "ns_pid", s->ns_pid);
	/* The tree's parent, else the one /proc gave when it was read. */
	json_kint(j, "ppid", ppid ? ppid : s->ppid);
	json_job_ident(j, &s->job);
	json_cmdline(j, s->argv, s->argc);
	json_key(j, "python");
	json_obj_begin(j);
	json_kstr(j, "version", s->pi.version);
	json_kstr(j, "path", s->pi.path);
	json_obj_end(j);
	json_key(j, "threads");
	json_arr_begin(j);
	for (int i = 0; i < s->nthreads; i++)
		json_thread(j, &s->threads[i], s->mixed ? &s->mixed[i] : NULL, v, s);
	json_arr_end(j);
	if (v->async)
		json_tasks(j, s, v);
	json_obj_end(j);
}

/* A process that could not be read: who it is and why, no threads. */
void dump_json_failed(struct json *j, const struct dump_failure *f)
{
	json_obj_begin(j);
	json_kint(j, "pid", f->pid);
	json_kint(j, "ppid", f->ppid);
	json_job_ident(j, &f->job);
	json_cmdline(j, f->argv, f->argc);
	json_kstr(j, "error", f->error);
	json_key(j, "threads");
	json_arr_begin(j);
	json_arr_end(j);
	json_obj_end(j);
}

/* "groups": [{"threads": 16, "processes": 1, "members": [{pid, tid, ident, name}]}] */
void dump_json_groups(struct json *j, const struct snapshot *snaps, const struct grouping *gr,
		      const struct member *mem)
{
	json_key(j, "groups");
	json_arr_begin(j);
	for (uint32_t i = 0; i < gr->n; i++) {
		const struct dump_group *g = &gr->g[i];

		json_obj_begin(j);
		json_kuint(j, "threads", g->n);
		json_kint(j, "processes", dump_group_processes(g, mem));
		json_key(j, "members");
		json_arr_begin(j);
		for (uint32_t k = 0; k < g->n; k++) {
			const struct member *m = &mem[g->members[k]];
			const struct py_thread *t = member_thread(snaps, m);

			json_obj_begin(j);
			json_kint(j, "pid", snaps[m->snap].pid);
			json_kint(j, "tid", t->tid);
			json_kuint(j, "ident", t->ident);
			json_kstr(j, "name", t->name);
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}
