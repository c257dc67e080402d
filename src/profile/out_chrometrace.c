/* Chrome's Trace Event Format (JSON), for Perfetto and chrome://tracing.
 *
 * Each process and thread gets an "M" metadata event naming it, with the
 * real OS pid and tid, so the tracks read as in any system trace.  Each
 * thread's runs become complete ("X") events, one per frame, in whole
 * microseconds since the start of the recording (see to_us()).  A frame that stays on the
 * stack from one run to the next stays ONE event: consecutive runs are
 * walked like a call tree, closing the frames the new stack no longer has
 * and opening the ones it adds, so events nest properly, as the format
 * requires of a thread's X events, and a long-running function is one bar
 * rather than a thousand slivers.
 *
 * Runs closer than one and a half sampling intervals are taken as
 * continuous (each round falls at a random instant of its interval, so
 * rounds are up to two intervals apart; profile.c merges runs with the
 * same rule).  Across
 * a longer gap every frame is closed.  Process and thread root frames are
 * left out: the tracks already are the process and the thread.
 *
 * Counters measured beside the samples (a GPU's utilisation and memory)
 * become counter ("C") events of the profiled process, one track per
 * series, on the same clock as the slices.
 *
 * Order in the file: readers sort events by ts, stably, so of events that
 * start together the parent must come first (Perfetto issue #878).  An event
 * is written when its "group" (the frames one run opened) is complete, and
 * each group in opening order, parents first.
 */
#include "profile/output.h"
#include "profile/loss.h"
#include "util/json.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (64 * 1024)

struct event {
	uint32_t frame;
	uint32_t leader;	/* the first event its run opened: a group */
	uint64_t start, end;	/* ns */
};

struct ct {
	const struct profile *p;
	FILE *f;
	struct strbuf sb;
	bool full;
	bool need_comma;
	char **names;		/* per frame: ,"name":"...","cat":"..." */
	uint32_t *first;	/* thread t's runs: order[first[t] .. first[t + 1]) */
	uint32_t *order;

	/* The thread being written. */
	const struct pthread_info *thread;
	uint32_t *open;		/* open frames, root first: indices into ev */
	uint32_t nopen, open_cap;
	struct event *ev;	/* events not yet written, in opening order */
	uint32_t nev, ev_cap;
	uint32_t *frames;	/* the current run's frames without roots */
	uint32_t frames_cap;
};

/* Nanoseconds to whole microseconds, rounded.  Every time in the file is
 * a whole number: readers keep ts and dur as doubles and compute ts + dur,
 * and with fractions that sum can land a hair past the next event's ts, so
 * that speedscope and others see an event end after its successor started
 * and nest everything after it wrongly.  Rounding the start and the end
 * (not the duration) keeps every end equal to the next start, and a child
 * inside its parent, since rounding keeps order. */
static uint64_t to_us(uint64_t ns)
{
	return ns / 1000 + (ns % 1000 >= 500);
}

void chrometrace_event_begin(struct strbuf *sb, bool *need_comma)
{
	if (*need_comma)
		sb_puts(sb, ",\n");
	*need_comma = true;
}

void chrometrace_put_ids(struct strbuf *sb, uint64_t pid, uint64_t tid)
{
	sb_puts(sb, "\"pid\":");
	sb_put_u64(sb, pid);
	sb_puts(sb, ",\"tid\":");
	sb_put_u64(sb, tid);
}

void chrometrace_meta(struct strbuf *sb, bool *need_comma, const char *what, uint64_t pid,
		      uint64_t tid, const char *name)
{
	chrometrace_event_begin(sb, need_comma);
	sb_puts(sb, "{\"ph\":\"M\",\"name\":");
	json_quote(sb, what);
	sb_putc(sb, ',');
	chrometrace_put_ids(sb, pid, tid);
	sb_puts(sb, ",\"args\":{\"name\":");
	json_quote(sb, name);
	sb_puts(sb, "}}");
}

static void event_begin(struct ct *ct)
{
	chrometrace_event_begin(&ct->sb, &ct->need_comma);
}

static void put_ids(struct ct *ct, pid_t pid, pid_t tid)
{
	chrometrace_put_ids(&ct->sb, (uint64_t)pid, (uint64_t)tid);
}

static void metadata(struct ct *ct, const char *what, pid_t pid, pid_t tid, const char *name)
{
	chrometrace_meta(&ct->sb, &ct->need_comma, what, (uint64_t)pid, (uint64_t)tid, name);
}

/* With --subprocesses each stack starts with a frame naming its process,
 * "process PID: COMMAND": the command is the best name for a worker's
 * track (the track shows the pid already). */
static const char *root_command(const struct profile *p, pid_t pid)
{
	for (uint32_t i = 0; i < p->nruns; i++) {
		const struct prun *r = &p->runs[i];
		const struct pstack *s = &p->stacks[r->stack];
		const char *name, *sep;

		if (p->threads[r->thread].pid != pid)
			continue;
		if (!s->depth || p->frames[s->frames[0]].kind != PF_PROCESS)
			return NULL;
		name = p->frames[s->frames[0]].name;
		sep = strstr(name, ": ");
		return sep ? sep + 2 : name;
	}
	return NULL;
}

/* The track of the counters: the profiled process's, named as it is
 * when it has no sampled thread of its own (with -s, workers only). */
static void counter_process_metadata(struct ct *ct)
{
	const struct profile *p = ct->p;

	if (!p->ncounters)
		return;
	for (uint32_t t = 0; t < p->nthreads; t++)
		if (p->threads[t].pid == p->pid)
			return;
	metadata(ct, "process_name", p->pid, p->pid, p->command ? p->command : "pystrobe");
}

static void process_metadata(struct ct *ct)
{
	const struct profile *p = ct->p;

	counter_process_metadata(ct);
	for (uint32_t t = 0; t < p->nthreads; t++) {
		pid_t pid = p->threads[t].pid;
		bool seen = false;
		char *name;

		for (uint32_t u = 0; u < t && !seen; u++)
			seen = p->threads[u].pid == pid;
		if (seen)
			continue;
		if (pid == p->pid && p->command)
			name = xstrdup(p->command);
		else if (root_command(p, pid))
			name = xstrdup(root_command(p, pid));
		else
			name = xasprintf("process %d", (int)pid);
		metadata(ct, "process_name", pid, pid, name);
		free(name);
	}
}

static void thread_metadata(struct ct *ct, const struct pthread_info *t)
{
	char *name = t->name ? xstrdup(t->name) : xasprintf("thread %d", (int)t->tid);

	metadata(ct, "thread_name", t->pid, t->tid, name);
	free(name);
}

static const char *category(const struct pframe *f)
{
	switch (f->kind) {
	case PF_PYTHON:
		return "python";
	case PF_NATIVE:
		return "native";
	default:
		return "pystrobe";
	}
}

/* The name and category of a frame, escaped once: a frame is in many
 * events. */
static const char *names_of(struct ct *ct, uint32_t id)
{
	const struct pframe *f = &ct->p->frames[id];
	struct strbuf sb = STRBUF_INIT;
	char *label;

	if (ct->names[id])
		return ct->names[id];
	label = pframe_label(f, ct->full);
	sb_puts(&sb, ",\"name\":");
	json_quote(&sb, label);
	sb_printf(&sb, ",\"cat\":\"%s\"", category(f));
	free(label);
	ct->names[id] = sb_detach(&sb);
	return ct->names[id];
}

static void write_event(struct ct *ct, const struct event *e)
{
	uint64_t start = to_us(e->start), end = to_us(e->end);

	/* Less than a microsecond (or pushed past its end by step()): gone,
	 * and so are its children, which are no longer. */
	if (end <= start)
		return;
	event_begin(ct);
	sb_puts(&ct->sb, "{\"ph\":\"X\",");
	put_ids(ct, ct->thread->pid, ct->thread->tid);
	sb_puts(&ct->sb, ",\"ts\":");
	sb_put_u64(&ct->sb, start);
	sb_puts(&ct->sb, ",\"dur\":");
	sb_put_u64(&ct->sb, end - start);
	sb_puts(&ct->sb, names_of(ct, e->frame));
	sb_putc(&ct->sb, '}');
	if (ct->sb.len > FLUSH_AT)
		out_flush_sb(&ct->sb, ct->f);
}

/* Close the innermost open frames down to depth keep, at time t.  A closed
 * group leader completes its group, and the groups opened after it (its
 * descendants, already closed): write them all. */
static void close_to(struct ct *ct, uint32_t keep, uint64_t t)
{
	while (ct->nopen > keep) {
		uint32_t i = ct->open[--ct->nopen];

		ct->ev[i].end = t;
		if (ct->ev[i].leader != i)
			continue;
		for (uint32_t k = i; k < ct->nev; k++)
			write_event(ct, &ct->ev[k]);
		ct->nev = i;
	}
}

static void open_frame(struct ct *ct, uint32_t frame, uint64_t t, uint32_t leader)
{
	ALLOC_GROW(ct->ev, ct->nev + 1, ct->ev_cap);
	ALLOC_GROW(ct->open, ct->nopen + 1, ct->open_cap);
	ct->ev[ct->nev] = (struct event){ frame, leader, t, t };
	ct->open[ct->nopen++] = ct->nev++;
}

/* The run's frames without the process and thread roots, into ct->frames. */
static uint32_t run_frames(struct ct *ct, const struct pstack *s)
{
	uint32_t n = 0;

	ALLOC_GROW(ct->frames, s->depth, ct->frames_cap);
	for (uint32_t d = 0; d < s->depth; d++) {
		enum pframe_kind kind = ct->p->frames[s->frames[d]].kind;

		if (kind != PF_PROCESS && kind != PF_THREAD)
			ct->frames[n++] = s->frames[d];
	}
	return n;
}

static uint32_t common_prefix(const struct ct *ct, uint32_t n)
{
	uint32_t k = 0;

	while (k < n && k < ct->nopen && ct->ev[ct->open[k]].frame == ct->frames[k])
		k++;
	return k;
}

/* Whether a frame about to close is named as the first frame about to
 * open.  speedscope's importer, seeing a slice end and a slice begin at
 * the same time under the same name, takes the begin first (for empty
 * slices) and then finds the ends in the wrong order; a recursive function
 * leaving one level and calling itself again does exactly that. */
static bool closing_named(struct ct *ct, uint32_t keep, uint32_t frame)
{
	const char *name = names_of(ct, frame);

	for (uint32_t k = keep; k < ct->nopen; k++)
		if (!strcmp(names_of(ct, ct->ev[ct->open[k]].frame), name))
			return true;
	return false;
}

/* Move from the previous run (which ended at prev_end) to run r. */
static void step(struct ct *ct, const struct prun *r, uint64_t prev_end)
{
	uint32_t n = run_frames(ct, &ct->p->stacks[r->stack]);
	uint32_t keep = 0, leader;
	/* What closes ends when the next run starts, or when the last one
	 * ended if the thread went unsampled in between. */
	uint64_t closed = r->start_ns < prev_end ? r->start_ns : prev_end;
	uint64_t opened = r->start_ns;

	if (ct->nopen && r->start_ns <= prev_end + ct->p->interval_ns + ct->p->interval_ns / 2)
		keep = common_prefix(ct, n);
	/* Then what opens starts a microsecond later. */
	if (keep < n && to_us(opened) == to_us(closed) && closing_named(ct, keep, ct->frames[keep]))
		opened = closed + 1000;
	close_to(ct, keep, closed);
	leader = ct->nev;
	for (uint32_t d = keep; d < n; d++)
		open_frame(ct, ct->frames[d], opened, leader);
}

static void thread_events(struct ct *ct, uint32_t t)
{
	const struct prun *runs = ct->p->runs;
	uint64_t prev_end = 0;

	ct->thread = &ct->p->threads[t];
	ct->nopen = ct->nev = 0;
	for (uint32_t k = ct->first[t]; k < ct->first[t + 1]; k++) {
		const struct prun *r = &runs[ct->order[k]];

		step(ct, r, prev_end);
		prev_end = r->end_ns;
	}
	close_to(ct, 0, prev_end);
}

/* One "C" event per point: Perfetto names the track "NAME UNIT", after
 * the event's name and its one argument. */
static void counter_events(struct ct *ct, const struct pcounter *c)
{
	for (uint32_t i = 0; i < c->npoints; i++) {
		event_begin(ct);
		sb_puts(&ct->sb, "{\"ph\":\"C\",\"name\":");
		json_quote(&ct->sb, c->name);
		sb_putc(&ct->sb, ',');
		put_ids(ct, ct->p->pid, ct->p->pid);
		sb_puts(&ct->sb, ",\"ts\":");
		sb_put_u64(&ct->sb, to_us(c->points[i].t_ns));
		sb_puts(&ct->sb, ",\"args\":{");
		json_quote(&ct->sb, c->unit);
		sb_printf(&ct->sb, ":%.6g}}", c->points[i].value);
		if (ct->sb.len > FLUSH_AT)
			out_flush_sb(&ct->sb, ct->f);
	}
}

static void group_runs(struct ct *ct)
{
	profile_runs_by_thread(ct->p, &ct->first, &ct->order);
}

/* What was recorded, for whoever opens the file's metadata. */
static void other_data(struct ct *ct, const struct out_opts *o)
{
	const struct profile *p = ct->p;
	struct strbuf loss = STRBUF_INIT;
	struct json j;

	sb_puts(&ct->sb, "],\n\"otherData\":");
	json_init(&j, &ct->sb);
	json_obj_begin(&j);
	json_kstr(&j, "exporter", "pystrobe");
	if (o->title) {
		json_kstr(&j, "title", o->title);
	}
	json_kstr(&j, "command", p->command);
	json_kint(&j, "pid", p->pid);
	json_kstr(&j, "python_version", p->python_version);
	json_kuint(&j, "start_unix_ns", p->start_unix_ns);
	json_kuint(&j, "duration_ns", p->duration_ns);
	json_kuint(&j, "rate_hz", (uint64_t)(p->rate_hz + 0.5));
	json_kuint(&j, "samples", p->samples);
	if (profile_loss_note(p, &loss))
		json_kstr(&j, "losses", loss.buf);
	json_obj_end(&j);
	sb_release(&loss);
}

int out_chrometrace(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct ct ct = { .p = p, .f = f, .sb = STRBUF_INIT, .full = o->full_filenames };

	ct.names = xcalloc(p->nframes ? p->nframes : 1, sizeof(*ct.names));
	group_runs(&ct);
	sb_puts(&ct.sb, "{\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[\n");
	process_metadata(&ct);
	for (uint32_t t = 0; t < p->nthreads; t++)
		thread_metadata(&ct, &p->threads[t]);
	for (uint32_t t = 0; t < p->nthreads; t++)
		thread_events(&ct, t);
	for (uint32_t i = 0; i < p->ncounters; i++)
		counter_events(&ct, &p->counters[i]);
	other_data(&ct, o);
	sb_puts(&ct.sb, "}\n");
	out_flush_sb(&ct.sb, ct.f);

	for (uint32_t i = 0; i < p->nframes; i++)
		free(ct.names[i]);
	free(ct.names);
	free(ct.first);
	free(ct.order);
	free(ct.open);
	free(ct.ev);
	free(ct.frames);
	sb_release(&ct.sb);
	return out_finish(f);
}
