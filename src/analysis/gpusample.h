/* GPU readings over a recording: per device, a time series of utilisation
 * and memory, the statistics and the text record's summary and top's
 * header show, and the counter series of the profile.
 *
 * No NVML here: whoever reads the devices (gpuwatch.c) feeds readings in,
 * and the tests feed their own.
 */
#ifndef PYSTROBE_GPUSAMPLE_H
#define PYSTROBE_GPUSAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/nvml.h"
#include "profile/profile.h"
#include "util/util.h"

/* Points kept per device; past it every other one is dropped and then
 * only one reading in two (four...) is kept: the statistics still count
 * every reading, the time series gets coarser. */
#define GPU_POINTS_MAX 65536

struct gpu_point {
	uint64_t t_ns;		/* since the start of the recording */
	uint8_t gpu_pct, mem_pct;
	uint64_t mem_used;
};

struct gpu_dev {
	unsigned index;		/* NVML's */
	char name[96];
	uint64_t mem_total;
	bool used;		/* a process of the tree was seen on it */
	bool lost;		/* it stopped answering at lost_ns */
	uint64_t lost_ns;
	char lost_why[96];

	struct gpu_point *pts;
	uint32_t n, cap;
	uint32_t every, skipped;	/* keep one reading in every */

	/* Every reading, kept or not. */
	uint64_t readings;
	uint64_t hist[101];	/* readings by utilisation % */
	double sum_gpu, sum_mem_pct, sum_mem_used;
	uint64_t mem_peak;
	unsigned min_gpu, max_gpu;
	uint64_t min_ns, max_ns;	/* when each was first read */
	uint64_t first_ns, last_ns;
	struct gpu_point latest;
};

struct gpusample {
	struct gpu_dev *dev;
	unsigned ndev;
};

struct gpu_stats {
	uint64_t readings;
	double mean_gpu, mean_mem_pct;
	unsigned min_gpu, p50_gpu, max_gpu;
	double min_at_s, max_at_s;	/* since the start */
	double mean_mem_used, mem_peak, mem_total;	/* bytes */
	double first_s, last_s;
};

void gpusample_init(struct gpusample *g, unsigned ndev);
void gpusample_free(struct gpusample *g);

/* Device i (of the ndev given to init) is NVML's index with this name. */
void gpusample_name(struct gpusample *g, unsigned i, unsigned index, const char *name);

/* A reading of device i taken t_ns after the start, in time order. */
void gpusample_add(struct gpusample *g, unsigned i, uint64_t t_ns, const struct nvml_reading *r);

/* Device i stopped answering at t_ns, for why (NVML's words). */
void gpusample_lost(struct gpusample *g, unsigned i, uint64_t t_ns, const char *why);

unsigned gpusample_nused(const struct gpusample *g);

/* Statistics of device i; false when it has no reading. */
bool gpusample_stats(const struct gpusample *g, unsigned i, struct gpu_stats *st);

/* Utilisation of device i over its readings as width marks (fewer when
 * there are fewer points), each the mean of its share of the time (a
 * share without a reading: the mark before): block elements with utf8,
 * else ASCII. */
void gpusample_sparkline(const struct gpusample *g, unsigned i, int width, bool utf8,
			 struct strbuf *sb);

/* record's summary: lines (each ending in '\n', without "pystrobe: ")
 * for every device the tree used, or one line saying none was. */
void gpusample_summary(const struct gpusample *g, bool utf8, struct strbuf *sb);

/* top's header at t_ns: a line per used device with its latest reading
 * (and for how long none came, when one is late: a driver that hangs),
 * or one saying none is used. */
void gpusample_current(const struct gpusample *g, uint64_t t_ns, struct strbuf *sb);

/* Counter series "GPU N utilization" (%) and "GPU N memory" (MiB) of
 * every used device, into p. */
void gpusample_to_profile(const struct gpusample *g, struct profile *p);

#endif
