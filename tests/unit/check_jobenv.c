/* Tests for a process's job and rank read from its environment
 * (src/process/jobenv.c): synthetic environment blocks as the kernel
 * hands them out (NAME=VALUE, NUL between), torchrun's rank over Slurm's,
 * values that are not what a launcher writes, no job at all, a block
 * without its last NUL, binary junk; the names of a step daemon and a
 * slurmd's -N, which place a process whose environment is silent; and the
 * environment read from a child's /proc/PID/environ larger than the
 * reader's block.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/jobenv.h"
#include "suite.h"

/* An environment block from a string with '|' for NUL. */
static struct job_ident parse(const char *text)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1);
	struct job_ident id;

	for (size_t i = 0; i <= len; i++)
		buf[i] = text[i] == '|' ? 0 : text[i];
	ck_assert_int_eq(job_ident_parse(buf, len, &id), 0);
	free(buf);
	return id;
}

START_TEST(test_slurm_task)
{
	struct job_ident id = parse("PATH=/bin|SLURM_JOB_ID=123|SLURM_STEP_ID=0|"
				    "SLURMD_NODENAME=hnode1|SLURM_PROCID=5|SLURM_LOCALID=1|"
				    "SLURM_NTASKS=8|");

	ck_assert(id.in_job);
	ck_assert_str_eq(id.id, "123");
	ck_assert_str_eq(id.step, "0");
	ck_assert_str_eq(id.node, "hnode1");
	ck_assert_int_eq(id.rank, 5);
	ck_assert_int_eq(id.local_rank, 1);
	ck_assert_int_eq(id.world_size, 8);
	ck_assert_int_eq(id.from, RANK_FROM_SLURM);
	ck_assert_str_eq(rank_from_name(id.from), "slurm");
}
END_TEST

/* torchrun's workers all inherit their task's SLURM_PROCID: RANK is the
 * one that tells them apart, whichever comes first in the block. */
START_TEST(test_torchrun_wins)
{
	struct job_ident id = parse("SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NTASKS=2|"
				    "SLURM_JOB_ID=77|RANK=6|LOCAL_RANK=2|WORLD_SIZE=16");

	ck_assert_int_eq(id.from, RANK_FROM_TORCHRUN);
	ck_assert_str_eq(rank_from_name(id.from), "torchrun");
	ck_assert_int_eq(id.rank, 6);
	ck_assert_int_eq(id.local_rank, 2);
	ck_assert_int_eq(id.world_size, 16);
	ck_assert_str_eq(id.id, "77");
	ck_assert_str_eq(id.step, "");
	ck_assert_str_eq(id.node, "");
}
END_TEST

/* A RANK that is no number is not torchrun's: Slurm's rank stands. */
START_TEST(test_garbage_rank_falls_back)
{
	struct job_ident id = parse("RANK=abc|LOCAL_RANK=1|SLURM_PROCID=3|SLURM_JOB_ID=9");

	ck_assert_int_eq(id.from, RANK_FROM_SLURM);
	ck_assert_int_eq(id.rank, 3);
	ck_assert_int_eq(id.local_rank, -1);
	ck_assert_int_eq(id.world_size, -1);
}
END_TEST

START_TEST(test_garbage_values)
{
	static const char *const bad[] = {
		"RANK=-1", "RANK=", "RANK= 3", "RANK=3 ", "RANK=0x10", "RANK=1e3",
		"RANK=99999999999999999999", "RANK=+4",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct job_ident id = parse(bad[i]);

		ck_assert_msg(id.rank == -1 && id.from == RANK_FROM_NONE, "took %s", bad[i]);
		ck_assert(!job_ident_known(&id));
	}
	/* A job id that is no number, a node name no host has. */
	struct job_ident id = parse("SLURM_JOB_ID=12;rm|SLURMD_NODENAME=a/b|RANK=0|"
				    "WORLD_SIZE=0|SLURM_STEP_ID=0 1");

	ck_assert(!id.in_job);
	ck_assert_str_eq(id.id, "");
	ck_assert_str_eq(id.node, "");
	/* Letters and digits make a node name, not a job id (fuzz_jobenv). */
	ck_assert(!parse("SLURM_JOB_ID=w7").in_job);
	ck_assert_str_eq(id.step, "");
	ck_assert_int_eq(id.rank, 0);
	ck_assert_int_eq(id.world_size, -1);	/* no world of 0 */
	ck_assert(job_ident_known(&id));
}
END_TEST

START_TEST(test_no_job)
{
	struct job_ident id = parse("HOME=/root|PATH=/usr/bin|TERM=xterm|");

	ck_assert(!id.in_job);
	ck_assert(!job_ident_known(&id));
	ck_assert_int_eq(id.from, RANK_FROM_NONE);
	ck_assert_ptr_null(rank_from_name(id.from));
	ck_assert_int_eq(id.rank, -1);
	id = parse("");
	ck_assert(!job_ident_known(&id));
	/* Names that only start or end like ours. */
	id = parse("XRANK=1|RANKS=2|SLURM_JOB_ID_X=4|MY_SLURM_JOB_ID=5");
	ck_assert(!job_ident_known(&id));
}
END_TEST

/* The first of a name, as getenv(); the last entry without its NUL. */
START_TEST(test_first_wins_and_no_terminator)
{
	struct job_ident id = parse("SLURM_JOB_ID=1|SLURM_JOB_ID=2|RANK=4|RANK=5|"
				    "SLURMD_NODENAME=node-7.rack_2");

	ck_assert_str_eq(id.id, "1");
	ck_assert_int_eq(id.rank, 4);
	ck_assert_str_eq(id.node, "node-7.rack_2");
}
END_TEST

/* Binary junk, entries without '=', a value too long to be a node name,
 * NULs in a row: the variables around them are still read. */
START_TEST(test_binary_junk)
{
	char buf[4096];
	size_t n = 0;
	struct job_ident id;
	const char *tail = "SLURM_JOB_ID=55\0RANK=2";

	for (int i = 0; i < 1000; i++)
		buf[n++] = (char)(i * 37 + 11) == '=' ? 'x' : (char)(i * 37 + 11);
	buf[n++] = 0;
	memcpy(buf + n, "SLURMD_NODENAME=", 16);
	n += 16;
	memset(buf + n, 'a', 300);
	n += 300;
	buf[n++] = 0;
	buf[n++] = 0;
	memcpy(buf + n, tail, strlen(tail) + 7);	/* "RANK=2" with no NUL after */
	n += strlen(tail) + 7;
	ck_assert_int_eq(job_ident_parse(buf, n, &id), 0);
	ck_assert_str_eq(id.id, "55");
	ck_assert_str_eq(id.node, "");
	ck_assert_int_eq(id.rank, 2);
}
END_TEST

/* A child whose environment is larger than the reader's block: entries of
 * 120 KiB and 70 KiB before and between the variables, one of them cut at
 * a block's edge. */
START_TEST(test_read_large_environ)
{
	size_t big = 120 * 1024, mid = 70 * 1024;	/* under MAX_ARG_STRLEN */
	char *a = malloc(big + 8), *b = malloc(mid + 8);
	char *envp[] = { a, "SLURM_JOB_ID=4242", b, "SLURMD_NODENAME=hnode2", "RANK=7", NULL };
	char *argv[] = { "sleep", "30", NULL };
	struct job_ident id;
	pid_t pid;
	int status;

	memcpy(a, "JUNK=", 5);
	memset(a + 5, 'j', big);
	a[big] = 0;
	memcpy(b, "MORE=", 5);
	memset(b + 5, 'm', mid);
	b[mid] = 0;
	pid = fork();
	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	/* Until it has exec'd, its environment is ours. */
	for (int i = 0; i < 500; i++) {
		if (job_ident_read(pid, &id) == 0 && id.in_job)
			break;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	free(a);
	free(b);
	ck_assert_str_eq(id.id, "4242");
	ck_assert_str_eq(id.node, "hnode2");
	ck_assert_int_eq(id.rank, 7);
	ck_assert_int_lt(job_ident_read(0x7ffffff0, &id), 0);
	ck_assert(!id.in_job);
}
END_TEST

/* What a step daemon calls itself, and what only looks like it. */
START_TEST(test_stepd_names)
{
	static const struct {
		const char *argv0, *job, *step;
	} good[] = {
		{ "slurmstepd: [123.0]", "123", "0" },
		{ "slurmstepd: [123.batch]", "123", "batch" },
		{ "slurmstepd: [4.extern]", "4", "extern" },
		{ "slurmstepd: [77.0] padding the kernel keeps", "77", "0" },
	};
	static const char *const bad[] = {
		"slurmstepd: [123]", "slurmstepd: [.0]", "slurmstepd: [12a.0]", "slurmstepd: [123.0",
		"slurmstepd: [123.]", "slurmstepd: [123.0/x]", "slurmstepd [123.0]", "python3",
		"slurmstepd: [123456789012345678901234567890123.0]", "",
	};
	struct job_ident id;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&id, 0, sizeof(id));
		ck_assert_msg(job_stepd_parse(good[i].argv0, &id), "refused %s", good[i].argv0);
		ck_assert_str_eq(id.id, good[i].job);
		ck_assert_str_eq(id.step, good[i].step);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!job_stepd_parse(bad[i], &id), "took %s", bad[i]);
}
END_TEST

/* A slurmd's -N, in its two spellings; nothing from another program or
 * a name no host has. */
START_TEST(test_slurmd_node)
{
	char *a[] = { "/usr/sbin/slurmd", "-D", "-N", "hnode1", "-f", "x.conf" };
	char *b[] = { "slurmd", "-Nhnode-2.rack" };
	char *c[] = { "slurmctld", "-N", "hnode1" };
	char *d[] = { "slurmd", "-D" };
	char *e[] = { "slurmd", "-N" };
	char *f[] = { "slurmd", "-N", "a/b" };
	char node[128];

	ck_assert(job_slurmd_parse(a, 6, node, sizeof(node)));
	ck_assert_str_eq(node, "hnode1");
	ck_assert(job_slurmd_parse(b, 2, node, sizeof(node)));
	ck_assert_str_eq(node, "hnode-2.rack");
	ck_assert(!job_slurmd_parse(c, 3, node, sizeof(node)));
	ck_assert(!job_slurmd_parse(d, 2, node, sizeof(node)));
	ck_assert(!job_slurmd_parse(e, 2, node, sizeof(node)));
	ck_assert(!job_slurmd_parse(f, 3, node, sizeof(node)));
	ck_assert(!job_slurmd_parse(a, 0, node, sizeof(node)));
	ck_assert(!job_slurmd_parse(a, 4, node, 4));	/* no room */
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "parse", .tests = { test_slurm_task, test_torchrun_wins,
				      test_garbage_rank_falls_back, test_garbage_values,
				      test_no_job, test_first_wins_and_no_terminator,
				      test_binary_junk } },
		{ "ancestry", .tests = { test_stepd_names, test_slurmd_node } },
		{ "read", .timeout = 30, .tests = { test_read_large_environ } },
	};

	return run_groups("jobenv", groups, sizeof(groups) / sizeof(groups[0]), 0, 1);
}
