/* The accessors libunwind's remote unwinder calls, all our own: see
 * unwind.c. */
#include "native/unwind_int.h"
#include "process/mem.h"

#include <libunwind.h>
#include <string.h>

/* Exported by libunwind (it is how its own ptrace and coredump accessors
 * search a remote .eh_frame_hdr table) but not declared in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* --- accessors ---------------------------------------------------------- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct native_unwinder *u = ctx->u;
	struct xmap *x = find_map(u, ip);
	unw_dyn_info_t di;

	u->st.proc_lookups++;
	if (!x)
		return -UNW_ENOINFO;
	if (!x->probed)
		probe_object(u, x);
	if (!x->has_table || ip < x->lo || ip >= x->hi)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = x->lo;
	di.end_ip = x->hi;
	di.u.rti.segbase = x->eh_hdr;
	di.u.rti.table_data = x->table;
	/* In words, as libunwind wants it; each entry is two int32s. */
	di.u.rti.table_len = x->fde_count * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

/* dwarf_search_unwind_table's unwind info is freed by libunwind itself; we
 * allocate nothing that would need freeing here. */
static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as;
	(void)addr;
	(void)arg;
	return -UNW_ENOINFO;
}

/* Data outside code: from the snapshot where it has it.  Above the copy,
 * where the thread's stack goes on (up to the end of its mapping; when
 * that is unknown, NATIVE_SNAP_MAX), the live bytes belong to a stack
 * that has moved since: a miss, remembered so that the next snapshot is
 * longer.  Anything else is read live: unwind tables in read-only
 * segments, which do not change, and whatever a frame-pointer guess
 * through a register that held no frame pointer points to (libunwind's
 * fallback where an object has no unwind table), which is garbage alive
 * or not, and ends the unwind as it did before snapshots. */
static int snap_read(struct unwind_ctx *ctx, uint64_t addr, unw_word_t *val)
{
	const struct native_snap *s = ctx->snap;
	uint64_t end = s->lo + s->len;
	uint64_t limit = s->stack_end ? s->stack_end : s->lo + NATIVE_SNAP_MAX;

	if (addr >= s->lo && addr < end && end - addr >= sizeof(*val)) {
		memcpy(val, s->bytes + (addr - s->lo), sizeof(*val));
		if (addr < ctx->lo)
			ctx->lo = addr;
		if (addr + sizeof(*val) > ctx->hi)
			ctx->hi = addr + sizeof(*val);
		return 0;
	}
	if (!s->at_end && addr >= s->lo && addr < limit) {
		if (addr + sizeof(*val) > ctx->miss)
			ctx->miss = addr + sizeof(*val);
		return -UNW_EINVAL;
	}
	return mem_read(ctx->u->cache, addr, val, sizeof(*val)) < 0 ? -UNW_EINVAL : 0;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			  void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct native_unwinder *u = ctx->u;

	(void)as;
	if (write)
		return -UNW_EINVAL;	/* we only ever look */
	if (lookup_map(u, addr))
		return mem_read(u->text, addr, val, sizeof(*val)) < 0 ? -UNW_EINVAL : 0;
	return snap_read(ctx, addr, val);
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
			  void *arg)
{
	const struct user_regs_struct *r = &((struct unwind_ctx *)arg)->regs;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	switch (reg) {
	case UNW_X86_64_RAX: *val = r->rax; break;
	case UNW_X86_64_RDX: *val = r->rdx; break;
	case UNW_X86_64_RCX: *val = r->rcx; break;
	case UNW_X86_64_RBX: *val = r->rbx; break;
	case UNW_X86_64_RSI: *val = r->rsi; break;
	case UNW_X86_64_RDI: *val = r->rdi; break;
	case UNW_X86_64_RBP: *val = r->rbp; break;
	case UNW_X86_64_RSP: *val = r->rsp; break;
	case UNW_X86_64_R8: *val = r->r8; break;
	case UNW_X86_64_R9: *val = r->r9; break;
	case UNW_X86_64_R10: *val = r->r10; break;
	case UNW_X86_64_R11: *val = r->r11; break;
	case UNW_X86_64_R12: *val = r->r12; break;
	case UNW_X86_64_R13: *val = r->r13; break;
	case UNW_X86_64_R14: *val = r->r14; break;
	case UNW_X86_64_R15: *val = r->r15; break;
	case UNW_X86_64_RIP: *val = r->rip; break;
	default:
		return -UNW_EBADREG;
	}
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			    int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

/* Names come from symbolize.c, which checks symbol sizes; libunwind's
 * would be the nearest symbol, whatever its size. */
static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			     unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_ENOINFO;
}

unw_accessors_t unwind_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

