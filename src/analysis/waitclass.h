/* What a thread waits for, from its frames or its system call: the wait
 * classes that `watch` judges stalls by and that its report and flight
 * recording carry.
 *
 * Both are tables (waitclass.c): a frame rule names a function (and the
 * file it is in), a system call rule a syscall number.  Adding what a new
 * library waits in (another collective backend, a GPU runtime) is a row.
 */
#ifndef PYSTROBE_WAITCLASS_H
#define PYSTROBE_WAITCLASS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

/* In order of precedence: a stack with frames of several classes is of
 * the first (a DataLoader's next batch waits in a selector: it is data). */
enum wait_class {
	WC_NONE,
	WC_COLLECTIVE,		/* torch.distributed, NCCL, gloo */
	WC_GPU,			/* waiting for a device */
	WC_DATA,		/* waiting for the input pipeline */
	WC_GC,			/* the garbage collector running */
	WC_LOCK,		/* a lock, condition, event, join */
	WC_IO,			/* a socket, pipe, selector, file */
	WC_SLEEP,		/* time.sleep and the like */
	WC_CHILD,		/* waiting for a subprocess */
	WC_CPU,			/* running */
	WC_COUNT,
};

/* "collective", "gpu", ... ("" for WC_NONE). */
const char *wait_class_name(enum wait_class c);

/* What the rules say of one frame, in a byte: its class by the frame rules
 * (WAIT_CLASS of it, WC_NONE when none matches), and flags. */
#define WAIT_CLASS	0x0f
#define WAIT_QUEUE	0x10	/* a queue's get: its class in the main thread only */
#define WAIT_PRODUCER	0x20	/* a worker's loop: its thread never waits for data */
#define WAIT_MAIN	0x40	/* a module's top level: the program's main thread */

uint8_t wait_frame_bits(const struct pframe *f);

/* The class of a stack from its frames' bits, innermost first, or
 * WC_NONE: the first class of the order above among its frames, the
 * outermost frame of it deciding (*at gets its index, when not NULL and
 * not WC_NONE).  A stack holding a worker's loop never waits for data; a
 * queue's get is data only in a stack holding a module's top level and no
 * worker's loop, a lock wait elsewhere. */
enum wait_class wait_class_of_bits(const uint8_t *bits, uint32_t n, uint32_t *at);

/* The same from the frames, innermost first. */
enum wait_class wait_class_of_frames(const struct pframe *const *frames, uint32_t n,
				     uint32_t *at);

/* The class of a thread whose innermost Python frame is on this source
 * line, by the line rules (".item(", ".cpu(" ...), or WC_NONE. */
enum wait_class wait_class_of_line(const char *line);

/* The class of a system call a blocked thread sits in, from its number
 * and arguments (as /proc/PID/task/TID/syscall gives them), and whether
 * it waits with a timeout: a timed wait wakes by itself. */
enum wait_class wait_class_of_syscall(long nr, const uint64_t args[6], bool *timed);

#endif
