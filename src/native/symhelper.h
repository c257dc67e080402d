/* Symbolization in a helper process without privileges, for a target
 * whose files come from a root that is not ours (a container's): they are
 * hostile input, and pystrobe often runs as root.
 *
 * The helper is forked when the symbolizer is made, drops to an
 * unprivileged user (nobody, or PYSTROBE_HELPER_UID), and runs the same
 * symbolizer (libelf, libdw) over files that pystrobe opens for it as root
 * and passes over a socket, one at a time, as it asks for them: only the
 * process's maps, memory and map_files, files inside its root (resolved
 * as in that root, never escaping it) and debug files beneath our
 * /usr/lib/debug.  It answers pc -> function, object, offset, file, line.
 *
 * The helper dies with pystrobe (PR_SET_PDEATHSIG) and every wait for it
 * has a deadline; when it dies or stops answering, the caller names
 * frames lib+0xOFFSET from the maps alone.
 */
#ifndef PYSTROBE_SYMHELPER_H
#define PYSTROBE_SYMHELPER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct symhelper;

/* Should pid's files be parsed in a helper?  As root, when the process's
 * root is not ours; PYSTROBE_SYMBOLIZE_HELPER=never or =always (as root)
 * decides otherwise (tests and measurements). */
bool symhelper_wanted(pid_t pid);

/* The helper is this binary run as `pystrobe SYMHELPER_ARG SOCK PARENT PID
 * FLAGS`: main() hands such a command line to symhelper_main(), which
 * returns only on bad arguments. */
#define SYMHELPER_ARG "--internal-symbol-helper"
int symhelper_main(int argc, char **argv);

/* A running helper that reported the unprivileged ids it runs with, or
 * NULL (with the reason in err). */
struct symhelper *symhelper_start(pid_t pid, unsigned flags, char *err, size_t errlen);
void symhelper_stop(struct symhelper *h);
pid_t symhelper_pid(const struct symhelper *h);

struct symhelper_answer {
	char *function, *path, *file;	/* new strings, or NULL */
	uint64_t offset;
	int line;
};

/* What is at pc, as symbolize() says; 0, or -1 when the helper is gone,
 * broken or too slow (then stop it: it is no use any more). */
int symhelper_lookup(struct symhelper *h, uint64_t pc, bool exact, struct symhelper_answer *a,
		     char *err, size_t errlen);

/* symbolizer_refresh() in the helper: 1 when the maps changed, 0 when
 * not, -1 as above. */
int symhelper_refresh(struct symhelper *h, char *err, size_t errlen);

/* Is the helper process still there?  Without asking it anything: it is
 * pystrobe's child, so its exit is seen by waitpid() (or it was reaped by
 * a wait for any child). */
bool symhelper_alive(struct symhelper *h);

#endif
