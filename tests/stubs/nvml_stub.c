/* A stand-in for NVIDIA's libnvidia-ml.so.1, for tests/live/check_gpu.
 *
 * No GPU can run on the machines the tests run on, so the tests build this
 * library under NVML's soname and put its directory in LD_LIBRARY_PATH:
 * pystrobe finds it through the ordinary dynamic loader search, as it
 * finds the driver's.  It has the functions pystrobe calls, with NVML's
 * documented types and return codes, and plays what the environment
 * variable NVML_STUB scripts, as comma-separated NAME=VALUE words:
 *
 *   count=N        devices (default 1; 0: none)
 *   util=A:B:...   device utilisation % in turn, each for step_ms
 *   mem=A:B:...    device memory used, MiB, in turn the same way
 *   step_ms=MS     how long each value lasts (default 200), counted on the
 *                  wall clock from the epoch, so a test can tell which
 *                  value was served at any moment
 *   pids=P:Q:...   the processes device 0 runs (the others run none)
 *   pidsN=P:Q:...  the processes device N runs
 *   init=CODE      nvmlInit returns CODE (9: the driver is not loaded):
 *                  a machine with the library and no driver
 *   lose=N         after N utilisation readings of device 0, every device is lost
 *                  (NVML_ERROR_GPU_IS_LOST)
 *   hang=N         after N utilisation readings of device 0, the next call
 *                  never returns (a wedged driver)
 *   log=PATH       each utilisation served, a line "UNIX_NS DEVICE UTIL
 *                  MEM_MIB": the ground truth a test compares with
 *
 * The words of NVML_STUB_<NODE>, where NODE is $SLURMD_NODENAME (a task
 * of a Slurm job), come after NVML_STUB's and win: every node of the
 * tests' cluster is this one machine, and each plays its own GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_VALUES 64
#define MAX_DEVICES 8
#define MEM_TOTAL_MIB 81559ull

enum { SUCCESS = 0, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7, DRIVER_NOT_LOADED = 9,
       GPU_IS_LOST = 15 };

struct utilization {
	unsigned int gpu, memory;
};

struct memory {
	unsigned long long total, free, used;
};

struct process {
	unsigned int pid;
	unsigned long long used_memory;
	unsigned int gpu_instance, compute_instance;
};

/* What the library exports (NVML's names and signatures). */
int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int ret);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
int nvmlDeviceGetName(void *dev, char *name, unsigned int len);
int nvmlDeviceGetUtilizationRates(void *dev, struct utilization *u);
int nvmlDeviceGetMemoryInfo(void *dev, struct memory *m);
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, struct process *p);
int nvmlDeviceGetGraphicsRunningProcesses_v3(void *dev, unsigned int *count, struct process *p);

static struct {
	unsigned count;
	unsigned util[MAX_VALUES], nutil;
	unsigned mem[MAX_VALUES], nmem;
	unsigned pids[MAX_DEVICES][MAX_VALUES], npids[MAX_DEVICES];
	int init;
	unsigned long long step_ms;
	long lose;		/* -1: never */
	long hang;		/* -1: never */
	char log[4096];
	long readings;		/* of device 0 */
	int devices[MAX_DEVICES];
	/* When each device's utilisation was last read: its memory is that
	 * moment's, so that a reading is one moment's whatever the time
	 * between the two calls. */
	unsigned long long read_at[MAX_DEVICES];
} stub;

static unsigned parse_list(const char *s, unsigned *out)
{
	unsigned n = 0;

	while (*s && n < MAX_VALUES) {
		char *end;

		out[n++] = (unsigned)strtoul(s, &end, 10);
		if (*end != ':')
			break;
		s = end + 1;
	}
	return n;
}

static void parse_word(const char *w)
{
	const char *v = strchr(w, '=');

	if (!v++)
		return;
	if (!strncmp(w, "count=", 6))
		stub.count = (unsigned)atoi(v) > MAX_DEVICES ? MAX_DEVICES : (unsigned)atoi(v);
	else if (!strncmp(w, "util=", 5))
		stub.nutil = parse_list(v, stub.util);
	else if (!strncmp(w, "mem=", 4))
		stub.nmem = parse_list(v, stub.mem);
	else if (!strncmp(w, "pids", 4) && (w[4] == '=' || (w[4] >= '0' && w[4] <= '9'))) {
		unsigned dev = (unsigned)atoi(w + 4);

		if (dev < MAX_DEVICES)
			stub.npids[dev] = parse_list(v, stub.pids[dev]);
	} else if (!strncmp(w, "init=", 5))
		stub.init = atoi(v);
	else if (!strncmp(w, "step_ms=", 8))
		stub.step_ms = strtoull(v, NULL, 10);
	else if (!strncmp(w, "lose=", 5))
		stub.lose = atol(v);
	else if (!strncmp(w, "hang=", 5))
		stub.hang = atol(v);
	else if (!strncmp(w, "log=", 4))
		snprintf(stub.log, sizeof(stub.log), "%s", v);
}

static void parse_spec(const char *spec)
{
	char buf[4096], *w, *save;

	snprintf(buf, sizeof(buf), "%s", spec ? spec : "");
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
		parse_word(w);
}

int nvmlInit_v2(void)
{
	const char *node = getenv("SLURMD_NODENAME");
	char name[256];

	memset(&stub, 0, sizeof(stub));
	stub.count = 1;
	stub.step_ms = 200;
	stub.lose = -1;
	stub.hang = -1;
	parse_spec(getenv("NVML_STUB"));
	if (node) {
		snprintf(name, sizeof(name), "NVML_STUB_%s", node);
		parse_spec(getenv(name));
	}
	if (!stub.step_ms)
		stub.step_ms = 200;
	return stub.init;
}

int nvmlShutdown(void)
{
	return SUCCESS;
}

const char *nvmlErrorString(int ret)
{
	return ret == GPU_IS_LOST ? "GPU is lost" : ret == INSUFFICIENT_SIZE ?
	       "Insufficient Size" : ret == DRIVER_NOT_LOADED ? "Driver Not Loaded" :
	       "Unknown Error";
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = stub.count;
	return SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	if (i >= stub.count)
		return INVALID_ARGUMENT;
	*dev = &stub.devices[i];
	return SUCCESS;
}

static unsigned index_of(void *dev)
{
	return (unsigned)((int *)dev - stub.devices);
}

/* Lost once `lose` utilisation readings were served; the memory of the
 * last one still answers, so that reading is whole. */
static int lost(void)
{
	return stub.lose >= 0 && stub.readings >= stub.lose;
}

static int memory_lost(void)
{
	return stub.lose >= 0 && stub.readings > stub.lose;
}

int nvmlDeviceGetName(void *dev, char *name, unsigned int len)
{
	snprintf(name, len, "Stand-in GPU %u", index_of(dev));
	return SUCCESS;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The scripted value of a list at the wall-clock time t. */
static unsigned at(const unsigned *v, unsigned n, unsigned long long t)
{
	return n ? v[t / 1000000ull / stub.step_ms % n] : 0;
}

int nvmlDeviceGetUtilizationRates(void *dev, struct utilization *u)
{
	unsigned long long t = now_ns();
	FILE *f;

	if (lost())
		return GPU_IS_LOST;
	while (stub.hang >= 0 && stub.readings >= stub.hang)
		sleep(1000);
	stub.readings += index_of(dev) == 0;
	stub.read_at[index_of(dev)] = t;
	u->gpu = at(stub.util, stub.nutil, t);
	u->memory = u->gpu / 2;
	if (stub.log[0] && (f = fopen(stub.log, "a"))) {
		fprintf(f, "%llu %u %u %u\n", t, index_of(dev), u->gpu,
			at(stub.mem, stub.nmem, t));
		fclose(f);
	}
	return SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void *dev, struct memory *m)
{
	unsigned long long t = stub.read_at[index_of(dev)];

	if (memory_lost())
		return GPU_IS_LOST;
	m->total = MEM_TOTAL_MIB << 20;
	m->used = (unsigned long long)at(stub.mem, stub.nmem, t ? t : now_ns()) << 20;
	m->free = m->total - m->used;
	return SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, struct process *p)
{
	unsigned n = stub.npids[index_of(dev)];

	if (lost())
		return GPU_IS_LOST;
	if (*count < n) {
		*count = n;
		return INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++)
		p[i] = (struct process){ stub.pids[index_of(dev)][i], 1ull << 30, 0xFFFFFFFFu,
					 0xFFFFFFFFu };
	*count = n;
	return SUCCESS;
}

int nvmlDeviceGetGraphicsRunningProcesses_v3(void *dev, unsigned int *count, struct process *p)
{
	(void)dev;
	(void)p;
	if (lost())
		return GPU_IS_LOST;
	*count = 0;
	return SUCCESS;
}
