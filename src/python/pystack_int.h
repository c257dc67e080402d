/* The insides of the interpreter walk, shared by the files that make it:
 * pycode.c (code objects: names, lines, locals), pyframe.c (the frame
 * chain, one thread's stack, frames decoded one at a time), pystitch.c (one
 * OS thread's thread states in several interpreters, in call order),
 * pyinterp.c (the interpreters, their GIL and GC state) and pythread.c
 * (thread states, threads, their names and ids).  Internal to src/python:
 * callers see only pystack.h.
 *
 * _PyRuntime -> interpreter -> thread states -> frames -> code objects ->
 * names and lines.  Everything read comes from another process that keeps
 * running (with --nonblocking) or may be corrupt, so every pointer is
 * checked by reading through it, every count is bounded, and chains are
 * checked for cycles.  Version differences come only from the layout table.
 */
#ifndef PYSTROBE_PYSTACK_INT_H
#define PYSTROBE_PYSTACK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pystack.h"
#include "interp/linetable.h"
#include "python/pyobj.h"

#define NAME_MAX_CHARS 4096

struct walk {
	struct pyctx c;
	const struct pyinterp *pi;
	const struct walk_opts *o;
	uint64_t code_type;	/* PyCode_Type once seen (code_type_check()) */
	int frames_left;	/* for the whole walk: corrupt memory can
				 * otherwise make one dump take hours */
	uint64_t table_addr;	/* the last line table decoded, kept: frames */
	int table_first;	/* of one code object (recursion) share it */
	bool have_table;
	struct lt_ranges ranges;
	uint64_t table_work;	/* line-table bytes decoded so far */
};

/* Most frames one dump decodes, over all threads. */
#define WALK_FRAME_BUDGET 65536

/* Brent's cycle detection over a chain of addresses. */
struct cycle {
	uint64_t tortoise;
	unsigned power, lam;
};

static inline void cycle_init(struct cycle *cy, uint64_t first)
{
	cy->tortoise = first;
	cy->power = 1;
	cy->lam = 0;
}

static inline bool cycle_step(struct cycle *cy, uint64_t next)
{
	if (next == cy->tortoise)
		return true;
	if (++cy->lam == cy->power) {
		cy->tortoise = next;
		cy->power *= 2;
		cy->lam = 0;
	}
	return false;
}

/* --- pycode.c ------------------------------------------------------------- */

/* Fill pf from the code object at `code`; lasti as the frame stores it. */
int read_code(struct walk *w, uint64_t code, uint64_t lasti, uint64_t frame,
	      struct py_frame *pf);

/* --- pyframe.c ------------------------------------------------------------ */

/* Raw fields of one frame, whatever the model. */
int read_raw_frame(struct mem *m, const struct py_layout *L, uint64_t frame,
		   struct raw_frame *rf);

/* One OS thread: its thread states ts[0..ts->nparts), innermost first.  A
 * part that ends early (an error, the depth limit) ends the stack there:
 * frames below a gap would be shown as called from the wrong place. */
void walk_thread(struct walk *w, const struct py_tstate *ts, struct py_thread *t);

/* --- pystitch.c ----------------------------------------------------------- */

/* Gather each OS thread's thread states, listed interpreter by interpreter
 * (ts[0..nmain) the main one's), into runs in call order.  The main
 * interpreter lists an OS thread once, so only the others' thread states
 * are looked up: about n * (n - nmain) comparisons. */
void pystack_stitch(struct mem *m, const struct py_layout *L, struct py_tstate *ts,
		    int n, int nmain);

/* --- pyinterp.c ----------------------------------------------------------- */

/* The interpreters as _PyRuntime lists them: the newest first, the main
 * one last.  Returns their count (0 before the first is made), or a
 * negative errno when the list's head is unreadable.  The chain comes from
 * the target: an address seen twice ends it, so does max. */
int list_interps(struct mem *m, const struct pyinterp *pi, uint64_t *out, int max);

/* This interpreter's GIL as one read (its fields are neighbours: a copy
 * of them is of one moment): who holds it (0: nobody), who took it last,
 * and how many times a thread other than the last holder has taken it.
 * Before 3.12 the one GIL is in _PyRuntime; since, each interpreter
 * points at its own or at the main interpreter's. */
struct gil_state {
	uint64_t holder, last, switches;
	uint64_t holder_at;	/* where last was read */
	bool counted;		/* switches (and last) were read */
};

void read_gil(struct mem *m, const struct pyinterp *pi, uint64_t interp,
	      struct gil_state *g);

/* Is a collection under way in this interpreter (the process's one GC
 * before 3.9)?  Any value but 0 and 1 is not the int CPython keeps
 * there: read as no.  *at: where the flag was read. */
bool gc_running(struct mem *m, const struct pyinterp *pi, uint64_t interp, uint64_t *at);

/* Why there is no interpreter to read: not made yet, or torn down. */
int no_interp(struct mem *m, const struct pyinterp *pi, char *err, size_t errlen);

#endif
