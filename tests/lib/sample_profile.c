#include "sample_profile.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

static uint32_t py(struct profile *p, const char *name, const char *file, int line)
{
	struct pframe f = { PF_PYTHON, (char *)name, (char *)file, line, line > 1 ? line - 1 : 1 };

	return profile_frame(p, &f);
}

static uint32_t root(struct profile *p, enum pframe_kind kind, const char *name)
{
	struct pframe f = { kind, (char *)name, NULL, -1, -1 };

	return profile_frame(p, &f);
}

static void add_n(struct profile *p, uint32_t thread, const uint32_t *st, uint32_t depth,
		  int n, uint64_t *t)
{
	for (int i = 0; i < n; i++) {
		profile_add(p, thread, st, depth, *t, 1);
		*t += p->interval_ns;
	}
}

void sample_profile(struct profile *p, bool hostile)
{
	uint32_t proc, tmain, tworker, st[8];
	uint64_t t = 0;

	profile_init(p, 100);
	p->command = strdup("python3 app.py --epochs 3");
	p->pid = 4242;
	p->python_version = strdup("3.12.1");
	p->start_unix_ns = 1700000000ull * 1000000000ull;
	proc = root(p, PF_PROCESS, "process 4242: python3 app.py --epochs 3");
	tmain = profile_thread(p, 4242, 4242, "MainThread");
	tworker = profile_thread(p, 4242, 4250, "loader");

	st[0] = proc;
	st[1] = root(p, PF_THREAD, "thread 4242 \"MainThread\"");
	st[2] = py(p, "<module>", "/home/u/app.py", 40);
	st[3] = py(p, "main", "/home/u/app.py", 30);
	st[4] = py(p, "work", "/home/u/app.py", 12);
	add_n(p, tmain, st, 5, 60, &t);
	st[4] = py(p, "Event.wait", "/usr/lib/python3.12/threading.py", 655);
	add_n(p, tmain, st, 5, 30, &t);

	st[1] = root(p, PF_THREAD, "thread 4250 \"loader\"");
	st[2] = py(p, "Thread.run", "/usr/lib/python3.12/threading.py", 1010);
	st[3] = py(p, "load", "/venv/lib/python3.12/site-packages/torch/data.py", 77);
	t = 0;
	add_n(p, tworker, st, 4, 10, &t);

	if (hostile) {
		st[2] = py(p, SAMPLE_HOSTILE_NAME, "/tmp/a<b>&\"c\";d\ne\x1b[31m\xff\xfe.py", 3);
		add_n(p, tworker, st, 3, 5, &t);
	}
	p->duration_ns = 900000000ull;
}

void helper_profile(struct profile *p, bool wall)
{
	static const char thr[] = "/usr/lib/python3.12/threading.py";
	uint32_t tmain, tfeed, tres, st[8];
	struct pframe wait = { PF_MARKER, "<wait:data>", NULL, -1, -1 };
	uint64_t t = 0;

	profile_init(p, 100);
	p->command = strdup("python3 train.py");
	p->pid = 4300;
	p->python_version = strdup("3.12.1");
	p->wall = wall;
	tmain = profile_thread(p, 4300, 4300, "MainThread");
	tfeed = profile_thread(p, 4300, 4310, "QueueFeederThread");
	tres = profile_thread(p, 4300, 4311, "Thread-3 (_handle_results)");
	st[0] = root(p, PF_PROCESS, "process 4300: python3 train.py");
	st[1] = py(p, "<module>", "/home/u/train.py", 60);
	st[2] = py(p, "main", "/home/u/train.py", 50);
	st[3] = py(p, "augment", "/home/u/train.py", 21);
	add_n(p, tmain, st, 4, 20, &t);
	st[3] = py(p, "DataLoader.__next__",
		   "/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py", 630);
	st[4] = profile_frame(p, &wait);
	add_n(p, tmain, st, 5, 10, &t);

	st[1] = py(p, "Thread._bootstrap", thr, 1030);
	st[2] = py(p, "Thread._bootstrap_inner", thr, 1073);
	st[3] = py(p, "Thread.run", thr, 1010);
	st[4] = py(p, "Queue._feed", "/usr/lib/python3.12/multiprocessing/queues.py", 251);
	st[5] = py(p, "Condition.wait", thr, 355);
	t = 0;
	add_n(p, tfeed, st, 6, HELPER_FEED, &t);
	st[4] = py(p, "Pool._handle_results", "/usr/lib/python3.12/multiprocessing/pool.py", 579);
	st[5] = py(p, "Connection._recv", "/usr/lib/python3.12/multiprocessing/connection.py",
		   395);
	t = 0;
	add_n(p, tres, st, 6, HELPER_RESULTS, &t);
	p->duration_ns = 3000000000ull;
}

void import_tower(struct profile *p, uint32_t depth)
{
	static const char *const steps[] = {
		"_find_and_load", "_find_and_load_unlocked", "_load_unlocked",
		"exec_module", "_call_with_frames_removed", "<module>",
	};
	uint32_t tmain = profile_thread(p, 4242, 4242, "MainThread"), st[256];
	uint64_t t = p->duration_ns;
	char file[32];

	if (depth > ARRAY_SIZE(st) - 3)
		depth = ARRAY_SIZE(st) - 3;
	st[0] = root(p, PF_PROCESS, "process 4242: python3 app.py --epochs 3");
	st[1] = root(p, PF_THREAD, "thread 4242 \"MainThread\"");
	st[2] = py(p, "<module>", "/home/u/app.py", 40);
	for (uint32_t d = 0; d < depth; d++) {
		const char *name = steps[d % ARRAY_SIZE(steps)];

		if (d % ARRAY_SIZE(steps) == ARRAY_SIZE(steps) - 1)
			snprintf(file, sizeof(file), "/usr/lib/python3.12/mod%u.py", d);
		else
			snprintf(file, sizeof(file), "<frozen importlib._bootstrap>");
		st[3 + d] = py(p, name, file, 100 + (int)d);
	}
	add_n(p, tmain, st, 3 + depth, 2, &t);
	p->duration_ns = t;
}

static uint32_t native(struct profile *p, const char *name)
{
	struct pframe f = { PF_NATIVE, (char *)name, NULL, -1, -1 };

	return profile_frame(p, &f);
}

void renamed_profile(struct profile *p, bool timeline, bool rename)
{
	struct pframe named = { PF_NATIVE, RENAMED_NAME, RENAMED_FILE, -1, -1 };
	uint32_t tmain, tworker, st[4], b, c;
	uint64_t t = 0;

	profile_init(p, 100);
	p->no_timeline = !timeline;
	p->command = strdup("python3 app.py");
	p->pid = 4242;
	p->python_version = strdup("3.12.1");
	p->start_unix_ns = 1700000000ull * 1000000000ull;
	tmain = profile_thread(p, 4242, 4242, "MainThread");
	tworker = profile_thread(p, 4242, 4250, "loader");

	st[0] = root(p, PF_PROCESS, "process 4242: python3 app.py");
	st[1] = root(p, PF_THREAD, "thread 4242 \"MainThread\"");
	st[2] = py(p, "main", "/home/u/app.py", 30);
	st[3] = c = native(p, "lib.so+0x10");
	add_n(p, tmain, st, 4, 3, &t);
	st[3] = b = native(p, "lib.so+0x20");
	add_n(p, tmain, st, 4, 4, &t);

	st[1] = root(p, PF_THREAD, "thread 4250 \"loader\"");
	st[2] = py(p, "load", "/home/u/data.py", 77);
	t = 0;
	add_n(p, tworker, st, 3, 2, &t);
	if (rename) {
		profile_frame_rename(p, c, &named);
		profile_frame_rename(p, b, &named);
	}
	p->duration_ns = 70000000ull;
}

void big_profile(struct profile *p, unsigned long n)
{
	uint32_t st[32], proc, th;
	char name[64], file[64];

	profile_init(p, 1000);
	p->command = strdup("python3 big.py");
	p->pid = 1;
	p->python_version = strdup("3.12.1");
	proc = root(p, PF_PROCESS, "process 1: python3 big.py");
	th = profile_thread(p, 1, 1, "MainThread");
	st[0] = proc;
	/* A few hundred distinct stacks, with a long tail of rare ones, the
	 * shape real profiles have. */
	for (unsigned long i = 0; i < n; i++) {
		unsigned long k = (i * 2654435761u) % 1000;
		uint32_t depth = 2 + k % 20;

		if (k >= 500)
			k = 500 + (k - 500) / 10;
		for (uint32_t d = 1; d < depth; d++) {
			snprintf(name, sizeof(name), "f%lu_%u", (k * 7 + d) % 97, d);
			snprintf(file, sizeof(file), "/app/mod%lu.py", (k + d) % 13);
			st[d] = py(p, name, file, (int)(d * 10 + k % 5));
		}
		profile_add(p, th, st, depth, i * p->interval_ns, 1);
	}
	p->duration_ns = n * p->interval_ns;
}
