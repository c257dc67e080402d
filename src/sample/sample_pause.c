/* The pause (with --blocking, --native): which of the target's threads a
 * round stops, and which it leaves running (those it does not read, and
 * with --native --idle the still ones, read as the others are stopped and
 * proved not to have run), then the release and what waits for it.
 * Separate from sampler.c because it is a policy with state of its own
 * (struct pausing) that a round asks two things of: stop the threads,
 * let them go. */
#include "sample/sampler_int.h"
#include "native/nsample.h"
#include "process/pause.h"
#include "process/proc.h"
#include "util/util.h"

#include <stdlib.h>

/* With --native --idle: may t be left running this round, its stack read
 * as it sleeps and its native frames taken from its last unwind?  When it
 * is asleep (S, D), that unwind holds (nsample_prove_still(): where it
 * entered the kernel and the stack bytes the unwind read), and it has not
 * run since that was proved: its run counts are what they were.  The proof
 * is made again only after the thread ran, so a thread asleep for good
 * costs a read of its schedstat a round, where a stop would wake it, wait
 * for it to be scheduled only to reach the stop (200 threads on 2 busy
 * CPUs: most of them late), copy its stack and unwind it.  That it did not
 * run during the round either is proved once the others are let go
 * (confirm_still()). */
static bool still_thread(struct sampler *s, struct sthread *t)
{
	uint64_t run_ns, runs;

	if (t->state != 'S' && t->state != 'D')
		return false;
	if (t->sched_fd == -1) {
		t->sched_fd = proc_task_open(s->pid, t->tid, "schedstat");
		if (t->sched_fd < 0)
			t->sched_fd = -2;
	}
	if (proc_schedstat_read(t->sched_fd, &run_ns, &runs) < 0)
		return false;
	/* Proved again after the thread ran, or once its memo is gone
	 * (the maps changed): its frames would come from nowhere. */
	if (!t->still_proved || run_ns != t->still_run_ns || runs != t->still_runs ||
	    !nsample_still_ready(s->ns, t->tid)) {
		t->still_run_ns = run_ns;
		t->still_runs = runs;
		t->still_proved = nsample_prove_still(s->ns, t->tid, t->sched_fd, run_ns, runs);
	}
	return t->still_proved;
}

/* The stacks of the threads of this round's ts[0..n) left running as
 * still, once the others are let go: what proves they did not move is
 * their run counts (confirm_still()), not the pause, which need not last
 * while they are read. */
static void record_stills(struct sampler *s, int n, uint64_t t_ns)
{
	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (t && t->still && (!s->o.gil_only || runs_python(&s->ts[i])))
			record_thread(s, t, &s->ts[i], t_ns);
	}
}

/* After the pause: a thread left running as still that ran during the
 * round may have moved while its stack was read; that stack is not
 * counted: the thread is late, read again running (record_late()), and
 * stopped again next round. */
static void confirm_still(struct sampler *s)
{
	for (int i = 0; i < s->threads.n; i++) {
		struct sthread *t = &s->threads.v[i];
		uint64_t run_ns, runs;

		if (!t->still)
			continue;
		t->still = false;
		if (proc_schedstat_read(t->sched_fd, &run_ns, &runs) == 0 &&
		    run_ns == t->still_run_ns && runs == t->still_runs)
			continue;
		t->still_proved = false;
		t->reuse.n = 0;
		t->last_read.valid = false;
		if (nsample_drop_still(s->ns, t->tid)) {
			s->count.stacks--;
			s->count.still_stacks--;
			t->late = true;
		}
	}
}

/* The threads a pause leaves running, into s->pausing.skip: without
 * --idle, every thread but the Python threads whose state, read before the
 * pause, says they run.  sampler.c's wanted() records none of the others
 * this round, so their stacks need not hold still; and stopping a sleeping
 * thread means waking it and waiting until it is scheduled only to enter
 * its stop, which takes milliseconds when the job's other threads keep
 * every CPU busy.  A thread with no Python state (a C library's worker) is
 * never recorded.  What stays right:
 *  - the reads of what threads share (the interpreter's thread list, code
 *    objects) are of hostile memory anyway, as without --blocking;
 *  - a thread that wakes during the round is not recorded, as one that
 *    wakes after its state was read always was;
 *  - a thread with no state yet, or started since the last pause, is
 *    stopped; a thread the pause did not stop (one that took Python up
 *    since, or was started by one left running) is neither read as
 *    stopped nor unwound (pause_holds() in wanted());
 *  - a thread of unknown tid might be any: then every thread is stopped;
 *  - with --idle every thread is wanted, so every thread is stopped;
 *    with --native --idle, all but those proved still (still_thread()),
 *    whose stacks are read left running, and the threads with no Python
 *    state. */
static int leave_running(struct sampler *s)
{
	bool stills = s->o.idle && s->ns;
	int n = 0, nkeep = 0;

	for (int i = 0; i < s->threads.n; i++) {
		s->threads.v[i].still = false;
		if (!s->threads.v[i].tid)
			return 0;
	}
	if (s->o.idle && !stills)
		return 0;
	for (int i = 0; i < s->threads.n; i++) {
		struct sthread *t = &s->threads.v[i];
		bool keep = stills ? !still_thread(s, t) : !t->state || t->state == 'R';

		if (keep) {
			ALLOC_GROW(s->pausing.keep, nkeep + 1, s->pausing.keep_cap);
			s->pausing.keep[nkeep++] = t->tid;
			continue;
		}
		t->still = stills;
		ALLOC_GROW(s->pausing.skip, n + 1, s->pausing.skip_cap);
		s->pausing.skip[n++] = t->tid;
	}
	pause_hint_rest(&s->pausing.hint, s->pid, s->pausing.keep, nkeep, &s->pausing.skip, &n,
			&s->pausing.skip_cap);
	return n;
}

/* With --blocking: stop the target's running threads, timing the stop from
 * the first interrupt (pause->began_ns) to the last thread let go (see
 * release()). */
int pause_target(struct sampler *s, struct pause *pause, uint64_t t_ns)
{
	int rc, n;

	if (!s->o.blocking)
		return 0;
	if (s->ns)
		nsample_begin(s->ns, t_ns);
	n = leave_running(s);
	rc = pause_process_except(s->pid, pause, &s->pausing.hint, s->pausing.skip, n);
	if (rc < 0) {
		if (proc_exiting(s->pid))
			return status_fail(EXIT_EXITED);
		s->count.errors[SERR_PAUSE]++;
		return -1;
	}
	return 0;
}

/* The stacks of the late threads of this round's ts[0..n) (sampler.c's
 * wanted ones the pause did not hold, confirm_still()'s, and those whose
 * stack could not be read as they were held: sample_stack.c's
 * walk_failed()), read with them running, held for the recheck as
 * without --blocking.  Returns whether there was any. */
bool record_late(struct sampler *s, int n, uint64_t t_ns)
{
	bool any = false;

	for (int i = 0; i < n; i++) {
		struct sthread *t = thread_of(s, i);

		if (!t || !t->late)
			continue;
		any = true;
		t->late_base = s->p->threads[t->pthread].samples;
		record_thread(s, t, &s->ts[i], t_ns);
	}
	return any;
}

/* Let the target go, then do what could wait: the stacks of the threads
 * left running as still (of this round's ts[0..n)), those of the late
 * ones, and the native merge. */
bool release(struct sampler *s, struct pause *pause, int n, uint64_t t_ns)
{
	uint64_t ns;
	bool late;

	if (!s->o.blocking)
		return false;
	pause_release(pause);
	if (s->ns) {
		record_stills(s, n, t_ns);
		confirm_still(s);
	}
	late = record_late(s, n, t_ns);
	/* A round that seized no thread (all asleep, left running) held
	 * nothing: its pause is 0, not the time spent looking. */
	ns = pause->began_ns ? pause->released_ns - pause->began_ns : 0;
	s->count.pauses++;
	s->count.pause_ns += ns;
	if (ns > s->count.max_pause_ns)
		s->count.max_pause_ns = ns;
	hist_add(&s->count.pause_hist, ns);
	if (s->ns) {
		s->count.errors[SERR_MERGE] += nsample_finish(s->ns, t_ns);
		s->count.errors[SERR_SYMBOLS] = nsample_symbol_errors(s->ns);
		s->count.errors[SERR_GAP] = nsample_gaps(s->ns);
	}
	return late;
}

void pausing_release(struct pausing *pz)
{
	pause_hint_free(&pz->hint);
	free(pz->skip);
	free(pz->keep);
}
