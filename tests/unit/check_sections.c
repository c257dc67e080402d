/* Tests for the readers of an object's sections that name stripped code
 * (src/native): function ranges from the FDEs of .eh_frame (fderange.c),
 * against this very program's symbol table, and the bound on the xz data
 * of .gnu_debugdata (debugdata.c), against xz data made here. */
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native/debugdata.h"
#include "native/fderange.h"
#include "process/elffile.h"
#include "suite.h"

/* A function with a prologue (pushes, so several CFI rows) and a body. */
__attribute__((noinline)) int sections_probe(int n);
__attribute__((noinline)) int sections_probe(int n)
{
	volatile int v[64];
	int sum = 0;

	for (int i = 0; i < 64; i++)
		v[i] = i * n;
	for (int i = 0; i < 64; i++)
		sum += v[i];
	return sum;
}

/* Every address of sections_probe is in one FDE range, whose start is the
 * function's symbol (link-time addresses of /proc/self/exe). */
START_TEST(test_fde_start_is_the_function)
{
	struct elffile *ef = elffile_open("/proc/self/exe");
	int fd = open("/proc/self/exe", O_RDONLY);
	uint64_t addr, size;
	struct fderange *v;
	Elf *elf;
	size_t n;

	ck_assert_ptr_nonnull(ef);
	ck_assert_int_eq(elffile_symbol(ef, "sections_probe", &addr, &size), 0);
	ck_assert_uint_gt(size, 8);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	n = fderange_read(elf, &v);
	ck_assert_uint_gt(n, 10);
	for (size_t i = 1; i < n; i++)
		ck_assert_uint_le(v[i - 1].start, v[i].start);
	for (uint64_t off = 0; off < size; off++) {
		const struct fderange *r = fderange_find(v, n, addr + off);

		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(r->start, addr);
		ck_assert_uint_eq(r->end, addr + size);
	}
	ck_assert_ptr_null(fderange_find(v, n, 0));
	ck_assert_int_eq(sections_probe(1), 2016);
	free(v);
	elf_end(elf);
	close(fd);
	elffile_close(ef);
}
END_TEST

/* in[0..len) xz-compressed into a new buffer; its length in *out_len. */
static uint8_t *xz(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = len / 2 + 4096;
	uint8_t *out = malloc(cap);

	*out_len = 0;
	ck_assert_int_eq(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, in, len, out, out_len,
						 cap), LZMA_OK);
	return out;
}

/* 4 MiB of zeros, xz'd to a few KiB: within a bound of 8 MiB, not of
 * 1 MiB, and two such streams count together. */
START_TEST(test_xz_bound)
{
	size_t len = 4u << 20, n;
	uint8_t *zeros = calloc(1, len), *z = xz(zeros, len, &n), *two = malloc(2 * n);

	ck_assert_uint_lt(n, 1u << 20);
	ck_assert(debugdata_xz_fits(z, n, 8u << 20));
	ck_assert(!debugdata_xz_fits(z, n, 1u << 20));
	memcpy(two, z, n);
	memcpy(two + n, z, n);
	ck_assert(debugdata_xz_fits(two, 2 * n, 10u << 20));
	ck_assert(!debugdata_xz_fits(two, 2 * n, 6u << 20));
	/* Cut short, or not xz at all: refused. */
	ck_assert(!debugdata_xz_fits(z, n / 2, 8u << 20));
	ck_assert(!debugdata_xz_fits(zeros, 4096, 8u << 20));
	free(two);
	free(z);
	free(zeros);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sections");
	TCase *tc = tcase_create("readers");

	elf_version(EV_CURRENT);
	tcase_add_test(tc, test_fde_start_is_the_function);
	tcase_add_test(tc, test_xz_bound);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
