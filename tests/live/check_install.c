/* pystrobe installed as users get it (README, "Install"): the wheel
 * `make wheel` wrote under dist/, and the self-contained binary `make
 * static` wrote (pystrobe-static).
 *
 * The wheel is installed with `pip install --no-index` into a fresh venv
 * of Debian's /usr/bin/python3.11, of the sid root's python3.14 (pip from
 * sid's own pip wheel: that root has no ensurepip) and of a pristine
 * Debian 11 root (minbase, python3 and python3-venv: glibc 2.31, pip
 * 20.3), each with the pip that Python comes with.  There `python -m
 * pystrobe --version` must name configure's version and the static build,
 * `pystrobe dump --json` of tests/targets/parked.py run by the venv's
 * python must match what the target saw itself (tests/compare_dump.py),
 * `pystrobe record -d 2` must sample its spinner, and `pip uninstall` must
 * leave the venv file for file as it was before the install.  The rooted
 * ones run pystrobe inside the root (chroot, a /proc of their own mount
 * namespace), as a user there would.
 *
 * The binary: the glibc symbol versions it asks for (objdump -T) are none
 * newer than the floor its --version states; copied into a pristine
 * Debian 12 root (tests/fresh-debian.sh's minbase tar, which has none of
 * the build's libraries), `ldd` shows glibc's own libraries only, and its
 * dump of a process outside the root (Debian's python3.11) matches the
 * target's truth; there, the copied binary alone shows the licences of the
 * libraries it carries (`pystrobe --licences`: elfutils' and the LGPL's
 * text).  The wheel itself (its man pages against man/, its licence files
 * against COPYING and LICENSES/, no URL configure lacks):
 * tests/check_wheel.py.
 *
 * SKIPs, with the reason: no wheel or binary built (make wheel, as root),
 * no root (debootstrap or the mirror missing), not root.
 */
#include "config.h"

#include <check.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "suite.h"

#define CMD_TIMEOUT_MS	600000	/* a venv and a pip install on a loaded machine */
#define RECORD_SECONDS	"2"

/* Where a venv's interpreter comes from and how its pip runs.  $V is the
 * venv, $W the directory holding the wheel (and sid's pip wheel). */
enum root_kind { ROOT_HOST, ROOT_SID, ROOT_BULLSEYE };
struct env {
	const char *label;
	enum root_kind root;
	const char *mkvenv;
	const char *pip;
	const char *compare_flag;	/* for tests/compare_dump.py, or NULL */
};

static const struct env envs[] = {
	{ "3.11 debian venv", ROOT_HOST, "/usr/bin/python3.11 -m venv \"$V\"", "\"$V/bin/python\" -m pip", NULL },
	{ "3.14 sid-root venv", ROOT_SID, "python3.14 -m venv --without-pip \"$V\"",
	  "\"$V/bin/python\" \"$(ls \"$W\"/pip-*.whl)/pip\"", NULL },
	/* Debian 11 strips its 3.9, and 3.9 keeps its full version in no
	 * exported symbol: pystrobe names it 3.9, from the file name. */
	{ "3.9 debian-11 root venv", ROOT_BULLSEYE, "python3 -m venv \"$V\"", "\"$V/bin/python\" -m pip",
	  "--minor-version" },
};
#define NENVS ((int)(sizeof(envs) / sizeof(envs[0])))

/* The pristine Debian 11 root, built once by tests/debootstrap-root.sh and
 * copied for each run. */
#define BULLSEYE_ROOT	"/var/cache/pystrobe/bullseye-python-root"
#define BULLSEYE_PKGS	"python3 python3-venv"
#define BOOKWORM_TAR	"/var/cache/pystrobe/bookworm-minbase.tar"

/* glibc's own libraries: all ldd may show for pystrobe-static. */
static const char *const glibc_libs[] = {
	"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
	"librt.so.1", "/lib64/ld-linux-x86-64.so.2",
};

/* Run sh -c cmd in root (NULL: here) with a clean environment and /proc
 * mounted in a mount namespace of its own, so nothing stays mounted. */
static int sh_in(struct run *r, const char *root, const char *cmd)
{
	static const char in_root[] =
		"mount -t proc proc \"$0/proc\" && exec chroot \"$0\" /usr/bin/env -i "
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 "
		"PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /bin/sh -c \"$1\"";
	static const char here[] =
		"exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 "
		"PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /bin/sh -c \"$1\"";
	char *rooted[] = { "unshare", "--mount", "--propagation", "private", "sh", "-c",
			   (char *)in_root, (char *)root, (char *)cmd, NULL };
	char *plain[] = { "sh", "-c", (char *)here, "sh", (char *)cmd, NULL };

	return run_cmd(r, CMD_TIMEOUT_MS, root ? rooted : plain);
}

/* sh_in() that must exit 0: fails the test with what it said otherwise. */
static void sh_ok(const char *root, const char *what, const char *cmd)
{
	char how[96];
	struct run r;

	ck_assert_msg(sh_in(&r, root, cmd) == 0, "%s: cannot run sh", what);
	if (run_exit(&r) != 0)
		ck_abort_msg("%s: %s:\n%s\n%.3000s%.3000s", what, run_describe(&r, how, sizeof(how)),
			     cmd, r.out, r.err);
	run_free(&r);
}

/* The one file glob pattern matches (the newest when several), or "". */
static void newest(const char *pattern, char *out, size_t size)
{
	glob_t g;

	out[0] = 0;
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	snprintf(out, size, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
}

/* The built wheel and binary; SKIP (false) when there are none. */
static bool built(char *wheel, size_t wsize, char *binary, size_t bsize)
{
	const char *b = getenv("PYSTROBE_BUILDDIR");
	char pattern[PATH_MAX];

	if (geteuid() != 0) {
		test_skip("install: not root (chroot, mount and debootstrap need it)");
		return false;
	}
	snprintf(binary, bsize, "%s/pystrobe-static", b ? b : ".");
	snprintf(pattern, sizeof(pattern), "%s/dist/pystrobe-" PACKAGE_VERSION "-*.whl", b ? b : ".");
	newest(pattern, wheel, wsize);
	if (!wheel[0] || access(binary, X_OK) != 0) {
		test_skip("install: no wheel in dist/ or no pystrobe-static: `make wheel` (as root) builds both");
		return false;
	}
	return true;
}

/* Output of a command (trailing newline cut), or NULL when it failed. */
static char *output_of(const char *root, const char *cmd)
{
	char how[96];
	struct run r;
	char *out;
	size_t n;

	if (sh_in(&r, root, cmd) < 0)
		return NULL;
	out = run_exit(&r) == 0 ? strdup(r.out) : NULL;
	if (!out)
		printf("install: %s: %s:\n%.3000s%.3000s", cmd, run_describe(&r, how, sizeof(how)),
		       r.out, r.err);
	run_free(&r);
	if (out && (n = strlen(out)) && out[n - 1] == '\n')
		out[n - 1] = 0;
	return out;
}

/* The root env runs in, ready: "" for this machine; the sid root; a fresh
 * copy of the pristine Debian 11 root under work.  false: SKIPped. */
static bool env_root(const struct env *e, const char *work, char *root, size_t size)
{
	char cmd[PATH_MAX * 2 + 256], *path;

	root[0] = 0;
	if (e->root == ROOT_HOST)
		return true;
	if (e->root == ROOT_SID) {
		snprintf(cmd, sizeof(cmd), "sh '%s/tests/setup-sid-root.sh' 2>&1", test_srcdir());
		if (!(path = output_of(NULL, cmd)) || access(path, X_OK) != 0) {
			test_skip("install: %s: no sid root: %s", e->label, path ? path : "");
			free(path);
			return false;
		}
		snprintf(root, size, "%s", path);
		free(path);
		return true;
	}
	snprintf(cmd, sizeof(cmd), "sh '%s/tests/debootstrap-root.sh' bullseye " BULLSEYE_ROOT " "
		 BULLSEYE_PKGS " 2>&1 && cp -a " BULLSEYE_ROOT " '%s/root'", test_srcdir(), work);
	if (!(path = output_of(NULL, cmd))) {
		test_skip("install: %s: no Debian 11 root (%s)", e->label, "tests/debootstrap-root.sh failed");
		return false;
	}
	free(path);
	snprintf(root, size, "%s/root", work);
	return true;
}

/* sid's own pip wheel, into dir: sid's python3.14 has no ensurepip, and
 * the pip Debian 12 ships cannot run on 3.12 and newer. */
static void sid_pip(const char *root, const char *dir_inside)
{
	char cmd[PATH_MAX + 256];

	snprintf(cmd, sizeof(cmd), "cd '%s' && { apt-get -qq -o Acquire::Check-Valid-Until=false "
		 "download python3-pip-whl || { apt-get -qq -o Acquire::Check-Valid-Until=false update "
		 "&& apt-get -qq -o Acquire::Check-Valid-Until=false download python3-pip-whl; }; } "
		 "&& dpkg -x python3-pip-whl_*.deb x && mv x/usr/share/python-wheels/pip-*.whl . "
		 "&& rm -rf x python3-pip-whl_*.deb", dir_inside);
	sh_ok(root, "sid's pip wheel", cmd);
}

static void compare_dump(const struct target *t, const char *dump, const char *label,
			 const char *flag)
{
	char script[PATH_MAX], how[96];
	char *argv[] = { (char *)test_python3(), script, (char *)t->truth, (char *)dump, NULL, NULL };
	struct run r;

	/* The flag, if any, before the two files. */
	if (flag) {
		argv[4] = argv[3];
		argv[3] = argv[2];
		argv[2] = (char *)flag;
	}
	snprintf(script, sizeof(script), "%s/tests/compare_dump.py", test_srcdir());
	ck_assert_msg(run_cmd(&r, RUN_TIMEOUT_MS, argv) == 0, "cannot run compare_dump.py");
	ck_assert_msg(run_exit(&r) == 0, "%s: compare_dump.py %s:\n%s%s", label,
		      run_describe(&r, how, sizeof(how)), r.out, r.err);
	printf("install: %s: dump: %s", label, r.out);
	run_free(&r);
}

/* pystrobe (the command prog, in root) against parked.py run by ti:
 * dump --json matches the truth, record -d 2 samples the spinner.  What
 * pystrobe writes comes back on stdout: the target's directory may be
 * outside root. */
static void profile_target(const struct test_interp *ti, const char *root, const char *prog,
			   const char *label, const char *compare_flag)
{
	char why[512], cmd[PATH_MAX * 2 + 256], dump[PATH_MAX + 16], *out;
	struct target t;

	if (target_start_parked(&t, ti, why, sizeof(why)) < 0)
		ck_abort_msg("%s: target: %s", label, why);
	snprintf(cmd, sizeof(cmd), "'%s' dump --json --pid %d", prog, t.py_pid);
	out = output_of(root, cmd);
	ck_assert_msg(out, "%s: pystrobe dump --json --pid %d failed", label, t.py_pid);
	snprintf(dump, sizeof(dump), "%s/dump.json", t.dir);
	ck_assert_int_eq(write_file(dump, out, strlen(out)), 0);
	free(out);
	compare_dump(&t, dump, label, compare_flag);

	snprintf(cmd, sizeof(cmd), "d=$(mktemp -d) && '%s' record -q -d " RECORD_SECONDS
		 " -f collapsed -o $d/rec.txt --pid %d && cat $d/rec.txt && rm -r $d", prog, t.py_pid);
	out = output_of(root, cmd);
	ck_assert_msg(out && strstr(out, "spin_loop"),
		      "%s: record -d " RECORD_SECONDS " failed, or has no sample of the spinner "
		      "(spin_loop):\n%.2000s", label, out ? out : "");
	printf("install: %s: record -d " RECORD_SECONDS ": sampled spin_loop\n", label);
	free(out);
	target_stop(&t);
}

/* A work directory for one test (under root's /tmp when rooted).  A
 * failed check exits at once, leaving its directory (a root's copy among
 * them): those of runs over two hours old go first. */
static void make_work(const char *under, char *dir, size_t size)
{
	char cmd[PATH_MAX + 160];
	struct run r;

	snprintf(cmd, sizeof(cmd), "find '%s/tmp' -maxdepth 1 -name 'pystrobe-install.*' -mmin +120 "
		 "-exec rm -rf --one-file-system {} +", under);
	if (sh_in(&r, NULL, cmd) == 0)
		run_free(&r);
	snprintf(dir, size, "%s/tmp/pystrobe-install.XXXXXX", under);
	ck_assert_msg(mkdtemp(dir), "cannot make %s", dir);
}

START_TEST(test_wheel_in_venv)
{
	const struct env *e = &envs[_i];
	char wheel[PATH_MAX], binary[PATH_MAX], root[PATH_MAX], work[PATH_MAX / 2], dir[PATH_MAX];
	char cmd[PATH_MAX * 4 + 1024], *version, *left;
	const char *inside, *r;
	struct test_interp ti;

	const char *only = getenv("PYSTROBE_TEST_ONLY");

	if (only && *only && !strstr(e->label, only)) {
		printf("install: %s: not in PYSTROBE_TEST_ONLY\n", e->label);
		return;
	}
	if (!built(wheel, sizeof(wheel), binary, sizeof(binary)))
		return;
	make_work("/var", work, sizeof(work));
	if (!env_root(e, work, root, sizeof(root))) {
		rm_rf(work);
		return;
	}
	r = root[0] ? root : NULL;
	make_work(root, dir, sizeof(dir));
	inside = dir + strlen(root);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/'", wheel, dir);
	sh_ok(NULL, "copy the wheel", cmd);
	if (e->root == ROOT_SID)
		sid_pip(root, inside);

	/* The venv, its files before, the install. */
	snprintf(cmd, sizeof(cmd), "V='%s/v' W='%s'; %s && cd \"$V\" && find . | sort > ../before "
		 "&& %s install -q --no-index \"$W\"/pystrobe-*.whl", inside, inside, e->mkvenv, e->pip);
	sh_ok(r, "venv and pip install", cmd);

	/* python -m pystrobe is the same program, the static one. */
	snprintf(cmd, sizeof(cmd), "'%s/v/bin/python' -m pystrobe --version", inside);
	version = output_of(r, cmd);
	ck_assert_msg(version && !strncmp(version, "pystrobe " PACKAGE_VERSION "\nstatic: ",
					  strlen("pystrobe " PACKAGE_VERSION "\nstatic: ")),
		      "%s: python -m pystrobe --version said %s", e->label, version ? version : "nothing");
	printf("install: %s: python -m pystrobe --version: %s\n", e->label, version);
	free(version);

	memset(&ti, 0, sizeof(ti));
	snprintf(ti.label, sizeof(ti.label), "%s", e->label);
	snprintf(ti.path, sizeof(ti.path), "%s/v/bin/python", inside);
	snprintf(ti.root, sizeof(ti.root), "%s", root);
	snprintf(cmd, sizeof(cmd), "%s/v/bin/pystrobe", inside);
	profile_target(&ti, r, cmd, e->label, e->compare_flag);

	/* Uninstalled, the venv is as it was: no file of ours left, none of
	 * its own gone.  pip removes the directories that held our files but
	 * not their parents (share/man, ...): those may stay, if empty. */
	snprintf(cmd, sizeof(cmd), "V='%s/v' W='%s'; %s uninstall -q -y pystrobe && cd \"$V\" && "
		 "find . -name __pycache__ -prune -o -print | sort > ../after && "
		 "grep -v __pycache__ ../before > ../before.1 && ! comm -23 ../before.1 ../after | grep . && "
		 "comm -13 ../before.1 ../after > ../left && ! grep -v -x -e ./share -e ./share/man "
		 "-e ./share/bash-completion -e ./share/zsh ../left && for d in $(sort -r ../left); do "
		 "rmdir \"$d\" || exit 1; done && tr '\\n' ' ' < ../left", inside, inside, e->pip);
	left = output_of(r, cmd);
	ck_assert_msg(left, "%s: pip uninstall left a file behind or took one of the venv's "
		      "(the lines above; %s)", e->label, cmd);
	printf("install: %s: pip uninstall left the venv as it was%s%s%s\n", e->label,
	       *left ? " but for the empty directories " : "", left, *left ? "(pip's way)" : "");
	free(left);
	rm_rf(dir);
	rm_rf(work);
}
END_TEST

START_TEST(test_wheel_valid)
{
	char wheel[PATH_MAX], binary[PATH_MAX], script[PATH_MAX], cmd[PATH_MAX * 3 + 512];
	char *floor, *newest_sym;

	if (!built(wheel, sizeof(wheel), binary, sizeof(binary)))
		return;
	/* The floor the binary states; the newest glibc symbol it asks for. */
	snprintf(cmd, sizeof(cmd), "'%s' --version | sed -n 's/.*needs glibc \\([0-9.]*\\) or newer.*/\\1/p'",
		 binary);
	floor = output_of(NULL, cmd);
	ck_assert_msg(floor && *floor, "pystrobe-static --version states no glibc floor");
	snprintf(cmd, sizeof(cmd), "objdump -T '%s' | grep -o 'GLIBC_[0-9][0-9.]*' | "
		 "sed 's/GLIBC_//' | sort -u -V | tail -n 1", binary);
	newest_sym = output_of(NULL, cmd);
	ck_assert_msg(newest_sym && *newest_sym, "objdump -T found no glibc symbol version");
	snprintf(cmd, sizeof(cmd), "printf '%%s\\n%%s\\n' '%s' '%s' | sort -V | tail -n 1", floor, newest_sym);
	free(newest_sym);
	newest_sym = output_of(NULL, cmd);
	ck_assert_msg(newest_sym && !strcmp(newest_sym, floor),
		      "pystrobe-static asks for glibc symbols newer than its floor %s", floor);
	printf("install: pystrobe-static: glibc floor %s, no symbol newer\n", floor);
	snprintf(script, sizeof(script), "%s/tests/check_wheel.py", test_srcdir());
	snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' " PACKAGE_VERSION " %s '%s' '" PACKAGE_URL "'",
		 test_python3(), script, wheel, floor, test_srcdir());
	sh_ok(NULL, "check_wheel.py", cmd);
	free(newest_sym);
	free(floor);
}
END_TEST

/* The lines of ldd's output that name a library outside glibc. */
static void ldd_only_glibc(const char *ldd)
{
	char line[512];
	const char *p = ldd;

	ck_assert_msg(!strstr(ldd, "not found"), "ldd pystrobe-static:\n%s", ldd);
	while (*p) {
		size_t n = strcspn(p, "\n");
		bool ok = false;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		for (size_t i = 0; i < sizeof(glibc_libs) / sizeof(glibc_libs[0]); i++)
			if (!strncmp(line + strspn(line, " \t"), glibc_libs[i], strlen(glibc_libs[i])))
				ok = true;
		ck_assert_msg(ok, "pystrobe-static needs a library outside glibc: %s\nldd:\n%s", line, ldd);
		p += n + (p[n] == '\n');
	}
}

START_TEST(test_binary_in_pristine_root)
{
	char wheel[PATH_MAX], binary[PATH_MAX], work[PATH_MAX / 2], root[PATH_MAX / 2 + 8];
	char cmd[PATH_MAX * 3 + 512], *out;
	struct test_interp ti;

	if (!built(wheel, sizeof(wheel), binary, sizeof(binary)))
		return;
	if (access("/usr/bin/python3.11", X_OK) != 0) {
		test_skip("install: no /usr/bin/python3.11 to profile from the pristine root");
		return;
	}
	snprintf(cmd, sizeof(cmd), "PYSTROBE_FRESH_CACHE_ONLY=1 sh '%s/tests/fresh-debian.sh' 2>&1",
		 test_srcdir());
	if (!(out = output_of(NULL, cmd))) {
		test_skip("install: no pristine Debian 12 root (tests/fresh-debian.sh could not build "
			  BOOKWORM_TAR ")");
		return;
	}
	free(out);
	make_work("/var", work, sizeof(work));
	snprintf(root, sizeof(root), "%s/root", work);
	snprintf(cmd, sizeof(cmd), "mkdir '%s' && tar --numeric-owner -C '%s' -xf " BOOKWORM_TAR
		 " && cp '%s' '%s/usr/local/bin/pystrobe'", root, root, binary, root);
	sh_ok(NULL, "unpack the pristine root", cmd);

	/* None of the build's libraries is there; ldd finds glibc only. */
	out = output_of(root, "for p in libdw1 libelf1 libunwind8 libncursesw6 liblzma5 libbz2-1.0 "
			"zlib1g; do dpkg -s $p >/dev/null 2>&1 && printf '%s ' $p; done; true");
	ck_assert_msg(out, "dpkg -s in the pristine root failed");
	printf("install: pristine Debian 12: of the libraries pystrobe links, installed: %s\n",
	       *out ? out : "none");
	free(out);
	out = output_of(root, "ldd /usr/local/bin/pystrobe");
	ck_assert_msg(out, "ldd in the pristine root failed");
	ldd_only_glibc(out);
	printf("install: pristine Debian 12: ldd pystrobe-static: glibc only\n");
	free(out);
	out = output_of(root, "/usr/local/bin/pystrobe --licences");
	ck_assert_msg(out && strstr(out, "MIT License") && strstr(out, "======== LICENSES/elfutils") &&
			      strstr(out, "GNU LESSER GENERAL PUBLIC LICENSE"),
		      "pystrobe --licences of the copied binary: '%.300s'", out ? out : "nothing");
	printf("install: pristine Debian 12: pystrobe --licences: COPYING, elfutils, the LGPL\n");
	free(out);

	/* Its dump of a process outside (Debian's 3.11 on this machine). */
	memset(&ti, 0, sizeof(ti));
	snprintf(ti.label, sizeof(ti.label), "3.11 debian-static");
	snprintf(ti.path, sizeof(ti.path), "/usr/bin/python3.11");
	profile_target(&ti, root, "/usr/local/bin/pystrobe", "pystrobe-static in pristine Debian 12", NULL);
	rm_rf(work);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "wheel", 60, 0, 1, { test_wheel_valid } },
		{ "venvs", 1200, 0, NENVS, { test_wheel_in_venv } },
		{ "static", 600, 0, 1, { test_binary_in_pristine_root } },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);

	return run_groups("install", groups, sizeof(groups) / sizeof(groups[0]), 0, 1);
}
