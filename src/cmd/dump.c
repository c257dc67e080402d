/* pystrobe dump: every thread's stack, now. */
#include "cmd/cmd.h"
#include "cmd/dump_format.h"
#include "cmd/dump_read.h"
#include "process/proctree.h"
#include "process/selfstop.h"
#include "cmd/snapshot.h"
#include "process/core.h"
#include "native/dbghint.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char dump_usage[] =
	"usage: pystrobe dump [options] --pid PID\n"
	"       pystrobe dump [options] --core CORE [--executable PATH] [--root DIR]\n"
	"\n"
	"Print the Python stack of every thread of a running process, or of the\n"
	"process a core file was taken of.\n"
	"\n"
	"  -p, --pid PID      the process to read\n"
	"      --core CORE    read a core file (gcore, a crash) instead\n"
	"      --executable PATH  the core's executable is at PATH\n"
	"      --root DIR     the files the core's process mapped are under DIR\n"
	"                     (a core from a container or chroot)\n"
	"  -j, --json         one JSON document instead of text\n"
	"  -l, --locals[=deep] show arguments and local variables of each frame;\n"
	"                     deep: lists, tuples, dicts and sets with their first items\n"
	"  -n, --native       also show native (C/C++) frames, merged with the Python ones\n"
	"      --no-source    without the line of source under each frame\n"
	"      --full-filenames  whole file paths in text (JSON always has them)\n"
	"      --full-names   whole C++ names in text, with template arguments and\n"
	"                     parameters (JSON always has them)\n"
	"      --nonblocking  read without pausing the process (stacks may be torn)\n"
	"  -s, --subprocesses also every Python process started by it, parents\n"
	"                     before children\n"
	"  -g, --group        threads (and processes) with the same stack once, with\n"
	"                     their count and ids, the most common first\n"
	"  -a, --async        also every asyncio task: its coroutine stack, what it\n"
	"                     awaits and who awaits it, deadlock cycles (3.11+); with\n"
	"                     --group, tasks that wait the same way once, with their count\n"
	"  -h, --help         show this help\n";

struct dump_args {
	struct snapshot_opts so;
	struct dump_opts o;
	struct core_opts core;
	bool tree;
	int pid;
};

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

/* Returns 0, 1 after --help, or -1 on a bad command line (said). */
static int parse_args(struct dump_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "locals", optional_argument, NULL, 'l' },
		{ "native", no_argument, NULL, 'n' },
		{ "nonblocking", no_argument, NULL, 'N' },
		{ "subprocesses", no_argument, NULL, 's' },
		{ "group", no_argument, NULL, 'g' },
		{ "async", no_argument, NULL, 'a' },
		{ "no-source", no_argument, NULL, 'S' },
		{ "full-filenames", no_argument, NULL, 'F' },
		{ "full-names", no_argument, NULL, 'M' },
		{ "core", required_argument, NULL, 'C' },
		{ "executable", required_argument, NULL, 'E' },
		{ "root", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conflict;
	int c;

	optind = 1;
	opterr = 0;	/* one line of our own instead of getopt's */
	/* '+': stop at the first word that is no option, so that the one
	 * before it can be told (--locals deep). */
	while ((c = getopt_long(argc, argv, "+:p:jlnsgah", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!(a->pid = parse_pid(optarg)))
				return usage_error("dump", "invalid pid '%s'", optarg);
			break;
		case 'j': a->o.json = true; break;
		case 'g': a->o.group = true; break;
		case 'a': a->o.async = a->so.async = true; break;
		case 'S': a->o.no_source = true; break;
		case 'F': a->o.full_filenames = true; break;
		case 'M': a->o.full_names = true; break;
		case 'l':
			a->so.locals = true;
			if (optarg && strcmp(optarg, "deep") != 0)
				return usage_error("dump", "--locals takes no value or 'deep', not '%s'",
						   optarg);
			a->so.deep_locals = optarg != NULL;
			break;
		case 'n': a->so.native = true; break;
		case 'N': a->so.nonblocking = true; break;
		case 's': a->tree = true; break;
		case 'C': a->core.path = optarg; break;
		case 'E': a->core.exe = optarg; break;
		case 'R': a->core.root = optarg; break;
		case 'h':
			fputs(dump_usage, stdout);
			return 1;
		default:
			return usage_getopt("dump", c, argv, longopts);
		}
	}
	conflict = core_conflict(a);
	if (conflict)
		return usage_error("dump", "%s", conflict);
	if (optind < argc)
		return usage_extra("dump", argv, optind, longopts, !a->pid && !a->core.path);
	if (!a->pid && !a->core.path)
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
		return rc > 0 ? EXIT_OK : EXIT_USAGE;
	if (a.core.path)
		return dump_core(&a);
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
