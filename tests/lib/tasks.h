/* What the asyncio unit tests ask of the tasks a reader returned. */
#ifndef PYSTROBE_TEST_TASKS_H
#define PYSTROBE_TEST_TASKS_H

#include "python/asyncio.h"

/* The task called name; fails the test when there is none. */
const struct py_task *tasks_named(const struct py_tasks *t, const char *name);

/* Task t's frames, innermost first, must be exactly fn[i] at lines[i]. */
void tasks_expect_frames(const struct py_task *t, const char *const *fn, const int *lines,
			 int n);

#endif
