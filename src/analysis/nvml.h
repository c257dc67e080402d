/* NVIDIA's management library (NVML), read from outside: which GPUs a
 * process uses, how busy they are, how much memory they hold.
 *
 * libnvidia-ml.so.1 comes with the driver, not with pystrobe: it is
 * opened with dlopen() when --gpu asks for it, never linked, and looked up
 * as the dynamic loader looks up any library (LD_LIBRARY_PATH, ld.so.cache).
 * NVML talks to the driver only: no CUDA context is created, in the target
 * or here.  Its types and constants are declared in nvml.c from NVML's
 * public documentation; no header is needed to build.
 *
 * Every list is bounded: at most NVML_MAX_DEVICES devices, and at most
 * NVML_MAX_PIDS processes per device.
 */
#ifndef PYSTROBE_NVML_H
#define PYSTROBE_NVML_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NVML_MAX_DEVICES 64
#define NVML_MAX_PIDS 1024

/* Why a device or the library gave nothing. */
enum nvml_status {
	NVMLS_OK,
	NVMLS_NO_LIBRARY,	/* libnvidia-ml.so.1 not found, or too old */
	NVMLS_NO_DRIVER,	/* nvmlInit failed: no driver loaded, no permission */
	NVMLS_NO_DEVICE,	/* the driver sees no GPU */
	NVMLS_LOST,		/* the device fell off the bus, needs a reset, is gone */
	NVMLS_FAILED,		/* another error; the next reading may work */
};

/* One reading of one device. */
struct nvml_reading {
	unsigned gpu_pct;	/* time a kernel ran, over NVML's own window */
	unsigned mem_pct;	/* time device memory was read or written */
	uint64_t mem_used, mem_total;	/* bytes */
};

struct nvml_reader;

/* Load the library, initialise it and list its devices.  NULL with the
 * status in *st and a line (no "pystrobe:") in why when it cannot. */
struct nvml_reader *nvml_open(enum nvml_status *st, char *why, size_t whylen);
/* nvmlShutdown, and free. */
void nvml_close(struct nvml_reader *r);

unsigned nvml_count(const struct nvml_reader *r);
/* The device's name ("NVIDIA H100 80GB HBM3"), or "GPU". */
const char *nvml_name(const struct nvml_reader *r, unsigned dev);

/* The host pids of the processes that use device dev (compute and
 * graphics) into pids (room for max); their count, or -1 with the status
 * in *st. */
int nvml_pids(struct nvml_reader *r, unsigned dev, pid_t *pids, int max, enum nvml_status *st);

/* Read utilisation and memory of device dev. */
enum nvml_status nvml_read(struct nvml_reader *r, unsigned dev, struct nvml_reading *out);

/* The library's words for the latest failure, or "". */
const char *nvml_last_error(const struct nvml_reader *r);

#endif
