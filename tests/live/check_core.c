/* `pystrobe dump --core` on every Python this machine has.
 *
 * gcore: tests/targets/parked.py parks its threads; the test dumps it live
 * (--json --locals), takes a gcore of it while it stays parked, and
 * tests/compare_core.py holds the core's dump against the live one: the
 * same threads with identical frames.  A target in the sid root is read
 * with --root.  A core records no run state: its threads are neither idle
 * nor active (JSON "idle": null, no word in text, also with --group).
 *
 * crash: tests/targets/crash_core.py writes what it sees itself and dies
 * of SIGSEGV in ctypes with RLIMIT_CORE raised; the kernel writes its core
 * to the target's working directory (core_pattern is left as it is: when
 * it does not write there, the test says SKIP and why).  The dump must
 * mark the crashing thread with the signal and fault address, and its
 * Python frames must be the target's own.  A core from the sid root names
 * its files as the root sees them: only --root finds them.
 *
 * damaged: that core cut at several offsets and corrupted at fixed seeds
 * must give no crash, no hang and only pystrobe's own lines on stderr;
 * not a core, a core of a non-Python program, mapped files missing or
 * changed must each give their one line and exit code.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;

/* Run compare_core.py with these arguments; 0 when it agrees, else the
 * failure is reported. */
static void compare(const char *label, const char *what, char *const *words)
{
	char script[PATH_MAX + 32], how[96];
	struct argv_buf a = { .n = 0 };
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/compare_core.py", test_srcdir());
	arg(&a, test_python3());
	arg(&a, script);
	args(&a, words);
	ck_assert_msg(run_cmd(&r, RUN_TIMEOUT_MS, a.v) == 0, "%s: cannot run compare_core.py", label);
	if (run_exit(&r) != 0) {
		printf("core: %s: %s: FAILED\n%s%s", label, what, r.out, r.err);
		fflush(stdout);
		ck_abort_msg("%s: %s: compare_core.py %s: %.1500s%.500s", label, what,
			     run_describe(&r, how, sizeof(how)), r.out, r.err);
	}
	printf("core: %s: %s: %s", label, what, r.out);
	run_free(&r);
}

/* `pystrobe dump ARGS...` into dir/file; its exit code (-1: not run). */
static int dump_run(const char *label, const char *dir, const char *file, char *const *argv,
		    struct run *r)
{
	struct argv_buf a = { .n = 0 };
	char path[PATH_MAX + 64];

	arg(&a, pystrobe_path());
	arg(&a, "dump");
	args(&a, argv);
	ck_assert_msg(run_cmd(r, RUN_TIMEOUT_MS, a.v) == 0, "%s: cannot run pystrobe", label);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ck_assert_msg(write_file(path, r->out, r->out_len) == 0, "%s: cannot save the dump", label);
	return run_exit(r);
}

/* The same, failing the test unless it exits 0. */
static void dump_to(const char *label, const char *dir, const char *file, char *const *argv)
{
	char how[96];
	struct run r;

	if (dump_run(label, dir, file, argv, &r) != 0)
		ck_abort_msg("%s: pystrobe dump %s %s: %.2000s", label, argv[0],
			     run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
}

/* gcore pid into dir/gcore.PID; path gets its name. */
static void take_gcore(const char *label, pid_t pid, const char *dir, char *path, size_t size)
{
	char prefix[PATH_MAX + 16], spid[16], how[96];
	char *argv[] = { "gcore", "-o", prefix, spid, NULL };
	struct run r;

	snprintf(prefix, sizeof(prefix), "%s/gcore", dir);
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(path, size, "%s.%d", prefix, (int)pid);
	ck_assert_msg(run_cmd(&r, RUN_TIMEOUT_MS, argv) == 0, "%s: cannot run gcore", label);
	ck_assert_msg(run_exit(&r) == 0 && access(path, R_OK) == 0, "%s: gcore %s: %.1000s",
		      label, run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
}

static const char *core_pattern_problem(void);
static int find_core(const char *dir, char *path, size_t size);
static void wait_death(struct target *t, int sig);

/* The gcore of the parked target against its live dump.  gdb 13 cannot
 * read a thread stack holding a guard region (glibc 2.41's, the sid
 * root's) and writes zeros for it: then pystrobe must say so (exit 11)
 * rather than show stacks cut short. */
static void check_gcore(const struct test_interp *ti, struct target *t, char *const *cmp_live)
{
	char core[PATH_MAX + 32], dumped[PATH_MAX + 32], how[96];
	char *core_args[] = { "--core", core, "--json", "--locals", "--root", (char *)ti->root, NULL };
	char *cmp[] = { "live", cmp_live[0], cmp_live[1], dumped, core, NULL };
	struct run r;
	int rc;

	if (!ti->root[0])
		core_args[4] = NULL;
	snprintf(dumped, sizeof(dumped), "%s/gcore.json", t->dir);
	take_gcore(ti->label, t->py_pid, t->dir, core, sizeof(core));
	rc = dump_run(ti->label, t->dir, "gcore.json", core_args, &r);
	if (rc == 11 && strstr(r.err, "holds zeros where the stack of thread")) {
		ck_assert_msg(all_lines_pystrobe(r.err) && strstr(r.out, "\"core\""),
			      "%s: gcore without stacks: %.1000s", ti->label, r.err);
		printf("core: %s: gcore: its thread stacks are zeros (gdb could not read them); "
		       "pystrobe says so and exits 11\n", ti->label);
		run_free(&r);
		return;
	}
	ck_assert_msg(rc == 0, "%s: dump --core of a gcore: %s: %.2000s", ti->label,
		      run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	compare(ti->label, "gcore", cmp);
}

/* The kernel's core of the parked target, killed by SIGQUIT after its
 * live dump: the same frames, the SIGQUIT recorded. */
static void check_quit_core(const struct test_interp *ti, struct target *t, char *const *cmp_live)
{
	const char *problem = core_pattern_problem();
	char core[PATH_MAX + 300], dumped[PATH_MAX + 32];
	char *core_args[] = { "--core", core, "--json", "--locals", "--root", (char *)ti->root, NULL };
	char *cmp[] = { "quit", cmp_live[0], cmp_live[1], dumped, core, NULL };

	if (problem) {
		printf("core: %s: SIGQUIT core: SKIP (%s)\n", ti->label, problem);
		return;
	}
	if (!ti->root[0])
		core_args[4] = NULL;
	wait_death(t, SIGQUIT);
	ck_assert_msg(find_core(t->dir, core, sizeof(core)) == 0, "%s: no core in %s after SIGQUIT",
		      ti->label, t->dir);
	snprintf(dumped, sizeof(dumped), "%s/quit.json", t->dir);
	dump_to(ti->label, t->dir, "quit.json", core_args);
	compare(ti->label, "SIGQUIT core", cmp);
}

/* The thread and group headers of a core's text dump say nothing of idle
 * or active: the core does not record it.  Returns how many it saw. */
static int check_no_run_state(const char *label, const char *what, const char *text)
{
	int headers = 0;

	for (const char *line = text, *next; line && *line; line = next) {
		size_t len = strcspn(line, "\n");
		char buf[1024];
		unsigned n;

		next = line[len] ? line + len + 1 : NULL;
		/* "Thread TID ... (idle) ident" and "N threads (N idle, N active):" */
		if (strncmp(line, "Thread ", 7) && sscanf(line, "%u threads", &n) != 1)
			continue;
		snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
		headers++;
		ck_assert_msg(!strstr(buf, "(idle") && !strstr(buf, "(active") &&
			      !strstr(buf, " idle,") && !strstr(buf, " active"),
			      "%s: %s: a core's header says idle or active: %s", label, what, buf);
	}
	return headers;
}

START_TEST(test_gcore)
{
	const struct test_interp *ti = &interps[_i];
	struct target t;
	char why[512], pid[16], live[PATH_MAX + 32], parked[PATH_MAX], txt[PATH_MAX + 32];
	char core[PATH_MAX + 32];
	char *live_args[] = { "--pid", pid, "--json", "--locals", NULL };
	char *text_args[] = { "--core", core, "--root", (char *)ti->root, NULL };
	char *group_args[] = { "--core", core, "--group", "--root", (char *)ti->root, NULL };
	char *cmp_live[] = { t.truth, live };
	struct run r;
	char *text;

	if (!ti->root[0]) {
		text_args[2] = NULL;
		group_args[3] = NULL;
	}
	test_interp_script(ti, "tests/targets/parked.py", parked, sizeof(parked));
	if (target_start_script(&t, ti, "tests/targets/parked_here.py", why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked_here.py: %s", ti->label, why);
	snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
	snprintf(live, sizeof(live), "%s/live.json", t.dir);
	dump_to(ti->label, t.dir, "live.json", live_args);
	usleep(300 * 1000);	/* let the threads settle back after the pause */
	check_gcore(ti, &t, cmp_live);
	/* Text: the header, the frames, no crash in a gcore. */
	snprintf(core, sizeof(core), "%s/gcore.%d", t.dir, (int)t.py_pid);
	dump_run(ti->label, t.dir, "gcore.txt", text_args, &r);
	run_free(&r);
	snprintf(txt, sizeof(txt), "%s/gcore.txt", t.dir);
	text = slurp(txt);
	ck_assert_msg(text && strstr(text, "Core ") && strstr(text, "main_park") &&
		      strstr(text, "nested_c") && !strstr(text, "crashed:"),
		      "%s: the text dump of the core lacks its header or frames:\n%.2000s",
		      ti->label, text ? text : "(none)");
	ck_assert_msg(check_no_run_state(ti->label, "text", text) > 0, "%s: no thread header in:\n%.2000s",
		      ti->label, text);
	free(text);
	dump_run(ti->label, t.dir, "gcore-group.txt", group_args, &r);
	run_free(&r);
	snprintf(txt, sizeof(txt), "%s/gcore-group.txt", t.dir);
	text = slurp(txt);
	ck_assert_msg(text && check_no_run_state(ti->label, "--group", text) > 0,
		      "%s: no group header in the --group dump of the core:\n%.2000s", ti->label,
		      text ? text : "(none)");
	free(text);
	unlink(core);	/* hundreds of MB: not two at once */
	check_quit_core(ti, &t, cmp_live);
	target_stop(&t);
}
END_TEST

/* Where does the kernel write a core of a process in dir?  NULL when it
 * writes it there (core_pattern relative, no pipe), else why not. */
static const char *core_pattern_problem(void)
{
	static char why[512];
	char *pat = slurp("/proc/sys/kernel/core_pattern");

	if (!pat)
		return "cannot read /proc/sys/kernel/core_pattern";
	pat[strcspn(pat, "\n")] = 0;
	if (pat[0] == '|' || pat[0] == '/' || strchr(pat, '/')) {
		snprintf(why, sizeof(why), "core_pattern is \"%.200s\": kernel cores do not land "
			 "in the working directory", pat);
		free(pat);
		return why;
	}
	free(pat);
	return NULL;
}

/* The kernel's core in dir: "core", or "core.PID" with core_uses_pid. */
static int find_core(const char *dir, char *path, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = -1;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, "core") || !strncmp(de->d_name, "core.", 5)) {
			snprintf(path, size, "%s/%s", dir, de->d_name);
			found = 0;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* Send sig (0: none) and wait for the target to die of it with a core. */
static void wait_death(struct target *t, int sig)
{
	long long end = now_ms() + TARGET_READY_MS;
	int status = 0;

	if (sig)
		kill(t->py_pid, sig);
	while (waitpid(t->pid, &status, WNOHANG) == 0 && now_ms() < end)
		sleep_ms(50);
	if (now_ms() >= end) {
		target_stop(t);
		ck_abort_msg("%s: the target did not die", t->ti->label);
	}
	t->reaped = 1;
	t->status = status;
	if (!WIFSIGNALED(status) || WTERMSIG(status) != (sig ? sig : SIGSEGV) || !WCOREDUMP(status)) {
		target_stop(t);
		ck_abort_msg("%s: the target ended with status 0x%x, not %s with a core",
			     t->ti->label, status, sig ? "SIGQUIT" : "SIGSEGV");
	}
}

/* Start crash_core.py, wait for its death; its core's path into core. */
static void crash_target(struct target *t, const struct test_interp *ti, char *core, size_t size)
{
	char script[PATH_MAX], why[512];

	test_interp_script(ti, "tests/targets/crash_core.py", script, sizeof(script));
	if (target_start(t, ti, why, sizeof(why), script, NULL) < 0)
		ck_abort_msg("%s: crash_core.py: %s", ti->label, why);
	wait_death(t, 0);
	if (find_core(t->dir, core, size) < 0) {
		target_stop(t);
		ck_abort_msg("%s: no core in %s", ti->label, t->dir);
	}
}

START_TEST(test_crash)
{
	const struct test_interp *ti = &interps[_i];
	const char *problem = core_pattern_problem();
	char core[PATH_MAX + 300], dumped[PATH_MAX + 32], how[96];
	char *core_args[] = { "--core", core, "--json", "--root", (char *)ti->root, NULL, NULL };
	char *cmp[] = { "crash", NULL, dumped, NULL };
	struct target t = { 0 };
	struct run r;

	if (problem) {
		printf("core: %s: crash: SKIP (%s)\n", ti->label, problem);
		return;
	}
	if (!ti->root[0])
		core_args[3] = NULL;
	crash_target(&t, ti, core, sizeof(core));
	cmp[1] = t.truth;
	snprintf(dumped, sizeof(dumped), "%s/crash.json", t.dir);
	dump_to(ti->label, t.dir, "crash.json", core_args);
	compare(ti->label, "SIGSEGV core", cmp);
	/* --native: the fault in C, the Python frames merged around it. */
	if (ti->root[0]) {
		core_args[5] = "--native";
	} else {
		core_args[3] = "--native";
		core_args[4] = NULL;
	}
	snprintf(dumped, sizeof(dumped), "%s/crash-native.json", t.dir);
	cmp[0] = "crash-native";
	dump_to(ti->label, t.dir, "crash-native.json", core_args);
	compare(ti->label, "SIGSEGV core --native", cmp);
	if (ti->root[0]) {
		/* Without --root the files the core names are not the host's. */
		ck_assert(run_pystrobe(&r, "dump", "--core", core, NULL) == 0);
		ck_assert_msg(run_exit(&r) == 11 && all_lines_pystrobe(r.err) && strstr(r.err, "missing"),
			      "%s: a root's core without --root: %s, stderr %.1000s", ti->label,
			      run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
	}
	target_stop(&t);
}
END_TEST

/* --- damaged cores and errors -------------------------------------------- */

/* A run of pystrobe on a bad core: it must end by itself (no signal, no
 * hang) with one of the codes allowed and only its own lines on stderr;
 * with exit 10 exactly one. */
static void check_bad(const char *what, const struct run *r, const int *ok, int nok)
{
	char how[96];
	int rc = run_exit(r), allowed = 0;

	for (int i = 0; i < nok; i++)
		allowed |= rc == ok[i];
	ck_assert_msg(allowed && all_lines_pystrobe(r->err) && (rc != 10 || run_one_error_line(r)),
		      "%s: pystrobe %s, stderr: %.1000s", what, run_describe(r, how, sizeof(how)),
		      r->err);
}

/* Copy the first len bytes of a core, its holes left holes: a core of
 * 3.13t is over a gigabyte, mostly mimalloc's untouched arenas, and a
 * copy in full each time took minutes. */
static void copy_cut(const char *from, const char *to, off_t len)
{
	static char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	off_t data = 0, hole;

	ck_assert(in >= 0 && out >= 0);
	ck_assert(ftruncate(out, len) == 0);
	while (data < len && (data = lseek(in, data, SEEK_DATA)) >= 0 && data < len) {
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0 || hole > len)
			hole = len;
		while (data < hole) {
			size_t want = hole - data < (off_t)sizeof(buf) ? hole - data : sizeof(buf);
			ssize_t got = pread(in, buf, want, data);

			ck_assert(got > 0 && pwrite(out, buf, got, data) == got);
			data += got;
		}
	}
	close(in);
	close(out);
}

/* Cut the core at offsets in its headers, its notes and its memory:
 * exit 10 (nothing to read) or 11 (what could be read, and a note). */
static void check_truncated(const char *label, const char *core, const char *dir)
{
	static const int ok[] = { 10, 11 };
	char cut[PATH_MAX + 16], what[128];
	struct stat st;
	struct run r;

	ck_assert(stat(core, &st) == 0);
	off_t offs[] = { 0, 10, 63, 64, 300, 4000, 20000, 200000, st.st_size / 4, st.st_size / 2,
			 st.st_size - 4096, st.st_size - 1 };
	snprintf(cut, sizeof(cut), "%s/cut", dir);
	for (size_t i = 0; i < sizeof(offs) / sizeof(*offs); i++) {
		copy_cut(core, cut, offs[i]);
		ck_assert(run_pystrobe(&r, "dump", "--core", cut, "--json", NULL) == 0);
		snprintf(what, sizeof(what), "%s: cut at %lld", label, (long long)offs[i]);
		check_bad(what, &r, ok, 2);
		run_free(&r);
	}
	unlink(cut);
	printf("core: %s: truncated at %zu offsets: exit 10 or 11, one line each\n", label,
	       sizeof(offs) / sizeof(*offs));
}

/* Flip 24 bytes: in the first 64 KiB (headers, notes) at k < 16, else
 * anywhere; with restore, put back what it saved in was, last first (a
 * byte flipped twice gets its first value back). */
static void flip_bytes(int fd, off_t size, uint64_t *x, off_t *at, uint8_t *was, bool restore)
{
	for (int k = restore ? 23 : 24; restore && k >= 0; k--)
		ck_assert(pwrite(fd, &was[k], 1, at[k]) == 1);
	for (int k = 0; !restore && k < 24; k++) {
		off_t span = k < 16 && size > 65536 ? 65536 : size;
		uint8_t b;

		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		b = (uint8_t)(*x >> 56);
		at[k] = (off_t)(*x % (uint64_t)span);
		ck_assert(pread(fd, &was[k], 1, at[k]) == 1);
		ck_assert(pwrite(fd, &b, 1, at[k]) == 1);
	}
}

/* Flip bytes of the first 64 KiB (headers, notes) and of the rest, at
 * fixed seeds: any outcome but a crash, a hang or a stray line.  One copy,
 * each seed's bytes put back after its run. */
static void check_corrupt(const char *label, const char *core, const char *dir)
{
	static const int ok[] = { 0, 5, 6, 8, 10, 11 };
	char bad[PATH_MAX + 16], what[128];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct stat st;
	struct run r;
	int fd;

	ck_assert(stat(core, &st) == 0);
	snprintf(bad, sizeof(bad), "%s/corrupt", dir);
	copy_cut(core, bad, st.st_size);
	fd = open(bad, O_RDWR);
	ck_assert(fd >= 0);
	for (int seed = 0; seed < 24; seed++) {
		off_t at[24];
		uint8_t was[24];

		flip_bytes(fd, st.st_size, &x, at, was, false);
		ck_assert(run_pystrobe(&r, "dump", "--core", bad, "--json", "--locals", NULL) == 0);
		snprintf(what, sizeof(what), "%s: corrupted, seed %d", label, seed);
		check_bad(what, &r, ok, 6);
		run_free(&r);
		flip_bytes(fd, st.st_size, &x, at, was, true);
	}
	close(fd);
	unlink(bad);
	printf("core: %s: 24 corrupted cores: no crash, no hang, only pystrobe's lines\n", label);
}

/* One line and this exit code, the line holding `says`. */
static void expect_error(const char *what, struct run *r, int code, const char *says)
{
	char how[96];

	ck_assert_msg(run_exit(r) == code && all_lines_pystrobe(r->err) && strstr(r->err, says),
		      "%s: want exit %d saying \"%s\"; pystrobe %s, stderr: %.1000s", what, code,
		      says, run_describe(r, how, sizeof(how)), r->err);
	if (code == 10 || code == 5)
		ck_assert_msg(run_one_error_line(r), "%s: more than one line: %s", what, r->err);
	printf("core: %s: exit %d: %s", what, code, r->err);
	run_free(r);
}

/* The core of a program that is not Python: exit 5. */
static void check_not_python(const char *dir)
{
	char *sleep_argv[] = { "sleep", "60", NULL };
	char core[PATH_MAX + 32];
	pid_t pid = spawn_cmd(sleep_argv);
	struct run r;

	ck_assert(pid > 0);
	ck_assert(proc_wait_exe(pid, "/sleep", 10000) == 0);
	take_gcore("sleep", pid, dir, core, sizeof(core));
	kill_reap(pid);
	ck_assert(run_pystrobe(&r, "dump", "--core", core, NULL) == 0);
	expect_error("core of sleep", &r, 5, "is not a Python process");
	unlink(core);
}

START_TEST(test_damaged)
{
	const struct test_interp *ti = test_interp_pick(interps, ninterps, 12);
	const char *problem = core_pattern_problem();
	char core[PATH_MAX + 300], root[PATH_MAX + 16];
	struct target t = { 0 };
	struct run r;

	ck_assert(run_pystrobe(&r, "dump", "--core", ti->path, NULL) == 0);
	expect_error("an executable as the core", &r, 10, "not a core file");
	ck_assert(run_pystrobe(&r, "dump", "--core", "/nonexistent/core", NULL) == 0);
	expect_error("no such core", &r, 10, "cannot open core");
	if (problem) {
		printf("core: damaged cores: SKIP (%s)\n", problem);
		return;
	}
	crash_target(&t, ti, core, sizeof(core));
	check_not_python(t.dir);
	/* Mapped files missing: an empty root. */
	snprintf(root, sizeof(root), "%s/empty", t.dir);
	ck_assert(mkdir(root, 0755) == 0);
	ck_assert(run_pystrobe(&r, "dump", "--core", core, "--root", root, NULL) == 0);
	expect_error("files missing (an empty --root)", &r, 11, "is missing");
	check_truncated(ti->label, core, t.dir);
	check_corrupt(ti->label, core, t.dir);
	target_stop(&t);
}
END_TEST

/* The static interpreter's core with another executable: its build ID
 * differs, and nothing is read from it. */
START_TEST(test_changed)
{
	const char *problem = core_pattern_problem();
	const struct test_interp *ti = NULL;
	char core[PATH_MAX + 300];
	struct target t = { 0 };
	struct run r;

	for (int i = 0; i < ninterps; i++)
		if (strstr(interps[i].label, "debian-static"))
			ti = &interps[i];
	if (!ti || problem) {
		printf("core: changed executable: SKIP (%s)\n",
		       problem ? problem : "no static interpreter (Debian's /usr/bin/python3.11)");
		return;
	}
	crash_target(&t, ti, core, sizeof(core));
	ck_assert(run_pystrobe(&r, "dump", "--core", core, "--executable", "/bin/sleep", NULL) == 0);
	expect_error("static 3.11, --executable /bin/sleep", &r, 11, "build ID differs");
	target_stop(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("core");
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	if (access("/usr/bin/gcore", X_OK) != 0) {
		printf("core: SKIP: no /usr/bin/gcore (Debian's gdb)\n");
		return 77;
	}
	/* The targets inherit it: the crash test's core is the kernel's. */
	if (setrlimit(RLIMIT_CORE, &rl) < 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_CORE, &rl);
	}

	tc = tcase_create("gcore");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_gcore, 0, ninterps);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_crash, 0, ninterps);
	suite_add_tcase(s, tc);

	tc = tcase_create("damaged");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_damaged);
	tcase_add_test(tc, test_changed);
	suite_add_tcase(s, tc);

	return run_suite(s);
}
