/* Reading _Py_DebugOffsets, the table of offsets CPython 3.13+ places at
 * the start of _PyRuntime for tools like this one.
 *
 * The table's own layout changes with every minor version (3.13's is 584
 * bytes, 3.14's 760), and only its first 24 bytes (cookie, version,
 * free-threaded flag) are stable, so each minor version gets a row of
 * positions below.  The values are read from the target and checked before
 * anything trusts them: a corrupt or unfamiliar table is an error, never a
 * walk through wrong offsets.
 */
#include "interp/layout.h"
#include "target/mem.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define COOKIE "xdebugpy"
#define MAX_TABLE 1024

/* Where one of our fields is found in each version's _Py_DebugOffsets. */
struct dbg_field {
	const char *name;
	size_t ours;		/* offsetof(struct py_layout, ...) */
	uint16_t pos[2];	/* byte position in the 3.13, 3.14 tables */
	uint8_t within;		/* index into struct sizes[] the value must stay inside */
};

/* Struct sizes, also read from the table, that bound the offsets. */
enum { S_RUNTIME, S_INTERP, S_TSTATE, S_FRAME, S_CODE, S_OBJ, S_TYPE, S_TUPLE,
       S_LIST, S_DICT, S_FLOAT, S_LONG, S_BYTES, S_STR, S_COUNT };

static const uint16_t size_pos[S_COUNT][2] = {
	[S_RUNTIME] = { 24, 24 },   [S_INTERP] = { 48, 48 },  [S_TSTATE] = { 152, 176 },
	[S_FRAME] = { 224, 248 },   [S_CODE] = { 272, 312 },  [S_OBJ] = { 352, 400 },
	[S_TYPE] = { 368, 416 },    [S_TUPLE] = { 400, 448 }, [S_LIST] = { 424, 472 },
	[S_DICT] = { 448, 528 },    [S_FLOAT] = { 472, 552 }, [S_LONG] = { 488, 568 },
	[S_BYTES] = { 512, 592 },   [S_STR] = { 536, 616 },
};

#define F(field, p13, p14, in) { #field, offsetof(struct py_layout, field), { p13, p14 }, in }
static const struct dbg_field fields[] = {
	F(runtime.interpreters_head, 40, 40, S_RUNTIME),
	F(runtime.finalizing, 32, 32, S_RUNTIME),
	F(interp.next, 64, 64, S_INTERP),
	F(interp.id, 56, 56, S_INTERP),
	F(interp.threads_head, 72, 72, S_INTERP),
	F(interp.modules, 88, 96, S_INTERP),
	F(interp.gil_ptr, 112, 120, S_INTERP),
	F(tstate.next, 168, 192, S_TSTATE),
	F(tstate.interp, 176, 200, S_TSTATE),
	F(tstate.frame, 184, 208, S_TSTATE),
	F(tstate.thread_id, 192, 216, S_TSTATE),
	F(tstate.native_thread_id, 200, 224, S_TSTATE),
	F(frame.back, 232, 256, S_FRAME),
	F(frame.code, 240, 264, S_FRAME),
	F(frame.lasti, 248, 272, S_FRAME),
	F(frame.localsplus, 256, 280, S_FRAME),
	F(frame.owner, 264, 288, S_FRAME),
	F(code.filename, 280, 320, S_CODE),
	F(code.name, 288, 328, S_CODE),
	F(code.qualname, 296, 336, S_CODE),
	F(code.linetable, 304, 344, S_CODE),
	F(code.firstlineno, 312, 352, S_CODE),
	F(code.argcount, 320, 360, S_CODE),
	F(code.varnames, 328, 368, S_CODE),
	F(code.localspluskinds, 336, 376, S_CODE),
	F(code.code_adaptive, 344, 384, S_CODE),
	F(obj.ob_type, 360, 408, S_OBJ),
	F(obj.tp_name, 376, 424, S_TYPE),
	F(obj.tp_flags, 392, 440, S_TYPE),
	F(o.tuple_item, 408, 456, S_TUPLE),
	F(o.ob_size, 416, 464, S_TUPLE),
	F(o.list_item, 432, 480, S_LIST),
	F(o.dict_keys, 456, 536, S_DICT),
	F(o.dict_values, 464, 544, S_DICT),
	F(o.float_val, 480, 560, S_FLOAT),
	F(o.long_tag, 496, 576, S_LONG),
	F(o.long_digits, 504, 584, S_LONG),
	F(o.bytes_sval, 528, 608, S_BYTES),
	F(str.state, 544, 624, S_STR),
	F(str.length, 552, 632, S_STR),
	F(str.ascii_size, 560, 640, S_STR),
};
#undef F

/* Positions of the GIL's fields, which are relative to the interpreter. */
static const uint16_t gil_state_pos[2] = { 120, 128 };
static const uint16_t gil_locked_pos[2] = { 136, 144 };
static const uint16_t gil_holder_pos[2] = { 144, 152 };
static const uint16_t table_size[2] = { 584, 760 };

/* Upper bounds for struct sizes: generous, but small enough that a garbage
 * table cannot send us reading megabytes past an object. */
static const uint64_t size_max[S_COUNT] = {
	[S_RUNTIME] = 64u << 20, [S_INTERP] = 16u << 20, [S_TSTATE] = 64u << 10,
	[S_FRAME] = 1024, [S_CODE] = 4096, [S_OBJ] = 256, [S_TYPE] = 4096,
	[S_TUPLE] = 256, [S_LIST] = 256, [S_DICT] = 256, [S_FLOAT] = 256,
	[S_LONG] = 256, [S_BYTES] = 256, [S_STR] = 256,
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

int debug_offsets_layout(struct mem *m, uint64_t runtime, struct py_layout *out,
			 char *err, size_t errlen)
{
	struct debug_offsets_info info;
	uint8_t table[MAX_TABLE];
	uint64_t sizes[S_COUNT];
	const struct py_layout *base;
	int minor, col, rc;

	rc = debug_offsets_probe(m, runtime, &info);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read _Py_DebugOffsets at _PyRuntime");
		return rc == -ENOENT ? -EXIT_BAD_STATE : -exit_code_for_errno(rc);
	}
	minor = (info.version_hex >> 16) & 0xff;
	if ((info.version_hex >> 24) != 3 || minor < 13) {
		snprintf(err, errlen, "_Py_DebugOffsets has an impossible version 0x%llx",
			 (unsigned long long)info.version_hex);
		return -EXIT_BAD_STATE;
	}
	base = layout_for_minor(minor);
	if (!base) {
		snprintf(err, errlen, "unsupported Python version 3.%d (pystrobe reads 3.%d to 3.%d)",
			 minor, LAYOUT_MIN_MINOR, LAYOUT_MAX_MINOR);
		return -EXIT_UNSUPPORTED;
	}
	if (info.free_threaded != 0) {
		snprintf(err, errlen, "free-threaded Python 3.%d%s is not supported yet", minor,
			 info.free_threaded == 1 ? "t" : " (corrupt flag)");
		return info.free_threaded == 1 ? -EXIT_UNSUPPORTED : -EXIT_BAD_STATE;
	}
	col = minor - 13;
	rc = mem_read(m, runtime, table, table_size[col]);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read _Py_DebugOffsets");
		return -exit_code_for_errno(rc);
	}

	for (int s = 0; s < S_COUNT; s++) {
		sizes[s] = at(table, size_pos[s][col]);
		if (sizes[s] == 0 || sizes[s] > size_max[s]) {
			snprintf(err, errlen, "_Py_DebugOffsets: implausible struct size %llu",
				 (unsigned long long)sizes[s]);
			return -EXIT_BAD_STATE;
		}
	}

	*out = *base;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct dbg_field *f = &fields[i];
		uint64_t v = at(table, f->pos[col]);

		if (v >= sizes[f->within]) {
			snprintf(err, errlen, "_Py_DebugOffsets: %s = %llu is outside its struct",
				 f->name, (unsigned long long)v);
			return -EXIT_BAD_STATE;
		}
		memcpy((char *)out + f->ours, &(uint32_t){ (uint32_t)v }, sizeof(uint32_t));
	}

	/* The GIL fields are given relative to the interpreter; we reach the
	 * GIL through interp->ceval.gil, so make them relative to it. */
	{
		uint64_t gs = at(table, gil_state_pos[col]);
		uint64_t lk = at(table, gil_locked_pos[col]);
		uint64_t hd = at(table, gil_holder_pos[col]);

		if (lk < gs || hd < gs || lk - gs >= 256 || hd - gs >= 256) {
			snprintf(err, errlen, "_Py_DebugOffsets: GIL fields out of place");
			return -EXIT_BAD_STATE;
		}
		out->gil.locked = (uint32_t)(lk - gs);
		out->gil.holder = (uint32_t)(hd - gs);
	}
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject. */
	out->str.compact_size = out->str.ascii_size + 16;
	return 0;
}
