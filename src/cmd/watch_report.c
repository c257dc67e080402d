/* Writing a stall report: see watch_report.h. */
#include "cmd/watch_report.h"
#include "cmd/dump_format.h"
#include "cmd/dump_read.h"
#include "process/proctree.h"
#include "cmd/snapshot.h"
#include "util/json.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* --- the processes, read as dump reads them ------------------------------ */

struct reading {
	struct proc_node *procs;	/* every tree's, one after the other */
	int nprocs;
	struct snapshot *snaps;
	int n;
};

/* One process, as whole as its version allows: asyncio tasks cannot be
 * read before 3.11, the rest can.  Returns 0, or not (not Python, gone). */
static int read_one(pid_t pid, const struct snapshot_opts *so, struct snapshot *s)
{
	struct snapshot_opts sync = *so;
	char err[512];
	int rc = snapshot_take(pid, NULL, so, s, err, sizeof(err));

	if (!is_fail(rc, EXIT_UNSUPPORTED) || !so->async)
		return rc;
	sync.async = false;
	return snapshot_take(pid, NULL, &sync, s, err, sizeof(err));
}

/* Every watched tree, read as `dump -s` reads it; whole, with `--native
 * --async --locals`.  What cannot be read (not Python, gone) is left out
 * without a word: the report is of the job as it is. */
static void read_all(const struct watch_report *w, bool whole, struct reading *r)
{
	struct snapshot_opts so = { .locals = whole, .native = whole, .async = whole };

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < w->nroots; i++) {
		struct proc_node *procs;
		int n = dump_list_processes(w->roots[i], true, &procs);

		if (n <= 0) {
			free(procs);
			continue;
		}
		r->procs = xreallocarray(r->procs, r->nprocs + n, sizeof(*r->procs));
		memcpy(r->procs + r->nprocs, procs, n * sizeof(*procs));
		r->nprocs += n;
		r->snaps = xreallocarray(r->snaps, r->n + n, sizeof(*r->snaps));
		for (int k = 0; k < n; k++)
			if (read_one(procs[k].pid, &so, &r->snaps[r->n]) == 0)
				r->n++;
		free(procs);
	}
}

static void reading_release(struct reading *r)
{
	for (int i = 0; i < r->n; i++)
		snapshot_free(&r->snaps[i]);
	free(r->snaps);
	free(r->procs);
}

static const struct py_thread *snap_thread(const struct reading *r, pid_t pid, pid_t tid)
{
	for (int i = 0; i < r->n; i++) {
		if (r->snaps[i].pid != pid)
			continue;
		for (int k = 0; k < r->snaps[i].nthreads; k++)
			if (r->snaps[i].threads[k].tid == tid)
				return &r->snaps[i].threads[k];
	}
	return NULL;
}

/* --- files ---------------------------------------------------------------- */

/* Whole or not at all: a reader that sees the name sees all of it. */
int watch_report_file(const char *dir, const char *name, const struct strbuf *sb)
{
	char *path = xasprintf("%s/%s", dir, name), *tmp = xasprintf("%s/.%s.tmp", dir, name);
	FILE *f = fopen(tmp, "we");
	int rc = 0;

	if (!f || fwrite(sb->buf ? sb->buf : "", 1, sb->len, f) != sb->len)
		rc = -errno;
	if (f && fclose(f) != 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0) {
		errorf("watch: cannot write %s: %s", path, strerror(-rc));
		unlink(tmp);
	}
	free(path);
	free(tmp);
	return rc;
}

static uint64_t unix_of(const struct watch_report *w, uint64_t mono_ns)
{
	return w->unix_base_ns + (mono_ns - w->mono_base_ns);
}

char *watch_report_mkdir(const char *dir, const char *prefix, const char *who,
			 uint64_t unix_ns)
{
	char *path = NULL;

	for (int n = 0; n < 100; n++) {
		free(path);
		path = n ? xasprintf("%s/%s-%llu-%s-%d", dir, prefix,
				     (unsigned long long)(unix_ns / 1000000000ull), who, n) :
			   xasprintf("%s/%s-%llu-%s", dir, prefix,
				     (unsigned long long)(unix_ns / 1000000000ull), who);
		if (mkdir(path, 0755) == 0)
			return path;
		if (errno != EEXIST)
			break;
	}
	errorf("watch: cannot make the directory %s: %s", path, strerror(errno));
	free(path);
	return NULL;
}

/* DIR/PREFIX-UNIX-PID, as watch_report_mkdir() makes it. */
static char *make_dir(const char *dir, const char *prefix, pid_t pid, uint64_t unix_ns)
{
	char who[32];

	snprintf(who, sizeof(who), "%d", (int)pid);
	return watch_report_mkdir(dir, prefix, who, unix_ns);
}

/* --- report.txt ----------------------------------------------------------- */

static void put_time(struct strbuf *sb, uint64_t unix_ns)
{
	time_t t = (time_t)(unix_ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
	sb_puts(sb, buf);
}

static void text_thread(struct strbuf *sb, const struct stall_thread *t, uint64_t now_ns)
{
	double busy = stall_thread_busy(t);

	sb_printf(sb, "    thread %d", (int)t->tid);
	if (t->name)
		sb_printf(sb, " \"%s\"", t->name);
	sb_printf(sb, " (%c", t->state ? t->state : '?');
	if (stall_thread_class(t) != WC_NONE)
		sb_printf(sb, ", waits: %s", wait_class_name(stall_thread_class(t)));
	if (busy >= 0)
		sb_printf(sb, ", running %.0f%%", 100 * busy);
	sb_printf(sb, ", same stack %.0f s): %s\n", (now_ns - t->stack_since_ns) / 1e9, t->where);
}

static void text_report(struct strbuf *sb, const struct watch_report *w,
			const struct stall_model *m, uint64_t now_ns)
{
	const struct stall_report *r = &m->r;

	sb_printf(sb, "pystrobe watch: %s, detected ", stall_kind_name(r->kind));
	put_time(sb, unix_of(w, now_ns));
	sb_puts(sb, "\nNo progress since ");
	put_time(sb, unix_of(w, r->since_ns));
	sb_printf(sb, " (%.0f s; --stall %.0f)\n", (now_ns - r->since_ns) / 1e9,
		  w->threshold_ns / 1e9);
	sb_printf(sb, "Why: %s\n", r->why);
	if (r->odd >= 0)
		sb_printf(sb, "Odd one out: process %d (rank %d), in its stack for %.0f s\n",
			  (int)m->p[r->odd].pid, m->p[r->odd].rank, r->odd_for_ns / 1e9);
	if (w->progress)
		sb_printf(sb, "Progress file: %s, unchanged for %.0f s\n", w->progress,
			  (now_ns - m->progress_ns) / 1e9);
	for (int i = 0; i < m->np; i++) {
		const struct stall_proc *p = &m->p[i];

		sb_printf(sb, "\nprocess %d", (int)p->pid);
		if (p->rank >= 0)
			sb_printf(sb, " (rank %d)", p->rank);
		sb_printf(sb, ": %s\n", p->command);
		if (p->verdict != STALL_NONE)
			sb_printf(sb, "  %s: %s\n", stall_kind_name(p->verdict), p->why);
		for (int k = 0; k < p->nt; k++)
			text_thread(sb, &p->t[k], now_ns);
	}
	sb_printf(sb, "\nFiles: dump.txt and dump.json (every thread's stack with locals, native "
		  "frames, asyncio tasks), %s (the samples of the last minutes)\n",
		  WATCH_FLIGHT_FILE);
}

/* --- report.json ---------------------------------------------------------- */

static void json_seconds(struct json *j, const char *key, double s)
{
	/* Tenths of a second: what the model's rounds can tell. */
	json_key(j, key);
	json_fixed(j, s, 1);
}

static void json_frames(struct json *j, const struct py_thread *pt)
{
	json_key(j, "frames");
	json_arr_begin(j);
	for (int i = 0; pt && i < pt->nframes; i++) {
		json_obj_begin(j);
		json_kstr(j, "function", pt->frames[i].function);
		json_kstr(j, "file", pt->frames[i].file);
		json_kint(j, "line", pt->frames[i].line);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_thread(struct json *j, const struct stall_thread *t, const struct stall_proc *p,
			const struct reading *rd, uint64_t now_ns)
{
	char state[2] = { t->state ? t->state : '?', 0 };
	double busy = stall_thread_busy(t);

	json_obj_begin(j);
	json_kint(j, "tid", t->tid);
	json_kstr(j, "name", t->name);
	json_kstr(j, "state", state);
	json_kstr(j, "wait", wait_class_name(stall_thread_class(t)));
	json_seconds(j, "cpu_seconds", busy >= 0 ? busy * (t->cpu_at_ns - t->run.cpu0_at_ns) / 1e9 : 0);
	json_seconds(j, "same_stack_seconds", (now_ns - t->stack_since_ns) / 1e9);
	json_kstr(j, "where", t->where);
	json_frames(j, snap_thread(rd, p->pid, t->tid));
	json_obj_end(j);
}

void watch_json_rank(struct json *j, int rank)
{
	json_key(j, "rank");
	if (rank >= 0)
		json_int(j, rank);
	else
		json_null(j);
}

static void json_proc(struct json *j, const struct stall_proc *p, const struct reading *rd,
		      uint64_t now_ns)
{
	json_obj_begin(j);
	json_kint(j, "pid", p->pid);
	watch_json_rank(j, p->rank);
	json_kstr(j, "command", p->command);
	json_kstr(j, "verdict", p->verdict != STALL_NONE ? stall_kind_name(p->verdict) : NULL);
	json_kstr(j, "why", p->why);
	json_key(j, "threads");
	json_arr_begin(j);
	for (int k = 0; k < p->nt; k++)
		json_thread(j, &p->t[k], p, rd, now_ns);
	json_arr_end(j);
	json_obj_end(j);
}

static void json_odd(struct json *j, const struct stall_model *m)
{
	const struct stall_proc *p;
	const struct stall_thread *t = NULL;

	json_key(j, "odd_one_out");
	if (m->r.odd < 0) {
		json_null(j);
		return;
	}
	p = &m->p[m->r.odd];
	for (int i = 0; i < p->nt && !t; i++)
		if (p->t[i].tid == p->pid)
			t = &p->t[i];
	json_obj_begin(j);
	json_kint(j, "pid", p->pid);
	json_kint(j, "rank", p->rank);
	json_kstr(j, "where", t ? t->where : p->nt ? p->t[0].where : NULL);
	json_seconds(j, "seconds", m->r.odd_for_ns / 1e9);
	json_obj_end(j);
}

static void json_report(struct strbuf *sb, const struct watch_report *w,
			const struct stall_model *m, const struct reading *rd, uint64_t now_ns)
{
	struct json j;

	json_init(&j, sb);
	json_obj_begin(&j);
	json_kstr(&j, "kind", stall_kind_name(m->r.kind));
	json_seconds(&j, "since_unix", unix_of(w, m->r.since_ns) / 1e9);
	json_seconds(&j, "detected_unix", unix_of(w, now_ns) / 1e9);
	json_seconds(&j, "stall_seconds", w->threshold_ns / 1e9);
	json_kstr(&j, "why", m->r.why);
	json_odd(&j, m);
	json_key(&j, "progress_file");
	if (w->progress) {
		json_obj_begin(&j);
		json_kstr(&j, "path", w->progress);
		json_seconds(&j, "unchanged_seconds", (now_ns - m->progress_ns) / 1e9);
		json_obj_end(&j);
	} else {
		json_null(&j);
	}
	json_key(&j, "processes");
	json_arr_begin(&j);
	for (int i = 0; i < m->np; i++)
		json_proc(&j, &m->p[i], rd, now_ns);
	json_arr_end(&j);
	json_key(&j, "files");
	json_obj_begin(&j);
	json_kstr(&j, "dump_txt", "dump.txt");
	json_kstr(&j, "dump_json", "dump.json");
	json_kstr(&j, "flight", WATCH_FLIGHT_FILE);
	json_obj_end(&j);
	json_obj_end(&j);
	sb_putc(sb, '\n');
}

/* --- the whole ------------------------------------------------------------ */

static int write_dumps(const char *dir, const struct reading *rd)
{
	struct dump_opts text = { .locals = true, .group = true, .async = true };
	struct dump_opts json = text;
	struct strbuf sb = STRBUF_INIT;
	int rc, rc_json;

	json.json = true;
	dump_format_all(&sb, rd->snaps, rd->n, rd->procs, rd->nprocs, &text);
	rc = watch_report_file(dir, "dump.txt", &sb);
	sb.len = 0;
	dump_format_all(&sb, rd->snaps, rd->n, rd->procs, rd->nprocs, &json);
	rc_json = watch_report_file(dir, "dump.json", &sb);
	sb_release(&sb);
	return rc < 0 ? rc : rc_json;
}

static int write_flight(const char *dir, const struct flightrec *fr, uint64_t mark_unix_ns)
{
	char *path = xasprintf("%s/%s", dir, WATCH_FLIGHT_FILE), err[512];
	int rc = flightrec_write(fr, path, mark_unix_ns, err, sizeof(err));

	if (rc < 0)
		errorf("watch: %s", err);
	free(path);
	return rc;
}

char *watch_report_write(const struct watch_report *w, const struct stall_model *m,
			 const struct flightrec *fr, uint64_t now_ns)
{
	pid_t pid = m->r.proc >= 0 ? m->p[m->r.proc].pid : w->roots[0];
	char *dir = make_dir(w->dir, "stall", pid, unix_of(w, now_ns));
	struct strbuf sb = STRBUF_INIT;
	struct reading rd;

	if (!dir)
		return NULL;
	/* The recording first: the minutes before the stall are what no
	 * later look can give back.  Then the report, from a quick read of
	 * the Python stacks (milliseconds); then the dumps, whose native
	 * frames can take seconds to name in a big process (libtorch). */
	/* Each failure is said as it happens; what could be written is
	 * there. */
	write_flight(dir, fr, unix_of(w, now_ns));
	read_all(w, false, &rd);
	text_report(&sb, w, m, now_ns);
	watch_report_file(dir, "report.txt", &sb);
	sb.len = 0;
	json_report(&sb, w, m, &rd, now_ns);
	watch_report_file(dir, "report.json", &sb);
	sb_release(&sb);
	reading_release(&rd);
	read_all(w, true, &rd);
	write_dumps(dir, &rd);
	reading_release(&rd);
	return dir;
}

char *watch_flight_write(const struct watch_report *w, const struct flightrec *fr)
{
	uint64_t now = w->unix_base_ns + (mono_ns() - w->mono_base_ns);
	char *dir = make_dir(w->dir, "flight", getpid(), now), *path;

	if (!dir)
		return NULL;
	if (write_flight(dir, fr, now) < 0) {
		free(dir);
		return NULL;
	}
	path = xasprintf("%s/%s", dir, WATCH_FLIGHT_FILE);
	free(dir);
	return path;
}
