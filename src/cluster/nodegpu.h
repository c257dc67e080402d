/* top --slurm --gpu: a node's GPUs in its reply, and read back.
 *
 * The node (cmd/top_node.c) reads every GPU its NVML sees
 * (analysis/gpuwatch.h) and writes them into each reply as "gpu": each
 * device's latest figures and the pids of the job's processes NVML lists
 * on it, or a note saying why the node has none (no library, no driver,
 * no device).  The front (cmd/top_slurm.c) reads them back into the
 * model's struct top_gpu, each pid turned into its rank through the
 * reply's "processes".  Both ends are bounded: NVML_MAX_DEVICES devices,
 * NODE_GPU_PIDS pids a device.
 */
#ifndef PYSTROBE_NODEGPU_H
#define PYSTROBE_NODEGPU_H

#include "analysis/gpuwatch.h"
#include "cluster/nodeprocs.h"
#include "top/model.h"
#include "util/json.h"
#include "util/jsonread.h"

/* The job's pids named per device in a reply; past them, they count as
 * processes of the job without a rank. */
#define NODE_GPU_PIDS 64

/* "gpu" into the reply's object: n devices of g, those of np's processes
 * on each, or with n < 0, the note. */
void node_gpu_json(struct json *j, const struct gpu_now *g, int n, const char *note,
		   const struct node_procs *np);

/* The reply's "gpu" into *out (n of them, to top_gpus_free()); their
 * count, or -1 with why there is none in note ("" when the reply has no
 * "gpu" at all: --gpu was not asked). */
int node_reply_gpus(const struct jdoc *d, struct top_gpu **out, char *note, size_t notelen);

#endif
