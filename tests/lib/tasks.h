/* What the asyncio unit tests ask of the tasks a reader returned. */
#ifndef PYSTROBE_TEST_TASKS_H
#define PYSTROBE_TEST_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "fakepy.h"
#include "python/asyncio.h"

/* The code objects of both asyncio scenes (tests/unit/check_asyncio.c and
 * check_asyncio_legacy.c): work() -> step() -> Event.wait(), and the loop's
 * run_forever(). */
enum { C_WORK, C_STEP, C_WAIT, C_LOOP, NCODES };

/* Build them in fp into code[]; step has step_ninstr instructions (2 or
 * 3), on lines 30, 31, 32. */
void tasks_codes(struct fakepy *fp, uint64_t code[NCODES], int step_ninstr);

/* The task called name; fails the test when there is none. */
const struct py_task *tasks_named(const struct py_tasks *t, const char *name);

/* Is there a task called name? */
bool tasks_has(const struct py_tasks *t, const char *name);

/* Point thread state ts's innermost frame at frame (3.11/3.12: in its
 * _PyCFrame, the thread state's own pointer unchanged). */
void tasks_thread_frame(struct fakepy *fp, uint64_t ts, uint64_t frame);

/* Task t's frames, innermost first, must be exactly fn[i] at lines[i]. */
void tasks_expect_frames(const struct py_task *t, const char *const *fn, const int *lines,
			 int n);

/* The tasks both asyncio scenes hold (tests/unit/check_asyncio.c and
 * check_asyncio_legacy.c): "main", "worker", "gathered", "dl-a", "dl-b"
 * and "runner"; fails the test when one is missing. */
void tasks_scene(const struct py_tasks *t, const struct py_task **main_task,
		 const struct py_task **worker, const struct py_task **gathered,
		 const struct py_task **dl_a, const struct py_task **dl_b,
		 const struct py_task **runner);

/* More awaiters than the task model's one bound, as both asyncio scenes
 * add them (test_bound): "hub", at hub, awaited by TASKS_OVER tasks and
 * "parent" awaiting as many, among n tasks read.  Both must stop at the
 * bound, the 2 * TASKS_EXTRA edges past it counted cut, and nothing else
 * change (the scene's one cycle). */
#define TASKS_EXTRA 16
#define TASKS_OVER (ASYNCIO_MAX_AWAITERS + TASKS_EXTRA)
void tasks_expect_bound(const struct py_tasks *t, int n, uint64_t hub);

#endif
