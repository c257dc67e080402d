/* record --async=all: the profile frames of each pending task (its "task
 * NAME" marker and its coroutine frames), kept from one sample to the next
 * for the tasks the asyncio memo proves unchanged (py_task.same), so that a
 * thousand parked tasks cost a copy each instead of a thousand decodes. */
#ifndef PYSTROBE_TASKIDS_H
#define PYSTROBE_TASKIDS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "python/asyncio.h"

struct task_ids;

struct task_ids *task_ids_new(struct profile *p, bool by_function);
void task_ids_free(struct task_ids *ti);

/* The "task NAME" frame of t. */
uint32_t task_ids_label(struct task_ids *ti, const struct py_task *t);
/* t's coroutine frames, outermost first (*ids good until the next call). */
int task_ids_frames(struct task_ids *ti, const struct py_task *t, const uint32_t **ids);
/* After a sample: forget the tasks it did not look at. */
void task_ids_sweep(struct task_ids *ti);

#endif
