/* libFuzzer harness: native unwinding (src/native/unwind.c) over hostile
 * memory, through the live code's libunwind accessors: the registers, the
 * stack bytes, the object's ELF and program headers as mapped, its
 * .eh_frame_hdr binary search table and the .eh_frame it points into all
 * come from the input (fuzzmem.h regions), as do the process's maps.
 *
 * libunwind-ptrace is not in the way: unwind.c passes its own accessors
 * to libunwind's generic remote unwinder and uses _UPT_ for nothing, so
 * no process is needed.  Input:
 *
 *	"PSU1" [17 registers u64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip]
 *	[maps_len u16][maps text] regions
 *
 * Each input is unwound three times by one unwinder, so that the third
 * goes through the memo of an unmoved thread.  Seeds: mkseed_unwind.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "fuzzmem.h"
#include "native/unwind.h"

#define FZ_UNWIND_MAGIC "PSU1"
#define NREGS 17
#define MAX_FRAMES 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void get_regs(const uint8_t *p, struct user_regs_struct *r)
{
	unsigned long long *dst[NREGS] = {
		&r->rax, &r->rdx, &r->rcx, &r->rbx, &r->rsi, &r->rdi, &r->rbp, &r->rsp,
		&r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15, &r->rip,
	};

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NREGS; i++)
		*dst[i] = fz_le64(p + 8 * i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct native_pc out[MAX_FRAMES];
	struct user_regs_struct regs;
	struct native_unwinder *u;
	size_t hdr = 4 + 8 * NREGS + 2, maps_len;
	struct mem *m;
	char *maps;
	bool truncated;

	if (size < hdr || memcmp(data, FZ_UNWIND_MAGIC, 4) != 0)
		return 0;
	get_regs(data + 4, &regs);
	maps_len = fz_le16(data + hdr - 2);
	if (maps_len > size - hdr)
		maps_len = size - hdr;
	maps = strndup((const char *)data + hdr, maps_len);
	m = mem_fake_new();
	fz_add_regions(data + hdr + maps_len, size - hdr - maps_len, m, NULL);
	u = native_open_mem(1, m, maps);
	for (int i = 0; i < 3; i++) {
		struct native_stats st;
		int n;

		native_begin(u);
		n = native_unwind_regs(u, 1, &regs, out, MAX_FRAMES, &truncated);
		if (n > MAX_FRAMES)
			abort();
		/* FUZZ_UNWIND_VERBOSE=1 ./fuzz_unwind FILE: how far a seed
		 * gets, to see that it reaches the tables. */
		native_get_stats(u, &st);
		if (getenv("FUZZ_UNWIND_VERBOSE"))
			fprintf(stderr, "frames %d truncated %d proc_lookups %lu reused %lu\n", n,
				truncated, st.proc_lookups, st.reused);
	}
	native_close(u);
	free(maps);
	return 0;
}
