/* record --waits, top --waits: each sample whose stack waits for the GPU,
 * the data or the other ranks (analysis/waitclass.h) gets one more frame at
 * its innermost end, "<wait:gpu>", "<wait:data>" or "<wait:collective>",
 * and every sample is counted in a summary (analysis/waitsum.h).
 *
 * Installed as the profile's decorate hook, so that every way a sample is
 * counted (paused or held for the recheck, with native frames or asyncio
 * tasks) gets it.  The classes come from the frame rules; a stack none of
 * them matches whose innermost frame is a Python frame is also tried by
 * the line rules on its source line, read from the file as the target sees
 * it (/proc/PID/root).  Both are kept per frame: a stack costs a lookup per
 * frame, a new frame its rules once (native frames named since are
 * looked at again).
 */
#ifndef PYSTROBE_WAITMARK_H
#define PYSTROBE_WAITMARK_H

#include "profile/profile.h"
#include "analysis/waitsum.h"

struct waitmark;

/* Hook into p (which must outlive it, and not be decorated yet). */
struct waitmark *waitmark_new(struct profile *p);
/* Unhook and free. */
void waitmark_free(struct waitmark *w);

/* Once sampling is over (record): the stacks counted while a native frame
 * in them still had its provisional name (its library's symbols not
 * loaded yet), classified again by the names they have now, so that every
 * stack in cudaStreamSynchronize has its leaf.  The summary keeps what
 * was counted then. */
void waitmark_finish(struct waitmark *w);

/* Per thread: the shares of each class, running and idle. */
const struct waitsum *waitmark_summary(const struct waitmark *w);

#endif
