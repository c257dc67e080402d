/* Tests for watch's stall model (src/analysis/stall.c) and its wait-class
 * tables (src/analysis/waitclass.c), driven by made-up rounds: each kind of
 * stall is found once the threshold has passed and not before, and the
 * jobs that are no stall (a busy one, a slow step that moves, an idle
 * server, timed waits) are never reported; and a sample's wait class for
 * the flight recording (stall_sample_class()), on each branch. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "analysis/stall.h"
#include "analysis/waitclass.h"
#include "suite.h"

#define SEC 1000000000ull
#define THRESHOLD (10 * SEC)
#define ROUND (SEC / 2)		/* 2 Hz, watch's default */

/* One made-up thread: the stacks it goes through (one per round, in turn,
 * each held for `hold` rounds), how it runs and what it waits in. */
struct fake_thread {
	pid_t pid, tid;
	const char *name;
	int nstacks;		/* stacks 1..nstacks, offset by `base` */
	uint64_t base;
	int hold;		/* rounds per stack (0: 1) */
	enum wait_class cls;
	const char *where;
	char state;
	double cpu_share;	/* of each second, on a CPU */
	enum wait_class sys;
	bool timed;
};

struct fake_job {
	struct fake_thread t[8];
	int nt;
	int rank[8];		/* by thread index: its process's rank */
	uint64_t cpu_from;	/* CPU time counted from (0: each run's start) */
};

/* What happened over a run: the first new stall, the first move. */
struct outcome {
	uint64_t stall_at, moved_at;	/* 0: never */
	enum stall_kind kind;
	char why[512];
	pid_t pid, odd;
};

static void feed_round(struct stall_model *m, const struct fake_job *j, uint64_t now,
		       uint64_t round)
{
	for (int i = 0; i < j->nt; i++) {
		const struct fake_thread *t = &j->t[i];
		int pi = stall_proc_seen(m, now, t->pid, 1, j->rank[i], "python3 job.py");
		int hold = t->hold ? t->hold : 1;
		uint64_t stack = t->base + 1 + (round / hold) % t->nstacks;

		stall_thread_seen(m, pi, now, t->tid, t->name, stack, t->cls, t->where);
	}
}

static void feed_second(struct stall_model *m, const struct fake_job *j, uint64_t now,
			uint64_t start)
{
	for (int i = 0; i < j->nt; i++) {
		const struct fake_thread *t = &j->t[i];
		int pi = stall_proc_find(m, t->pid);

		stall_thread_cpu(m, pi, t->tid, now, t->state,
				 (uint64_t)(t->cpu_share * (double)(now - start)));
		stall_thread_syscall(m, pi, t->tid, t->sys, t->timed);
	}
}

/* Run the job from `start` for `secs` seconds as watch does: a round
 * every ROUND, /proc and a judgement every second. */
static void run(struct stall_model *m, const struct fake_job *j, uint64_t start, int secs,
		struct outcome *o)
{
	for (uint64_t r = 0; r * ROUND <= (uint64_t)secs * SEC; r++) {
		uint64_t now = start + r * ROUND;

		feed_round(m, j, now, r);
		if ((r * ROUND) % SEC)
			continue;
		feed_second(m, j, now, j->cpu_from ? j->cpu_from : start);
		stall_forget(m, now);
		switch (stall_judge(m, now)) {
		case STALL_EV_NEW:
			if (o->stall_at)
				break;
			o->stall_at = now;
			o->kind = m->r.kind;
			snprintf(o->why, sizeof(o->why), "%s", m->r.why);
			o->pid = m->p[m->r.proc].pid;
			o->odd = m->r.odd >= 0 ? m->p[m->r.odd].pid : 0;
			break;
		case STALL_EV_MOVED:
			if (!o->moved_at)
				o->moved_at = now;
			break;
		default:
			break;
		}
	}
}

static void model(struct stall_model *m, bool progress)
{
	struct stall_opts o = { .threshold_ns = THRESHOLD, .gone_ns = 2 * SEC,
				.progress = progress };

	stall_init(m, &o, SEC);
}

/* A thread blocked for good: one stack, asleep, no CPU, in sys. */
static struct fake_thread blocked(pid_t pid, pid_t tid, const char *where, enum wait_class sys,
				  bool timed)
{
	return (struct fake_thread){ .pid = pid, .tid = tid, .name = "t", .nstacks = 1,
				     .base = (uint64_t)tid * 100, .where = where, .state = 'S',
				     .sys = sys, .timed = timed };
}

/* A thread on a CPU going through n stacks, each held `hold` rounds. */
static struct fake_thread busy(pid_t pid, pid_t tid, int n, int hold, double share)
{
	return (struct fake_thread){ .pid = pid, .tid = tid, .name = "main", .nstacks = n,
				     .hold = hold, .base = (uint64_t)tid * 100,
				     .where = "step (job.py:5)", .state = 'R', .cpu_share = share,
				     .cls = WC_NONE };
}

/* The report comes after the threshold, within two judgements of it. */
static void assert_on_time(const struct outcome *o)
{
	ck_assert_msg(o->stall_at, "no stall reported");
	ck_assert_uint_ge(o->stall_at - SEC, THRESHOLD);
	ck_assert_uint_le(o->stall_at - SEC, THRESHOLD + 2 * SEC);
}

START_TEST(test_deadlock)
{
	struct stall_model m;
	struct fake_job j = { .nt = 3, .rank = { -1, -1, -1 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(100, 100, "Thread.join (threading.py:1167)", WC_LOCK, false);
	j.t[1] = blocked(100, 101, "t1 (job.py:6)", WC_LOCK, false);
	j.t[2] = blocked(100, 102, "t2 (job.py:10)", WC_LOCK, false);
	model(&m, false);
	run(&m, &j, SEC, 30, &o);
	assert_on_time(&o);
	ck_assert_int_eq(o.kind, STALL_DEADLOCK);
	ck_assert_int_eq(o.pid, 100);
	ck_assert_msg(strstr(o.why, "101 \"t\"") && strstr(o.why, "102 \"t\"") &&
		      strstr(o.why, "without timeout"), "why: %s", o.why);
	/* Reported once, not again while it stays stuck. */
	ck_assert_uint_eq(o.moved_at, 0);
	stall_release(&m);
}
END_TEST

/* Two threads work 7.5 s (a new stack every round, on a CPU), then take
 * each other's lock: the deadlock is reported a threshold after they
 * block.  Their last run of few stacks began 1.5 s before they blocked;
 * that work's CPU time once counted against the wait and put the report
 * off until it was diluted below STALL_BLOCKED_CPU (28 s late here; in
 * CI, 11.8 s for a 3 s threshold). */
START_TEST(test_deadlock_after_work)
{
	const uint64_t start = SEC, work = 15 * ROUND;
	struct stall_model m;
	uint64_t stall_at = 0;

	model(&m, false);
	for (uint64_t r = 0; r * ROUND <= 40 * SEC && !stall_at; r++) {
		uint64_t now = start + r * ROUND, t = r * ROUND;
		bool working = t < work;
		int pi = stall_proc_seen(&m, now, 100, 1, -1, "python3 job.py");

		stall_thread_seen(&m, pi, now, 100, "MainThread", 1, WC_NONE,
				  "Thread.join (threading.py:1167)");
		for (pid_t tid = 101; tid <= 102; tid++)
			stall_thread_seen(&m, pi, now, tid, "t",
					  working ? 1000 * (uint64_t)tid + r : (uint64_t)tid, WC_NONE,
					  working ? "move (job.py:3)" : "take (job.py:9)");
		if (t % SEC)
			continue;
		stall_thread_cpu(&m, pi, 100, now, 'S', 0);
		stall_thread_syscall(&m, pi, 100, WC_LOCK, false);
		for (pid_t tid = 101; tid <= 102; tid++) {
			stall_thread_cpu(&m, pi, tid, now, working ? 'R' : 'S', working ? t : work);
			stall_thread_syscall(&m, pi, tid, working ? WC_NONE : WC_LOCK, false);
		}
		stall_forget(&m, now);
		if (stall_judge(&m, now) == STALL_EV_NEW) {
			stall_at = now;
			ck_assert_int_eq(m.r.kind, STALL_DEADLOCK);
		}
	}
	ck_assert_msg(stall_at, "no stall reported");
	ck_assert_uint_ge(stall_at - start - work, THRESHOLD);
	ck_assert_uint_le(stall_at - start - work, THRESHOLD + 2 * SEC);
	stall_release(&m);
}
END_TEST

/* An idle server: every thread blocked, stacks unchanged, like a deadlock;
 * but its acceptor waits for I/O and its pool in queue gets with a timeout,
 * and a grpc-like main thread in a timed wait: the world can wake them. */
START_TEST(test_idle_server)
{
	static const struct { enum wait_class sys; bool timed; } mains[] = {
		{ WC_IO, false },	/* accept, epoll_wait(-1) */
		{ WC_LOCK, true },	/* Event.wait(0.1) in a loop */
		{ WC_SLEEP, true },	/* a sleeping scheduler */
	};

	for (size_t i = 0; i < sizeof(mains) / sizeof(mains[0]); i++) {
		struct stall_model m;
		struct fake_job j = { .nt = 3, .rank = { -1, -1, -1 } };
		struct outcome o = { 0 };

		j.t[0] = blocked(200, 200, "serve_forever (socketserver.py:235)", mains[i].sys,
				 mains[i].timed);
		j.t[1] = blocked(200, 201, "Queue.get (queue.py:171)", WC_LOCK, false);
		j.t[2] = blocked(200, 202, "Queue.get (queue.py:171)", WC_LOCK, false);
		model(&m, false);
		run(&m, &j, SEC, 3 * 10, &o);
		ck_assert_msg(!o.stall_at, "main waiting in %s: reported %s", wait_class_name(
			      mains[i].sys), o.why);
		stall_release(&m);
	}
}
END_TEST

START_TEST(test_livelock)
{
	/* On a CPU most of the time; and on a loaded machine, a third of it
	 * but always runnable; or a twentieth (4 CPU hogs at nice -10 on 2
	 * CPUs). */
	static const double shares[] = { 0.95, 0.3, 0.05 };

	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		struct stall_model m;
		struct fake_job j = { .nt = 2, .rank = { -1, -1 } };
		struct outcome o = { 0 };

		j.t[0] = busy(300, 300, 2, 1, shares[i]);
		j.t[1] = blocked(300, 301, "Event.wait (threading.py:655)", WC_LOCK, false);
		model(&m, false);
		run(&m, &j, SEC, 30, &o);
		assert_on_time(&o);
		ck_assert_int_eq(o.kind, STALL_LIVELOCK);
		ck_assert_msg(strstr(o.why, "thread 300") && strstr(o.why, "2 stacks"),
			      "why: %s", o.why);
		stall_release(&m);
	}
}
END_TEST

/* Starved of CPU: a loop of two lines that naps, niced on a machine full
 * of CPU hogs, runnable at every reading but on a CPU 0-2% of the time
 * (issue 39: reported as a livelock, and its deadlock after that never
 * was).  Too little CPU to show a spin: no stall. */
START_TEST(test_starved_no_livelock)
{
	static const double shares[] = { 0, 0.01, 0.02 };

	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		struct stall_model m;
		struct fake_job j = { .nt = 2, .rank = { -1, -1 } };
		struct outcome o = { 0 };

		j.t[0] = busy(310, 310, 2, 3, shares[i]);
		j.t[1] = blocked(310, 311, "Thread.join (threading.py:1167)", WC_LOCK, false);
		model(&m, false);
		run(&m, &j, SEC, 30, &o);
		ck_assert_msg(!o.stall_at, "%.0f%% of a CPU: reported %s", 100 * shares[i], o.why);
		stall_release(&m);
	}
}
END_TEST

/* A short threshold sees a moving thread a handful of times, in a few
 * stacks each seen once or twice: no livelock until the same few have
 * come back STALL_LIVELOCK_REPEATS times each (a loop over 4 stacks). */
START_TEST(test_livelock_needs_repeats)
{
	struct stall_model m;
	struct stall_opts so = { .threshold_ns = 3 * SEC, .gone_ns = 2 * SEC };
	struct fake_job j = { .nt = 1, .rank = { -1 } };
	struct outcome o = { 0 };

	j.t[0] = busy(350, 350, STALL_FEW_STACKS, 1, 0.04);
	j.cpu_from = SEC;	/* one thread's CPU time over both runs */
	stall_init(&m, &so, SEC);
	run(&m, &j, SEC, 5, &o);
	ck_assert_msg(!o.stall_at, "reported at %.1f s: %s", (o.stall_at - SEC) / 1e9, o.why);
	run(&m, &j, 6 * SEC, 4, &o);
	ck_assert_int_eq(o.kind, STALL_LIVELOCK);
	stall_release(&m);
}
END_TEST

/* A spin whose loop passes a rare line now and then (sampled once every
 * 12 s, beyond the threshold): reported once, and never said to move. */
START_TEST(test_rare_lines)
{
	struct stall_model m;
	int moved = 0, stalls = 0;

	model(&m, false);
	for (uint64_t r = 0; r < 120; r++) {
		uint64_t now = SEC + r * ROUND;
		int pi = stall_proc_seen(&m, now, 1200, 1, -1, "python3 spin.py");
		uint64_t stack = r % 24 == 23 ? 3 : 1 + r % 2;

		stall_thread_seen(&m, pi, now, 1200, "beat", stack, WC_NONE, "beat (spin.py:9)");
		if (r % 2)
			continue;
		stall_thread_cpu(&m, pi, 1200, now, 'R', (uint64_t)(0.9 * (double)(now - SEC)));
		switch (stall_judge(&m, now)) {
		case STALL_EV_NEW: stalls++; break;
		case STALL_EV_MOVED: moved++; break;
		default: break;
		}
	}
	ck_assert_int_eq(stalls, 1);
	ck_assert_int_eq(moved, 0);
	ck_assert_int_eq(m.r.kind, STALL_LIVELOCK);
	stall_release(&m);
}
END_TEST

/* The same spin with its rare line caught early, inside the first
 * threshold: that looks like a move until the thread comes back to its
 * first stack; from then on it cycles, and the stall is reported as
 * begun when the spin was first seen, not when the rare line was (CI:
 * stall.py's heartbeat reported 2.6 s late for a 3 s threshold). */
START_TEST(test_rare_line_early)
{
	const uint64_t start = SEC;
	struct stall_model m;
	uint64_t stall_at = 0;

	model(&m, false);
	for (uint64_t r = 0; r < 120 && !stall_at; r++) {
		uint64_t now = start + r * ROUND;
		int pi = stall_proc_seen(&m, now, 1200, 1, -1, "python3 spin.py");

		stall_thread_seen(&m, pi, now, 1200, "beat", r == 15 ? 3 : 1, WC_NONE,
				  "beat (spin.py:9)");
		if (r % 2)
			continue;
		stall_thread_cpu(&m, pi, 1200, now, 'R', (uint64_t)(0.9 * (double)(now - start)));
		if (stall_judge(&m, now) == STALL_EV_NEW)
			stall_at = now;
	}
	ck_assert_msg(stall_at, "no stall reported");
	ck_assert_int_eq(m.r.kind, STALL_LIVELOCK);
	ck_assert_uint_eq(m.r.since_ns, start);
	/* Judged only once the counts restarted at the rare line have run a
	 * threshold: what it did before that new stack is not its CPU. */
	ck_assert_uint_ge(stall_at, start + 15 * ROUND + THRESHOLD);
	stall_release(&m);
}
END_TEST

/* Busy and progressing: many stacks within any threshold (a validation
 * pass), or a slow step whose stacks change every few seconds. */
START_TEST(test_busy_is_no_stall)
{
	static const struct { int stacks, hold; } jobs[] = {
		{ 40, 1 },	/* a new stack every round */
		{ 12, 5 },	/* a new stack every 2.5 s: 5 in 12.5 s */
	};

	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		struct stall_model m;
		struct fake_job j = { .nt = 2, .rank = { -1, -1 } };
		struct outcome o = { 0 };

		j.t[0] = busy(400, 400, jobs[i].stacks, jobs[i].hold, 0.9);
		j.t[1] = blocked(400, 401, "Event.wait (threading.py:655)", WC_LOCK, false);
		model(&m, false);
		run(&m, &j, SEC, 3 * 10, &o);
		ck_assert_msg(!o.stall_at, "%d stacks held %d rounds: reported %s",
			      jobs[i].stacks, jobs[i].hold, o.why);
		stall_release(&m);
	}
}
END_TEST

START_TEST(test_collective_odd_one_out)
{
	static const char want[] = "ranks 0, 2 in all_reduce (job.py:35); rank 1 in "
				   "load_batch (job.py:12) for ";
	struct stall_model m;
	struct fake_job j = { .nt = 3, .rank = { 0, 1, 2 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(500, 500, "all_reduce (job.py:35)", WC_LOCK, true);
	j.t[0].cls = WC_COLLECTIVE;
	j.t[1] = blocked(501, 501, "load_batch (job.py:12)", WC_SLEEP, true);
	j.t[2] = j.t[0];
	j.t[2].pid = j.t[2].tid = 502;
	j.t[2].base = 50200;
	model(&m, false);
	run(&m, &j, SEC, 20, &o);
	assert_on_time(&o);
	ck_assert_int_eq(o.kind, STALL_COLLECTIVE);
	ck_assert_int_eq(o.odd, 501);
	ck_assert_int_eq(o.pid, 501);
	ck_assert_msg(!strncmp(o.why, want, strlen(want)) && strstr(o.why, " s"), "why: %s",
		      o.why);
	stall_release(&m);
}
END_TEST

/* Ranks waiting in a collective for one that still moves (late: a loaded
 * machine, a slow step), or a main loop waiting for workers that still
 * work: no stall, however long. */
START_TEST(test_waiting_on_movers)
{
	for (int kind = 0; kind < 2; kind++) {
		struct stall_model m;
		struct fake_job j = { .nt = 3, .rank = { 0, 1, 2 } };
		struct outcome o = { 0 };

		j.t[0] = blocked(550, 550, "all_reduce (job.py:35)", WC_LOCK, true);
		j.t[0].cls = kind ? WC_DATA : WC_COLLECTIVE;
		j.t[1] = busy(551, 551, 40, 1, 0.9);
		j.t[2] = j.t[0];
		j.t[2].pid = j.t[2].tid = 552;
		j.t[2].base = 55200;
		model(&m, false);
		run(&m, &j, SEC, 30, &o);
		ck_assert_msg(!o.stall_at, "reported %s", o.why);
		stall_release(&m);
	}
}
END_TEST

START_TEST(test_data)
{
	struct stall_model m;
	struct fake_job j = { .nt = 2, .rank = { -1, -1 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(600, 600, "_next_data (train.py:40)", WC_IO, true);
	j.t[0].cls = WC_DATA;
	j.t[1] = blocked(601, 601, "Dataset.__getitem__ (train.py:7)", WC_SLEEP, true);
	model(&m, false);
	run(&m, &j, SEC, 20, &o);
	assert_on_time(&o);
	ck_assert_int_eq(o.kind, STALL_DATA);
	ck_assert_int_eq(o.pid, 600);
	ck_assert_msg(strstr(o.why, "input pipeline in _next_data (train.py:40)"), "why: %s",
		      o.why);
	stall_release(&m);
}
END_TEST

/* A DataLoader's workers block on a lock (each a deadlock of its own)
 * while the main loop still moves; then it waits for them: the report,
 * once the whole job is still, says data.  A deadlock beside a process
 * that keeps moving waits one more threshold, then is reported. */
START_TEST(test_settles)
{
	struct stall_model m;
	struct fake_job j = { .nt = 3, .rank = { -1, -1, -1 } };
	struct outcome o = { 0 };

	j.t[0] = busy(1100, 1100, 40, 1, 0.9);
	j.t[1] = blocked(1101, 1101, "Stuck.block_forever (job.py:12)", WC_LOCK, false);
	j.t[2] = blocked(1102, 1102, "Stuck.block_forever (job.py:12)", WC_LOCK, false);
	model(&m, false);
	run(&m, &j, SEC, 5, &o);
	j.t[0] = blocked(1100, 1100, "_next_data (train.py:40)", WC_IO, true);
	j.t[0].cls = WC_DATA;
	run(&m, &j, 6 * SEC, 20, &o);
	ck_assert_int_eq(o.kind, STALL_DATA);
	ck_assert_int_eq(o.pid, 1100);
	ck_assert_uint_le(o.stall_at, 18 * SEC);
	stall_release(&m);

	memset(&o, 0, sizeof(o));
	j.t[0] = busy(1100, 1100, 40, 1, 0.9);
	model(&m, false);
	run(&m, &j, SEC, 30, &o);
	ck_assert_int_eq(o.kind, STALL_DEADLOCK);
	ck_assert_uint_ge(o.stall_at, 21 * SEC);
	ck_assert_uint_le(o.stall_at, 23 * SEC);
	stall_release(&m);
}
END_TEST

/* watch says when the tasks are deadlocked; the model reports it once the
 * process is stuck, and not before. */
START_TEST(test_asyncio)
{
	struct stall_model m;
	struct fake_job j = { .nt = 1, .rank = { -1 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(700, 700, "EpollSelector.select (selectors.py:468)", WC_IO, false);
	model(&m, false);
	run(&m, &j, SEC, 5, &o);
	/* Found by a look at 6 s, after the thread looked stuck from the
	 * start: reported a threshold after that look, as of that look. */
	run(&m, &j, 6 * SEC, 6, &o);
	ck_assert_msg(!o.stall_at, "reported %s", o.why);
	stall_set_async(&m, stall_proc_find(&m, 700), "its asyncio tasks await each other",
			12 * SEC);
	run(&m, &j, 12 * SEC, 15, &o);
	ck_assert_int_eq(o.kind, STALL_ASYNCIO);
	ck_assert_uint_ge(o.stall_at, 22 * SEC);
	ck_assert_uint_le(o.stall_at, 24 * SEC);
	ck_assert_uint_eq(m.r.since_ns, 12 * SEC);
	stall_release(&m);
}
END_TEST

/* The progress file decides: a job that looks deadlocked but keeps writing
 * its log is no stall; a busy one whose log stopped is. */
START_TEST(test_progress_overrides)
{
	struct stall_model m;
	struct fake_job j = { .nt = 1, .rank = { -1 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(800, 800, "t1 (job.py:6)", WC_LOCK, false);
	model(&m, true);
	for (int s = 1; s <= 30; s += 2) {
		stall_progress(&m, (uint64_t)s * SEC);
		run(&m, &j, (uint64_t)s * SEC, 2, &o);
	}
	ck_assert_msg(!o.stall_at, "reported %s", o.why);
	stall_release(&m);

	j.t[0] = busy(801, 801, 40, 1, 0.9);
	memset(&o, 0, sizeof(o));
	model(&m, true);
	run(&m, &j, SEC, 20, &o);
	assert_on_time(&o);
	ck_assert_int_eq(o.kind, STALL_NO_PROGRESS);
	ck_assert_msg(strstr(o.why, "progress file has not changed"), "why: %s", o.why);
	stall_release(&m);
}
END_TEST

/* Reported once; when the job moves again, said once; then a new stall is
 * reported anew. */
START_TEST(test_moves_again)
{
	struct stall_model m;
	struct fake_job j = { .nt = 1, .rank = { -1 } };
	struct outcome o = { 0 }, o2 = { 0 };

	j.t[0] = busy(900, 900, 1, 1, 0.9);
	model(&m, false);
	run(&m, &j, SEC, 15, &o);
	ck_assert_int_eq(o.kind, STALL_LIVELOCK);
	j.t[0] = busy(900, 900, 40, 1, 0.9);
	run(&m, &j, 16 * SEC, 5, &o);
	ck_assert_msg(o.moved_at, "no move said");
	ck_assert_uint_le(o.moved_at, 18 * SEC);
	j.t[0] = busy(900, 900, 1, 1, 0.9);
	j.t[0].base = 7000;
	run(&m, &j, 22 * SEC, 15, &o2);
	ck_assert_msg(o2.stall_at, "the second stall was not reported");
	stall_release(&m);
}
END_TEST

/* A thread that exits is forgotten: the rest, deadlocked, are reported
 * from when the last one that moved left. */
START_TEST(test_gone_threads)
{
	struct stall_model m;
	struct fake_job j = { .nt = 2, .rank = { -1, -1 } };
	struct outcome o = { 0 };

	j.t[0] = blocked(1000, 1000, "t1 (job.py:6)", WC_LOCK, false);
	j.t[1] = busy(1000, 1001, 40, 1, 0.9);
	model(&m, false);
	run(&m, &j, SEC, 5, &o);
	j.nt = 1;
	run(&m, &j, 6 * SEC, 20, &o);
	ck_assert_int_eq(o.kind, STALL_DEADLOCK);
	ck_assert_int_eq(m.p[0].nt, 1);
	stall_release(&m);
}
END_TEST

/* --- a sample's class, for the flight recording --------------------------- */

/* A model with process 1300 seen at 1 s: its index. */
static int sample_model(struct stall_model *m)
{
	model(m, false);
	return stall_proc_seen(m, SEC, 1300, 1, -1, "python3 job.py");
}

/* A reading of thread tid at now: its state and the call it sits in. */
static void reading(struct stall_model *m, int pi, pid_t tid, uint64_t now, char state,
		    enum wait_class sys, bool timed)
{
	stall_thread_cpu(m, pi, tid, now, state, 0);
	stall_thread_syscall(m, pi, tid, sys, timed);
}

/* Thread 1300, its frames naming no wait, sampled in `stack` at now. */
static void plain(struct stall_model *m, int pi, uint64_t now, uint64_t stack)
{
	stall_thread_seen(m, pi, now, 1300, "t", stack, WC_NONE, "step (job.py:5)");
}

/* Thread 1300 in stack 1 since 1 s, read at 2 s, sampled there again:
 * its sample's class. */
static enum wait_class read_in_stack(struct stall_model *m, int pi, char state,
				     enum wait_class sys, bool timed)
{
	plain(m, pi, SEC, 1);
	reading(m, pi, 1300, 2 * SEC, state, sys, timed);
	plain(m, pi, 2 * SEC + ROUND, 1);
	return stall_sample_class(m, pi, 1300);
}

/* Frames that name a wait win over the system call, whatever it is (a
 * data wait in an untimed futex, a sleep's frames in one), and over a
 * reading that found the thread running or that came before its stack. */
START_TEST(test_sample_frames_win)
{
	struct stall_model m;
	int pi = sample_model(&m);

	stall_thread_seen(&m, pi, SEC, 1300, "main", 1, WC_DATA, "_next_data (train.py:40)");
	reading(&m, pi, 1300, 2 * SEC, 'S', WC_LOCK, false);
	stall_thread_seen(&m, pi, 3 * SEC, 1300, "main", 1, WC_DATA, "_next_data (train.py:40)");
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_DATA);
	stall_thread_seen(&m, pi, 4 * SEC, 1300, "main", 2, WC_SLEEP, "nap (job.py:3)");
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_SLEEP);
	reading(&m, pi, 1300, 5 * SEC, 'R', WC_NONE, false);
	stall_thread_seen(&m, pi, 6 * SEC, 1300, "main", 3, WC_LOCK, "Condition.wait (x.py:1)");
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_LOCK);
	stall_release(&m);
}
END_TEST

/* A thread whose frames name no wait, read not running since it entered
 * its stack: the class of its system call.  A lock wait without timeout
 * (lock.acquire() has no frame of the lock's), a timed sleep, I/O. */
START_TEST(test_sample_syscall)
{
	static const struct { enum wait_class sys; bool timed; } calls[] = {
		{ WC_LOCK, false }, { WC_SLEEP, true }, { WC_IO, false }, { WC_IO, true },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct stall_model m;
		int pi = sample_model(&m);

		plain(&m, pi, SEC, 1);
		/* Read at the very time it entered the stack: of that stack. */
		reading(&m, pi, 1300, SEC, 'S', calls[i].sys, calls[i].timed);
		ck_assert_int_eq(stall_sample_class(&m, pi, 1300), calls[i].sys);
		plain(&m, pi, SEC + ROUND, 1);
		ck_assert_int_eq(stall_sample_class(&m, pi, 1300), calls[i].sys);
		stall_release(&m);
	}
}
END_TEST

/* A reading taken before the thread came to its stack is of another one:
 * none until the next reading, then the call again. */
START_TEST(test_sample_reading_before_stack)
{
	struct stall_model m;
	int pi = sample_model(&m);

	ck_assert_int_eq(read_in_stack(&m, pi, 'S', WC_LOCK, false), WC_LOCK);
	plain(&m, pi, 3 * SEC - 1, 2);
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_NONE);
	/* Back to its first stack: still a new stack since the reading. */
	plain(&m, pi, 3 * SEC - 1 + ROUND / 2, 1);
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_NONE);
	reading(&m, pi, 1300, 3 * SEC + ROUND, 'S', WC_IO, false);
	plain(&m, pi, 4 * SEC, 1);
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_IO);
	stall_release(&m);
}
END_TEST

/* A thread never read, or its latest reading found running ('R') in
 * whatever call, or in a lock wait with a timeout (the GIL's, or
 * Event.wait(0.1) in a loop): none, until a reading finds it blocked in
 * the call without timeout. */
START_TEST(test_sample_not_waiting)
{
	static const struct { char state; enum wait_class sys; bool timed; } reads[] = {
		{ 'R', WC_IO, false }, { 'R', WC_LOCK, false }, { 'S', WC_LOCK, true },
	};

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		struct stall_model m;
		int pi = sample_model(&m);

		plain(&m, pi, SEC, 1);
		ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_NONE);
		ck_assert_int_eq(read_in_stack(&m, pi, reads[i].state, reads[i].sys,
					       reads[i].timed), WC_NONE);
		reading(&m, pi, 1300, 3 * SEC, 'S', reads[i].sys, false);
		ck_assert_int_eq(stall_sample_class(&m, pi, 1300), reads[i].sys);
		stall_release(&m);
	}
}
END_TEST

/* A tid the process has no thread of (another process's, or gone): none. */
START_TEST(test_sample_unknown_tid)
{
	struct stall_model m;
	int pi = sample_model(&m), other;

	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_NONE);
	other = stall_proc_seen(&m, SEC, 1400, 1, -1, "python3 other.py");
	stall_thread_seen(&m, other, SEC, 1401, "t", 1, WC_LOCK, "t1 (other.py:6)");
	reading(&m, other, 1401, 2 * SEC, 'S', WC_LOCK, false);
	ck_assert_int_eq(stall_sample_class(&m, other, 1401), WC_LOCK);
	ck_assert_int_eq(stall_sample_class(&m, pi, 1401), WC_NONE);
	plain(&m, pi, 3 * SEC, 1);
	stall_forget(&m, 3 * SEC + m.o.gone_ns + 1);
	ck_assert_int_eq(m.np, 0);
	pi = stall_proc_seen(&m, 6 * SEC, 1300, 1, -1, "python3 job.py");
	ck_assert_int_eq(stall_sample_class(&m, pi, 1300), WC_NONE);
	stall_release(&m);
}
END_TEST

/* --- the tables ----------------------------------------------------------- */

static enum wait_class classify(const struct pframe *f, uint32_t n, uint32_t *at)
{
	const struct pframe *inner[16];

	for (uint32_t i = 0; i < n; i++)
		inner[i] = &f[i];
	return wait_class_of_frames(inner, n, at);
}

#define PYF(fn, file) { PF_PYTHON, (char *)(fn), (char *)(file), 1, 1 }

START_TEST(test_frame_rules)
{
	static const struct pframe collective[] = {
		PYF("all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"),
		PYF("_exception_logger.<locals>.wrapper", "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py"),
		PYF("train", "/job/job.py"),
	};
	static const struct pframe data[] = {
		PYF("EpollSelector.select", "/usr/lib/python3.12/selectors.py"),
		PYF("Queue.get", "/usr/lib/python3.12/multiprocessing/queues.py"),
		PYF("_MultiProcessingDataLoaderIter._try_get_data", "/x/torch/utils/data/dataloader.py"),
		PYF("_MultiProcessingDataLoaderIter._next_data", "/x/torch/utils/data/dataloader.py"),
		PYF("train", "/job/train.py"),
	};
	static const struct pframe lock[] = {
		PYF("Condition.wait", "/usr/lib/python3.12/threading.py"),
		PYF("Queue.get", "/usr/lib/python3.12/queue.py"),
		PYF("worker", "/job/pool.py"),
	};
	static const struct pframe user[] = {
		PYF("all_reduce", "/job/mymath.py"),	/* not torch's */
		PYF("get", "/job/cache.py"),
	};
	static const struct pframe gc[] = {
		{ PF_MARKER, (char *)"<gc>", NULL, -1, -1 },
		PYF("train", "/job/train.py"),
	};
	uint32_t at = 99;

	ck_assert_int_eq(classify(collective, 3, &at), WC_COLLECTIVE);
	ck_assert_uint_eq(at, 0);
	/* Data over the selector it waits in, decided by the outermost frame
	 * of the class. */
	ck_assert_int_eq(classify(data, 5, &at), WC_DATA);
	ck_assert_uint_eq(at, 3);
	ck_assert_int_eq(classify(lock, 3, &at), WC_LOCK);
	ck_assert_int_eq(classify(user, 2, NULL), WC_NONE);
	ck_assert_int_eq(classify(gc, 2, NULL), WC_GC);
	ck_assert_str_eq(wait_class_name(WC_COLLECTIVE), "collective");
	ck_assert_str_eq(wait_class_name(WC_GPU), "gpu");
	ck_assert_str_eq(wait_class_name(WC_NONE), "");
}
END_TEST

START_TEST(test_syscall_rules)
{
	uint64_t untimed[6] = { 0x1000, 0x80, 0, 0, 0, 0 };
	uint64_t timed[6] = { 0x1000, 0x80, 0, 0x7ffd0000, 0, 0 };
	uint64_t forever[6] = { 3, 0x7ffd0000, 16, (uint64_t)-1, 0, 0 };
	uint64_t ms[6] = { 3, 0x7ffd0000, 16, 100, 0, 0 };
	bool t;

	ck_assert_int_eq(wait_class_of_syscall(SYS_futex, untimed, &t), WC_LOCK);
	ck_assert(!t);
	ck_assert_int_eq(wait_class_of_syscall(SYS_futex, timed, &t), WC_LOCK);
	ck_assert(t);
	ck_assert_int_eq(wait_class_of_syscall(SYS_epoll_wait, forever, &t), WC_IO);
	ck_assert(!t);
	ck_assert_int_eq(wait_class_of_syscall(SYS_epoll_wait, ms, &t), WC_IO);
	ck_assert(t);
	ck_assert_int_eq(wait_class_of_syscall(SYS_clock_nanosleep, untimed, &t), WC_SLEEP);
	ck_assert(t);
	ck_assert_int_eq(wait_class_of_syscall(SYS_wait4, untimed, &t), WC_CHILD);
	ck_assert_int_eq(wait_class_of_syscall(SYS_getpid, untimed, &t), WC_NONE);
	ck_assert(!t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stall");
	TCase *tc = tcase_create("stall");

	tcase_add_test(tc, test_deadlock);
	tcase_add_test(tc, test_deadlock_after_work);
	tcase_add_test(tc, test_idle_server);
	tcase_add_test(tc, test_livelock);
	tcase_add_test(tc, test_livelock_needs_repeats);
	tcase_add_test(tc, test_starved_no_livelock);
	tcase_add_test(tc, test_rare_lines);
	tcase_add_test(tc, test_rare_line_early);
	tcase_add_test(tc, test_busy_is_no_stall);
	tcase_add_test(tc, test_collective_odd_one_out);
	tcase_add_test(tc, test_waiting_on_movers);
	tcase_add_test(tc, test_data);
	tcase_add_test(tc, test_settles);
	tcase_add_test(tc, test_asyncio);
	tcase_add_test(tc, test_progress_overrides);
	tcase_add_test(tc, test_moves_again);
	tcase_add_test(tc, test_gone_threads);
	tcase_add_test(tc, test_sample_frames_win);
	tcase_add_test(tc, test_sample_syscall);
	tcase_add_test(tc, test_sample_reading_before_stack);
	tcase_add_test(tc, test_sample_not_waiting);
	tcase_add_test(tc, test_sample_unknown_tid);
	tcase_add_test(tc, test_frame_rules);
	tcase_add_test(tc, test_syscall_rules);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
