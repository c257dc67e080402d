/* Tests for src/profile/loss.c: what a recording lost, by thread, in the
 * words record's summary and every file's metadata use (the lines for
 * threads above PLOSS_TELL_PCT, the note), from counts made by hand: no
 * target needed. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "profile/loss.h"
#include "profile/profile.h"
#include "util/util.h"
#include "suite.h"

/* n samples of thread t with a one-frame stack. */
static void add_samples(struct profile *p, uint32_t t, uint32_t frame, int n)
{
	for (int i = 0; i < n; i++)
		profile_add(p, t, &frame, 1, (uint64_t)i * 10000000ull, 1);
}

static void lose(struct profile *p, uint32_t t, enum ploss why, int n)
{
	for (int i = 0; i < n; i++)
		profile_lose(p, t, why);
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static uint32_t a_frame(struct profile *p)
{
	return profile_frame(p, &(struct pframe){ PF_PYTHON, "work", "app.py", 1, 1 });
}

/* A thread that lost 8 of its 100 samples due is understated by up to 8%;
 * one with 40 of its 100 counted without native frames keeps its share;
 * one that lost 1 in 100 (not above 1%) has no line. */
START_TEST(test_loss_lines)
{
	struct profile p;
	struct strbuf sb = STRBUF_INIT;
	uint32_t f, a, b, c;

	profile_init(&p, 100);
	p.pid = 10;
	f = a_frame(&p);
	a = profile_thread(&p, 10, 11, "torn\x1b");
	b = profile_thread(&p, 10, 12, "late");
	c = profile_thread(&p, 13, 14, NULL);
	add_samples(&p, a, f, 92);
	lose(&p, a, PLOSS_TORN, 8);
	add_samples(&p, b, f, 100);
	lose(&p, b, PLOSS_LATE, 40);
	add_samples(&p, c, f, 99);
	lose(&p, c, PLOSS_TORN, 1);
	ck_assert_uint_eq(profile_thread_due(&p.threads[a]), 100);
	ck_assert_uint_eq(profile_thread_due(&p.threads[b]), 100);
	ck_assert_uint_eq(profile_lost(&p, PLOSS_TORN), 9);

	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 2);
	/* The target's name escaped, as everything of the target's. */
	ck_assert_msg(strstr(sb.buf, "thread 11 \"torn\\x1b\": 8.0% of its samples lost (torn "
			     "stack") && strstr(sb.buf, "its share is understated by up to 8.0%\n"),
		      "%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, "thread 12 \"late\": 40.0% of its samples without native "
			     "frames (not stopped in time under --native") &&
		      strstr(sb.buf, "its share is right; the native functions under it are "
			     "understated by up to 40.0%\n"), "%s", sb.buf);
	ck_assert_msg(!strstr(sb.buf, "thread 14"), "%s", sb.buf);
	ck_assert_msg(!strstr(sb.buf, "rounds"), "%s", sb.buf);
	sb_release(&sb);

	/* Over every thread: 9 lost of 300 due, 40 without native frames. */
	ck_assert(profile_loss_note(&p, &sb));
	ck_assert_str_eq(sb.buf, "3.0% of samples lost (torn stack: 9); 13.3% of samples "
			 "without native frames (not stopped in time: 40)");
	sb_release(&sb);

	/* Rounds lost whole come first, in both: 3 of 103 (2.9%). */
	p.rounds_due = 103;
	p.rounds_lost = 3;
	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 3);
	ck_assert_msg(starts(sb.buf, "2.9% of rounds lost whole (the interpreter state "
			     "unreadable, or the threads not paused): every thread lost them "
			     "alike; the shares are right, the counts short by that much\nthread 11 "),
		      "%s", sb.buf);
	sb_release(&sb);
	ck_assert(profile_loss_note(&p, &sb));
	ck_assert_msg(starts(sb.buf, "2.9% of rounds lost whole (3: the interpreter state "
			     "unreadable, or the threads not paused); 3.0% of samples lost"),
		      "%s", sb.buf);
	sb_release(&sb);
	p.rounds_lost = 1;
	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 2);
	sb_release(&sb);
	p.rounds_lost = 0;

	/* A thread of another process says whose; two kinds, one line. */
	lose(&p, c, PLOSS_TORN, 5);
	lose(&p, c, PLOSS_MERGE, 5);
	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 3);
	ck_assert_msg(strstr(sb.buf, "thread 14 of process 13: 5.7% of its samples lost (torn "),
		      "%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, ", 4.8% of its samples with Python frames only (the native "
			     "stack did not fit): its share is understated by up to 5.7%, the "
			     "native functions under it by up to 4.8%\n"), "%s", sb.buf);
	sb_release(&sb);
	profile_free(&p);
}
END_TEST

/* Nothing lost: no note and no line (record then says "no errors"). */
START_TEST(test_loss_none)
{
	struct profile p;
	struct strbuf sb = STRBUF_INIT;
	uint32_t f, t;

	profile_init(&p, 100);
	f = a_frame(&p);
	t = profile_thread(&p, 10, 11, "main");
	add_samples(&p, t, f, 50);
	ck_assert_uint_eq(p.threads[t].samples, 50);
	ck_assert(!profile_loss_note(&p, &sb));
	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 0);
	ck_assert_uint_eq(sb.len, 0);
	/* Exactly 1% (one of 100 counted, without native frames): not above it. */
	lose(&p, t, PLOSS_LATE, 1);
	add_samples(&p, t, f, 50);
	ck_assert_int_eq(profile_loss_lines(&p, PLOSS_TELL_PCT, &sb), 0);
	ck_assert(profile_loss_note(&p, &sb));
	sb_release(&sb);
	profile_free(&p);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "losses", .tests = { test_loss_lines, test_loss_none } },
	};

	return run_groups("loss", groups, ARRAY_SIZE(groups), 0, 1);
}
