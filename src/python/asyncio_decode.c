/* What both asyncio readers decode of a task the same way: its name, its
 * coroutine frames, and what it waits in where it waits in one of
 * asyncio's locks or queues.
 */
#include "python/asyncio_int.h"
#include "python/codecache.h"
#include "python/pyobj.h"
#include "process/mem.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_CHARS 1024

char *asyncio_task_name(const struct pyctx *c, uint64_t obj)
{
	char type[16];
	int64_t n;
	char *s;

	if (py_type_name(c, obj, type, sizeof(type)) < 0)
		return NULL;
	if (!strcmp(type, "str") && py_str(c, obj, NAME_MAX_CHARS, &s) == 0)
		return s;
	/* 3.13+ names a task lazily: an int n stands for "Task-n". */
	if (!strcmp(type, "int") && py_long(c, obj, &n) == 0)
		return xasprintf("Task-%lld", (long long)n);
	return NULL;
}

void asyncio_decode_frames(struct frame_decoder *fd, struct py_task *t, struct coro_frame *cf,
			   int n, bool outer_first)
{
	/* Innermost first, like a thread's stack. */
	for (int a = 0, b = n - 1; outer_first && a < b; a++, b--) {
		struct coro_frame x = cf[a];

		cf[a] = cf[b];
		cf[b] = x;
	}
	t->frames = n > 0 ? xcalloc(n, sizeof(*t->frames)) : NULL;
	for (int k = 0; k < n; k++) {
		if (frame_decode(fd, cf[k].frame, cf[k].code, cf[k].lasti,
				 &t->frames[t->nframes]) < 0) {
			t->frames_truncated = true;
			break;
		}
		t->nframes++;
	}
}

/* --- what a task waits in -------------------------------------------------- */

/* asyncio's waiting methods, each a coroutine whose first local is the
 * object waited on, and the attribute that says its state. */
static const struct {
	const char *function, *attr;
} waits[] = {
	{ "Lock.acquire", "_locked" },
	{ "Event.wait", "_value" },
	{ "Semaphore.acquire", "_value" },
	{ "Condition.wait", NULL },
	{ "Queue.get", NULL },
	{ "Queue.put", NULL },
	{ "Barrier.wait", NULL },
};

static const char *const asyncio_types[] = {
	"Lock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "Barrier",
	"Queue", "PriorityQueue", "LifoQueue",
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* What the state attribute's value means for the object's kind. */
static char *wait_state(struct asyncio_reader *r, uint64_t obj, const char *attr, const char *type)
{
	char *vtype = NULL, *repr = NULL, *out = NULL;
	uint64_t v;

	if (!attr || py_instance_attr(&r->c, obj, attr, &v) < 0 || !v ||
	    py_repr(&r->c, v, 24, &vtype, &repr) < 0)
		goto out;
	if (!strcmp(type, "Lock") && !strcmp(vtype, "bool"))
		out = xstrdup(!strcmp(repr, "True") ? "locked" : "unlocked");
	else if (!strcmp(type, "Event") && !strcmp(vtype, "bool"))
		out = xstrdup(!strcmp(repr, "True") ? "set" : "not set");
	else if (!strcmp(vtype, "int"))
		out = xasprintf("value %s", repr);
out:
	free(vtype);
	free(repr);
	return out;
}

/* A pending task whose innermost coroutine is one of asyncio's waiting
 * methods waits in that method's `self`: its first local.  Without the C
 * accelerator the innermost frame is the pure-Python Future's __await__
 * generator, and the method is the next one out.  cf: the task's n
 * decoded frames, innermost first. */
void asyncio_reader_wait(struct asyncio_reader *r, struct py_task *t, const struct coro_frame *cf,
			 int n)
{
	const struct py_frame *f = n > 0 ? &t->frames[0] : NULL;
	const struct coro_frame *inner = cf;
	struct wait_seen *seen;
	char type[64];
	uint64_t self;
	size_t k;

	if (f && n > 1 && f->function && f->file && !strcmp(f->function, "Future.__await__") &&
	    ends_with(f->file, "asyncio/futures.py")) {
		f = &t->frames[1];
		inner = &cf[1];
	}
	if (!f || t->joined || !f->function || !f->file ||
	    (!ends_with(f->file, "asyncio/locks.py") && !ends_with(f->file, "asyncio/queues.py")))
		return;
	for (k = 0; k < ARRAY_SIZE(waits) && strcmp(f->function, waits[k].function); k++)
		;
	if (k == ARRAY_SIZE(waits) ||
	    mem_read_u64(r->m, inner->frame + r->L->frame.localsplus, &self) < 0)
		return;
	if (r->L->frame.code_tagged)
		self &= ~(uint64_t)3;	/* a _PyStackRef */
	if (!self)
		return;
	seen = &r->waits_seen[hash_u64(self) % WAITS_SEEN];
	/* With a memo every task must read (and so depend on) the object
	 * itself: no sharing. */
	if (seen->obj != self || !seen->w.kind || r->memo) {
		if (py_type_name(&r->c, self, type, sizeof(type)) < 0)
			return;
		free(seen->w.kind);
		free(seen->w.state);
		seen->obj = self;
		seen->w.addr = self;
		seen->w.kind = xstrdup(type);
		for (size_t i = 0; i < ARRAY_SIZE(asyncio_types); i++)
			if (!strcmp(type, asyncio_types[i])) {
				free(seen->w.kind);
				seen->w.kind = xasprintf("asyncio.%s", type);
			}
		seen->w.state = wait_state(r, self, waits[k].attr, type);
	}
	t->wait.addr = self;
	t->wait.kind = xstrdup(seen->w.kind);
	t->wait.state = seen->w.state ? xstrdup(seen->w.state) : NULL;
}

void asyncio_task_wait(struct mem *m, const struct pyinterp *pi, struct py_task *t,
		       const uint64_t *frames)
{
	struct asyncio_reader r = { .m = m, .pi = pi, .L = &pi->layout, .c = { m, &pi->layout } };
	struct coro_frame cf[2] = { { frames[0], 0, 0 }, { t->nframes > 1 ? frames[1] : 0, 0, 0 } };

	asyncio_reader_wait(&r, t, cf, t->nframes);
	for (int i = 0; i < WAITS_SEEN; i++) {
		free(r.waits_seen[i].w.kind);
		free(r.waits_seen[i].w.state);
	}
}
