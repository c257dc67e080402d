/* Native (C/C++) stacks of a stopped thread, through libunwind.
 *
 * One unwinder serves every thread of one process and lives as long as the
 * caller keeps sampling it: libunwind's per-address-space cache of decoded
 * unwind rules (UNW_CACHE_GLOBAL) is what makes a warm unwind cheap, and it
 * is kept only as long as the address space is.
 *
 * The unwinder never touches the target with ptrace beyond one
 * PTRACE_GETREGS per thread (the caller stops and releases the threads,
 * see pause.h).  Memory (stacks, .eh_frame_hdr, .eh_frame) is read with
 * process_vm_readv through a page cache, and the unwind tables of an object
 * are found from its ELF headers in the target's own memory, so nothing is
 * opened by path: objects in containers, deleted or replaced files and the
 * vDSO unwind like anything else.  Not thread-safe: one unwinder per
 * sampling thread.
 *
 * Usage, for each sample:
 *	native_begin(u);		   the stacks have moved on: drop cached memory
 *	for each thread stopped by pause_process():
 *		native_snap_take(u, tid, &snap[i]);   registers and stack bytes
 *	release the threads
 *	for each thread:
 *		n = native_unwind_snap(u, &snap[i], pcs, max, &truncated);
 *
 * so that the target is stopped only while its registers and the used
 * part of each stack are copied, not while libunwind works.  A snapshot
 * that turns out too short (a stack deeper than NATIVE_SNAP_MAX, or in a
 * mapping that appeared since the maps were last read) fails the unwind
 * (-EAGAIN) rather than read the live stack, which has moved on.
 * native_unwind() does both steps at once, for a caller that keeps the
 * threads stopped anyway (dump).
 *
 * A thread that has not moved since its last unwind (same registers, same
 * bytes in the stack range that unwind read: a thread blocked in a system
 * call) gets that unwind again without libunwind: see unwind.c.
 *
 * When the target may have loaded or unloaded libraries since the unwinder
 * last looked (a long recording), call native_refresh() now and then: an
 * address unknown to the unwinder triggers a refresh by itself, but reuse of
 * an unmapped range by another object can only be seen this way.
 */
#ifndef PYSTROBE_UNWIND_H
#define PYSTROBE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct native_unwinder;

/* The most stack a snapshot copies; an unwind that needs more fails. */
#define NATIVE_SNAP_MAX (1024u * 1024)

/* What an unwind needs of a stopped thread, copied so that the thread can
 * run again before the unwind.  Zero it before first use; it keeps its
 * buffer from one sample to the next (native_snap_free() releases it). */
struct native_snap {
	pid_t tid;
	struct user_regs_struct regs;
	uint64_t lo;		/* target address of bytes[0]: the stack pointer */
	uint8_t *bytes;
	size_t len, cap;
	/* The copy ended where the stack's mapping does: what lies above
	 * is not this thread's stack, and may be read live. */
	bool at_end;
	uint64_t stack_end;	/* end of the stack's mapping; 0: unknown */
};

/* Deepest native stack we unwind; deeper ones are cut and marked truncated. */
#define NATIVE_MAX_DEPTH 1024

struct native_pc {
	uint64_t pc;
	/* The frame's stack pointer: its locals lie in [sp, the next
	 * (outer) frame's sp).  mixed.c finds the interpreter's frames by
	 * what they keep there. */
	uint64_t sp;
	/* pc is the instruction being executed (the innermost frame, or one
	 * interrupted by a signal), not a return address: symbolize pc as
	 * is, not pc - 1. */
	bool exact;
};

/* --- a thread standing still, without stopping it ---
 *
 * A thread asleep in the kernel whose last unwind was memoised (see
 * unwind.c) may be proved not to have moved since without a stop: its user
 * stack pointer and instruction pointer as it entered the kernel
 * (/proc/PID/task/TID/syscall) are the memo's, and the stack bytes that
 * unwind read hold what they held.  The caller makes sure the thread did
 * not run while they were read (proc_schedstat_read() before and after).
 * The registers the kernel does not show (the callee-saved ones) are not
 * compared: any of them a frame saved is among the stack bytes, and one no
 * frame saved would differ only if the thread had run another way back to
 * the same stack pointer, instruction and stack bytes. */

/* The memo of tid, if it keeps stack bytes: its stack pointer and pc. */
bool native_still_ready(struct native_unwinder *u, pid_t tid, uint64_t *sp, uint64_t *pc);
/* Do the stack bytes of tid's memo hold what they did, read now? */
bool native_still_bytes(struct native_unwinder *u, pid_t tid);
/* The memo's frames into out[0..max): their count, or -ESRCH when there
 * is no such memo (any more: a refresh may drop it). */
int native_still_frames(struct native_unwinder *u, pid_t tid, struct native_pc *out, int max,
			bool *truncated);

/* An unwinder for the threads of pid.  Never NULL. */
struct native_unwinder *native_open(pid_t pid);
void native_close(struct native_unwinder *u);

/* Start a sample: forget target memory cached by the previous one. */
void native_begin(struct native_unwinder *u);

/* Read the target's mappings again and forget the unwind information of
 * objects that are gone (dlclose); cheap enough to call once a second.
 * Returns whether the code mapped changed since the last call (an object
 * came, went or moved, found by this read or by an unwind that met an
 * address of no known object), so that a caller's own view of the
 * objects need be read again only then. */
bool native_refresh(struct native_unwinder *u);

/* While thread tid is in a ptrace stop of ours: copy its registers and
 * the top of its stack into s.  Returns 0 or -ESRCH (gone, or not
 * stopped by us). */
int native_snap_take(struct native_unwinder *u, pid_t tid, struct native_snap *s);

/* Unwind a snapshot, any time later, as native_unwind() does.  Returns
 * -EAGAIN when the unwind needed stack beyond the copy (the next
 * snapshot of the thread will be long enough). */
int native_unwind_snap(struct native_unwinder *u, const struct native_snap *s,
		       struct native_pc *out, int max, bool *truncated);
void native_snap_free(struct native_snap *s);

/* Unwind thread tid, which must be in a ptrace stop (see pause.h), into
 * out[0..max), innermost first.  Returns the number of frames, or a
 * negative errno: -ESRCH when the thread is gone or not stopped by us,
 * -EIO when libunwind cannot start.  *truncated is set when the stack went
 * on past max frames or ended in a frame that could not be unwound (the
 * frames found so far are still returned). */
int native_unwind(struct native_unwinder *u, pid_t tid, struct native_pc *out, int max,
		  bool *truncated);

/* For the fuzz harness: an unwinder over any memory reader (which it
 * owns and closes) and, when maps is not NULL, that text as the process's
 * /proc/PID/maps; and an unwind from given registers, without ptrace. */
struct user_regs_struct;
struct mem;
struct native_unwinder *native_open_mem(pid_t pid, struct mem *proc, const char *maps);
int native_unwind_regs(struct native_unwinder *u, pid_t tid, const struct user_regs_struct *regs,
		       struct native_pc *out, int max, bool *truncated);

/* Reuse of unmoved threads' unwinds is on by default; off, every call
 * unwinds (for measuring libunwind itself). */
void native_set_memo(struct native_unwinder *u, bool on);

/* Counters, for measurements and tests. */
struct native_stats {
	unsigned long unwinds;		/* native_unwind calls that got registers */
	unsigned long reused;		/* of those, answered by the memo (not moved) */
	unsigned long frames;		/* frames returned */
	unsigned long proc_lookups;	/* find_proc_info calls: unwind-rule cache misses */
	unsigned long map_reads;	/* times /proc/PID/maps was read */
	unsigned long snap_bytes;	/* stack bytes copied by snapshots */
	unsigned long snap_short;	/* unwinds that needed more than the copy */
};
void native_get_stats(const struct native_unwinder *u, struct native_stats *st);

#endif
