/* Quitting a launched program ends all of it, the way a terminal's Ctrl-C
 * would.
 *
 * tests/targets/quit_tree.py runs a multiprocessing Pool(3), started by
 * fork and by forkserver, for ever, and writes down the pids of its tree
 * (main, workers, forkserver).  It is launched, with a marker in its
 * environment, under `pystrobe record --` (then SIGINT to pystrobe, as
 * Ctrl-C), under `pystrobe record -d 8 --` (the duration ends first: pystrobe
 * ends the pool itself and exits 0) and under `pystrobe top --` in a tmux
 * pane (then the key q).
 * Afterwards no process may carry the marker (a scan of every
 * /proc/PID/environ and cmdline), none of the pids it wrote may be left,
 * and the program itself must say that its cleanup ran (quit_tree.py writes
 * OUTDIR/cleaned on KeyboardInterrupt): SIGINT reached it first, not a
 * SIGTERM or SIGKILL.
 *
 * On the Debian python3.11, a pyenv interpreter and a sid-root one; a
 * kind this machine lacks is a SKIP (add_have_interps() fails a machine
 * with none at all); missing tmux fails with MISSING.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define READY_MS	60000	/* the pool up and ready.json written */
#define STOP_MS		20000	/* pystrobe gone after SIGINT or q */
#define TMUX_MS		10000	/* one tmux command */
#define DURATION_S	8	/* record -d: the pool is ready well before */
#define CASES		8	/* per interpreter: 4 ways x 2 start methods */

static const struct test_interp *chosen[3];
static int nchosen;
static char missing[256];
static bool have_tmux;
static char sock[128];

/* Does the file (NUL-separated strings) hold the marker? */
static bool file_has(const char *path, const char *mark)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strstr(buf + i, mark))
			return true;
	return false;
}

/* The pids of the processes whose environment or command line holds mark,
 * as " PID PID" in out; how many. */
static int marked(const char *mark, char *out, size_t size)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	out[0] = 0;
	while (d && (de = readdir(d))) {
		char path[300];
		size_t len = strlen(out);

		if (!isdigit((unsigned char)de->d_name[0]) || atoi(de->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		if (!file_has(path, mark)) {
			snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
			if (!file_has(path, mark))
				continue;
		}
		n++;
		snprintf(out + len, size - len, " %s", de->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* The pystrobe whose command line writes to out, or 0. */
static pid_t pystrobe_writing(const char *out)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t pid = 0;

	while (d && !pid && (de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if (!strcmp(comm, "pystrobe\n") && file_has(path, out))
			pid = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return pid;
}

/* The pids quit_tree.py wrote in ready.json that still run; how many. */
static int pids_left(const char *json, char *out, size_t size)
{
	const char *p = json;
	int n = 0;

	out[0] = 0;
	while (p && *p) {
		char path[64];
		long pid;
		size_t len = strlen(out);

		if (!isdigit((unsigned char)*p)) {
			p++;
			continue;
		}
		pid = strtol(p, (char **)&p, 10);
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if (pid > 1 && access(path, F_OK) == 0 && proc_state(pid, pid) != 'Z') {
			n++;
			snprintf(out + len, size - len, " %ld", pid);
		}
	}
	return n;
}

/* The launched command: env MARK python quit_tree.py METHOD [--read] DIR. */
static void launched_argv(struct argv_buf *a, const struct test_interp *ti, const char *env,
			  const char *script, const char *method, bool read, const char *inside)
{
	arg(a, "env");
	arg(a, env);
	arg_python(a, ti);
	arg(a, script);
	arg(a, method);
	if (read)
		arg(a, "--read");
	arg(a, inside);
}

/* Nothing of the tree is left, and (if it ended by SIGINT) its cleanup
 * ran. */
static void judge(const char *what, const char *dir, const char *mark, const char *ready,
		  bool by_sigint)
{
	char left[1024], path[PATH_MAX + 16];

	sleep_ms(200);	/* init reaps the orphans' zombies */
	ck_assert_msg(marked(mark, left, sizeof(left)) == 0,
		      "%s: processes of the launched tree still run:%s (ready.json: %s)", what,
		      left, ready);
	ck_assert_msg(pids_left(ready, left, sizeof(left)) == 0,
		      "%s: pids from ready.json still run:%s (%s)", what, left, ready);
	snprintf(path, sizeof(path), "%s/cleaned", dir);
	if (by_sigint)
		ck_assert_msg(access(path, F_OK) == 0,
			      "%s: the program's KeyboardInterrupt cleanup did not run (no %s)",
			      what, path);
	printf("quit: %s: no process left%s\n", what,
	       by_sigint ? ", cleanup ran" : "; its Pool hung in cleanup: ended by SIGTERM");
}

static bool cleanup_ran(const char *dir)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/cleaned", dir);
	return access(path, F_OK) == 0;
}

/* Wait for a file in the shared directory (host side); its text. */
static char *wait_file(const char *dir, const char *name, pid_t watch)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int ms = 0; ms < READY_MS; ms += 50) {
		if (access(path, F_OK) == 0)
			return slurp(path);
		if (watch > 0 && waitpid(watch, NULL, WNOHANG) == watch)
			return NULL;
		sleep_ms(50);
	}
	return NULL;
}

/* The end of record -d, with the pool still running: ended as by SIGINT,
 * and pystrobe's own status is 0, the profile written. */
static void by_duration(const char *what, pid_t pid, const char *out)
{
	long long t0 = now_ms();
	int status = 0;

	while (now_ms() - t0 < DURATION_S * 1000 + STOP_MS && waitpid(pid, &status, WNOHANG) != pid)
		sleep_ms(20);
	if (kill(pid, 0) == 0 && waitpid(pid, &status, WNOHANG) == 0) {
		kill_descendants(pid);
		kill_reap(pid);
		ck_abort_msg("%s: pystrobe still running %d ms after its -d %d", what, STOP_MS,
			     DURATION_S);
	}
	printf("quit: %s: pystrobe ended %lld ms after the pool was ready, status 0x%x\n", what,
	       now_ms() - t0, status);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: pystrobe's status 0x%x, not 0 (it ended the command itself)", what,
		      status);
	ck_assert_msg(access(out, F_OK) == 0, "%s: no profile written", what);
}

/* SIGINT to pystrobe alone, as a terminal's Ctrl-C to a pystrobe running
 * in the background would.  Whether the pool's cleanup ran. */
static bool by_sigint(const char *what, pid_t pid, const char *out)
{
	long long t0 = now_ms();
	int status = 0;

	kill(pid, SIGINT);
	for (int ms = 0; ms < STOP_MS && waitpid(pid, &status, WNOHANG) != pid; ms += 20)
		sleep_ms(20);
	if (kill(pid, 0) == 0 && waitpid(pid, &status, WNOHANG) == 0) {
		kill_descendants(pid);
		kill_reap(pid);
		ck_abort_msg("%s: pystrobe still running %d ms after SIGINT", what, STOP_MS);
	}
	printf("quit: %s: pystrobe ended %lld ms after SIGINT, status 0x%x\n", what,
	       now_ms() - t0, status);
	/* The command's status: 130 (3.8+ ends by SIGINT) or 1 (3.7); 143
	 * when its Pool hung in its own cleanup (a worker interrupted while
	 * holding the task queue's lock: CPython's, as under a terminal's
	 * Ctrl-C) and the grace ran out. */
	ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 1 ||
					    WEXITSTATUS(status) == 128 + SIGTERM),
		      "%s: pystrobe's status 0x%x is not the interrupted command's", what, status);
	ck_assert_msg(access(out, F_OK) == 0, "%s: no profile written", what);
	return WEXITSTATUS(status) != 128 + SIGTERM;
}

/* record -- the pool, then SIGINT to pystrobe alone, or (duration) the
 * end of its -d. */
static void via_record(const struct test_interp *ti, const char *method, bool duration)
{
	char script[PATH_MAX], dir[PATH_MAX], inside[PATH_MAX], mark[64], env[96];
	char what[160], out[PATH_MAX + 16], secs[16], *ready;
	struct argv_buf a = { .n = 0 };
	bool cleaned = true;
	pid_t pid;

	snprintf(what, sizeof(what), "%s: record, %s pool, %s", ti->label, method,
		 duration ? "-d" : "SIGINT");
	snprintf(mark, sizeof(mark), "quitmark-%d-%s-r", (int)getpid(), method);
	snprintf(env, sizeof(env), "PYSTROBE_QUIT_MARK=%s", mark);
	test_interp_script(ti, "tests/targets/quit_tree.py", script, sizeof(script));
	test_interp_shared_dir(ti, dir, inside, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	arg(&a, pystrobe_path());
	arg(&a, "record");
	arg(&a, "-q");
	arg(&a, "-f");
	arg(&a, "collapsed");
	arg(&a, "-o");
	arg(&a, out);
	if (duration) {
		snprintf(secs, sizeof(secs), "%d", DURATION_S);
		arg(&a, "-d");
		arg(&a, secs);
	}
	arg(&a, "--");
	launched_argv(&a, ti, env, script, method, false, inside);
	pid = spawn_cmd(a.v);
	ck_assert_msg(pid > 0, "%s: cannot start pystrobe", what);
	ready = wait_file(dir, "ready.json", pid);
	if (!ready) {
		kill_descendants(pid);
		kill_reap(pid);
		ck_abort_msg("%s: no ready.json within %d ms", what, READY_MS);
	}
	if (duration)
		by_duration(what, pid, out);
	else
		cleaned = by_sigint(what, pid, out);
	/* After -d pystrobe's status is its own: whether the pool hung in
	 * its cleanup (see by_sigint()) shows only in the file. */
	judge(what, dir, mark, ready, duration ? cleanup_ran(dir) : cleaned);
	free(ready);
	rm_rf(dir);
}

/* --- top in tmux ----------------------------------------------------------- */

/* Wait up to timeout_ms for "EXIT=" in the pane: pystrobe has ended.  Its
 * line, or NULL. */
static char *wait_exit_line(char *name, int timeout_ms)
{
	for (int ms = 0; ms < timeout_ms; ms += 100) {
		char *s = NULL, *p;

		if (tmux_cmd(sock, &s, (char *[]){ "capture-pane", "-p", "-t", name, NULL }) == 0 && s &&
		    (p = strstr(s, "EXIT="))) {
			char *line = strndup(p, strcspn(p, "\n"));

			free(s);
			return line;
		}
		free(s);
		sleep_ms(100);
	}
	return NULL;
}

/* Does the pane show text? */
static bool pane_says(char *name, const char *text)
{
	char *s = NULL;
	bool says = tmux_cmd(sock, &s, (char *[]){ "capture-pane", "-p", "-t", name, NULL }) == 0 &&
		    s && strstr(s, text);

	free(s);
	return says;
}

/* In a tmux pane, as a user would: `top -- the pool`, then q; or
 * `record -- the pool --read` (given the terminal: the pool reads a line
 * typed into it), then Ctrl-C typed into the pane, which reaches the
 * command's process group directly. */
static void via_tmux(const struct test_interp *ti, const char *method, bool record)
{
	char script[PATH_MAX], dir[PATH_MAX], inside[PATH_MAX], mark[64], env[96], out[PATH_MAX + 16];
	char what[160], name[32], *ready, *line, *words, *cmd, *text;
	struct argv_buf a = { .n = 0 };
	bool termed = false;
	long long t0;

	snprintf(what, sizeof(what), "%s: %s, %s pool, %s", ti->label, record ? "record" : "top",
		 method, record ? "Ctrl-C in the terminal" : "q");
	snprintf(mark, sizeof(mark), "quitmark-%d-%s-%c", (int)getpid(), method, record ? 'c' : 't');
	snprintf(env, sizeof(env), "PYSTROBE_QUIT_MARK=%s", mark);
	snprintf(name, sizeof(name), "%c%s", record ? 'r' : 't', method);
	test_interp_script(ti, "tests/targets/quit_tree.py", script, sizeof(script));
	test_interp_shared_dir(ti, dir, inside, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	arg(&a, pystrobe_path());
	arg(&a, record ? "record" : "top");
	if (record) {
		arg(&a, "-q");
		arg(&a, "-o");
		arg(&a, out);
	}
	arg(&a, "--");
	launched_argv(&a, ti, env, script, method, record, inside);
	words = shell_words(a.v);
	ck_assert(asprintf(&cmd, "%s; echo \"EXIT=$?\"; sleep 60", words) > 0);
	free(words);
	ck_assert_msg(tmux_cmd(sock, NULL, (char *[]){ "new-session", "-d", "-x", "120", "-y", "40",
						       "-s", name, cmd, NULL }) == 0,
		      "%s: tmux new-session failed", what);
	free(cmd);
	if (record && (text = wait_file(dir, "asking", 0))) {
		free(text);
		tmux_cmd(sock, NULL, (char *[]){ "send-keys", "-t", name, "hello", "Enter", NULL });
	}
	ready = wait_file(dir, "ready.json", 0);
	if (!ready) {
		tmux_cmd(sock, NULL, (char *[]){ "kill-session", "-t", name, NULL });
		ck_abort_msg("%s: no ready.json within %d ms%s", what, READY_MS,
			     record ? " (could it read the terminal?)" : "");
	}
	sleep_ms(500);	/* top's screen is up */
	t0 = now_ms();
	tmux_cmd(sock, NULL, (char *[]){ "send-keys", "-t", name, record ? "C-c" : "q", NULL });
	line = wait_exit_line(name, record ? 6000 : STOP_MS);
	/* Ctrl-C typed reaches the command alone, as without pystrobe: when
	 * its Pool hangs in its own cleanup (CPython's, see via_record), a
	 * user types Ctrl-C again. */
	if (!line && record) {
		printf("quit: %s: still running 6 s after Ctrl-C: Ctrl-C again\n", what);
		tmux_cmd(sock, NULL, (char *[]){ "send-keys", "-t", name, "C-c", NULL });
		line = wait_exit_line(name, STOP_MS);
	}
	/* A Pool can hang in cleanup through a second Ctrl-C too (3.14 under
	 * load, once): then the documented way out is SIGTERM to pystrobe, which
	 * must end the command's group by its SIGTERM and SIGKILL steps. */
	if (!line && record) {
		pid_t ps = pystrobe_writing(out);

		termed = true;
		printf("quit: %s: still running after a second Ctrl-C: SIGTERM to pystrobe %d\n",
		       what, (int)ps);
		if (ps > 0 && kill(ps, SIGTERM) == 0)
			line = wait_exit_line(name, STOP_MS);
	}
	/* top exits 0 after q however the command ended, and says how it
	 * did: a Pool that hung in its cleanup was ended by the SIGTERM step. */
	if (line && !record)
		termed = pane_says(name, "ended by SIGTERM") || pane_says(name, "ended by SIGKILL");
	tmux_cmd(sock, NULL, (char *[]){ "kill-session", "-t", name, NULL });
	ck_assert_msg(line, "%s: pystrobe did not end within %d ms", what, STOP_MS);
	printf("quit: %s: pystrobe ended within %lld ms: %s\n", what, now_ms() - t0, line);
	if (record) {
		snprintf(out, sizeof(out), "%s/read.txt", dir);
		text = slurp(out);
		ck_assert_msg(text && !strcmp(text, "hello\n"),
			      "%s: the command read '%s' from the terminal, not hello", what, text);
		free(text);
	}
	judge(what, dir, mark, ready, !termed && strcmp(line, "EXIT=143") != 0);
	free(line);
	free(ready);
	rm_rf(dir);
}

START_TEST(test_quit)
{
	const struct test_interp *ti = chosen[_i / CASES];
	const char *method = _i % 2 ? "forkserver" : "fork";
	int way = _i % CASES / 2;	/* record + SIGINT, record -d, top, record in tmux */

	if (way < 2) {
		via_record(ti, method, way == 1);
		return;
	}
	ck_assert_msg(have_tmux, "MISSING tmux: apt-get install tmux");
	via_tmux(ti, method, way == 3);
}
END_TEST
START_TEST(test_interps_chosen)
{
	if (missing[0])
		test_skip("quit: no interpreter of the kind%s (the others still run)", missing);
}
END_TEST

/* The Debian python3.11, a pyenv one (3.12 if there), a sid-root one. */
static void choose(const struct test_interp *all, int n)
{
	static const char *const kinds[] = { "debian-static", " pyenv", "root" };

	for (size_t k = 0; k < 3; k++) {
		const struct test_interp *pick = NULL;

		for (int i = 0; i < n; i++) {
			bool is = k == 2 ? all[i].root[0] != 0 :
				  strstr(all[i].label, kinds[k]) && !strstr(all[i].label, "shim") &&
				  !strstr(all[i].label, "venv");

			if (is && (!pick || (k == 1 && all[i].minor == 12)))
				pick = &all[i];
		}
		if (pick)
			chosen[nchosen++] = pick;
		else
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 " %s", kinds[k]);
	}
	fprintf(stderr, "quit: running on %d:", nchosen);
	for (int i = 0; i < nchosen; i++)
		fprintf(stderr, " [%s]", chosen[i]->label);
	fprintf(stderr, "%s%s\n", missing[0] ? "; MISSING:" : "", missing);
}

int main(void)
{
	const struct test_interp *all;
	Suite *s = suite_create("quit");
	TCase *tc = tcase_create("quit");
	int n, status;
	char dir[] = "/tmp/pystrobe-quit-XXXXXX";

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("LANG", "C.UTF-8", 1);
	unsetenv("TMUX");
	have_tmux = system("tmux -V >/dev/null 2>&1") == 0;
	if (!mkdtemp(dir))
		return EXIT_FAILURE;
	snprintf(sock, sizeof(sock), "%s/tmux", dir);
	n = test_interps(&all);
	choose(all, n);
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, n);
	tcase_add_test(tc, test_interps_chosen);
	tcase_add_loop_test(tc, test_quit, 0, nchosen * CASES);
	suite_add_tcase(s, tc);
	status = run_suite(s);
	if (have_tmux)
		tmux_cmd(sock, NULL, (char *[]){ "kill-server", NULL });
	unlink(sock);
	rmdir(dir);
	return status;
}
