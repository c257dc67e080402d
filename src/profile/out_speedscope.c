/* speedscope's own file format (https://www.speedscope.app/file-format-schema.json).
 *
 * One "sampled" profile per thread, in nanoseconds: each of the thread's
 * runs, in time order, is one sample weighted by how long it lasted, so
 * speedscope's "Time Order" view is the thread's timeline.  Where the thread
 * was not sampled between two runs (idle and filtered out, or missed) an
 * empty sample fills the gap, keeping later runs at their real times; the
 * weights of a profile therefore add up to endValue - startValue.
 *
 * All threads share one frame table, indexed by frame id.  Frames are named
 * with their label, "function (file:line)": speedscope keys frames by index,
 * so two lines of one function are two boxes and should say which is which.
 * The process and thread root frames are left out of the samples: each
 * profile already is one thread, named after it.
 */
#include "profile/output.h"
#include "profile/loss.h"
#include "util/json.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define FLUSH_AT (64 * 1024)

struct ss {
	const struct profile *p;
	FILE *f;
	struct strbuf sb;
	struct json j;
	uint32_t *first;	/* thread t's runs: order[first[t] .. first[t + 1]) */
	uint32_t *order;
};

static void group_runs(struct ss *ss)
{
	profile_runs_by_thread(ss->p, &ss->first, &ss->order);
}

/* When the run ends: at the next run's start if that comes first (the
 * sampler's clock jitters), so no two samples overlap. */
static uint64_t run_end(const struct prun *r, const struct prun *next)
{
	return next && next->start_ns < r->end_ns ? next->start_ns : r->end_ns;
}

static uint64_t gap_after(const struct prun *r, const struct prun *next)
{
	return next && next->start_ns > r->end_ns ? next->start_ns - r->end_ns : 0;
}

static bool is_root(const struct pframe *f)
{
	return f->kind == PF_PROCESS || f->kind == PF_THREAD;
}

static void put_stack(struct ss *ss, const struct pstack *s, bool roots)
{
	bool first = true;

	sb_putc(&ss->sb, '[');
	for (uint32_t d = 0; d < s->depth; d++) {
		if (!roots && is_root(&ss->p->frames[s->frames[d]]))
			continue;
		if (!first)
			sb_putc(&ss->sb, ',');
		sb_put_u64(&ss->sb, s->frames[d]);
		first = false;
	}
	sb_putc(&ss->sb, ']');
}

/* The name speedscope shows above the view, with what the recording lost
 * (profile/loss.h): speedscope has no other field it shows for a file. */
static char *file_title(const struct profile *p, const struct out_opts *o)
{
	struct strbuf sb = STRBUF_INIT, note = STRBUF_INIT;

	if (o->title)
		sb_puts(&sb, o->title);
	else if (p->command)
		sb_printf(&sb, "%s (pid %d)", p->command, (int)p->pid);
	else
		sb_printf(&sb, "pid %d", (int)p->pid);
	if (profile_loss_note(p, &note))
		sb_printf(&sb, " [%s]", note.buf);
	sb_release(&note);
	return sb_detach(&sb);
}

static bool many_processes(const struct profile *p)
{
	for (uint32_t t = 1; t < p->nthreads; t++)
		if (p->threads[t].pid != p->threads[0].pid)
			return true;
	return false;
}

/* "MainThread (tid 42)", or "thread 42" when it has no name; with the pid
 * when the profile spans processes. */
static char *thread_title(const struct profile *p, const struct pthread_info *t)
{
	bool pids = many_processes(p);

	if (!t->name && pids)
		return xasprintf("thread %d (pid %d)", (int)t->tid, (int)t->pid);
	if (!t->name)
		return xasprintf("thread %d", (int)t->tid);
	if (pids)
		return xasprintf("%s (pid %d, tid %d)", t->name, (int)t->pid, (int)t->tid);
	return xasprintf("%s (tid %d)", t->name, (int)t->tid);
}

static void put_frames(struct ss *ss, bool full)
{
	struct json *j = &ss->j;

	json_key(j, "shared");
	json_obj_begin(j);
	json_key(j, "frames");
	json_arr_begin(j);
	for (uint32_t i = 0; i < ss->p->nframes; i++) {
		const struct pframe *fr = &ss->p->frames[i];
		char *label = pframe_label(fr, full);

		json_obj_begin(j);
		json_kstr(j, "name", label);
		if (fr->file) {
			json_kstr(j, "file", fr->file);
		}
		if (fr->file && fr->line >= 0) {
			json_kint(j, "line", fr->line);
		}
		json_obj_end(j);
		free(label);
		if (ss->sb.len > FLUSH_AT)
			out_flush_sb(&ss->sb, ss->f);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static void profile_head(struct ss *ss, const char *name, uint64_t start, uint64_t end)
{
	struct json *j = &ss->j;

	json_obj_begin(j);
	json_kstr(j, "type", "sampled");
	json_kstr(j, "name", name);
	json_kstr(j, "unit", "nanoseconds");
	json_kuint(j, "startValue", start);
	json_kuint(j, "endValue", end);
}

/* The samples, then the weights, of one thread's runs [a, b) of order[]. */
static void thread_samples(struct ss *ss, uint32_t a, uint32_t b, bool weights)
{
	const struct prun *runs = ss->p->runs;

	json_key(&ss->j, weights ? "weights" : "samples");
	json_arr_begin(&ss->j);
	for (uint32_t k = a; k < b; k++) {
		const struct prun *r = &runs[ss->order[k]];
		const struct prun *next = k + 1 < b ? &runs[ss->order[k + 1]] : NULL;
		uint64_t gap = gap_after(r, next);

		if (k > a)
			sb_putc(&ss->sb, ',');
		if (weights)
			sb_put_u64(&ss->sb, run_end(r, next) - r->start_ns);
		else
			put_stack(ss, &ss->p->stacks[r->stack], false);
		if (gap && weights) {
			sb_putc(&ss->sb, ',');
			sb_put_u64(&ss->sb, gap);
		} else if (gap) {
			sb_puts(&ss->sb, ",[]");
		}
		if (ss->sb.len > FLUSH_AT)
			out_flush_sb(&ss->sb, ss->f);
	}
	json_arr_end(&ss->j);
}

static void thread_profile(struct ss *ss, uint32_t t)
{
	const struct profile *p = ss->p;
	uint32_t a = ss->first[t], b = ss->first[t + 1];
	char *name = thread_title(p, &p->threads[t]);

	profile_head(ss, name, p->runs[ss->order[a]].start_ns, p->runs[ss->order[b - 1]].end_ns);
	thread_samples(ss, a, b, false);
	thread_samples(ss, a, b, true);
	json_obj_end(&ss->j);
	free(name);
}

/* Without runs (no thread was registered) the time order is lost: write
 * the aggregated stacks, roots included, as one profile. */
static void stacks_profile(struct ss *ss, const char *title)
{
	const struct profile *p = ss->p;
	uint64_t total = 0;
	bool first = true;

	for (uint32_t i = 0; i < p->nstacks; i++)
		total += p->stacks[i].count * p->interval_ns;
	profile_head(ss, title, 0, total);
	for (int pass = 0; pass < 2; pass++) {
		json_key(&ss->j, pass ? "weights" : "samples");
		json_arr_begin(&ss->j);
		first = true;
		for (uint32_t i = 0; i < p->nstacks; i++) {
			if (!p->stacks[i].count)
				continue;
			if (!first)
				sb_putc(&ss->sb, ',');
			first = false;
			if (pass)
				sb_put_u64(&ss->sb, p->stacks[i].count * p->interval_ns);
			else
				put_stack(ss, &p->stacks[i], true);
		}
		json_arr_end(&ss->j);
		out_flush_sb(&ss->sb, ss->f);
	}
	json_obj_end(&ss->j);
}

/* Show the busiest thread first: usually the one the user is after. */
static uint32_t busiest(const struct ss *ss, uint32_t *index)
{
	uint64_t best = 0;
	uint32_t nprofiles = 0;

	*index = 0;
	for (uint32_t t = 0; t < ss->p->nthreads; t++) {
		uint64_t n = 0;

		if (ss->first[t] == ss->first[t + 1])
			continue;
		for (uint32_t k = ss->first[t]; k < ss->first[t + 1]; k++)
			n += ss->p->runs[ss->order[k]].samples;
		if (n > best) {
			best = n;
			*index = nprofiles;
		}
		nprofiles++;
	}
	return nprofiles;
}

int out_speedscope(const struct profile *p, FILE *f, const struct out_opts *o)
{
	struct ss ss = { .p = p, .f = f, .sb = STRBUF_INIT };
	char *title = file_title(p, o);
	uint32_t active, nprofiles;

	json_init(&ss.j, &ss.sb);
	group_runs(&ss);
	nprofiles = busiest(&ss, &active);

	json_obj_begin(&ss.j);
	json_kstr(&ss.j, "$schema", SCHEMA);
	json_kstr(&ss.j, "exporter", "pystrobe");
	json_kstr(&ss.j, "name", title);
	json_kuint(&ss.j, "activeProfileIndex", active);
	put_frames(&ss, o->full_filenames);
	json_key(&ss.j, "profiles");
	json_arr_begin(&ss.j);
	for (uint32_t t = 0; t < p->nthreads; t++)
		if (ss.first[t] != ss.first[t + 1])
			thread_profile(&ss, t);
	if (!nprofiles)
		stacks_profile(&ss, title);
	json_arr_end(&ss.j);
	json_obj_end(&ss.j);
	sb_putc(&ss.sb, '\n');
	out_flush_sb(&ss.sb, ss.f);

	sb_release(&ss.sb);
	free(ss.first);
	free(ss.order);
	free(title);
	return out_finish(f);
}
