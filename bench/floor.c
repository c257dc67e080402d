/* The least a sampling round can cost on this machine: the wait for its
 * instant and one read of the target, with nothing decoded.
 *
 *   bench/floor PID RATE SECONDS PAGES
 *   bench/floor PID RATE SECONDS ADDR:LEN... [/ ADDR:LEN...]
 *
 * Each round sleeps until its instant (clock_nanosleep to an absolute
 * deadline, as src/sample/fleet.c waits), then, with PAGES above 0, reads
 * PAGES pages of the target in one process_vm_readv: the first pages of
 * its first writable mapping, where its interpreter's state lives.  Every
 * profiler's round pays at least the wait and one such read, so under
 * `perf stat -e task-clock`, as bench/peers measures the profilers, its
 * CPU a round is the floor below any of them: when a third of a peer's
 * round is under it, no profiler here can cost a third of that peer.
 * (PAGES 0: the wait alone.)  The second form reads the ranges given (hex
 * addresses, as strace -v shows a profiler's iovecs) in one call a round,
 * and those after a "/" in a second: what a profiler's own reads cost
 * with none of its work.  Prints its rounds and elapsed seconds on
 * stderr, as "floor: R rounds in E s", also when the target ends first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define PAGE 4096
#define MAX_PAGES 64
#define MAX_RANGES 64

/* What a round reads: one or two calls' remote ranges, into buf. */
struct reads {
	struct iovec local[2][MAX_RANGES], remote[2][MAX_RANGES];
	int n[2];
};

/* The start of pid's first writable private mapping, or 0. */
static uint64_t first_writable(int pid)
{
	char path[64], line[512];
	uint64_t lo = 0, hi;
	char perms[8];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) == 3 &&
		    perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' &&
		    hi - lo >= MAX_PAGES * PAGE)
			break;
		else
			lo = 0;
	fclose(f);
	return lo;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ADDR:LEN ranges from argv[first..argc), "/" before the second call's;
 * -1 on a malformed one or too many bytes. */
static int parse_ranges(struct reads *r, char **argv, int first, int argc, char *buf)
{
	size_t off = 0;
	int call = 0;

	for (int i = first; i < argc; i++) {
		unsigned long long addr;
		unsigned len;

		if (!strcmp(argv[i], "/") && call == 0) {
			call = 1;
			continue;
		}
		if (sscanf(argv[i], "%llx:%u", &addr, &len) != 2 || !len ||
		    r->n[call] == MAX_RANGES || off + len > MAX_PAGES * PAGE)
			return -1;
		r->remote[call][r->n[call]] = (struct iovec){ (void *)(uintptr_t)addr, len };
		r->local[call][r->n[call]++] = (struct iovec){ buf + off, len };
		off += len;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[MAX_PAGES * PAGE];
	static struct reads r;
	struct timespec at;
	long rounds = 0, interval;
	int pid, pages = 0;
	double secs, t0;
	uint64_t base;

	if (argc < 5 || (pid = atoi(argv[1])) <= 0 || atof(argv[2]) <= 0 ||
	    (secs = atof(argv[3])) <= 0 ||
	    (strchr(argv[4], ':') ? parse_ranges(&r, argv, 4, argc, buf) < 0
				  : argc != 5 || (pages = atoi(argv[4])) < 0 || pages > MAX_PAGES)) {
		fprintf(stderr, "usage: bench/floor PID RATE SECONDS PAGES (0-%d)\n"
			"       bench/floor PID RATE SECONDS ADDR:LEN... [/ ADDR:LEN...]\n",
			MAX_PAGES);
		return 2;
	}
	interval = (long)(1e9 / atof(argv[2]));
	if (pages && !(base = first_writable(pid))) {
		fprintf(stderr, "bench/floor: no writable mapping of %d pages in process %d\n",
			MAX_PAGES, pid);
		return 1;
	}
	if (pages) {
		r.remote[0][0] = (struct iovec){ (void *)(uintptr_t)base, (size_t)pages * PAGE };
		r.local[0][0] = (struct iovec){ buf, (size_t)pages * PAGE };
		r.n[0] = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &at);
	t0 = mono();
	while (mono() - t0 < secs) {
		at.tv_nsec += interval;
		while (at.tv_nsec >= 1000000000L) {
			at.tv_nsec -= 1000000000L;
			at.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		for (int c = 0; c < 2; c++) {
			if (!r.n[c] || process_vm_readv(pid, r.local[c], (unsigned long)r.n[c],
							r.remote[c], (unsigned long)r.n[c], 0) >= 0)
				continue;
			/* Ended: as a profiler does, the rounds so far. */
			if (errno == ESRCH)
				goto out;
			fprintf(stderr, "bench/floor: cannot read process %d: %s\n", pid,
				strerror(errno));
			return 1;
		}
		rounds++;
	}
out:
	fprintf(stderr, "floor: %ld rounds in %.3f s\n", rounds, mono() - t0);
	return 0;
}
