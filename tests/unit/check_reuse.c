/* Tests for the reuse of a thread's unchanged outer frames between rounds
 * (python/framereuse.h) over synthetic interpreter memory, on every
 * layout: a frame keeps last round's profile frame only while its address,
 * code pointer and instruction offset are the same and the code cache
 * proves the code object at that address to be the same one.  Each way a
 * stack can change under an unchanged-looking address is made, and the
 * frames the test expects (names and lines from the code objects it built)
 * are checked against what the resolve gives.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fakepy.h"
#include "interp/layout.h"
#include "profile/profile.h"
#include "python/codecache.h"
#include "python/framereuse.h"
#include "python/pystack.h"
#include "process/mem.h"
#include "suite.h"

static const int outer_lines[] = { 1, 2, 3, 4 };
static const int mid_lines[] = { 10, 11, 12, 13 };
static const int inner_lines[] = { 20, 21, 22, 23 };

static const struct fp_code_spec specs[3] = {
	{ .name = "outer", .filename = "/app/a.py", .firstlineno = 1, .lines = outer_lines,
	  .ninstr = 4 },
	{ .name = "mid", .filename = "/app/b.py", .firstlineno = 10, .lines = mid_lines,
	  .ninstr = 4 },
	{ .name = "inner", .filename = "/app/c.py", .firstlineno = 20, .lines = inner_lines,
	  .ninstr = 4 },
};

struct rig {
	struct fp_now now;	/* a snapshot each round, kept by the code cache */
	struct fakepy *fp;
	const struct py_layout *L;
	struct profile p;
	struct code_cache *cc;
	struct frame_reuse fr;
	uint64_t code[3], frame[3];	/* outer, mid, inner */
	struct reuse_frame raw[16];
	uint32_t ids[16];
	uint32_t n;
};

static int gather(void *arg, uint64_t frame, const struct raw_frame *rf)
{
	struct rig *r = arg;

	ck_assert_uint_lt(r->n, 16);
	r->raw[r->n++] = (struct reuse_frame){ frame, rf->code, rf->lasti, 0, 0 };
	return 0;
}

static void rig_init(struct rig *r, int minor)
{
	memset(r, 0, sizeof(*r));
	r->L = layout_for_minor(minor);
	ck_assert_ptr_nonnull(r->L);
	r->fp = fp_new(r->L);
	for (int i = 0; i < 3; i++)
		r->code[i] = fp_code(r->fp, &specs[i]);
	r->frame[0] = fp_frame(r->fp, r->code[0], 1, 0);
	r->frame[1] = fp_frame(r->fp, r->code[1], 2, r->frame[0]);
	r->frame[2] = fp_frame(r->fp, r->code[2], 3, r->frame[1]);
	profile_init(&r->p, 100);
	fp_now_init(&r->now);
	r->cc = code_cache_new(&r->now.mem, r->L, &r->p, false);
}

static void rig_done(struct rig *r)
{
	frame_reuse_release(&r->fr);
	code_cache_free(r->cc);
	mem_close(&r->now.mem);
	profile_free(&r->p);
	fp_free(r->fp);
}

/* One round as the sampler takes it: the memory of now, walked, then
 * resolved.  Returns what frame_reuse_resolve() did. */
static int resolve_round(struct rig *r)
{
	int nf, rc;

	r->n = 0;
	fp_now_take(&r->now, r->fp);
	code_cache_round(r->cc);
	ck_assert_int_eq(pystack_walk(&r->now.mem, r->L, r->frame[2], 0, gather, r, &nf, &rc),
			 WALK_DONE);
	ck_assert_uint_eq(r->n, 3);
	return frame_reuse_resolve(&r->fr, r->cc, r->raw, r->n, r->ids);
}

/* A round that must succeed; returns how many frames were reused. */
static uint64_t round_(struct rig *r)
{
	uint64_t before = r->fr.reused;

	ck_assert_int_eq(resolve_round(r), 0);
	return r->fr.reused - before;
}

/* Frame i (0: innermost) is function name at line. */
static void expect(const struct rig *r, uint32_t i, const char *name, int line)
{
	const struct pframe *f;

	ck_assert_uint_lt(i, r->n);
	f = &r->p.frames[r->ids[i]];
	ck_assert_str_eq(f->name, name);
	ck_assert_int_eq(f->line, line);
}

static void expect_stack(const struct rig *r, const char *mid, int mid_line, int inner_line)
{
	ck_assert_uint_eq(r->n, 3);
	expect(r, 0, "inner", inner_line);
	expect(r, 1, mid, mid_line);
	expect(r, 2, "outer", 2);
}

START_TEST(test_unchanged_reused)
{
	struct rig r;

	rig_init(&r, _i);
	ck_assert_uint_eq(round_(&r), 0);
	expect_stack(&r, "mid", 12, 23);
	ck_assert_uint_eq(round_(&r), 3);
	expect_stack(&r, "mid", 12, 23);
	ck_assert_uint_eq(r.fr.decoded, 3);
	rig_done(&r);
}
END_TEST

/* The innermost frame moved on: only it is decoded again. */
START_TEST(test_lasti_changed)
{
	struct rig r;

	rig_init(&r, _i);
	round_(&r);
	fp_frame_set_code(r.fp, r.frame[2], r.code[2], 1);
	ck_assert_uint_eq(round_(&r), 2);
	expect_stack(&r, "mid", 12, 21);
	/* An outer frame moved (it returned and called again): it and every
	 * frame inside it are decoded. */
	fp_frame_set_code(r.fp, r.frame[1], r.code[1], 1);
	ck_assert_uint_eq(round_(&r), 1);
	expect_stack(&r, "mid", 11, 21);
	rig_done(&r);
}
END_TEST

/* Another code object at the same address (the old one freed, a new one
 * made there): the same frame address, code pointer and offset, but the
 * identity differs, so the frame is decoded anew, and so is every frame
 * inside it. */
START_TEST(test_code_identity_changed)
{
	struct rig r;
	uint32_t off;

	rig_init(&r, _i);
	round_(&r);
	off = r.L->code.qualname != NONE ? r.L->code.qualname : r.L->code.name;
	fp_w64(r.fp, r.code[1] + off, fp_str(r.fp, "reborn"));
	ck_assert_uint_eq(round_(&r), 1);
	expect_stack(&r, "reborn", 12, 23);
	/* And now that one is kept. */
	ck_assert_uint_eq(round_(&r), 3);
	expect_stack(&r, "reborn", 12, 23);
	rig_done(&r);
}
END_TEST

/* The middle frame replaced: a new frame (another address) with the same
 * code and offset, or the same address running another function. */
START_TEST(test_frame_replaced)
{
	struct rig r;
	uint64_t other;

	rig_init(&r, _i);
	round_(&r);
	other = fp_frame(r.fp, r.code[1], 2, r.frame[0]);
	fp_w64(r.fp, r.frame[2] + r.L->frame.back, other);
	ck_assert_uint_eq(round_(&r), 1);
	expect_stack(&r, "mid", 12, 23);
	ck_assert_uint_eq(r.raw[1].frame, other);
	fp_w64(r.fp, r.frame[2] + r.L->frame.back, r.frame[1]);
	fp_frame_set_code(r.fp, r.frame[1], r.code[2], 2);
	ck_assert_uint_eq(round_(&r), 1);
	expect_stack(&r, "inner", 22, 23);
	rig_done(&r);
}
END_TEST

/* A frame whose code pointer now leads to something that is not a code
 * object fails the resolve and leaves nothing to reuse. */
START_TEST(test_not_code)
{
	struct rig r;

	rig_init(&r, _i);
	round_(&r);
	fp_frame_set_code(r.fp, r.frame[1], fp_str(r.fp, "not code"), 2);
	ck_assert_int_lt(resolve_round(&r), 0);
	ck_assert_uint_eq(r.fr.n, 0);
	/* Back to the code object: decoded, not reused. */
	fp_frame_set_code(r.fp, r.frame[1], r.code[1], 2);
	ck_assert_uint_eq(round_(&r), 0);
	expect_stack(&r, "mid", 12, 23);
	rig_done(&r);
}
END_TEST

/* A frame pushed where another just returned, read between the writes of
 * its code and of its instruction pointer: the new code with a pointer
 * into the old one's bytecode.  The recheck does not hold the innermost
 * frame's pointer (it moves with every instruction), so the resolve must
 * refuse the pair, as a torn stack to be read again, rather than show the
 * function at no line (the old pointer past its code) or hide the frame
 * (a pointer before its code looked like a frame not started).  3.11+
 * only: before, a frame's lasti is an offset and its frame object its own. */
START_TEST(test_torn_pointer)
{
	struct rig r;
	uint64_t first[3];

	rig_init(&r, _i);
	if (r.L->lasti != LASTI_PTR) {
		ck_assert_uint_eq(round_(&r), 0);
		rig_done(&r);
		return;
	}
	for (int i = 0; i < 3; i++)
		first[i] = r.code[i] + r.L->code.code_adaptive;
	round_(&r);
	/* The inner frame's code is mid's, its pointer still in inner's
	 * code: past mid's end if inner lies above, else before its start. */
	fp_w64(r.fp, r.frame[2] + r.L->frame.code, r.code[1]);
	fp_w64(r.fp, r.frame[2] + r.L->frame.lasti, first[2] + 2);
	ck_assert_int_eq(resolve_round(&r), -ERANGE);
	ck_assert_uint_eq(r.fr.n, 0);
	fp_w64(r.fp, r.frame[2] + r.L->frame.code, r.code[2]);
	fp_w64(r.fp, r.frame[2] + r.L->frame.lasti, first[1] + 2);
	ck_assert_int_eq(resolve_round(&r), -ERANGE);
	/* One past the last instruction, and well before the first. */
	fp_w64(r.fp, r.frame[2] + r.L->frame.lasti, first[2] + 2 * 4);
	ck_assert_int_eq(resolve_round(&r), -ERANGE);
	fp_w64(r.fp, r.frame[2] + r.L->frame.lasti, first[2] - 4);
	ck_assert_int_eq(resolve_round(&r), -ERANGE);
	/* Its own last instruction is fine. */
	fp_w64(r.fp, r.frame[2] + r.L->frame.lasti, first[2] + 2 * 3);
	ck_assert_int_eq(resolve_round(&r), 0);
	expect_stack(&r, "mid", 12, 23);
	rig_done(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reuse");
	TCase *tc = tcase_create("reuse");
	const int lo = LAYOUT_MIN_MINOR, hi = LAYOUT_MAX_MINOR + 1;

	tcase_add_loop_test(tc, test_unchanged_reused, lo, hi);
	tcase_add_loop_test(tc, test_lasti_changed, lo, hi);
	tcase_add_loop_test(tc, test_code_identity_changed, lo, hi);
	tcase_add_loop_test(tc, test_frame_replaced, lo, hi);
	tcase_add_loop_test(tc, test_not_code, lo, hi);
	tcase_add_loop_test(tc, test_torn_pointer, lo, hi);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
