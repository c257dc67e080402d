/* What a recording lost, by thread and by why: see loss.h. */
#include "profile/loss.h"
#include "util/escape.h"
#include "util/util.h"

#include <string.h>

static const struct {
	const char *what;	/* what became of the samples */
	const char *why;	/* in the summary's lines */
	const char *brief;	/* in a file's note, which a title must hold */
} kinds[PLOSS_COUNT] = {
	[PLOSS_TORN] = { "lost", "torn stack: it changed while it was read, and at each re-read",
			 "torn stack" },
	[PLOSS_LATE] = { "without native frames", "not stopped in time under --native, or "
			 "stopped where its stack could not be read: read running, under "
			 PLOSS_LATE_FRAME, "not stopped in time" },
	[PLOSS_MERGE] = { "with Python frames only", "the native stack did not fit",
			  "merge error" },
	[PLOSS_GONE] = { "lost", "the thread ended while it was read", "thread ended" },
};

/* Lost outright, or counted without part of the stack? */
static bool counted(enum ploss why)
{
	return why != PLOSS_TORN && why != PLOSS_GONE;
}

void profile_lose(struct profile *p, uint32_t thread, enum ploss why)
{
	if (thread < p->nthreads && why < PLOSS_COUNT)
		p->threads[thread].loss[why]++;
}

uint64_t profile_lost(const struct profile *p, enum ploss why)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->nthreads; i++)
		n += p->threads[i].loss[why];
	return n;
}

uint64_t profile_thread_due(const struct pthread_info *t)
{
	uint64_t n = t->samples;

	for (int k = 0; k < PLOSS_COUNT; k++)
		if (!counted(k))
			n += t->loss[k];
	return n;
}

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * n / of : 0;
}

/* Rounds lost whole: why, in the words of both. */
#define ROUNDS_WHY "the interpreter state unreadable, or the threads not paused"

bool profile_loss_note(const struct profile *p, struct strbuf *sb)
{
	uint64_t due = 0;
	const char *sep = "";

	if (p->rounds_lost) {
		sb_printf(sb, "%.1f%% of rounds lost whole (%llu: " ROUNDS_WHY ")",
			  pct(p->rounds_lost, p->rounds_due), (unsigned long long)p->rounds_lost);
		sep = "; ";
	}

	for (uint32_t i = 0; i < p->nthreads; i++)
		due += profile_thread_due(&p->threads[i]);
	for (int k = 0; k < PLOSS_COUNT; k++) {
		uint64_t n = profile_lost(p, k);

		if (!n)
			continue;
		sb_printf(sb, "%s%.1f%% of samples %s (%s: %llu)", sep, pct(n, due), kinds[k].what,
			  kinds[k].brief, (unsigned long long)n);
		sep = "; ";
	}
	return *sep;
}

/* 'thread 1234 "worker"' (of process 12 when not the profile's). */
static void put_thread(struct strbuf *sb, const struct profile *p, const struct pthread_info *t)
{
	sb_printf(sb, "thread %d", (int)t->tid);
	if (t->pid != p->pid)
		sb_printf(sb, " of process %d", (int)t->pid);
	if (t->name) {
		sb_puts(sb, " \"");
		sb_add_escaped(sb, t->name, strlen(t->name), ESC_TEXT);
		sb_putc(sb, '"');
	}
}

/* The line of thread t, if it lost enough to tell. */
static bool thread_line(const struct profile *p, const struct pthread_info *t, double min_pct,
			struct strbuf *sb)
{
	uint64_t due = profile_thread_due(t);
	double lost = 0, part = 0;
	const char *sep = ": ";

	for (int k = 0; k < PLOSS_COUNT; k++) {
		double share = pct(t->loss[k], due);

		if (share <= min_pct)
			continue;
		if (*sep == ':')
			put_thread(sb, p, t);
		sb_printf(sb, "%s%.1f%% of its samples %s (%s)", sep, share, kinds[k].what,
			  kinds[k].why);
		sep = ", ";
		*(counted(k) ? &part : &lost) += share;
	}
	if (*sep == ':')
		return false;
	if (lost && part)
		sb_printf(sb, ": its share is understated by up to %.1f%%, the native functions "
			  "under it by up to %.1f%%", lost, part);
	else if (lost)
		sb_printf(sb, ": its share is understated by up to %.1f%%", lost);
	else
		sb_printf(sb, ": its share is right; the native functions under it are "
			  "understated by up to %.1f%%", part);
	sb_putc(sb, '\n');
	return true;
}

int profile_loss_lines(const struct profile *p, double min_pct, struct strbuf *sb)
{
	double rounds = pct(p->rounds_lost, p->rounds_due);
	int n = 0;

	if (rounds > min_pct) {
		sb_printf(sb, "%.1f%% of rounds lost whole (" ROUNDS_WHY "): every thread lost "
			  "them alike; the shares are right, the counts short by that much\n",
			  rounds);
		n++;
	}

	for (uint32_t i = 0; i < p->nthreads; i++)
		n += thread_line(p, &p->threads[i], min_pct, sb);
	return n;
}
