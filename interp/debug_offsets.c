/* Reading _Py_DebugOffsets, the table of offsets CPython 3.13+ places at
 * the start of _PyRuntime for tools like this one.
 *
 * The table's own layout changes with every minor version (3.13's is 584
 * bytes, 3.14's 760, 3.15's 888), and only its first 24 bytes (cookie,
 * version, free-threaded flag) are stable, so each minor version gets a
 * column of positions below (see interp/README for adding one).  The values
 * are read from the target and checked before anything trusts them: a
 * corrupt or unfamiliar table is an error, never a walk through wrong
 * offsets.
 */
#include "interp/layout.h"
#include "process/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define COOKIE "xdebugpy"
#define MAX_TABLE 1024

/* The oldest minor version with a table, and how many we know: column c
 * of every table below is 3.(FIRST_MINOR + c). */
#define FIRST_MINOR 13
#define COLUMNS 3

/* Position 0 (the cookie) in a column: that version's table does not carry
 * the field, and the value from interp/layouts.c stands. */
#define ABSENT 0

/* Where one of our fields is found in each version's _Py_DebugOffsets. */
struct dbg_field {
	const char *name;
	size_t ours;		/* offsetof(struct py_layout, ...) */
	uint16_t pos[COLUMNS];	/* byte position in the 3.13, 3.14, 3.15 tables */
	uint8_t within;		/* index into struct sizes[] the value must stay inside */
};

/* Struct sizes, also read from the table, that bound the offsets. */
enum { S_RUNTIME, S_INTERP, S_TSTATE, S_FRAME, S_CODE, S_OBJ, S_TYPE, S_HEAPTYPE,
       S_TUPLE, S_LIST, S_DICT, S_FLOAT, S_LONG, S_BYTES, S_STR, S_GEN, S_COUNT };

/* Sections a version's table lacks (ABSENT: the heap type before 3.15)
 * hold no fields of that column; their bound is size_max. */
static const uint16_t size_pos[S_COUNT][COLUMNS] = {
	[S_RUNTIME] = { 24, 24, 24 },     [S_INTERP] = { 48, 48, 48 },
	[S_TSTATE] = { 152, 176, 176 },   [S_FRAME] = { 224, 248, 312 },
	[S_CODE] = { 272, 312, 376 },     [S_OBJ] = { 352, 400, 464 },
	[S_TYPE] = { 368, 416, 480 },     [S_HEAPTYPE] = { ABSENT, ABSENT, 528 },
	[S_TUPLE] = { 400, 448, 544 },    [S_LIST] = { 424, 472, 568 },
	[S_DICT] = { 448, 528, 624 },     [S_FLOAT] = { 472, 552, 648 },
	[S_LONG] = { 488, 568, 664 },     [S_BYTES] = { 512, 592, 688 },
	[S_STR] = { 536, 616, 712 },      [S_GEN] = { ABSENT, 664, 792 },
};

#define F(field, p13, p14, p15, in) \
	{ #field, offsetof(struct py_layout, field), { p13, p14, p15 }, in }
static const struct dbg_field fields[] = {
	F(runtime.interpreters_head,	40,	40,	40,	S_RUNTIME),
	F(runtime.finalizing,		32,	32,	32,	S_RUNTIME),
	F(interp.next,			64,	64,	64,	S_INTERP),
	F(interp.id,			56,	56,	56,	S_INTERP),
	F(interp.threads_head,		72,	72,	72,	S_INTERP),
	F(interp.modules,		88,	96,	96,	S_INTERP),
	F(interp.gil_ptr,		112,	120,	120,	S_INTERP),
	F(tstate.next,			168,	192,	192,	S_TSTATE),
	F(tstate.interp,		176,	200,	200,	S_TSTATE),
	F(tstate.frame,			184,	208,	208,	S_TSTATE),
	F(tstate.thread_id,		192,	216,	240,	S_TSTATE),
	F(tstate.native_thread_id,	200,	224,	248,	S_TSTATE),
	F(tstate.base_frame,		ABSENT,	ABSENT,	216,	S_TSTATE),
	F(frame.back,			232,	256,	320,	S_FRAME),
	F(frame.code,			240,	264,	328,	S_FRAME),
	F(frame.lasti,			248,	272,	336,	S_FRAME),
	F(frame.localsplus,		256,	280,	344,	S_FRAME),
	F(frame.owner,			264,	288,	352,	S_FRAME),
	F(frame.stackpointer,		ABSENT,	296,	360,	S_FRAME),
	F(gen.iframe,			ABSENT,	680,	808,	S_GEN),
	F(gen.frame_state,		ABSENT,	688,	816,	S_GEN),
	F(code.filename,		280,	320,	384,	S_CODE),
	F(code.name,			288,	328,	392,	S_CODE),
	F(code.qualname,		296,	336,	400,	S_CODE),
	F(code.linetable,		304,	344,	408,	S_CODE),
	F(code.firstlineno,		312,	352,	416,	S_CODE),
	F(code.argcount,		320,	360,	424,	S_CODE),
	F(code.varnames,		328,	368,	432,	S_CODE),
	F(code.localspluskinds,		336,	376,	440,	S_CODE),
	F(code.code_adaptive,		344,	384,	448,	S_CODE),
	F(obj.ob_type,			360,	408,	472,	S_OBJ),
	F(obj.tp_name,			376,	424,	488,	S_TYPE),
	F(obj.tp_flags,			392,	440,	504,	S_TYPE),
	F(obj.tp_basicsize,		ABSENT,	ABSENT,	512,	S_TYPE),
	F(obj.tp_dictoffset,		ABSENT,	ABSENT,	520,	S_TYPE),
	F(obj.ht_cached_keys,		ABSENT,	ABSENT,	536,	S_HEAPTYPE),
	F(o.tuple_item,			408,	456,	552,	S_TUPLE),
	F(o.ob_size,			416,	464,	560,	S_TUPLE),
	F(o.list_item,			432,	480,	576,	S_LIST),
	F(o.dict_keys,			456,	536,	632,	S_DICT),
	F(o.dict_values,		464,	544,	640,	S_DICT),
	F(o.float_val,			480,	560,	656,	S_FLOAT),
	F(o.long_tag,			496,	576,	672,	S_LONG),
	F(o.long_digits,		504,	584,	680,	S_LONG),
	F(o.bytes_sval,			528,	608,	704,	S_BYTES),
	F(str.state,			544,	624,	720,	S_STR),
	F(str.length,			552,	632,	728,	S_STR),
	F(str.ascii_size,		560,	640,	736,	S_STR),
	F(str.compact_size,		ABSENT,	ABSENT,	744,	S_STR),
};
#undef F

/* Positions of the GIL's fields, which are relative to the interpreter. */
static const uint16_t gil_state_pos[COLUMNS] = { 120, 128, 128 };
static const uint16_t gil_locked_pos[COLUMNS] = { 136, 144, 144 };
static const uint16_t gil_holder_pos[COLUMNS] = { 144, 152, 152 };
/* The table leaves out switch_number: it follows last_holder by 16 bytes
 * (ptype /o struct _gil_runtime_state: pyenv's 3.13.0, Debian's 3.14-dbg
 * and 3.15-dbg, as in every version before). */
static const uint16_t gil_switches_after_holder[COLUMNS] = { 16, 16, 16 };
/* The thread state's int `state` (attached, detached, suspended), which a
 * free-threaded build's thread has in place of holding the GIL: the table
 * gives the 4-byte _status bitfield before it, and `state` follows it past
 * int _whence (offsetof() against 3.13.5's headers with Py_GIL_DISABLED:
 * 32, 36, 40).  Read only where layouts.c has a state (3.13t). */
static const uint16_t tstate_status_pos[COLUMNS] = { 216, ABSENT, ABSENT };
static const uint16_t state_after_status[COLUMNS] = { 8, 8, 8 };
static const uint16_t table_size[COLUMNS] = { 584, 760, 888 };
/* The GC state within the interpreter (interpreter_state.gc), and within
 * it the size and `collecting` (the gc section; ptype /o struct
 * _Py_DebugOffsets on pyenv's 3.13 and Debian's 3.14-dbg and 3.15-dbg). */
static const uint16_t interp_gc_pos[COLUMNS] = { 80, 88, 88 };
static const uint16_t gc_size_pos[COLUMNS] = { 568, 648, 752 };
static const uint16_t gc_collecting_pos[COLUMNS] = { 576, 656, 760 };

/* Upper bounds for struct sizes: generous, but small enough that a garbage
 * table cannot send us reading megabytes past an object. */
static const uint64_t size_max[S_COUNT] = {
	[S_RUNTIME] = 64u << 20, [S_INTERP] = 16u << 20, [S_TSTATE] = 64u << 10,
	[S_FRAME] = 1024, [S_CODE] = 4096, [S_OBJ] = 256, [S_TYPE] = 4096,
	[S_HEAPTYPE] = 4096, [S_TUPLE] = 256, [S_LIST] = 256, [S_DICT] = 256, [S_FLOAT] = 256,
	[S_LONG] = 256, [S_BYTES] = 256, [S_STR] = 256, [S_GEN] = 1024,
};

static uint64_t at(const uint8_t *table, unsigned pos)
{
	uint64_t v;

	memcpy(&v, table + pos, sizeof(v));
	return v;
}

int debug_offsets_probe(struct mem *m, uint64_t runtime, struct debug_offsets_info *info)
{
	uint8_t head[24];
	int rc = mem_read(m, runtime, head, sizeof(head));

	if (rc < 0)
		return rc;
	if (memcmp(head, COOKIE, 8) != 0)
		return -ENOENT;
	info->version_hex = at(head, 8);
	info->free_threaded = (int)at(head, 16);
	return 0;
}

_Static_assert(FIRST_MINOR + COLUMNS - 1 == LAYOUT_MAX_MINOR,
	       "every minor version up to LAYOUT_MAX_MINOR needs a column here");

/* The version gate: which column of the tables reads this target, or an
 * error.  Only versions with a column and a static layout get through. */
static int table_column(const struct debug_offsets_info *info, char *err, size_t errlen)
{
	int minor = (info->version_hex >> 16) & 0xff;

	if ((info->version_hex >> 24) != 3 || minor < FIRST_MINOR) {
		snprintf(err, errlen, "_Py_DebugOffsets has an impossible version 0x%llx",
			 (unsigned long long)info->version_hex);
		return status_fail(EXIT_BAD_STATE);
	}
	if (minor >= FIRST_MINOR + COLUMNS || !layout_for_minor(minor)) {
		snprintf(err, errlen, "unsupported Python version 3.%d (pystrobe reads 3.%d to 3.%d)",
			 minor, LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR);
		return status_fail(EXIT_UNSUPPORTED);
	}
	if (info->free_threaded == 1 && !layout_for_build(minor, 1)) {
		snprintf(err, errlen, "free-threaded CPython 3.%dt is not supported (pystrobe reads "
			 "3.13t, and 3.%d to 3.%d with the GIL): profile a build of 3.%d with the GIL",
			 minor, LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR, minor);
		return status_fail(EXIT_UNSUPPORTED);
	}
	if (info->free_threaded != 0 && info->free_threaded != 1) {
		snprintf(err, errlen, "_Py_DebugOffsets has a corrupt free-threaded flag %d",
			 info->free_threaded);
		return status_fail(EXIT_BAD_STATE);
	}
	return minor - FIRST_MINOR;
}

/* The struct sizes of column col, each checked against size_max. */
static int read_sizes(const uint8_t *table, int col, uint64_t *sizes, char *err, size_t errlen)
{
	for (int s = 0; s < S_COUNT; s++) {
		if (size_pos[s][col] == ABSENT) {
			sizes[s] = size_max[s];
			continue;
		}
		sizes[s] = at(table, size_pos[s][col]);
		if (sizes[s] == 0 || sizes[s] > size_max[s]) {
			snprintf(err, errlen, "_Py_DebugOffsets: implausible struct size %llu",
				 (unsigned long long)sizes[s]);
			return status_fail(EXIT_BAD_STATE);
		}
	}
	return 0;
}

/* Copy column col's fields into out, each inside its struct. */
static int read_fields(const uint8_t *table, int col, const uint64_t *sizes,
		       struct py_layout *out, char *err, size_t errlen)
{
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct dbg_field *f = &fields[i];
		uint64_t v;

		if (f->pos[col] == ABSENT)
			continue;
		v = at(table, f->pos[col]);
		if (v >= sizes[f->within]) {
			snprintf(err, errlen, "_Py_DebugOffsets: %s = %llu is outside its struct",
				 f->name, (unsigned long long)v);
			return status_fail(EXIT_BAD_STATE);
		}
		memcpy((char *)out + f->ours, &(uint32_t){ (uint32_t)v }, sizeof(uint32_t));
	}
	return 0;
}

/* The GIL fields are given relative to the interpreter; we reach the GIL
 * through interp->ceval.gil, so make them relative to it. */
static int read_gil(const uint8_t *table, int col, struct py_layout *out,
		    char *err, size_t errlen)
{
	uint64_t gs = at(table, gil_state_pos[col]);
	uint64_t lk = at(table, gil_locked_pos[col]);
	uint64_t hd = at(table, gil_holder_pos[col]);

	if (lk < gs || hd < gs || lk - gs >= 256 || hd - gs >= 256) {
		snprintf(err, errlen, "_Py_DebugOffsets: GIL fields out of place");
		return status_fail(EXIT_BAD_STATE);
	}
	out->gil.locked = (uint32_t)(lk - gs);
	out->gil.holder = (uint32_t)(hd - gs);
	out->gil.switches = out->gil.holder + gil_switches_after_holder[col];
	return 0;
}

/* interp->gc.collecting as one offset from the interpreter, inside it. */
static int read_gc(const uint8_t *table, int col, uint64_t interp_size, struct py_layout *out,
		   char *err, size_t errlen)
{
	uint64_t gc = at(table, interp_gc_pos[col]);
	uint64_t size = at(table, gc_size_pos[col]);
	uint64_t collecting = at(table, gc_collecting_pos[col]);

	if (size > interp_size || gc > interp_size - size || collecting + 4 > size) {
		snprintf(err, errlen, "_Py_DebugOffsets: GC state out of place");
		return status_fail(EXIT_BAD_STATE);
	}
	out->interp.gc_collecting = (uint32_t)(gc + collecting);
	return 0;
}

/* tstate.state where the table puts _status, inside the thread state. */
static int read_state(const uint8_t *table, int col, uint64_t tstate_size,
		      struct py_layout *out, char *err, size_t errlen)
{
	uint64_t status;

	if (out->tstate.state == NONE || tstate_status_pos[col] == ABSENT) {
		out->tstate.state = NONE;
		return 0;
	}
	status = at(table, tstate_status_pos[col]);
	if (status > tstate_size || tstate_size - status < state_after_status[col] + 4u) {
		snprintf(err, errlen, "_Py_DebugOffsets: thread state's status out of place");
		return status_fail(EXIT_BAD_STATE);
	}
	out->tstate.state = (uint32_t)(status + state_after_status[col]);
	return 0;
}

int debug_offsets_layout(struct mem *m, uint64_t runtime, struct py_layout *out,
			 char *err, size_t errlen)
{
	struct debug_offsets_info info;
	uint8_t table[MAX_TABLE];
	uint64_t sizes[S_COUNT];
	int col, rc;

	rc = debug_offsets_probe(m, runtime, &info);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read _Py_DebugOffsets at _PyRuntime");
		return status_fail(rc == -ENOENT ? EXIT_BAD_STATE : exit_code_for_errno(rc));
	}
	col = table_column(&info, err, errlen);
	if (col < 0)
		return col;
	rc = mem_read(m, runtime, table, table_size[col]);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read _Py_DebugOffsets");
		return status_fail(exit_code_for_errno(rc));
	}
	*out = *layout_for_build(FIRST_MINOR + col, info.free_threaded);
	out->str.compact_size = NONE;
	if ((rc = read_sizes(table, col, sizes, err, errlen)) < 0 ||
	    (rc = read_fields(table, col, sizes, out, err, errlen)) < 0 ||
	    (rc = read_gil(table, col, out, err, errlen)) < 0 ||
	    (rc = read_gc(table, col, sizes[S_INTERP], out, err, errlen)) < 0 ||
	    (rc = read_state(table, col, sizes[S_TSTATE], out, err, errlen)) < 0)
		return rc;
	/* Tables before 3.15 leave out PyCompactUnicodeObject's size: it adds
	 * utf8_length and utf8 to PyASCIIObject. */
	if (out->str.compact_size == NONE)
		out->str.compact_size = out->str.ascii_size + 16;
	return 0;
}
