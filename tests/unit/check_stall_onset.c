/* watch's stall model (src/analysis/stall.c) after long work (issue 39):
 * a stall's onset, its report and its "since" must not depend on how long
 * the job worked before it stopped.  Made-up rounds at watch's 2 Hz, with
 * /proc read and the job judged once a second, as watch.c does: threads
 * that work for N seconds (N = 5, 60, 300, 3600), then stop; the stall is
 * reported a threshold after the last of them stopped, within two
 * judgements, never before it, and its "since" is that moment.
 *
 * The work comes in three shapes.  Few stacks: two threads in one compute
 * loop of three lines, sharing the GIL (each read running half the time,
 * 45% of a CPU, the other half in the GIL's timed wait); the model takes
 * such a loop for a thread that keeps still, which is no stall (it does
 * not spin hard enough to be a livelock), but once it had kept still a
 * threshold its last stop was taken for more of the same: the deadlock
 * was judged with the CPU time of all the work before, and reported only
 * once that was diluted below STALL_BLOCKED_CPU (issue 39: 34 s late after
 * 20 s of work, 161 s after 60 s, "since" the job's start).  Many stacks:
 * a new stack each round, on a CPU (stall.py's move()).
 *
 * The stops: a deadlock (the first worker takes its first lock and waits
 * at a barrier for the second, which comes 1.5 s later, straight from its
 * work as far as 2 Hz rounds can tell; then each blocks for good on the
 * other's lock; MainThread joins them), or a livelock (one
 * worker spins in two stacks on a CPU, the other blocks as before).  The
 * onset is when the last thread came to the stacks it stays in. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/stall.h"
#include "analysis/waitclass.h"
#include "suite.h"
#include "target.h"

#define SEC 1000000000ull
#define THRESHOLD (10 * SEC)
#define ROUND (SEC / 2)
#define START SEC
#define PID 100
#define AHEAD (4 * SEC / 10)

enum work { WORK_FEW, WORK_MANY, WORK_LIGHT, WORK_STARVED, WORK_SPIN };
enum stop { STOP_DEADLOCK, STOP_LIVELOCK, STOP_AT_ONCE };

/* One made-up thread at a moment: its stack, state, CPU share and wait. */
struct now_doing {
	uint64_t stack;
	char state;
	double share;		/* of the second just gone, on a CPU */
	enum wait_class sys;
	bool timed;
};

struct scenario {
	uint64_t work_ns;
	enum work work;
	enum stop stop;
};

struct outcome {
	uint64_t onset;		/* the last worker in the stack it stays in */
	enum stall_kind want;	/* the stop's kind */
	/* The first report of that kind (else the first report), and
	 * reports of it before the onset. */
	uint64_t stall_at, since, early;
	enum stall_kind kind;
	int reports, others;	/* of that kind, and of any other */
	char why[512];
};

/* Worker w (0 or 1) at t_ns from the start. */
static struct now_doing worker(const struct scenario *s, int w, uint64_t t_ns, uint64_t round)
{
	uint64_t base = 1000 * (uint64_t)(w + 1);
	/* The second worker works until the first waits for it; or both
	 * block at once, between two rounds. */
	uint64_t end = s->stop == STOP_AT_ONCE ? s->work_ns + SEC / 5 :
		       s->work_ns + (uint64_t)w * (SEC + ROUND);
	bool on_cpu = ((t_ns / SEC) + (uint64_t)w) % 2 == 0;

	if (t_ns < end && s->work == WORK_MANY)
		return (struct now_doing){ base + 100 + round, 'R', 0.95, WC_NONE, false };
	if (t_ns < end && s->work == WORK_LIGHT)
		return (struct now_doing){ base + round % 2, 'S', 0.03, WC_SLEEP, true };
	/* Niced on a machine full of CPU hogs: runnable, 1% of a CPU. */
	if (t_ns < end && s->work == WORK_STARVED)
		return (struct now_doing){ base + round % 2, 'R', 0.01, WC_NONE, false };
	/* A spin on a loaded machine: runnable, 30% of a CPU. */
	if (t_ns < end && s->work == WORK_SPIN)
		return (struct now_doing){ base + round % 2, 'R', 0.3, WC_NONE, false };
	if (t_ns < end)
		return (struct now_doing){ base + round % 3, on_cpu ? 'R' : 'S', 0.45,
					   on_cpu ? WC_NONE : WC_LOCK, true };
	if (s->stop == STOP_AT_ONCE)
		return (struct now_doing){ base + 502, 'S', 0, WC_LOCK, false };
	if (s->stop == STOP_LIVELOCK && w == 0)
		return (struct now_doing){ base + 600 + round % 2, 'R', 0.95, WC_NONE, false };
	/* The first: its first lock taken (a round), then at the barrier
	 * until the second comes; then each in the other's lock for good
	 * (the second passes its first lock and the barrier between two
	 * rounds). */
	if (t_ns < end + ROUND && !w)
		return (struct now_doing){ base + 500, 'R', 0.5, WC_NONE, false };
	if (t_ns < s->work_ns + SEC + ROUND)
		return (struct now_doing){ base + 501, 'S', 0, WC_LOCK, false };
	return (struct now_doing){ base + 502, 'S', 0, WC_LOCK, false };
}

static const char *const where_of[] = { "join (threading.py:1167)", "worker (job.py:12)",
					"worker (job.py:12)" };

/* Feed thread i its round, or (second) its /proc reading. */
static void feed(struct stall_model *m, int pi, int i, const struct now_doing *d, uint64_t now,
		 bool second, uint64_t *cpu)
{
	pid_t tid = PID + i;

	if (!second) {
		stall_thread_seen(m, pi, now, tid, i ? "worker" : "MainThread", d->stack, WC_NONE,
				  where_of[i]);
		return;
	}
	*cpu += (uint64_t)(d->share * SEC);
	stall_thread_cpu(m, pi, tid, now, d->state, *cpu);
	stall_thread_syscall(m, pi, tid, d->sys, d->timed);
}

static void judge(struct stall_model *m, uint64_t now, struct outcome *o)
{
	stall_forget(m, now);
	if (stall_judge(m, now) != STALL_EV_NEW)
		return;
	if (m->r.kind != o->want && o->others++)
		return;
	if (m->r.kind == o->want && o->reports++)
		return;
	if (!o->stall_at || o->kind != o->want) {
		o->stall_at = now;
		o->since = m->r.since_ns;
		o->kind = m->r.kind;
		snprintf(o->why, sizeof(o->why), "%s", m->r.why);
	}
	if (m->r.kind == o->want && now < o->onset && !o->early)
		o->early = now;
}

static void run(const struct scenario *s, struct outcome *o)
{
	struct stall_opts so = { .threshold_ns = THRESHOLD, .gone_ns = 2 * SEC };
	const struct now_doing joining = { 1, 'S', 0, WC_LOCK, false };
	uint64_t cpu[3] = { 0 }, end = s->work_ns + 4 * THRESHOLD;
	struct stall_model m;

	memset(o, 0, sizeof(*o));
	o->want = s->stop == STOP_LIVELOCK ? STALL_LIVELOCK : STALL_DEADLOCK;
	o->onset = START + s->work_ns + (s->stop == STOP_AT_ONCE ? ROUND : SEC + ROUND);
	stall_init(&m, &so, START);
	for (uint64_t r = 0; r * ROUND <= end; r++) {
		uint64_t t = r * ROUND, now = START + t;
		int pi = stall_proc_seen(&m, now, PID, 1, -1, "python3 job.py");

		for (int second = 0; second < 2; second++) {
			if (second && t % SEC)
				break;
			feed(&m, pi, 0, &joining, now, second, &cpu[0]);
			for (int w = 0; w < 2; w++) {
				/* /proc is read after the round: it may see
				 * the thread blocked before a round does. */
				struct now_doing d = worker(s, w, second ? t + AHEAD : t, r);

				feed(&m, pi, w + 1, &d, now, second, &cpu[w + 1]);
			}
		}
		if (t % SEC == 0)
			judge(&m, now, o);
	}
	stall_release(&m);
}

static const char *const work_names[] = { "few stacks at 45%", "many stacks",
					  "few stacks at 3%", "few stacks starved at 1%",
					  "a spin at 30%" };
static const char *const stop_names[] = { "deadlock", "livelock", "deadlock at once" };

/* What is wrong with one run, into msg. */
static void judge_outcome(char **msg, unsigned long long n, const struct outcome *o,
			  enum stall_kind want, int others)
{
	if (!o->reports) {
		msg_add(msg, "%llu s of work: no stall reported within %llu s of its onset", n,
			(unsigned long long)(4 * THRESHOLD / SEC));
		return;
	}
	if (o->early)
		msg_add(msg, "%llu s of work: reported %.1f s before its onset", n,
			(o->onset - o->early) / 1e9);
	if (o->kind != want)
		msg_add(msg, "%llu s of work: kind %s, not %s (%s)", n, stall_kind_name(o->kind),
			stall_kind_name(want), o->why);
	if (o->stall_at < o->onset + THRESHOLD || o->stall_at > o->onset + THRESHOLD + 2 * SEC)
		msg_add(msg, "%llu s of work: reported %.1f s after its onset, not within "
			"[%llu, %llu] s", n, ((double)o->stall_at - (double)o->onset) / 1e9,
			(unsigned long long)(THRESHOLD / SEC),
			(unsigned long long)(THRESHOLD / SEC + 2));
	if (o->since != o->onset)
		msg_add(msg, "%llu s of work: since %+.1f s off its onset", n,
			((double)o->since - (double)o->onset) / 1e9);
	if (o->reports != 1)
		msg_add(msg, "%llu s of work: %d reports, not 1", n, o->reports);
	if (o->others > others)
		msg_add(msg, "%llu s of work: %d reports of another kind, not %d at most", n,
			o->others, others);
}

/* Each length of work, of one shape, stopped one way. */
static void check_onset(enum work work, enum stop stop)
{
	static const unsigned long long lengths_s[] = { 5, 60, 300, 3600 };
	enum stall_kind want = stop == STOP_LIVELOCK ? STALL_LIVELOCK : STALL_DEADLOCK;
	/* A spin's work is a livelock of its own before the stop. */
	int others = work == WORK_SPIN;
	char *msg = NULL, head[128];

	for (size_t i = 0; i < sizeof(lengths_s) / sizeof(lengths_s[0]); i++) {
		struct scenario s = { lengths_s[i] * SEC, work, stop };
		struct outcome o;

		run(&s, &o);
		printf("%s after %llu s of work in %s: reported %+.1f s after its onset, "
		       "since %+.1f s\n", stop_names[stop], lengths_s[i], work_names[work],
		       o.reports ? ((double)o.stall_at - (double)o.onset) / 1e9 : -1.0,
		       o.reports ? ((double)o.since - (double)o.onset) / 1e9 : 0.0);
		judge_outcome(&msg, lengths_s[i], &o, want, others);
	}
	snprintf(head, sizeof(head), "%s after work in %s", stop_names[stop], work_names[work]);
	fail_if_any(msg, head);
}

START_TEST(test_deadlock_after_few_stacks)
{
	check_onset(WORK_FEW, STOP_DEADLOCK);
}
END_TEST

START_TEST(test_deadlock_after_many_stacks)
{
	check_onset(WORK_MANY, STOP_DEADLOCK);
}
END_TEST

/* Light work (a nap and a short computation): the CPU time of the work,
 * counted from its start, is below STALL_BLOCKED_CPU already, and a
 * reading that found both threads blocked before any round saw them in
 * their new stacks was taken for a deadlock in the stacks of the work, at
 * once, "since" the start of the work (live/check_watch_late on 3.10:
 * reported 0.3 s after the onset, since 60 s before it). */
START_TEST(test_deadlock_after_light_work)
{
	check_onset(WORK_LIGHT, STOP_DEADLOCK);
	check_onset(WORK_LIGHT, STOP_AT_ONCE);
	check_onset(WORK_FEW, STOP_AT_ONCE);
}
END_TEST

/* Work starved of CPU (niced, beside CPU hogs: runnable at every reading,
 * 1% of a CPU) is no livelock, and the deadlock after it is reported on
 * time, once (issue 39: a livelock, and the deadlock never).  A true spin
 * on a loaded machine is a livelock; a deadlock after it is a stall of
 * its own, reported a threshold after its onset, not when the job next
 * moves. */
START_TEST(test_deadlock_after_starved_work)
{
	check_onset(WORK_STARVED, STOP_DEADLOCK);
	check_onset(WORK_STARVED, STOP_AT_ONCE);
	check_onset(WORK_SPIN, STOP_DEADLOCK);
	check_onset(WORK_SPIN, STOP_AT_ONCE);
}
END_TEST

START_TEST(test_livelock_after_few_stacks)
{
	check_onset(WORK_FEW, STOP_LIVELOCK);
}
END_TEST

START_TEST(test_livelock_after_many_stacks)
{
	check_onset(WORK_MANY, STOP_LIVELOCK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stall_onset");
	TCase *tc = tcase_create("stall_onset");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_add_test(tc, test_deadlock_after_few_stacks);
	tcase_add_test(tc, test_deadlock_after_many_stacks);
	tcase_add_test(tc, test_deadlock_after_light_work);
	tcase_add_test(tc, test_deadlock_after_starved_work);
	tcase_add_test(tc, test_livelock_after_few_stacks);
	tcase_add_test(tc, test_livelock_after_many_stacks);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
