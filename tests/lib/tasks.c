#include <string.h>

#include <check.h>

#include "tasks.h"

static const int work_lines[] = { 20, 21, 22 };
static const int step_lines[] = { 30, 31, 32 };
static const int wait_lines[] = { 210, 213, 214 };
static const int loop_lines[] = { 600, 601 };

void tasks_codes(struct fakepy *fp, uint64_t code[NCODES], int step_ninstr)
{
	const struct fp_code_spec specs[NCODES] = {
		[C_WORK] = { .name = "work", .filename = "/app/svc.py", .firstlineno = 20,
			     .lines = work_lines, .ninstr = 3 },
		[C_STEP] = { .name = "step", .filename = "/app/svc.py", .firstlineno = 30,
			     .lines = step_lines, .ninstr = step_ninstr },
		[C_WAIT] = { .name = "wait", .qualname = "Event.wait", .filename = "/lib/locks.py",
			     .firstlineno = 210, .lines = wait_lines, .ninstr = 3 },
		[C_LOOP] = { .name = "run_forever", .filename = "/lib/base_events.py",
			     .firstlineno = 600, .lines = loop_lines, .ninstr = 2 },
	};

	for (int c = 0; c < NCODES; c++)
		code[c] = fp_code(fp, &specs[c]);
}

const struct py_task *tasks_named(const struct py_tasks *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].name && !strcmp(t->v[i].name, name))
			return &t->v[i];
	ck_abort_msg("no task %s", name);
	return NULL;
}

bool tasks_has(const struct py_tasks *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].name && !strcmp(t->v[i].name, name))
			return true;
	return false;
}

void tasks_thread_frame(struct fakepy *fp, uint64_t ts, uint64_t frame)
{
	const struct py_layout *L = fp->L;

	if (L->tstate.cframe_frame != NONE)
		fp_w64(fp, fp_r64(fp, ts + L->tstate.frame) + L->tstate.cframe_frame, frame);
	else
		fp_w64(fp, ts + L->tstate.frame, frame);
}

void tasks_expect_frames(const struct py_task *t, const char *const *fn, const int *lines, int n)
{
	ck_assert_msg(t->nframes == n, "%s: %d frames, expected %d", t->name, t->nframes, n);
	for (int i = 0; i < n; i++) {
		ck_assert_str_eq(t->frames[i].function, fn[i]);
		ck_assert_int_eq(t->frames[i].line, lines[i]);
	}
}

void tasks_expect_bound(const struct py_tasks *t, int n, uint64_t hub)
{
	const struct py_task *h = tasks_named(t, "hub"), *p = tasks_named(t, "parent");

	ck_assert_int_eq(t->n, n);
	ck_assert_int_eq(t->torn, 0);
	ck_assert_uint_eq(h->addr, hub);
	ck_assert_int_eq(h->nawaited_by, ASYNCIO_MAX_AWAITERS);
	ck_assert_int_eq(p->nawaiting, ASYNCIO_MAX_AWAITERS);
	ck_assert_int_eq(t->edges_cut, 2 * TASKS_EXTRA);
	ck_assert_int_eq(t->ncycles, 1);
}

void tasks_scene(const struct py_tasks *t, const struct py_task **main_task,
		 const struct py_task **worker, const struct py_task **gathered,
		 const struct py_task **dl_a, const struct py_task **dl_b,
		 const struct py_task **runner)
{
	*main_task = tasks_named(t, "main");
	*worker = tasks_named(t, "worker");
	*gathered = tasks_named(t, "gathered");
	*dl_a = tasks_named(t, "dl-a");
	*dl_b = tasks_named(t, "dl-b");
	*runner = tasks_named(t, "runner");
}
