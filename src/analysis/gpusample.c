/* The GPU time series and what is said of it; see gpusample.h. */
#include "analysis/gpusample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024 * 1024)
#define MIB (1024.0 * 1024)
/* A reading this late in top's header: the driver does not answer. */
#define LATE_NS 2000000000ull
/* Marks of record's sparkline. */
#define SPARK_WIDTH 60

void gpusample_init(struct gpusample *g, unsigned ndev)
{
	g->ndev = ndev;
	g->dev = xcalloc(ndev ? ndev : 1, sizeof(*g->dev));
	for (unsigned i = 0; i < ndev; i++) {
		g->dev[i].index = i;
		g->dev[i].every = 1;
		snprintf(g->dev[i].name, sizeof(g->dev[i].name), "GPU");
	}
}

void gpusample_free(struct gpusample *g)
{
	for (unsigned i = 0; i < g->ndev; i++)
		free(g->dev[i].pts);
	free(g->dev);
	memset(g, 0, sizeof(*g));
}

void gpusample_name(struct gpusample *g, unsigned i, unsigned index, const char *name)
{
	g->dev[i].index = index;
	snprintf(g->dev[i].name, sizeof(g->dev[i].name), "%s", name);
}

/* Full: keep every other point, and from now on one reading in twice as
 * many. */
static void thin(struct gpu_dev *d)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < d->n; i += 2)
		d->pts[k++] = d->pts[i];
	d->n = k;
	d->every *= 2;
}

static void keep_point(struct gpu_dev *d, const struct gpu_point *p)
{
	if (d->skipped + 1 < d->every) {
		d->skipped++;
		return;
	}
	d->skipped = 0;
	if (d->n == GPU_POINTS_MAX)
		thin(d);
	ALLOC_GROW(d->pts, d->n + 1, d->cap);
	d->pts[d->n++] = *p;
}

void gpusample_add(struct gpusample *g, unsigned i, uint64_t t_ns, const struct nvml_reading *r)
{
	struct gpu_dev *d = &g->dev[i];
	struct gpu_point p = { t_ns, (uint8_t)(r->gpu_pct > 100 ? 100 : r->gpu_pct),
			       (uint8_t)(r->mem_pct > 100 ? 100 : r->mem_pct), r->mem_used };

	if (d->lost || (d->readings && t_ns < d->last_ns))
		return;
	if (!d->readings || p.gpu_pct < d->min_gpu) {
		d->min_gpu = p.gpu_pct;
		d->min_ns = t_ns;
	}
	if (!d->readings || p.gpu_pct > d->max_gpu) {
		d->max_gpu = p.gpu_pct;
		d->max_ns = t_ns;
	}
	if (!d->readings)
		d->first_ns = t_ns;
	d->last_ns = t_ns;
	d->readings++;
	d->hist[p.gpu_pct]++;
	d->sum_gpu += p.gpu_pct;
	d->sum_mem_pct += p.mem_pct;
	d->sum_mem_used += (double)p.mem_used;
	if (p.mem_used > d->mem_peak)
		d->mem_peak = p.mem_used;
	d->mem_total = r->mem_total;
	d->latest = p;
	keep_point(d, &p);
}

void gpusample_lost(struct gpusample *g, unsigned i, uint64_t t_ns, const char *why)
{
	struct gpu_dev *d = &g->dev[i];

	if (d->lost)
		return;
	d->lost = true;
	d->lost_ns = t_ns;
	snprintf(d->lost_why, sizeof(d->lost_why), "%s", why && *why ? why : "no answer");
}

unsigned gpusample_nused(const struct gpusample *g)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g->ndev; i++)
		n += g->dev[i].used;
	return n;
}

/* The median utilisation, from the histogram of every reading. */
static unsigned median(const struct gpu_dev *d)
{
	uint64_t seen = 0;

	for (unsigned v = 0; v <= 100; v++) {
		seen += d->hist[v];
		if (seen * 2 >= d->readings)
			return v;
	}
	return 100;
}

bool gpusample_stats(const struct gpusample *g, unsigned i, struct gpu_stats *st)
{
	const struct gpu_dev *d = &g->dev[i];

	memset(st, 0, sizeof(*st));
	if (!d->readings)
		return false;
	st->readings = d->readings;
	st->mean_gpu = d->sum_gpu / d->readings;
	st->mean_mem_pct = d->sum_mem_pct / d->readings;
	st->min_gpu = d->min_gpu;
	st->p50_gpu = median(d);
	st->max_gpu = d->max_gpu;
	st->min_at_s = d->min_ns / 1e9;
	st->max_at_s = d->max_ns / 1e9;
	st->mean_mem_used = d->sum_mem_used / d->readings;
	st->mem_peak = (double)d->mem_peak;
	st->mem_total = (double)d->mem_total;
	st->first_s = d->first_ns / 1e9;
	st->last_s = d->last_ns / 1e9;
	return true;
}

void gpusample_sparkline(const struct gpusample *g, unsigned i, int width, bool utf8,
			 struct strbuf *sb)
{
	static const char *const blocks[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
					       "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[8] = { '_', '.', ',', '-', '=', '+', '*', '#' };
	const struct gpu_dev *d = &g->dev[i];
	uint64_t span = d->last_ns - d->first_ns + 1;
	uint32_t k = 0;
	int level = 0;

	/* No more marks than points: most marks have a reading. */
	if ((uint32_t)width > d->n)
		width = (int)d->n;
	for (int c = 0; c < width; c++) {
		uint64_t end = d->first_ns + span * (uint64_t)(c + 1) / (uint64_t)width;
		double sum = 0;
		uint32_t n = 0;

		for (; k < d->n && d->pts[k].t_ns < end; k++, n++)
			sum += d->pts[k].gpu_pct;
		/* A slice between two readings (they come a little late or
		 * early) keeps the level before. */
		if (n)
			level = (int)(sum / n * 8 / 100.5);
		if (utf8)
			sb_puts(sb, blocks[level]);
		else
			sb_putc(sb, ascii[level]);
	}
}

static void dev_title(const struct gpu_dev *d, struct strbuf *sb)
{
	sb_printf(sb, "GPU %u (", d->index);
	sb_add_printable(sb, d->name);
	sb_putc(sb, ')');
}

static void dev_summary(const struct gpusample *g, unsigned i, bool utf8, struct strbuf *sb)
{
	const struct gpu_dev *d = &g->dev[i];
	struct gpu_stats st;

	dev_title(d, sb);
	if (!gpusample_stats(g, i, &st)) {
		sb_puts(sb, ": no reading\n");
		return;
	}
	sb_printf(sb, ": %.1f%% busy on average (min %u%% at %.1f s, median %u%%, max %u%% at "
		  "%.1f s), memory %.1f%% busy, %.2f of %.2f GiB used on average (peak %.2f)\n",
		  st.mean_gpu, st.min_gpu, st.min_at_s, st.p50_gpu, st.max_gpu, st.max_at_s,
		  st.mean_mem_pct, st.mean_mem_used / GIB, st.mem_total / GIB, st.mem_peak / GIB);
	sb_printf(sb, "GPU %u busy from %.1f s to %.1f s: ", d->index, st.first_s, st.last_s);
	gpusample_sparkline(g, i, SPARK_WIDTH, utf8, sb);
	sb_putc(sb, '\n');
	if (d->lost)
		sb_printf(sb, "GPU %u was lost at %.1f s (%s): its figures end there\n", d->index,
			  d->lost_ns / 1e9, d->lost_why);
}

/* The devices seen, for the line that says none was used. */
static void seen_devices(const struct gpusample *g, struct strbuf *sb)
{
	sb_printf(sb, " (NVML sees %u: ", g->ndev);
	for (unsigned i = 0; i < g->ndev && i < 4; i++) {
		if (i)
			sb_puts(sb, ", ");
		dev_title(&g->dev[i], sb);
	}
	sb_puts(sb, g->ndev > 4 ? ", ...)" : ")");
}

void gpusample_summary(const struct gpusample *g, bool utf8, struct strbuf *sb)
{
	if (!gpusample_nused(g)) {
		sb_puts(sb, "no GPU used by the process tree");
		seen_devices(g, sb);
		sb_putc(sb, '\n');
		return;
	}
	for (unsigned i = 0; i < g->ndev; i++)
		if (g->dev[i].used)
			dev_summary(g, i, utf8, sb);
}

static void dev_current(const struct gpu_dev *d, uint64_t t_ns, struct strbuf *sb)
{
	dev_title(d, sb);
	if (d->lost) {
		sb_printf(sb, ": lost (%s)\n", d->lost_why);
		return;
	}
	if (!d->readings) {
		sb_puts(sb, ": no reading yet\n");
		return;
	}
	sb_printf(sb, ": %u%% busy, memory %u%% busy, %.1f of %.1f GiB", d->latest.gpu_pct,
		  d->latest.mem_pct, d->latest.mem_used / GIB, d->mem_total / GIB);
	if (t_ns > d->last_ns + LATE_NS)
		sb_printf(sb, " (no answer for %.0f s)", (t_ns - d->last_ns) / 1e9);
	sb_putc(sb, '\n');
}

void gpusample_current(const struct gpusample *g, uint64_t t_ns, struct strbuf *sb)
{
	if (!gpusample_nused(g)) {
		sb_puts(sb, "GPU: none used by the process tree");
		seen_devices(g, sb);
		sb_putc(sb, '\n');
		return;
	}
	for (unsigned i = 0; i < g->ndev; i++)
		if (g->dev[i].used)
			dev_current(&g->dev[i], t_ns, sb);
}

void gpusample_to_profile(const struct gpusample *g, struct profile *p)
{
	for (unsigned i = 0; i < g->ndev; i++) {
		const struct gpu_dev *d = &g->dev[i];
		uint32_t util, mem;
		char name[64];

		if (!d->used || !d->n)
			continue;
		snprintf(name, sizeof(name), "GPU %u utilization", d->index);
		util = profile_counter(p, name, "%");
		snprintf(name, sizeof(name), "GPU %u memory", d->index);
		mem = profile_counter(p, name, "MiB");
		for (uint32_t k = 0; k < d->n; k++) {
			profile_counter_add(p, util, d->pts[k].t_ns, d->pts[k].gpu_pct);
			profile_counter_add(p, mem, d->pts[k].t_ns,
					    (double)d->pts[k].mem_used / MIB);
		}
	}
}
