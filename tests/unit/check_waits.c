/* --waits: the hostile-file reader of source lines (src/process/srcline.c),
 * the line rules and frame rules (src/analysis/waitclass.c) on the real
 * stacks of an H100 training job, the per-thread summary model
 * (src/analysis/waitsum.c) and the leaf frames a profile gets
 * (src/analysis/waitmark.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "folded.h"
#include "interpreters.h"
#include "suite.h"
#include "process/srcline.h"
#include "profile/profile.h"
#include "analysis/waitclass.h"
#include "analysis/waitmark.h"
#include "analysis/waitsum.h"
#include "util/util.h"

/* --- srcline ---------------------------------------------------------------- */

START_TEST(test_srcline_lines)
{
	char *dir = test_tmpdir("srcline");
	char *unix_ = test_file(dir, "a.py", "first\n  v = loss.item()  \nlast no newline");
	char *mixed = test_file(dir, "b.py", "one\r\ntwo\rthree\n");
	struct srcline_cache *c = srcline_new();
	const char *l;

	ck_assert_str_eq(srcline_get(c, "", NULL, unix_, 1), "first");
	ck_assert_str_eq(srcline_get(c, "", NULL, unix_, 2), "  v = loss.item()  ");
	ck_assert_str_eq(srcline_get(c, "", NULL, unix_, 3), "last no newline");
	ck_assert_ptr_null(srcline_get(c, "", NULL, unix_, 4));
	ck_assert_ptr_null(srcline_get(c, "", NULL, unix_, 0));
	/* Universal newlines, as Python numbers lines. */
	ck_assert_str_eq(srcline_get(c, "", NULL, mixed, 2), "two");
	ck_assert_str_eq(srcline_get(c, "", NULL, mixed, 3), "three");
	ck_assert_ptr_null(srcline_get(c, "", NULL, mixed, 4));
	/* A relative name under the working directory given, an absolute
	 * one under the root: "/proc/PID/root" for a target. */
	ck_assert_str_eq(srcline_get(c, "", dir, "a.py", 1), "first");
	ck_assert_ptr_null(srcline_get(c, "", NULL, "a.py", 1));
	ck_assert_str_eq(srcline_get(c, dir, NULL, "/b.py", 1), "one");
	l = srcline_get(c, "/proc/self/root", NULL, unix_, 1);
	ck_assert_str_eq(l, "first");
	/* Names that are not files. */
	ck_assert_ptr_null(srcline_get(c, "", dir, "<string>", 1));
	ck_assert_ptr_null(srcline_get(c, "", NULL, dir, 1));
	ck_assert_ptr_null(srcline_get(c, "", NULL, "/nonexistent/x.py", 1));
	srcline_free(c);
	free(unix_);
	free(mixed);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* A file rewritten (another size, another time) is read again. */
START_TEST(test_srcline_changed)
{
	char *dir = test_tmpdir("srcline");
	char *path = test_file(dir, "a.py", "x = 1\n");
	struct srcline_cache *c = srcline_new();
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 2000000000, 0 } };

	ck_assert_str_eq(srcline_get(c, "", NULL, path, 1), "x = 1");
	free(test_file(dir, "a.py", "x = t.cpu()\n"));
	ck_assert_int_eq(utimensat(AT_FDCWD, path, later, 0), 0);
	ck_assert_str_eq(srcline_get(c, "", NULL, path, 1), "x = t.cpu()");
	srcline_free(c);
	free(path);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* Hostile files: too big, a line without end, bytes that are not text, a
 * FIFO no one writes (opening or reading it would hang), more files than
 * the cache holds. */
START_TEST(test_srcline_hostile)
{
	char *dir = test_tmpdir("srcline");
	char *big = xasprintf("%s/big.py", dir), *fifo = xasprintf("%s/fifo.py", dir);
	char *bin = xasprintf("%s/bin.py", dir), *longl = xasprintf("%s/long.py", dir);
	struct srcline_cache *c = srcline_new();
	char junk[4096];
	const char *l;
	struct stat st;
	size_t len;
	FILE *f;
	int fd;

	fd = open(big, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x.item()\n", 9), 9);
	ck_assert_int_eq(ftruncate(fd, (off_t)SRCLINE_MAX_BYTES + 1), 0);
	close(fd);
	ck_assert_ptr_null(srcline_get(c, "", NULL, big, 1));

	f = fopen(longl, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 100000; i++)
		fputc('a', f);
	fclose(f);
	l = srcline_get(c, "", NULL, longl, 1);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(strlen(l), SRCLINE_MAX_LINE);

	srand(7);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(rand() & 0xff);
	f = fopen(bin, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
	for (int line = 1; line < 100; line++)
		if ((l = srcline_get(c, "", NULL, bin, line)))
			ck_assert_uint_le(strlen(l), SRCLINE_MAX_LINE);

	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	ck_assert_ptr_null(srcline_get(c, "", NULL, fifo, 1));
	/* Handed the FIFO itself, the reader refuses it without blocking. */
	ck_assert_ptr_null(srcline_slurp(fifo, 100, &st, &len));

	/* More files than it keeps: every one still read right. */
	for (int i = 0; i < 3 * SRCLINE_MAX_FILES; i++) {
		char name[32], text[32], *p;

		snprintf(name, sizeof(name), "f%d.py", i);
		snprintf(text, sizeof(text), "n = %d\n", i);
		p = test_file(dir, name, text);
		text[strlen(text) - 1] = 0;
		ck_assert_str_eq(srcline_get(c, "", NULL, p, 1), text);
		free(p);
	}
	srcline_free(c);
	free(big);
	free(fifo);
	free(bin);
	free(longl);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* --- the rules ---------------------------------------------------------------- */

START_TEST(test_line_rules)
{
	static const struct { const char *line; enum wait_class want; } cases[] = {
		{ "return loss.item()", WC_GPU },
		{ "v = loss.item()", WC_GPU },
		{ "out = logits.argmax(1).cpu()", WC_GPU },
		{ "xs = t.tolist()", WC_GPU },
		{ "a = t.detach().numpy()", WC_GPU },
		{ "torch.cuda.synchronize()", WC_GPU },
		{ "loss.backward()", WC_NONE },
		{ "x = d.items()", WC_NONE },
		{ "x = 1  # not loss.item() here", WC_NONE },
		{ "", WC_NONE },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		ck_assert_msg(wait_class_of_line(cases[i].line) == cases[i].want, "%s: %s",
			      cases[i].line, wait_class_name(wait_class_of_line(cases[i].line)));
	ck_assert_int_eq(wait_class_of_line(NULL), WC_NONE);
}
END_TEST

/* The recording of the H100 job (../shared/data/h100-dataloader-job, see
 * its README), or NULL: the data lives beside the source tree, not in it. */
static char *h100_dir(void)
{
	const char *env = getenv("PYSTROBE_SHARED_DATA");
	char *dir = env && *env ? xasprintf("%s/h100-dataloader-job", env)
				: xasprintf("%s/../shared/data/h100-dataloader-job", test_srcdir());
	char *probe = xasprintf("%s/truth.json", dir);
	bool ok = access(probe, R_OK) == 0;

	free(probe);
	if (ok)
		return dir;
	test_skip("no %s (the shared data beside the source tree; PYSTROBE_SHARED_DATA "
		  "names another place)", dir);
	free(dir);
	return NULL;
}

/* A folded file's frame label as a frame: "f (file:LINE)" a Python frame,
 * "f (object)" a native one, a bare name a native frame with no symbol.
 * The file is the label's (below site-packages), which the rules match
 * by the part of the path they name. */
static void parse_frame(char *label, struct pframe *f)
{
	char *open = strstr(label, " (");
	char *colon;

	/* The file is in the last " (...)": C++ names hold parentheses. */
	for (char *p = open; p; p = strstr(p + 2, " ("))
		open = p;
	memset(f, 0, sizeof(*f));
	f->line = f->firstlineno = -1;
	f->name = label;
	f->kind = PF_NATIVE;
	if (!strncmp(label, "process ", 8) || !strncmp(label, "thread ", 7)) {
		f->kind = PF_PROCESS;
		return;
	}
	if (!open || label[strlen(label) - 1] != ')')
		return;
	*open = 0;
	f->file = open + 2;
	f->file[strlen(f->file) - 1] = 0;
	colon = strrchr(f->file, ':');
	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		*colon = 0;
		f->line = atoi(colon + 1);
		f->kind = PF_PYTHON;
	}
}

struct parsed {
	struct pframe *f;
	const struct pframe **inner;	/* innermost first, as the rules take them */
	uint32_t n;
	char *buf;
};

static void parse_stack(const char *stack, struct parsed *ps)
{
	uint32_t n = 1, k = 0;
	char *save = NULL, *tok;

	ps->buf = xstrdup(stack);
	for (const char *s = stack; *s; s++)
		n += *s == ';';
	ps->f = xcalloc(n, sizeof(*ps->f));
	ps->inner = xcalloc(n, sizeof(*ps->inner));
	for (tok = strtok_r(ps->buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		parse_frame(tok, &ps->f[k++]);
	ps->n = k;
	for (uint32_t i = 0; i < k; i++)
		ps->inner[i] = &ps->f[k - 1 - i];
}

static void parsed_free(struct parsed *ps)
{
	free(ps->f);
	free(ps->inner);
	free(ps->buf);
}

static struct folded *load_folded(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = test_slurp(path);
	struct folded *f = xcalloc(1, sizeof(*f));

	ck_assert_int_eq(folded_parse(text, f), 0);
	ck_assert_uint_gt(f->n, 0);
	free(text);
	free(path);
	return f;
}

/* The job's own figure: its main thread's share of wall time waiting for
 * the next batch during the recording's window (truth.json's wait_frac). */
static double truth_wait_frac(const char *dir)
{
	char *path = xasprintf("%s/truth.json", dir), *text = test_slurp(path);
	char *at = strstr(text, "\"wait_frac\":");
	double v;

	ck_assert_ptr_nonnull(at);
	v = strtod(at + strlen("\"wait_frac\":"), NULL);
	free(text);
	free(path);
	return v;
}

/* record -s --idle of the data-bound job: the main thread (the stacks of
 * the main process that start in the script's <module>, not in a
 * threading bootstrap) is `data` within 3 points of the job's own clock. */
START_TEST(test_h100_data)
{
	char *dir = h100_dir();
	struct folded *fd;
	uint64_t all = 0, data = 0, workers = 0, workers_data = 0;
	double truth, share;

	if (!dir)
		return;
	fd = load_folded(dir, "record-s-idle.collapsed");
	truth = truth_wait_frac(dir);
	for (size_t i = 0; i < fd->n; i++) {
		struct parsed ps;
		enum wait_class c;
		bool main_proc = !strncmp(fd->stacks[i], "process 485:", 12);

		parse_stack(fd->stacks[i], &ps);
		c = wait_class_of_frames(ps.inner, ps.n, NULL);
		if (main_proc && ps.n > 1 && !strncmp(ps.f[1].name, "<module>", 8) &&
		    ps.f[1].file && !strcmp(ps.f[1].file, "job.py")) {
			all += fd->counts[i];
			data += c == WC_DATA ? fd->counts[i] : 0;
		} else if (!main_proc) {
			workers += fd->counts[i];
			workers_data += c == WC_DATA ? fd->counts[i] : 0;
		}
		parsed_free(&ps);
	}
	ck_assert_uint_gt(all, 1000);
	share = (double)data / (double)all;
	printf("h100 record-s-idle: main thread %llu samples, data %.3f (job's own %.3f); "
	       "workers %llu samples, data %llu\n", (unsigned long long)all, share, truth,
	       (unsigned long long)workers, (unsigned long long)workers_data);
	ck_assert_msg(fabs(share - truth) <= 0.03, "data %.3f, truth %.3f", share, truth);
	/* The workers produce the data: they never wait for it. */
	ck_assert_uint_eq(workers_data, 0);
	folded_free(fd);
	free(fd);
	free(dir);
}
END_TEST

/* record -s --native of the same job: every stack in CUDA's synchronize is
 * `gpu`, and so is every one in the scalar copy .item() makes. */
START_TEST(test_h100_native_gpu)
{
	char *dir = h100_dir();
	struct folded *fd;
	uint64_t sync = 0, scalar = 0;

	if (!dir)
		return;
	fd = load_folded(dir, "record-s-native.collapsed");
	for (size_t i = 0; i < fd->n; i++) {
		const char *s = fd->stacks[i];
		struct parsed ps;
		enum wait_class c;

		if (!strstr(s, "cudaStreamSynchronize") && !strstr(s, "_local_scalar_dense"))
			continue;
		parse_stack(s, &ps);
		c = wait_class_of_frames(ps.inner, ps.n, NULL);
		ck_assert_msg(c == WC_GPU, "%s: %s", s, wait_class_name(c));
		sync += strstr(s, "cudaStreamSynchronize") ? fd->counts[i] : 0;
		scalar += fd->counts[i];
		parsed_free(&ps);
	}
	printf("h100 record-s-native: %llu samples in cudaStreamSynchronize, %llu in "
	       "_local_scalar_dense, all gpu\n", (unsigned long long)sync,
	       (unsigned long long)scalar);
	ck_assert_uint_gt(sync, 0);
	folded_free(fd);
	free(fd);
	free(dir);
}
END_TEST

/* Without --native the same wait is only the line `return loss.item()`:
 * the stacks that end there are `gpu` by the line rule, read from job.py
 * as the target's file would be. */
START_TEST(test_h100_line_rule)
{
	char *dir = h100_dir();
	struct srcline_cache *c;
	struct folded *fd;
	uint64_t n = 0;

	if (!dir)
		return;
	c = srcline_new();
	fd = load_folded(dir, "record-s-idle.collapsed");
	for (size_t i = 0; i < fd->n; i++) {
		struct parsed ps;
		const struct pframe *leaf;

		parse_stack(fd->stacks[i], &ps);
		leaf = ps.inner[0];
		if (leaf->kind == PF_PYTHON && !strcmp(leaf->name, "train_step")) {
			const char *line = srcline_get(c, "", dir, leaf->file, leaf->line);
			enum wait_class want = leaf->line == 59 ? WC_GPU : WC_NONE;

			ck_assert_int_eq(wait_class_of_frames(ps.inner, ps.n, NULL), WC_NONE);
			ck_assert_msg(wait_class_of_line(line) == want, "job.py:%d '%s'", leaf->line,
				      line ? line : "(none)");
			n += leaf->line == 59 ? fd->counts[i] : 0;
		}
		parsed_free(&ps);
	}
	printf("h100 record-s-idle: %llu samples at train_step (job.py:59), gpu by its line\n",
	       (unsigned long long)n);
	ck_assert_uint_gt(n, 0);
	folded_free(fd);
	free(fd);
	srcline_free(c);
	free(dir);
}
END_TEST

/* A queue's get is the input pipeline in the program's main thread (its
 * stack holds a module's top level) and a lock wait elsewhere: a thread
 * started by threading, a pool's worker, a DataLoader's worker, whose
 * queue brings them work.  The DataLoader's own frames are data in any
 * thread but its workers'.  Stacks as collapsed lines, root first. */
START_TEST(test_queue_rules)
{
#define MOD "<module> (job.py:60);train (job.py:40);next_batch (job.py:31);"
#define QGET "Queue.get (/usr/lib/python3.12/queue.py:180);" \
	"Condition.wait (/usr/lib/python3.12/threading.py:355)"
#define MPGET "Queue.get (/usr/lib/python3.12/multiprocessing/queues.py:103);" \
	"Connection.poll (/usr/lib/python3.12/multiprocessing/connection.py:257)"
#define THREAD "Thread._bootstrap (/usr/lib/python3.12/threading.py:1030);" \
	"Thread._bootstrap_inner (/usr/lib/python3.12/threading.py:1073);" \
	"Thread.run (/usr/lib/python3.12/threading.py:1010);"
#define FORKED "<module> (job.py:60);" \
	"Pool.__init__ (/usr/lib/python3.12/multiprocessing/pool.py:215);" \
	"Popen._launch (/usr/lib/python3.12/multiprocessing/popen_fork.py:71);" \
	"BaseProcess._bootstrap (/usr/lib/python3.12/multiprocessing/process.py:314);" \
	"BaseProcess.run (/usr/lib/python3.12/multiprocessing/process.py:108);"
#define LOADER "_BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:733);" \
	"_MultiProcessingDataLoaderIter._next_data (torch/utils/data/dataloader.py:1480);" \
	"_MultiProcessingDataLoaderIter._get_data (torch/utils/data/dataloader.py:1442);" \
	"_MultiProcessingDataLoaderIter._try_get_data (torch/utils/data/dataloader.py:1285);"
	static const struct {
		const char *stack;
		enum wait_class want;
		int at;		/* the deciding frame, from the root; -1: not checked */
	} cases[] = {
		/* The training loop's queue.Queue and multiprocessing queues. */
		{ MOD QGET, WC_DATA, 3 },
		{ MOD MPGET, WC_DATA, 3 },
		{ MOD "SimpleQueue.get (/usr/lib/python3.12/multiprocessing/queues.py:387)",
		  WC_DATA, 3 },
		{ "<module> (/usr/lib/python3.12/runpy.py:1);_run_module_as_main "
		  "(/usr/lib/python3.12/runpy.py:198);<module> (job.py:60);" QGET, WC_DATA, 3 },
		/* queue.SimpleQueue, C: with --native. */
		{ MOD "_queue_SimpleQueue_get_impl (_queue.cpython-312-x86_64-linux-gnu.so);"
		  "PyThread_acquire_lock_timed (python3.12)", WC_DATA, 3 },
		/* Workers waiting for work: threads, pools, DataLoader workers. */
		{ THREAD "worker (job.py:12);" QGET, WC_LOCK, -1 },
		{ THREAD "worker (job.py:12);" MPGET, WC_LOCK, -1 },
		{ FORKED "worker (/usr/lib/python3.12/multiprocessing/pool.py:114);"
		  "SimpleQueue.get (/usr/lib/python3.12/multiprocessing/queues.py:387)", WC_LOCK, -1 },
		{ "<module> (<string>:1);spawn_main (/usr/lib/python3.12/multiprocessing/spawn.py:122);"
		  "BaseProcess._bootstrap (/usr/lib/python3.12/multiprocessing/process.py:314);"
		  "_process_worker (/usr/lib/python3.12/concurrent/futures/process.py:251);" MPGET,
		  WC_LOCK, -1 },
		{ FORKED "_worker_loop (torch/utils/data/_utils/worker.py:309);" MPGET, WC_LOCK, -1 },
		/* The DataLoader is data in a thread too, decided by its
		 * outermost frame. */
		{ THREAD "train (job.py:40);" LOADER MPGET, WC_DATA, 4 },
		{ MOD LOADER MPGET, WC_DATA, 3 },
		/* A put, a get of the program's own, waits on futures. */
		{ MOD "Queue.put (/usr/lib/python3.12/queue.py:140);"
		  "Condition.wait (/usr/lib/python3.12/threading.py:355)", WC_LOCK, -1 },
		{ MOD "get (job/cache.py:5)", WC_NONE, -1 },
		{ MOD "Future.result (/usr/lib/python3.12/concurrent/futures/_base.py:451);"
		  "Condition.wait (/usr/lib/python3.12/threading.py:355)", WC_LOCK, -1 },
	};
#undef MOD
#undef QGET
#undef MPGET
#undef THREAD
#undef FORKED
#undef LOADER

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct parsed ps;
		uint32_t at = 99;
		enum wait_class c;

		parse_stack(cases[i].stack, &ps);
		c = wait_class_of_frames(ps.inner, ps.n, &at);
		ck_assert_msg(c == cases[i].want, "%s: %s, not %s", cases[i].stack,
			      wait_class_name(c), wait_class_name(cases[i].want));
		if (cases[i].at >= 0)
			ck_assert_msg(ps.n - 1 - at == (uint32_t)cases[i].at, "%s: decided by %u",
				      cases[i].stack, ps.n - 1 - at);
		parsed_free(&ps);
	}
}
END_TEST

/* --- the summary model ------------------------------------------------------ */

/* n samples at a place: function (file:line) of a function starting at
 * line 20, waited in via when not NULL. */
static void add_n(struct waitsum *ws, pid_t pid, pid_t tid, enum wait_class c, bool idle,
		  const char *via, const char *function, const char *file, int line, int n)
{
	struct waitsum_place pl = { via, function, file, 20, line };

	while (n-- > 0)
		waitsum_add(ws, pid, tid, c, idle, function ? &pl : NULL);
}

START_TEST(test_waitsum)
{
	struct waitsum *ws = waitsum_new();
	struct strbuf sb = STRBUF_INIT;

	waitsum_write(ws, &sb);
	ck_assert_uint_eq(sb.len, 0);
	/* The trainer: data, then the GPU, then its own work. */
	add_n(ws, 485, 485, WC_DATA, true, "Queue.get", "next_batch", "job.py", 48, 81);
	add_n(ws, 485, 485, WC_GPU, false, NULL, "train_step", "job.py", 59, 9);
	add_n(ws, 485, 485, WC_NONE, false, NULL, "train_step", "job.py", 53, 8);
	add_n(ws, 485, 485, WC_LOCK, true, NULL, "wait", "threading.py", 320, 2);
	/* Four workers doing the same; 518 does it elsewhere. */
	for (pid_t w = 514; w <= 517; w++) {
		add_n(ws, w, w, WC_NONE, false, NULL, "augment", "job.py", 23, 85);
		add_n(ws, w, w, WC_NONE, true, NULL, "_worker_loop",
		      "torch/utils/data/_utils/worker.py", 260, 15);
	}
	add_n(ws, 519, 519, WC_NONE, false, NULL, "augment", "job.py", 23, 10);
	add_n(ws, 485, 490, WC_NONE, true, NULL, "pin", "job.py", 30, 10);
	waitsum_write(ws, &sb);
	ck_assert_str_eq(sb.buf,
			 "  main thread 485: 81% waiting for data in Queue.get from next_batch "
			 "(job.py:48), 9% waiting for the GPU in train_step (job.py:59), "
			 "8% running, 2% idle otherwise\n"
			 "  workers 514\xe2\x80\x93" "517, 519: 85% in augment (job.py:23)\n"
			 "  thread 490 of 485: 100% in pin (job.py:30)\n");
	sb_release(&sb);
	waitsum_free(ws);
}
END_TEST

/* A worker started by a forkserver imports for a while (here 40
 * functions, a few samples each: more than the table of places holds),
 * then augments: augment is its place.  Helper threads of several
 * processes doing the same are threads, not workers. */
START_TEST(test_waitsum_startup)
{
	struct waitsum *ws = waitsum_new();
	struct strbuf sb = STRBUF_INIT;
	char where[64];

	for (pid_t w = 514; w <= 515; w++) {
		for (int f = 0; f < 40; f++) {
			snprintf(where, sizeof(where), "import_%d", f);
			add_n(ws, w, w, WC_NONE, false, NULL, where, "<frozen importlib>", f, 3);
		}
		add_n(ws, w, w, WC_NONE, false, NULL, "augment", "job.py", 23, 400);
	}
	add_n(ws, 485, 486, WC_NONE, true, NULL, "Condition.wait", "threading.py", 337, 50);
	add_n(ws, 485, 487, WC_NONE, true, NULL, "Condition.wait", "threading.py", 337, 50);
	add_n(ws, 514, 520, WC_NONE, true, NULL, "Condition.wait", "threading.py", 337, 50);
	add_n(ws, 900, 901, WC_NONE, true, NULL, "select", "selectors.py", 450, 50);
	add_n(ws, 900, 902, WC_NONE, true, NULL, "select", "selectors.py", 450, 50);
	/* No Python frame: nowhere to name, a line of its own. */
	add_n(ws, 900, 903, WC_NONE, false, NULL, NULL, NULL, 0, 5);
	waitsum_write(ws, &sb);
	ck_assert_str_eq(sb.buf,
			 "  workers 514\xe2\x80\x93" "515: 77% in augment (job.py:23)\n"
			 "  threads 486\xe2\x80\x93" "487, 520 of 2 processes: "
			 "100% in Condition.wait (threading.py:337)\n"
			 "  threads 901\xe2\x80\x93" "902 of 900: 100% in select (selectors.py:450)\n"
			 "  thread 903 of 900: 100% running\n");
	sb_release(&sb);
	waitsum_free(ws);
}
END_TEST

/* A place is named by the line it ran most (over the threads of a group),
 * never by where its function starts (20 here), and without a line when
 * the recording has none (--function).  Two functions of one name in one
 * file (3.10's bare names) are two places. */
START_TEST(test_waitsum_lines)
{
	struct waitsum *ws = waitsum_new();
	struct strbuf sb = STRBUF_INIT;
	struct waitsum_place other = { NULL, "wait", "threading.py", 600, 655 };

	/* 700 and 701 mostly on line 24; 702 on 25, not enough to outweigh. */
	for (pid_t w = 700; w <= 701; w++) {
		add_n(ws, w, w, WC_NONE, false, NULL, "augment", "job.py", 24, 60);
		add_n(ws, w, w, WC_NONE, false, NULL, "augment", "job.py", 25, 30);
	}
	add_n(ws, 702, 702, WC_NONE, false, NULL, "augment", "job.py", 25, 50);
	/* Two functions "wait" of threading.py: the one of more samples. */
	add_n(ws, 800, 800, WC_NONE, true, NULL, "wait", "threading.py", 327, 70);
	for (int i = 0; i < 80; i++)
		waitsum_add(ws, 800, 800, WC_NONE, true, &other);
	/* More lines than a place keeps: the top one stays. */
	for (int line = 30; line < 40; line++)
		add_n(ws, 802, 802, WC_NONE, true, NULL, "Event.wait", "threading.py", line, 2);
	add_n(ws, 802, 802, WC_NONE, true, NULL, "Event.wait", "threading.py", 327, 50);
	add_n(ws, 801, 801, WC_DATA, true, "Queue.get", "main", "job.py", -1, 10);
	/* The target's names reach a terminal: escaped. */
	add_n(ws, 803, 803, WC_NONE, false, NULL, "evil\x1b[2J", "job\x07.py", 5, 10);
	waitsum_write(ws, &sb);
	ck_assert_str_eq(sb.buf,
			 "  main thread 801: 100% waiting for data in Queue.get from main (job.py)\n"
			 "  workers 700\xe2\x80\x93" "702: 100% in augment (job.py:24)\n"
			 "  main thread 800: 53% in wait (threading.py:655)\n"
			 "  main thread 802: 100% in Event.wait (threading.py:327)\n"
			 "  main thread 803: 100% in evil\\x1b[2J (job\\x07.py:5)\n");
	sb_release(&sb);
	waitsum_free(ws);
}
END_TEST

/* --- the leaves on a profile -------------------------------------------------- */

static uint32_t pyframe(struct profile *p, const char *name, const char *file, int line)
{
	return profile_frame(p, &(struct pframe){ PF_PYTHON, (char *)name, (char *)file, line, 1 });
}

static char *stack_text(const struct profile *p, uint32_t id)
{
	struct strbuf sb = STRBUF_INIT;

	for (uint32_t d = 0; d < p->stacks[id].depth; d++)
		sb_printf(&sb, "%s%s", d ? ";" : "", p->frames[p->stacks[id].frames[d]].name);
	return sb_detach(&sb);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The stacks a profile counted, as "a;b;c COUNT" lines sorted. */
static char *profile_text(const struct profile *p)
{
	struct strbuf sb = STRBUF_INIT;
	char **lines = xcalloc(p->nstacks + 1, sizeof(*lines));
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nstacks; i++) {
		char *s;

		if (!p->stacks[i].count)
			continue;
		s = stack_text(p, i);
		lines[n++] = xasprintf("%s %llu", s, (unsigned long long)p->stacks[i].count);
		free(s);
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (uint32_t i = 0; i < n; i++) {
		sb_printf(&sb, "%s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	return sb_detach(&sb);
}

/* The same samples into a profile with and without --waits' hook: the
 * stacks differ only by their leaves, the line rule reads the file as the
 * process sees it (this process: /proc/PID/root of our own pid). */
static char *record_samples(bool waits, const char *src, struct waitmark **wm)
{
	struct profile p;
	uint32_t th, mod, train, item, loader, get, lock, ids[4];
	char *text;

	profile_init(&p, 100);
	if (waits)
		*wm = waitmark_new(&p);
	th = profile_thread(&p, getpid(), getpid(), NULL);
	mod = pyframe(&p, "<module>", src, 9);
	train = pyframe(&p, "train_step", src, 3);
	item = pyframe(&p, "train_step", src, 2);
	loader = pyframe(&p, "_MultiProcessingDataLoaderIter._get_data",
			 "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 1);
	get = pyframe(&p, "Queue.get", "/usr/lib/python3.13/multiprocessing/queues.py", 1);
	lock = pyframe(&p, "Condition.wait", "/usr/lib/python3.13/threading.py", 1);
	ids[0] = mod;
	ids[1] = train;
	profile_add(&p, th, ids, 2, 0, 1);
	ids[1] = item;
	p.threads[th].idle = false;
	profile_add(&p, th, ids, 2, 10, 3);
	ids[1] = loader;
	ids[2] = get;
	p.threads[th].idle = true;
	profile_add(&p, th, ids, 3, 20, 5);
	ids[1] = lock;
	profile_add(&p, th, ids, 2, 30, 2);
	text = profile_text(&p);
	if (waits) {
		waitmark_free(*wm);
		ck_assert_ptr_null(p.decorate);
	}
	profile_free(&p);
	return text;
}

START_TEST(test_waitmark)
{
	char *dir = test_tmpdir("waitmark");
	char *src = test_file(dir, "job.py", "def train_step(loss):\n    return loss.item()\n"
				"    x = 1\n");
	struct waitmark *wm = NULL;
	char *off = record_samples(false, src, NULL), *on;
	char *want_off = xasprintf("<module>;Condition.wait 2\n"
				   "<module>;_MultiProcessingDataLoaderIter._get_data;Queue.get 5\n"
				   "<module>;train_step 1\n"
				   "<module>;train_step 3\n");
	char *want_on = xasprintf("<module>;Condition.wait 2\n"
				  "<module>;_MultiProcessingDataLoaderIter._get_data;Queue.get;"
				  "<wait:data> 5\n"
				  "<module>;train_step 1\n"
				  "<module>;train_step;<wait:gpu> 3\n");

	ck_assert_str_eq(off, want_off);
	on = record_samples(true, src, &wm);
	ck_assert_str_eq(on, want_on);
	free(off);
	free(on);
	free(want_off);
	free(want_on);
	free(src);
	test_rmdir(dir);
	free(dir);
}
END_TEST

static uint32_t pyfunc(struct profile *p, const char *name, const char *file, int line,
		       int first)
{
	return profile_frame(p, &(struct pframe){ PF_PYTHON, (char *)name, (char *)file, line,
						  first });
}

/* A queue.Queue pipeline through the hook: the main thread's get is data,
 * named in the summary by the get and the line of the program's own that
 * called it, the line running (not the def line); a worker thread's get
 * is not, and its line names the line it waits on. */
START_TEST(test_waitmark_summary)
{
	struct profile p;
	struct waitmark *wm;
	struct strbuf sb = STRBUF_INIT;
	uint32_t th, worker, mod, nb, train, get, cw, boot, loop, ids[4];
	pid_t pid = getpid();
	char *text, *want;

	profile_init(&p, 100);
	wm = waitmark_new(&p);
	th = profile_thread(&p, pid, pid, NULL);
	worker = profile_thread(&p, pid, pid + 1, NULL);
	mod = pyfunc(&p, "<module>", "/nonexistent/job.py", 60, 1);
	nb = pyfunc(&p, "next_batch", "/nonexistent/job.py", 31, 28);
	train = pyfunc(&p, "train", "/nonexistent/job.py", 45, 40);
	get = pyfunc(&p, "Queue.get", "/usr/lib/python3.12/queue.py", 180, 154);
	cw = pyfunc(&p, "Condition.wait", "/usr/lib/python3.12/threading.py", 355, 323);
	boot = pyfunc(&p, "Thread._bootstrap", "/usr/lib/python3.12/threading.py", 1030, 1010);
	loop = pyfunc(&p, "worker", "/nonexistent/job.py", 12, 10);
	/* One sample each (the summary counts samples, as the sampler
	 * adds them: of weight 1). */
	for (int i = 0; i < 8; i++) {
		p.threads[th].idle = true;
		profile_add(&p, th, (uint32_t[]){ mod, nb, get, cw }, 4, 20 * i, 1);
		p.threads[th].idle = false;
		if (i < 2)
			profile_add(&p, th, (uint32_t[]){ mod, train }, 2, 20 * i + 10, 1);
		p.threads[worker].idle = true;
		ids[0] = boot;
		ids[1] = loop;
		ids[2] = get;
		ids[3] = cw;
		if (i < 5)
			profile_add(&p, worker, ids, 4, 20 * i, 1);
	}
	waitsum_write(waitmark_summary(wm), &sb);
	want = xasprintf("  main thread %d: 80%% waiting for data in Queue.get from next_batch "
			 "(job.py:31), 20%% running\n"
			 "  thread %d of %d: 100%% in Condition.wait (threading.py:355)\n",
			 (int)pid, (int)pid + 1, (int)pid);
	ck_assert_str_eq(sb.buf, want);
	text = profile_text(&p);
	ck_assert_str_eq(text, "<module>;next_batch;Queue.get;Condition.wait;<wait:data> 8\n"
			       "<module>;train 2\n"
			       "Thread._bootstrap;worker;Queue.get;Condition.wait 5\n");
	free(text);
	free(want);
	sb_release(&sb);
	waitmark_free(wm);
	profile_free(&p);
}
END_TEST

/* A native frame named after some samples were counted with its
 * provisional name: they get their leaf at the end, and merge with the
 * samples counted once it had its name. */
START_TEST(test_waitmark_renamed)
{
	struct profile p;
	struct waitmark *wm;
	uint32_t th, ids[3];
	char *text;

	profile_init(&p, 100);
	wm = waitmark_new(&p);
	th = profile_thread(&p, getpid(), getpid(), NULL);
	ids[0] = pyframe(&p, "train_step", "/nonexistent/job.py", 59);
	ids[1] = profile_frame(&p, &(struct pframe){ PF_NATIVE, "libcudart.so.13+0x5e0b0",
						     "/usr/lib/libcudart.so.13", -1, -1 });
	ids[2] = profile_frame(&p, &(struct pframe){ PF_NATIVE, "libcuda.so.1+0x3a9157",
						     "/usr/lib/libcuda.so.1", -1, -1 });
	profile_add(&p, th, ids, 3, 0, 4);
	profile_frame_rename(&p, ids[1], &(struct pframe){ PF_NATIVE, "cudaStreamSynchronize",
							   "libcudart.so.13", -1, -1 });
	profile_add(&p, th, ids, 3, 10, 6);
	waitmark_finish(wm);
	profile_merge_renamed(&p);
	text = profile_text(&p);
	ck_assert_str_eq(text, "train_step;cudaStreamSynchronize;libcuda.so.1+0x3a9157;"
			       "<wait:gpu> 10\n");
	/* Its thread's samples, in their runs, point at the merged stack. */
	for (uint32_t i = 0; i < p.nruns; i++)
		ck_assert_uint_eq(p.stacks[p.runs[i].stack].count, 10);
	free(text);
	waitmark_free(wm);
	profile_free(&p);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "srcline", .tests = { test_srcline_lines, test_srcline_changed,
					test_srcline_hostile } },
		{ "rules", .timeout = 60, .tests = { test_line_rules, test_queue_rules,
						      test_h100_data, test_h100_native_gpu,
						      test_h100_line_rule } },
		{ "model", .tests = { test_waitsum, test_waitsum_startup, test_waitsum_lines,
				      test_waitmark, test_waitmark_summary,
				      test_waitmark_renamed } },
	};

	return run_groups("waits", groups, ARRAY_SIZE(groups), 0, 1);
}
