/* Tests for the PID namespace map (src/process/nsmap.c) over a fake proc
 * tree under /tmp: NSpid lines one, two and three namespaces deep, threads
 * that come and go (a namespace id reused by a new thread), status files
 * that lie or are garbage, and how little is read again. */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/nsmap.h"
#include "target.h"
#include "suite.h"

static char root[PATH_MAX];

static void make_dirs(pid_t pid, pid_t tid)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task/%d", root, pid, tid);
	mkdir(path, 0755);
}

/* A thread whose status says `nspid` (e.g. "1838\t1"), or any text. */
static void put_status(pid_t pid, pid_t tid, const char *body)
{
	char path[PATH_MAX + 64];
	FILE *f;

	make_dirs(pid, tid);
	snprintf(path, sizeof(path), "%s/%d/task/%d/status", root, pid, tid);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(body, f);
	fclose(f);
}

static void put_thread(pid_t pid, pid_t tid, const char *nspid)
{
	char body[512];

	snprintf(body, sizeof(body),
		 "Name:\tpython3\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\n"
		 "NStgid:\t%s\nNSpid:\t%s\nNSpgid:\t1\nThreads:\t3\n", pid, tid, nspid, nspid);
	put_status(pid, tid, body);
}

static void drop_thread(pid_t pid, pid_t tid)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%d/task/%d", root, pid, tid);
	rm_rf(path);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/check_nsmap.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	rm_rf(root);
}

/* The map of pid under root (NULL: /proc) opens, nested in another pid
 * namespace or not, and pid's id in its own namespace is ns_pid. */
static void open_map(struct nsmap *m, const char *dir, pid_t pid, bool nested, pid_t ns_pid)
{
	ck_assert_int_eq(nsmap_open(m, dir, pid), 0);
	ck_assert(m->nested == nested);
	ck_assert_int_eq(m->ns_pid, ns_pid);
}

/* Each namespace id ids[i][0] is host id ids[i][1] (0: no such thread). */
static void expect_host_tids(struct nsmap *m, const pid_t ids[][2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pid_t got = nsmap_host_tid(m, ids[i][0]);

		ck_assert_msg(got == ids[i][1], "id %d: %d, not %d", (int)ids[i][0], (int)got,
			      (int)ids[i][1]);
	}
}

/* The namespace ids of the process's threads are want[], in order. */
static void expect_ns_tids(struct nsmap *m, const pid_t *want, int n)
{
	pid_t *tids;

	ck_assert_int_eq(nsmap_ns_tids(m, &tids), n);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(tids[i], want[i]);
	free(tids);
}

START_TEST(test_parse)
{
	pid_t first = 0, last = 0;

	ck_assert_int_eq(nsmap_parse_status("Name:\tx\nNSpid:\t1838\t45\t1\nNSpgid:\t1\n",
					    &first, &last), 3);
	ck_assert_int_eq(first, 1838);
	ck_assert_int_eq(last, 1);
	ck_assert_int_eq(nsmap_parse_status("NSpid:\t77\n", &first, &last), 1);
	ck_assert_int_eq(first, 77);
	ck_assert_int_eq(last, 77);
	/* No line (an old kernel), an empty one, garbage, absurd ids. */
	ck_assert_int_eq(nsmap_parse_status("Name:\tx\nPid:\t5\n", &first, &last), 0);
	ck_assert_int_eq(nsmap_parse_status("NSpid:\n", &first, &last), 0);
	ck_assert_int_eq(nsmap_parse_status("NSpid:\t-3\t1\n", &first, &last), 0);
	ck_assert_int_eq(nsmap_parse_status("NSpid:\t99999999999\t1\n", &first, &last), 0);
	ck_assert_int_eq(nsmap_parse_status("XNSpid:\t5\n", &first, &last), 0);
}
END_TEST

/* A line of 1000 ids stops at the kernel's nesting limit. */
START_TEST(test_parse_bounded)
{
	char *text = malloc(1000 * 8 + 16);
	pid_t first, last;
	size_t len;

	strcpy(text, "NSpid:");
	len = strlen(text);
	for (int i = 1; i <= 1000; i++)
		len += sprintf(text + len, "\t%d", i);
	ck_assert_int_eq(nsmap_parse_status(text, &first, &last), 33);
	ck_assert_int_eq(first, 1);
	ck_assert_int_eq(last, 33);
	free(text);
}
END_TEST

/* A process in our own namespace: every id is itself, nothing read but
 * the process's own status. */
START_TEST(test_same_namespace)
{
	static const pid_t ids[][2] = { { 502, 502 }, { 12345, 12345 } };
	struct nsmap m;

	put_thread(500, 500, "500");
	put_thread(500, 502, "502");
	open_map(&m, root, 500, false, 500);
	expect_host_tids(&m, ids, sizeof(ids) / sizeof(*ids));
	ck_assert_uint_eq(m.status_reads, 1);
	expect_ns_tids(&m, (const pid_t[]){ 500, 502 }, 2);
	nsmap_free(&m);
}
END_TEST

START_TEST(test_one_level)
{
	static const pid_t ids[][2] = {
		{ 1, 1838 }, { 42, 1901 }, { 3, 1840 },
		{ 7, 0 },	/* not a thread of the process */
	};
	struct nsmap m;

	put_thread(1838, 1838, "1838\t1");
	put_thread(1838, 1840, "1840\t3");
	put_thread(1838, 1901, "1901\t42");
	open_map(&m, root, 1838, true, 1);
	expect_host_tids(&m, ids, sizeof(ids) / sizeof(*ids));
	expect_ns_tids(&m, (const pid_t[]){ 1, 3, 42 }, 3);
	nsmap_free(&m);
}
END_TEST

/* A container in a container: ours is the first id, the interpreter's the
 * last, whatever lies between. */
START_TEST(test_nested)
{
	static const pid_t ids[][2] = {
		{ 6, 905 }, { 1, 900 },
		{ 50, 0 },	/* the middle namespace's ids are not the interpreter's */
	};
	struct nsmap m;

	put_thread(900, 900, "900\t45\t1");
	put_thread(900, 905, "905\t50\t6");
	open_map(&m, root, 900, true, 1);
	expect_host_tids(&m, ids, sizeof(ids) / sizeof(*ids));
	nsmap_free(&m);
}
END_TEST

/* Threads come and go: a new one is found, a gone one is not, and a
 * namespace id given to a new thread maps to that thread, not to the
 * one that had it before. */
START_TEST(test_churn)
{
	struct nsmap m;
	unsigned long reads;

	put_thread(700, 700, "700\t1");
	put_thread(700, 701, "701\t2");
	ck_assert_int_eq(nsmap_open(&m, root, 700), 0);
	ck_assert_int_eq(nsmap_host_tid(&m, 2), 701);

	put_thread(700, 710, "710\t3");
	ck_assert_int_eq(nsmap_host_tid(&m, 3), 710);

	drop_thread(700, 701);
	put_thread(700, 720, "720\t2");
	ck_assert_int_eq(nsmap_host_tid(&m, 2), 720);

	drop_thread(700, 710);
	ck_assert_int_eq(nsmap_host_tid(&m, 3), 0);

	/* A known thread costs one status read; only new threads are read
	 * on a refresh. */
	reads = m.status_reads;
	ck_assert_int_eq(nsmap_host_tid(&m, 1), 700);
	ck_assert_uint_eq(m.status_reads, reads + 1);
	put_thread(700, 730, "730\t9");
	reads = m.status_reads;
	ck_assert_int_eq(nsmap_host_tid(&m, 9), 730);
	ck_assert_uint_eq(m.status_reads, reads + 1);
	nsmap_free(&m);
}
END_TEST

/* Status files that say something else than their place in the tree, or
 * nothing: such a thread is not mapped, the others are. */
START_TEST(test_lying_status)
{
	static const pid_t ids[][2] = { { 2, 0 }, { 5, 604 }, { 1, 600 } };
	struct nsmap m;

	put_thread(600, 600, "600\t1");
	put_thread(600, 601, "9999\t2");	/* not its own id */
	put_status(600, 602, "garbage\n");
	put_status(600, 603, "");
	put_thread(600, 604, "604\t5");
	ck_assert_int_eq(nsmap_open(&m, root, 600), 0);
	expect_host_tids(&m, ids, sizeof(ids) / sizeof(*ids));
	nsmap_free(&m);
}
END_TEST

/* The process's own status names another process: identity, as for a
 * process we cannot read at all. */
START_TEST(test_unreadable)
{
	struct nsmap m;

	ck_assert_int_eq(nsmap_open(&m, root, 4242), -1);
	ck_assert(!m.nested);
	ck_assert_int_eq(nsmap_host_tid(&m, 3), 3);
	nsmap_free(&m);

	put_thread(800, 800, "801\t1");
	ck_assert_int_eq(nsmap_open(&m, root, 800), 0);
	ck_assert(!m.nested);
	ck_assert_int_eq(nsmap_host_tid(&m, 1), 1);
	nsmap_free(&m);
}
END_TEST

/* The real thing: this process in /proc is in our namespace. */
START_TEST(test_real_self)
{
	struct nsmap m;

	open_map(&m, NULL, getpid(), false, getpid());
	nsmap_free(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nsmap");
	TCase *tc = tcase_create("nsmap");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_bounded);
	tcase_add_test(tc, test_same_namespace);
	tcase_add_test(tc, test_one_level);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_churn);
	tcase_add_test(tc, test_lying_status);
	tcase_add_test(tc, test_unreadable);
	tcase_add_test(tc, test_real_self);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
