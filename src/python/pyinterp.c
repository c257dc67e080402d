/* The interpreters: their list in _PyRuntime, each one's GIL and garbage
 * collector state, and why there is none. */
#include "python/pystack_int.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool addr_listed(const uint64_t *addrs, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (addrs[i] == addr)
			return true;
	return false;
}

int list_interps(struct mem *m, const struct pyinterp *pi, uint64_t *out, int max)
{
	const struct py_layout *L = &pi->layout;
	uint64_t interp;
	int n = 0, rc;

	rc = mem_read_u64(m, pi->runtime + L->runtime.interpreters_head, &interp);
	if (rc < 0)
		return rc;
	while (interp && n < max && !addr_listed(out, n, interp)) {
		out[n++] = interp;
		if (mem_read_u64(m, interp + L->interp.next, &interp) < 0)
			break;
	}
	return n;
}

void read_gil(struct mem *m, const struct pyinterp *pi, uint64_t interp,
	      struct gil_state *g)
{
	const struct py_layout *L = &pi->layout;
	uint32_t offs[3];
	uint64_t base = 0;
	uint8_t b[64];
	uint32_t from, size;

	memset(g, 0, sizeof(*g));
	/* A free-threaded build runs its threads without the GIL: nobody
	 * holds it, and its switch count never says that a thread did not
	 * run (sample_stack.c's unchanged stacks). */
	if (L->free_threaded)
		return;
	if (L->runtime.gil_locked != NONE) {
		base = pi->runtime;
		offs[0] = L->runtime.gil_locked;
		offs[1] = L->runtime.gil_holder;
		offs[2] = L->runtime.gil_switches;
	} else if (mem_read_u64(m, interp + L->interp.gil_ptr, &base) < 0 || !base) {
		return;
	} else {
		offs[0] = L->gil.locked;
		offs[1] = L->gil.holder;
		offs[2] = L->gil.switches;
	}
	from = offs[0] < offs[1] ? offs[0] : offs[1];
	size = layout_span(offs, 3);
	if (size - from > sizeof(b) || mem_read(m, base + from, b, size - from) < 0)
		return;
	g->last = field_u64(b, offs[1] - from);
	g->holder_at = base + offs[1];
	g->holder = field_i32(b, offs[0] - from) ? g->last : 0;
	if (offs[2] != NONE) {
		g->switches = field_u64(b, offs[2] - from);
		g->counted = true;
	}
}

bool gc_running(struct mem *m, const struct pyinterp *pi, uint64_t interp, uint64_t *at)
{
	const struct py_layout *L = &pi->layout;
	int32_t collecting = 0;
	int rc = -ENOENT;

	*at = 0;
	if (L->interp.gc_collecting != NONE)
		*at = interp + L->interp.gc_collecting;
	else if (L->runtime.gc_collecting != NONE)
		*at = pi->runtime + L->runtime.gc_collecting;
	if (*at)
		rc = mem_read_i32(m, *at, &collecting);
	return rc == 0 && collecting == 1;
}

int no_interp(struct mem *m, const struct pyinterp *pi, char *err, size_t errlen)
{
	uint64_t fin = 0;

	/* Py_Finalize has torn the interpreter down: the process is on its
	 * way out, which is not the same as not started yet. */
	if (mem_read_u64(m, pi->runtime + pi->layout.runtime.finalizing, &fin) == 0 && fin) {
		snprintf(err, errlen, "the interpreter has shut down");
		return status_fail(EXIT_EXITED);
	}
	snprintf(err, errlen, "the interpreter is not initialised yet");
	return status_fail(EXIT_BAD_STATE);
}
