/* The GPU watching thread; see gpuwatch.h. */
#include "analysis/gpuwatch.h"
#include "analysis/nvml.h"
#include "process/proctree.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gpuwatch {
	pthread_t thread;
	bool started;
	pid_t root;
	bool all;		/* gpuwatch_start_all(): every device, and its pids */
	uint64_t start_ns;

	/* Under lock: what the thread shares. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;		/* nothing shared changes from then on */
	bool stuck;		/* the thread did not end: left to itself */
	bool opened;		/* g holds the devices */
	char note[256];		/* why nothing is read, or "" */
	struct gpusample g;
	struct dev_pids {
		pid_t v[GPUWATCH_NOW_PIDS];
		int n, listed;
	} *now;			/* with all: by device */

	/* The thread's own. */
	struct nvml_reader *r;
	struct proc_node *nodes;
	pid_t *tree;		/* the tree's pids, sorted */
	pid_t dev_pids[NVML_MAX_PIDS];
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static int tree_pids(struct gpuwatch *w)
{
	int n = proctree_list(w->root, w->nodes, PROCTREE_MAX);

	for (int i = 0; i < n; i++)
		w->tree[i] = w->nodes[i].pid;
	qsort(w->tree, (size_t)n, sizeof(*w->tree), cmp_pid);
	return n;
}

/* Take the lock unless stopped: what is shared changes only under it, and
 * no more once gpuwatch_stop() has set stop, so that what it leaves is
 * final even when the thread is still inside a call to NVML that never
 * returns. */
static bool lock_live(struct gpuwatch *w)
{
	pthread_mutex_lock(&w->lock);
	if (!w->stop)
		return true;
	pthread_mutex_unlock(&w->lock);
	return false;
}

static void mark_lost(struct gpuwatch *w, unsigned dev, uint64_t t_ns)
{
	if (!lock_live(w))
		return;
	gpusample_lost(&w->g, dev, t_ns, nvml_last_error(w->r));
	pthread_mutex_unlock(&w->lock);
}

/* Every device is shown, with the processes on it as of now. */
static void list_all(struct gpuwatch *w, uint64_t t_ns)
{
	for (unsigned d = 0; d < nvml_count(w->r); d++) {
		enum nvml_status st;
		int n;

		if (w->g.dev[d].lost)
			continue;
		n = nvml_pids(w->r, d, w->dev_pids, NVML_MAX_PIDS, &st);
		if (st == NVMLS_LOST)
			mark_lost(w, d, t_ns);
		if (n < 0 || !lock_live(w))
			continue;
		w->now[d].listed = n;
		w->now[d].n = n < GPUWATCH_NOW_PIDS ? n : GPUWATCH_NOW_PIDS;
		memcpy(w->now[d].v, w->dev_pids, (size_t)w->now[d].n * sizeof(pid_t));
		w->g.dev[d].used = true;
		pthread_mutex_unlock(&w->lock);
	}
}

/* Which devices the tree's processes are on, now. */
static void match(struct gpuwatch *w, uint64_t t_ns)
{
	int ntree;

	if (w->all) {
		list_all(w, t_ns);
		return;
	}
	ntree = tree_pids(w);

	for (unsigned d = 0; d < nvml_count(w->r) && ntree > 0; d++) {
		enum nvml_status st;
		bool on = false;
		int n;

		if (w->g.dev[d].used || w->g.dev[d].lost)
			continue;
		n = nvml_pids(w->r, d, w->dev_pids, NVML_MAX_PIDS, &st);
		if (st == NVMLS_LOST)
			mark_lost(w, d, t_ns);
		for (int i = 0; i < n && ntree && !on; i++)
			on = bsearch(&w->dev_pids[i], w->tree, (size_t)ntree, sizeof(*w->tree),
				     cmp_pid) != NULL;
		if (on && lock_live(w)) {
			w->g.dev[d].used = true;
			pthread_mutex_unlock(&w->lock);
		}
	}
}

static uint64_t since_start(const struct gpuwatch *w)
{
	uint64_t now = mono_ns();

	return now > w->start_ns ? now - w->start_ns : 0;
}

/* Each device at its own time: a driver takes milliseconds a call. */
static void read_devices(struct gpuwatch *w)
{
	for (unsigned d = 0; d < nvml_count(w->r); d++) {
		struct nvml_reading r;
		enum nvml_status st;
		uint64_t t_ns;

		if (w->g.dev[d].lost)
			continue;
		t_ns = since_start(w);
		st = nvml_read(w->r, d, &r);
		if (st == NVMLS_LOST) {
			mark_lost(w, d, t_ns);
		} else if (st == NVMLS_OK && lock_live(w)) {
			gpusample_add(&w->g, d, t_ns, &r);
			pthread_mutex_unlock(&w->lock);
		}
	}
}

/* Sleep until the mono_ns() deadline, or until stopped: false then. */
static bool wait_until(struct gpuwatch *w, uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ull),
			       (long)(deadline % 1000000000ull) };
	bool go;

	pthread_mutex_lock(&w->lock);
	while (!w->stop && mono_ns() < deadline)
		if (pthread_cond_timedwait(&w->wake, &w->lock, &ts) != 0)
			break;
	go = !w->stop;
	pthread_mutex_unlock(&w->lock);
	return go;
}

static bool open_reader(struct gpuwatch *w)
{
	enum nvml_status st;
	char why[200];

	w->r = nvml_open(&st, why, sizeof(why));
	if (!lock_live(w))
		return false;
	if (w->r) {
		gpusample_init(&w->g, nvml_count(w->r));
		for (unsigned d = 0; d < nvml_count(w->r); d++)
			gpusample_name(&w->g, d, d, nvml_name(w->r, d));
		if (w->all)
			w->now = xcalloc(nvml_count(w->r), sizeof(*w->now));
		w->opened = true;
	} else {
		snprintf(w->note, sizeof(w->note), "%s", why);
	}
	pthread_mutex_unlock(&w->lock);
	return w->r != NULL;
}

static void *watch(void *arg)
{
	struct gpuwatch *w = arg;
	uint64_t next = mono_ns(), next_match = next;

	if (!open_reader(w))
		return NULL;
	do {
		uint64_t now = mono_ns();

		if (now >= next_match) {
			match(w, since_start(w));
			next_match = now + GPUWATCH_MATCH_NS;
		}
		read_devices(w);
		/* On the grid of periods; a slow driver skips a reading
		 * rather than bunching them. */
		next += GPUWATCH_PERIOD_NS;
		if (next <= mono_ns())
			next = mono_ns() + GPUWATCH_PERIOD_NS;
	} while (wait_until(w, next));
	return NULL;
}

struct gpuwatch *gpuwatch_start_all(uint64_t start_ns)
{
	return gpuwatch_start(-1, start_ns);
}

struct gpuwatch *gpuwatch_start(pid_t root, uint64_t start_ns)
{
	struct gpuwatch *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;

	w->root = root;
	w->all = root < 0;
	w->start_ns = start_ns;
	w->nodes = xcalloc(PROCTREE_MAX, sizeof(*w->nodes));
	w->tree = xcalloc(PROCTREE_MAX, sizeof(*w->tree));
	pthread_mutex_init(&w->lock, NULL);
	/* mono_ns() is CLOCK_MONOTONIC: the waits' deadlines are too. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, watch, w) == 0)
		w->started = true;
	else
		snprintf(w->note, sizeof(w->note), "no thread to read the GPUs on");
	return w;
}

/* A driver stuck on a wedged GPU hangs NVML's calls (nvidia-smi hangs
 * too): the end of a recording waits this long for the thread, then goes
 * on without it, so that the profile is written. */
#define GPUWATCH_STOP_S 2

/* The watches whose thread did not end, kept reachable: the thread may
 * still come back and touch them.  One per command at most. */
static struct gpuwatch *abandoned;

void gpuwatch_stop(struct gpuwatch *w)
{
	struct timespec ts;

	if (!w || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	w->started = false;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += GPUWATCH_STOP_S;
	if (pthread_timedjoin_np(w->thread, NULL, &ts) != 0) {
		w->stuck = true;
		snprintf(w->note, sizeof(w->note), "NVML did not answer within %d s when the "
			 "recording ended (a GPU or its driver hangs): %s", GPUWATCH_STOP_S,
			 w->opened ? "the figures end at the last reading" : "no reading");
		return;
	}
	/* Stopped while NVML was starting (a recording shorter than its
	 * start). */
	if (!w->opened && !w->note[0])
		snprintf(w->note, sizeof(w->note), "NVML had not started when the recording ended");
	nvml_close(w->r);
	w->r = NULL;
}

void gpuwatch_free(struct gpuwatch *w)
{
	if (!w)
		return;
	gpuwatch_stop(w);
	if (w->stuck) {
		abandoned = w;
		return;
	}
	gpusample_free(&w->g);
	free(w->now);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->nodes);
	free(w->tree);
	free(w);
}

const char *gpuwatch_note(struct gpuwatch *w)
{
	return w && w->note[0] ? w->note : NULL;
}

const struct gpusample *gpuwatch_result(const struct gpuwatch *w)
{
	return w && w->opened ? &w->g : NULL;
}

void gpuwatch_current(struct gpuwatch *w, struct strbuf *sb)
{
	pthread_mutex_lock(&w->lock);
	if (w->opened)
		gpusample_current(&w->g, since_start(w), sb);
	else if (w->note[0])
		sb_printf(sb, "GPU: %s\n", w->note);
	else
		sb_puts(sb, "GPU: opening NVML...\n");
	pthread_mutex_unlock(&w->lock);
}

static void now_of(const struct gpuwatch *w, unsigned d, uint64_t t_ns, struct gpu_now *o)
{
	const struct gpu_dev *dev = &w->g.dev[d];

	memset(o, 0, sizeof(*o));
	o->index = dev->index;
	snprintf(o->name, sizeof(o->name), "%s", dev->name);
	o->lost = dev->lost;
	snprintf(o->lost_why, sizeof(o->lost_why), "%s", dev->lost_why);
	if ((o->read = dev->readings > 0)) {
		o->gpu_pct = dev->latest.gpu_pct;
		o->mem_pct = dev->latest.mem_pct;
		o->mem_used = dev->latest.mem_used;
		o->mem_total = dev->mem_total;
		o->age_ns = t_ns > dev->last_ns ? t_ns - dev->last_ns : 0;
	}
	if (w->now) {
		o->npids = w->now[d].n;
		o->listed = w->now[d].listed;
		memcpy(o->pids, w->now[d].v, (size_t)o->npids * sizeof(pid_t));
	}
}

int gpuwatch_now(struct gpuwatch *w, struct gpu_now *out, int max, char *note, size_t notelen)
{
	int n = -1;

	pthread_mutex_lock(&w->lock);
	if (w->opened) {
		uint64_t t_ns = since_start(w);

		for (n = 0; n < max && (unsigned)n < w->g.ndev; n++)
			now_of(w, (unsigned)n, t_ns, &out[n]);
	} else {
		snprintf(note, notelen, "%s", w->note[0] ? w->note : "NVML is still opening");
	}
	pthread_mutex_unlock(&w->lock);
	return n;
}
