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
#include "native/unwind_int.h"
#include "process/mem.h"
#include "util/util.h"
#include "util/sigmask.h"

#include <errno.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

/* Decoded unwind rules kept by libunwind, by instruction address.  The
 * default (128) is smaller than the distinct return addresses of a few
 * threads of a Python process; 4096 entries cost about 1.5 MiB. */
#define RS_CACHE_ENTRIES 4096
/* Memos of threads not seen for this many samples are dropped. */
#define MEMO_IDLE_SAMPLES 256

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
	u->as = unw_create_addr_space(&unwind_accessors, 0);
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

void native_get_stats(const struct native_unwinder *u, struct native_stats *st)
{
	*st = u->st;
}
