/* Where things are inside a CPython interpreter, per minor version.
 *
 * One `struct py_layout` describes one CPython minor version on x86-64.  The
 * walker reads the target only through these numbers, so supporting a new
 * version means adding a table, not touching code.  For 3.7–3.12 every field
 * is a constant from interp/layouts.c (checked against the DWARF of real
 * builds).  For 3.13 and newer the interpreter publishes most offsets itself
 * in _Py_DebugOffsets; interp/debug_offsets.c reads them from the target into
 * this same struct, and layouts.c supplies only what they leave out.
 *
 * An offset of NONE means "this version has no such field".
 */
#ifndef PYSTROBE_LAYOUT_H
#define PYSTROBE_LAYOUT_H

#include <stdint.h>

#include "interp/linetable.h"

struct mem;

#define NONE UINT32_MAX

enum frame_model {
	FRAMES_OBJECTS,		/* 3.7–3.10: linked PyFrameObjects, f_lasti */
	FRAMES_INTERP,		/* 3.11+: _PyInterpreterFrame on the data stack */
};

/* How the current bytecode position is stored in a frame. */
enum lasti_model {
	LASTI_BYTES,		/* 3.7–3.9: int f_lasti, a byte offset */
	LASTI_UNITS,		/* 3.10: int f_lasti, in 2-byte code units */
	LASTI_PTR,		/* 3.11+: pointer into co_code_adaptive */
};

/* How an int stores its sign and size. */
enum long_model {
	LONG_OB_SIZE,		/* <= 3.11: signed ob_size counts digits */
	LONG_LV_TAG,		/* 3.12+: lv_tag = ndigits << 3 | sign bits */
};

/* Where an instance keeps its attributes (for Thread._name). */
enum attrs_model {
	ATTRS_DICTOFFSET,	/* <= 3.10: dict at obj + tp_dictoffset */
	ATTRS_MANAGED_311,	/* 3.11: dict at obj-3 words, values at obj-4 words */
	ATTRS_MANAGED_312,	/* 3.12: obj-3 words: dict, or values|1 */
	ATTRS_INLINE_313,	/* 3.13+: values inline after the object, dict at obj-3 words */
};

/* Dict keys object layout. */
enum dictkeys_model {
	DICTKEYS_310,		/* <= 3.10: dk_size, 24-byte entries */
	DICTKEYS_311,		/* 3.11+: log2 sizes, dk_kind selects entry size */
};

struct py_layout {
	int minor;			/* 3.minor */
	int free_threaded;		/* 1: built --disable-gil (3.13t): no GIL */
	enum frame_model frames;
	enum lasti_model lasti;
	enum lt_format lines;
	enum long_model longs;
	enum attrs_model attrs;
	enum dictkeys_model dictkeys;

	struct {
		uint32_t interpreters_head;
		uint32_t finalizing;	/* thread state running Py_Finalize, or NULL */
		uint32_t gil_locked;	/* GIL inside _PyRuntime (<= 3.11) */
		uint32_t gil_holder;	/* its last_holder */
		uint32_t gil_switches;	/* its switch_number */
		uint32_t gc_collecting;	/* <= 3.8: the GC's int collecting (one GC) */
	} runtime;

	struct {
		uint32_t next;
		uint32_t id;		/* int64_t: 0 for the main interpreter */
		uint32_t threads_head;
		uint32_t modules;	/* sys.modules dict */
		uint32_t gil_ptr;	/* 3.12+: pointer to its _gil_runtime_state */
		/* 3.9+: int collecting of its GC state (interp->gc), 1 while
		 * a collection runs; NONE before (runtime.gc_collecting). */
		uint32_t gc_collecting;
	} interp;

	struct {
		uint32_t locked;	/* within _gil_runtime_state, via interp.gil_ptr */
		uint32_t holder;	/* last_holder */
		/* switch_number: counts every take of the GIL by a thread
		 * other than its last holder (take_gil() in ceval_gil.c) */
		uint32_t switches;
	} gil;

	struct {
		uint32_t next;
		uint32_t interp;
		uint32_t frame;		/* ts->frame, ts->cframe or ts->current_frame */
		uint32_t cframe_frame;	/* 3.11/3.12: offset of current_frame in the _PyCFrame */
		uint32_t thread_id;	/* pthread_t, threading.get_ident() */
		uint32_t native_thread_id;
		uint32_t base_frame;	/* 3.15+: the frame in the thread state every
					 * chain ends in (owned by the interpreter) */
		/* Free-threaded builds: int state, 1 (_Py_THREAD_ATTACHED)
		 * while the thread may touch Python objects, what holding
		 * the GIL is elsewhere; 0 detached (a blocking call, the
		 * GIL released), 2 suspended (stopped for a stop-the-world
		 * pause).  NONE where not read: the GIL says it there. */
		uint32_t state;
	} tstate;

	struct {
		uint32_t back;		/* f_back / previous */
		uint32_t code;		/* f_code / f_executable */
		uint32_t lasti;		/* f_lasti / prev_instr / instr_ptr */
		uint32_t localsplus;
		uint32_t owner;		/* 3.11+: who owns the frame */
		uint32_t is_entry;	/* 3.11 only */
		uint32_t stackpointer;	/* 3.14+: top of the frame's value stack
					 * (NONE where we do not read it) */
		uint8_t code_tagged;	/* 3.14: f_executable is a tagged _PyStackRef */
		uint8_t owner_shim;	/* owner values >= this are C-stack/interpreter shims */
	} frame;

	struct {
		uint32_t argcount;
		uint32_t kwonlyargcount;
		uint32_t nlocals;	/* NONE on 3.11+: locals come from kinds */
		uint32_t flags;
		uint32_t firstlineno;
		uint32_t varnames;	/* co_varnames (<= 3.10) / co_localsplusnames */
		uint32_t localspluskinds;
		uint32_t filename;
		uint32_t name;
		uint32_t qualname;
		uint32_t linetable;	/* co_lnotab / co_linetable (bytes) */
		uint32_t code_adaptive;	/* 3.11+: start of bytecode inside the code object */
	} code;

	/* Generators and coroutines (3.14+, for asyncio tasks; NONE before). */
	struct {
		uint32_t iframe;	/* the _PyInterpreterFrame embedded in the object */
		uint32_t frame_state;	/* int8_t gi_frame_state */
	} gen;

	struct {
		uint32_t ob_type;
		uint32_t tp_name;
		uint32_t tp_flags;
		uint32_t tp_basicsize;
		uint32_t tp_dictoffset;
		uint32_t ht_cached_keys;
		/* ATTRS_INLINE_313: the managed dict is the word this many
		 * bytes below the object (24; 8 in free-threaded builds) */
		uint32_t managed_dict;
	} obj;

	struct {
		uint32_t length;
		uint32_t state;
		uint32_t ascii_size;	/* sizeof(PyASCIIObject): data of compact ASCII */
		uint32_t compact_size;	/* sizeof(PyCompactUnicodeObject) */
	} str;

	struct {
		uint32_t ob_size;	/* PyVarObject size of bytes, tuple, list */
		uint32_t bytes_sval;
		uint32_t tuple_item;
		uint32_t list_item;
		uint32_t float_val;
		uint32_t long_tag;	/* ob_size or lv_tag */
		uint32_t long_digits;
		uint32_t dict_used;
		uint32_t dict_keys;
		uint32_t dict_values;
		uint32_t dictvalues_values;	/* values[] inside PyDictValues */
		uint32_t set_used;	/* PySetObject: active entries */
		uint32_t set_mask;	/* slots - 1 */
		uint32_t set_table;	/* setentry *table: (key, hash) pairs */
		uint32_t module_dict;
	} o;
};

/* One past the furthest of a set of offsets (NONE ignored) plus a word: how
 * many bytes to read to get all of those fields of a struct in one go. */
static inline uint32_t layout_span(const uint32_t *offs, unsigned n)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < n; i++)
		if (offs[i] != NONE && offs[i] > m)
			m = offs[i];
	return m + 8;
}

/* Fields of a struct read into a local buffer (unaligned-safe). */
static inline uint64_t field_u64(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, buf + off, sizeof(v));
	return v;
}

static inline int32_t field_i32(const uint8_t *buf, uint32_t off)
{
	int32_t v;

	__builtin_memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The static table for a minor version, or NULL if we do not know it;
 * layout_for_build() also for its free-threaded build (free_threaded 1:
 * 3.13t only). */
const struct py_layout *layout_for_minor(int minor);
const struct py_layout *layout_for_build(int minor, int free_threaded);

/* Oldest and newest minor versions with a table. */
#define LAYOUT_MIN_MINOR 7
#define LAYOUT_MAX_MINOR 15

/* _Py_DebugOffsets (3.13+).  Read from `runtime` (the address of _PyRuntime)
 * in the target, validate them, and fill *out: the per-version table for what
 * they do not cover, their values for the rest.  debug_offsets_probe():
 * 0, or -errno (-ENOENT: no offsets there).  debug_offsets_layout(): 0, or
 * status_fail(EXIT_BAD_STATE / EXIT_UNSUPPORTED / exit_code_for_errno()'s)
 * with a reason in err (see util/status.h). */
struct debug_offsets_info {
	uint64_t version_hex;	/* PY_VERSION_HEX from the offsets */
	int free_threaded;
};
int debug_offsets_probe(struct mem *m, uint64_t runtime, struct debug_offsets_info *info);
int debug_offsets_layout(struct mem *m, uint64_t runtime, struct py_layout *out,
			 char *err, size_t errlen);

/* asyncio tasks (3.14+).  The _asyncio module publishes where its task
 * objects keep their name, coroutine, awaiters and list links, and where
 * thread and interpreter states keep their task lists, in a section of its
 * own (.AsyncioDebug, in the _asyncio extension or in the interpreter when
 * it is built in).  interp/asyncio_offsets.c checks those against the
 * layout we verified for each version and adds what they leave out. */
#define ASYNCIO_SECTION ".AsyncioDebug"
#define ASYNCIO_SECTION_SIZE 104

struct asyncio_layout {
	struct {
		uint32_t size;
		uint32_t name;		/* str, or an int n for "Task-n" */
		uint32_t awaited_by;	/* one future, or a set of them */
		uint32_t awaited_by_is_set;	/* char */
		uint32_t is_task;	/* char, 1 in a task */
		uint32_t state;		/* fut_state: 0 pending, 1 cancelled, 2 finished */
		uint32_t fut_waiter;	/* the future its coroutine is blocked on */
		uint32_t coro;
		uint32_t node;		/* struct llist_node { next, prev } */
	} task;
	uint32_t interp_tasks_head;	/* tasks of threads that have exited */
	struct {
		uint32_t running_loop;
		uint32_t running_task;
		uint32_t tasks_head;
	} tstate;			/* offsets in _PyThreadStateImpl */
	uint32_t type_base;		/* tp_base of a type object */
	uint32_t set_mask, set_table;	/* PySetObject: mask, setentry *table */
	/* gi_frame_state values. */
	int8_t gen_suspended;
	int8_t gen_suspended_yield_from;	/* suspended in an await: the
						 * awaited object tops its stack */
	int8_t gen_executing;
	/* Suspended in an await, the awaited object is this many words below
	 * the frame's stack pointer: 1 (the top) in 3.14; 3.15 keeps a
	 * null stack reference above it. */
	uint8_t yield_from_slot;
	/* 3.11-3.13 (no debug section, legacy.on): tasks are found through
	 * Python state, asyncio.tasks' registries (python/asyncio_legacy.c);
	 * task.* above holds the C TaskObj's fields (awaited_by, is_task and
	 * node are NONE), gen_* the frame states. */
	struct {
		uint8_t on;
		uint8_t c_task;		/* the C _asyncio.Task is loaded and
					 * its size checked */
		uint32_t loop;		/* fut_loop */
		uint32_t callback0;	/* fut_callback0: the first done callback */
		uint32_t callbacks;	/* fut_callbacks: list of (callback, context) */
		uint32_t gen_iframe;	/* PyGenObject.gi_iframe */
		uint32_t gen_frame_state;	/* int8_t gi_frame_state */
		uint32_t stacktop;	/* int: values on the frame's stack,
					 * counted from localsplus */
		/* 3.11/3.12 have no suspended-in-await state: a suspended
		 * frame is in an await when its next instruction is one of
		 * these (RESUME and its variants) with an argument >= 2;
		 * 0: unused. */
		uint8_t resume_op[2];
		uint32_t wr_object;	/* PyWeakReference */
		uint32_t im_self;	/* PyMethodObject (a bound method) */
	} legacy;
};

/* Check the section's bytes (len of them) for 3.minor and fill *out.
 * Returns 0, or status_fail(EXIT_UNSUPPORTED / EXIT_BAD_STATE) with a reason. */
int asyncio_layout_parse(int minor, const uint8_t *sec, size_t len, struct asyncio_layout *out,
			 char *err, size_t errlen);

/* 3.11-3.13: the verified C task and generator layout of 3.minor into
 * *out (legacy.on set, legacy.c_task not: the caller checks the target's
 * Task type against task.size); free_threaded 1: of its free-threaded
 * build (3.13t).  0, or -1 for a version without one. */
int asyncio_legacy_layout(int minor, int free_threaded, struct asyncio_layout *out);

#endif
