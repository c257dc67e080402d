/* Privileges: pystrobe needs and has no setuid bit, and under sudo the
 * command it launches runs as the user who called sudo.
 *
 *   - `make install DESTDIR=...` installs pystrobe without setuid or setgid
 *     bits, and the built binary has none;
 *   - root running `record -- CMD` with SUDO_UID and SUDO_GID set (what
 *     sudo sets) runs CMD as that user: the target writes its own
 *     getuid(), getgid() and getgroups(), which must be nobody's and no
 *     supplementary group; the profile belongs to that user too; a
 *     SUDO_UID that is not a number is refused with one line, not read as
 *     root;
 *   - once through real sudo: nobody runs `sudo -n pystrobe record -- CMD`,
 *     allowed by a sudoers drop-in that exists only for this check.
 *
 * The interpreter is Debian's /usr/bin/python3.11: nobody cannot reach
 * pyenv's under /root.  (An unprivileged user attaching to root's process
 * gets exit 4 and the permission message: check_errors.)
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpreters.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

#define SYSTEM_PYTHON "/usr/bin/python3.11"
#define NOBODY 65534
#define SUDOERS_DROPIN "/etc/sudoers.d/pystrobe-check-privileges"

/* Writes "uid gid [groups]" to argv[1], then burns a little so there is
 * something to sample. */
static const char ids_code[] =
	"import os, sys, time\n"
	"with open(sys.argv[1], 'w') as f:\n"
	"    f.write('%d %d %s' % (os.getuid(), os.getgid(), os.getgroups()))\n"
	"end = time.time() + 0.3\n"
	"while time.time() < end:\n"
	"    pass\n";

/* A directory anyone can write (sticky), for the target's files. */
static void shared_tmp(char dir[64])
{
	snprintf(dir, 64, "/tmp/pystrobe-priv-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 01777), 0);
}

static void rm_dir(const char *dir, const char *const names[])
{
	char path[128];

	for (int i = 0; names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static bool have_system_python(void)
{
	if (access(SYSTEM_PYTHON, X_OK) == 0)
		return true;
	test_skip("privileges: no %s (apt-get install python3): the sudo checks did not run",
		  SYSTEM_PYTHON);
	return false;
}

static void check_ids(const char *dir, const char *what)
{
	char path[128], want[64], *ids;
	struct stat st;

	snprintf(path, sizeof(path), "%s/ids", dir);
	ids = read_file(path, NULL);
	snprintf(want, sizeof(want), "%d %d []", NOBODY, NOBODY);
	ck_assert_msg(ids && !strcmp(ids, want), "%s: the command ran as \"%s\", not \"%s\"",
		      what, ids ? ids : "(nothing written)", want);
	printf("privileges: %s: the command ran as uid gid groups = %s\n", what, ids);
	free(ids);
	snprintf(path, sizeof(path), "%s/profile.txt", dir);
	ck_assert_msg(stat(path, &st) == 0, "%s: no profile", what);
	ck_assert_msg(st.st_uid == NOBODY && st.st_gid == NOBODY,
		      "%s: the profile belongs to %d:%d, not the invoking user", what,
		      (int)st.st_uid, (int)st.st_gid);
}

/* --- no setuid ------------------------------------------------------------ */

START_TEST(test_no_setuid)
{
	char dest[64], bin[128], *make[] = { "make", "-s", "-C", (char *)test_builddir(),
					      "install-binPROGRAMS", NULL, NULL };
	char destdir[96], prefix_bin[PATH_MAX], how[96];
	struct stat st;
	struct run r;
	FILE *f;

	ck_assert_int_eq(stat(pystrobe_path(), &st), 0);
	ck_assert_msg(!(st.st_mode & (S_ISUID | S_ISGID)), "the built pystrobe is setuid/setgid");

	snprintf(dest, sizeof(dest), "/tmp/pystrobe-destdir-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dest));
	snprintf(destdir, sizeof(destdir), "DESTDIR=%s", dest);
	make[5] = destdir;
	ck_assert_int_eq(run_cmd(&r, 120000, make), 0);
	ck_assert_msg(run_exit(&r) == 0, "make install-binPROGRAMS %s: %s: %s", destdir,
		      run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	/* Wherever --prefix put it. */
	snprintf(bin, sizeof(bin), "find %s -name pystrobe -type f", dest);
	f = popen(bin, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(fgets(prefix_bin, sizeof(prefix_bin), f), "make install put no pystrobe in %s",
		      dest);
	pclose(f);
	prefix_bin[strcspn(prefix_bin, "\n")] = 0;
	ck_assert_int_eq(stat(prefix_bin, &st), 0);
	printf("privileges: installed %s with mode %04o\n", prefix_bin, st.st_mode & 07777);
	ck_assert_msg(!(st.st_mode & (S_ISUID | S_ISGID)), "installed pystrobe has mode %04o",
		      st.st_mode & 07777);
	snprintf(bin, sizeof(bin), "rm -rf %s", dest);
	ck_assert_int_eq(system(bin), 0);
}
END_TEST

/* --- SUDO_UID / SUDO_GID, as sudo sets them ------------------------------- */

START_TEST(test_sudo_env)
{
	static const char *const files[] = { "ids", "profile.txt", NULL };
	char dir[64], ids[96], out[96], how[96];
	char *argv[] = { "env", "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody",
			 (char *)pystrobe_path(), "record", "-f", "collapsed", "-o", out, "--",
			 SYSTEM_PYTHON, "-c", (char *)ids_code, ids, NULL };
	struct run r;

	ck_assert_msg(geteuid() == 0, "this check must run as root");
	if (!have_system_python())
		return;
	shared_tmp(dir);
	snprintf(ids, sizeof(ids), "%s/ids", dir);
	snprintf(out, sizeof(out), "%s/profile.txt", dir);
	ck_assert_int_eq(run_cmd(&r, RUN_TIMEOUT_MS, argv), 0);
	ck_assert_msg(run_exit(&r) == 0 && all_lines_pystrobe(r.err) && !sanitizer_report(r.err),
		      "record with SUDO_UID: %s: %s", run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	check_ids(dir, "root with SUDO_UID=65534");
	rm_dir(dir, files);

	/* Not a number: refused, not taken for root. */
	argv[1] = "SUDO_UID=root";
	shared_tmp(dir);
	snprintf(ids, sizeof(ids), "%s/ids", dir);
	snprintf(out, sizeof(out), "%s/profile.txt", dir);
	ck_assert_int_eq(run_cmd(&r, RUN_TIMEOUT_MS, argv), 0);
	ck_assert_msg(run_exit(&r) != 0 && run_one_error_line(&r) && access(ids, F_OK) != 0 &&
		      strstr(r.err, "SUDO_UID"),
		      "record with SUDO_UID=root: %s, ids %s: %s",
		      run_describe(&r, how, sizeof(how)),
		      access(ids, F_OK) == 0 ? "written" : "not written", r.err);
	printf("privileges: SUDO_UID=root refused: %s", r.err);
	run_free(&r);
	rm_dir(dir, files);
}
END_TEST

/* --- real sudo ------------------------------------------------------------ */

static int write_sudoers(const char *bin)
{
	char rule[256];
	int fd;

	snprintf(rule, sizeof(rule), "nobody ALL=(root) NOPASSWD: %s\n", bin);
	fd = open(SUDOERS_DROPIN, O_WRONLY | O_CREAT | O_EXCL, 0440);
	if (fd < 0)
		return -1;
	if (write(fd, rule, strlen(rule)) != (ssize_t)strlen(rule)) {
		close(fd);
		unlink(SUDOERS_DROPIN);
		return -1;
	}
	return close(fd);
}

/* A copy of pystrobe for sudo's rule to name, in a directory under /run
 * that only root can write: should the rule outlive the check (killed
 * half-way), no one else can put a program at the path it names. */
static int copy_binary(char *dir, size_t dirsize, char *bin, size_t size)
{
	char cmd[PATH_MAX + 256];

	snprintf(dir, dirsize, "/run/pystrobe-sudo-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return -1;
	snprintf(bin, size, "%s/pystrobe", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 755 '%s'", pystrobe_path(), bin, bin);
	return system(cmd) == 0 ? 0 : -1;
}

/* sudo's own warning about this machine (a hostname with no /etc/hosts
 * entry, common in containers and cloud images) says nothing about
 * pystrobe: step past it, and say so. */
static const char *past_sudo_host_warning(const char *err)
{
	static const char warn[] = "sudo: unable to resolve host ";

	while (err && !strncmp(err, warn, sizeof(warn) - 1)) {
		const char *nl = strchrnul(err, '\n');

		printf("privileges: not pystrobe's, ignored: %.*s\n", (int)(nl - err), err);
		err = *nl ? nl + 1 : nl;
	}
	return err;
}

START_TEST(test_real_sudo)
{
	static const char *const files[] = { "ids", "profile.txt", NULL };
	static const char *const binfiles[] = { "pystrobe", NULL };
	char dir[64], bindir[64], ids[96], out[96], bin[96], how[96];
	char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sudo",
			 "-n", bin, "record", "-f", "collapsed", "-o", out, "--", SYSTEM_PYTHON,
			 "-c", (char *)ids_code, ids, NULL };
	struct run r;

	if (system("sudo --version >/dev/null 2>&1") != 0) {
		test_skip("privileges: no sudo (apt-get install sudo): SUDO_UID was checked "
			  "without it");
		return;
	}
	if (!have_system_python())
		return;
	ck_assert_int_eq(copy_binary(bindir, sizeof(bindir), bin, sizeof(bin)), 0);
	shared_tmp(dir);
	snprintf(ids, sizeof(ids), "%s/ids", dir);
	snprintf(out, sizeof(out), "%s/profile.txt", dir);
	unlink(SUDOERS_DROPIN);
	ck_assert_msg(write_sudoers(bin) == 0, "cannot write %s: %s", SUDOERS_DROPIN,
		      strerror(errno));
	run_cmd(&r, RUN_TIMEOUT_MS, argv);
	unlink(SUDOERS_DROPIN);
	rm_dir(bindir, binfiles);
	ck_assert_msg(run_exit(&r) == 0 && all_lines_pystrobe(past_sudo_host_warning(r.err)),
		      "nobody: sudo -n pystrobe record -- python: %s: %s",
		      run_describe(&r, how, sizeof(how)), r.err);
	run_free(&r);
	test_used("sudo");
	check_ids(dir, "nobody through sudo");
	rm_dir(dir, files);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("privileges");
	TCase *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tc = tcase_create("privileges");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_no_setuid);
	tcase_add_test(tc, test_sudo_env);
	tcase_add_test(tc, test_real_sudo);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
