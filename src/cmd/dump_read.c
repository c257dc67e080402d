/* What dump reads, shared with watch's reports: the processes of a tree
 * and a snapshot of each (dump_take_all()), with what to say of the ones
 * that cannot be read. */
#include "cmd/dump_read.h"
#include "util/escape.h"
#include "process/proc.h"
#include "cmd/launch.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The processes to show, parents before children: pid alone, or with
 * --subprocesses its tree, with each one's parent (0 for pid itself). */
int dump_list_processes(pid_t pid, bool tree, struct proc_node **out)
{
	int n;

	if (!tree) {
		*out = xcalloc(1, sizeof(**out));
		(*out)[0].pid = pid;
		return 1;
	}
	*out = xcalloc(PROCTREE_MAX, sizeof(**out));
	n = proctree_list(pid, *out, PROCTREE_MAX);
	if (n > 0)
		(*out)[0].ppid = 0;
	return n;
}

/* Did a process of the tree fail for a reason to pass over?  It is not
 * Python (a shell, a launcher), or has gone since the walk. */
static bool skippable(int rc)
{
	return is_fail(rc, EXIT_NOT_PYTHON) || is_fail(rc, EXIT_UNSUPPORTED) ||
	       is_fail(rc, EXIT_NO_PROCESS) || is_fail(rc, EXIT_EXITED);
}

/* A launcher (a shell, env, a pyenv shim, torchrun) is not Python, but the
 * Python it started is what the user is after: name it, so that the next
 * command is obvious. */
#define CHILDREN_NAMED 4

static void say_python_children(pid_t pid, const char *err)
{
	pid_t kids[CHILDREN_NAMED];
	int n = python_descendants(pid, kids, CHILDREN_NAMED);
	struct strbuf sb = STRBUF_INIT;

	if (n <= 0) {
		errorf("%s", err);
		return;
	}
	for (int i = 0; i < n; i++) {
		int argc = 0;
		char **argv = proc_cmdline(kids[i], &argc);

		sb_printf(&sb, "%s%d", i ? ", " : "", (int)kids[i]);
		if (argv && argc > 0) {
			/* The target's own words: escaped for the terminal. */
			sb_puts(&sb, " (");
			sb_add_escaped(&sb, argv[0], strnlen(argv[0], 256), ESC_TEXT);
			sb_putc(&sb, ')');
		}
		proc_cmdline_free(argv);
	}
	errorf("%s; its Python process%s: %s: give one to --pid, or add -s", err,
	       n == 1 ? "" : "es", sb.buf);
	sb_release(&sb);
}

/* Read every process; returns how many were read, or status_fail(EXIT_*)
 * when the target itself (or, with a tree, every process) failed. */
int dump_take_all(const struct proc_node *procs, int n, const struct snapshot_opts *so,
		  bool tree, struct snapshot *snaps)
{
	char err[512], first_err[512] = "";
	int got = 0, first_rc = 0;

	for (int i = 0; i < n; i++) {
		int rc = snapshot_take(procs[i].pid, NULL, so, &snaps[got], err, sizeof(err));

		if (rc == 0) {
			got++;
			continue;
		}
		/* The target itself unreadable for a reason of its own
		 * (permission, version): the same answer as without -s. */
		if (!tree || (i == 0 && !skippable(rc))) {
			if (is_fail(rc, EXIT_NOT_PYTHON))
				say_python_children(procs[i].pid, err);
			else
				errorf("%s", err);
			return rc;
		}
		/* Not being allowed to read one is worth saying; the others
		 * are the ordinary make-up of a process tree. */
		if (!skippable(rc))
			errorf("dump: process %d: %s", (int)procs[i].pid, err);
		if (!first_rc) {
			first_rc = rc;
			snprintf(first_err, sizeof(first_err), "%s", err);
		}
	}
	if (!got) {
		errorf("dump: no Python process in the tree of %d (%s)", (int)procs[0].pid,
		       first_err);
		return first_rc ? first_rc : status_fail(EXIT_NOT_PYTHON);
	}
	return got;
}
