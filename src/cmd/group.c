/* pystrobe group: the job-wide view of many `dump --json` files.
 *
 * Where Slurm is not the transport (kubectl exec, pdsh, ssh), each host
 * runs `pystrobe dump --json` and this groups what they wrote, exactly as
 * `dump --slurm` groups its nodes' replies (src/cluster/).
 *
 * A file that does not read (missing, not JSON, not a dump, cut short)
 * is named on stderr with the byte where it went wrong, listed as a node
 * that did not answer, and the rest is still shown: at 500 hosts one of
 * them is always broken, and the other 499 are what the user came for.
 * The exit status then says the view is incomplete (EXIT_BAD_INPUT). */
#include "cluster/jobdump.h"
#include "cluster/jobgroup.h"
#include "cluster/jobview.h"
#include "cmd/cmd.h"
#include "util/jsonread.h"
#include "util/mapfile.h"
#include "util/status.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct group_args {
	bool json;
	struct jobview_opts view;
};

#define AT(member) offsetof(struct group_args, member)

static const struct opt group_opts[] = {
	OPT_BOOL("json", 'j', "one JSON document: every process with its node and\n"
		 "rank, the groups and the verdict", AT(json)),
	OPT_BOOL("no-source", 0, "without the line of source under each frame",
		 AT(view.no_source)),
	OPT_BOOL("full-filenames", 0, "whole file paths in text (JSON always has them)",
		 AT(view.full_filenames)),
	OPT_BOOL("full-names", 0, "whole C++ names in text (JSON always has them)",
		 AT(view.full_names)),
	OPT_HELP("show this help"),
	OPT_END,
};

const struct opt_table group_options = {
	.cmd = "group",
	.head = "usage: pystrobe group [options] FILE...\n"
		"\n"
		"Group the stacks of many `pystrobe dump --json` files (one per host, from\n"
		"kubectl exec, pdsh or ssh) across the whole job: identical stacks once, with\n"
		"the ranks and nodes that have them, the odd ranks first and named.  A FILE\n"
		"may hold several dumps one after another; - reads standard input.\n"
		"\n",
	.opts = group_opts,
	.column = 25,
	.tail = "\n"
		"  pdsh -N -w 'node[1-4]' pystrobe dump --json --pid PID | pystrobe group -\n",
	/* Not stop_at_command: files may come first. */
};

/* One file into jd; 0, or status_fail(EXIT_BAD_INPUT) after saying why
 * (and listing it as a node that did not answer). */
static int read_one(struct job_dump *jd, const char *path, struct mapfile *mf)
{
	bool is_stdin = !strcmp(path, "-");
	const char *name = is_stdin ? "standard input" : path;
	int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	struct jobdump_mark mark;
	char err[256];
	int rc = fd < 0 ? -errno : mapfile_load(mf, fd, JSON_MAX_INPUT + 1);

	jobdump_mark(jd, &mark);
	if (rc < 0)
		snprintf(err, sizeof(err), "cannot read it: %s", strerror(-rc));
	else
		rc = jobdump_add_json(jd, mf->text, mf->len, name, err, sizeof(err));
	if (fd >= 0 && mapfile_shrank(mf)) {
		jobdump_undo(jd, &mark);
		rc = -EINVAL;
		snprintf(err, sizeof(err), "it was cut shorter while being read (is something "
			 "still writing it?): nothing of it is shown; run again once it is written");
	}
	if (fd >= 0)
		mapfile_unload(mf);
	if (fd > 0)
		close(fd);
	if (rc == 0)
		return 0;
	/* Offsets are the parser's: the file is not the JSON dump writes. */
	errorf("group: %s: %s%s", name, err, strncmp(err, "byte ", 5) ? "" :
	       " (not a file of `pystrobe dump --json`, or one cut short)");
	jobdump_node_error(jd, name, err);
	return status_fail(EXIT_BAD_INPUT);
}

static int show(const struct job_dump *jd, const struct group_args *a)
{
	struct job_grouping gr;
	struct strbuf out = STRBUF_INIT;
	int rc = 0;

	jobgroup_build(&gr, jd);
	if (a->json)
		jobview_json(&out, &gr);
	else
		jobview_text(&out, &gr, &a->view);
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output");
		rc = status_fail(EXIT_ERROR);
	}
	sb_release(&out);
	jobgroup_release(&gr);
	return rc;
}

int cmd_group(int argc, char **argv)
{
	struct group_args a = { 0 };
	struct job_dump jd = JOB_DUMP_INIT;
	struct mapfile mf = MAPFILE_INIT;
	int rc, bad = 0, nread = 0;

	if ((rc = opt_parse(&group_options, &a, argc, argv)) != 0)
		return rc > 0 ? EXIT_OK : exit_code(rc);
	if (optind >= argc)
		return exit_code(usage_error("group", "give the dump --json files to group "
					     "(- for standard input; see pystrobe group --help)"));
	for (int i = optind; i < argc; i++) {
		if (read_one(&jd, argv[i], &mf) < 0)
			bad++;
		else
			nread++;
	}
	mapfile_release(&mf);
	rc = nread ? show(&jd, &a) : 0;
	jobdump_release(&jd);
	if (rc < 0)
		return exit_code(rc);
	return bad ? EXIT_BAD_INPUT : EXIT_OK;
}
