/* The asyncio debug offsets (_Py_AsyncioModuleDebugOffsets, 3.14+).
 *
 * The section carries no cookie and no version of its own: it is 13 words
 * (the task object's size and six field offsets, the interpreter state's
 * size and its task list, the thread state's size and three fields), found
 * in whichever object holds _asyncio.  So every value is checked: the
 * task's fields against the TaskObj we verified for that version (the
 * DWARF of Debian's python3.14-dbg and python3.15-dbg: `ptype /o struct
 * TaskObj`), which also gives the two fields the section leaves out (the
 * future's state and fut_waiter); the thread and interpreter offsets
 * against their own sizes.  A table that disagrees is "unverified", never
 * a guess.
 */
#include "interp/layout.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* Word positions in the section. */
enum { W_TASK_SIZE, W_NAME, W_AWAITED_BY, W_IS_TASK, W_AWAITED_BY_IS_SET, W_CORO, W_NODE,
       W_INTERP_SIZE, W_INTERP_HEAD, W_TSTATE_SIZE, W_LOOP, W_RUNNING, W_TSTATE_HEAD,
       W_COUNT };

_Static_assert(W_COUNT * 8 == ASYNCIO_SECTION_SIZE, "13 words");

struct aio_version {
	int minor;
	struct asyncio_layout L;
};

/* 3.14 and 3.15 share TaskObj (FutureObj_HEAD, then the task's fields);
 * their generator frame states differ (3.15 counts from 0 and added a
 * locked yield-from state, which is not a suspension we can read). */
#define TASKOBJ_314 \
	.task = { .size = 168, .name = 136, .awaited_by = 96, .awaited_by_is_set = 109, \
		  .is_task = 108, .state = 104, .fut_waiter = 120, .coro = 128, .node = 152 }, \
	.type_base = 256, .set_mask = 32, .set_table = 40

static const struct aio_version versions[] = {
	{ 14, { TASKOBJ_314, .gen_suspended = -2, .gen_suspended_yield_from = -1,
		.gen_executing = 0, .yield_from_slot = 1 } },
	{ 15, { TASKOBJ_314, .gen_suspended = 1, .gen_suspended_yield_from = 2,
		.gen_executing = 4, .yield_from_slot = 2 } },
};

static uint64_t word(const uint8_t *sec, int i)
{
	uint64_t v;

	memcpy(&v, sec + 8 * i, sizeof(v));
	return v;
}

static const struct aio_version *version_of(int minor)
{
	for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
		if (versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

/* The task words must be exactly the TaskObj we know. */
static int check_task(const uint8_t *sec, const struct asyncio_layout *k, char *err, size_t errlen)
{
	const uint64_t want[] = {
		[W_TASK_SIZE] = k->task.size, [W_NAME] = k->task.name,
		[W_AWAITED_BY] = k->task.awaited_by, [W_IS_TASK] = k->task.is_task,
		[W_AWAITED_BY_IS_SET] = k->task.awaited_by_is_set, [W_CORO] = k->task.coro,
		[W_NODE] = k->task.node,
	};

	for (int i = W_TASK_SIZE; i <= W_NODE; i++) {
		if (word(sec, i) != want[i]) {
			snprintf(err, errlen, "the asyncio task layout of this build is unverified "
				 "(debug offset %d is %llu, expected %llu)", i,
				 (unsigned long long)word(sec, i), (unsigned long long)want[i]);
			return status_fail(EXIT_UNSUPPORTED);
		}
	}
	return 0;
}

/* A thread state is at most 64 KiB, an interpreter at most 16 MiB; each
 * list head (two words) and pointer must fit inside its struct. */
static int check_states(const uint8_t *sec, char *err, size_t errlen)
{
	uint64_t isz = word(sec, W_INTERP_SIZE), tsz = word(sec, W_TSTATE_SIZE);

	if (isz == 0 || isz > (16u << 20) || tsz == 0 || tsz > (64u << 10) ||
	    word(sec, W_INTERP_HEAD) + 16 > isz || word(sec, W_LOOP) + 8 > tsz ||
	    word(sec, W_RUNNING) + 8 > tsz || word(sec, W_TSTATE_HEAD) + 16 > tsz) {
		snprintf(err, errlen, "the asyncio debug offsets are corrupt");
		return status_fail(EXIT_BAD_STATE);
	}
	return 0;
}

int asyncio_layout_parse(int minor, const uint8_t *sec, size_t len, struct asyncio_layout *out,
			 char *err, size_t errlen)
{
	const struct aio_version *v = version_of(minor);
	int rc;

	if (!v) {
		snprintf(err, errlen, "asyncio tasks are not readable on Python 3.%d yet "
			 "(pystrobe reads them on 3.11 to 3.15)", minor);
		return status_fail(EXIT_UNSUPPORTED);
	}
	if (len < ASYNCIO_SECTION_SIZE) {
		snprintf(err, errlen, "the asyncio debug offsets are cut short (%zu bytes)", len);
		return status_fail(EXIT_BAD_STATE);
	}
	if ((rc = check_task(sec, &v->L, err, errlen)) < 0 ||
	    (rc = check_states(sec, err, errlen)) < 0)
		return rc;
	*out = v->L;
	out->interp_tasks_head = (uint32_t)word(sec, W_INTERP_HEAD);
	out->tstate.running_loop = (uint32_t)word(sec, W_LOOP);
	out->tstate.running_task = (uint32_t)word(sec, W_RUNNING);
	out->tstate.tasks_head = (uint32_t)word(sec, W_TSTATE_HEAD);
	return 0;
}

/* 3.11-3.13: no debug section.  TaskObj, PyGenObject, _PyInterpreterFrame,
 * PyWeakReference and PyMethodObject as `ptype /o` shows them in the DWARF
 * of the pyenv builds (3.11.7, 3.12.1, 3.13.0: _asyncio*.so and
 * libpython) and of Debian's python3.11-dbg (3.11.2: the same TaskObj, 176
 * bytes).  The TaskObj of 3.11 and 3.12 is the same; 3.13 moved
 * fut_cancelled_exc up, made the flags bit fields and dropped the dict.
 * The caller checks the target's _asyncio.Task tp_basicsize against
 * task.size before it trusts the rest. */
#define LEGACY_COMMON \
	.interp_tasks_head = NONE, .tstate = { NONE, NONE, NONE }, .type_base = 256, \
	.set_mask = 32, .set_table = 40, .gen_executing = 0

#define LEGACY_FUT .on = 1, .loop = 16, .callback0 = 24, .callbacks = 40, \
	.stacktop = 64, .wr_object = 16, .im_self = 24

static const struct aio_version legacy_versions[] = {
	{ 11, { LEGACY_COMMON,
		.task = { .size = 176, .name = 144, .awaited_by = NONE, .awaited_by_is_set = NONE,
			  .is_task = NONE, .state = 88, .fut_waiter = 128, .coro = 136, .node = NONE },
		/* 3.11 and 3.12: FRAME_SUSPENDED -1, no yield-from state;
		 * RESUME 151, its quickened form RESUME_QUICK 150. */
		.gen_suspended = -1, .gen_suspended_yield_from = -1, .yield_from_slot = 1,
		.legacy = { LEGACY_FUT, .gen_iframe = 80, .gen_frame_state = 75,
			    .resume_op = { 151, 150 } } } },
	{ 12, { LEGACY_COMMON,
		.task = { .size = 176, .name = 144, .awaited_by = NONE, .awaited_by_is_set = NONE,
			  .is_task = NONE, .state = 88, .fut_waiter = 128, .coro = 136, .node = NONE },
		/* RESUME 151, INSTRUMENTED_RESUME 240. */
		.gen_suspended = -1, .gen_suspended_yield_from = -1, .yield_from_slot = 1,
		.legacy = { LEGACY_FUT, .gen_iframe = 72, .gen_frame_state = 67,
			    .resume_op = { 151, 240 } } } },
	{ 13, { LEGACY_COMMON,
		.task = { .size = 144, .name = 128, .awaited_by = NONE, .awaited_by_is_set = NONE,
			  .is_task = NONE, .state = 96, .fut_waiter = 112, .coro = 120, .node = NONE },
		/* FRAME_SUSPENDED -2, FRAME_SUSPENDED_YIELD_FROM -1. */
		.gen_suspended = -2, .gen_suspended_yield_from = -1, .yield_from_slot = 1,
		.legacy = { LEGACY_FUT, .gen_iframe = 72, .gen_frame_state = 67,
			    .resume_op = { 0, 0 } } } },
};

/* 3.13t: the same objects behind the free-threaded build's 32-byte header
 * (ob_tid, flags, ob_mutex, ob_gc_bits, ob_ref_local, ob_ref_shared, then
 * ob_type): every field 16 bytes further in; the frame's stacktop and the
 * frame states are 3.13's.  `ptype /o` of TaskObj, FutureObj, PyGenObject,
 * PyWeakReference, PyMethodObject, PySetObject and PyTypeObject in the
 * DWARF of the 3.13.5 build (tests/setup-ft-python.sh: python3.13t and
 * _asyncio.cpython-313t-x86_64-linux-gnu.so). */
static const struct aio_version legacy_ft_versions[] = {
	{ 13, { .interp_tasks_head = NONE, .tstate = { NONE, NONE, NONE }, .type_base = 272,
		.set_mask = 48, .set_table = 56, .gen_executing = 0,
		.task = { .size = 160, .name = 144, .awaited_by = NONE, .awaited_by_is_set = NONE,
			  .is_task = NONE, .state = 112, .fut_waiter = 128, .coro = 136, .node = NONE },
		.gen_suspended = -2, .gen_suspended_yield_from = -1, .yield_from_slot = 1,
		.legacy = { .on = 1, .loop = 32, .callback0 = 40, .callbacks = 56, .stacktop = 64,
			    .wr_object = 32, .im_self = 40, .gen_iframe = 88, .gen_frame_state = 83,
			    .resume_op = { 0, 0 } } } },
};

int asyncio_legacy_layout(int minor, int free_threaded, struct asyncio_layout *out)
{
	const struct aio_version *v = free_threaded ? legacy_ft_versions : legacy_versions;
	size_t n = free_threaded ? ARRAY_SIZE(legacy_ft_versions) : ARRAY_SIZE(legacy_versions);

	for (size_t i = 0; i < n; i++) {
		if (v[i].minor == minor) {
			*out = v[i].L;
			return 0;
		}
	}
	return -1;
}
