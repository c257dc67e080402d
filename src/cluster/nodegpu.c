/* A node's GPUs in its reply, and read back (cluster/nodegpu.h). */
#include "cluster/nodegpu.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void device_json(struct json *j, const struct gpu_now *g, const struct node_procs *np)
{
	int job = 0, more = 0;

	json_obj_begin(j);
	json_kint(j, "index", g->index);
	json_kstr(j, "name", g->name);
	if (g->lost)
		json_kstr(j, "lost", g->lost_why);
	if (g->read) {
		json_kint(j, "gpu_pct", g->gpu_pct);
		json_kint(j, "mem_pct", g->mem_pct);
		json_kuint(j, "mem_used", g->mem_used);
		json_kuint(j, "mem_total", g->mem_total);
		json_kuint(j, "age_ms", g->age_ns / 1000000);
	}
	json_key(j, "pids");
	json_arr_begin(j);
	for (int i = 0; i < g->npids && i < GPUWATCH_NOW_PIDS; i++) {
		if (!node_procs_find(np, g->pids[i]))
			continue;
		if (job++ < NODE_GPU_PIDS)
			json_int(j, g->pids[i]);
		else
			more++;
	}
	json_arr_end(j);
	json_kint(j, "more_pids", more);
	/* NVML names every process on the device: the others' are not the
	 * job's (those past GPUWATCH_NOW_PIDS are not known either way). */
	json_kint(j, "others", g->listed > job ? g->listed - job : 0);
	json_obj_end(j);
}

void node_gpu_json(struct json *j, const struct gpu_now *g, int n, const char *note,
		   const struct node_procs *np)
{
	json_key(j, "gpu");
	json_obj_begin(j);
	if (n < 0) {
		json_kstr(j, "note", note && *note ? note : "no GPU figures");
	} else {
		json_key(j, "devices");
		json_arr_begin(j);
		for (int i = 0; i < n && i < NVML_MAX_DEVICES; i++)
			device_json(j, &g[i], np);
		json_arr_end(j);
	}
	json_obj_end(j);
}

static int64_t int_or(const struct jdoc *d, const struct jv *o, const char *key, int64_t hi,
		      int64_t dflt)
{
	int64_t v;

	return jv_int(jv_get(d, o, key), 0, hi, &v) ? v : dflt;
}

/* One device of the reply; its pids become ranks by the reply's
 * "processes". */
static void device_read(const struct jdoc *d, const struct jv *o, struct top_gpu *g)
{
	const struct jv *pids = jv_get(d, o, "pids");
	const char *name = jv_str(d, jv_get(d, o, "name")), *lost = jv_str(d, jv_get(d, o, "lost"));

	memset(g, 0, sizeof(*g));
	g->index = (unsigned)int_or(d, o, "index", 1 << 20, 0);
	g->name = xstrdup(name ? name : "GPU");
	g->lost = lost ? xstrdup(lost) : NULL;
	g->gpu_pct = (int)int_or(d, o, "gpu_pct", 100, -1);
	g->mem_pct = (int)int_or(d, o, "mem_pct", 100, -1);
	g->mem_used = (uint64_t)int_or(d, o, "mem_used", INT64_MAX, 0);
	g->mem_total = (uint64_t)int_or(d, o, "mem_total", INT64_MAX, 0);
	g->age_s = (unsigned)(int_or(d, o, "age_ms", INT32_MAX, 0) / 1000);
	g->unranked = (int)int_or(d, o, "more_pids", INT32_MAX, 0);
	g->others = (int)int_or(d, o, "others", INT32_MAX, 0);
	g->ranks = xmalloc(NODE_GPU_PIDS * sizeof(*g->ranks));
	for (size_t i = 0; i < jv_len(pids) && i < NODE_GPU_PIDS; i++) {
		int64_t pid;
		long rank;

		if (!jv_int(jv_at(d, pids, i), 1, INT32_MAX, &pid))
			continue;
		if ((rank = node_reply_rank(d, (pid_t)pid)) >= 0)
			g->ranks[g->nranks++] = rank;
		else
			g->unranked++;
	}
}

int node_reply_gpus(const struct jdoc *d, struct top_gpu **out, char *note, size_t notelen)
{
	const struct jv *gpu = jv_get(d, jdoc_root(d), "gpu");
	const struct jv *devs = jv_get(d, gpu, "devices");
	const char *why = jv_str(d, jv_get(d, gpu, "note"));
	size_t n = jv_len(devs);

	*out = NULL;
	note[0] = 0;
	if (!gpu || !jv_is(devs, JV_ARR)) {
		if (gpu)
			snprintf(note, notelen, "%s", why ? why : "no GPU figures");
		return -1;
	}
	if (n > NVML_MAX_DEVICES)
		n = NVML_MAX_DEVICES;
	*out = xcalloc(n ? n : 1, sizeof(**out));
	for (size_t i = 0; i < n; i++)
		device_read(d, jv_at(d, devs, i), &(*out)[i]);
	return (int)n;
}
