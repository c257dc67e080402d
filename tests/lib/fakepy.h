/* Synthetic CPython memory for tests.
 *
 * A `struct fakepy` lays out, in a few growable arenas at fixed fake
 * addresses, what the walker expects to find in a live interpreter: a
 * _PyRuntime with the main interpreter (and subinterpreters), thread states, frames, code objects and
 * the objects they point at.  Every field is placed through the offsets of a
 * `struct py_layout`, so one builder serves every version in the table; the
 * tests then read the result back through a mem_fake exactly as the walker
 * reads a live process.
 *
 * Objects are written into host buffers as they are built; fp_mem() copies
 * the arenas into a new mem_fake, so a test can build, take a mem, corrupt a
 * field and take another.
 */
#ifndef PYSTROBE_TEST_FAKEPY_H
#define PYSTROBE_TEST_FAKEPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/layout.h"
#include "process/mem.h"
#include "python/locate.h"

/* Where things go.  The arenas are far apart, so a test can corrupt (or
 * fuzz) one kind of memory and leave the rest alone. */
enum fp_arena {
	FP_STATE,	/* _PyRuntime, the interpreter, thread states, the GIL */
	FP_OBJ,		/* types, strings, numbers, containers */
	FP_CODE,	/* code objects and their line tables */
	FP_FRAME,	/* frames: PyFrameObjects or the data stack */
	FP_NARENAS
};

#define FP_ARENA_BASE(a)	(0x10000000ull * ((a) + 1))
/* An address no arena ever reaches. */
#define FP_UNMAPPED		0xdead0000ull

/* co_flags and co_localspluskinds bits the builder knows about. */
#define FP_CO_VARARGS		0x04
#define FP_CO_VARKEYWORDS	0x08
#define FP_KIND_LOCAL		0x20
#define FP_KIND_CELL		0x40
#define FP_KIND_FREE		0x80

/* PyUnicode state bits (see src/python/pyobj.c). */
#define FP_STATE_KIND(k)	((uint32_t)(k) << 2)
#define FP_STATE_COMPACT	(1u << 5)
#define FP_STATE_ASCII		(1u << 6)
#define FP_STATE_READY		(1u << 7)	/* <= 3.11 only */

struct fp_arena_buf {
	uint8_t *data;
	size_t used, cap;
};

struct fakepy {
	const struct py_layout *L;
	struct fp_arena_buf arena[FP_NARENAS];

	/* Type objects, made by fp_new. */
	struct {
		uint64_t type, object, str, bytes, int_, bool_, float_, tuple,
			 list, dict, none, module, code, frame, function, cell;
	} t;
	uint64_t none, true_, false_;

	uint64_t runtime;	/* &_PyRuntime */
	uint64_t interp;	/* the main interpreter */
	uint64_t gil;		/* 3.12+: its _gil_runtime_state */
	uint64_t last_thread;	/* tail of the thread list, for appending */
	/* At least this many bytes for each thread state made from now on
	 * (0: what the layout's fields need): room for fields of
	 * _PyThreadStateImpl, such as the asyncio task list. */
	size_t tstate_size;
};

/* A fresh interpreter with no threads, for layout L. */
struct fakepy *fp_new(const struct py_layout *L);
void fp_free(struct fakepy *fp);

/* A new mem_fake holding a copy of every arena as it is now. */
struct mem *fp_mem(const struct fakepy *fp);
/* A reader of the memory of now: it reads the snapshot the latest
 * fp_now_take() took, so that a test can change the memory under one
 * reader kept by what it tests (a code cache's, a sampler's).  mem_close()
 * of &now->mem closes that snapshot. */
struct fp_now {
	struct mem mem;
	struct mem *cur;
};

void fp_now_init(struct fp_now *now);
/* Its snapshot replaced by fp_mem(fp). */
void fp_now_take(struct fp_now *now, const struct fakepy *fp);

/* What a test hands to pystack_threads: runtime, minor, version, layout. */
void fp_pyinterp(const struct fakepy *fp, struct pyinterp *pi);

/* --- raw memory ----------------------------------------------------------- */

/* size zeroed bytes in arena a, 16-byte aligned. */
uint64_t fp_alloc(struct fakepy *fp, enum fp_arena a, size_t size);
/* The host copy of [addr, addr + len); aborts the test if not allocated. */
void *fp_ptr(struct fakepy *fp, uint64_t addr, size_t len);
void fp_w64(struct fakepy *fp, uint64_t addr, uint64_t v);
void fp_w32(struct fakepy *fp, uint64_t addr, uint32_t v);
void fp_w8(struct fakepy *fp, uint64_t addr, uint8_t v);
uint64_t fp_r64(struct fakepy *fp, uint64_t addr);

/* --- objects -------------------------------------------------------------- */

/* A type object named name (its own type is fp->t.type). */
uint64_t fp_type(struct fakepy *fp, const char *name);
/* An object of the given type with size bytes (header included). */
uint64_t fp_object(struct fakepy *fp, enum fp_arena a, uint64_t type, size_t size);

/* A str from UTF-8, in the narrowest kind that holds it, compact, as
 * CPython makes them. */
uint64_t fp_str(struct fakepy *fp, const char *utf8);
/* A str of n code points in the given kind (1, 2, 4); ascii only with kind
 * 1.  compact false makes a legacy string with its data in a separate
 * block.  The data is stored as given: no check that it fits the kind. */
uint64_t fp_str_cps(struct fakepy *fp, const uint32_t *cps, size_t n, unsigned kind,
		    bool ascii, bool compact);
/* Header fields of an existing str, to make it lie. */
void fp_str_set_length(struct fakepy *fp, uint64_t str, uint64_t length);
void fp_str_set_state(struct fakepy *fp, uint64_t str, uint32_t state);
uint32_t fp_str_state(struct fakepy *fp, uint64_t str);
/* The data pointer slot of a legacy (non-compact) str. */
uint64_t fp_str_data_slot(struct fakepy *fp, uint64_t str);

uint64_t fp_bytes(struct fakepy *fp, const void *data, size_t n);
/* An int; the representation follows L->longs. */
uint64_t fp_long(struct fakepy *fp, int64_t v);
/* An int from raw 30-bit digits, least significant first; sign -1, 0, 1. */
uint64_t fp_long_digits(struct fakepy *fp, int sign, const uint32_t *digits, size_t n);
uint64_t fp_float(struct fakepy *fp, double d);
uint64_t fp_tuple(struct fakepy *fp, const uint64_t *items, size_t n);
uint64_t fp_list(struct fakepy *fp, const uint64_t *items, size_t n);
uint64_t fp_module(struct fakepy *fp, uint64_t dict);

/* Dict keys kind for fp_dict_ex: what 3.11+ calls dk_kind.  Ignored on
 * 3.7-3.10, whose keys objects have one entry format. */
enum fp_dict_kind {
	FP_DICT_AUTO = -1,	/* unicode when every key is a str */
	FP_DICT_GENERAL = 0,
	FP_DICT_UNICODE = 1,
	FP_DICT_SPLIT = 2,
};

/* A combined-table dict of n items (keys[i] may be 0: a deleted entry). */
uint64_t fp_dict(struct fakepy *fp, const uint64_t *keys, const uint64_t *values, size_t n);
uint64_t fp_dict_ex(struct fakepy *fp, const uint64_t *keys, const uint64_t *values,
		    size_t n, enum fp_dict_kind kind);
/* A keys object alone (for split tables and shared type keys); values may
 * be NULL to leave the entries' value slots empty. */
uint64_t fp_dict_keys(struct fakepy *fp, const uint64_t *keys, const uint64_t *values,
		      size_t n, enum fp_dict_kind kind);
/* A split values block for n values, as ma_values points at it. */
uint64_t fp_dict_values(struct fakepy *fp, const uint64_t *values, size_t n);
/* Address of dk_nentries in a keys object, to make it lie. */
uint64_t fp_dict_keys_nentries(struct fakepy *fp, uint64_t keys);

/* An instance of a new class whose attributes (names[i] = values[i]) live
 * wherever this version keeps them: dict_offset dict on <= 3.10, the
 * managed dict or the values beside the object (shared == true) on 3.11+. */
uint64_t fp_instance(struct fakepy *fp, const char *type_name, const char *const *names,
		     const uint64_t *values, size_t n, bool shared);
/* Another instance of the class of obj (made by fp_instance, shared false)
 * at a new address, with the very same attributes: its dict is obj's. */
uint64_t fp_instance_again(struct fakepy *fp, uint64_t obj);

/* --- code and frames ------------------------------------------------------ */

struct fp_code_spec {
	const char *name;
	const char *qualname;	/* NULL: same as name */
	const char *filename;
	int firstlineno;
	/* The source line of each instruction (one code unit each). */
	const int *lines;
	int ninstr;
	int argcount, kwonlyargcount, flags;
	/* Local names, arguments first; on 3.11+ also cells and frees, with
	 * their kinds (NULL: every one a plain local). */
	const char *const *varnames;
	int nvarnames;
	const uint8_t *kinds;
};

uint64_t fp_code(struct fakepy *fp, const struct fp_code_spec *spec);
/* The code object's str fields, to make them lie. */
uint64_t fp_code_field(const struct fakepy *fp, uint64_t code, uint32_t off);

/* Frame owners (3.11+). */
#define FP_OWNED_BY_THREAD	0
#define FP_OWNED_BY_GENERATOR	1
#define FP_OWNED_BY_FRAME_OBJECT 2

struct fp_frame_spec {
	uint64_t code;		/* or any object (a shim's None) */
	int instr;		/* instruction being run; -1: not started */
	uint64_t back;		/* the caller's frame, 0 at the bottom */
	int owner;		/* 3.11+ */
	bool tag;		/* 3.14: set a tag bit on f_executable and locals */
	const uint64_t *locals;	/* localsplus slots */
	int nlocals;
};

/* One frame: a PyFrameObject on <= 3.10, an _PyInterpreterFrame after. */
uint64_t fp_frame_ex(struct fakepy *fp, const struct fp_frame_spec *spec);
uint64_t fp_frame(struct fakepy *fp, uint64_t code, int instr, uint64_t back);
/* Point an existing frame at another code object (or anything), running
 * instruction instr of it: the instruction pointer moves with the code. */
void fp_frame_set_code(struct fakepy *fp, uint64_t frame, uint64_t code, int instr);
/* The owner value of a shim frame on this version (0 where there are none). */
int fp_owner_shim(const struct fakepy *fp);

/* --- threads -------------------------------------------------------------- */

/* Append a thread state whose current frame is frame (0: none). */
uint64_t fp_thread(struct fakepy *fp, uint64_t frame, uint64_t ident, uint32_t tid);
/* The same in another interpreter than the main one. */
uint64_t fp_thread_in(struct fakepy *fp, uint64_t interp, uint64_t frame, uint64_t ident,
		      uint32_t tid);
/* Who holds the GIL (0: no one); locked says whether it is taken. */
void fp_gil(struct fakepy *fp, uint64_t tstate, bool locked);
/* The same for interp's GIL (before 3.12 all share the one in _PyRuntime). */
void fp_gil_in(struct fakepy *fp, uint64_t interp, uint64_t tstate, bool locked);
/* A subinterpreter with this id and no threads, put at the head of the
 * runtime's list as CPython does (the main one stays last), with a GIL of
 * its own from 3.12. */
uint64_t fp_interp(struct fakepy *fp, int64_t id);
/* sys.modules. */
void fp_set_modules(struct fakepy *fp, uint64_t dict);

#endif
