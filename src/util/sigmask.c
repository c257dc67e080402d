/* The program's own sigprocmask().
 *
 * libunwind blocks every signal around each use of its cache of unwind
 * rules, so that a signal handler that unwinds its own process cannot
 * deadlock on the cache's lock: two rt_sigprocmask system calls per frame,
 * about 670 a sample for 5 threads 50 native frames deep, most of what a
 * warm unwind costs.  pystrobe never unwinds in a signal handler (its
 * handlers set flags and return), so while a thread of pystrobe unwinds
 * (between sigmask_hold_begin() and sigmask_hold_end()), its sigprocmask
 * calls are answered here without a system call and the lock is taken
 * with signals as they were.
 *
 * libunwind calls sigprocmask through its PLT, which a definition in the
 * executable takes over, and so does every other caller in the program:
 * pausing (src/process/pause.c) and launching (src/cmd/launch.c) block
 * signals through this function.  It lives in the lowest layer, in a file
 * of its own, so that those callers depend on a layer below theirs, and so
 * that a reader who wonders why a libc function is defined here finds the
 * reason under its name. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "util/sigmask.h"

static __thread bool held;

void sigmask_hold_begin(void)
{
	held = true;
}

void sigmask_hold_end(void)
{
	held = false;
}

bool sigmask_held(void)
{
	return held;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int rc;

	if (held) {
		/* The old mask is only handed back by the matching
		 * release, which is answered here too. */
		if (old)
			sigemptyset(old);
		return 0;
	}
	rc = pthread_sigmask(how, set, old);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}
