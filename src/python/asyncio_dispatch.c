/* Which asyncio reader reads a target: the 3.11-3.13 one (asyncio_legacy.c)
 * where its version has a verified task layout (asyncio_legacy_version(),
 * which asyncio_locate() records in A->legacy.on), else the 3.14+ one
 * (asyncio314.c).  Nothing else is decided here.
 */
#include "python/asyncio.h"
#include "python/asyncio_legacy.h"
#include "python/asyncio_int.h"
#include "util/util.h"

#include <stdio.h>

int asyncio_locate(const struct locate_src *src, struct mem *m, const struct pyinterp *pi,
		   struct asyncio_layout *A, char *err, size_t errlen)
{
	int ft = pi->layout.free_threaded;

	if (asyncio_legacy_version(pi->minor, ft, A))
		return asyncio_legacy_locate(m, pi, src->what, A, err, errlen);
	/* A free-threaded build's task and generator objects have a longer
	 * header: one without a verified layout is refused, never misread. */
	if (ft) {
		snprintf(err, errlen, "--async does not read the asyncio tasks of free-threaded "
			 "CPython (3.%dt) yet: run without --async for the threads' stacks", pi->minor);
		return status_fail(EXIT_UNSUPPORTED);
	}
	return asyncio314_locate(src, m, pi, A, err, errlen);
}

int asyncio_tasks_memo(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		       struct mem *recheck, struct asyncio_memo *memo, struct py_tasks *out,
		       char *err, size_t errlen)
{
	if (A->legacy.on)
		return asyncio_legacy_tasks(m, pi, A, recheck, out, err, errlen);
	return asyncio314_tasks(m, pi, A, recheck, memo, out, err, errlen);
}

int asyncio_tasks(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
		  struct mem *recheck, struct py_tasks *out, char *err, size_t errlen)
{
	return asyncio_tasks_memo(m, pi, A, recheck, NULL, out, err, errlen);
}

int asyncio_awaiter_chain(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			  uint64_t task, char **names, int max)
{
	if (A->legacy.on)
		return asyncio_legacy_chain(m, pi, A, task, names, max);
	return asyncio314_chain(m, pi, A, task, names, max);
}

int asyncio_running_task(struct mem *m, const struct pyinterp *pi, const struct asyncio_layout *A,
			 const struct py_tstate *ts, uint64_t *task, uint64_t *coro_frame)
{
	if (A->legacy.on)
		return asyncio_legacy_running(m, pi, A, ts->ident, task, coro_frame);
	return asyncio314_running(m, pi, A, ts, task, coro_frame);
}
