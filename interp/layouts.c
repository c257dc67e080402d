/* Per-version interpreter layouts for CPython on x86-64 (non-debug builds;
 * GIL-enabled, and the free-threaded 3.13t).
 *
 * Numbers for 3.7–3.13 were read from the DWARF of pyenv builds with gdb
 * ("print &((T *)0)->field"); the GC's `collecting` so too (in _PyRuntime
 * on 3.7 and 3.8, in the interpreter from 3.9: 3.11 848, 3.12 312, 3.13
 * 7600), and 3.14's and 3.15's (7600, 7512) from the
 * DWARF of Debian's python3.14-dbg and python3.15-dbg, whose interpreter
 * state agrees with the non-debug builds' on every field here; 3.14's from the _Py_DebugOffsets that Debian's
 * python3.14 carries in its .PyRuntime section; 3.15's from the DWARF of
 * Debian's python3.15 and python3.15-dbg.  For 3.13 and 3.14 the
 * values the interpreter publishes in _Py_DebugOffsets replace these at run
 * time (see debug_offsets.c); the rest (dict internals, code flags, type
 * fields) stays as written here.
 */
#include "interp/layout.h"

#include <stddef.h>

/* Fields that have not moved since 3.7. */
#define COMMON_OBJ(ht) \
	.obj = { .ob_type = 8, .tp_name = 24, .tp_flags = 168, .tp_basicsize = 32, \
		 .tp_dictoffset = 288, .ht_cached_keys = (ht), .managed_dict = 24 }
#define COMMON_O(dv, tuple_item_off) \
	.o = { .ob_size = 16, .bytes_sval = 32, .tuple_item = (tuple_item_off), .list_item = 24, \
	       .float_val = 16, .long_tag = 16, .long_digits = 24, .dict_used = 16, \
	       .dict_keys = 32, .dict_values = 40, .dictvalues_values = (dv), \
	       .set_used = 24, .set_mask = 32, .set_table = 40, .module_dict = 16 }
#define STR_OLD .str = { .length = 16, .state = 32, .ascii_size = 48, .compact_size = 72 }
#define STR_NEW .str = { .length = 16, .state = 32, .ascii_size = 40, .compact_size = 56 }

/* Generators: read only for asyncio tasks, 3.14+ (where _Py_DebugOffsets
 * also publishes them: gi_iframe 72, gi_frame_state 67 in 3.14 and 3.15). */
#define NO_GEN .gen = { .iframe = NONE, .frame_state = NONE }
#define GEN_314 .gen = { .iframe = 72, .frame_state = 67 }

/* 3.7–3.10: a PyFrameObject chain hanging off ts->frame. */
#define FRAME_OBJECTS(lasti_off, localsplus_off) \
	.frame = { .back = 24, .code = 32, .lasti = (lasti_off), \
		   .localsplus = (localsplus_off), .owner = NONE, .is_entry = NONE, \
		   .stackpointer = NONE, \
		   .owner_shim = 255 }
#define TSTATE_OLD \
	.tstate = { .next = 8, .interp = 16, .frame = 24, .cframe_frame = NONE, \
		    .thread_id = 176, .native_thread_id = NONE, .base_frame = NONE, \
		    .state = NONE }
#define INTERP_OLD(id_off, modules_off, collecting) \
	.interp = { .next = 0, .id = (id_off), .threads_head = 8, .modules = (modules_off), \
		    .gil_ptr = NONE, .gc_collecting = (collecting) }

static const struct py_layout py37 = {
	.minor = 7, .frames = FRAMES_OBJECTS, .lasti = LASTI_BYTES, .lines = LT_LNOTAB,
	.longs = LONG_OB_SIZE, .attrs = ATTRS_DICTOFFSET, .dictkeys = DICTKEYS_310,
	.runtime = { .interpreters_head = 24, .finalizing = 8, .gil_locked = 1280, .gil_holder = 1272,
		     .gil_switches = 1288,
		     .gc_collecting = 632 },
	INTERP_OLD(16, 40, NONE), .gil = { NONE, NONE, NONE }, TSTATE_OLD, FRAME_OBJECTS(104, 360),
	.code = { .argcount = 16, .kwonlyargcount = 20, .nlocals = 24, .flags = 32,
		  .firstlineno = 36, .varnames = 64, .localspluskinds = NONE,
		  .filename = 96, .name = 104, .qualname = NONE, .linetable = 112,
		  .code_adaptive = NONE },
	NO_GEN, COMMON_OBJ(856), STR_OLD, COMMON_O(0, 24),
};

/* 3.8 and 3.9 share code objects (co_posonlyargcount arrived in 3.8). */
#define CODE_38 \
	.code = { .argcount = 16, .kwonlyargcount = 24, .nlocals = 28, .flags = 36, \
		  .firstlineno = 40, .varnames = 72, .localspluskinds = NONE, \
		  .filename = 104, .name = 112, .qualname = NONE, .linetable = 120, \
		  .code_adaptive = NONE }

static const struct py_layout py38 = {
	.minor = 8, .frames = FRAMES_OBJECTS, .lasti = LASTI_BYTES, .lines = LT_LNOTAB,
	.longs = LONG_OB_SIZE, .attrs = ATTRS_DICTOFFSET, .dictkeys = DICTKEYS_310,
	.runtime = { .interpreters_head = 32, .finalizing = 16, .gil_locked = 1168, .gil_holder = 1160,
		     .gil_switches = 1176,
		     .gc_collecting = 544 },
	INTERP_OLD(16, 56, NONE), .gil = { NONE, NONE, NONE }, TSTATE_OLD, FRAME_OBJECTS(104, 360),
	CODE_38, NO_GEN, COMMON_OBJ(872), STR_OLD, COMMON_O(0, 24),
};

static const struct py_layout py39 = {
	.minor = 9, .frames = FRAMES_OBJECTS, .lasti = LASTI_BYTES, .lines = LT_LNOTAB,
	.longs = LONG_OB_SIZE, .attrs = ATTRS_DICTOFFSET, .dictkeys = DICTKEYS_310,
	.runtime = { .interpreters_head = 32, .finalizing = 16, .gil_locked = 368, .gil_holder = 360,
		     .gil_switches = 376,
		     .gc_collecting = NONE },
	INTERP_OLD(24, 856, 816), .gil = { NONE, NONE, NONE }, TSTATE_OLD, FRAME_OBJECTS(104, 360),
	CODE_38, NO_GEN, COMMON_OBJ(864), STR_OLD, COMMON_O(0, 24),
};

static const struct py_layout py310 = {
	.minor = 10, .frames = FRAMES_OBJECTS, .lasti = LASTI_UNITS, .lines = LT_LINETABLE,
	.longs = LONG_OB_SIZE, .attrs = ATTRS_DICTOFFSET, .dictkeys = DICTKEYS_310,
	.runtime = { .interpreters_head = 32, .finalizing = 16, .gil_locked = 368, .gil_holder = 360,
		     .gil_switches = 376,
		     .gc_collecting = NONE },
	INTERP_OLD(24, 856, 816), .gil = { NONE, NONE, NONE }, TSTATE_OLD, FRAME_OBJECTS(96, 352),
	CODE_38, NO_GEN, COMMON_OBJ(872), STR_OLD, COMMON_O(0, 24),
};

static const struct py_layout py311 = {
	.minor = 11, .frames = FRAMES_INTERP, .lasti = LASTI_PTR, .lines = LT_LOCATIONS,
	.longs = LONG_OB_SIZE, .attrs = ATTRS_MANAGED_311, .dictkeys = DICTKEYS_311,
	.runtime = { .interpreters_head = 40, .finalizing = 24, .gil_locked = 376, .gil_holder = 368,
		     .gil_switches = 384,
		     .gc_collecting = NONE },
	.interp = { .next = 0, .id = 48, .threads_head = 16, .modules = 888, .gil_ptr = NONE,
		    .gc_collecting = 848 },
	.gil = { NONE, NONE, NONE },
	.tstate = { .next = 8, .interp = 16, .frame = 56, .cframe_frame = 8,
		    .thread_id = 152, .native_thread_id = 160, .base_frame = NONE, .state = NONE },
	/* 3.11 has no shim frames; is_entry marks where a C call began. */
	.frame = { .back = 48, .code = 32, .lasti = 56, .localsplus = 72, .owner = 69,
		   .is_entry = 68, .stackpointer = NONE, .owner_shim = 255 },
	.code = { .argcount = 56, .kwonlyargcount = 64, .nlocals = 80, .flags = 48,
		  .firstlineno = 72, .varnames = 96, .localspluskinds = 104,
		  .filename = 112, .name = 120, .qualname = 128, .linetable = 136,
		  .code_adaptive = 184 },
	NO_GEN, COMMON_OBJ(872), STR_OLD, COMMON_O(0, 24),
};

static const struct py_layout py312 = {
	.minor = 12, .frames = FRAMES_INTERP, .lasti = LASTI_PTR, .lines = LT_LOCATIONS,
	.longs = LONG_LV_TAG, .attrs = ATTRS_MANAGED_312, .dictkeys = DICTKEYS_311,
	.runtime = { .interpreters_head = 40, .finalizing = 24, .gil_locked = NONE, .gil_holder = NONE,
		     .gil_switches = NONE, .gc_collecting = NONE },
	.interp = { .next = 0, .id = 8, .threads_head = 72, .modules = 944, .gil_ptr = 384,
		    .gc_collecting = 312 },
	.gil = { .locked = 16, .holder = 8, .switches = 24 },
	.tstate = { .next = 8, .interp = 16, .frame = 56, .cframe_frame = 0,
		    .thread_id = 136, .native_thread_id = 144, .base_frame = NONE, .state = NONE },
	/* Owner 3 (FRAME_OWNED_BY_CSTACK) marks the shim frame a C call pushes. */
	.frame = { .back = 8, .code = 0, .lasti = 56, .localsplus = 72, .owner = 70,
		   .is_entry = NONE, .stackpointer = NONE, .owner_shim = 3 },
	.code = { .argcount = 52, .kwonlyargcount = 60, .nlocals = 80, .flags = 48,
		  .firstlineno = 68, .varnames = 96, .localspluskinds = 104,
		  .filename = 112, .name = 120, .qualname = 128, .linetable = 136,
		  .code_adaptive = 192 },
	NO_GEN, COMMON_OBJ(880), STR_NEW, COMMON_O(0, 24),
};

/* 3.13+: what stays the same from one version to the next, with what
 * moved as arguments. */
#define MODELS_313 \
	.frames = FRAMES_INTERP, .lasti = LASTI_PTR, .lines = LT_LOCATIONS, \
	.longs = LONG_LV_TAG, .attrs = ATTRS_INLINE_313, .dictkeys = DICTKEYS_311, \
	.gil = { .locked = 16, .holder = 8, .switches = 24 }
#define RUNTIME_313(head, fin) \
	.runtime = { .interpreters_head = (head), .finalizing = (fin), \
		     .gil_locked = NONE, .gil_holder = NONE, .gil_switches = NONE, \
		     .gc_collecting = NONE }
#define INTERP_313(next_off, id_off, threads, modules_off, collecting) \
	.interp = { .next = (next_off), .id = (id_off), .threads_head = (threads), \
		    .modules = (modules_off), .gil_ptr = 16, .gc_collecting = (collecting) }
#define TSTATE_313S(tid, base, state_off) \
	.tstate = { .next = 8, .interp = 16, .frame = 72, .cframe_frame = NONE, \
		    .thread_id = (tid), .native_thread_id = (tid) + 8, .base_frame = (base), \
		    .state = (state_off) }
#define TSTATE_313(tid, base) TSTATE_313S(tid, base, NONE)
#define CODE_313(adaptive) \
	.code = { .argcount = 52, .kwonlyargcount = 60, .nlocals = NONE, .flags = 48, \
		  .firstlineno = 68, .varnames = 96, .localspluskinds = 104, \
		  .filename = 112, .name = 120, .qualname = 128, .linetable = 136, \
		  .code_adaptive = (adaptive) }
/* 3.14+: f_executable is a tagged _PyStackRef, and frames owned by the
 * interpreter itself (owner 3) join the C-stack shims (owner 4). */
#define FRAME_314 \
	.frame = { .back = 8, .code = 0, .lasti = 56, .localsplus = 80, .owner = 74, \
		   .is_entry = NONE, .stackpointer = 64, .code_tagged = 1, .owner_shim = 3 }

static const struct py_layout py313 = {
	.minor = 13, MODELS_313, RUNTIME_313(632, 608), INTERP_313(7264, 7272, 7344, 7656, 7600),
	TSTATE_313(152, NONE),
	.frame = { .back = 8, .code = 0, .lasti = 56, .localsplus = 72, .owner = 70,
		   .is_entry = NONE, .stackpointer = NONE, .owner_shim = 3 },
	CODE_313(200), NO_GEN, COMMON_OBJ(880), STR_NEW, COMMON_O(8, 24),
};

/* 3.13t, the free-threaded build (--disable-gil): the object header is 32
 * bytes, not 16 (ob_tid, flags, ob_mutex, ob_gc_bits and ob_ref_local, then
 * ob_ref_shared, before ob_type), so every field of every object, type,
 * code object and string lies 16 bytes further in; an object's managed
 * dict is the word just below it (no GC header there).  The interpreter,
 * thread states and frames are 3.13's (the GC state's `collecting` too).
 * Numbers from the DWARF and headers of 3.13.5 built with --disable-gil
 * (tests/setup-ft-python.sh); _Py_DebugOffsets replaces most at run time. */
static const struct py_layout py313t = {
	.minor = 13, .free_threaded = 1,
	.frames = FRAMES_INTERP, .lasti = LASTI_PTR, .lines = LT_LOCATIONS,
	.longs = LONG_LV_TAG, .attrs = ATTRS_INLINE_313, .dictkeys = DICTKEYS_311,
	/* The GIL state starts with `enabled` (0 here): the rest moved up. */
	.gil = { .locked = 24, .holder = 16, .switches = 32 }, RUNTIME_313(632, 608),
	INTERP_313(7264, 7272, 7344, 7664, 7600),
	/* state: after the 4-byte _status and int _whence (debug_offsets.c
	 * places it by the table's _status). */
	TSTATE_313S(152, NONE, 40),
	.frame = { .back = 8, .code = 0, .lasti = 56, .localsplus = 72, .owner = 70,
		   .is_entry = NONE, .stackpointer = NONE, .owner_shim = 3 },
	.code = { .argcount = 68, .kwonlyargcount = 76, .nlocals = NONE, .flags = 64,
		  .firstlineno = 84, .varnames = 112, .localspluskinds = 120,
		  .filename = 128, .name = 136, .qualname = 144, .linetable = 152,
		  .code_adaptive = 216 },
	NO_GEN,
	.obj = { .ob_type = 24, .tp_name = 40, .tp_flags = 184, .tp_basicsize = 48,
		 .tp_dictoffset = 304, .ht_cached_keys = 896, .managed_dict = 8 },
	.str = { .length = 32, .state = 48, .ascii_size = 56, .compact_size = 72 },
	.o = { .ob_size = 32, .bytes_sval = 48, .tuple_item = 40, .list_item = 40,
	       .float_val = 32, .long_tag = 32, .long_digits = 40, .dict_used = 32,
	       .dict_keys = 48, .dict_values = 56, .dictvalues_values = 8,
	       .set_used = 40, .set_mask = 48, .set_table = 56, .module_dict = 32 },
};

static const struct py_layout py314 = {
	.minor = 14, MODELS_313, RUNTIME_313(808, 784), INTERP_313(7272, 7280, 7344, 7688, 7600),
	TSTATE_313(152, NONE), FRAME_314, CODE_313(208), GEN_314, COMMON_OBJ(880), STR_NEW,
	COMMON_O(8, 32),
};

/* 3.15: the frame, code object and object headers are 3.14's; the thread
 * state grew (base_frame, last_profiled_frame: thread_id moved to 176), the
 * runtime and interpreter moved, and the heap type gained a word.  Frames
 * owned by the C stack are gone (owner 4), so owner 3 (the interpreter's
 * entry frames) is the only shim.  Numbers from the DWARF of Debian's
 * python3.15 and python3.15-dbg (3.15.2), which agree on all of them; the
 * debug build differs only in the sizes of _PyRuntime and the interpreter. */
static const struct py_layout py315 = {
	.minor = 15, MODELS_313, RUNTIME_313(936, 912), INTERP_313(7264, 7272, 7336, 7592, 7512),
	TSTATE_313(176, 80), FRAME_314, CODE_313(208), GEN_314, COMMON_OBJ(888), STR_NEW,
	COMMON_O(8, 32),
};

static const struct py_layout *const layouts[] = {
	&py37, &py38, &py39, &py310, &py311, &py312, &py313, &py314, &py315,
};

/* The free-threaded builds we can read. */
static const struct py_layout *const ft_layouts[] = { &py313t };

const struct py_layout *layout_for_build(int minor, int free_threaded)
{
	const struct py_layout *const *t = free_threaded ? ft_layouts : layouts;
	size_t n = free_threaded ? sizeof(ft_layouts) / sizeof(ft_layouts[0])
				 : sizeof(layouts) / sizeof(layouts[0]);

	for (size_t i = 0; i < n; i++)
		if (t[i]->minor == minor)
			return t[i];
	return NULL;
}

const struct py_layout *layout_for_minor(int minor)
{
	return layout_for_build(minor, 0);
}
