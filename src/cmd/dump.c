/* pystrobe dump: every thread's stack, now. */
#include "cmd/cmd.h"
#include "cmd/dump_format.h"
#include "cmd/dump_read.h"
#include "cmd/dump_node.h"
#include "cmd/dump_slurm.h"
#include "cmd/target_opts.h"
#include "process/proctree.h"
#include "process/selfstop.h"
#include "cmd/snapshot.h"
#include "process/core.h"
#include "native/dbghint.h"
#include "util/util.h"

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dump_args {
	struct snapshot_opts so;
	struct dump_opts o;
	struct core_opts core;
	bool tree;
	pid_t pid;
	const char *slurm_node;	/* --slurm-node=JOB[.STEP] */
	double timeout;		/* 0: not given */
	struct slurm_opts slurm;	/* --slurm, --pystrobe */
};

/* What --slurm cannot go with, or NULL. */
static const char *slurm_conflict(const struct dump_args *a)
{
	if (!a->slurm.on)
		return a->slurm.pystrobe ? "--pystrobe goes with --slurm" : NULL;
	if (a->pid || a->core.path || a->tree || a->slurm_node)
		return "--slurm reads every rank of a job: not with --pid, --core, "
		       "--subprocesses or --slurm-node";
	if (a->o.group)
		return "--slurm groups the whole job already: --group is not needed";
	return NULL;
}

/* What --slurm-node and --timeout cannot go with, or NULL. */
static const char *node_conflict(const struct dump_args *a)
{
	char job[32], step[32];

	if (!a->slurm_node)
		return a->timeout && !a->slurm.on ? "--timeout goes with --slurm" : NULL;
	if (a->pid || a->core.path || a->tree)
		return "--slurm-node reads the job's processes: not with --pid, --core or "
		       "--subprocesses";
	if (dump_node_spec(a->slurm_node, job, sizeof(job), step, sizeof(step)) < 0)
		return "--slurm-node takes JOB or JOB.STEP (digits, then a step)";
	return NULL;
}

/* What --core cannot go with, or NULL. */
static const char *core_conflict(const struct dump_args *a)
{
	if (!a->core.path)
		return a->core.exe || a->core.root ? "--executable and --root go with --core" : NULL;
	if (a->pid)
		return "--pid and --core cannot be used together";
	if (a->tree)
		return "--subprocesses cannot be used with --core";
	if (a->so.nonblocking)
		return "--nonblocking cannot be used with --core";
	return NULL;
}

static int locals(void *dest, const char *arg, const char *cmd)
{
	struct dump_args *a = dest;

	a->so.locals = true;
	if (arg && strcmp(arg, "deep") != 0)
		return usage_error(cmd, "--locals takes no value or 'deep', not '%s'", arg);
	a->so.deep_locals = arg != NULL;
	return 0;
}

/* The tasks are read (the snapshot) and shown (the format). */
static int async(void *dest, const char *arg, const char *cmd)
{
	struct dump_args *a = dest;

	(void)arg;
	(void)cmd;
	a->o.async = a->so.async = true;
	return 0;
}

#define AT(member) offsetof(struct dump_args, member)

/* Two names too long for the column have had two spaces after them in
 * --help: their help begins with the second. */
static const struct opt dump_opts[] = {
	OPT_PID("pid", 'p', "the process to read", AT(pid)),
	OPT_STRING("core", 0, "CORE", "read a core file (gcore, a crash) instead", AT(core.path)),
	OPT_STRING("executable", 0, "PATH", " the core's executable is at PATH", AT(core.exe)),
	OPT_STRING("root", 0, "DIR",
		"the files the core's process mapped are under DIR\n"
		"(a core from a container or chroot)", AT(core.root)),
	OPT_BOOL("json", 'j', "one JSON document instead of text", AT(o.json)),
	OPT_CALL("locals", 'l', OPT_OPTIONAL_ARG, "deep",
		"show arguments and local variables of each frame;\n"
		"deep: lists, tuples, dicts and sets with their first items", locals),
	OPT_BOOL("native", 'n',
		"also show native (C/C++) frames, merged with the Python ones", AT(so.native)),
	OPT_BOOL("no-source", 0, "without the line of source under each frame", AT(o.no_source)),
	OPT_BOOL("full-filenames", 0,
		" whole file paths in text (JSON always has them)", AT(o.full_filenames)),
	OPT_BOOL("full-names", 0,
		"whole C++ names in text, with template arguments and\n"
		"parameters (JSON always has them)", AT(o.full_names)),
	OPT_BOOL("nonblocking", 0,
		"read without pausing the process (stacks may be torn)", AT(so.nonblocking)),
	OPT_BOOL("subprocesses", 's',
		"also every Python process started by it, parents\n"
		"before children", AT(tree)),
	OPT_BOOL("group", 'g',
		"threads (and processes) with the same stack once, with\n"
		"their count and ids, the most common first", AT(o.group)),
	OPT_CALL("async", 'a', OPT_NO_ARG, NULL,
		"also every asyncio task: its coroutine stack, what it\n"
		"awaits and who awaits it, deadlock cycles (3.11+); with\n"
		"--group, tasks that wait the same way once, with their count", async),
	OPT_CALL_AT("slurm", 0, OPT_OPTIONAL_ARG, "JOB",
		"every rank of Slurm job JOB[.STEP], on every node,\n"
		"grouped across the job (alone: this allocation's)", AT(slurm), slurm_opt),
	OPT_STRING("pystrobe", 0, "PATH",
		" with --slurm: the pystrobe the nodes run (default:\n"
		"this one; the static binary is sent with srun --bcast)", AT(slurm.pystrobe)),
	OPT_NUMBER("timeout", 0, "SECS",
		" with --slurm: how long the nodes may take (default\n"
		"20); with --slurm-node, read no process after SECS\n"
		"(default 10)", AT(timeout), 0.1, 3600, "must be between 0.1 and 3600"),
	OPT_STRING("slurm-node", 0, "JOB",
		" what --slurm runs on each node: its processes\n"
		"of JOB[.STEP], as framed JSON", AT(slurm_node)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table dump_options = {
	.cmd = "dump",
	.head = "usage: pystrobe dump [options] --pid PID\n"
		"       pystrobe dump [options] --core CORE [--executable PATH] [--root DIR]\n"
		"\n"
		"Print the Python stack of every thread of a running process, or of the\n"
		"process a core file was taken of.\n"
		"\n",
	.opts = dump_opts,
	.column = 21,
	/* The first word that is no option ends them, so that the one before
	 * it can be told (--locals deep). */
	.stop_at_command = true,
};

/* Returns 0, 1 after --help, or status_fail(EXIT_USAGE) on a bad command
 * line (said). */
static int parse_args(struct dump_args *a, int argc, char **argv)
{
	const char *conflict;
	int rc;

	if ((rc = opt_parse(&dump_options, a, argc, argv)) != 0)
		return rc;
	conflict = slurm_conflict(a);
	if (!conflict)
		conflict = node_conflict(a);
	if (!conflict)
		conflict = core_conflict(a);
	if (conflict)
		return usage_error("dump", "%s", conflict);
	if ((rc = slurm_id_apart(&a->slurm, "dump", argc, argv)) < 0)
		return rc;
	if (optind < argc)
		return opt_usage_extra(&dump_options, argv, optind, !a->pid && !a->core.path);
	if (!a->pid && !a->core.path && !a->slurm_node && !a->slurm.on)
		return usage_error("dump", "--pid PID or --core CORE is required (see pystrobe "
				   "dump --help)");
	if (a->so.native && a->so.nonblocking)
		return usage_error("dump", "--native needs the threads paused: it cannot be "
				   "used with --nonblocking");
	return 0;
}

static bool seen_name(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* After the dump, one note on stderr for each object whose frames read
 * lib+0xOFFSET for want of symbols: how to get them (dbghint.h). */
static void symbol_hints(const struct snapshot *snaps, int n)
{
	char **seen = NULL, note[1024];
	size_t nseen = 0, cap = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; snaps[i].mixed && k < snaps[i].nthreads; k++)
			for (int j = 0; j < snaps[i].mixed[k].nframes; j++) {
				const struct mixed_frame *f = &snaps[i].mixed[k].frames[j];

				if (!f->native || f->function || !f->library ||
				    seen_name(seen, nseen, f->library))
					continue;
				ALLOC_GROW(seen, nseen + 1, cap);
				seen[nseen++] = f->library;
				if (dbg_hint(snaps[i].pid, f->library, note, sizeof(note)))
					errorf("%s", note);
			}
	free(seen);
}

/* Every note of a core on stderr, one line each. */
static void core_notes_out(const struct snapshot *s)
{
	for (int i = 0; i < s->nnotes; i++)
		errorf("note: %s", s->notes[i]);
}

static int dump_core(struct dump_args *a)
{
	struct snapshot snap;
	struct strbuf out = STRBUF_INIT;
	char err[1024];
	int rc, status = EXIT_OK;

	rc = snapshot_take(0, &a->core, &a->so, &snap, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		return exit_code(rc);
	}
	a->o.locals = a->so.locals;
	dump_format_all(&out, &snap, 1, NULL, 0, &a->o);
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output");
		status = EXIT_ERROR;
	}
	core_notes_out(&snap);
	if (status == EXIT_OK && snap.incomplete)
		status = EXIT_CORE_INCOMPLETE;
	snapshot_free(&snap);
	sb_release(&out);
	return status;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args a = { 0 };
	struct snapshot *snaps = NULL;
	struct proc_node *procs = NULL;
	struct strbuf out = STRBUF_INIT;
	int rc, n, nprocs, status = EXIT_OK;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	if (a.core.path)
		return dump_core(&a);
	if (a.slurm_node)
		return dump_node(a.slurm_node, a.timeout ? a.timeout : NODE_TIMEOUT_DEFAULT, &a.so,
				 &a.o);
	if (a.slurm.on) {
		a.slurm.timeout_s = a.timeout ? a.timeout : SLURM_TIMEOUT_S;
		return dump_slurm(&a.slurm, &a.o, &a.so);
	}
	/* Ctrl-Z lets the threads go before pystrobe stops. */
	selfstop_on_signals();
	nprocs = dump_list_processes(a.pid, a.tree, &procs);
	if (nprocs == 0) {
		errorf("no such process: %d (%s)", a.pid, NO_PROCESS_HINT);
		free(procs);
		return EXIT_NO_PROCESS;
	}
	snaps = xcalloc(nprocs, sizeof(*snaps));
	n = dump_take_all(procs, nprocs, &a.so, a.tree, snaps);
	if (n < 0) {
		status = exit_code(n);
		goto out;
	}
	a.o.locals = a.so.locals;
	dump_format_all(&out, snaps, n, procs, nprocs, &a.o);
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output");
		status = EXIT_ERROR;
	}
	symbol_hints(snaps, n);
out:
	for (int i = 0; i < (n > 0 ? n : 0); i++)
		snapshot_free(&snaps[i]);
	free(snaps);
	free(procs);
	sb_release(&out);
	return status;
}
