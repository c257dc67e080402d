/* Proof that a stack read from a running thread is one it really had.
 *
 * Without --blocking the thread runs while its frames are read, from pages
 * fetched at different moments: a walk can join frames of two different
 * stacks.  After the walk, the pointers that make up the chain (the thread
 * state's innermost-frame pointer, each frame's code and back pointers, its
 * owner (which makes it shown or a shim stepped over), and the instruction
 * offset of every frame but the innermost, which is suspended in a call)
 * are read again, all of them in one system call, and
 * compared with what the walk saw: a thread any of whose words changed is
 * counted as torn, never reported.
 *
 * A walk whose words are, word for word, those of the thread's last stack
 * the recheck proved (struct recheck_ref) read that same stack again: a
 * stack the thread really had, each word as it was at the moment the walk
 * read it.  A read torn between two stacks cannot give every word of one
 * of them.  Such a walk needs no second read (recheck_match()); a deep
 * stack that stands still, a loop deep in a call chain, costs one read of
 * its pages a round rather than two.
 */
#ifndef PYSTROBE_RECHECK_H
#define PYSTROBE_RECHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "interp/layout.h"
#include "process/mem.h"
#include "python/pystack.h"

struct recheck_word {
	uint64_t addr;
	uint64_t value;		/* what the walk saw */
	uint32_t owner;		/* whose stack it proves (a thread's index) */
	uint16_t size;		/* 1, 4 or 8 */
	uint16_t block;		/* index of the block it is re-read in */
};

/* Most words a round keeps: hostile memory can offer a thousand threads
 * of deep stacks.  The stacks whose words did not fit are not proved. */
#define RECHECK_MAX_WORDS 60000

struct recheck {
	struct recheck_word *w;
	size_t n, cap;
	uint32_t overflow;	/* the first owner with a word left out, or
				 * UINT32_MAX */
	struct mem_block *blocks;
	size_t nblocks, blocks_cap;
	uint8_t *buf;
	size_t buf_cap;
	/* recheck_frame()'s fields of a frame, [lo, hi), for layout `of`,
	 * this round */
	const struct py_layout *of;
	uint32_t lo, hi;
	int nf;
};

/* The words of a thread's last stack the recheck proved, kept across
 * rounds (only addr, value and size of each), and how many of its stacks
 * in a row have been proved, none torn, since. */
struct recheck_ref {
	struct recheck_word *w;
	size_t n, cap;
	uint32_t calm;
};

/* Forget the words of the last round (the memory is kept).  Also the
 * first call, on a zeroed struct. */
void recheck_reset(struct recheck *rc);
void recheck_release(struct recheck *rc);

/* The word at addr must still hold value (its low `size` bytes). */
void recheck_add(struct recheck *rc, uint32_t owner, uint64_t addr, uint64_t value,
		 uint16_t size);

/* The fields of a walked frame, as `m` (the walk's reader) holds them:
 * back, code, owner (3.11+: shown or a shim), and lasti unless it is the
 * innermost frame. */
void recheck_frame(struct recheck *rc, uint32_t owner, struct mem *m, const struct py_layout *L,
		   uint64_t frame, bool innermost);

/* The same words of a frame from its fields as the walk read them (rf),
 * with no look at memory: what recheck_frame() adds for it. */
void recheck_frame_read(struct recheck *rc, uint32_t owner, const struct py_layout *L,
			uint64_t frame, const struct raw_frame *rf, bool innermost);

/* Read every word again from `direct` (a few calls at most: the words are
 * gathered by page) and set bad[owner] for each word that changed or can
 * no longer be read, and for owners whose words did not all fit; owners
 * are 0..nowners), given in order, and bad[] has room for them.  The words
 * of owners marked in known[] (NULL: none), proved already, are left
 * out. */
void recheck_run(struct recheck *rc, struct mem *direct, bool *bad, const bool *known,
		 uint32_t nowners);

/* Set known[owner] (0..nowners) for each owner whose words, all of them
 * kept, are those of refs[owner] (NULL: none to match) in the same order,
 * and clear it for the others.  The walks add an owner's words after the
 * last owner's: words out of that order match nothing. */
void recheck_match(const struct recheck *rc, struct recheck_ref *const *refs, bool *known,
		   uint32_t nowners);

/* Keep in refs[owner] the words of each owner marked in keep[] (a stack
 * just proved), in one pass over the words. */
void recheck_keep(const struct recheck *rc, struct recheck_ref *const *refs, const bool *keep,
		  uint32_t nowners);

void recheck_ref_release(struct recheck_ref *ref);

/* Keep, for another recheck_run() (with words added since), the words of
 * the owners that to[] renumbers, dropping those it maps to UINT32_MAX:
 * a stack torn by the first recheck is read again, and its first walk may
 * still be proved by the next (the thread is back where it was). */
void recheck_renumber(struct recheck *rc, const uint32_t *to, uint32_t nowners);

#endif
