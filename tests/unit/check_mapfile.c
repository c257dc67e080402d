/* Tests for reading a file once (src/util/mapfile.c): small files and
 * pipes read, big ones mapped, both bounded, and a mapped file cut
 * shorter while it is read gives zeros and says so, never SIGBUS. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"
#include "util/mapfile.h"
#include "util/util.h"

/* A file of n bytes, byte i being 'a' + i % 26; its name in path. */
static int make_file(char *path, size_t n)
{
	char *b = xmalloc(n ? n : 1);
	int fd;

	strcpy(path, "/tmp/check_mapfile.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + i % 26);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	free(b);
	close(fd);
	return open(path, O_RDONLY);
}

static void want_bytes(const struct mapfile *mf, size_t n)
{
	ck_assert_uint_eq(mf->len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(mf->text[i], 'a' + i % 26);
}

START_TEST(test_read_and_mapped)
{
	static const size_t sizes[] = { 0, 100, MAPFILE_FROM - 1, MAPFILE_FROM, 300000 };
	struct mapfile mf = MAPFILE_INIT;
	char path[64];

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		int fd = make_file(path, sizes[i]);

		ck_assert_int_eq(mapfile_load(&mf, fd, 1 << 20), 0);
		ck_assert_msg((mf.map != NULL) == (sizes[i] >= MAPFILE_FROM), "%zu", sizes[i]);
		want_bytes(&mf, sizes[i]);
		ck_assert(!mapfile_shrank(&mf));
		mapfile_unload(&mf);
		/* At most max: the reader refuses the rest on its own. */
		lseek(fd, 0, SEEK_SET);
		ck_assert_int_eq(mapfile_load(&mf, fd, 1000), 0);
		ck_assert_uint_ge(mf.len, sizes[i] < 1000 ? sizes[i] : 1000);
		ck_assert_uint_le(mf.len, sizes[i]);
		mapfile_unload(&mf);
		close(fd);
		unlink(path);
	}
	mapfile_release(&mf);
}
END_TEST

START_TEST(test_pipe)
{
	struct mapfile mf = MAPFILE_INIT;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "abcdef", 6), 6);
	close(p[1]);
	ck_assert_int_eq(mapfile_load(&mf, p[0], 1 << 20), 0);
	ck_assert_ptr_null(mf.map);
	want_bytes(&mf, 6);
	close(p[0]);
	mapfile_release(&mf);
}
END_TEST

/* Cut to one page while mapped: the page kept reads as it was, the rest
 * as zeros, and mapfile_shrank() says so; the next file starts afresh. */
START_TEST(test_cut_while_mapped)
{
	struct mapfile mf = MAPFILE_INIT;
	size_t n = 300000, page = (size_t)sysconf(_SC_PAGESIZE);
	char path[64];
	int fd = make_file(path, n);

	ck_assert_int_eq(mapfile_load(&mf, fd, 1 << 20), 0);
	ck_assert_ptr_nonnull(mf.map);
	ck_assert_int_eq(truncate(path, (off_t)page), 0);
	ck_assert_int_eq(mf.text[n - 1], 0);
	ck_assert_int_eq(mf.text[page], 0);
	ck_assert_int_eq(mf.text[page - 1], 'a' + (page - 1) % 26);
	ck_assert(mapfile_shrank(&mf));
	mapfile_unload(&mf);
	close(fd);
	unlink(path);
	fd = make_file(path, n);
	ck_assert_int_eq(mapfile_load(&mf, fd, 1 << 20), 0);
	ck_assert(!mapfile_shrank(&mf));
	want_bytes(&mf, n);
	mapfile_release(&mf);
	close(fd);
	unlink(path);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "load", .tests = { test_read_and_mapped, test_pipe, test_cut_while_mapped } },
	};

	return run_groups("mapfile", groups, ARRAY_SIZE(groups), 0, 1);
}
