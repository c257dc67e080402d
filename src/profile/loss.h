/* What a recording lost, thread by thread, and what that means for the
 * shares it shows.
 *
 * A sample is one thread's stack in one round.  The sampler counts each
 * it could not take whole against the thread (profile_lose()), by why
 * (enum ploss in profile.h):
 *   lost           (PLOSS_TORN) not counted at all: the thread's share is
 *                  understated by up to that fraction of its samples;
 *   in part        (PLOSS_LATE, PLOSS_MERGE) counted with its Python frames
 *                  and without its native ones: the thread's share is
 *                  right, the native functions under it are understated
 *                  (a late thread's samples end in the frame
 *                  PLOSS_LATE_FRAME, which holds what they lack).
 * record's summary gives a line for each thread that lost more than 1%
 * (profile_loss_lines()); every written format carries the totals in its
 * metadata (profile_loss_note()).  Rounds lost whole (the interpreter
 * state unreadable, the threads not paused: p->rounds_lost) are every
 * thread's alike: the shares stay right, the counts are short; both
 * functions tell them first. */
#ifndef PYSTROBE_LOSS_H
#define PYSTROBE_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/util.h"

/* The leaf of a stack of a thread that --native could not stop in time:
 * its Python frames were read with it running (proved as without a
 * pause), its native frames are unknown. */
#define PLOSS_LATE_FRAME "<native: not stopped in time>"

/* The share of its samples a thread must lose, of one kind, for a line
 * of its own in the summary, in percent. */
#define PLOSS_TELL_PCT 1.0

/* Count one sample of thread (an index of p->threads) as lost, or as
 * counted in part, for why. */
void profile_lose(struct profile *p, uint32_t thread, enum ploss why);

/* Over all threads. */
uint64_t profile_lost(const struct profile *p, enum ploss why);

/* The samples a thread was due: those counted and those lost. */
uint64_t profile_thread_due(const struct pthread_info *t);

/* Append to sb one line for a file's metadata, the losses of every kind
 * with their share of the samples due ("1.2% of samples lost (torn
 * stack: 15); 8.0% of samples without native frames (not stopped in time:
 * 98)"): short, as a title holds it.
 * Returns false, appending nothing, when nothing was lost. */
bool profile_loss_note(const struct profile *p, struct strbuf *sb);

/* Append to sb a line (ending in a newline) for each thread whose loss
 * of some kind is more than min_pct of its samples due, saying what it
 * means for its share, after one for the rounds lost whole when they are
 * more than min_pct of the rounds.  Returns the number of lines. */
int profile_loss_lines(const struct profile *p, double min_pct, struct strbuf *sb);

#endif
