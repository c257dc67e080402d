#include "interpreters.h"
#include "suite.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_INTERPS 32
#define FT_LABEL "3.13t ft-build"

static struct test_interp interps[MAX_INTERPS];
static int ninterps = -1;

const char *test_srcdir(void)
{
	const char *s = getenv("srcdir");
	return s && *s ? s : ".";
}

const char *test_builddir(void)
{
	const char *s = getenv("PYSTROBE_BUILDDIR");
	return s && *s ? s : ".";
}

static int is_exec(const char *path)
{
	return access(path, X_OK) == 0;
}

/* A script that starts another program (pyenv's shims are bash running
 * `pyenv exec`) costs its own start-up on every call: a third of a second
 * per compare script on a busy machine, hundreds of times a suite. */
static bool is_wrapper_script(const char *path)
{
	char head[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool script;

	if (fd < 0)
		return false;
	script = read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
	close(fd);
	return script;
}

/* The first python3 on PATH that is a program, else the first at all. */
const char *test_python3(void)
{
	static char found[PATH_MAX];
	char first[PATH_MAX] = "";
	const char *dir = getenv("PATH");

	if (found[0])
		return found;
	while (dir && *dir) {
		size_t n = strcspn(dir, ":");

		if (n && n + sizeof("/python3") <= sizeof(found)) {
			snprintf(found, sizeof(found), "%.*s/python3", (int)n, dir);
			if (is_exec(found)) {
				if (!is_wrapper_script(found))
					return found;
				if (!first[0])
					snprintf(first, sizeof(first), "%s", found);
			}
		}
		dir += n + (dir[n] == ':');
	}
	if (first[0]) {
		snprintf(found, sizeof(found), "%s", first);
		return found;
	}
	fprintf(stderr, "interpreters: MISSING python3 in PATH for the tests' own scripts\n");
	snprintf(found, sizeof(found), "python3");
	return found;
}

static struct test_interp *add(const char *label, const char *path, int minor)
{
	struct test_interp *ti;

	if (ninterps >= MAX_INTERPS)
		return NULL;
	ti = &interps[ninterps++];
	memset(ti, 0, sizeof(*ti));
	snprintf(ti->label, sizeof(ti->label), "%s", label);
	snprintf(ti->path, sizeof(ti->path), "%s", path);
	ti->minor = minor;
	return ti;
}

static int cmp_version(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int xa = 0, xb = 0, xc = 0, ya = 0, yb = 0, yc = 0;

	sscanf(x, "%d.%d.%d", &xa, &xb, &xc);
	sscanf(y, "%d.%d.%d", &ya, &yb, &yc);
	if (xa != ya)
		return xa - ya;
	if (xb != yb)
		return xb - yb;
	return xc - yc;
}

static const char *pyenv_root(void)
{
	const char *r = getenv("PYENV_ROOT");
	return r && *r ? r : "/root/.pyenv";
}

static void find_pyenv(void)
{
	char dir[PATH_MAX], path[PATH_MAX], label[96];
	char *names[64];
	int n = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/versions", pyenv_root());
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "interpreters: MISSING pyenv (no %s)\n", dir);
		return;
	}
	while ((de = readdir(d)) && n < 64) {
		int major, minor;
		if (sscanf(de->d_name, "%d.%d", &major, &minor) != 2)
			continue;
		if (major != 3 || minor < 7)
			continue;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_version);
	for (int i = 0; i < n; i++) {
		int minor = 0;
		sscanf(names[i], "3.%d", &minor);
		snprintf(path, sizeof(path), "%s/versions/%s/bin/python3.%d", pyenv_root(), names[i], minor);
		if (is_exec(path)) {
			snprintf(label, sizeof(label), "%s pyenv", names[i]);
			add(label, path, minor);
		}
		free(names[i]);
	}
}

/* A venv, cached outside the tree: from pyenv's 3.12 when there is one, else
 * from Debian's python3.11 (a venv of a static build is a case of its own). */
static void find_venv(void)
{
	const struct test_interp *base = NULL;
	char dir[256], py[PATH_MAX], cmd[PATH_MAX * 3], label[96];
	int count = ninterps;

	for (int i = 0; i < count; i++)
		if (strstr(interps[i].label, "pyenv") && interps[i].minor == 12)
			base = &interps[i];
	for (int i = 0; i < count && !base; i++)
		if (strstr(interps[i].label, "debian-static"))
			base = &interps[i];
	if (!base) {
		fprintf(stderr, "interpreters: MISSING venv (no pyenv 3.12 or Debian python3.11 to make one from)\n");
		return;
	}
	snprintf(dir, sizeof(dir), "/var/cache/pystrobe/venv-%s", base->label);
	for (char *p = dir + strlen("/var/cache/pystrobe/"); *p; p++)
		if (*p == ' ')
			*p = '-';
	snprintf(py, sizeof(py), "%s/bin/python", dir);
	if (!is_exec(py)) {
		snprintf(cmd, sizeof(cmd), "mkdir -p /var/cache/pystrobe && '%s' -m venv --without-pip '%s' >/dev/null 2>&1",
			 base->path, dir);
		if (system(cmd) != 0 || !is_exec(py)) {
			fprintf(stderr, "interpreters: MISSING venv (could not create %s)\n", dir);
			return;
		}
	}
	snprintf(label, sizeof(label), "3.%d venv", base->minor);
	add(label, py, base->minor);
}

/* A pyenv shim: a bash script that execs the real interpreter. */
static void find_shim(void)
{
	char shim[PATH_MAX], version[32] = "";
	struct test_interp *ti;
	int count = ninterps;

	/* The shim runs whatever PYENV_VERSION names: pick our 3.10. */
	for (int i = 0; i < count; i++)
		if (strstr(interps[i].label, "pyenv") && interps[i].minor == 10)
			sscanf(interps[i].label, "%31s", version);
	snprintf(shim, sizeof(shim), "%s/shims/python3.10", pyenv_root());
	if (!is_exec(shim) || !version[0]) {
		fprintf(stderr, "interpreters: MISSING pyenv shim (no %s or no pyenv 3.10)\n", shim);
		return;
	}
	ti = add("3.10 pyenv-shim", shim, 10);
	if (ti)
		snprintf(ti->env, sizeof(ti->env), "PYENV_VERSION=%s", version);
}

/* Debian's newer interpreters, in a debootstrap root of sid (built on first
 * use by tests/setup-sid-root.sh).  Debug builds get a label of their own,
 * "3.15-dbg", so PYSTROBE_TEST_ONLY=3.15 keeps both and =3.15-dbg one. */
static void find_sid_root(void)
{
	static const struct {
		const char *label, *path;
		int minor;
		bool optional;
	} sid[] = {
		{ "3.14 sid-root", "/usr/bin/python3.14", 14, false },
		{ "3.14-dbg sid-root", "/usr/bin/python3.14d", 14, true },
		{ "3.15 sid-root", "/usr/bin/python3.15", 15, false },
		{ "3.15-dbg sid-root", "/usr/bin/python3.15d", 15, false },
	};
	char cmd[PATH_MAX * 2], root[PATH_MAX] = "", path[PATH_MAX * 2];
	struct test_interp *ti;
	FILE *p;

	if (getenv("PYSTROBE_NO_SID_ROOT")) {
		fprintf(stderr, "interpreters: MISSING 3.14, 3.15 (PYSTROBE_NO_SID_ROOT is set)\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "sh '%s/tests/setup-sid-root.sh'", test_srcdir());
	p = popen(cmd, "r");
	if (!p || !fgets(root, sizeof(root), p)) {
		if (p)
			pclose(p);
		fprintf(stderr, "interpreters: MISSING 3.14, 3.15 (debootstrap root could not be built)\n");
		return;
	}
	pclose(p);
	root[strcspn(root, "\n")] = 0;
	for (size_t i = 0; i < sizeof(sid) / sizeof(sid[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, sid[i].path);
		if (!is_exec(path)) {
			if (!sid[i].optional)
				fprintf(stderr, "interpreters: MISSING %s (no %s)\n", sid[i].label, path);
			continue;
		}
		ti = add(sid[i].label, sid[i].path, sid[i].minor);
		if (ti)
			snprintf(ti->root, sizeof(ti->root), "%s", root);
	}
}

/* Whether label contains one of the comma-separated substrings of only. */
static bool label_wanted(const char *label, const char *only)
{
	while (*only) {
		size_t n = strcspn(only, ",");

		for (const char *p = label; n && *p; p++)
			if (!strncmp(p, only, n))
				return true;
		only += n + (only[n] == ',');
	}
	return false;
}

/* A free-threaded CPython 3.13 (python3.13t, no GIL), which no distribution
 * packages: built on first use from Debian 13's source package by
 * tests/setup-ft-python.sh and cached under /var/cache/pystrobe.  Not built
 * when PYSTROBE_TEST_ONLY leaves it out (the build takes minutes). */
static void find_ft_python(const char *only)
{
	char cmd[PATH_MAX * 2], prefix[PATH_MAX] = "", path[PATH_MAX * 2];
	FILE *p;

	if (only && *only && !label_wanted(FT_LABEL, only))
		return;
	/* Opt-in: a plain `make check` would build it first (minutes of
	 * CPU); CI's phase 5 names it. */
	if ((!only || !*only) && !getenv("PYSTROBE_WITH_FT")) {
		fprintf(stderr, "interpreters: MISSING " FT_LABEL " (opt-in: PYSTROBE_WITH_FT=1 "
			"or PYSTROBE_TEST_ONLY=3.13t)\n");
		test_skip("no free-threaded 3.13t in this run: opt-in (PYSTROBE_WITH_FT=1 or "
			  "PYSTROBE_TEST_ONLY=3.13t): its first build takes minutes");
		return;
	}
	if (getenv("PYSTROBE_NO_FT_PYTHON")) {
		fprintf(stderr, "interpreters: MISSING " FT_LABEL " (PYSTROBE_NO_FT_PYTHON is set)\n");
		test_skip("no free-threaded 3.13t: PYSTROBE_NO_FT_PYTHON is set");
		return;
	}
	snprintf(cmd, sizeof(cmd), "sh '%s/tests/setup-ft-python.sh'", test_srcdir());
	p = popen(cmd, "r");
	if (!p || !fgets(prefix, sizeof(prefix), p))
		prefix[0] = 0;
	if (p)
		pclose(p);
	prefix[strcspn(prefix, "\n")] = 0;
	snprintf(path, sizeof(path), "%s/bin/python3.13t", prefix);
	if (!prefix[0] || !is_exec(path)) {
		fprintf(stderr, "interpreters: MISSING " FT_LABEL " (tests/setup-ft-python.sh could not build it)\n");
		test_skip("no free-threaded 3.13t: tests/setup-ft-python.sh builds it "
			  "(it said why above)");
		return;
	}
	add(FT_LABEL, path, 13);
}

int test_interps(const struct test_interp **out)
{
	const char *only = getenv("PYSTROBE_TEST_ONLY");

	if (ninterps < 0) {
		ninterps = 0;
		find_pyenv();
		if (is_exec("/usr/bin/python3.11"))
			add("3.11 debian-static", "/usr/bin/python3.11", 11);
		else
			fprintf(stderr, "interpreters: MISSING Debian /usr/bin/python3.11\n");
		find_sid_root();
		find_ft_python(only);
		find_venv();
		find_shim();
		/* PYSTROBE_TEST_ONLY=S[,S...] narrows the list while developing. */
		if (only && *only) {
			int j = 0;
			for (int i = 0; i < ninterps; i++)
				if (label_wanted(interps[i].label, only))
					interps[j++] = interps[i];
			fprintf(stderr, "interpreters: PYSTROBE_TEST_ONLY=%s keeps %d\n", only, j);
			ninterps = j;
		}
		fprintf(stderr, "interpreters: testing on %d:", ninterps);
		for (int i = 0; i < ninterps; i++)
			fprintf(stderr, " [%s]", interps[i].label);
		fprintf(stderr, "\n");
	}
	*out = interps;
	return ninterps;
}

/* Copy from to to, leaving to alone when it already holds the same bytes.
 * Scripts in a root sit at one shared path, and a target of another test
 * (or of another run of the suite) may be running that file: dump marks
 * the frames of a file changed after its process started, so rewriting an
 * identical file would make that target's frames "changed".  A file that
 * does differ goes in whole, by rename(). */
static void copy_file(const char *from, const char *to)
{
	size_t nfrom, nto;
	char *want = read_file(from, &nfrom), *have = read_file(to, &nto);
	char tmp[PATH_MAX * 3 + 16];
	int fd;

	if (!want || (have && nto == nfrom && memcmp(want, have, nfrom) == 0))
		goto out;
	snprintf(tmp, sizeof(tmp), "%s.%d", to, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		goto out;
	if (write(fd, want, nfrom) != (ssize_t)nfrom) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, to) < 0)
		unlink(tmp);
out:
	free(want);
	free(have);
}

void test_interp_script(const struct test_interp *ti, const char *script,
			char *buf, size_t size)
{
	char src[PATH_MAX], dst[PATH_MAX * 3], dir[PATH_MAX + 32];
	const char *base;

	if (script[0] == '/')
		snprintf(src, sizeof(src), "%s", script);
	else
		snprintf(src, sizeof(src), "%s/%s", test_srcdir(), script);
	if (!ti->root[0]) {
		char *abs = realpath(src, NULL);
		snprintf(buf, size, "%s", abs ? abs : src);
		free(abs);
		return;
	}
	base = strrchr(src, '/');
	base = base ? base + 1 : src;
	snprintf(dir, sizeof(dir), "%s/tmp/pystrobe-tests", ti->root);
	mkdir(dir, 0755);
	snprintf(dst, sizeof(dst), "%s/%s", dir, base);
	copy_file(src, dst);
	snprintf(buf, size, "/tmp/pystrobe-tests/%s", base);
}

void test_interp_shared_dir(const struct test_interp *ti, char *host,
			    char *inside, size_t size)
{
	char tmpl[PATH_MAX + 32];

	if (ti->root[0]) {
		snprintf(tmpl, sizeof(tmpl), "%s/tmp/pystrobe-XXXXXX", ti->root);
		if (!mkdtemp(tmpl))
			tmpl[0] = 0;
		snprintf(host, size, "%s", tmpl);
		snprintf(inside, size, "%s", tmpl + strlen(ti->root));
		return;
	}
	snprintf(tmpl, sizeof(tmpl), "/tmp/pystrobe-XXXXXX");
	if (!mkdtemp(tmpl))
		tmpl[0] = 0;
	snprintf(host, size, "%s", tmpl);
	snprintf(inside, size, "%s", tmpl);
}

pid_t test_interp_spawn(const struct test_interp *ti, char *const argv[],
			int keep_output)
{
	return test_interp_spawn_wrapped(ti, NULL, argv, keep_output);
}

pid_t test_interp_spawn_wrapped(const struct test_interp *ti, const char *const *wrap,
				char *const argv[], int keep_output)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;

	char *args[96];
	int n = 0;

	if (!keep_output) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
	}
	if (ti->env[0])
		putenv(strdup(ti->env));
	/* Test targets must not pick up the developer's PYTHON* settings. */
	unsetenv("PYTHONPATH");
	unsetenv("PYTHONHOME");
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	for (int i = 0; wrap && wrap[i] && n < 24; i++)
		args[n++] = (char *)wrap[i];
	if (ti->root[0] && n) {
		args[n++] = "chroot";
		args[n++] = (char *)ti->root;
	} else if (ti->root[0]) {
		if (chroot(ti->root) != 0 || chdir("/") != 0)
			_exit(127);
	}
	args[n++] = (char *)ti->path;
	for (int i = 1; argv[i] && n < 95; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	if (wrap && wrap[0])
		execvp(args[0], args);
	else
		execv(ti->path, args);
	_exit(127);
}

#define TORCH_LABEL "3.14 sid-root"

const struct test_interp *test_interp_torch(const struct test_interp *all, int n,
					    const char *what)
{
	char path[PATH_MAX * 2];

	for (int i = 0; i < n; i++) {
		if (strcmp(all[i].label, TORCH_LABEL))
			continue;
		snprintf(path, sizeof(path), "%s/usr/lib/python3/dist-packages/torch/__init__.py",
			 all[i].root);
		if (access(path, F_OK) == 0)
			return &all[i];
		test_skip("%s did not run: no python3-torch in %s "
			  "(PYSTROBE_SID_EXTRA=python3-torch tests/setup-sid-root.sh)", what,
			  all[i].root);
		return NULL;
	}
	test_skip("%s did not run: no %s interpreter (tests/setup-sid-root.sh)", what,
		  TORCH_LABEL);
	return NULL;
}

const struct test_interp *test_interp_pick(const struct test_interp *all, int n, int minor)
{
	for (int i = 0; i < n; i++)
		if (strstr(all[i].label, "pyenv") && all[i].minor == minor &&
		    !strstr(all[i].label, "shim"))
			return &all[i];
	return n ? &all[0] : NULL;
}

void test_interp_span(const struct test_interp *ti, int n, int *oldest, int *newest)
{
	*oldest = *newest = 0;
	for (int k = 1; k < n; k++) {
		if (ti[k].minor < ti[*oldest].minor)
			*oldest = k;
		if (ti[k].minor > ti[*newest].minor)
			*newest = k;
	}
}

int test_interps_plain(const struct test_interp **chosen, int max, const char *who)
{
	const struct test_interp *all;
	int n = test_interps(&all), nchosen = 0;

	for (int want = 12; want >= 11 && nchosen < max; want--)
		for (int i = 0; i < n; i++)
			if (all[i].minor == want && !all[i].root[0] && !all[i].env[0]) {
				chosen[nchosen++] = &all[i];
				break;
			}
	for (int i = 0; i < nchosen; i++)
		printf("%s: runs on %s (%s)\n", who, chosen[i]->label, chosen[i]->path);
	return nchosen;
}
