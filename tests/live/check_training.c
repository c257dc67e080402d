/* The training-job view (issue 26): the share of a job's time pystrobe
 * says its threads wait for data or for the other ranks, against the
 * job's own clock.
 *
 * Two real CPU training jobs on Debian's python3-torch (the sid root's
 * 3.14; a SKIP naming the package without it), each started here and, once
 * it trains, recorded with its process tree by
 *
 *     pystrobe record -s --idle --waits --threads -f collapsed -d 5 --pid PID
 *
 *   - data (tests/targets/train_data.py): a DataLoader whose 2 workers'
 *     Python augmentation is slower than the step; the main thread's
 *     samples that end in <wait:data> against the share of the recorded
 *     seconds its own clock spent waiting for the next batch;
 *   - collective (tests/targets/train_gloo.py): 3 gloo ranks, one doing 4
 *     times the others' compute per step; each rank's main thread's
 *     samples that end in <wait:collective> against its own time inside
 *     all_reduce (the slow rank's share small, the others' large).
 *
 * tests/compare_training.py judges: within 3 points, each figure printed
 * beside the job's.  The recorded seconds are those pystrobe sampled: from
 * when it first holds the target's thread files (the test looks every
 * 10 ms) for as long as its summary says it sampled; the job's steps are
 * stamped with the same wall clock.
 *
 * Without --waits in `record --help` (a PYSTROBE_BIN from before issue
 * 26's classes) the same shares are taken from a recording without it, each sample's
 * class decided by the script's own rules on its frames (the DataLoader's
 * _next_data or _get_data, torch.distributed's all_reduce), and a SKIP
 * says that pystrobe's own classes were not judged.
 *
 * Wall-clock shares on a loaded 2-core machine: a run that misses while
 * pystrobe fell behind its rate (its summary says so, or it took fewer
 * than RATE_FLOOR of its rounds) proves nothing either way, and is
 * DISTURBED: run again, up to TRIES times; one that misses undisturbed, or
 * on the last try, fails.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define RECORD_S	"5"
#define TRIES		3
#define RATE_FLOOR	0.95	/* of the rate asked (record's default, 100 Hz) */
#define RATE_HZ		100.0
#define READY_MS	240000	/* 3 ranks importing torch on a loaded machine */
#define RECORD_MS	60000	/* a 5 s recording, however slow its start */
#define STEPS_MS	20000	/* the job's stamps reaching past the recording */

static const struct test_interp *interps;
static int ninterps;
static const char *classify;	/* compare_training.py's: "leaf" or "frames" */

struct job {
	const char *name;	/* compare_training.py's JOB */
	const char *script;
};

static const struct job jobs[] = {
	{ "data", "tests/targets/train_data.py" },
	{ "collective", "tests/targets/train_gloo.py" },
};

enum verdict { GOOD, BAD, DISTURBED };

/* One recording of the job's tree: what the sampled seconds were. */
struct take {
	char out[PATH_MAX + 32], err[PATH_MAX + 32];
	double t0, t1;		/* wall clock, the seconds sampled */
	double hz;		/* the rate the summary says it kept */
	bool behind;		/* the summary says it fell behind */
};

/* record's summary: "N samples from M rounds in X s, R Hz...": X and R. */
static int read_summary(struct take *k, char **failures)
{
	unsigned long long n, rounds;
	double secs = 0, hz = 0;
	char *err = slurp(k->err);
	const char *line = record_summary(err);
	int rc = -1;

	if (line && sscanf(line, "pystrobe: %llu samples from %llu rounds in %lf s, %lf Hz",
			   &n, &rounds, &secs, &hz) == 4 && secs > 0) {
		k->t1 = k->t0 + secs;
		k->hz = hz;
		k->behind = strstr(line, "fell behind") != NULL;
		rc = 0;
	} else {
		msg_add(failures, "no summary from record: %.1000s", err ? err : "");
	}
	free(err);
	return rc;
}

/* pystrobe record ... --pid PID, timed by its first sample. */
static int record(struct target *t, const char *pid, int try, struct take *k, char **failures)
{
	char *argv[] = { (char *)pystrobe_path(), "record", "-s", "--idle", "--threads",
			 "-f", "collapsed", "-o", k->out, "-d", RECORD_S, "--pid", (char *)pid,
			 strcmp(classify, "leaf") ? NULL : "--waits", NULL };
	long long deadline = now_ms() + RECORD_MS;
	int status = 0;
	pid_t p;

	snprintf(k->out, sizeof(k->out), "%s/record-%d.txt", t->dir, try);
	snprintf(k->err, sizeof(k->err), "%s/record-%d.err", t->dir, try);
	p = spawn_cmd_err(argv, k->err);
	if (p < 0) {
		msg_add(failures, "cannot start pystrobe: %s", strerror(errno));
		return -1;
	}
	if (wait_sampling(p, atoi(pid), RECORD_MS) < 0) {
		msg_add(failures, "pystrobe never sampled %s", pid);
		kill_reap(p);
		return -1;
	}
	k->t0 = wall_s();
	while (waitpid(p, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			msg_add(failures, "record did not end in %d s", RECORD_MS / 1000);
			kill_reap(p);
			return -1;
		}
		sleep_ms(20);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		msg_add(failures, "record ended with status 0x%x", status);
		return -1;
	}
	return read_summary(k, failures);
}

/* compare_training.py CLASSIFY JOB OUTDIR COLLAPSED T0 T1, again while the
 * job's stamps do not reach T1 yet (exit 3); its exit status, or -1. */
static int compare(struct target *t, const struct job *j, const struct take *k,
		   const char *what, char **failures)
{
	char script[PATH_MAX], a[32], b[32], how[96];
	char *argv[] = { (char *)test_python3(), script, (char *)classify, (char *)j->name, t->dir,
			 (char *)k->out, a, b, NULL };
	long long deadline = now_ms() + STEPS_MS;
	struct run r;
	int rc;

	snprintf(script, sizeof(script), "%s/tests/compare_training.py", test_srcdir());
	snprintf(a, sizeof(a), "%.6f", k->t0);
	snprintf(b, sizeof(b), "%.6f", k->t1);
	for (;;) {
		if (run_cmd(&r, RUN_TIMEOUT_MS, argv) < 0) {
			msg_add(failures, "cannot run compare_training.py");
			return -1;
		}
		rc = run_exit(&r);
		if (rc != 3 || now_ms() > deadline)
			break;
		run_free(&r);
		sleep_ms(200);
	}
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n"))
		printf("training: %s: %s: %s\n", t->ti->label, what, line);
	if (rc != 0 && rc != 1)
		msg_add(failures, "%s: compare_training.py: %s: %.1000s", what,
			run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	return rc;
}

/* A miss while pystrobe kept its rate is BAD; one while it did not, again
 * until the last try. */
static enum verdict judge(const struct take *k, int rc, int try, const char *what,
			  char **failures)
{
	bool disturbed = k->behind || k->hz < RATE_FLOOR * RATE_HZ;

	if (rc == 0)
		return GOOD;
	if (rc == 1 && disturbed && try < TRIES) {
		printf("training: %s: disturbed (pystrobe sampled at %.1f Hz%s): again\n", what,
		       k->hz, k->behind ? " and fell behind" : "");
		return DISTURBED;
	}
	if (rc == 1)
		msg_add(failures, "%s: a share out of compare_training.py's bounds (pystrobe "
			"%.1f Hz%s; the figures are in the log)", what, k->hz,
			k->behind ? ", fell behind" : "");
	return BAD;
}

static void run_job(const struct test_interp *ti, const struct job *j, char **failures)
{
	char why[256], what[64], script[PATH_MAX], pid[24];
	enum verdict v = DISTURBED;
	struct target t;

	test_interp_script(ti, j->script, script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, NULL) < 0) {
		msg_add(failures, "%s: %s", j->name, why);
		return;
	}
	if (target_wait_file(&t, "truth.json", READY_MS, why, sizeof(why)) < 0) {
		msg_add(failures, "%s: %s", j->name, why);
		goto out;
	}
	/* The job's first process: the main one, or the ranks' launcher. */
	snprintf(pid, sizeof(pid), "%ld", json_file_int(t.dir, "truth.json", "pid"));
	for (int try = 1; try <= TRIES && v == DISTURBED; try++) {
		struct take k;

		snprintf(what, sizeof(what), "%s, try %d", j->name, try);
		if (record(&t, pid, try, &k, failures) < 0)
			break;
		v = judge(&k, compare(&t, j, &k, what, failures), try, what, failures);
	}
out:
	kill_descendants(t.pid);
	target_stop(&t);
}

START_TEST(test_job)
{
	const struct job *j = &jobs[_i];
	const struct test_interp *ti;
	char *failures = NULL, what[64];

	snprintf(what, sizeof(what), "training: the %s job", j->name);
	ti = test_interp_torch(interps, ninterps, what);
	if (!ti)
		return;
	run_job(ti, j, &failures);
	ck_assert_msg(!failures, "%s: %.3000s", ti->label, failures);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("training");
	TCase *tc = tcase_create("training");
	char *opts;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	opts = help_long_options("record");
	classify = opts && has_word(opts, "--waits") ? "leaf" : "frames";
	free(opts);
	if (!strcmp(classify, "frames"))
		test_skip("training: record has no --waits: the shares were classed by "
			  "compare_training.py's own frame rules, not by pystrobe's <wait:...> "
			  "leaves");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_job, 0, sizeof(jobs) / sizeof(jobs[0]));
	suite_add_tcase(s, tc);
	return run_suite(s);
}
