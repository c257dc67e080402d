/* What the files of the native unwinder share (unwind.c tells how they
 * work together): the unwinder, its view of the target's code mappings
 * (unwind_maps.c), the accessors libunwind calls (unwind_access.c), the
 * stack snapshots (unwind_snap.c) and the memo of threads that stand still
 * (unwind_memo.c).
 */
#ifndef PYSTROBE_UNWIND_INT_H
#define PYSTROBE_UNWIND_INT_H

#include "native/unwind.h"

#include <libunwind.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

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

/* unwind_maps.c */
void free_maps(struct xmap *v, size_t n);
void read_maps(struct native_unwinder *u);
struct xmap *lookup_map(struct native_unwinder *u, uint64_t ip);
struct xmap *find_map(struct native_unwinder *u, uint64_t ip);
void probe_object(struct native_unwinder *u, struct xmap *x);
bool has_table(struct native_unwinder *u, uint64_t ip);

/* unwind_access.c */
extern unw_accessors_t unwind_accessors;

/* unwind_snap.c */
void snap_learn(struct memo *m, const struct unwind_ctx *ctx);
void snap_fill(struct native_unwinder *u, struct native_snap *s, size_t want);
size_t snap_want(const struct native_unwinder *u, const struct memo *m, struct native_snap *s);

/* unwind_memo.c */
void drop_memos(struct native_unwinder *u);
struct memo *get_memo(struct native_unwinder *u, pid_t tid);
bool memo_holds(const struct memo *m, const struct native_snap *s, int max);
void memo_store(struct memo *m, const struct unwind_ctx *ctx, const struct native_pc *pcs, int n,
		int max, bool truncated);

#endif
