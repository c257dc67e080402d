/* NVML through dlopen; see nvml.h. */
#include "analysis/nvml.h"
#include "util/util.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SONAME "libnvidia-ml.so.1"

/* From NVML's documentation (nvmlReturn_t, the structures below): the
 * values are its ABI, stable across driver versions. */
typedef int nvml_ret;
typedef void *nvml_device;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_GPU_NOT_FOUND = 28,
};

#define NVML_NAME_LEN 96	/* NVML_DEVICE_NAME_V2_BUFFER_SIZE */

struct nvml_utilization {
	unsigned int gpu, memory;
};

struct nvml_memory {
	unsigned long long total, free, used;
};

/* nvmlProcessInfo_v2_t, which the _v2 and _v3 calls fill. */
struct nvml_process {
	unsigned int pid;
	unsigned long long used_memory;
	unsigned int gpu_instance, compute_instance;
};

/* Headers of CUDA 12.2-12.3 gave the structure of the _v3 call an eighth
 * byte pair (usedGpuCcProtectedMemory) that the library never wrote; the
 * buffer is this large per entry whatever a driver does. */
#define PROCESS_STRIDE_MAX 32

struct nvml_fns {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*handle)(unsigned int, nvml_device *);
	nvml_ret (*name)(nvml_device, char *, unsigned int);
	nvml_ret (*utilization)(nvml_device, struct nvml_utilization *);
	nvml_ret (*memory)(nvml_device, struct nvml_memory *);
	nvml_ret (*compute)(nvml_device, unsigned int *, struct nvml_process *);
	nvml_ret (*graphics)(nvml_device, unsigned int *, struct nvml_process *);
};

/* Each function by the names drivers have had for it, newest first: a
 * driver has the _v3 of the process lists from R510 on, the _v2 before. */
static const struct {
	size_t off;
	const char *names[3];
} symbols[] = {
	{ offsetof(struct nvml_fns, init), { "nvmlInit_v2", "nvmlInit" } },
	{ offsetof(struct nvml_fns, shutdown), { "nvmlShutdown" } },
	{ offsetof(struct nvml_fns, error_string), { "nvmlErrorString" } },
	{ offsetof(struct nvml_fns, count), { "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount" } },
	{ offsetof(struct nvml_fns, handle),
	  { "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex" } },
	{ offsetof(struct nvml_fns, name), { "nvmlDeviceGetName" } },
	{ offsetof(struct nvml_fns, utilization), { "nvmlDeviceGetUtilizationRates" } },
	{ offsetof(struct nvml_fns, memory), { "nvmlDeviceGetMemoryInfo" } },
	{ offsetof(struct nvml_fns, compute),
	  { "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2" } },
	{ offsetof(struct nvml_fns, graphics),
	  { "nvmlDeviceGetGraphicsRunningProcesses_v3",
	    "nvmlDeviceGetGraphicsRunningProcesses_v2" } },
};

/* How each NVML error reads to us; anything else is NVMLS_FAILED. */
static const struct {
	nvml_ret ret;
	enum nvml_status st;
} statuses[] = {
	{ NVML_SUCCESS, NVMLS_OK },
	{ NVML_ERROR_DRIVER_NOT_LOADED, NVMLS_NO_DRIVER },
	{ NVML_ERROR_NO_PERMISSION, NVMLS_NO_DRIVER },
	{ NVML_ERROR_UNINITIALIZED, NVMLS_NO_DRIVER },
	{ NVML_ERROR_GPU_IS_LOST, NVMLS_LOST },
	{ NVML_ERROR_RESET_REQUIRED, NVMLS_LOST },
	{ NVML_ERROR_GPU_NOT_FOUND, NVMLS_LOST },
};

struct nvml_reader {
	void *so;
	struct nvml_fns fn;
	bool initialised;
	unsigned n;
	nvml_device dev[NVML_MAX_DEVICES];
	char names[NVML_MAX_DEVICES][NVML_NAME_LEN];
	unsigned char *procs;	/* room for NVML_MAX_PIDS entries of the largest stride */
	char last_error[128];
};

static enum nvml_status status_of(struct nvml_reader *r, nvml_ret ret)
{
	if (ret != NVML_SUCCESS && r->fn.error_string)
		snprintf(r->last_error, sizeof(r->last_error), "%s", r->fn.error_string(ret));
	for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
		if (statuses[i].ret == ret)
			return statuses[i].st;
	return NVMLS_FAILED;
}

static bool resolve(struct nvml_reader *r, const char **missing)
{
	for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
		void *p = NULL;

		for (int k = 0; k < 3 && symbols[i].names[k] && !p; k++)
			p = dlsym(r->so, symbols[i].names[k]);
		if (!p) {
			*missing = symbols[i].names[0];
			return false;
		}
		memcpy((char *)&r->fn + symbols[i].off, &p, sizeof(p));
	}
	return true;
}

static void list_devices(struct nvml_reader *r, unsigned count)
{
	for (unsigned i = 0; i < count && r->n < NVML_MAX_DEVICES; i++) {
		if (r->fn.handle(i, &r->dev[r->n]) != NVML_SUCCESS)
			continue;
		if (r->fn.name(r->dev[r->n], r->names[r->n], NVML_NAME_LEN) != NVML_SUCCESS)
			snprintf(r->names[r->n], NVML_NAME_LEN, "GPU");
		r->names[r->n][NVML_NAME_LEN - 1] = '\0';
		r->n++;
	}
}

struct nvml_reader *nvml_open(enum nvml_status *st, char *why, size_t whylen)
{
	struct nvml_reader *r = xcalloc(1, sizeof(*r));
	const char *missing;
	unsigned count = 0;
	nvml_ret ret;

	r->so = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!r->so) {
		*st = NVMLS_NO_LIBRARY;
		snprintf(why, whylen, "%s was not found (it comes with NVIDIA's driver)", SONAME);
		goto fail;
	}
	if (!resolve(r, &missing)) {
		*st = NVMLS_NO_LIBRARY;
		snprintf(why, whylen, "%s has no %s (a driver older than R470)", SONAME, missing);
		goto fail;
	}
	if ((ret = r->fn.init()) != NVML_SUCCESS) {
		*st = status_of(r, ret);
		if (*st == NVMLS_OK || *st == NVMLS_LOST)
			*st = NVMLS_NO_DRIVER;
		snprintf(why, whylen, "NVML could not start: %s", r->last_error);
		goto fail;
	}
	r->initialised = true;
	if ((ret = r->fn.count(&count)) == NVML_SUCCESS)
		list_devices(r, count);
	if (!r->n) {
		*st = NVMLS_NO_DEVICE;
		snprintf(why, whylen, "NVML sees no GPU");
		goto fail;
	}
	r->procs = xcalloc(NVML_MAX_PIDS, PROCESS_STRIDE_MAX);
	*st = NVMLS_OK;
	return r;
fail:
	nvml_close(r);
	return NULL;
}

void nvml_close(struct nvml_reader *r)
{
	if (!r)
		return;
	if (r->initialised)
		r->fn.shutdown();
	/* Not dlclose: the driver's library starts threads of its own that
	 * may outlive nvmlShutdown. */
	free(r->procs);
	free(r);
}

unsigned nvml_count(const struct nvml_reader *r)
{
	return r->n;
}

const char *nvml_name(const struct nvml_reader *r, unsigned dev)
{
	return dev < r->n ? r->names[dev] : "GPU";
}

const char *nvml_last_error(const struct nvml_reader *r)
{
	return r->last_error;
}

/* One process list (compute or graphics) into pids[*n..max).  NVML fills
 * nothing when the list is longer than the room given
 * (INSUFFICIENT_SIZE): the room is NVML_MAX_PIDS from the first call, so
 * a device running more processes than that is not matched this time,
 * rather than asked again and again. */
static enum nvml_status list_pids(struct nvml_reader *r,
				  nvml_ret (*fn)(nvml_device, unsigned int *, struct nvml_process *),
				  nvml_device d, pid_t *pids, int *n, int max)
{
	struct nvml_process *procs = (struct nvml_process *)r->procs;
	unsigned int count = NVML_MAX_PIDS;
	nvml_ret ret = fn(d, &count, procs);

	if (ret == NVML_ERROR_NOT_SUPPORTED)
		return NVMLS_OK;
	if (ret != NVML_SUCCESS)
		return status_of(r, ret);
	for (unsigned i = 0; i < count && i < NVML_MAX_PIDS && *n < max; i++)
		pids[(*n)++] = (pid_t)procs[i].pid;
	return NVMLS_OK;
}

int nvml_pids(struct nvml_reader *r, unsigned dev, pid_t *pids, int max, enum nvml_status *st)
{
	int n = 0;

	if (dev >= r->n) {
		*st = NVMLS_LOST;
		return -1;
	}
	*st = list_pids(r, r->fn.compute, r->dev[dev], pids, &n, max);
	if (*st == NVMLS_OK)
		*st = list_pids(r, r->fn.graphics, r->dev[dev], pids, &n, max);
	return *st == NVMLS_OK ? n : -1;
}

enum nvml_status nvml_read(struct nvml_reader *r, unsigned dev, struct nvml_reading *out)
{
	struct nvml_utilization u;
	struct nvml_memory m;
	nvml_ret ret;

	if (dev >= r->n)
		return NVMLS_LOST;
	if ((ret = r->fn.utilization(r->dev[dev], &u)) != NVML_SUCCESS ||
	    (ret = r->fn.memory(r->dev[dev], &m)) != NVML_SUCCESS)
		return status_of(r, ret);
	/* Percentages, whatever a broken driver says. */
	out->gpu_pct = u.gpu > 100 ? 100 : u.gpu;
	out->mem_pct = u.memory > 100 ? 100 : u.memory;
	out->mem_used = m.used;
	out->mem_total = m.total;
	return NVMLS_OK;
}
