/* The GPU time series of --gpu (src/analysis/gpusample.c), fed readings here
 * as the NVML thread feeds them: its statistics, sparkline, summary and
 * header text, the profile's counter series, and the Chrome trace's
 * counter events made from them.  No NVML: tests/live/check_gpu runs the
 * whole path against a stand-in library. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"
#include "analysis/gpusample.h"
#include "suite.h"

#define MS 1000000ull
#define MIB (1024ull * 1024)

static struct nvml_reading reading(unsigned gpu, uint64_t used_mib)
{
	return (struct nvml_reading){ gpu, gpu / 2, used_mib * MIB, 81920 * MIB };
}

/* A square wave: 3% for five readings, 97% for five, every 100 ms. */
static void square(struct gpusample *g, unsigned dev, int n)
{
	for (int i = 0; i < n; i++) {
		struct nvml_reading r = reading(i / 5 % 2 ? 97 : 3, i / 5 % 2 ? 3000 : 1000);

		gpusample_add(g, dev, (uint64_t)i * 100 * MS, &r);
	}
}

START_TEST(test_stats)
{
	struct gpusample g;
	struct gpu_stats st;

	gpusample_init(&g, 1);
	ck_assert(!gpusample_stats(&g, 0, &st));
	square(&g, 0, 60);
	ck_assert(gpusample_stats(&g, 0, &st));
	ck_assert_uint_eq(st.readings, 60);
	ck_assert_double_eq_tol(st.mean_gpu, 50.0, 1e-9);
	ck_assert_double_eq_tol(st.mean_mem_pct, (1 * 30 + 48 * 30) / 60.0, 1e-9);
	ck_assert_uint_eq(st.min_gpu, 3);
	ck_assert_uint_eq(st.max_gpu, 97);
	/* The first of each: the first reading, and the sixth. */
	ck_assert_double_eq_tol(st.min_at_s, 0.0, 1e-9);
	ck_assert_double_eq_tol(st.max_at_s, 0.5, 1e-9);
	ck_assert_uint_eq(st.p50_gpu, 3);
	ck_assert_double_eq_tol(st.mean_mem_used, 2000.0 * MIB, 1);
	ck_assert_double_eq_tol(st.mem_peak, 3000.0 * MIB, 1);
	ck_assert_double_eq_tol(st.last_s, 5.9, 1e-9);
	gpusample_free(&g);
}
END_TEST

/* Out of order, or after the device was lost: not counted. */
START_TEST(test_order_and_lost)
{
	struct gpusample g;
	struct nvml_reading r = reading(40, 10);
	struct gpu_stats st;
	struct strbuf sb = STRBUF_INIT;

	gpusample_init(&g, 1);
	g.dev[0].used = true;
	gpusample_add(&g, 0, 200 * MS, &r);
	gpusample_add(&g, 0, 100 * MS, &r);
	gpusample_lost(&g, 0, 300 * MS, "GPU is lost");
	gpusample_lost(&g, 0, 400 * MS, "later");
	gpusample_add(&g, 0, 500 * MS, &r);
	ck_assert(gpusample_stats(&g, 0, &st));
	ck_assert_uint_eq(st.readings, 1);
	gpusample_summary(&g, false, &sb);
	ck_assert_msg(strstr(sb.buf, "GPU 0 was lost at 0.3 s (GPU is lost)"), "%s", sb.buf);
	sb_release(&sb);
	gpusample_current(&g, 900 * MS, &sb);
	ck_assert_msg(strstr(sb.buf, "lost (GPU is lost)"), "%s", sb.buf);
	sb_release(&sb);
	gpusample_free(&g);
}
END_TEST

/* Each mark is the mean of its share of the time: the wave's halves. */
START_TEST(test_sparkline)
{
	struct gpusample g;
	struct strbuf sb = STRBUF_INIT;

	gpusample_init(&g, 1);
	square(&g, 0, 60);
	gpusample_sparkline(&g, 0, 12, false, &sb);
	ck_assert_str_eq(sb.buf, "_#_#_#_#_#_#");
	sb_release(&sb);
	gpusample_sparkline(&g, 0, 6, true, &sb);
	/* Each mark half 3%, half 97%: 50%, the fourth block of eight. */
	ck_assert_str_eq(sb.buf, "\u2584\u2584\u2584\u2584\u2584\u2584");
	sb_release(&sb);
	/* Never more marks than readings. */
	gpusample_sparkline(&g, 0, 500, false, &sb);
	ck_assert_uint_eq(sb.len, 60);
	sb_release(&sb);
	gpusample_free(&g);

	/* Readings that come late and early leave a slice without one: it
	 * keeps the mark before, never a hole. */
	gpusample_init(&g, 1);
	for (int i = 0; i < 6; i++) {
		static const uint64_t at_ms[6] = { 0, 100, 150, 300, 400, 500 };
		struct nvml_reading r = reading(i < 3 ? 97 : 3, 1);

		gpusample_add(&g, 0, at_ms[i] * MS, &r);
	}
	/* Slices of 83 ms: the third (167-250 ms) has no reading. */
	gpusample_sparkline(&g, 0, 6, false, &sb);
	ck_assert_str_eq(sb.buf, "###___");
	sb_release(&sb);
	gpusample_free(&g);
}
END_TEST

/* Past GPU_POINTS_MAX the series thins; the statistics count every
 * reading still. */
START_TEST(test_bounded)
{
	struct gpusample g;
	struct gpu_stats st;
	uint64_t n = 3 * (uint64_t)GPU_POINTS_MAX + 7;

	gpusample_init(&g, 1);
	for (uint64_t i = 0; i < n; i++) {
		struct nvml_reading r = reading(i % 2 ? 80 : 20, 5);

		gpusample_add(&g, 0, i * MS, &r);
	}
	ck_assert_uint_le(g.dev[0].n, GPU_POINTS_MAX);
	ck_assert_uint_ge(g.dev[0].n, GPU_POINTS_MAX / 2);
	ck_assert(gpusample_stats(&g, 0, &st));
	ck_assert_uint_eq(st.readings, n);
	ck_assert_double_eq_tol(st.mean_gpu, (20.0 * ((n + 1) / 2) + 80.0 * (n / 2)) / n, 1e-6);
	for (uint32_t k = 1; k < g.dev[0].n; k++)
		ck_assert_uint_gt(g.dev[0].pts[k].t_ns, g.dev[0].pts[k - 1].t_ns);
	gpusample_free(&g);
}
END_TEST

/* Only the devices the tree used speak, and with none one line says so. */
START_TEST(test_summary_used)
{
	struct gpusample g;
	struct strbuf sb = STRBUF_INIT;

	gpusample_init(&g, 2);
	gpusample_name(&g, 0, 0, "Card A");
	gpusample_name(&g, 1, 1, "Card \x1b[31mB");
	square(&g, 0, 20);
	square(&g, 1, 20);
	gpusample_summary(&g, false, &sb);
	ck_assert_msg(!strncmp(sb.buf, "no GPU used by the process tree (NVML sees 2: GPU 0 "
			       "(Card A), GPU 1 (Card ", 71), "%s", sb.buf);
	/* A name is the driver's, but shown as text only. */
	ck_assert_ptr_null(strchr(sb.buf, '\x1b'));
	ck_assert_ptr_nonnull(strchr(sb.buf, '\n'));
	ck_assert_ptr_null(strchr(strchr(sb.buf, '\n') + 1, '\n'));
	sb_release(&sb);

	g.dev[1].used = true;
	gpusample_summary(&g, false, &sb);
	ck_assert_msg(strstr(sb.buf, "GPU 1 (Card "), "%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, ": 50.0% busy on average (min 3% at 0.0 s, median 3%, "
			     "max 97% at 0.5 s)"), "%s", sb.buf);
	ck_assert_msg(!strstr(sb.buf, "Card A"), "%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, "GPU 1 busy from 0.0 s to 1.9 s: _____#####_____#####\n"),
		      "%s", sb.buf);
	sb_release(&sb);

	gpusample_current(&g, 2000 * MS, &sb);
	/* The latest reading: 97%, memory 48% busy, 3000 MiB of 80 GiB. */
	ck_assert_msg(strstr(sb.buf, ": 97% busy, memory 48% busy, 2.9 of 80.0 GiB\n"), "%s",
		      sb.buf);
	sb_release(&sb);
	/* Nothing read for 5.1 s (the last at 1.9 s): a driver that hangs. */
	gpusample_current(&g, 7000 * MS, &sb);
	ck_assert_msg(strstr(sb.buf, ": 97% busy, memory 48% busy, 2.9 of 80.0 GiB (no answer "
			     "for 5 s)\n"), "%s", sb.buf);
	sb_release(&sb);
	gpusample_free(&g);
}
END_TEST

/* The counters the profile gets, and the Chrome trace's events. */
START_TEST(test_profile_counters)
{
	struct gpusample g;
	struct profile p;
	struct out_opts oo = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	gpusample_init(&g, 2);
	square(&g, 0, 10);
	square(&g, 1, 10);
	g.dev[1].used = true;
	profile_init(&p, 100);
	p.pid = 4242;
	p.command = xstrdup("python3 train.py");
	gpusample_to_profile(&g, &p);
	ck_assert_uint_eq(p.ncounters, 2);
	ck_assert_str_eq(p.counters[0].name, "GPU 1 utilization");
	ck_assert_str_eq(p.counters[0].unit, "%");
	ck_assert_str_eq(p.counters[1].name, "GPU 1 memory");
	ck_assert_str_eq(p.counters[1].unit, "MiB");
	ck_assert_uint_eq(p.counters[0].npoints, 10);
	ck_assert_uint_eq(p.counters[0].points[7].t_ns, 700 * MS);
	ck_assert_double_eq(p.counters[0].points[7].value, 97);
	ck_assert_double_eq(p.counters[1].points[7].value, 3000);

	f = open_memstream(&text, &len);
	ck_assert_int_eq(out_chrometrace(&p, f, &oo), 0);
	fclose(f);
	ck_assert_msg(strstr(text, "{\"ph\":\"C\",\"name\":\"GPU 1 utilization\",\"pid\":4242,"
			     "\"tid\":4242,\"ts\":700000,\"args\":{\"%\":97}}"), "%s", text);
	ck_assert_msg(strstr(text, "{\"ph\":\"C\",\"name\":\"GPU 1 memory\",\"pid\":4242,"
			     "\"tid\":4242,\"ts\":0,\"args\":{\"MiB\":1000}}"), "%s", text);
	/* No thread of its own was sampled: the counters' process is named
	 * all the same. */
	ck_assert_msg(strstr(text, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,"
			     "\"tid\":4242,\"args\":{\"name\":\"python3 train.py\"}}"), "%s", text);
	free(text);
	profile_free(&p);
	gpusample_free(&g);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "series", .tests = { test_stats, test_order_and_lost, test_sparkline,
				       test_bounded } },
		{ "shown", .tests = { test_summary_used, test_profile_counters } },
	};

	return run_groups("gpusample", groups, ARRAY_SIZE(groups), 0, 1);
}
