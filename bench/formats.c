/* Time and peak memory to write each output format from 10^6 samples.
 *
 *   bench/formats [SAMPLES]
 *
 * Each format is written in a child process, so its peak RSS is its own. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile/output.h"
#include "sample_profile.h"

static const struct {
	const char *name;
	int (*write)(const struct profile *, FILE *, const struct out_opts *);
} formats[] = {
	{ "flamegraph", out_flamegraph }, { "collapsed", out_collapsed },
	{ "speedscope", out_speedscope }, { "chrometrace", out_chrometrace },
	{ "pprof", out_pprof },
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void one(unsigned long n, int i)
{
	struct out_opts o = { 0 };
	struct profile p;
	struct rusage ru;
	double t0, t1, t2;
	long before;
	FILE *f = fopen("/dev/null", "w");

	t0 = now();
	big_profile(&p, n);
	t1 = now();
	getrusage(RUSAGE_SELF, &ru);
	before = ru.ru_maxrss;
	if (formats[i].write(&p, f, &o) != 0)
		exit(1);
	fflush(f);
	t2 = now();
	getrusage(RUSAGE_SELF, &ru);
	printf("%-12s build %.2f s (%ld MB)  write %.3f s  peak %ld MB (+%ld MB while writing)\n",
	       formats[i].name, t1 - t0, before / 1024, t2 - t1, ru.ru_maxrss / 1024,
	       (ru.ru_maxrss - before) / 1024);
	exit(0);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;

	printf("%lu samples\n", n);
	fflush(stdout);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		pid_t pid = fork();
		int status;

		if (pid == 0)
			one(n, (int)i);
		waitpid(pid, &status, 0);
	}
	return 0;
}
