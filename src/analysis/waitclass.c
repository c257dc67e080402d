/* The wait classes: rules on frames and on system calls, as tables.
 *
 * A frame rule matches a frame whose function is `function` (the last
 * part of a qualified name: "barrier" matches "ProcessGroup.barrier"), or
 * starts with it when it ends in '*' ("nccl*" matches the whole name of a
 * native frame); and, when `file` is set, whose file contains it.  The
 * file pins a common name ("get", "wait") to the library that makes it a
 * wait of that class.
 *
 * A queue's get is the input pipeline only where the training loop runs:
 * in the program's main thread (a stack holding a module's top level,
 * "<module>"), not in a pool's or a DataLoader's worker loop.  Anywhere
 * else (a thread started by threading, a worker process) the queue brings
 * work, and the get is a lock wait, as it is in every server.
 */
#include "analysis/waitclass.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "util/util.h"

static const char *const class_names[WC_COUNT] = {
	[WC_NONE] = "",
	[WC_COLLECTIVE] = "collective",
	[WC_GPU] = "gpu",
	[WC_DATA] = "data",
	[WC_GC] = "gc",
	[WC_LOCK] = "lock",
	[WC_IO] = "io",
	[WC_SLEEP] = "sleep",
	[WC_CHILD] = "child",
	[WC_CPU] = "cpu",
};

const char *wait_class_name(enum wait_class c)
{
	return c < WC_COUNT ? class_names[c] : "";
}

struct frame_rule {
	enum wait_class cls;
	const char *function;
	const char *file;	/* NULL: any file */
};

#define DIST "torch/distributed/"
#define LOADER "torch/utils/data/"

static const struct frame_rule frame_rules[] = {
	/* torch.distributed's collectives and point-to-point waits. */
	{ WC_COLLECTIVE, "all_reduce", DIST },
	{ WC_COLLECTIVE, "all_reduce_coalesced", DIST },
	{ WC_COLLECTIVE, "all_gather", DIST },
	{ WC_COLLECTIVE, "all_gather_into_tensor", DIST },
	{ WC_COLLECTIVE, "all_gather_object", DIST },
	{ WC_COLLECTIVE, "all_to_all", DIST },
	{ WC_COLLECTIVE, "all_to_all_single", DIST },
	{ WC_COLLECTIVE, "reduce_scatter", DIST },
	{ WC_COLLECTIVE, "reduce_scatter_tensor", DIST },
	{ WC_COLLECTIVE, "broadcast", DIST },
	{ WC_COLLECTIVE, "broadcast_object_list", DIST },
	{ WC_COLLECTIVE, "reduce", DIST },
	{ WC_COLLECTIVE, "gather", DIST },
	{ WC_COLLECTIVE, "scatter", DIST },
	{ WC_COLLECTIVE, "barrier", DIST },
	{ WC_COLLECTIVE, "monitored_barrier", DIST },
	{ WC_COLLECTIVE, "send", DIST },
	{ WC_COLLECTIVE, "recv", DIST },
	{ WC_COLLECTIVE, "wait", DIST },
	/* The backends, seen with --native-like stacks in a report. */
	{ WC_COLLECTIVE, "nccl*", NULL },
	{ WC_COLLECTIVE, "gloo::*", NULL },
	{ WC_COLLECTIVE, "c10d::*", NULL },
	/* Waiting for a device to finish. */
	{ WC_GPU, "synchronize", "torch/cuda/" },
	{ WC_GPU, "cudaStreamSynchronize*", NULL },
	{ WC_GPU, "cudaDeviceSynchronize*", NULL },
	{ WC_GPU, "cudaEventSynchronize*", NULL },
	{ WC_GPU, "cuStreamSynchronize*", NULL },
	{ WC_GPU, "cuCtxSynchronize*", NULL },
	/* A value the host needs from the device (.item(), printing a
	 * tensor) and the copies that wait for it. */
	{ WC_GPU, "at::native::_local_scalar_dense*", NULL },
	{ WC_GPU, "cudaMemcpy", NULL },
	{ WC_GPU, "cuMemcpyDtoH*", NULL },
	/* The consumer side of an input pipeline: the batch it waits for,
	 * and the iterator's own bookkeeping around it (its profiler range)
	 * that the consumer waits through as well. */
	{ WC_DATA, "__next__", LOADER },
	{ WC_DATA, "_next_data", LOADER },
	{ WC_DATA, "_get_data", LOADER },
	{ WC_DATA, "_try_get_data", LOADER },
	/* The collector: the sampler's own marker frame. */
	{ WC_GC, "<gc>", NULL },
	/* Python-level waits of threading and queue. */
	{ WC_LOCK, "wait", "threading.py" },
	{ WC_LOCK, "acquire", "threading.py" },
	{ WC_LOCK, "join", "threading.py" },
	{ WC_LOCK, "_wait_for_tstate_lock", "threading.py" },
	{ WC_LOCK, "put", "queue.py" },
	{ WC_LOCK, "result", "concurrent/futures/_base.py" },
	/* Servers and event loops waiting for the outside world. */
	{ WC_IO, "select", "selectors.py" },
	{ WC_IO, "accept", "socket.py" },
	{ WC_IO, "serve_forever", "socketserver.py" },
	{ WC_IO, "_run_once", "asyncio/base_events.py" },
	{ WC_CHILD, "wait", "subprocess.py" },
	{ WC_CHILD, "communicate", "subprocess.py" },
};

/* The last part of a qualified name: "A.b.<locals>.c" -> "c". */
static const char *last_part(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot ? dot + 1 : name;
}

static bool matches(const char *function, const char *file, const struct pframe *f)
{
	size_t n = strlen(function);

	if (!f->name)
		return false;
	if (n && function[n - 1] == '*') {
		if (strncmp(f->name, function, n - 1) != 0)
			return false;
	} else if (strcmp(last_part(f->name), function) != 0) {
		return false;
	}
	return !file || (f->file && strstr(f->file, file));
}

/* A queue's get: waiting for data in the main thread, where the training
 * loop takes its batches from it; a lock wait in any other (a worker
 * waiting for work).  queue.Queue (and LifoQueue, PriorityQueue),
 * multiprocessing's Queue, JoinableQueue and SimpleQueue; queue.SimpleQueue
 * is C, seen with --native only. */
static const struct frame_rule queue_rules[] = {
	{ WC_DATA, "get", "queue.py" },
	{ WC_DATA, "get", "multiprocessing/queues.py" },
	{ WC_DATA, "_queue_SimpleQueue_get*", NULL },
};

/* The frames that say whose thread a stack is.  The input pipeline's own
 * loops and the pools' workers: a thread in one is the pipeline or a
 * worker, and the queue it waits on brings it work (a DataLoader worker's
 * next indices, a pool's next task), not data.  A module's top level: the
 * program's main thread, where a training loop takes its batches. */
static const struct role_rule {
	uint8_t role;
	const char *function;
	const char *file;
} role_rules[] = {
	{ WAIT_PRODUCER, "_worker_loop", LOADER },
	{ WAIT_PRODUCER, "_pin_memory_loop", LOADER },
	{ WAIT_PRODUCER, "worker", "multiprocessing/pool.py" },
	{ WAIT_PRODUCER, "_process_worker", "concurrent/futures/process.py" },
	{ WAIT_MAIN, "<module>", NULL },
};

uint8_t wait_frame_bits(const struct pframe *f)
{
	uint8_t bits = WC_NONE;

	for (size_t k = 0; k < ARRAY_SIZE(frame_rules) && bits == WC_NONE; k++)
		if (matches(frame_rules[k].function, frame_rules[k].file, f))
			bits = (uint8_t)frame_rules[k].cls;
	for (size_t k = 0; k < ARRAY_SIZE(queue_rules) && bits == WC_NONE; k++)
		if (matches(queue_rules[k].function, queue_rules[k].file, f))
			bits = (uint8_t)queue_rules[k].cls | WAIT_QUEUE;
	for (size_t k = 0; k < ARRAY_SIZE(role_rules); k++)
		if (matches(role_rules[k].function, role_rules[k].file, f))
			bits |= role_rules[k].role;
	return bits;
}

enum wait_class wait_class_of_bits(const uint8_t *bits, uint32_t n, uint32_t *at)
{
	enum wait_class best = WC_NONE;
	uint32_t best_at = 0;
	bool producer = false, main = false;

	for (uint32_t i = 0; i < n; i++) {
		producer |= (bits[i] & WAIT_PRODUCER) != 0;
		main |= (bits[i] & WAIT_MAIN) != 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		enum wait_class c = (enum wait_class)(bits[i] & WAIT_CLASS);

		if (c == WC_DATA && (bits[i] & WAIT_QUEUE) && (producer || !main))
			c = WC_LOCK;
		else if (c == WC_DATA && producer)
			continue;
		/* Of one class, the outermost frame decides: the
		 * DataLoader's _next_data, not the queue's get in it. */
		if (c != WC_NONE && (best == WC_NONE || c <= best)) {
			best = c;
			best_at = i;
		}
	}
	if (at && best != WC_NONE)
		*at = best_at;
	return best;
}

enum wait_class wait_class_of_frames(const struct pframe *const *frames, uint32_t n,
				     uint32_t *at)
{
	uint8_t *bits = xmalloc(n ? n : 1);
	enum wait_class c;

	for (uint32_t i = 0; i < n; i++)
		bits[i] = wait_frame_bits(frames[i]);
	c = wait_class_of_bits(bits, n, at);
	free(bits);
	return c;
}

/* A line rule: the source line of a thread's innermost Python frame holds
 * `text`.  For the calls that wait in C without a Python frame of their
 * own (a tensor's .item() copies one value back from the device, so it
 * waits for every kernel queued before it): without --native nothing but
 * the line they are on shows them. */
struct line_rule {
	enum wait_class cls;
	const char *text;
};

static const struct line_rule line_rules[] = {
	{ WC_GPU, ".item(" },
	{ WC_GPU, ".cpu(" },
	{ WC_GPU, ".tolist(" },
	{ WC_GPU, ".numpy(" },
	{ WC_GPU, "cuda.synchronize(" },
};

enum wait_class wait_class_of_line(const char *line)
{
	const char *hash;
	size_t code;

	if (!line)
		return WC_NONE;
	/* A comment is not a call; a '#' inside a string only hides a rule
	 * that the line also shows before it, a loss on odd lines only. */
	hash = strchr(line, '#');
	code = hash ? (size_t)(hash - line) : strlen(line);
	for (size_t k = 0; k < ARRAY_SIZE(line_rules); k++) {
		const char *hit = strstr(line, line_rules[k].text);

		if (hit && (size_t)(hit - line) < code)
			return line_rules[k].cls;
	}
	return WC_NONE;
}

/* How a system call's timeout is given, to tell a wait that wakes by
 * itself from one that does not. */
enum timeout_kind {
	TO_NONE,		/* none: waits until the world acts */
	TO_ALWAYS,		/* always timed (sleeps) */
	TO_POINTER,		/* args[arg] points to a timeout, NULL: none */
	TO_MS,			/* args[arg] is milliseconds, negative: none */
};

struct syscall_rule {
	long nr;
	enum wait_class cls;
	enum timeout_kind to;
	int arg;
};

static const struct syscall_rule syscall_rules[] = {
	{ SYS_futex, WC_LOCK, TO_POINTER, 3 },
#ifdef SYS_futex_waitv
	{ SYS_futex_waitv, WC_LOCK, TO_POINTER, 3 },
#endif
	{ SYS_semop, WC_LOCK, TO_NONE, 0 },
	{ SYS_semtimedop, WC_LOCK, TO_POINTER, 3 },
	{ SYS_flock, WC_LOCK, TO_NONE, 0 },
	{ SYS_poll, WC_IO, TO_MS, 2 },
	{ SYS_ppoll, WC_IO, TO_POINTER, 2 },
	{ SYS_select, WC_IO, TO_POINTER, 4 },
	{ SYS_pselect6, WC_IO, TO_POINTER, 4 },
	{ SYS_epoll_wait, WC_IO, TO_MS, 3 },
	{ SYS_epoll_pwait, WC_IO, TO_MS, 3 },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, WC_IO, TO_POINTER, 3 },
#endif
	{ SYS_read, WC_IO, TO_NONE, 0 },
	{ SYS_readv, WC_IO, TO_NONE, 0 },
	{ SYS_pread64, WC_IO, TO_NONE, 0 },
	{ SYS_write, WC_IO, TO_NONE, 0 },
	{ SYS_writev, WC_IO, TO_NONE, 0 },
	{ SYS_recvfrom, WC_IO, TO_NONE, 0 },
	{ SYS_recvmsg, WC_IO, TO_NONE, 0 },
	{ SYS_sendto, WC_IO, TO_NONE, 0 },
	{ SYS_sendmsg, WC_IO, TO_NONE, 0 },
	{ SYS_accept, WC_IO, TO_NONE, 0 },
	{ SYS_accept4, WC_IO, TO_NONE, 0 },
	{ SYS_connect, WC_IO, TO_NONE, 0 },
	{ SYS_msgrcv, WC_IO, TO_NONE, 0 },
	{ SYS_nanosleep, WC_SLEEP, TO_ALWAYS, 0 },
	{ SYS_clock_nanosleep, WC_SLEEP, TO_ALWAYS, 0 },
	{ SYS_wait4, WC_CHILD, TO_NONE, 0 },
	{ SYS_waitid, WC_CHILD, TO_NONE, 0 },
};

static bool has_timeout(const struct syscall_rule *r, const uint64_t args[6])
{
	switch (r->to) {
	case TO_ALWAYS: return true;
	case TO_POINTER: return args[r->arg] != 0;
	case TO_MS: return (int)args[r->arg] >= 0;
	default: return false;
	}
}

enum wait_class wait_class_of_syscall(long nr, const uint64_t args[6], bool *timed)
{
	*timed = false;
	for (size_t i = 0; i < ARRAY_SIZE(syscall_rules); i++)
		if (syscall_rules[i].nr == nr) {
			*timed = has_timeout(&syscall_rules[i], args);
			return syscall_rules[i].cls;
		}
	return WC_NONE;
}
