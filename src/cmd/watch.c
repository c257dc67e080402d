/* pystrobe watch: follow a job at a low rate, for days, and report the
 * moment it stalls (analysis/stall.h says what a stall is).
 *
 * Each round the fleets sample every thread of every watched process,
 * idle ones too, without pausing them; every sample reaches on_sample()
 * through the profile's observer, which feeds the stall model (the
 * stack's identity, wait class and innermost frame) and the flight
 * recorder.  Once a second each thread's CPU time and system call are
 * read from /proc and the model judges the job.
 */
#include "cmd/cmd.h"
#include "cluster/nodeprocs.h"
#include "cmd/quit.h"
#include "cmd/target_opts.h"
#include "cmd/watch_int.h"
#include "cmd/watch_report.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "profile/flightrec.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "sample/fleet.h"
#include "cmd/launch.h"
#include "cmd/snapshot.h"
#include "analysis/stall.h"
#include "analysis/waitclass.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RATE_HZ 2.0
#define DEFAULT_STALL_S 300.0
#define DEFAULT_KEEP_S 300.0
#define DEFAULT_KEEP_MB 64.0
/* How often the model is fed /proc and judges the job. */
#define CHECK_NS 1000000000ull
/* How often the process trees are walked for new processes. */
#define WALK_NS 1000000000ull
/* The profile the fleets intern into is started afresh past these, so
 * that days of a job whose stacks keep changing stay bounded; the model
 * and the flight recorder keep their own copies. */
#define PROFILE_MAX_STACKS 50000
#define PROFILE_MAX_THREADS 20000

static volatile sig_atomic_t flight_requested;

static void on_usr1(int sig)
{
	(void)sig;
	flight_requested = 1;
}

/* --- options -------------------------------------------------------------- */

/* -p, once per process of the job. */
static int add_root(void *dest, const char *arg, const char *cmd)
{
	struct watch *w = dest;

	if (w->nroots == MAX_ROOTS)
		return usage_error(cmd, "at most %d --pid", MAX_ROOTS);
	if (!(w->roots[w->nroots++] = parse_pid(arg)))
		return usage_error(cmd, "invalid pid '%s'", arg);
	return 0;
}

#define AT(member) offsetof(struct watch, member)

static const struct opt watch_opts[] = {
	OPT_CALL("pid", 'p', OPT_ARG, "PID",
		"watch this process and its subprocesses; several:\n"
		"one job (every rank on this host)", add_root),
	OPT_NUMBER("stall", 't', "SECONDS", "this long without progress is a stall (default 300)",
		AT(stall_s), 2, 1e7, "must be a number of seconds, 2 or more"),
	OPT_STRING("report-dir", 'D', "DIR",
		"where reports go (default: here, else $TMPDIR)", AT(dir)),
	OPT_STRING("progress", 0, "FILE",
		"a file the job keeps writing or touching: when it\n"
		"stops changing for --stall seconds, a stall", AT(progress)),
	OPT_STRING("on-stall", 0, "CMD",
		"run CMD (sh -c) after each report, with\n"
		"$PYSTROBE_REPORT set to its directory", AT(on_stall)),
	OPT_NUMBER("rate", 'r', "HZ", "rounds per second (default 2)", AT(rate_hz), 0.1, 100,
		"must be between 0.1 and 100 rounds a second"),
	OPT_NUMBER("keep", 0, "SECONDS", "the flight recording's length (default 300)",
		AT(keep_s), 1, 1e6, "must be a number of seconds"),
	OPT_NUMBER("keep-size", 0, "MB", "the flight recording's most memory (default 64)",
		AT(keep_mb), 1, 4095, "must be between 1 and 4095 MiB"),
	OPT_BOOL("quiet", 'q', "only the lines about stalls", AT(quiet)),
	OPT_BOOL("no-priority", 0,
		"never raise pystrobe's scheduling priority (default:\n"
		"real time where permitted: rounds on time on a busy\n"
		"machine)", AT(no_priority)),
	OPT_CALL_AT("slurm", 0, OPT_OPTIONAL_ARG, "JOB",
		"every rank of Slurm job JOB[.STEP], a watcher on each\n"
		"node, one report for the job (alone: this allocation)", AT(slurm), slurm_opt),
	OPT_STRING("slurm-node", 0, "JOB",
		"one node's watcher of --slurm (what --slurm runs there)", AT(slurm.node_job)),
	OPT_STRING("pystrobe", 0, "PATH",
		"with --slurm: the pystrobe the nodes run (default:\n"
		"this one; the static binary is sent with srun --bcast)", AT(slurm.pystrobe)),
	OPT_NUMBER("timeout", 0, "SECS",
		"with --slurm: how long a node may take to start and to\n"
		"send its dump, and be silent (default 20)", AT(slurm.timeout_s), 1, 3600,
		"must be between 1 and 3600 seconds"),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table watch_options = {
	.cmd = "watch",
	.head = "usage: pystrobe watch [options] --pid PID [--pid PID...]\n"
		"       pystrobe watch [options] -- COMMAND [ARGS...]\n"
		"       pystrobe watch [options] --slurm[=JOB[.STEP]]\n"
		"\n"
		"Follow a Python job and the processes it starts, at a low rate, for as\n"
		"long as it runs; when it stalls (a deadlock, a stuck collective, a starved\n"
		"input pipeline, an asyncio cycle, a livelock), write a report directory,\n"
		"say so in one line and keep watching.\n"
		"\n",
	.opts = watch_opts,
	.column = 25,
	.tail = "\n"
		"SIGUSR1 writes the flight recording into the report directory.  A\n"
		"launched command is ended as record ends it; pystrobe exits with its\n"
		"status, or 0 when every watched process has exited.\n",
	.stop_at_command = true,
};

/* --slurm or --slurm-node: the job's processes, not --pid's nor a
 * command's. */
static int slurm_args(struct watch *w)
{
	if (w->command || w->nroots)
		return usage_error("watch", "--slurm watches every rank of a job: it cannot be "
				   "given --pid or a command");
	if (w->slurm.on && w->slurm.node_job)
		return usage_error("watch", "--slurm and --slurm-node cannot be used together");
	if (w->slurm.node_job && (w->slurm.pystrobe || w->slurm.timeout_s))
		return usage_error("watch", "--pystrobe and --timeout go with --slurm");
	/* The report is the front's, of the whole job: its hook runs there. */
	if (w->on_stall && w->slurm.node_job)
		return usage_error("watch", "--on-stall goes with --slurm: the front runs it, once "
				   "per stall of the job, not a node's watcher");
	if (!w->slurm.timeout_s)
		w->slurm.timeout_s = SLURM_TIMEOUT_S;
	return 0;
}

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct watch *w, int argc, char **argv)
{
	int rc;

	w->rate_hz = DEFAULT_RATE_HZ;
	w->stall_s = DEFAULT_STALL_S;
	w->keep_s = DEFAULT_KEEP_S;
	w->keep_mb = DEFAULT_KEEP_MB;
	if ((rc = opt_parse(&watch_options, w, argc, argv)) != 0)
		return rc;
	if (optind < argc && !strcmp(argv[optind - 1], "--"))
		w->command = argv + optind;
	else if (optind < argc)
		return opt_usage_extra(&watch_options, argv, optind, !w->nroots);
	if (w->slurm.on || w->slurm.node_job)
		return slurm_args(w);
	if (w->slurm.pystrobe || w->slurm.timeout_s)
		return usage_error("watch", "--pystrobe and --timeout go with --slurm");
	if (!w->command == !w->nroots)
		return usage_error("watch", w->command ? "give --pid or a command, not both" :
				   "--pid PID or -- COMMAND is required (see pystrobe watch --help)");
	return 0;
}

/* The report directory: made if missing, and writable, before anything
 * runs: a stall at hour 31 must not find it otherwise. */
static int prepare_report_dir(struct watch *w)
{
	char *probe;
	int err;

	if (!w->dir)
		w->dir = out_probe("pystrobe") == 0 ? "." : out_tmpdir();
	if (mkdir(w->dir, 0755) < 0 && errno != EEXIST)
		return usage_error("watch", "cannot make the report directory %s: %s", w->dir,
				   strerror(errno));
	probe = xasprintf("%s/pystrobe", w->dir);
	err = out_probe(probe);
	free(probe);
	if (err < 0)
		return usage_error("watch", "cannot write in the report directory %s (%s): give "
				   "-D a directory where you can write", w->dir, strerror(-err));
	return 0;
}

/* --- what each sample tells ---------------------------------------------- */

static bool is_root_frame(const struct pframe *f)
{
	return f->kind == PF_PROCESS || f->kind == PF_THREAD || f->kind == PF_LABEL;
}

static uint64_t stack_hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

/* Where a thread is, in words: the frame that decided its class, as
 * "function (caller's file:line)" (the user's line that called
 * all_reduce), else its innermost frame. */
static char *where_of(const struct pframe *const *inner, uint32_t n, enum wait_class cls,
		      uint32_t at)
{
	const struct pframe *f;
	const char *name;

	if (!n)
		return xstrdup("(no frames)");
	if (cls == WC_NONE || cls > WC_GC || at + 1 >= n)
		return pframe_label(inner[0], false);
	f = inner[at + 1];
	for (uint32_t i = at + 1; i < n; i++)
		if (pframe_category(inner[i]) == CAT_USER) {
			f = inner[i];
			break;
		}
	if (!f->file)
		return xstrdup(inner[at]->name);
	name = strrchr(inner[at]->name, '.');
	return xasprintf("%s (%s:%d)", name ? name + 1 : inner[at]->name,
			 profile_display_file(f->file, false), f->line);
}

static struct stack_info *stack_info(struct watch *w, uint32_t id)
{
	const struct pstack *s = &w->p.stacks[id];
	const struct pframe **inner;
	struct stack_info *si;
	uint32_t first = 0, n, at = 0;
	uint64_t h = 0xcbf29ce484222325ull;

	if (id >= w->stacks_cap) {
		size_t old = w->stacks_cap;

		ALLOC_GROW(w->stacks, id + 1, w->stacks_cap);
		memset(w->stacks + old, 0, (w->stacks_cap - old) * sizeof(*w->stacks));
	}
	si = &w->stacks[id];
	if (si->known)
		return si;
	while (first < s->depth && is_root_frame(&w->p.frames[s->frames[first]]))
		first++;
	n = s->depth - first;
	inner = xcalloc(n ? n : 1, sizeof(*inner));
	for (uint32_t i = 0; i < n; i++) {
		const struct pframe *f = &w->p.frames[s->frames[s->depth - 1 - i]];

		inner[i] = f;
		h = stack_hash_str(stack_hash_str(h, f->name), f->file) ^ (uint32_t)f->line;
	}
	si->cls = wait_class_of_frames(inner, n, &at);
	si->where = where_of(inner, n, si->cls, at);
	si->id = h;
	si->first = first;
	si->depth = n;
	si->known = true;
	free(inner);
	return si;
}

/* A node's watcher knows each process's rank from its job identity
 * (SLURM_PROCID where torchrun set no RANK). */
static int rank_of(const struct watch *w, pid_t pid)
{
	const struct node_seen *ns;

	if (!w->slurm.node_job)
		return watch_read_rank(pid);
	ns = node_procs_find(w->np, pid);
	return ns && ns->id.rank >= 0 ? (int)ns->id.rank : -1;
}

static int proc_index(struct watch *w, pid_t pid, uint64_t now)
{
	int pi = stall_proc_find(&w->m, pid);
	char *command;

	if (pi >= 0) {
		w->m.p[pi].seen_ns = now;
		return pi;
	}
	command = watch_read_command(pid);
	pi = stall_proc_seen(&w->m, now, pid, watch_read_ppid(pid), rank_of(w, pid), command);
	free(command);
	return pi;
}

/* A sample into the flight recording, with its thread's own wait class
 * (stall_sample_class()). */
static void record_flight(struct watch *w, const struct pthread_info *th,
			  const struct stall_proc *sp, const struct pstack *s,
			  const struct stack_info *si, enum wait_class cls)
{
	uint64_t unix_ns = w->wr.unix_base_ns + (mono_ns() - w->wr.mono_base_ns);

	ALLOC_GROW(w->scratch, si->depth + 1, w->scratch_cap);
	for (uint32_t i = 0; i < si->depth; i++)
		w->scratch[i] = w->p.frames[s->frames[si->first + i]];
	flightrec_add(w->fr, unix_ns, th->pid, th->tid, th->name, sp->command, w->scratch,
		      si->depth, cls != WC_NONE ? wait_class_name(cls) : NULL);
}

static void on_sample(void *arg, uint32_t thread, uint32_t stack, uint64_t t_ns)
{
	struct watch *w = arg;
	const struct pthread_info *th = &w->p.threads[thread];
	struct stack_info *si = stack_info(w, stack);
	uint64_t now = mono_ns();
	int pi = proc_index(w, th->pid, now);

	(void)t_ns;
	stall_thread_seen(&w->m, pi, now, th->tid, th->name, si->id, si->cls, si->where);
	record_flight(w, th, &w->m.p[pi], &w->p.stacks[stack], si,
		      stall_sample_class(&w->m, pi, th->tid));
}

/* --- the fleets ----------------------------------------------------------- */

static void profile_start(struct watch *w)
{
	profile_init(&w->p, w->rate_hz);
	/* Neither runs nor per-thread counts: the observer sees each sample. */
	w->p.no_timeline = true;
	w->p.observe = on_sample;
	w->p.observe_arg = w;
}

static void stacks_forget(struct watch *w)
{
	if (!w->stacks)
		return;	/* none yet: --pid of a launcher forgets before the first */
	for (size_t i = 0; i < w->stacks_cap; i++)
		free(w->stacks[i].where);
	memset(w->stacks, 0, w->stacks_cap * sizeof(*w->stacks));
}

/* --pid i, watched with its tree, where no Python was found: read as
 * record reads a --pid.  Not Python, with Python below it: those are
 * watched (said).  With none yet, a launcher's are waited for (said once);
 * anything else is refused with record's line.  Returns 0, or
 * status_fail(EXIT_*) (said). */
static int root_not_python(struct watch *w, int i)
{
	struct sampler_opts so = { .rate_hz = w->rate_hz, .idle = true };
	struct fleet_opts fo = { 0 };
	struct fleet *probe;
	char err[512], *comm;
	int rc = fleet_why_none(w->fleets[i], err, sizeof(err));

	/* Python below it that cannot be read (another user's, too new):
	 * why, as at the end of record -s. */
	if (exit_code(rc) != EXIT_NOT_PYTHON) {
		errorf("%s", err);
		return rc;
	}
	rc = fleet_open(w->roots[i], &so, &fo, &w->p, &probe, err, sizeof(err));
	fleet_close(probe);
	if (rc == 0 || (exit_code(rc) == EXIT_NOT_PYTHON && follow_pid_below(w->roots[i], "watch")))
		return 0;
	if (exit_code(rc) == EXIT_NOT_PYTHON) {
		w->launcher[i] = watch_is_launcher(w->roots[i], &comm);
		if (w->launcher[i])
			errorf("watch: process %d (%s) runs no Python yet; watching for its "
			       "Python children", (int)w->roots[i], comm);
		free(comm);
		if (w->launcher[i])
			return 0;
	}
	errorf("%s", err);
	return rc;
}

/* --pid i, just opened: Python, Python below it (said, as record says
 * it), a launcher (said) or refused (said, status_fail(EXIT_*)). */
static int check_root(struct watch *w, int i)
{
	pid_t first;
	int argc;

	if (!fleet_nprocs_ever(w->fleets[i]))
		return root_not_python(w, i);
	fleet_python_cmdline(w->fleets[i], &first, &argc);
	if (first != w->roots[i])
		follow_pid_below(w->roots[i], "watch");
	return 0;
}

static int open_fleets(struct watch *w, bool first)
{
	struct sampler_opts so = { .rate_hz = w->rate_hz, .idle = true };
	struct fleet_opts fo = { .subprocesses = true, .walk_ns = WALK_NS,
				 .no_priority = w->no_priority };
	char err[512];
	int rc, opened = 0;

	if (w->slurm.node_job)
		node_procs_follow(w->np, &fo);
	for (int i = 0; i < w->nroots; i++) {
		rc = fleet_open(w->roots[i], &so, &fo, &w->p, &w->fleets[i], err, sizeof(err));
		if (rc < 0) {
			if (first)
				errorf("%s", err);
			if (first)
				return rc;
			continue;
		}
		if (first && !w->command && !w->slurm.node_job && (rc = check_root(w, i)) < 0)
			return rc;
		fleet_start(w->fleets[i], &w->clocks[i]);
		opened++;
	}
	return opened ? 0 : status_fail(EXIT_EXITED);
}

static void close_fleets(struct watch *w)
{
	for (int i = 0; i < w->nroots; i++) {
		fleet_close(w->fleets[i]);
		w->fleets[i] = NULL;
	}
}

/* Past the bound, a fresh profile: the fleets are opened anew on it (the
 * trees' processes are found again within a walk). */
static void bound_profile(struct watch *w)
{
	if (w->p.nstacks < PROFILE_MAX_STACKS && w->p.nthreads < PROFILE_MAX_THREADS)
		return;
	close_fleets(w);
	profile_free(&w->p);
	stacks_forget(w);
	profile_start(w);
	open_fleets(w, false);
}

/* A round of every fleet that is due, raised as record's are
 * (fleetprio.h).  Returns how many are still there. */
static int step_fleets(struct watch *w)
{
	bool round = false;
	int live = 0, rc;

	for (int i = 0; i < w->nroots; i++) {
		if (!w->fleets[i])
			continue;
		rc = fleet_step(w->fleets[i], &w->clocks[i]);
		round |= rc == FLEET_ROUND;
		if (rc < 0) {
			fleet_close(w->fleets[i]);
			w->fleets[i] = NULL;
			continue;
		}
		live++;
	}
	fleet_prio_after(&w->prio, round);
	return live;
}

static uint64_t next_due(const struct watch *w, uint64_t check_at)
{
	uint64_t due = check_at;

	for (int i = 0; i < w->nroots; i++)
		if (w->fleets[i] && fleet_due(w->fleets[i], &w->clocks[i]) < due)
			due = fleet_due(w->fleets[i], &w->clocks[i]);
	if (w->slurm.node_job && w->beat_at < due)
		due = w->beat_at;
	return due;
}

/* --- once a second -------------------------------------------------------- */

static void read_threads(struct watch *w, uint64_t now)
{
	for (int i = 0; i < w->m.np; i++) {
		struct stall_proc *p = &w->m.p[i];

		for (int k = 0; k < p->nt; k++) {
			struct stall_thread *t = &p->t[k];
			uint64_t cpu, args[6];
			long nr;
			bool timed;
			char state;

			if (proc_task_cpu(p->pid, t->tid, &state, &cpu) == 0)
				stall_thread_cpu(&w->m, i, t->tid, now, state, cpu);
			if (proc_task_syscall(p->pid, t->tid, &nr, args) == 0)
				stall_thread_syscall(&w->m, i, t->tid,
						     wait_class_of_syscall(nr, args, &timed), timed);
			else
				t->sys_known = false;
		}
	}
}

/* The asyncio tasks of a process that has not moved for a third of the
 * threshold (a second at least), read then and again each such time while
 * it stays so: a deadlock must last the threshold from the read that
 * first found it (an event loop's thread looks still between the steps of
 * tasks that move). */
static void look_at_tasks(struct watch *w, uint64_t now)
{
	struct snapshot_opts so = { .async = true };
	uint64_t look_ns = w->m.o.threshold_ns / 3 > CHECK_NS ? w->m.o.threshold_ns / 3 : CHECK_NS;

	for (int i = 0; i < w->m.np; i++) {
		struct stall_proc *p = &w->m.p[i];
		struct snapshot s;
		uint64_t since;
		char err[256], *why;

		since = stall_still_since(&w->m, i);
		if (!p->nt || now - since < look_ns ||
		    (p->async_at_ns > since && now - p->async_at_ns < look_ns))
			continue;
		p->async_at_ns = now;
		if (snapshot_take(p->pid, NULL, &so, &s, err, sizeof(err)) != 0)
			continue;
		why = stall_async_why(p, &s.tasks);
		stall_set_async(&w->m, i, why, now);
		free(why);
		snapshot_free(&s);
	}
}

static void check_progress(struct watch *w, uint64_t now)
{
	struct stat st;

	if (!w->progress || stat(w->progress, &st) != 0)
		return;
	if (!w->progress_seen || st.st_size != w->progress_st.st_size ||
	    st.st_mtim.tv_sec != w->progress_st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != w->progress_st.st_mtim.tv_nsec) {
		/* The first sight of a file that was there is no change. */
		if (w->progress_seen)
			stall_progress(&w->m, now);
		w->progress_st = st;
		w->progress_seen = true;
	}
}

void watch_hooks_reap(struct watch *w)
{
	size_t k = 0;

	for (size_t i = 0; i < w->nhooks; i++)
		if (waitpid(w->hooks[i], NULL, WNOHANG) == 0)
			w->hooks[k++] = w->hooks[i];
	w->nhooks = k;
}

void watch_hook_run(struct watch *w, const char *dir, const char *kind, pid_t stalled)
{
	pid_t pid = fork();

	if (pid < 0) {
		errorf("watch: cannot run --on-stall: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		char pidbuf[32];

		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)stalled);
		setenv("PYSTROBE_REPORT", dir, 1);
		setenv("PYSTROBE_STALL_KIND", kind, 1);
		if (stalled >= 0)
			setenv("PYSTROBE_STALL_PID", pidbuf, 1);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", w->on_stall, (char *)NULL);
		_exit(127);
	}
	ALLOC_GROW(w->hooks, w->nhooks + 1, w->hooks_cap);
	w->hooks[w->nhooks++] = pid;
}

static void say_stall(const struct watch *w, const char *dir, uint64_t now)
{
	time_t since = (time_t)((w->wr.unix_base_ns + (w->m.r.since_ns - w->wr.mono_base_ns)) /
				1000000000ull);
	struct tm tm;
	char when[32];

	localtime_r(&since, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	errorf("watch: %s since %s (%.0f s): %s; report: %s", stall_kind_name(w->m.r.kind), when,
	       (now - w->m.r.since_ns) / 1e9, w->m.r.why, dir ? dir : "not written");
}

static void judge(struct watch *w, uint64_t now)
{
	char *dir, *base;

	stall_forget(&w->m, now);
	read_threads(w, now);
	check_progress(w, now);
	look_at_tasks(w, now);
	switch (stall_judge(&w->m, now)) {
	case STALL_EV_NEW:
		if (w->slurm.node_job) {
			watch_node_stall(w, now);
			break;
		}
		dir = watch_report_write(&w->wr, &w->m, w->fr, now);
		say_stall(w, dir, now);
		if (dir && w->on_stall)
			watch_hook_run(w, dir, stall_kind_name(w->m.r.kind), w->m.stalled_pid);
		free(w->last_dir);
		w->last_dir = dir;
		break;
	case STALL_EV_MOVED:
		if (w->slurm.node_job) {
			watch_node_moved(w);
			break;
		}
		base = w->last_dir ? strrchr(w->last_dir, '/') : NULL;
		errorf("watch: the job moves again after %.0f s%s%s%s", w->m.r.moved_after_ns / 1e9,
		       base ? " (" : "", base ? base + 1 : "", base ? ")" : "");
		break;
	default:
		break;
	}
}

/* --- the command ---------------------------------------------------------- */

static void wait_until(uint64_t until)
{
	uint64_t now = mono_ns();
	struct timespec ts;

	if (until <= now || quit_requested || flight_requested)
		return;
	ts.tv_sec = (time_t)((until - now) / 1000000000ull);
	ts.tv_nsec = (long)((until - now) % 1000000000ull);
	/* A signal (stop, SIGUSR1) ends the wait: the loop looks. */
	ppoll(NULL, 0, &ts, NULL);
}

static void flight_now(struct watch *w)
{
	char *path;

	flight_requested = 0;
	path = watch_flight_write(&w->wr, w->fr);
	if (path)
		errorf("watch: wrote the flight recording of the last %.0f s: %s", w->keep_s, path);
	free(path);
}

/* No Python process in any tree NONE_FOUND_NS after the start: said
 * once.  Returns the exit status for --pid (nothing to watch; a --pid
 * that is not Python was refused at the start unless it is a launcher,
 * said then), or 0 with a command (a launcher may take its time). */
#define NONE_FOUND_NS (10 * CHECK_NS)

static int none_found(struct watch *w)
{
	char err[512] = "no Python process found";
	int rc = status_fail(EXIT_NOT_PYTHON);

	for (int i = 0; i < w->nroots; i++)
		if (w->fleets[i] && (fleet_nprocs_ever(w->fleets[i]) || w->launcher[i]))
			return 0;
	for (int i = 0; i < w->nroots; i++)
		if (w->fleets[i] && (rc = fleet_why_none(w->fleets[i], err, sizeof(err))))
			break;
	if (w->command) {
		errorf("watch: %s yet; watching on", err);
		return 0;
	}
	errorf("%s", err);
	return exit_code(rc);
}

/* What is due after the rounds: the first look for Python, a flight
 * recording asked for, the node's beat, and once a second the judgement.
 * Returns 0, or the exit status when there is nothing to watch. */
static int between_rounds(struct watch *w, uint64_t start, bool *looked, uint64_t *check_at)
{
	uint64_t now;
	int rc;

	if (!*looked && !w->slurm.node_job && mono_ns() - start >= NONE_FOUND_NS) {
		*looked = true;
		if ((rc = none_found(w)))
			return rc;
	}
	if (flight_requested)
		flight_now(w);
	now = mono_ns();
	if (w->slurm.node_job)
		watch_node_tick(w, now);
	if (now >= *check_at) {
		judge(w, now);
		watch_hooks_reap(w);
		bound_profile(w);
		*check_at = now + CHECK_NS;
	}
	return 0;
}

/* Returns 0, or the exit status when there is nothing to watch. */
static int watch_loop(struct watch *w)
{
	uint64_t start = mono_ns(), check_at = start + CHECK_NS;
	bool looked = false;
	int rc = 0;

	while (!quit_requested) {
		if (!step_fleets(w))
			break;
		/* The rest is not sampling: at the level watch was started
		 * with, however long a report takes. */
		fleet_prio_aside(&w->prio);
		rc = between_rounds(w, start, &looked, &check_at);
		fleet_prio_back(&w->prio);
		if (rc)
			break;
		wait_until(next_due(w, check_at));
	}
	fleet_prio_end(&w->prio);
	return rc;
}

static void say_start(const struct watch *w)
{
	struct strbuf sb = STRBUF_INIT;

	if (w->quiet)
		return;
	for (int i = 0; i < w->nroots; i++)
		sb_printf(&sb, "%s%d", i ? ", " : "", (int)w->roots[i]);
	errorf("watch: watching %s %s and %s subprocesses at %g Hz; a stall is %g s without "
	       "progress%s%s; reports go to %s", w->nroots == 1 ? "process" : "processes", sb.buf,
	       w->nroots == 1 ? "its" : "their", w->rate_hz, w->stall_s,
	       w->progress ? " of " : "", w->progress ? w->progress : "", w->dir);
	sb_release(&sb);
}

static void setup(struct watch *w)
{
	struct stall_opts so = {
		.threshold_ns = (uint64_t)(w->stall_s * 1e9),
		.progress = w->progress != NULL,
	};
	struct timespec ts;
	uint64_t now = mono_ns();

	w->interval_ns = sampler_interval_ns(w->rate_hz);
	/* Three rounds missed, or two seconds: a torn read is no exit. */
	so.gone_ns = 3 * w->interval_ns > 2000000000ull ? 3 * w->interval_ns : 2000000000ull;
	clock_gettime(CLOCK_REALTIME, &ts);
	stall_init(&w->m, &so, now);
	w->fr = flightrec_new((uint64_t)(w->keep_s * 1e9), (size_t)(w->keep_mb * (1 << 20)));
	flightrec_set_sampling(w->fr, w->interval_ns, true);
	w->wr = (struct watch_report){
		.dir = w->dir, .roots = w->roots, .nroots = w->nroots, .progress = w->progress,
		.threshold_ns = so.threshold_ns, .mono_base_ns = now,
		.unix_base_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
	};
	profile_start(w);
}

static void teardown(struct watch *w)
{
	close_fleets(w);
	profile_free(&w->p);
	stacks_forget(w);
	free(w->stacks);
	free(w->scratch);
	free(w->hooks);
	free(w->last_dir);
	stall_release(&w->m);
	flightrec_free(w->fr);
	if (w->np)
		node_procs_release(w->np);
	free(w->np);
}

int cmd_watch(int argc, char **argv)
{
	struct watch w;
	struct sigaction sa = { .sa_handler = on_usr1 };
	int rc, status = EXIT_OK;

	memset(&w, 0, sizeof(w));
	rc = parse_args(&w, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	if (!w.slurm.node_job && (rc = prepare_report_dir(&w)) < 0)
		return exit_code(rc);
	if (w.slurm.on)
		return watch_slurm(&w);
	if (w.slurm.node_job) {
		if ((rc = watch_node_setup(&w)) < 0)
			return exit_code(rc);
	} else {
		quit_on_signals();
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}
	if (w.command) {
		if (child_start(&w.child, w.command, "watch", -1, true, &quit_requested,
				&status) < 0)
			return quit_requested ? child_finish(&w.child, false) : status;
		w.roots[w.nroots++] = w.child.pid;
	}
	setup(&w);
	rc = open_fleets(&w, true);
	if (rc < 0) {
		status = w.child.pid ? child_finish(&w.child, true) : exit_code(rc);
		goto out;
	}
	say_start(&w);
	/* Non-zero with --pid only: nothing of it was Python. */
	status = watch_loop(&w);
	if (!status && w.child.pid) {
		status = child_finish(&w.child, quit_requested);
		if (!w.quiet) {
			struct strbuf sb = STRBUF_INIT;

			child_describe_end(&w.child, &sb);
			errorf("watch: the command %s", sb.buf);
			sb_release(&sb);
		}
	} else if (!status && !w.quiet && !quit_requested) {
		errorf("watch: every watched process has exited");
	}
out:
	teardown(&w);
	return status;
}
