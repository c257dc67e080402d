/* Finding the interpreter, on the interpreters of this machine:
 * _Py_DebugOffsets parsing and checking (3.13+), ELF symbols and load
 * biases, and a failed locate of a live process.  (Versions from file
 * names and unreadable offsets are unit/check_locate.c.)
 *
 * The debug-offset tables are the real ones, taken from the .PyRuntime
 * section of the interpreters on this machine, then damaged one field at a
 * time to show that each check refuses them.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdbool.h>

#include "interpreters.h"
#include "interp/layout.h"
#include "python/locate.h"
#include "process/mem.h"
#include "process/elffile.h"
#include "util/util.h"
#include "suite.h"

#define RUNTIME 0x7f0000001000ull

/* The first bytes of the .PyRuntime section of an ELF file: the initial
 * _PyRuntime, which starts with _Py_DebugOffsets on 3.13+. */
static int section_bytes(const char *path, uint8_t *buf, size_t len)
{
	struct elffile *ef = elffile_open(path);
	uint64_t addr, size;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int fd, rc = -1;
	Elf *elf;

	if (!ef)
		return -1;
	if (elffile_section(ef, ".PyRuntime", &addr, &size) != 0 || size < len) {
		elffile_close(ef);
		return -1;
	}
	elffile_close(ef);
	/* Read the section's file contents with libelf directly. */
	fd = open(path, O_RDONLY);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	elf_getshdrstrndx(elf, &shstrndx);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".PyRuntime") != 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_size >= len) {
			memcpy(buf, d->d_buf, len);
			rc = 0;
		}
	}
	elf_end(elf);
	close(fd);
	return rc;
}

struct real_table {
	const char *label;
	int minor;
	bool dbg;		/* a Py_DEBUG build: same table, other sizes */
	bool ft;		/* a free-threaded build ("3.13t ft-build") */
	uint8_t bytes[1024];
	int ok;
};

/* Every minor version with a table, release and debug builds. */
static struct real_table tables[] = {
	{ .minor = 13 }, { .minor = 13, .ft = true }, { .minor = 14 },
	{ .minor = 14, .dbg = true }, { .minor = 15 }, { .minor = 15, .dbg = true },
};
#define NTABLES ((int)(sizeof(tables) / sizeof(tables[0])))

static struct real_table *table_slot(const struct test_interp *ti)
{
	bool dbg = strstr(ti->label, "-dbg") != NULL, ft = strstr(ti->label, "t ft-") != NULL;

	for (int k = 0; k < NTABLES; k++)
		if (tables[k].minor == ti->minor && tables[k].dbg == dbg && tables[k].ft == ft)
			return &tables[k];
	return NULL;
}

static void load_tables(void)
{
	const struct test_interp *ti;
	int n = test_interps(&ti);

	for (int i = 0; i < n; i++) {
		char path[PATH_MAX * 2];
		struct real_table *t = table_slot(&ti[i]);

		if (!t || t->ok)
			continue;
		if (ti[i].root[0])
			snprintf(path, sizeof(path), "%s%s", ti[i].root, ti[i].path);
		else
			snprintf(path, sizeof(path), "%s", ti[i].path);
		/* pyenv's python is linked against libpython: look there. */
		if (section_bytes(path, t->bytes, sizeof(t->bytes)) != 0) {
			char *lib = strdup(path), *slash;

			slash = strrchr(lib, '/');
			if (slash && slash - lib > 4 && !strncmp(slash - 4, "/bin", 4)) {
				*(slash - 4) = 0;
				snprintf(path, sizeof(path), "%s/lib/libpython3.%d.so.1.0", lib, ti[i].minor);
			}
			free(lib);
			if (section_bytes(path, t->bytes, sizeof(t->bytes)) != 0)
				continue;
		}
		t->label = ti[i].label;
		t->ok = 1;
		fprintf(stderr, "locate: _Py_DebugOffsets of 3.%d%s%s from %s\n", t->minor,
			t->ft ? "t" : "", t->dbg ? "-dbg" : "", path);
	}
	for (int i = 0; i < NTABLES; i++)
		if (!tables[i].ok)
			test_skip("locate: no 3.%d%s%s interpreter: its table is not tested%s",
				  tables[i].minor, tables[i].ft ? "t" : "", tables[i].dbg ? "-dbg" : "",
				  tables[i].ft ? " (tests/setup-ft-python.sh builds it)" : "");
}

static int layout_from(const uint8_t *bytes, struct py_layout *L, char *err)
{
	struct mem *m = mem_fake_new();
	int rc;

	mem_fake_add(m, RUNTIME, bytes, 1024);
	rc = debug_offsets_layout(m, RUNTIME, L, err, 256);
	mem_close(m);
	return rc;
}

static void put64(uint8_t *b, unsigned pos, uint64_t v)
{
	memcpy(b + pos, &v, 8);
}

START_TEST(test_real_tables_match_static)
{
	struct real_table *t = &tables[_i];
	struct py_layout L;
	const struct py_layout *S;
	char err[256];

	if (!t->ok)
		return;
	ck_assert_msg(layout_from(t->bytes, &L, err) == 0, "3.%d: %s", t->minor, err);
	S = layout_for_build(t->minor, t->ft);
	/* The static table was written from the same builds: every field the
	 * offsets provide must agree with it. */
	ck_assert_int_eq(L.free_threaded, t->ft);
	ck_assert_int_eq(L.obj.ob_type, S->obj.ob_type);
	ck_assert_int_eq(L.obj.tp_name, S->obj.tp_name);
	ck_assert_int_eq(L.obj.tp_flags, S->obj.tp_flags);
	ck_assert_int_eq(L.o.ob_size, S->o.ob_size);
	ck_assert_int_eq(L.o.list_item, S->o.list_item);
	ck_assert_int_eq(L.o.bytes_sval, S->o.bytes_sval);
	ck_assert_int_eq(L.o.float_val, S->o.float_val);
	ck_assert_int_eq(L.o.long_tag, S->o.long_tag);
	ck_assert_int_eq(L.o.dict_values, S->o.dict_values);
	ck_assert_int_eq(L.str.length, S->str.length);
	ck_assert_int_eq(L.str.state, S->str.state);
	ck_assert_int_eq(L.code.argcount, S->code.argcount);
	ck_assert_int_eq(L.code.varnames, S->code.varnames);
	ck_assert_int_eq(L.interp.gc_collecting, S->interp.gc_collecting);
	ck_assert_int_eq(L.runtime.interpreters_head, S->runtime.interpreters_head);
	ck_assert_int_eq(L.interp.threads_head, S->interp.threads_head);
	ck_assert_int_eq(L.interp.modules, S->interp.modules);
	ck_assert_int_eq(L.interp.gil_ptr, S->interp.gil_ptr);
	ck_assert_int_eq(L.gil.locked, S->gil.locked);
	ck_assert_int_eq(L.gil.holder, S->gil.holder);
	ck_assert_int_eq(L.tstate.frame, S->tstate.frame);
	ck_assert_int_eq(L.tstate.thread_id, S->tstate.thread_id);
	ck_assert_int_eq(L.tstate.native_thread_id, S->tstate.native_thread_id);
	/* 3.13t: placed by the table's _status, 40 (offsetof() with the
	 * build's headers); NONE on builds with a GIL. */
	ck_assert_int_eq(L.tstate.state, S->tstate.state);
	ck_assert_int_eq(L.tstate.state, t->ft ? 40 : NONE);
	ck_assert_int_eq(L.frame.back, S->frame.back);
	ck_assert_int_eq(L.frame.lasti, S->frame.lasti);
	ck_assert_int_eq(L.frame.localsplus, S->frame.localsplus);
	ck_assert_int_eq(L.frame.owner, S->frame.owner);
	ck_assert_int_eq(L.code.filename, S->code.filename);
	ck_assert_int_eq(L.code.qualname, S->code.qualname);
	ck_assert_int_eq(L.code.linetable, S->code.linetable);
	ck_assert_int_eq(L.code.firstlineno, S->code.firstlineno);
	ck_assert_int_eq(L.code.code_adaptive, S->code.code_adaptive);
	ck_assert_int_eq(L.str.ascii_size, S->str.ascii_size);
	ck_assert_int_eq(L.str.compact_size, S->str.compact_size);
	ck_assert_int_eq(L.o.tuple_item, S->o.tuple_item);
	ck_assert_int_eq(L.o.dict_keys, S->o.dict_keys);
	ck_assert_int_eq(L.obj.tp_basicsize, S->obj.tp_basicsize);
	ck_assert_int_eq(L.obj.tp_dictoffset, S->obj.tp_dictoffset);
	ck_assert_int_eq(L.obj.ht_cached_keys, S->obj.ht_cached_keys);
}
END_TEST

START_TEST(test_bad_cookie)
{
	struct real_table *t = &tables[_i];
	uint8_t b[1024];
	struct py_layout L;
	char err[256];

	if (!t->ok)
		return;
	memcpy(b, t->bytes, sizeof(b));
	b[0] = 'X';
	ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_BAD_STATE));
}
END_TEST

START_TEST(test_unknown_version)
{
	struct real_table *t = &tables[_i];
	uint8_t b[1024];
	struct py_layout L;
	char err[256];

	if (!t->ok)
		return;
	memcpy(b, t->bytes, sizeof(b));
	put64(b, 8, 0x031000a1);	/* 3.16.0a1 */
	ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_UNSUPPORTED));
	ck_assert_msg(strstr(err, "unsupported Python version 3.16 (pystrobe reads 3.7 to 3.15)"),
		      "message names the versions: %s", err);
	put64(b, 8, 0x031400f0);	/* 3.20.0 */
	ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_UNSUPPORTED));
	put64(b, 8, 0x020700f0);	/* not 3.x at all */
	ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_BAD_STATE));
}
END_TEST

START_TEST(test_free_threaded)
{
	struct real_table *t = &tables[_i];
	uint8_t b[1024];
	struct py_layout L;
	char err[256];

	if (!t->ok)
		return;
	memcpy(b, t->bytes, sizeof(b));
	put64(b, 16, 1);
	if (t->minor == 13) {
		/* 3.13t is read, with its own object header. */
		ck_assert_msg(layout_from(b, &L, err) == 0, "3.13 as 3.13t: %s", err);
		ck_assert_int_eq(L.free_threaded, 1);
		ck_assert_int_eq(L.obj.managed_dict, 8);
	} else {
		char want[128];

		snprintf(want, sizeof(want), "free-threaded CPython 3.%dt is not supported "
			 "(pystrobe reads 3.13t, and 3.7 to 3.15 with the GIL)", t->minor);
		ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_UNSUPPORTED));
		ck_assert_msg(strstr(err, want), "%s", err);
	}
	put64(b, 16, 7);
	ck_assert_int_eq(layout_from(b, &L, err), status_fail(EXIT_BAD_STATE));
}
END_TEST

/* Each struct size and each offset, made absurd in turn, is refused.  The
 * counts are what pystrobe reads of each table (section sizes, fields, the
 * GIL's three, the GC's three): 3.15's are every word of ptype/o struct
 * _Py_DebugOffsets up to the gc section's collecting but threads_main,
 * sysdict, builtins,
 * gil_runtime_state_enabled, code_object_generation, tlbc_generation, prev,
 * last_profiled_frame(_seq), datastack_chunk, status (but on 3.13t,
 * where it places the thread state's `state`), holds_gil, gil_requested, current_exception, exc_state, exc_value,
 * tlbc_index, co_tlbc, tp_repr, list and bytes ob_size and the set section
 * (3.14 and 3.15 also read the frame's stackpointer, for asyncio; the
 * generator section they read lies past `end`). */
START_TEST(test_absurd_fields)
{
	static const struct { unsigned end, used; } per_minor[] = {
		[13] = { 584, 61 }, [14] = { 664, 62 }, [15] = { 768, 68 },
	};
	struct real_table *t = &tables[_i];
	struct py_layout L;
	char err[256];
	int refused = 0;

	if (!t->ok)
		return;
	for (unsigned pos = 24; pos < per_minor[t->minor].end; pos += 8) {
		uint8_t b[1024];

		memcpy(b, t->bytes, sizeof(b));
		put64(b, pos, 1ull << 40);
		if (layout_from(b, &L, err) == status_fail(EXIT_BAD_STATE))
			refused++;
	}
	/* Fields we do not use may take any value; every one we use is checked. */
	ck_assert_msg(refused == (int)per_minor[t->minor].used + t->ft, "3.%d%s%s: %d absurd fields "
		      "refused, not %u", t->minor, t->ft ? "t" : "", t->dbg ? "-dbg" : "", refused,
		      per_minor[t->minor].used + t->ft);
}
END_TEST

/* Debian's python3.11 is a non-PIE executable: bias 0.  A shared libpython
 * mapped at some address: bias = that address minus its first segment. */
START_TEST(test_load_bias)
{
	struct elffile *ef = elffile_open("/usr/bin/python3.11");
	const struct test_interp *ti;
	uint64_t bias = 1, addr;
	int n;

	if (ef) {
		ck_assert_int_eq(elffile_load_bias(ef, 0x400000, 0, &bias), 0);
		ck_assert_uint_eq(bias, 0);
		ck_assert_int_eq(elffile_section(ef, ".PyRuntime", &addr, NULL), 0);
		ck_assert_int_eq(elffile_symbol(ef, "_PyRuntime", &bias, NULL), 0);
		ck_assert_uint_eq(bias, addr);
		elffile_close(ef);
	} else {
		test_skip("locate: no /usr/bin/python3.11 (apt-get install python3): "
			  "the non-PIE bias test did not run");
	}
	n = test_interps(&ti);
	for (int i = 0; i < n; i++) {
		char lib[PATH_MAX];
		const char *bin = strstr(ti[i].path, "/bin/python3.");

		if (!strstr(ti[i].label, "pyenv") || !bin || ti[i].minor != 12)
			continue;
		snprintf(lib, sizeof(lib), "%.*s/lib/libpython3.12.so.1.0",
			 (int)(bin - ti[i].path), ti[i].path);
		ef = elffile_open(lib);
		ck_assert_ptr_nonnull(ef);
		ck_assert_int_eq(elffile_load_bias(ef, 0x7f0000000000ull, 0, &bias), 0);
		ck_assert_uint_eq(bias, 0x7f0000000000ull);
		elffile_close(ef);
		break;
	}
}
END_TEST

/* A failure after the interpreter was found leaves nothing to free.  Here
 * a 3.13+ process whose _Py_DebugOffsets cannot be read (as while it
 * starts or exits); up to 3.12 the version can come from the file name
 * and the layout from our tables, so unreadable memory fails later. */
START_TEST(test_failure_frees)
{
	const struct test_interp *ti;
	int n = test_interps(&ti), tried = 0;

	for (int i = 0; i < n; i++) {
		char *argv[] = { (char *)ti[i].path, "-c", "import time; time.sleep(30)", NULL };
		struct mem *real, *none;
		struct locate_src src;
		struct pyinterp pi;
		char err[256];
		pid_t pid;
		int rc = -1;

		if (ti[i].env[0] || ti[i].minor < 13 || tried)
			continue;
		pid = test_interp_spawn(&ti[i], argv, 0);
		ck_assert_int_gt(pid, 0);
		real = mem_proc_open(pid);
		for (int k = 0; k < 200 && rc != 0; k++) {
			usleep(10000);
			locate_src_live(&src, pid);
			if ((rc = locate_python(&src, real, &pi, err, sizeof(err))) == 0)
				pyinterp_free(&pi);
			locate_src_release(&src);
		}
		ck_assert_msg(rc == 0, "%s never became readable: %s", ti[i].label, err);
		none = mem_fake_new();
		memset(&pi, 0xa5, sizeof(pi));
		locate_src_live(&src, pid);
		rc = locate_python(&src, none, &pi, err, sizeof(err));
		locate_src_release(&src);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		mem_close(none);
		mem_close(real);
		ck_assert_msg(rc < 0, "%s: located with no memory to read", ti[i].label);
		ck_assert_msg(pi.path == NULL, "%s: failure left pi.path set (%s)", ti[i].label, err);
		printf("locate: %s: \"%s\", nothing left to free\n", ti[i].label, err);
		tried++;
	}
	if (!tried)
		test_skip("locate: no Python 3.13+ (tests/setup-sid-root.sh builds a root with them): "
			  "test_failure_frees did not run");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("locate_real");
	TCase *tc = tcase_create("debug_offsets");

	load_tables();
	tcase_add_loop_test(tc, test_real_tables_match_static, 0, NTABLES);
	tcase_add_loop_test(tc, test_bad_cookie, 0, NTABLES);
	tcase_add_loop_test(tc, test_unknown_version, 0, NTABLES);
	tcase_add_loop_test(tc, test_free_threaded, 0, NTABLES);
	tcase_add_loop_test(tc, test_absurd_fields, 0, NTABLES);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, test_load_bias);
	tcase_add_test(tc, test_failure_frees);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
