/* What the flight recorder (src/profile/flightrec.c) costs: memory a
 * sample, time an add, and writing the recording.
 *
 *   bench/flightrec [MINUTES]
 *
 * Two workloads.  "job": 8 threads of one process sampled at 10 Hz for
 * MINUTES (10), each sample one of 300 stacks 30 frames deep over 200
 * functions in 20 files, a wait class on two samples of three: a training
 * job's steady state.  "new": 2 million samples into 16 MiB, each a stack
 * and frame names never seen before, the worst case of a days-long watch:
 * the byte bound and its compactions at work (its time an add counts
 * making the new names, 60 small allocations). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/flightrec.h"
#include "util/util.h"

#define MS 1000000ull
#define T0 1795000000000000000ull
#define DEPTH 30

/* CPU time, not wall time: on a shared machine the wall clock measures
 * the others. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Stack k of the job (k < 300), or, with fresh, one named after v. */
static void stack(uint64_t k, uint64_t v, bool fresh, struct pframe *f)
{
	for (uint32_t d = 0; d < DEPTH; d++) {
		uint64_t fn = (k * 7 + d * 13) % 200;

		f[d].kind = PF_PYTHON;
		f[d].name = fresh ? xasprintf("fn_%llu_%u", (unsigned long long)v, d) :
				    xasprintf("function_%llu", (unsigned long long)fn);
		f[d].file = xasprintf("/srv/job/lib/python3.12/site-packages/pkg/mod%llu.py",
				      (unsigned long long)(fn % 20));
		f[d].line = (int)(fn * 3 + d);
		f[d].firstlineno = (int)(fn * 3);
	}
}

static void unstack(struct pframe *f)
{
	for (uint32_t d = 0; d < DEPTH; d++) {
		free(f[d].name);
		free(f[d].file);
	}
}

static void report(const char *what, struct flightrec *fr, size_t n, double secs)
{
	char path[] = "/tmp/bench-flightrec.XXXXXX", err[256];
	int fd = mkstemp(path);
	double t0 = now(), t1;
	FILE *f;
	long size = -1;

	if (fd < 0 || flightrec_write(fr, path, 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench/flightrec: %s\n", fd < 0 ? "mkstemp failed" : err);
		exit(1);
	}
	t1 = now();
	if ((f = fopen(path, "r"))) {
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
	}
	close(fd);
	unlink(path);
	printf("%-5s %9zu %9llu %10zu %8.1f %10.2f %11.3f %10ld %11llu\n", what, n,
	       (unsigned long long)flightrec_samples(fr), flightrec_bytes(fr),
	       (double)flightrec_bytes(fr) / (double)flightrec_samples(fr), secs / n * 1e6,
	       t1 - t0, size, (unsigned long long)flightrec_compactions(fr));
}

int main(int argc, char **argv)
{
	unsigned long minutes = argc > 1 ? strtoul(argv[1], NULL, 10) : 10;
	size_t n = 8 * 10 * 60 * minutes;
	struct flightrec *fr = flightrec_new(minutes * 60000 * MS, 256 << 20);
	struct pframe f[DEPTH], (*job)[DEPTH] = xcalloc(300, sizeof(*job));
	double t0;

	printf("%-5s %9s %9s %10s %8s %10s %11s %10s %11s\n", "load", "added", "held", "bytes",
	       "B/sample", "cpu_us/add", "write_cpu_s", "file_B", "compactions");
	for (int k = 0; k < 300; k++)
		stack(k, 0, false, job[k]);
	t0 = now();
	for (size_t i = 0; i < n; i++)
		flightrec_add(fr, T0 + i / 8 * 100 * MS, 100, 100 + i % 8, "worker",
			      "python3 train.py --epochs 90", job[i * 2654435761u % 300], DEPTH,
			      i % 3 ? "lock" : NULL);
	report("job", fr, n, now() - t0);
	flightrec_free(fr);
	for (int k = 0; k < 300; k++)
		unstack(job[k]);
	free(job);

	n = 2000000;
	fr = flightrec_new(UINT64_MAX, 16 << 20);
	t0 = now();
	for (size_t i = 0; i < n; i++) {
		stack(i % 300, i, true, f);
		flightrec_add(fr, T0 + i * MS, 100, 100, NULL, "python3 serve.py", f, DEPTH, NULL);
		unstack(f);
	}
	report("new", fr, n, now() - t0);
	flightrec_free(fr);
	return 0;
}
