/* Native stacks of stopped threads with libunwind's remote unwinder.
 *
 * libunwind-ptrace (_UPT_*) would read every word of stack with
 * PTRACE_PEEKDATA and every register with PTRACE_PEEKUSER, and it finds
 * unwind tables by re-reading /proc/PID/maps and mmapping the object by the
 * path in it each time the unwind crosses into another object: slow, and
 * wrong for a target in another mount namespace.  So all the accessors are
 * our own:
 *
 *  - registers come from one PTRACE_GETREGS per thread;
 *  - memory comes from process_vm_readv through a page cache (mem_cache),
 *    emptied before each sample because stacks change while the threads
 *    run between samples; code, which does not change, has a cache of its
 *    own that is kept (unw_is_signal_frame reads the instructions at every
 *    pc, which would otherwise cost a system call per frame);
 *  - find_proc_info locates an object's .eh_frame_hdr through its ELF and
 *    program headers as mapped in the target, and hands the remote binary
 *    search table to libunwind's own dwarf_search_unwind_table.
 *
 * With UNW_CACHE_GLOBAL libunwind keeps the decoded register rules per
 * instruction address, so after warm-up a frame costs a few cached memory
 * reads and find_proc_info is not called at all.  libunwind blocks all
 * signals around each use of that cache, two sigprocmask calls per frame;
 * those are answered without a system call (see sigprocmask() below).  And
 * there is the memo: an unwind is a function of
 * the registers, the stack memory it read and the code, so a thread whose
 * registers and those bytes have not changed since its last unwind (a
 * thread blocked in a system call: most threads, most of the time) gets
 * the last result again for a memcmp.
 *
 * None of this happens while the target is stopped.  What an unwind
 * reads of a thread is its registers and its stack from the stack
 * pointer up to the outermost frame; native_snap_take() copies exactly
 * that (one PTRACE_GETREGS and one process_vm_readv of page-sized
 * iovecs, so that the copy stops where the stack's mapping ends) and the
 * unwind runs on the copy once the threads are released.  The copy runs
 * from the stack pointer to the end of the stack's mapping (see
 * snap_want()), at most NATIVE_SNAP_MAX.  Code and unwind
 * tables are read live: they do not change while an object stays mapped.
 */
#include "native/unwind.h"
#include "process/mem.h"
#include "process/proc.h"
#include "util/util.h"
#include "util/sigmask.h"

#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

/* Exported by libunwind (it is how its own ptrace and coredump accessors
 * search a remote .eh_frame_hdr table) but not declared in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* Decoded unwind rules kept by libunwind, by instruction address.  The
 * default (128) is smaller than the distinct return addresses of a few
 * threads of a Python process; 4096 entries cost about 1.5 MiB. */
#define RS_CACHE_ENTRIES 4096
/* Largest stack range a memo compares (and keeps a copy of). */
#define MEMO_MAX_BYTES (256u * 1024)
/* Memos of threads not seen for this many samples are dropped. */
#define MEMO_IDLE_SAMPLES 256
/* Stack copied for a thread never unwound yet, and at least. */
#define SNAP_FIRST (256u * 1024)
#define SNAP_MIN (8u * 1024)
#define PAGE 4096u
/* An object's program headers we are willing to look through. */
#define MAX_PHDRS 64

/* DW_EH_PE_* pointer encodings used by .eh_frame_hdr. */
#define EH_PE_OMIT 0xff
#define EH_PE_ABSPTR 0x00
#define EH_PE_UDATA4 0x03
#define EH_PE_UDATA8 0x04
#define EH_PE_SDATA4 0x0b
#define EH_PE_SDATA8 0x0c
#define EH_PE_PCREL 0x10
#define EH_PE_DATAREL 0x30

/* One executable mapping and what we learnt about the object it belongs to. */
struct xmap {
	uint64_t start, end;
	uint64_t base;		/* where the object's first page (ELF header) is mapped */
	char *path;
	bool probed;		/* ELF headers read (successfully or not) */
	bool has_table;
	uint64_t lo, hi;	/* executable range of the whole object */
	uint64_t eh_hdr;	/* .eh_frame_hdr in the target */
	uint64_t table;		/* its binary search table */
	uint64_t fde_count;
};

/* A mapping a thread's stack may lie in. */
struct range {
	uint64_t start, end;
};

/* A thread's last unwind, kept to be reused while the thread stands still. */
struct memo {
	pid_t tid;
	struct user_regs_struct regs;
	struct native_pc *pcs;
	size_t pcs_alloc;
	int n, max;
	bool truncated;
	uint64_t lo, hi;	/* the stack memory that unwind read */
	uint8_t *bytes;		/* what it held then; NULL until the thread is seen idle */
	unsigned long used;	/* sample it was last used in */
	size_t want;		/* stack to copy in its next snapshot; 0: SNAP_FIRST */
};

struct native_unwinder {
	pid_t pid;
	char *maps_text;	/* native_open_mem's fixed maps; NULL: /proc's */
	struct mem *proc, *cache, *text;
	unw_addr_space_t as;
	struct xmap *maps;	/* sorted by start */
	size_t nmaps;
	struct range *stacks;	/* writable anonymous mappings, sorted */
	size_t nstacks, stacks_alloc;
	bool refreshed;		/* maps re-read since native_begin() */
	bool maps_changed;	/* code mapped changed since native_refresh() */
	struct memo *memos;	/* sorted by tid: a round looks each thread up */
	size_t nmemos, memos_alloc;
	uint8_t *scratch;	/* a still thread's stack, read to compare */
	size_t scratch_alloc;
	unsigned long sample;	/* native_begin() calls */
	bool no_memo;
	struct native_stats st;
};

/* What the accessors get as their argument: one thread being unwound. */
struct unwind_ctx {
	struct native_unwinder *u;
	struct user_regs_struct regs;
	const struct native_snap *snap;
	uint64_t lo, hi;	/* extent of the snapshot read */
	uint64_t miss;		/* end of the highest stack read beyond it; 0: none */
};

/* --- mappings ----------------------------------------------------------- */

static void free_maps(struct xmap *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* The mapping that holds the ELF header of the object mapped at mi: the
 * nearest one before it with the same path and file offset 0. */
static uint64_t object_base(const struct proc_maps *pm, size_t mi)
{
	for (size_t i = mi + 1; i-- > 0;)
		if (!strcmp(pm->v[i].path, pm->v[mi].path) && pm->v[i].offset == 0)
			return pm->v[i].start;
	return 0;
}

/* a is the old table's, whose path is NULL once moved to the new one
 * (maps that list a range twice would match it again). */
static bool same_xmap(const struct xmap *a, const struct xmap *b)
{
	return a->path && a->start == b->start && a->end == b->end && a->base == b->base &&
	       !strcmp(a->path, b->path);
}

/* Read the maps again.  An executable range that went away or now holds
 * something else makes libunwind's cached rules for it wrong: flush them.
 * Objects still there keep what was learnt about them. */
static void read_maps(struct native_unwinder *u)
{
	struct proc_maps pm;
	struct xmap *v = NULL;
	size_t n = 0, cap = 0;
	bool gone = false, came = false;

	u->st.map_reads++;
	if (u->maps_text)
		proc_maps_parse(xstrdup(u->maps_text), &pm);
	else if (proc_maps_read(u->pid, &pm) < 0)
		return;
	u->nstacks = 0;
	for (size_t i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		struct xmap x = { .start = m->start, .end = m->end };

		/* Not joined with the next mapping: that is often a
		 * heap arena, megabytes to copy for nothing. */
		if (m->perms[1] == 'w' && (!m->path[0] || !strcmp(m->path, "[stack]"))) {
			ALLOC_GROW(u->stacks, u->nstacks + 1, u->stacks_alloc);
			u->stacks[u->nstacks++] = (struct range){ m->start, m->end };
		}
		/* Anonymous code (JIT) has no tables: libunwind falls back to
		 * the frame pointer chain there by itself. */
		if (m->perms[2] != 'x' || (m->path[0] != '/' && strcmp(m->path, "[vdso]") != 0))
			continue;
		x.base = object_base(&pm, i);
		if (!x.base)
			continue;
		x.path = m->path;
		for (size_t j = 0; j < u->nmaps; j++) {
			if (same_xmap(&u->maps[j], &x)) {
				x = u->maps[j];
				u->maps[j].path = NULL;	/* moved to the new table */
				break;
			}
		}
		if (x.path == m->path) {
			x.path = xstrdup(m->path);
			came = true;
		}
		ALLOC_GROW(v, n + 1, cap);
		v[n++] = x;
	}
	for (size_t j = 0; j < u->nmaps; j++)
		if (u->maps[j].path)
			gone = true;
	if (gone) {
		unw_flush_cache(u->as, 0, 0);
		mem_cache_reset(u->text);
	}
	u->maps_changed |= gone || came;
	free_maps(u->maps, u->nmaps);
	proc_maps_free(&pm);
	u->maps = v;
	u->nmaps = n;
}

static struct xmap *lookup_map(struct native_unwinder *u, uint64_t ip)
{
	size_t lo = 0, hi = u->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ip < u->maps[mid].start)
			hi = mid;
		else if (ip >= u->maps[mid].end)
			lo = mid + 1;
		else
			return &u->maps[mid];
	}
	return NULL;
}

/* An address we do not know: a library loaded since we last looked?  Look
 * once per sample at most, so that a thread running anonymous code does not
 * make every frame re-read the maps. */
static struct xmap *find_map(struct native_unwinder *u, uint64_t ip)
{
	struct xmap *x = lookup_map(u, ip);

	if (!x && !u->refreshed) {
		u->refreshed = true;
		read_maps(u);
		x = lookup_map(u, ip);
	}
	return x;
}

/* --- unwind tables from the target's memory ----------------------------- */

static int read_encoded(struct mem *m, uint64_t *addr, uint8_t enc, uint64_t *val)
{
	uint64_t at = *addr, v;
	uint32_t u32;
	int rc;

	switch (enc & 0x0f) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8:
		rc = mem_read_u64(m, at, &v);
		*addr += 8;
		break;
	case EH_PE_UDATA4:
		rc = mem_read_u32(m, at, &u32);
		v = u32;
		*addr += 4;
		break;
	case EH_PE_SDATA4:
		rc = mem_read_u32(m, at, &u32);
		v = (uint64_t)(int64_t)(int32_t)u32;
		*addr += 4;
		break;
	default:
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	switch (enc & 0x70) {
	case 0:
		break;
	case EH_PE_PCREL:
		v += at;
		break;
	default:
		return -EINVAL;
	}
	*val = v;
	return 0;
}

/* Find the object's .eh_frame_hdr from its headers as mapped in the target:
 * the ELF header sits at the start of the first mapping, the program
 * headers normally in the same page. */
static void probe_object(struct native_unwinder *u, struct xmap *x)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];
	uint64_t first_load = UINT64_MAX, eh_vaddr = 0, bias, at, eh_frame;
	uint8_t hdr[4];
	bool have_eh = false;

	x->probed = true;
	if (mem_read(u->cache, x->base, &eh, sizeof(eh)) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS)
		return;
	if (mem_read(u->cache, x->base + eh.e_phoff, ph, eh.e_phnum * sizeof(ph[0])) < 0)
		return;
	x->lo = UINT64_MAX;
	x->hi = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first_load)
			first_load = ph[i].p_vaddr;
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			eh_vaddr = ph[i].p_vaddr;
			have_eh = true;
		}
	}
	if (first_load == UINT64_MAX || !have_eh)
		return;
	/* The first PT_LOAD is mapped at file offset 0, page aligned. */
	bias = x->base - (first_load & ~(uint64_t)4095);
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		if (bias + ph[i].p_vaddr < x->lo)
			x->lo = bias + ph[i].p_vaddr;
		if (bias + ph[i].p_vaddr + ph[i].p_memsz > x->hi)
			x->hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (x->lo >= x->hi)
		return;
	x->eh_hdr = bias + eh_vaddr;
	if (mem_read(u->cache, x->eh_hdr, hdr, sizeof(hdr)) < 0 || hdr[0] != 1)
		return;
	/* Only the binary search table that every linker writes (4-byte
	 * entries relative to the header) is supported; without it
	 * libunwind would have to scan .eh_frame linearly. */
	if (hdr[2] == EH_PE_OMIT || hdr[3] != (EH_PE_DATAREL | EH_PE_SDATA4))
		return;
	at = x->eh_hdr + 4;
	if (read_encoded(u->cache, &at, hdr[1], &eh_frame) < 0 ||
	    read_encoded(u->cache, &at, hdr[2], &x->fde_count) < 0)
		return;
	if (x->fde_count == 0 || x->fde_count > (1u << 24))
		return;
	x->table = at;
	x->has_table = true;
}

/* Does an unwind table cover ip (looked for by an unwind through it)? */
static bool has_table(struct native_unwinder *u, uint64_t ip)
{
	struct xmap *x = lookup_map(u, ip);

	if (x && !x->probed)
		probe_object(u, x);
	return x && x->has_table && ip >= x->lo && ip < x->hi;
}

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

static unw_accessors_t accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

/* --- API ---------------------------------------------------------------- */

struct native_unwinder *native_open(pid_t pid)
{
	return native_open_mem(pid, mem_proc_open(pid), NULL);
}

struct native_unwinder *native_open_mem(pid_t pid, struct mem *proc, const char *maps)
{
	struct native_unwinder *u = xcalloc(1, sizeof(*u));

	u->pid = pid;
	u->maps_text = maps ? xstrdup(maps) : NULL;
	u->proc = proc;
	u->cache = mem_cache_new(u->proc);
	u->text = mem_cache_new(u->proc);
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->as) {
		errorf("out of memory");
		exit(EXIT_ERROR);
	}
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(u->as, RS_CACHE_ENTRIES, 0);
	return u;
}

void native_close(struct native_unwinder *u)
{
	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	mem_close(u->cache);
	mem_close(u->text);
	mem_close(u->proc);
	free_maps(u->maps, u->nmaps);
	free(u->stacks);
	free(u->maps_text);
	for (size_t i = 0; i < u->nmemos; i++) {
		free(u->memos[i].pcs);
		free(u->memos[i].bytes);
	}
	free(u->memos);
	free(u->scratch);
	free(u);
}

void native_begin(struct native_unwinder *u)
{
	mem_cache_reset(u->cache);
	/* Before the pause: the snapshots need the stacks' mappings. */
	if (!u->nmaps)
		native_refresh(u);
	u->refreshed = false;
	/* Forget threads gone for a while (they may have exited). */
	if (++u->sample % MEMO_IDLE_SAMPLES == 0) {
		size_t j = 0;

		for (size_t i = 0; i < u->nmemos; i++) {
			struct memo *m = &u->memos[i];

			if (u->sample - m->used < MEMO_IDLE_SAMPLES) {
				u->memos[j++] = *m;
				continue;
			}
			free(m->pcs);
			free(m->bytes);
		}
		u->nmemos = j;
	}
}

static void drop_memos(struct native_unwinder *u)
{
	for (size_t i = 0; i < u->nmemos; i++) {
		free(u->memos[i].bytes);
		u->memos[i].bytes = NULL;
		u->memos[i].n = -1;
	}
}

bool native_refresh(struct native_unwinder *u)
{
	bool changed;

	read_maps(u);
	u->refreshed = true;
	changed = u->maps_changed;
	u->maps_changed = false;
	/* Code that came or went could change any thread's unwind; the
	 * same code leaves every memo true. */
	if (changed)
		drop_memos(u);
	return changed;
}

/* The memo of thread tid, or NULL; *at gets where it is or would go. */
static struct memo *find_memo(struct native_unwinder *u, pid_t tid, size_t *at)
{
	size_t lo = 0, hi = u->nmemos;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->memos[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < u->nmemos && u->memos[lo].tid == tid ? &u->memos[lo] : NULL;
}

/* The memo of thread tid with its stack bytes, or NULL. */
static struct memo *still_memo(struct native_unwinder *u, pid_t tid)
{
	size_t at;
	struct memo *m = find_memo(u, tid, &at);

	return m && m->bytes && !u->no_memo ? m : NULL;
}

bool native_still_ready(struct native_unwinder *u, pid_t tid, uint64_t *sp, uint64_t *pc)
{
	struct memo *m = still_memo(u, tid);

	if (!m)
		return false;
	*sp = m->regs.rsp;
	*pc = m->regs.rip;
	return true;
}

bool native_still_bytes(struct native_unwinder *u, pid_t tid)
{
	struct memo *m = still_memo(u, tid);
	size_t len;
	uint8_t *now;
	bool same;

	if (!m)
		return false;
	len = m->hi - m->lo;
	ALLOC_GROW(u->scratch, len ? len : 1, u->scratch_alloc);
	now = u->scratch;
	same = mem_read(u->proc, m->lo, now, len) == 0 && !memcmp(now, m->bytes, len);
	return same;
}

int native_still_frames(struct native_unwinder *u, pid_t tid, struct native_pc *out, int max,
			bool *truncated)
{
	struct memo *m = still_memo(u, tid);

	if (!m || m->max != max)
		return -ESRCH;
	m->used = u->sample;
	memcpy(out, m->pcs, m->n * sizeof(*out));
	*truncated = m->truncated;
	u->st.reused++;
	u->st.frames += m->n;
	return m->n;
}

/* The memo of thread tid, made on first sight (which moves the memos
 * after it: a pointer to one is good until the next get_memo()). */
static struct memo *get_memo(struct native_unwinder *u, pid_t tid)
{
	size_t at;
	struct memo *m = find_memo(u, tid, &at);

	if (m)
		return m;
	ALLOC_GROW(u->memos, u->nmemos + 1, u->memos_alloc);
	memmove(&u->memos[at + 1], &u->memos[at], (u->nmemos - at) * sizeof(*u->memos));
	u->nmemos++;
	m = &u->memos[at];
	memset(m, 0, sizeof(*m));
	m->tid = tid;
	m->n = -1;
	return m;
}

/* Does the thread stand where its memo says, registers and stack alike? */
static bool memo_holds(const struct memo *m, const struct native_snap *s, int max)
{
	if (!m->bytes || m->max != max || memcmp(&m->regs, &s->regs, sizeof(s->regs)) != 0)
		return false;
	if (m->lo < s->lo || m->hi > s->lo + s->len)
		return false;
	return memcmp(s->bytes + (m->lo - s->lo), m->bytes, m->hi - m->lo) == 0;
}

/* Remember this unwind.  The stack bytes are kept only when the thread
 * is seen twice in a row at the same registers with the same result, so
 * that threads that run pay nothing for the memo. */
static void memo_store(struct memo *m, const struct unwind_ctx *ctx,
		       const struct native_pc *pcs, int n, int max, bool truncated)
{
	const struct native_snap *s = ctx->snap;
	bool still = m->n == n && m->max == max &&
		     !memcmp(&m->regs, &ctx->regs, sizeof(ctx->regs)) &&
		     !memcmp(m->pcs, pcs, n * sizeof(*pcs));

	free(m->bytes);
	m->bytes = NULL;
	if (!still) {
		/* Never NULL, even for no frames: memcmp and memcpy take it. */
		ALLOC_GROW(m->pcs, n ? n : 1, m->pcs_alloc);
		memcpy(m->pcs, pcs, n * sizeof(*pcs));
		m->n = n;
		m->max = max;
		m->truncated = truncated;
		m->regs = ctx->regs;
		return;
	}
	/* Only snapshot reads widen [lo, hi), so it lies inside the copy. */
	if (ctx->hi <= ctx->lo || ctx->hi - ctx->lo > MEMO_MAX_BYTES)
		return;
	m->lo = ctx->lo;
	m->hi = ctx->hi;
	m->bytes = xmalloc(m->hi - m->lo);
	memcpy(m->bytes, s->bytes + (m->lo - s->lo), m->hi - m->lo);
}

/* How much stack the thread's next snapshot takes: half as much again as
 * this unwind needed, so that a stack that deepens a little still fits;
 * shrinking slowly, so that one shallow sample does not cut the next
 * deep one short. */
static void snap_learn(struct memo *m, const struct unwind_ctx *ctx)
{
	const struct native_snap *s = ctx->snap;
	uint64_t need = 0, want;

	if (ctx->miss)
		need = ctx->miss - s->lo;
	else if (ctx->hi > ctx->lo)
		need = ctx->hi - s->lo;
	want = (need + need / 2 + PAGE + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	if (want < SNAP_MIN)
		want = SNAP_MIN;
	if (want > NATIVE_SNAP_MAX)
		want = NATIVE_SNAP_MAX;
	if (!m->want || want >= m->want)
		m->want = want;
	else
		m->want -= (m->want - want) / 16;
}

/* Copy want bytes of stack from s->regs.rsp up, page by page so that
 * the copy stops where the mapping does. */
static void snap_fill(struct native_unwinder *u, struct native_snap *s, size_t want)
{
	struct mem_block b[NATIVE_SNAP_MAX / PAGE + 1];
	uint64_t at = s->regs.rsp, end;
	int n = 0, got;

	if (want > NATIVE_SNAP_MAX)
		want = NATIVE_SNAP_MAX;
	if (at > UINT64_MAX - want)
		want = UINT64_MAX - at;		/* hostile registers (fuzz) */
	if (s->cap < want) {
		free(s->bytes);
		s->bytes = xmalloc(want);
		s->cap = want;
	}
	s->lo = at;
	end = at + want;
	while (at < end) {
		uint64_t next = (at | (PAGE - 1)) + 1;

		if (next > end || next == 0)
			next = end;
		b[n++] = (struct mem_block){ at, s->bytes + (at - s->lo), next - at };
		at = next;
	}
	got = n ? mem_read_batch(u->proc, b, n) : 0;
	if (got < 0)
		got = 0;
	s->len = got == n ? want : b[got].addr - s->lo;
	s->at_end = got < n;
	u->st.snap_bytes += s->len;
}

/* How much of the stack at sp to copy: up to the end of its mapping,
 * which is where the thread's stack starts (glibc puts the thread's
 * descriptor and TLS there, a few KiB), so an unwind never needs more.
 * For a stack in a mapping we have not seen yet (a new thread), what
 * the thread's earlier unwinds needed, and s->stack_end stays 0. */
static size_t snap_want(const struct native_unwinder *u, const struct memo *m,
			struct native_snap *s)
{
	uint64_t sp = s->regs.rsp;
	size_t lo = 0, hi = u->nstacks;

	s->stack_end = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp < u->stacks[mid].start) {
			hi = mid;
		} else if (sp >= u->stacks[mid].end) {
			lo = mid + 1;
		} else {
			s->stack_end = u->stacks[mid].end;
			return s->stack_end - sp;
		}
	}
	return m->want ? m->want : SNAP_FIRST;
}

int native_snap_take(struct native_unwinder *u, pid_t tid, struct native_snap *s)
{
	struct memo *m = get_memo(u, tid);

	s->tid = tid;
	s->len = 0;
	m->used = u->sample;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs) != 0)
		return -ESRCH;	/* gone, or not in a stop of ours */
	snap_fill(u, s, snap_want(u, m, s));
	return 0;
}

void native_snap_free(struct native_snap *s)
{
	free(s->bytes);
	s->bytes = NULL;
	s->cap = s->len = 0;
}

static int unwind(struct native_unwinder *u, struct unwind_ctx *ctx, struct native_pc *out,
		  int max, bool *truncated)
{
	unw_cursor_t c;
	uint64_t prev_sp = 0;
	bool prev_signal = false;
	int n = 0, rc;

	/* libunwind's sigprocmask calls cost no system call (util/sigmask.c). */
	sigmask_hold_begin();
	if (unw_init_remote(&c, u->as, ctx) < 0) {
		sigmask_hold_end();
		return -EIO;
	}
	while (n < max) {
		unw_word_t ip, sp;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || unw_get_reg(&c, UNW_REG_SP, &sp) < 0) {
			*truncated = true;
			break;
		}
		/* A zero return address is how a thread's outermost frame
		 * (clone, _start) says there is nothing above it. */
		if (n > 0 && ip == 0)
			break;
		/* Every caller's frame is above its callee's on the stack; a
		 * signal handler's may be on an alternate stack.  Anything
		 * else is a loop in garbage. */
		if (n > 0 && sp <= prev_sp && !prev_signal) {
			*truncated = true;
			break;
		}
		out[n].pc = ip;
		out[n].sp = sp;
		out[n].exact = n == 0 || prev_signal;
		n++;
		prev_sp = sp;
		prev_signal = unw_is_signal_frame(&c) > 0;
		rc = unw_step(&c);
		if (rc == 0) {
			/* Where a frame has no unwind table (JIT code)
			 * libunwind guesses by the frame pointer, and calls
			 * a guess that finds none the end: it is not. */
			if (!has_table(u, ip))
				*truncated = true;
			break;
		}
		if (rc < 0) {
			*truncated = true;
			break;
		}
		if (n == max)
			*truncated = true;
	}
	sigmask_hold_end();
	return n;
}

int native_unwind_snap(struct native_unwinder *u, const struct native_snap *s,
		       struct native_pc *out, int max, bool *truncated)
{
	struct unwind_ctx ctx = { .u = u, .regs = s->regs, .snap = s, .lo = UINT64_MAX };
	struct memo *m;
	int n;

	*truncated = false;
	if (max <= 0)
		return 0;
	u->st.unwinds++;
	if (!u->nmaps)
		native_refresh(u);
	m = get_memo(u, s->tid);
	m->used = u->sample;
	if (!u->no_memo && memo_holds(m, s, max)) {
		memcpy(out, m->pcs, m->n * sizeof(*out));
		*truncated = m->truncated;
		u->st.reused++;
		u->st.frames += m->n;
		return m->n;
	}
	n = unwind(u, &ctx, out, max, truncated);
	snap_learn(m, &ctx);
	if (ctx.miss) {
		u->st.snap_short++;
		return -EAGAIN;
	}
	if (n < 0)
		return n;
	if (!u->no_memo)
		memo_store(m, &ctx, out, n, max, *truncated);
	u->st.frames += n;
	return n;
}

/* The threads stay stopped: a snapshot too short is taken again, as long
 * as the last unwind asked for. */
int native_unwind(struct native_unwinder *u, pid_t tid, struct native_pc *out, int max,
		  bool *truncated)
{
	struct native_snap s = { 0 };
	int n = -EAGAIN;

	*truncated = false;
	if (max <= 0)
		return 0;
	for (int tries = 0; tries < 2 && n == -EAGAIN; tries++) {
		if (native_snap_take(u, tid, &s) < 0) {
			n = -ESRCH;
			break;
		}
		n = native_unwind_snap(u, &s, out, max, truncated);
	}
	native_snap_free(&s);
	return n;
}

/* Registers given, memory from the unwinder's reader (the fuzz harness). */
int native_unwind_regs(struct native_unwinder *u, pid_t tid, const struct user_regs_struct *regs,
		       struct native_pc *out, int max, bool *truncated)
{
	struct native_snap s = { .tid = tid, .regs = *regs };
	struct memo *m = get_memo(u, tid);
	int n;

	if (!u->nmaps)
		native_refresh(u);
	snap_fill(u, &s, snap_want(u, m, &s));
	n = native_unwind_snap(u, &s, out, max, truncated);
	native_snap_free(&s);
	return n;
}

void native_set_memo(struct native_unwinder *u, bool on)
{
	u->no_memo = !on;
	if (!on)
		drop_memos(u);
}

void native_get_stats(const struct native_unwinder *u, struct native_stats *st)
{
	*st = u->st;
}
