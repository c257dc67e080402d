/* Tests for what --blocking does with a thread its pause held where the
 * thread's stack could not be read (sample/sample_stack.c's walk_failed()),
 * over synthetic interpreter memory, on every layout.
 *
 * The pause can stop a thread between two of the interpreter's stores:
 * here its innermost frame is linked in as the thread's current frame, but
 * the frame's own link to its caller is not written yet (it points at
 * nothing mapped), so the walk fails.  Such a sample used to be dropped
 * and counted as a torn stack, under-counting the threads whose stacks
 * change fastest, exactly what issue 39 forbids in every mode.  It must
 * be read again once the pause is over, with the thread running, as a
 * late thread is (sample_pause.c's record_late(), sampler.c's
 * count_late()): by then the thread has moved on and its stack reads
 * whole.  Without --native nothing is lost; with --native the sample lacks
 * its native frames and says so, as a late thread's does (PLOSS_LATE, its
 * leaf frame PLOSS_LATE_FRAME).  Only when the stack will not read whole
 * while it runs either is the sample lost, and then counted once, as a
 * torn stack, and no late sample; and the round ends.
 *
 * The sampler is made by hand around the fake memory (as check_sthreads
 * does): one thread, its tid 0 so that no stop of it is ever tried (this
 * process's own threads must not be stopped); a stack that stays torn
 * then ends as one whose thread cannot be stopped does, lost.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "process/mem.h"
#include "profile/loss.h"
#include "profile/profile.h"
#include "python/codecache.h"
#include "python/pystack.h"
#include "sample/sampler_int.h"
#include "suite.h"
#include "util/util.h"

static const int outer_lines[] = { 1, 2, 3, 4 };
static const int inner_lines[] = { 20, 21, 22, 23 };

static const struct fp_code_spec specs[2] = {
	{ .name = "outer", .filename = "/app/a.py", .firstlineno = 1, .lines = outer_lines,
	  .ninstr = 4 },
	{ .name = "inner", .filename = "/app/c.py", .firstlineno = 20, .lines = inner_lines,
	  .ninstr = 4 },
};

struct rig {
	struct sampler *s;
	struct profile p;
	struct fakepy *fp;
	struct fp_now now;	/* the sampler's direct reader */
	uint64_t frame[2];	/* outer, inner */
	struct sthread *t;
	int n;			/* thread states listed */
	char ns_stand_in;	/* what s->ns points at with --native */
};

/* The interpreter, the thread, its two frames with the inner one half
 * pushed (its back link unmapped), and a sampler of it with --blocking
 * (and --native: s->ns set, which no path taken here reads through). */
static void rig_init(struct rig *r, int minor, bool native)
{
	const struct py_layout *L = layout_for_minor(minor);
	uint64_t code[2], gil;
	char err[256];

	ck_assert_ptr_nonnull(L);
	memset(r, 0, sizeof(*r));
	r->fp = fp_new(L);
	for (int i = 0; i < 2; i++)
		code[i] = fp_code(r->fp, &specs[i]);
	r->frame[0] = fp_frame(r->fp, code[0], 1, 0);
	r->frame[1] = fp_frame(r->fp, code[1], 3, FP_UNMAPPED);
	fp_thread(r->fp, r->frame[1], 0x1000, 4242);
	fp_now_init(&r->now);
	fp_now_take(&r->now, r->fp);
	profile_init(&r->p, 100);
	r->s = xcalloc(1, sizeof(*r->s));
	r->s->pid = getpid();
	r->s->o.blocking = true;
	r->s->o.native = native;
	r->s->p = &r->p;
	r->s->direct = &r->now.mem;
	r->s->m = mem_cache_new(r->s->direct);
	r->s->walk.m = r->s->m;
	fp_pyinterp(r->fp, &r->s->pi);
	recheck_reset(&r->s->held.rc);
	r->s->cc = code_cache_new(r->s->m, &r->s->pi.layout, &r->p, false);
	r->s->truncated_marker = profile_frame(&r->p, &(struct pframe){ PF_MARKER, "<truncated>",
									 NULL, -1, -1 });
	r->s->late_marker = profile_frame(&r->p, &(struct pframe){ PF_MARKER, PLOSS_LATE_FRAME,
								   NULL, -1, -1 });
	r->s->proc_root = NO_FRAME;
	if (native)
		r->s->ns = (struct nsample *)&r->ns_stand_in;
	r->n = pystack_tstates(r->s->m, &r->s->pi, r->s->ts, MAX_THREADS, &gil, err, sizeof(err));
	ck_assert_msg(r->n == 1, "3.%d: %d thread states listed: %s", minor, r->n, err);
	r->s->threads.v = xcalloc(1, sizeof(*r->s->threads.v));
	r->s->threads.n = 1;
	r->s->threads.cap = 1;
	r->t = &r->s->threads.v[0];
	r->t->ident = r->s->ts[0].ident;
	r->t->stat_fd = -1;
	r->t->sched_fd = -1;
	r->t->state = 'R';
	r->t->pthread = profile_thread(&r->p, getpid(), 4242, "worker");
	r->s->ts_thread[0] = 0;
}

static void rig_done(struct rig *r)
{
	r->s->ns = NULL;
	r->s->direct = NULL;	/* the rig's own: closed below */
	sampler_close(r->s);
	mem_close(&r->now.mem);
	profile_free(&r->p);
	fp_free(r->fp);
}

/* The round: the thread read under the pause, then (the pause over) the
 * late ones read running, proved and counted.  moved: the thread has
 * written its frame's link by then. */
static void round_(struct rig *r, bool moved)
{
	mem_cache_reset(r->s->m);
	code_cache_round(r->s->cc);
	r->s->round_ns = mono_ns();
	ck_assert(!record_thread(r->s, r->t, &r->s->ts[0], 1000));
	ck_assert_msg(r->t->late, "a thread held where its stack could not be read must be "
		      "read again once the pause is over");
	ck_assert_uint_eq(r->s->count.errors[SERR_TORN], 0);
	ck_assert_uint_eq(r->p.threads[r->t->pthread].loss[PLOSS_TORN], 0);
	ck_assert_uint_eq(r->p.threads[r->t->pthread].samples, 0);
	if (moved) {
		fp_w64(r->fp, r->frame[1] + r->fp->L->frame.back, r->frame[0]);
		fp_now_take(&r->now, r->fp);
	}
	ck_assert(record_late(r->s, r->n, 1000));
	count_late(r->s, 1000);
	ck_assert(!r->t->late);
}

/* Frame i of the thread's only stack, from its root. */
static const struct pframe *frame_at(const struct rig *r, uint32_t i)
{
	const struct pstack *st = NULL;

	for (uint32_t k = 0; k < r->p.nstacks; k++)
		if (r->p.stacks[k].count)
			st = &r->p.stacks[k];
	ck_assert_ptr_nonnull(st);
	ck_assert_uint_gt(st->depth, i);
	return &r->p.frames[st->frames[i]];
}

/* Read again once the pause is over, the thread moved on: counted whole.
 * Without --native nothing is lost; with it the sample lacks its native
 * frames, under the late leaf, a late-thread loss of its thread's. */
START_TEST(test_reread)
{
	for (int native = 0; native < 2; native++) {
		struct rig r;
		const struct pthread_info *pt;

		rig_init(&r, _i, native);
		round_(&r, true);
		pt = &r.p.threads[r.t->pthread];
		ck_assert_uint_eq(pt->samples, 1);
		for (int k = 0; k < PLOSS_COUNT; k++)
			ck_assert_uint_eq(pt->loss[k], native && k == PLOSS_LATE);
		ck_assert_uint_eq(r.s->count.errors[SERR_TORN], 0);
		ck_assert_uint_eq(r.s->count.late, native);
		ck_assert_str_eq(frame_at(&r, 0)->name, "outer");
		ck_assert_str_eq(frame_at(&r, 1)->name, "inner");
		ck_assert_int_eq(frame_at(&r, 1)->line, 23);
		if (native)
			ck_assert_str_eq(frame_at(&r, 2)->name, PLOSS_LATE_FRAME);
		rig_done(&r);
	}
}
END_TEST

/* A stack that will not read whole while the thread runs either is torn:
 * re-read as any is, then lost and counted once, as a torn stack, and no
 * late sample; the round ends, and the next reads the thread afresh. */
START_TEST(test_stays_torn)
{
	for (int native = 0; native < 2; native++) {
		struct rig r;

		rig_init(&r, _i, native);
		round_(&r, false);
		ck_assert_uint_eq(r.p.threads[r.t->pthread].samples, 0);
		ck_assert_uint_eq(r.p.threads[r.t->pthread].loss[PLOSS_TORN], 1);
		ck_assert_uint_eq(r.p.threads[r.t->pthread].loss[PLOSS_LATE], 0);
		ck_assert_uint_eq(r.p.threads[r.t->pthread].loss[PLOSS_GONE], 0);
		ck_assert_uint_eq(r.s->count.errors[SERR_TORN], 1);
		ck_assert_uint_eq(r.s->count.late, 0);
		/* The next round: held where it reads whole, counted at once
		 * (with --native, left to the native capture: not here). */
		if (!native) {
			fp_w64(r.fp, r.frame[1] + r.fp->L->frame.back, r.frame[0]);
			fp_now_take(&r.now, r.fp);
			mem_cache_reset(r.s->m);
			ck_assert(!record_thread(r.s, r.t, &r.s->ts[0], 2000));
			ck_assert(!r.t->late);
			ck_assert_uint_eq(r.p.threads[r.t->pthread].samples, 1);
		}
		rig_done(&r);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("late");
	TCase *tc = tcase_create("late");
	const int lo = LAYOUT_MIN_MINOR, hi = LAYOUT_MAX_MINOR + 1;

	tcase_add_loop_test(tc, test_reread, lo, hi);
	tcase_add_loop_test(tc, test_stays_torn, lo, hi);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
