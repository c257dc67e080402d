/* Tests for the shared symbol store (src/native/symstore.c) on real
 * processes: children of this program that dlopen a library and say where
 * one of its functions is (their own dlsym: the ground truth).
 *
 *  - two processes mapping one file: it is loaded once, and the second
 *    process's first lookup is answered at once, from the first's load;
 *  - a file replaced on disk by another build (same path, another build
 *    ID) between two processes: each is named from its own file;
 *  - the build ID read from a process's memory is the one in the file.
 */
#include <check.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "native/symstore.h"
#include "process/proc.h"
#include "suite.h"

#define LIBZ "/lib/x86_64-linux-gnu/libz.so.1"
#define LIBBZ2 "/lib/x86_64-linux-gnu/libbz2.so.1.0"

struct child {
	pid_t pid;
	uint64_t addr;		/* of the function, as the child's dlsym says */
};

/* A child that maps lib, looks up fn in it and waits to be killed. */
static struct child spawn(const char *lib, const char *fn)
{
	struct child c = { 0, 0 };
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		uint64_t a = h ? (uint64_t)(uintptr_t)dlsym(h, fn) : 0;

		close(fds[0]);
		if (write(fds[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &c.addr, sizeof(c.addr)), sizeof(c.addr));
	close(fds[0]);
	ck_assert_msg(c.addr != 0, "the child could not find %s in %s", fn, lib);
	return c;
}

static void reap(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

/* Ask until the answer is final (a load in the background: 10 s at most). */
static struct native_sym lookup(struct symview *v, uint64_t pc, bool *first_ready)
{
	struct timespec ms = { 0, 10000000 };
	struct native_sym ns;
	bool ready;

	ns = symview_lookup(v, pc, true, &ready, NULL);
	if (first_ready)
		*first_ready = ready;
	for (int i = 0; i < 1000 && !ready; i++) {
		nanosleep(&ms, NULL);
		ns = symview_lookup(v, pc, true, &ready, NULL);
	}
	ck_assert_msg(ready, "no final answer for 0x%llx in 10 s", (unsigned long long)pc);
	return ns;
}

static bool readable(const char *path)
{
	if (access(path, R_OK) == 0)
		return true;
	test_skip("%s is missing", path);
	return false;
}

START_TEST(test_loaded_once)
{
	struct child a, b;
	struct symview *va, *vb;
	struct symstore_stats st;
	struct native_sym ns;
	bool first_ready;

	if (!readable(LIBZ))
		return;
	a = spawn(LIBZ, "crc32");
	b = spawn(LIBZ, "crc32");
	va = symview_open(a.pid, 0);
	vb = symview_open(b.pid, 0);
	ns = lookup(va, a.addr, NULL);
	ck_assert_str_eq(ns.function, "crc32");
	ck_assert_msg(!strncmp(ns.library, "libz.so.1", 9), "library %s", ns.library);
	symstore_get_stats(&st);
	ck_assert_uint_eq(st.loads, 1);
	/* The second process maps the same file: its entry is the first's,
	 * already loaded, so the answer comes at once, and nothing loads. */
	ns = lookup(vb, b.addr, &first_ready);
	ck_assert(first_ready);
	ck_assert_str_eq(ns.function, "crc32");
	symstore_get_stats(&st);
	ck_assert_uint_eq(st.loads, 1);
	ck_assert_uint_ge(st.shared, 1);
	ck_assert_uint_ge(st.by_id, 1);
	symview_close(va);
	symview_close(vb);
	reap(&a);
	reap(&b);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, n), n);
	close(in);
	close(out);
}

START_TEST(test_replaced_file)
{
	char dir[] = "/tmp/pystrobe-symstore.XXXXXX", path[PATH_MAX], tmp[PATH_MAX];
	struct child a, b;
	struct symview *va, *vb;
	struct native_sym na, nb;
	struct symstore_stats st;

	if (!readable(LIBZ) || !readable(LIBBZ2))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/libx.so", dir);
	snprintf(tmp, sizeof(tmp), "%s/libx.so.new", dir);
	copy_file(LIBZ, path);
	a = spawn(path, "crc32");
	va = symview_open(a.pid, 0);
	na = lookup(va, a.addr, NULL);
	/* Another library at the same path, as an upgrade installs it. */
	copy_file(LIBBZ2, tmp);
	ck_assert_int_eq(rename(tmp, path), 0);
	b = spawn(path, "BZ2_bzCompress");
	vb = symview_open(b.pid, 0);
	nb = lookup(vb, b.addr, NULL);
	ck_assert_str_eq(na.function, "crc32");
	ck_assert_str_eq(nb.function, "BZ2_bzCompress");
	ck_assert_str_eq(nb.library, "libx.so");
	symstore_get_stats(&st);
	ck_assert_uint_eq(st.loads, 2);
	/* The first process still names its own, older file right. */
	na = lookup(va, a.addr, NULL);
	ck_assert_str_eq(na.function, "crc32");
	symview_close(va);
	symview_close(vb);
	reap(&a);
	reap(&b);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* The build ID of file, by libdwelf: what the store must read from memory. */
static int file_build_id(const char *file, unsigned char *id, int max)
{
	int fd = open(file, O_RDONLY), len = -1;
	Elf *elf;
	const void *got;

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (elf) {
		len = dwelf_elf_gnu_build_id(elf, &got);
		if (len > 0 && len <= max)
			memcpy(id, got, len);
		elf_end(elf);
	}
	if (fd >= 0)
		close(fd);
	return len;
}

START_TEST(test_build_id_from_memory)
{
	struct child a;
	struct proc_maps pm;
	unsigned char want[64], got[64];
	int wlen, glen = -1;

	if (!readable(LIBZ))
		return;
	wlen = file_build_id(LIBZ, want, sizeof(want));
	if (wlen <= 0) {
		test_skip("%s has no build ID", LIBZ);
		return;
	}
	a = spawn(LIBZ, "crc32");
	ck_assert_int_eq(proc_maps_read(a.pid, &pm), 0);
	for (size_t i = 0; i < pm.n && glen < 0; i++)
		if (strstr(pm.v[i].path, "libz.so") && pm.v[i].offset == 0)
			glen = symstore_build_id(a.pid, pm.v[i].start, got, sizeof(got));
	proc_maps_free(&pm);
	reap(&a);
	ck_assert_int_eq(glen, wlen);
	ck_assert(!memcmp(got, want, wlen));
	/* Not an ELF object's first page: no ID, no crash. */
	ck_assert_int_lt(symstore_build_id(getpid(), (uint64_t)(uintptr_t)want, got, 64), 0);
	ck_assert_int_lt(symstore_build_id(getpid(), 16, got, 64), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("symstore");
	TCase *tc = tcase_create("symstore");

	/* Each test in a fork of its own: a fresh store, fresh counters. */
	tcase_add_test(tc, test_loaded_once);
	tcase_add_test(tc, test_replaced_file);
	tcase_add_test(tc, test_build_id_from_memory);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
