/* dump --slurm and record --slurm on a real torch job: 4 gloo ranks over
 * the 2 nodes of the tests' own Slurm cluster (tests/slurm-cluster.sh,
 * tests/targets/slurm_gloo_train.py on the sid root's python3-torch), rank
 * 3 stalled in fetch_shard after a few steps, the others waiting for it in
 * the next all_reduce.  The truth is each rank's own log (its node, and
 * where it sits: fetch_shard's line, or its all_reduce call), never
 * pystrobe's output:
 *
 *   - dump: the verdict names rank 3, the node its log names, fetch_shard
 *     and its line, and ranks 0-2 in all_reduce; every rank is in --json
 *     with its node and rank.
 *   - record: 3 s of the job at --idle: each rank's samples under
 *     node=NODE;rank=N (its log's node), rank 3's in fetch_shard, the
 *     others' in all_reduce, at least 90% each.
 *   - training: record --training: the summary's line of each rank's main
 *     thread, under its node, waits for the other ranks (rank 3: in
 *     fetch_shard).
 *
 * A SKIP without the sid root's torch (the CI runs it with the torch jobs,
 * .ci/run's phase 4), or without root, slurm-wlm and munge.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpreters.h"
#include "slurm.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

#define NODES		2
#define RANKS		4
#define STALL_RANK	3
#define GLOO_READY_MS	300000	/* 4 ranks importing torch on a loaded machine */

struct job {
	struct slurm s;
	char host[PATH_MAX], inside[PATH_MAX];
	char id[32];
	struct slurm_truth t[RANKS];	/* each rank's, from its log */
};

/* The cluster running the gloo job, every rank where its log says; false
 * after a SKIP. */
static bool job_up(struct job *j)
{
	const struct test_interp *all, *ti;
	int nall = test_interps(&all);
	char why[1024], *cmd, *text;
	long id;

	ti = test_interp_torch(all, nall, "slurm: the gloo job");
	if (!ti)
		return false;
	if (!slurm_up_or_skip(&j->s, NODES))
		return false;
	test_interp_shared_dir(ti, j->host, j->inside, sizeof(j->host));
	cmd = slurm_python_cmd(ti, "tests/targets/slurm_gloo_train.py");
	text = xasprintf("#!/bin/sh\n#SBATCH -N %d -n %d --ntasks-per-node=%d\n"
			 "export STALL_RANK=%d\nexec srun %s %s\n", NODES, RANKS, RANKS / NODES,
			 STALL_RANK, cmd, j->inside);
	id = slurm_sbatch(&j->s, text, why, sizeof(why));
	free(text);
	free(cmd);
	ck_assert_msg(id > 0, "%s", why);
	ck_assert_msg(!slurm_wait_ranks(&j->s, id, j->host, RANKS, GLOO_READY_MS, why,
					sizeof(why)), "%s", why);
	snprintf(j->id, sizeof(j->id), "--slurm=%ld", id);
	ck_assert_msg(!slurm_rank_truths(j->host, RANKS, j->t, why, sizeof(why)), "%s", why);
	return true;
}

static void job_end(struct job *j, char *msg, const char *what)
{
	char why[1024];

	if (slurm_down_check(&j->s, why, sizeof(why)) < 0)
		msg_add(&msg, "slurm_down: %s", why);
	rm_rf(j->host);
	fflush(stdout);
	fail_if_any(msg, what);
}

START_TEST(test_dump)
{
	struct job j = { 0 };
	char *msg = NULL;

	if (!job_up(&j))
		return;
	slurm_check_dump(j.id, j.t, RANKS, STALL_RANK, "slurm_gloo_train.py", "in all_reduce (",
			 &msg);
	job_end(&j, msg, "dump --slurm of the gloo job");
}
END_TEST

START_TEST(test_record)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], *msg = NULL, *text;
	struct run r;

	if (!job_up(&j))
		return;
	snprintf(path, sizeof(path), "%s/job.txt", j.s.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "-d", "3", "--idle", "-o", path, NULL),
			 0);
	printf("record --slurm of the gloo job: %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(&msg, "exit %d: %s", run_exit(&r), r.err);
	run_free(&r);
	text = slurp(path);
	for (int i = 0; i < RANKS; i++) {
		/* The main thread's stack: the stalled rank's leaf is
		 * fetch_shard, the others' torch's all_reduce. */
		const char *what = i == STALL_RANK ? "fetch_shard (" : ";all_reduce (";
		long with, main_n, n = slurm_rank_samples(text, j.t[i].node, i, what, &with);

		slurm_rank_samples(text, j.t[i].node, i, "<module>", &main_n);
		printf("rank %d on %s: %ld samples, %ld of its main thread's, %ld in %s\n", i,
		       j.t[i].node, n, main_n, with, what);
		if (main_n < 30 || with < main_n * 9 / 10)
			msg_add(&msg, "rank %d on %s: %ld of its main thread's samples, %ld in %s",
				i, j.t[i].node, main_n, with, what);
	}
	free(text);
	job_end(&j, msg, "record --slurm of the gloo job");
}
END_TEST

/* --training job-wide: the summary's line for each of ranks 0-2's main
 * thread, under its log's node, says it waited for the other ranks;
 * rank 3's says fetch_shard. */
START_TEST(test_training)
{
	struct job j = { 0 };
	char path[PATH_MAX + 32], want[128], *msg = NULL;
	struct run r;

	if (!job_up(&j))
		return;
	snprintf(path, sizeof(path), "%s/job.txt", j.s.dir);
	ck_assert_int_eq(run_pystrobe(&r, "record", j.id, "--training", "-d", "3", "-o", path,
				      NULL), 0);
	printf("record --slurm --training of the gloo job: %s", r.err);
	if (run_exit(&r) != 0)
		msg_add(&msg, "exit %d: %s", run_exit(&r), r.err);
	for (int i = 0; i < RANKS; i++) {
		const char *line;

		snprintf(want, sizeof(want), "%s:   rank %d, main thread ", j.t[i].node, i);
		line = r.err ? strstr(r.err, want) : NULL;
		if (!line) {
			msg_add(&msg, "no summary line \"%s\"", want);
			continue;
		}
		line = strndup(line, strcspn(line, "\n"));
		if (!strstr(line, i == STALL_RANK ? "fetch_shard" : "waiting for the other ranks"))
			msg_add(&msg, "rank %d: %s", i, line);
		free((char *)line);
	}
	run_free(&r);
	job_end(&j, msg, "record --slurm --training of the gloo job");
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "dump", .timeout = 600, .tests = { test_dump } },
		{ "record", .timeout = 600, .tests = { test_record } },
		{ "training", .timeout = 600, .tests = { test_training } },
	};

	return run_groups("slurm_torch", groups, ARRAY_SIZE(groups), 0, 1);
}
