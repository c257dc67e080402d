/* bench/jobdumps: write N synthetic per-rank `dump --json` files, as a
 * training job's ranks would give them, for bench/jobgroup.
 *
 *	bench/jobdumps DIR N [THREADS [FRAMES [ODD]]]
 *
 * Rank r runs on node hnode(r/8+1), 8 ranks a node; its process has
 * THREADS threads (40) of about FRAMES frames (30) each: the main thread
 * in all_reduce, but for ODD ranks (3) in fetch_shard; the others drawn
 * from a few stacks a torch process has (pin_memory, autograd workers,
 * a logger, idle pool threads).  Every field dump writes is there, with
 * design38's "host", "ppid" and "job", and source lines: the size of a
 * real dump (bench/README). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const char *const stack_names[] = {
	"all_reduce", "fetch_shard", "pin_memory_loop", "autograd_worker", "log_flush",
	"pool_idle",
};

/* One frame as dump --json writes it. */
static void frame(struct strbuf *sb, int k, const char *leaf, int depth, int first)
{
	if (!first)
		sb_putc(sb, ',');
	if (k == 0)
		sb_printf(sb, "{\"kind\":\"python\",\"function\":\"%s\",\"file\":\"/opt/venv/lib/"
			  "python3.12/site-packages/torch/distributed/%s.py\",\"line\":%d,"
			  "\"interpreter\":0,\"source\":\"return work.wait(timeout=self._timeout)\","
			  "\"source_changed\":false}", leaf, leaf, 100 + depth);
	else
		sb_printf(sb, "{\"kind\":\"python\",\"function\":\"Trainer.step_%d\",\"file\":"
			  "\"/home/user/project/src/trainer/loop_%d.py\",\"line\":%d,"
			  "\"interpreter\":0,\"source\":\"out = self.module.forward(batch, "
			  "**kwargs)\",\"source_changed\":false}", k, k % 7, 10 + 3 * k);
}

static void thread(struct strbuf *sb, long tid, const char *name, const char *leaf, int frames,
		   int first)
{
	if (!first)
		sb_putc(sb, ',');
	sb_printf(sb, "{\"tid\":%ld,\"ns_tid\":%ld,\"ident\":%ld,\"name\":\"%s\",\"gil\":false,"
		  "\"idle\":true,\"truncated\":false,\"error\":null,\"interpreters\":[0],"
		  "\"frames\":[", tid, tid, 140000000000000 + tid, name);
	for (int k = 0; k < frames; k++)
		frame(sb, k, leaf, frames, k == 0);
	sb_puts(sb, "]}");
}

static void rank_doc(struct strbuf *sb, int r, int nranks, int nthreads, int frames, bool odd)
{
	long pid = 100000 + r;

	sb_printf(sb, "{\"host\":\"hnode%d\",\"processes\":[{\"pid\":%ld,\"ns_pid\":%ld,"
		  "\"ppid\":%ld,\"job\":{\"id\":\"4242\",\"step\":\"0\",\"node\":\"hnode%d\","
		  "\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"rank_from\":\"torchrun\"},"
		  "\"cmdline\":[\"/opt/venv/bin/python\",\"-u\",\"train.py\",\"--config\","
		  "\"big.yaml\"],\"python\":{\"version\":\"3.12.1\",\"path\":\"/opt/venv/lib/"
		  "libpython3.12.so.1.0\"},\"threads\":[", r / 8 + 1, pid, pid, pid - r - 1,
		  r / 8 + 1, r, r % 8, nranks);
	thread(sb, pid, "MainThread", odd ? "fetch_shard" : "all_reduce", frames, 1);
	for (int t = 1; t < nthreads; t++) {
		const char *leaf = stack_names[2 + t % 4];
		char name[32];

		snprintf(name, sizeof(name), "%s_%d", leaf, t % 4 == 3 ? t : 0);
		thread(sb, pid + t, name, leaf, frames - t % 5, 0);
	}
	sb_puts(sb, "]}]}\n");
}

int main(int argc, char **argv)
{
	int n, nthreads, frames, nodd;

	if (argc < 3) {
		fprintf(stderr, "usage: bench/jobdumps DIR N [THREADS [FRAMES [ODD]]]\n");
		return 2;
	}
	n = atoi(argv[2]);
	nthreads = argc > 3 ? atoi(argv[3]) : 40;
	frames = argc > 4 ? atoi(argv[4]) : 30;
	nodd = argc > 5 ? atoi(argv[5]) : 3;
	for (int r = 0; r < n; r++) {
		struct strbuf sb = STRBUF_INIT;
		char *path = xasprintf("%s/rank%05d.json", argv[1], r);
		FILE *f = fopen(path, "w");
		/* the odd ranks spread over the job: n/4, n/2, 3n/4 */
		bool odd = nodd && r && r % (n / (nodd + 1) ? n / (nodd + 1) : 1) == 0 &&
			   r / (n / (nodd + 1) ? n / (nodd + 1) : 1) <= nodd;

		if (!f) {
			perror(path);
			return 1;
		}
		rank_doc(&sb, r, n, nthreads, frames, odd);
		fwrite(sb.buf, 1, sb.len, f);
		if (fclose(f)) {
			perror(path);
			return 1;
		}
		sb_release(&sb);
		free(path);
	}
	return 0;
}
