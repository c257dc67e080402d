#include <string.h>

#include <check.h>

#include "tasks.h"

const struct py_task *tasks_named(const struct py_tasks *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].name && !strcmp(t->v[i].name, name))
			return &t->v[i];
	ck_abort_msg("no task %s", name);
	return NULL;
}

void tasks_expect_frames(const struct py_task *t, const char *const *fn, const int *lines, int n)
{
	ck_assert_msg(t->nframes == n, "%s: %d frames, expected %d", t->name, t->nframes, n);
	for (int i = 0; i < n; i++) {
		ck_assert_str_eq(t->frames[i].function, fn[i]);
		ck_assert_int_eq(t->frames[i].line, lines[i]);
	}
}
