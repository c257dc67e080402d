/* dump's text: a process's header, its threads' stacks, its asyncio
 * tasks, and with --group the threads and tasks that print the same
 * together (their text is the key they are grouped by). */
#include "cmd/dump_format_int.h"
#include "util/escape.h"
#include "process/core.h"
#include "profile/profile.h"
#include "profile/shortname.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_name(struct strbuf *sb, const char *s)
{
	sb_add_printable(sb, s ? s : "?");
}

/* A repr is escaped already, by Python's rules: its backslashes are its
 * own, and the one rule only keeps what it cannot have out. */
static void put_repr(struct strbuf *sb, const char *s)
{
	s = s ? s : "?";
	sb_add_escaped(sb, s, strlen(s), ESC_TEXT | ESC_REPR);
}


static const char changed_mark[] = "[file changed since the process started]";

/* The frame's line of source, under it as a traceback shows it. */
static void text_source(struct strbuf *sb, const struct py_frame *f, const struct view *v)
{
	bool changed;
	const char *line = source_line(v->src, f->file, f->line, &changed);

	if (!line || !*line)
		return;
	sb_puts(sb, "        ");
	put_name(sb, line);
	if (changed) {
		sb_puts(sb, "    ");
		sb_puts(sb, changed_mark);
	}
	sb_putc(sb, '\n');
}

static void text_py_frame(struct strbuf *sb, const struct py_frame *f, const struct view *v)
{
	sb_puts(sb, "    ");
	put_name(sb, f->function);
	sb_puts(sb, " (");
	/* Shortened as record and top shorten them: the stdlib and
	 * site-packages prefixes are the same on every line. */
	put_name(sb, f->file ? profile_display_file(f->file, v->full_filenames) : NULL);
	if (f->line >= 0)
		sb_printf(sb, ":%d", f->line);
	sb_puts(sb, ")\n");
	text_source(sb, f, v);
	for (int k = 0; v->locals && k < f->nlocals; k++) {
		sb_printf(sb, "        %s", f->locals[k].arg ? "arg " : "");
		put_name(sb, f->locals[k].name);
		sb_puts(sb, " = ");
		put_repr(sb, f->locals[k].repr);
		sb_putc(sb, '\n');
	}
}

/* "[native] qsort (libc.so.6+0x3f2a0) at msort.c:64"; an unknown function
 * is just its place, lib.so+0xOFFSET.  A C++ name is short, as record and
 * top show it, unless --full-names. */
static void text_native_frame(struct strbuf *sb, const struct mixed_frame *f,
			      const struct view *v)
{
	sb_puts(sb, "    [native] ");
	if (f->function) {
		char *name = v->full_names ? NULL : short_name(f->function);

		put_name(sb, name ? name : f->function);
		free(name);
		sb_puts(sb, " (");
	}
	if (f->library) {
		put_name(sb, f->library);
		sb_printf(sb, "+0x%llx", (unsigned long long)f->offset);
	} else {
		sb_printf(sb, "0x%llx", (unsigned long long)f->pc);
	}
	if (f->function)
		sb_putc(sb, ')');
	if (f->file) {
		sb_puts(sb, " at ");
		put_name(sb, f->file);
		sb_printf(sb, ":%d", f->line);
	}
	sb_putc(sb, '\n');
}

/* Does the stack show interpreters apart?  Only where it has a frame of
 * a subinterpreter: an ordinary process's output stays as it was. */
static bool marks_interps(const struct py_thread *t)
{
	for (int i = 0; i < t->nframes; i++)
		if (t->frames[i].interp != 0)
			return true;
	return false;
}

/* "    --- interpreter 1 ---" before the first frame of each interpreter's
 * run of frames, innermost first; *last is the interpreter shown last. */
static void text_interp_mark(struct strbuf *sb, const struct py_frame *f, bool mark,
			     int64_t *last)
{
	if (!mark || f->interp == *last)
		return;
	*last = f->interp;
	if (f->interp < 0)
		sb_puts(sb, "    --- interpreter ? ---\n");
	else
		sb_printf(sb, "    --- interpreter %lld%s ---\n", (long long)f->interp,
			  f->interp == 0 ? " (main)" : "");
}

/* "1838", or "1838 (1 in its namespace)" for a process in a container:
 * ours is what ps, top and kill take, its own what it logs itself. */
static void text_id(struct strbuf *sb, pid_t id, pid_t ns_id)
{
	sb_printf(sb, "%d", (int)id);
	if (ns_id && ns_id != id)
		sb_printf(sb, " (%d in its namespace)", (int)ns_id);
}

/* " [crashed: SIGSEGV, fault address 0x0]" on the thread that took a
 * core's fatal signal. */
static void text_crash(struct strbuf *sb, const struct snapshot *s)
{
	const char *name = core_signal_name(s->signo);

	sb_puts(sb, "crashed: ");
	if (name)
		sb_puts(sb, name);
	else
		sb_printf(sb, "signal %d", s->signo);
	if (s->have_addr)
		sb_printf(sb, ", fault address 0x%llx", (unsigned long long)s->fault_addr);
}

/* A free-threaded build has no GIL to hold: what its thread state says
 * instead (attached: it may run Python code, as the GIL's holder does
 * elsewhere); NULL on a build with a GIL. */
static const char *state_name(const struct py_thread *t)
{
	static const char *const names[] = {
		[PY_DETACHED] = "detached", [PY_ATTACHED] = "attached",
		[PY_SUSPENDED] = "suspended",
	};

	return t->state >= PY_DETACHED && t->state <= PY_SUSPENDED ? names[t->state] : NULL;
}

static void text_thread_header(struct strbuf *sb, const struct py_thread *t,
			       const struct snapshot *s)
{
	const char *state = state_name(t);

	sb_puts(sb, "Thread ");
	text_id(sb, t->tid, t->ns_tid);
	if (t->name) {
		sb_puts(sb, " \"");
		put_name(sb, t->name);
		sb_putc(sb, '"');
	}
	/* A core records no run state: neither idle nor active. */
	if (s->idle_known)
		sb_printf(sb, " (%s%s%s%s)", t->idle ? "idle" : "active",
			  t->gil ? ", holds the GIL" : "", state ? ", " : "", state ? state : "");
	else if (t->gil)
		sb_puts(sb, " (holds the GIL)");
	else if (state)
		sb_printf(sb, " (%s)", state);
	sb_printf(sb, " ident 0x%llx", (unsigned long long)t->ident);
	if (crashed(s, t)) {
		sb_puts(sb, " [");
		text_crash(sb, s);
		sb_putc(sb, ']');
	}
	sb_putc(sb, '\n');
}

/* Everything under the thread's header line: what --group compares. */
static void text_thread_stack(struct strbuf *sb, const struct py_thread *t,
			      const struct mixed_stack *ms, const struct view *v)
{
	bool mark = marks_interps(t);
	int64_t last = INT64_MIN;

	if (t->gc)
		sb_puts(sb, "    <gc> (the garbage collector is running)\n");
	if (ms && ms->frames) {
		for (int i = 0; i < ms->nframes; i++) {
			const struct py_frame *f;

			if (ms->frames[i].native) {
				text_native_frame(sb, &ms->frames[i], v);
				continue;
			}
			f = &t->frames[ms->frames[i].py];
			text_interp_mark(sb, f, mark, &last);
			text_py_frame(sb, f, v);
		}
		if (ms->truncated)
			sb_puts(sb, "    ... (native stack cut short)\n");
	} else {
		for (int i = 0; i < t->nframes; i++) {
			text_interp_mark(sb, &t->frames[i], mark, &last);
			text_py_frame(sb, &t->frames[i], v);
		}
	}
	if (t->truncated)
		sb_printf(sb, "    ... (stack cut at %d frames)\n", t->nframes);
	if (t->error) {
		sb_puts(sb, "    [error: ");
		put_name(sb, t->error);
		sb_puts(sb, "]\n");
	}
	if (ms && ms->error) {
		sb_puts(sb, "    [no native frames: ");
		put_name(sb, ms->error);
		sb_puts(sb, "]\n");
	}
}

static void text_thread(struct strbuf *sb, const struct py_thread *t, const struct mixed_stack *ms,
			const struct view *v, const struct snapshot *s)
{
	text_thread_header(sb, t, s);
	text_thread_stack(sb, t, ms, v);
}

/* Whether the core's fatal signal hit a thread without Python frames. */
static bool crash_elsewhere(const struct snapshot *s)
{
	for (int i = 0; i < s->nthreads; i++)
		if (crashed(s, &s->threads[i]))
			return false;
	return s->signo != 0;
}

static void text_core_header(struct strbuf *sb, const struct snapshot *s)
{
	sb_puts(sb, "Core ");
	put_name(sb, s->core);
	sb_putc(sb, '\n');
	if (!crash_elsewhere(s))
		return;
	sb_puts(sb, "Thread ");
	text_id(sb, s->crash_tid, 0);
	sb_puts(sb, " (no Python thread state) ");
	text_crash(sb, s);
	sb_putc(sb, '\n');
}

static void text_process_header(struct strbuf *sb, const struct snapshot *s, pid_t ppid)
{
	if (s->core)
		text_core_header(sb, s);
	sb_puts(sb, "Process ");
	text_id(sb, s->pid, s->ns_pid);
	if (ppid)
		sb_printf(sb, " (child of %d)", (int)ppid);
	sb_putc(sb, ':');
	for (int i = 0; s->argv && i < s->argc; i++) {
		sb_putc(sb, ' ');
		put_name(sb, s->argv[i]);
	}
	sb_printf(sb, "\nPython %s (", s->pi.version);
	put_name(sb, s->pi.path);
	sb_puts(sb, ")\n");
}

/* "0x7f3a1c0 "worker-1"": how a task is named in another's lines. */
static void text_task_ref(struct strbuf *sb, const struct py_tasks *tasks, uint64_t addr)
{
	const struct py_task *t = py_tasks_find(tasks, addr);

	sb_printf(sb, " 0x%llx", (unsigned long long)addr);
	if (t) {
		sb_puts(sb, " \"");
		put_name(sb, t->name);
		sb_putc(sb, '"');
	}
}

static void text_task_refs(struct strbuf *sb, const char *what, const struct py_tasks *tasks,
			   const uint64_t *v, int n)
{
	if (!n)
		return;
	sb_printf(sb, "    %s:", what);
	for (int i = 0; i < n; i++)
		text_task_ref(sb, tasks, v[i]);
	sb_putc(sb, '\n');
}

/* The members of one deadlock cycle, in the order they await each other. */
static void text_cycle(struct strbuf *sb, const struct py_tasks *tasks, const struct py_task *t)
{
	const struct py_task *cur = t;

	sb_printf(sb, "    DEADLOCK (cycle %d):", t->cycle);
	for (int steps = 0; cur && steps <= tasks->n; steps++) {
		const struct py_task *next = NULL;

		sb_puts(sb, steps ? " -> \"" : " \"");
		put_name(sb, cur->name);
		sb_putc(sb, '"');
		if (steps && cur == t)
			break;
		for (int k = 0; k < cur->nawaiting && !next; k++) {
			const struct py_task *w = py_tasks_find(tasks, cur->awaiting[k]);

			if (w && w->cycle == t->cycle)
				next = w;
		}
		cur = next;
	}
	sb_puts(sb, " awaits the next, forever\n");
}

/* "waiting on asyncio.Lock 0x... (locked)": asyncio does not record who
 * holds a lock, so that is said rather than guessed. */
static void text_task_wait(struct strbuf *sb, const struct task_wait *w)
{
	sb_puts(sb, "    waiting on ");
	put_name(sb, w->kind);
	sb_printf(sb, " 0x%llx", (unsigned long long)w->addr);
	if (w->state) {
		sb_puts(sb, " (");
		put_name(sb, w->state);
		if (!strcmp(w->state, "locked"))
			sb_puts(sb, "; asyncio does not record by whom");
		sb_putc(sb, ')');
	}
	sb_putc(sb, '\n');
}

/* "(pending, thread 123)": what a task's header says besides its name. */
static void text_task_state(struct strbuf *sb, const struct py_task *t)
{
	sb_printf(sb, "(%s", task_state_name(t->state));
	if (t->tid)
		sb_printf(sb, ", thread %d", (int)t->tid);
	else if (!t->tstate)
		sb_puts(sb, ", its thread has exited");
	sb_putc(sb, ')');
}

/* Everything under a task's header: what --group compares. */
static void text_task_body(struct strbuf *sb, const struct py_tasks *tasks,
			   const struct py_task *t, const struct view *v)
{
	if (t->cycle)
		text_cycle(sb, tasks, t);
	text_task_refs(sb, "awaiting", tasks, t->awaiting, t->nawaiting);
	if (t->wait.kind)
		text_task_wait(sb, &t->wait);
	else if (!t->nawaiting && t->waiting_on) {
		sb_puts(sb, "    waiting on a ");
		put_name(sb, t->waiting_on);
		sb_putc(sb, '\n');
	}
	text_task_refs(sb, "awaited by", tasks, t->awaited_by, t->nawaited_by);
	for (int i = 0; i < t->nframes; i++)
		text_py_frame(sb, &t->frames[i], v);
	if (t->joined)
		sb_puts(sb, "    (running: the frames above are on its thread's stack)\n");
	if (t->frames_truncated)
		sb_puts(sb, "    ... (coroutine chain cut short)\n");
}

static void text_task(struct strbuf *sb, const struct py_tasks *tasks, const struct py_task *t,
		      const struct view *v)
{
	sb_printf(sb, "Task 0x%llx \"", (unsigned long long)t->addr);
	put_name(sb, t->name);
	sb_puts(sb, "\" ");
	text_task_state(sb, t);
	sb_putc(sb, '\n');
	text_task_body(sb, tasks, t, v);
}

/* Tasks whose state, waits, awaiters and frames print the same (with
 * whole paths): members are positions in order. */
void dump_group_tasks(const struct py_tasks *t, const int *order, const struct view *v,
		      struct grouping *gr)
{
	struct strbuf key = STRBUF_INIT;
	struct view full = *v;

	full.full_filenames = full.full_names = true;
	for (int i = 0; i < t->n; i++) {
		key.len = 0;
		text_task_state(&key, &t->v[order[i]]);
		sb_putc(&key, '\n');
		text_task_body(&key, t, &t->v[order[i]], &full);
		grouping_add(gr, key.buf, (uint32_t)i);
	}
	sb_release(&key);
	grouping_sort(gr);
}

/* "1000 tasks (pending, thread 7): 0x... "req-1" ...", then the stack
 * they share; a task alone as without --group. */
static void text_task_group(struct strbuf *sb, const struct py_tasks *t, const int *order,
			    const struct dump_group *g, const struct view *v)
{
	const struct py_task *first = &t->v[order[g->members[0]]];

	if (g->n == 1) {
		text_task(sb, t, first, v);
		return;
	}
	sb_printf(sb, "%u tasks ", g->n);
	text_task_state(sb, first);
	sb_putc(sb, ':');
	for (uint32_t k = 0; k < g->n; k++)
		text_task_ref(sb, t, t->v[order[g->members[k]]].addr);
	sb_putc(sb, '\n');
	text_task_body(sb, t, first, v);
}

static void text_task_list(struct strbuf *sb, const struct py_tasks *t, const struct view *v)
{
	struct grouping gr = GROUPING_INIT;
	int *order = dump_task_order(t);

	if (!v->group) {
		for (int i = 0; i < t->n; i++) {
			sb_putc(sb, '\n');
			text_task(sb, t, &t->v[order[i]], v);
		}
		free(order);
		return;
	}
	dump_group_tasks(t, order, v, &gr);
	for (uint32_t i = 0; i < gr.n; i++) {
		sb_putc(sb, '\n');
		text_task_group(sb, t, order, &gr.g[i], v);
	}
	grouping_release(&gr);
	free(order);
}

/* With --group, after the threads of every process: whose tasks these are. */
static void text_tasks(struct strbuf *sb, const struct snapshot *s, const struct view *v,
		       bool name_process)
{
	const struct py_tasks *t = &s->tasks;

	sb_puts(sb, "\n");
	if (name_process)
		sb_printf(sb, "Process %d: ", (int)s->pid);
	if (s->async_note) {
		sb_puts(sb, "No asyncio tasks: ");
		put_name(sb, s->async_note);
		sb_putc(sb, '\n');
		return;
	}
	sb_printf(sb, "asyncio: %d task%s", t->n, t->n == 1 ? "" : "s");
	if (t->ncycles)
		sb_printf(sb, ", %d DEADLOCK cycle%s", t->ncycles, t->ncycles == 1 ? "" : "s");
	if (t->torn)
		sb_printf(sb, ", %d left out (changed while read)", t->torn);
	if (t->not_running)
		sb_printf(sb, ", %d named running but off %s thread's stack (shown pending)",
			  t->not_running, t->not_running == 1 ? "its" : "their");
	if (t->truncated)
		sb_printf(sb, ", cut at %d", t->n);
	sb_putc(sb, '\n');
	text_task_list(sb, t, v);
}

void dump_text_snapshot(struct strbuf *sb, const struct snapshot *s, pid_t ppid,
			const struct view *v)
{
	text_process_header(sb, s, ppid);
	for (int i = 0; i < s->nthreads; i++) {
		sb_putc(sb, '\n');
		text_thread(sb, &s->threads[i], s->mixed ? &s->mixed[i] : NULL, v, s);
	}
	if (v->async)
		text_tasks(sb, s, v, false);
}

static void text_member_stack(struct strbuf *sb, const struct snapshot *snaps,
			      const struct member *m, const struct view *v)
{
	const struct snapshot *s = &snaps[m->snap];

	text_thread_stack(sb, &s->threads[m->thread], s->mixed ? &s->mixed[m->thread] : NULL, v);
}

/* Every thread of every process, grouped by the text of its stack with
 * whole paths: two files of one short name stay apart. */
struct member *dump_group_threads(const struct snapshot *snaps, int n,
				  const struct view *views, struct grouping *gr)
{
	struct strbuf key = STRBUF_INIT;
	struct member *mem = NULL;
	size_t nmem = 0, cap = 0;

	for (int i = 0; i < n; i++) {
		struct view full = views[i];

		full.full_filenames = full.full_names = true;
		for (int k = 0; k < snaps[i].nthreads; k++) {
			ALLOC_GROW(mem, nmem + 1, cap);
			mem[nmem] = (struct member){ i, k };
			key.len = 0;
			text_member_stack(&key, snaps, &mem[nmem], &full);
			grouping_add(gr, key.buf ? key.buf : "", (uint32_t)nmem++);
		}
	}
	sb_release(&key);
	grouping_sort(gr);
	return mem;
}
/* " 101/102 "worker-1"": a member in a group's header, named as in its
 * thread header, so that a pool's threads can be told apart. */
static void text_member_id(struct strbuf *sb, const struct snapshot *snaps,
			   const struct member *m, bool multi)
{
	const struct py_thread *t = member_thread(snaps, m);

	if (multi)
		sb_printf(sb, " %d/%d", (int)snaps[m->snap].pid, (int)t->tid);
	else
		sb_printf(sb, " %d", (int)t->tid);
	if (t->name) {
		sb_puts(sb, " \"");
		put_name(sb, t->name);
		sb_putc(sb, '"');
	}
}

/* "16 threads, 2 processes (15 idle, 1 active, 1 holds the GIL): 101/101 ..."
 * (a core's threads are neither idle nor active: it records no run state),
 * or, for one thread, its usual header. */
static void text_group_header(struct strbuf *sb, const struct dump_group *g, const struct member *mem,
			      const struct snapshot *snaps, bool multi)
{
	uint32_t idle = 0, known = 0, gil = 0, attached = 0;
	int nprocs = dump_group_processes(g, mem);
	const char *sep = " (";

	if (g->n == 1) {
		if (multi)
			sb_printf(sb, "Process %d, ", (int)snaps[mem[g->members[0]].snap].pid);
		text_thread_header(sb, member_thread(snaps, &mem[g->members[0]]),
				   &snaps[mem[g->members[0]].snap]);
		return;
	}
	for (uint32_t i = 0; i < g->n; i++) {
		const struct member *m = &mem[g->members[i]];

		if (snaps[m->snap].idle_known) {
			known++;
			idle += member_thread(snaps, m)->idle;
		}
		gil += member_thread(snaps, m)->gil;
		attached += member_thread(snaps, m)->state == PY_ATTACHED;
	}
	sb_printf(sb, "%u threads", g->n);
	if (multi)
		sb_printf(sb, ", %d process%s", nprocs, nprocs == 1 ? "" : "es");
	if (known) {
		sb_printf(sb, "%s%u idle, %u active", sep, idle, known - idle);
		sep = ", ";
	}
	if (gil) {
		sb_printf(sb, "%s%u hold%s the GIL", sep, gil, gil == 1 ? "s" : "");
		sep = ", ";
	}
	if (attached) {
		sb_printf(sb, "%s%u attached", sep, attached);
		sep = ", ";
	}
	if (sep[0] == ',')
		sb_putc(sb, ')');
	sb_putc(sb, ':');
	for (uint32_t i = 0; i < g->n; i++)
		text_member_id(sb, snaps, &mem[g->members[i]], multi);
	sb_putc(sb, '\n');
}

void dump_text_grouped(struct strbuf *out, const struct snapshot *snaps, int n,
		       const pid_t *ppids, const struct view *views, const struct grouping *gr,
		       const struct member *mem)
{
	for (int i = 0; i < n; i++)
		text_process_header(out, &snaps[i], ppids[i]);
	for (uint32_t i = 0; i < gr->n; i++) {
		const struct member *first = &mem[gr->g[i].members[0]];

		sb_putc(out, '\n');
		text_group_header(out, &gr->g[i], mem, snaps, n > 1);
		text_member_stack(out, snaps, first, &views[first->snap]);
	}
	for (int i = 0; i < n; i++)
		if (views[i].async)
			text_tasks(out, &snaps[i], &views[i], n > 1);
}
