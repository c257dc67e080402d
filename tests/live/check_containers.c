/* Targets in PID namespaces (containers), read from outside and inside.
 *
 * Each target runs under `unshare --pid --fork --mount-proc[=ROOT/proc]
 * [chroot ROOT]`, as a container would: its own thread ids are the
 * namespace's, ours are the host's, and the kernel's NSpid lines pair
 * them (read here by the test itself and by compare_dump.py, not through
 * pystrobe's map).
 *
 *   pidns     on every interpreter, parked.py: `dump --json` has our tids,
 *             the target's own as ns_tid (threading.get_native_id()), its
 *             pid as ns_pid, and exactly its sys._current_frames() with
 *             the idle and GIL flags right; the text dump shows both ids;
 *             `record --threads --idle` labels every thread with our id.
 *   views     on pick()'s interpreter and the first in a root, parked.py:
 *             top in tmux, T through every thread: each "Showing: thread
 *             TID" is ours, all come; `record --threads -f chrometrace`
 *             and `-f speedscope`: every pid and tid field, thread_name
 *             event and profile name is ours, one for every thread.
 *   native    on every interpreter, native_stack.py's qsort callback:
 *             `dump --native` merges every thread (native_verify.py's
 *             order), `record --native` with at most one merge error.
 *             In the sid root (a root not ours) the files are parsed by
 *             the symbolization helper: it says it runs as nobody, its
 *             /proc status agrees (ids, no capabilities, no new privs),
 *             the dump is the one pystrobe makes parsing them itself
 *             (PYSTROBE_SYMBOLIZE_HELPER=never); the helper SIGKILLed
 *             mid-record: exit 0, one error counted, library+0xOFFSET
 *             frames after; pystrobe SIGKILLed: the helper goes too.
 *   nested    a namespace in a namespace: the outermost id is ours.
 *   userns    a rootless container (unshare --user --map-root-user): read
 *             as root, exact; as nobody (a copy of pystrobe under setpriv),
 *             exit 4 and the one-line permission error.
 *   inside    pystrobe in the target's namespace: exact, with the
 *             namespace's ids; without CAP_SYS_PTRACE, exit 4 and a line
 *             that says how to grant it.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

static const struct test_interp *interps;
static int ninterps;
/* test_views' interpreters: pick()'s and the first in a root. */
static const struct test_interp *views[2];
static int nviews;

/* unshare --pid --fork --mount-proc, with /proc inside the root if any. */
static void pidns_wrapper(const struct test_interp *ti, const char *extra[], char *mount,
			  size_t size, const char *wrap[16])
{
	int n = 0;

	if (ti->root[0])
		snprintf(mount, size, "--mount-proc=%s/proc", ti->root);
	else
		snprintf(mount, size, "--mount-proc");
	wrap[n++] = "unshare";
	for (int i = 0; extra && extra[i]; i++)
		wrap[n++] = extra[i];
	wrap[n++] = "--pid";
	wrap[n++] = "--fork";
	wrap[n++] = mount;
	wrap[n] = NULL;
}

/* Our id of every thread of pid, and whether tid is one of them. */
static int is_our_tid(pid_t pid, long tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%ld", pid, tid);
	return tid > 0 && access(path, F_OK) == 0;
}

static void compare(const char *what, struct target *t, const char *dump, char **failures)
{
	char script[PATH_MAX + 32], hostpid[32], how[96];
	struct run r;

	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	snprintf(hostpid, sizeof(hostpid), "--host-pid=%d", (int)t->py_pid);
	if (run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), script, hostpid,
						    t->truth, (char *)dump, NULL }) < 0) {
		msg_add(failures, "%s: cannot run compare_dump.py", what);
		return;
	}
	if (run_exit(&r) != 0)
		msg_add(failures, "%s: compare_dump.py %s:\n%s%s", what,
			run_describe(&r, how, sizeof(how)), r.out, r.err);
	else
		printf("containers: %s: %s: %s", t->ti->label, what, r.out);
	run_free(&r);
}

/* dump --json of t into t->dir/file, compared with its truth. */
static void dump_compare(const char *what, struct target *t, const char *file, char **failures)
{
	char pid[16], path[PATH_MAX + 64], how[96];
	struct run r;

	/* Let threads woken by the previous run's release settle. */
	usleep(300 * 1000);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (run_pystrobe(&r, "dump", "--json", "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "%s: pystrobe %s: %.1000s", what,
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	if (write_file(path, r.out, r.out_len) == 0)
		compare(what, t, path, failures);
	run_free(&r);
}

static void check_text(struct target *t, char **failures)
{
	char pid[16], want[96];
	struct run r;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (run_pystrobe(&r, "dump", "--pid", pid, NULL) < 0)
		return;
	snprintf(want, sizeof(want), "Process %d (%d in its namespace)", (int)t->py_pid,
		 (int)t->ns_pid);
	if (!strstr(r.out, want))
		msg_add(failures, "text: no \"%s\" in:\n%.1500s", want, r.out);
	/* The main thread's ids are the process's. */
	snprintf(want, sizeof(want), "Thread %d (%d in its namespace) \"MainThread\"",
		 (int)t->py_pid, (int)t->ns_pid);
	if (!strstr(r.out, want))
		msg_add(failures, "text: no \"%s\" in:\n%.1500s", want, r.out);
	run_free(&r);
}

/* record --threads: every root is "thread TID ..." with TID ours. */
static void check_record_threads(struct target *t, char **failures)
{
	char pid[16], path[PATH_MAX + 64], how[96], *text, *line, *save = NULL;
	int roots = 0;
	struct run r;

	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(path, sizeof(path), "%s/threads.txt", t->dir);
	if (run_pystrobe(&r, "record", "--threads", "--idle", "-d", "0.5", "-f", "collapsed",
			 "-o", path, "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "record --threads: pystrobe %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return;
	}
	run_free(&r);
	text = slurp(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		long tid = strncmp(line, "thread ", 7) ? -1 : strtol(line + 7, NULL, 10);

		roots++;
		if (!is_our_tid(t->py_pid, tid)) {
			msg_add(failures, "record --threads: not one of our thread ids: %.200s",
				line);
			break;
		}
	}
	if (!roots)
		msg_add(failures, "record --threads: no stacks in %s", path);
	free(text);
}

static void report(const char *what, const struct test_interp *ti, char *failures)
{
	if (!failures) {
		printf("containers: %s: %s: OK\n", ti->label, what);
		return;
	}
	printf("containers: %s: %s: FAILED\n%s", ti->label, what, failures);
	fflush(stdout);
	ck_abort_msg("%s: %s: %.1500s", ti->label, what, failures);
}

START_TEST(test_pidns)
{
	const struct test_interp *ti = &interps[_i];
	const char *wrap[16];
	char mount[PATH_MAX + 32], why[512], *failures = NULL;
	struct target t;

	pidns_wrapper(ti, NULL, mount, sizeof(mount), wrap);
	target_set_wrapper(wrap);
	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked.py in a PID namespace: %s", ti->label, why);
	target_set_wrapper(NULL);
	ck_assert_int_ne(t.py_pid, t.ns_pid);
	dump_compare("dump --json", &t, "dump.json", &failures);
	check_text(&t, &failures);
	check_record_threads(&t, &failures);
	target_stop(&t);
	report("pidns", ti, failures);
	free(failures);
}
END_TEST

/* --- top and the trace formats -------------------------------------------- */

/* The target's threads by both ids: each of truth.json's tids (its own
 * threading.get_native_id(), the namespace's) paired with ours through
 * the NSpid line of the task that has it innermost. */
struct thread_ids {
	pid_t host[64], ns[64];
	int n;
};

static void thread_ids(struct target *t, struct thread_ids *ids, char **failures)
{
	char *text = slurp(t->truth), *p = text;
	pid_t tasks[64][2];
	int ntasks = 0;
	char dir[64];
	DIR *d;
	struct dirent *de;

	ids->n = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)t->py_pid);
	d = opendir(dir);
	while (d && (de = readdir(d)) && ntasks < 64) {
		pid_t nsp[8];
		int k = atoi(de->d_name) > 0 ? proc_nspids(t->py_pid, atoi(de->d_name), nsp, 8) : 0;

		if (k >= 2) {
			tasks[ntasks][0] = nsp[0];
			tasks[ntasks++][1] = nsp[k - 1];
		}
	}
	if (d)
		closedir(d);
	while (p && (p = strstr(p, "\"tid\": ")) && ids->n < 64) {
		long ns = strtol(p + 7, NULL, 10);
		int i;

		p += 7;
		/* null before 3.8: no id of its own; every task then. */
		if (ns <= 0)
			continue;
		for (i = 0; i < ntasks && tasks[i][1] != ns; i++)
			;
		if (i == ntasks) {
			msg_add(failures, "ids: the target's tid %ld is no task's NSpid", ns);
			continue;
		}
		ids->host[ids->n] = tasks[i][0];
		ids->ns[ids->n++] = (pid_t)ns;
	}
	free(text);
	for (int i = 0; !ids->n && i < ntasks; i++) {
		ids->host[i] = tasks[i][0];
		ids->ns[i] = tasks[i][1];
	}
	if (!ids->n)
		ids->n = ntasks;
	if (ids->n != t->nthreads)
		msg_add(failures, "ids: %d of the target's %d threads paired", ids->n,
			t->nthreads);
}

/* Which of the target's threads tid is by our id, -1 if none.  An id
 * of its namespace's only (1, or a small one that is not ours) is named
 * as such. */
static int host_index(const struct thread_ids *ids, long tid, const char *what,
		      char **failures)
{
	for (int i = 0; i < ids->n; i++)
		if (ids->host[i] == tid)
			return i;
	for (int i = 0; i < ids->n; i++)
		if (ids->ns[i] == tid) {
			msg_add(failures, "%s: %ld is the namespace's id of our %d", what, tid,
				(int)ids->host[i]);
			return -1;
		}
	msg_add(failures, "%s: %ld is none of the target's thread ids", what, tid);
	return -1;
}

/* Every one of the target's threads was named (seen[i]). */
static void all_seen(const struct thread_ids *ids, const bool *seen, const char *what,
		     char **failures)
{
	for (int i = 0; i < ids->n; i++)
		if (!seen[i])
			msg_add(failures, "%s: thread %d (%d in its namespace) not shown", what,
				(int)ids->host[i], (int)ids->ns[i]);
}

/* What line 2 of top's screen says after "Showing: ", up to two spaces;
 * "" while it is not drawn. */
static void top_showing(const char *sock, char *buf, size_t size)
{
	char *s = NULL, *p, *end;

	buf[0] = 0;
	if (tmux_cmd(sock, &s, (char *[]){ "capture-pane", "-p", "-t", "top", NULL }) == 0 &&
	    (p = strstr(s, "Showing: "))) {
		p += 9;
		end = strstr(p, "  ");
		if (!end || end > p + strcspn(p, "\n"))
			end = p + strcspn(p, "\n");
		snprintf(buf, size, "%.*s", (int)(end - p), p);
	}
	free(s);
}

/* Poll until "Showing: " is not old (and, with threads, the header counts
 * them all); false after 20 s. */
static bool top_wait(const char *sock, const char *old, int threads, char *buf, size_t size)
{
	long long deadline = now_ms() + 20000;
	char want[32];

	snprintf(want, sizeof(want), "Threads: %d ", threads);
	while (now_ms() < deadline) {
		char *s = NULL;
		bool counted = true;

		if (threads) {
			counted = tmux_cmd(sock, &s, (char *[]){ "capture-pane", "-p", "-t", "top",
							     NULL }) == 0 && strstr(s, want);
			free(s);
		}
		top_showing(sock, buf, size);
		if (counted && buf[0] && strcmp(buf, old))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* top in a tmux pane: T shows each thread alone, by its id, in order;
 * each must be one of ours, and all of them must come. */
static void check_top(struct target *t, const struct thread_ids *ids, char **failures)
{
	char dir[] = "/tmp/check_containers.XXXXXX", sock[64], cmd[PATH_MAX + 96];
	char prev[256], cur[256], list[64 * 12] = "";
	bool seen[64] = { false };
	int shown = 0;
	size_t len = 0;

	if (!mkdtemp(dir)) {
		msg_add(failures, "top: mkdtemp: %m");
		return;
	}
	snprintf(sock, sizeof(sock), "%s/tmux", dir);
	snprintf(cmd, sizeof(cmd), "'%s' top --idle --delay 0.5 --pid %d; sleep 60",
		 pystrobe_path(), (int)t->py_pid);
	if (tmux_cmd(sock, NULL, (char *[]){ "new-session", "-d", "-x", "160", "-y", "40", "-s",
					 "top", cmd, NULL }) != 0) {
		msg_add(failures, "top: tmux new-session failed");
		rm_rf(dir);
		return;
	}
	/* Every thread sampled once before T, or T would skip one. */
	if (!top_wait(sock, "", ids->n, prev, sizeof(prev)) || strcmp(prev, "all threads")) {
		msg_add(failures, "top: no \"Threads: %d\" and \"Showing: all threads\": \"%s\"",
			ids->n, prev);
		goto out;
	}
	for (int i = 0; i <= ids->n + 1; i++) {
		long tid;
		int k;

		tmux_cmd(sock, NULL, (char *[]){ "send-keys", "-t", "top", "T", NULL });
		if (!top_wait(sock, prev, 0, cur, sizeof(cur))) {
			msg_add(failures, "top: T: \"Showing: %s\" stayed", prev);
			break;
		}
		if (!strcmp(cur, "all threads"))
			break;
		tid = strncmp(cur, "thread ", 7) ? -1 : strtol(cur + 7, NULL, 10);
		k = host_index(ids, tid, "top", failures);
		if (k >= 0)
			seen[k] = true;
		shown++;
		if (len < sizeof(list))
			len += snprintf(list + len, sizeof(list) - len, " %ld", tid);
		snprintf(prev, sizeof(prev), "%s", cur);
	}
	if (shown != ids->n)
		msg_add(failures, "top: T showed %d threads, not %d", shown, ids->n);
	else
		printf("containers: %s: top: T showed threads%s\n", t->ti->label, list);
	all_seen(ids, seen, "top", failures);
out:
	tmux_cmd(sock, NULL, (char *[]){ "kill-server", NULL });
	rm_rf(dir);
}

/* The ids a trace names, "KIND ID" a line: chrometrace's pid and tid
 * fields, its thread_name events' tids ("named"), speedscope's profile
 * names' tids ("profile"; -1 for a name without one). */
static const char ids_py[] =
	"import json, re, sys\n"
	"d = json.load(open(sys.argv[2], encoding='utf-8'))\n"
	"out = set()\n"
	"if sys.argv[1] == 'chrometrace':\n"
	"    out.add(('pid', d['otherData']['pid']))\n"
	"    for e in d['traceEvents']:\n"
	"        out.add(('pid', e['pid']))\n"
	"        out.add(('tid', e['tid']))\n"
	"        if e['ph'] == 'M' and e['name'] == 'thread_name':\n"
	"            out.add(('named', e['tid']))\n"
	"else:\n"
	"    for p in d['profiles']:\n"
	"        m = re.search(r'\\(tid (\\d+)\\)$|^thread (\\d+)$', p['name'])\n"
	"        out.add(('profile', int(m.group(1) or m.group(2)) if m else -1))\n"
	"for k, v in sorted(out):\n"
	"    print(k, v)\n";

/* record --threads --idle -f format: every id in the trace ours. */
static void check_trace(struct target *t, const struct thread_ids *ids, const char *format,
			char **failures)
{
	char pid[16], path[PATH_MAX + 64], how[96], what[64], *text, *line, *save = NULL;
	bool seen[64] = { false };
	struct run r;

	snprintf(what, sizeof(what), "record -f %s", format);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	snprintf(path, sizeof(path), "%s/trace.%s", t->dir, format);
	if (run_pystrobe(&r, "record", "--threads", "--idle", "-d", "1", "-f", format, "-o",
			 path, "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "%s: pystrobe %s: %.1000s", what,
			run_describe(&r, how, sizeof(how)), r.err);
		run_free(&r);
		return;
	}
	run_free(&r);
	if (run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), "-c",
						    (char *)ids_py, (char *)format, path,
						    NULL }) < 0 || run_exit(&r) != 0) {
		msg_add(failures, "%s: reading %s: %s%s", what, path, r.out ? r.out : "",
			r.err ? r.err : "");
		run_free(&r);
		return;
	}
	text = strdup(r.out);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char kind[16];
		long id;
		int k;

		if (sscanf(line, "%15s %ld", kind, &id) != 2) {
			msg_add(failures, "%s: %s", what, line);
			continue;
		}
		if (!strcmp(kind, "pid")) {
			if (id != t->py_pid)
				msg_add(failures, "%s: pid %ld, not ours, %d", what, id,
					(int)t->py_pid);
			continue;
		}
		k = host_index(ids, id, what, failures);
		/* The tracks are the thread_name events, the profiles
		 * speedscope's: each thread must have one. */
		if (k >= 0 && strcmp(kind, "tid"))
			seen[k] = true;
	}
	free(text);
	all_seen(ids, seen, what, failures);
	for (char *c = r.out; *c; c++)
		if (*c == '\n' && c[1])
			*c = ',';
	printf("containers: %s: %s: %s", t->ti->label, what, r.out);
	run_free(&r);
}

/* top and the trace formats of a target in a PID namespace: each
 * thread shown or named by our id, never its namespace's. */
START_TEST(test_views)
{
	const struct test_interp *ti = views[_i];
	const char *wrap[16];
	char mount[PATH_MAX + 32], why[512], *failures = NULL;
	struct thread_ids ids;
	struct target t;

	pidns_wrapper(ti, NULL, mount, sizeof(mount), wrap);
	target_set_wrapper(wrap);
	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: parked.py in a PID namespace: %s", ti->label, why);
	target_set_wrapper(NULL);
	ck_assert_int_ne(t.py_pid, t.ns_pid);
	thread_ids(&t, &ids, &failures);
	check_top(&t, &ids, &failures);
	check_trace(&t, &ids, "chrometrace", &failures);
	check_trace(&t, &ids, "speedscope", &failures);
	target_stop(&t);
	report("views", ti, failures);
	free(failures);
}
END_TEST

/* pystrobe with these arguments, stderr to errpath, in the background. */
static pid_t spawn_pystrobe(const char *errpath, char *const args[])
{
	char *argv[24] = { (char *)pystrobe_path() };
	pid_t pid;

	for (int i = 0; args[i] && i < 22; i++)
		argv[i + 1] = args[i];
	pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int nul = open("/dev/null", O_RDWR);

	if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	execv(argv[0], argv);
	_exit(127);
}

/* The helper's pid, from PYSTROBE_DEBUG_HELPER's line in errpath; 0 when
 * it has not said so within a few seconds. */
static pid_t await_helper(const char *errpath)
{
	long long deadline = now_ms() + 8000;

	while (now_ms() < deadline) {
		char *text = slurp(errpath), *p = text ? strstr(text, "symbolization helper ") : NULL;
		pid_t h = p ? (pid_t)strtol(p + 21, NULL, 10) : 0;

		free(text);
		if (h > 0)
			return h;
		usleep(20000);
	}
	return 0;
}

/* A line of /proc/PID/status, value only, into buf; "" if none. */
static const char *status_line(pid_t pid, const char *key, char *buf, size_t size)
{
	char path[64], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = slurp(path);
	p = text ? strstr(text, key) : NULL;
	buf[0] = 0;
	if (p) {
		p += strlen(key);
		snprintf(buf, size, "%.*s", (int)strcspn(p, "\n"), p);
	}
	free(text);
	return buf;
}

static int wait_exit(pid_t pid, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int st;

	while (now_ms() < deadline) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* The helper's /proc status: nobody's ids, nothing else to its name. */
static void check_helper_status(pid_t h, pid_t parent, char **failures)
{
	struct passwd *pw = getpwnam("nobody");
	unsigned uid = pw ? pw->pw_uid : 65534;
	char want[64], buf[128];

	snprintf(want, sizeof(want), "\t%u\t%u\t%u\t%u", uid, uid, uid, uid);
	if (strcmp(status_line(h, "\nUid:", buf, sizeof(buf)), want))
		msg_add(failures, "helper %d: Uid:%s, not%s", (int)h, buf, want);
	if (strcmp(status_line(h, "\nCapEff:", buf, sizeof(buf)), "\t0000000000000000"))
		msg_add(failures, "helper %d: CapEff:%s", (int)h, buf);
	if (strcmp(status_line(h, "\nNoNewPrivs:", buf, sizeof(buf)), "\t1"))
		msg_add(failures, "helper %d: NoNewPrivs:%s", (int)h, buf);
	if (atoi(status_line(h, "\nPPid:", buf, sizeof(buf))) != parent)
		msg_add(failures, "helper %d: PPid:%s, not pystrobe's %d", (int)h, buf, (int)parent);
}

/* A target in a root not ours (the sid root): its files are parsed by
 * the helper, as nobody, with the same result; the helper killed, record
 * goes on with library+0xOFFSET; pystrobe killed, the helper goes. */
static void check_helper(struct target *t, const char *pid, char **failures)
{
	char errpath[PATH_MAX + 32], out[PATH_MAX + 32], buf[256], how[96];
	char *args[] = { "record", "--native", "--idle", "-r", "200", "-d", "3", "-f",
			 "collapsed", "-o", out, "--pid", (char *)pid, NULL };
	struct run a, b;
	char *text;
	pid_t ps, h;
	int rc;

	setenv("PYSTROBE_DEBUG_HELPER", "1", 1);
	if (run_pystrobe(&a, "dump", "--native", "--pid", pid, NULL) < 0 || run_exit(&a) != 0)
		msg_add(failures, "helper: dump --native: %s: %.1000s",
			run_describe(&a, how, sizeof(how)), a.err);
	else if (!strstr(a.err, "symbolization helper ") || !strstr(a.err, " runs as uid "))
		msg_add(failures, "helper: dump --native did not use the helper: %.1000s", a.err);
	setenv("PYSTROBE_SYMBOLIZE_HELPER", "never", 1);
	if (run_pystrobe(&b, "dump", "--native", "--pid", pid, NULL) < 0 || run_exit(&b) != 0 ||
	    strstr(b.err, "symbolization helper"))
		msg_add(failures, "helper: dump --native, never: %s: %.1000s",
			run_describe(&b, how, sizeof(how)), b.err);
	unsetenv("PYSTROBE_SYMBOLIZE_HELPER");
	if (a.out && b.out && strcmp(a.out, b.out))
		msg_add(failures, "helper: the helper's dump:\n%.3000s\nis not pystrobe's own:\n%.3000s",
			a.out, b.out);
	if (a.out && (!strstr(a.out, "qsort") || !strstr(a.out, "clock_nanosleep")))
		msg_add(failures, "helper: native frames not named:\n%.3000s", a.out);
	run_free(&a);
	run_free(&b);

	/* The helper killed mid-record. */
	snprintf(errpath, sizeof(errpath), "%s/record.err", t->dir);
	snprintf(out, sizeof(out), "%s/helper-killed.txt", t->dir);
	ps = spawn_pystrobe(errpath, args);
	h = ps > 0 ? await_helper(errpath) : 0;
	if (h <= 0) {
		msg_add(failures, "helper: record --native said no helper");
	} else {
		check_helper_status(h, ps, failures);
		usleep(500000);
		kill(h, SIGKILL);
	}
	rc = ps > 0 ? wait_exit(ps, 15000) : -1;
	text = slurp(errpath);
	if (rc != 0 || !text || !strstr(text, "native frames unnamed (symbolization helper lost)") ||
	    !strstr(text, "symbolization helper lost ("))
		msg_add(failures, "helper killed: record exit %d, not 0 with the loss counted: %.1000s",
			rc, text ? text : "");
	else
		printf("containers: helper killed: %s", strstr(text, "pystrobe: ") ?: text);
	free(text);
	text = slurp(out);
	if (!text || !strstr(text, "libc.so.6+0x"))
		msg_add(failures, "helper killed: no library+0xOFFSET frame after:\n%.2000s",
			text ? text : "(no file)");
	free(text);

	/* pystrobe killed: the helper must not outlive it. */
	ps = spawn_pystrobe(errpath, args);
	h = ps > 0 ? await_helper(errpath) : 0;
	if (h > 0) {
		kill(ps, SIGKILL);
		wait_exit(ps, 5000);
		for (int i = 0; i < 100 && kill(h, 0) == 0 &&
		     status_line(h, "\nState:", buf, sizeof(buf))[1] != 'Z'; i++)
			usleep(20000);
		if (kill(h, 0) == 0 && status_line(h, "\nState:", buf, sizeof(buf))[1] != 'Z')
			msg_add(failures, "helper %d outlived pystrobe: State:%s", (int)h, buf);
	} else {
		msg_add(failures, "helper: second record --native said no helper");
		if (ps > 0)
			wait_exit(ps, 15000);
	}
	unsetenv("PYSTROBE_DEBUG_HELPER");
}

/* dump --native and record --native of native_stack.py's qsort callback. */
START_TEST(test_native)
{
	const struct test_interp *ti = &interps[_i];
	const char *wrap[16];
	char mount[PATH_MAX + 32], why[512], script[PATH_MAX], verify[PATH_MAX + 64];
	char pid[16], path[PATH_MAX + 64], how[96], *failures = NULL;
	struct target t;
	struct run r;

	pidns_wrapper(ti, NULL, mount, sizeof(mount), wrap);
	target_set_wrapper(wrap);
	test_interp_script(ti, "tests/targets/native_stack.py", script, sizeof(script));
	if (target_start(&t, ti, why, sizeof(why), script, "qsort", NULL) < 0 ||
	    target_wait_file(&t, "truth.json", TARGET_READY_MS, why, sizeof(why)) < 0)
		ck_abort_msg("%s: native_stack.py in a PID namespace: %s", ti->label, why);
	target_set_wrapper(NULL);
	/* native_stack.py's truth has its pid but no thread count. */
	{
		char *text = slurp(t.truth), *p = text ? strstr(text, "\"pid\":") : NULL;

		t.ns_pid = p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
		t.py_pid = target_host_pid(&t, t.ns_pid);
		free(text);
	}
	ck_assert_int_gt(t.py_pid, 0);
	ck_assert_int_ne(t.py_pid, t.pid);
	snprintf(pid, sizeof(pid), "%d", (int)t.py_pid);
	snprintf(verify, sizeof(verify), "%s/tests/targets/native_verify.py", test_srcdir());

	snprintf(path, sizeof(path), "%s/native.json", t.dir);
	if (run_pystrobe(&r, "dump", "--json", "--native", "--pid", pid, NULL) < 0 ||
	    run_exit(&r) != 0 || write_file(path, r.out, r.out_len) < 0) {
		msg_add(&failures, "dump --native: %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
	} else {
		if (strstr(r.out, "\"native_error\":\""))
			msg_add(&failures, "dump --native: a thread did not merge:\n%.3000s",
				r.out);
		run_free(&r);
		if (run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), verify,
							    "qsort", t.truth, path, NULL }) == 0 &&
		    run_exit(&r) != 0)
			msg_add(&failures, "dump --native: native_verify.py:\n%s%s", r.out, r.err);
	}
	run_free(&r);

	snprintf(path, sizeof(path), "%s/qsort.txt", t.dir);
	if (run_pystrobe(&r, "record", "--native", "--idle", "-r", "200", "-d", "0.5", "-f",
			 "collapsed", "-o", path, "--pid", pid, NULL) < 0 || run_exit(&r) != 0) {
		msg_add(&failures, "record --native: %s: %.1000s",
			run_describe(&r, how, sizeof(how)), r.err);
	} else {
		const char *q = strstr(r.err, " merge error");
		long merge = 0;

		while (q && q > r.err && q[-1] >= '0' && q[-1] <= '9')
			q--;
		if (q)
			merge = strtol(q, NULL, 10);
		/* A thread slow to stop on a loaded machine: one at most. */
		if (merge > 1)
			msg_add(&failures, "record --native: %s", r.err);
		else
			printf("containers: %s: record --native: %s", ti->label, r.err);
	}
	run_free(&r);
	if (ti->root[0])
		check_helper(&t, pid, &failures);
	target_stop(&t);
	report("native", ti, failures);
	free(failures);
}
END_TEST

static const struct test_interp *pick(void)
{
	return test_interp_pick(interps, ninterps, 11);
}

/* nobody, who does not own t, reading it: exit 4 and one line.  The
 * build tree may sit where nobody cannot reach: nobody runs a copy. */
static void check_nobody(struct target *t, char **failures)
{
	char dir[] = "/tmp/check_containers.XXXXXX", bin[64], cmd[PATH_MAX + 160], pid[16];
	char how[96];
	struct run r;

	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return;
	snprintf(bin, sizeof(bin), "%s/pystrobe", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s", pystrobe_path(), bin, bin);
	snprintf(pid, sizeof(pid), "%d", (int)t->py_pid);
	if (system(cmd) != 0 ||
	    run_cmd(&r, RUN_TIMEOUT_MS, (char *[]){ "setpriv", "--reuid=65534", "--regid=65534",
						    "--clear-groups", bin, "dump", "--pid", pid,
						    NULL }) < 0) {
		msg_add(failures, "as nobody: cannot run pystrobe");
		rm_rf(dir);
		return;
	}
	if (run_exit(&r) != 4 || strncmp(r.err, "pystrobe: permission denied", 27) ||
	    strchr(r.err, '\n') != r.err + strlen(r.err) - 1)
		msg_add(failures, "as nobody: %s, not exit 4 and one line: %s",
			run_describe(&r, how, sizeof(how)), r.err);
	else
		printf("containers: userns, as nobody: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}

static void one_wrapped(const char *what, const char *const *wrap, bool as_nobody)
{
	const struct test_interp *ti = pick();
	char why[512], *failures = NULL;
	struct target t;

	target_set_wrapper(wrap);
	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: %s: parked.py: %s", ti->label, what, why);
	target_set_wrapper(NULL);
	dump_compare(what, &t, "dump.json", &failures);
	check_text(&t, &failures);
	if (as_nobody)
		check_nobody(&t, &failures);
	target_stop(&t);
	report(what, ti, failures);
	free(failures);
}

START_TEST(test_nested)
{
	static const char *const wrap[] = { "unshare", "--pid", "--fork", "--mount-proc",
					    "unshare", "--pid", "--fork", "--mount-proc", NULL };

	one_wrapped("nested", wrap, false);
}
END_TEST

/* A rootless container, read by root from the host: exact; by nobody, who
 * does not own it: refused. */
START_TEST(test_userns)
{
	static const char *const wrap[] = { "unshare", "--user", "--map-root-user", "--pid",
					    "--fork", "--mount-proc", NULL };

	one_wrapped("userns", wrap, true);
}
END_TEST

/* pystrobe in the target's namespace: the shell is 1, the target its
 * child; pystrobe reads it by the namespace's pid. */
static void run_inside(const struct test_interp *ti, struct run *r, const char *outdir,
		       const char *dropcaps)
{
	char script[PATH_MAX], cmd[4 * PATH_MAX];

	test_interp_script(ti, "tests/targets/parked.py", script, sizeof(script));
	snprintf(cmd, sizeof(cmd),
		 "env %s %s %s %s & i=0; while [ ! -e %s/truth.json ] && [ $i -lt 600 ]; do "
		 "sleep 0.1; i=$((i+1)); done; sleep 1; %s %s dump --json --pid $!",
		 ti->env[0] ? ti->env : "PYTHONDONTWRITEBYTECODE=1", ti->path, script, outdir,
		 outdir, dropcaps, pystrobe_path());
	ck_assert_int_eq(run_cmd(r, RUN_TIMEOUT_MS, (char *[]){ "unshare", "--pid", "--fork",
								"--mount-proc", "sh", "-c", cmd,
								NULL }), 0);
}

START_TEST(test_inside)
{
	char dir[] = "/tmp/check_containers.XXXXXX", truth[64], dump[64], how[96];
	char script[PATH_MAX + 32];
	const struct test_interp *ti = NULL;
	struct run r, c;

	/* pystrobe runs beside the target: not in a root of its own. */
	for (int i = 0; i < ninterps; i++)
		if (!interps[i].root[0] && (!ti || (interps[i].minor == 11 && ti->minor != 11)))
			ti = &interps[i];
	if (!ti) {
		test_skip("containers: inside: every interpreter left runs in a root");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	run_inside(ti, &r, dir, "");
	snprintf(truth, sizeof(truth), "%s/truth.json", dir);
	snprintf(dump, sizeof(dump), "%s/dump.json", dir);
	ck_assert_msg(run_exit(&r) == 0, "inside: pystrobe %s: %s",
		      run_describe(&r, how, sizeof(how)), r.err);
	ck_assert_int_eq(write_file(dump, r.out, r.out_len), 0);
	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	ck_assert_int_eq(run_cmd(&c, RUN_TIMEOUT_MS, (char *[]){ (char *)test_python3(), script,
								 truth, dump, NULL }), 0);
	ck_assert_msg(run_exit(&c) == 0, "inside: compare_dump.py:\n%s%s", c.out, c.err);
	printf("containers: inside: %s", c.out);
	run_free(&c);
	run_free(&r);
	rm_rf(dir);

	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/check_containers.XXXXXX")));
	run_inside(ti, &r, dir, "setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace");
	ck_assert_msg(run_exit(&r) == 4, "inside, no CAP_SYS_PTRACE: %s, not exit 4: %s",
		      run_describe(&r, how, sizeof(how)), r.err);
	ck_assert_msg(!strncmp(r.err, "pystrobe: permission denied", 27) &&
		      strchr(r.err, '\n') == r.err + strlen(r.err) - 1 &&
		      strstr(r.err, "CAP_SYS_PTRACE") && strstr(r.err, "--cap-add SYS_PTRACE"),
		      "inside, no CAP_SYS_PTRACE: not one line saying how: %s", r.err);
	printf("containers: inside, no CAP_SYS_PTRACE: %s", r.err);
	run_free(&r);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("containers");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ninterps = test_interps(&interps);
	/* One plain and one in a root are enough: the ids are pystrobe's
	 * either way, the interpreter only what it reads them from. */
	if (ninterps)
		views[nviews++] = pick();
	for (int i = 0; i < ninterps; i++)
		if (interps[i].root[0]) {
			if (&interps[i] != views[0])
				views[nviews++] = &interps[i];
			break;
		}
	tc = tcase_create("containers");
	tcase_set_timeout(tc, 300);
	add_have_interps(tc, ninterps);
	tcase_add_loop_test(tc, test_pidns, 0, ninterps);
	tcase_add_loop_test(tc, test_native, 0, ninterps);
	tcase_add_loop_test(tc, test_views, 0, nviews);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_userns);
	tcase_add_test(tc, test_inside);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
