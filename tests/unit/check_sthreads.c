/* Tests for the sampler's thread table (sample/sthreads.c): how a thread
 * state is tied to an OS thread before 3.11, where the thread state holds
 * only its pthread_t (ident) and the OS id is read from the C library's
 * thread descriptor at that address.  The descriptor is synthetic memory;
 * the OS threads are this test's own, so that /proc says which exist.
 *
 * The kernel clears a descriptor's id when its thread exits: a thread
 * state listed just before its thread ended reads as id 0.  A sampler
 * that made an entry for it put its stack under "thread 0" (seen once in
 * check_chaos's relay on 3.10, reading without a pause); and the same
 * zero made the search for the id's offset fail for good on a process
 * whose threads come and go, so that every stack went under "thread 0"
 * (check_chaos's churn on 3.8).
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interp/layout.h"
#include "process/mem.h"
#include "profile/profile.h"
#include "python/pystack.h"
#include "sample/sampler_int.h"
#include "suite.h"

#define IDENT 0x7f0000001000ull	/* a pthread_t: the descriptor's address */
#define TID_OFFSET 0x2d0	/* where glibc keeps the id in it */

struct rig {
	struct sampler s;
	struct profile p;
};

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	profile_init(&r->p, 100);
	r->s.p = &r->p;
	r->s.pid = getpid();
	r->s.threads.tid_offset = TID_OFFSET;
	/* Before 3.11: no native id in the thread state. */
	r->s.pi.layout.tstate.native_thread_id = NONE;
	r->s.o.blocking = false;
}

/* The descriptor at IDENT says tid (0: its thread has exited). */
static void rig_descriptor(struct rig *r, int32_t tid)
{
	if (r->s.m)
		mem_close(r->s.m);
	r->s.m = mem_fake_new();
	ck_assert_int_eq(mem_fake_add(r->s.m, IDENT + TID_OFFSET, &tid, sizeof(tid)), 0);
}

static void rig_free(struct rig *r)
{
	for (int i = 0; i < r->s.threads.n; i++)
		sthread_release(&r->s.threads.v[i]);
	free(r->s.threads.v);
	if (r->s.m)
		mem_close(r->s.m);
	profile_free(&r->p);
}

static struct sthread *find(struct rig *r)
{
	struct py_tstate ts = { .addr = 0x1000, .ident = IDENT, .nparts = 1 };

	return find_thread(&r->s, &ts, 1);
}

static void *quick(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	return NULL;
}

/* The OS id of a thread of ours that has come and gone. */
static pid_t ended_tid(void)
{
	pthread_t th;
	pid_t tid = 0;

	ck_assert_int_eq(pthread_create(&th, NULL, quick, &tid), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_gt(tid, 0);
	return tid;
}

static const char *root_name(struct rig *r, const struct sthread *t)
{
	return r->p.frames[t->root].name;
}

START_TEST(test_new_thread_named_by_its_id)
{
	struct rig r;
	pid_t me = (pid_t)syscall(SYS_gettid);
	char want[32];
	struct sthread *t;

	rig_init(&r);
	rig_descriptor(&r, me);
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->tid, me);
	/* What a stack read without a pause must still find there. */
	ck_assert_int_eq(t->desc_tid, me);
	snprintf(want, sizeof(want), "thread %d", (int)me);
	ck_assert_str_eq(root_name(&r, t), want);
	ck_assert_ptr_eq(find(&r), t);
	ck_assert_int_eq(r.s.threads.n, 1);
	rig_free(&r);
}
END_TEST

/* Listed, then ended before its descriptor was read: whose stack it is
 * cannot be said.  Its entry is unproven (not counted, never under
 * "thread 0"), and gone with it; found so again a round later, it is a
 * running thread whose descriptor reads 0, and counts. */
START_TEST(test_zero_id_unproven)
{
	struct rig r;
	struct sthread *t;

	rig_init(&r);
	rig_descriptor(&r, 0);
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	ck_assert(t->id_unproven);
	ck_assert_int_eq(t->tid, 0);
	ck_assert_ptr_eq(find(&r), t);
	ck_assert(!t->id_unproven);
	ck_assert_int_eq(r.s.threads.n, 1);
	rig_free(&r);
}
END_TEST

/* Known from an earlier round and still there, its id unreadable for a
 * moment: the entry is its own. */
START_TEST(test_known_live_thread_kept)
{
	struct rig r;
	struct sthread *t;

	rig_init(&r);
	rig_descriptor(&r, (pid_t)syscall(SYS_gettid));
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	rig_descriptor(&r, 0);
	ck_assert_ptr_eq(find(&r), t);
	ck_assert_int_eq(t->desc_tid, 0);
	ck_assert_int_eq(r.s.threads.n, 1);
	rig_free(&r);
}
END_TEST

/* Known from an earlier round, ended since: its pthread_t may already be
 * another thread's, so the entry is not taken for this thread state. */
START_TEST(test_known_ended_thread_not_matched)
{
	struct rig r;
	struct sthread *t;
	pid_t gone = ended_tid();

	rig_init(&r);
	rig_descriptor(&r, gone);
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	rig_descriptor(&r, 0);
	t = find(&r);
	ck_assert(t->id_unproven);
	ck_assert_int_eq(r.s.threads.n, 2);
	rig_free(&r);
}
END_TEST

/* The same pthread_t handed to a new thread: a new entry, under the new
 * thread's own id. */
START_TEST(test_reused_ident_new_entry)
{
	struct rig r;
	pid_t gone = ended_tid(), me = (pid_t)syscall(SYS_gettid);
	struct sthread *t;

	rig_init(&r);
	rig_descriptor(&r, gone);
	ck_assert_ptr_nonnull(find(&r));
	rig_descriptor(&r, me);
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->tid, me);
	ck_assert_int_eq(r.s.threads.n, 2);
	rig_free(&r);
}
END_TEST

/* --- where the id is in the descriptor ------------------------------------ */

#define NDESC 4
static const uint64_t desc_at[NDESC] = { 0x10000, 0x20000, 0x30000, 0x40000 };
static const pid_t live[] = { 100, 101, 102, 103, 104 };

/* Descriptors at desc_at[i] with ids[i] at off (and noise elsewhere: the
 * search must not take a field that merely holds a small number). */
static struct mem *descriptors(const pid_t *ids, int n, unsigned off, bool readable_last)
{
	struct mem *m = mem_fake_new();

	for (int i = 0; i < n; i++) {
		uint8_t block[1024];

		if (i == n - 1 && !readable_last)
			break;
		memset(block, 0, sizeof(block));
		for (unsigned k = 0; k + 4 <= sizeof(block); k += 64)
			memcpy(block + k, &(int32_t){ 7 }, 4);
		memcpy(block + off, &ids[i], sizeof(ids[i]));
		ck_assert_int_eq(mem_fake_add(m, desc_at[i], block, sizeof(block)), 0);
	}
	return m;
}

static int offset_of(const pid_t *ids, int n, unsigned off, bool readable_last,
		     const uint64_t *idents)
{
	struct mem *m = descriptors(ids, n, off, readable_last);
	int got = pystack_tid_offset(m, idents ? idents : desc_at, n, live, 5);

	mem_close(m);
	return got;
}

START_TEST(test_offset_all_live)
{
	const pid_t ids[NDESC] = { 100, 101, 102, 103 };

	ck_assert_int_eq(offset_of(ids, NDESC, TID_OFFSET, true, NULL), TID_OFFSET);
	ck_assert_int_eq(offset_of(ids, NDESC, 0xd4, true, NULL), 0xd4);
}
END_TEST

/* A thread listed, then ended: its id reads 0, or its stack is gone. */
START_TEST(test_offset_one_ended)
{
	const pid_t ids[NDESC] = { 100, 0, 102, 103 };
	const pid_t last_gone[NDESC] = { 100, 101, 102, 0 };

	ck_assert_int_eq(offset_of(ids, NDESC, TID_OFFSET, true, NULL), TID_OFFSET);
	ck_assert_int_eq(offset_of(ids, NDESC, 0xd4, true, NULL), 0xd4);
	ck_assert_int_eq(offset_of(last_gone, NDESC, TID_OFFSET, false, NULL), TID_OFFSET);
}
END_TEST

/* A thread started after the process's threads were listed: an id the
 * list does not have. */
START_TEST(test_offset_one_new)
{
	const pid_t ids[NDESC] = { 100, 101, 102, 555 };

	ck_assert_int_eq(offset_of(ids, NDESC, TID_OFFSET, true, NULL), TID_OFFSET);
	ck_assert_int_eq(offset_of(ids, NDESC, 0xd4, true, NULL), 0xd4);
}
END_TEST

/* An ended thread's state still listed beside the new thread its pthread_t
 * went to: one descriptor, read twice. */
START_TEST(test_offset_ident_listed_twice)
{
	const pid_t ids[NDESC] = { 100, 101, 102, 103 };
	const uint64_t idents[NDESC] = { desc_at[0], desc_at[1], desc_at[1], desc_at[3] };

	ck_assert_int_eq(offset_of(ids, NDESC, TID_OFFSET, true, idents), TID_OFFSET);
}
END_TEST

START_TEST(test_offset_how_many_show)
{
	const pid_t zeros[NDESC] = { 0, 0, 0, 0 };
	const pid_t mostly_zeros[NDESC] = { 0, 0, 0, 101 };
	const pid_t strangers[NDESC] = { 100, 900, 901, 902 };
	const pid_t twice[NDESC] = { 100, 101, 101, 103 };

	ck_assert_int_eq(offset_of(zeros, NDESC, TID_OFFSET, true, NULL), -1);
	/* glibc's offset needs one thread showing its id; another, most. */
	ck_assert_int_eq(offset_of(mostly_zeros, NDESC, TID_OFFSET, true, NULL), TID_OFFSET);
	ck_assert_int_eq(offset_of(mostly_zeros, NDESC, 0xd4, true, NULL), -1);
	ck_assert_int_eq(offset_of(strangers, NDESC, 0xd4, true, NULL), -1);
	ck_assert_int_eq(offset_of(twice, NDESC, TID_OFFSET, true, NULL), -1);
}
END_TEST

/* No offset found by the first searches (a list read while threads came
 * and went can be too short to tell): the entry is unproven, not counted
 * under no OS thread; the search is repeated. */
START_TEST(test_offset_unknown_for_now)
{
	struct rig r;

	rig_init(&r);
	r.s.threads.tid_offset = -1;
	r.s.threads.tid_offset_retry = 100;
	r.s.threads.tid_offset_tries = 1;
	rig_descriptor(&r, (pid_t)syscall(SYS_gettid));
	ck_assert(find(&r)->id_unproven);
	ck_assert_int_eq(r.s.threads.n, 1);
	rig_free(&r);
}
END_TEST

/* No offset found after many searches (a C library whose layout is not
 * known): threads are told apart by ident alone, and their stacks still
 * counted; the offset is looked for again later. */
START_TEST(test_offset_unknown_ident_alone)
{
	struct rig r;
	struct sthread *t;
	pid_t me = (pid_t)syscall(SYS_gettid);

	rig_init(&r);
	r.s.threads.tid_offset = -1;
	r.s.threads.tid_offset_retry = 100;
	r.s.threads.tid_offset_tries = 100;
	rig_descriptor(&r, me);
	t = find(&r);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->tid, 0);
	ck_assert_ptr_eq(find(&r), t);
	ck_assert_int_eq(r.s.threads.n, 1);
	rig_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sthreads");
	TCase *tc = tcase_create("sthreads");

	tcase_add_test(tc, test_new_thread_named_by_its_id);
	tcase_add_test(tc, test_zero_id_unproven);
	tcase_add_test(tc, test_known_live_thread_kept);
	tcase_add_test(tc, test_known_ended_thread_not_matched);
	tcase_add_test(tc, test_reused_ident_new_entry);
	tcase_add_test(tc, test_offset_all_live);
	tcase_add_test(tc, test_offset_one_ended);
	tcase_add_test(tc, test_offset_one_new);
	tcase_add_test(tc, test_offset_ident_listed_twice);
	tcase_add_test(tc, test_offset_how_many_show);
	tcase_add_test(tc, test_offset_unknown_for_now);
	tcase_add_test(tc, test_offset_unknown_ident_alone);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
