/* The summary `record --waits` ends with: for each thread, the share of
 * its samples waiting for the GPU, the data, the other ranks, running, or
 * idle otherwise; threads that never wait for those and do the same thing
 * (a DataLoader's workers) on one line:
 *
 *   main thread 485: 81% waiting for data in Queue.get from next_batch (job.py:48),
 *     9% waiting for the GPU in train_step (job.py:59), 10% running
 *   workers 514–517: 85% in augment (job.py:23)
 *
 * (the first on one line).  A place is named by the line it was running
 * most often, as dump and the flame graph name a frame: the line running,
 * not the function's first.
 *
 * A model fed one sample at a time, so that it is tested on made-up
 * samples and printed from without a target.
 */
#ifndef PYSTROBE_WAITSUM_H
#define PYSTROBE_WAITSUM_H

#include <stdbool.h>
#include <sys/types.h>

#include "analysis/waitclass.h"
#include "util/util.h"

struct waitsum;

struct waitsum *waitsum_new(void);
void waitsum_free(struct waitsum *ws);

/* Where a sample was: a Python frame, and for a wait the library function
 * it waits in, called from that frame ("Queue.get" from next_batch). */
struct waitsum_place {
	const char *via;	/* NULL: none */
	const char *function;
	const char *file;	/* as shown */
	int firstline;		/* the function's, to tell apart two of one name; -1 */
	int line;		/* the line running, -1 unknown (--function) */
};

/* One sample of thread tid of process pid: its class (only WC_GPU,
 * WC_DATA and WC_COLLECTIVE count as such; any other is running or idle),
 * whether the thread was not running (idle), and where it was (NULL: no
 * Python frame).  The strings are copied. */
void waitsum_add(struct waitsum *ws, pid_t pid, pid_t tid, enum wait_class cls, bool idle,
		 const struct waitsum_place *at);

/* The summary's lines, each ending in '\n', into sb (nothing when there
 * were no samples). */
void waitsum_write(const struct waitsum *ws, struct strbuf *sb);

#endif
