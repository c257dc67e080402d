/* What the build installs and what it ships, held to each other.
 *
 * (a) tests/install-deps.sh's lists (build, demo, tests) are disjoint and hold
 * what configure.ac tells to install; README's "From source" names the
 * build's; its first quick-start line installs those alone and pystrobe;
 * tests/setup-ft-python.sh's build dependencies are in the lists.
 *
 * (b) The licence: COPYING is the MIT licence of "the pystrobe authors";
 * LICENSES/ and Makefile.am's LICENCE_FILES (what make dist, the wheel and
 * the binary carry) are the same files, each named in LICENSES/README;
 * build-aux/notices.sh, given configure's STATIC_DEPS_LIBS, finds a
 * licence for every archive pystrobe-static links (its Debian source
 * package, from dpkg: a SKIP without) and refuses when one is missing;
 * `pystrobe --licences` prints COPYING and --version names the licence.
 *
 * Each test collects everything it finds wrong and fails once with the
 * whole list.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "interpreters.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

/* --- (a) the packages: install-deps.sh, configure.ac, README ------------- */

/* The words from p to the first stop character, space-separated (new). */
static char *words_to(const char *p, const char *stop)
{
	struct strbuf sb = STRBUF_INIT;
	char *delims = xasprintf(" \t\n%s", stop);

	for (size_t w; *(p += strspn(p, " \t\n")) && !strchr(stop, *p); p += w) {
		w = strcspn(p, delims);
		sb_printf(&sb, "%s%.*s", sb.len ? " " : "", (int)w, p);
	}
	free(delims);
	return sb_detach(&sb);
}

/* The words of words that are (in) or are not (!in) in set (new). */
static char *filter_words(const char *words, const char *set, bool in)
{
	struct strbuf sb = STRBUF_INIT;
	char *copy = xstrdup(words), *save = NULL;

	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		if (has_word(set, w) == in)
			sb_printf(&sb, "%s%s", sb.len ? " " : "", w);
	free(copy);
	return sb_detach(&sb);
}

/* Each package configure.ac tells to apt-get install is in a list: an
 * error's in the build's, a warning's (Check) in the tests'. */
static void configure_packages(const char *build, const char *tests, char **msg)
{
	char *path = xasprintf("%s/configure.ac", test_srcdir()), *ac = test_slurp(path);
	const char *key = "apt-get install ";
	int n = 0;

	for (char *p = ac, *bol; (p = strstr(p, key)); n++) {
		char *pkg;
		bool error;

		p += strlen(key);
		pkg = xasprintf("%.*s", (int)strcspn(p, " ])\n"), p);
		for (bol = p; bol > ac && bol[-1] != '\n'; bol--)
			;
		error = strstr(bol, "AC_MSG_ERROR") && strstr(bol, "AC_MSG_ERROR") < p;
		if (!has_word(error ? build : tests, pkg))
			msg_add(msg, "%s names %s, not in install-deps.sh's %s list", path, pkg,
				error ? "build" : "tests");
		free(pkg);
	}
	ck_assert_msg(n >= 7, "%s: only %d \"%s\"", path, n, key);
	free(ac);
	free(path);
}

/* tests/setup-ft-python.sh's build dependencies (need_pkgs="...") are in
 * the build's or the tests' list: the second quick-start line installs
 * them before the tests' setup builds the free-threaded 3.13t. */
static void ft_python_packages(const char *build, const char *tests, char **msg)
{
	char *path = xasprintf("%s/tests/setup-ft-python.sh", test_srcdir());
	char *sh = test_slurp(path), *p = strstr(sh, "\nneed_pkgs=\""), *save = NULL;
	char *pkgs;
	int n = 0;

	ck_assert_msg(p, "%s: no need_pkgs=\"...\" line", path);
	p += strlen("\nneed_pkgs=\"");
	pkgs = xasprintf("%.*s", (int)strcspn(p, "\"\n"), p);
	for (char *w = strtok_r(pkgs, " ", &save); w; w = strtok_r(NULL, " ", &save), n++)
		if (!has_word(build, w) && !has_word(tests, w))
			msg_add(msg, "%s needs %s, in neither install-deps.sh's build nor its "
				"tests list", path, w);
	ck_assert_msg(n >= 3, "%s: only %d packages in need_pkgs", path, n);
	free(pkgs);
	free(sh);
	free(path);
}

/* README: the quick start's first line installs the build's packages and
 * pystrobe (every later example types `pystrobe`) before the demo; the
 * second the tests' too; "From source" names the build's. */
static void readme_packages(const char *build, char **msg)
{
	char *path = xasprintf("%s/README", test_srcdir()), *readme = test_slurp(path);
	const char *key = "\n    $ sh tests/install-deps.sh";
	char *line1 = strstr(readme, key), *line2 = line1 ? strstr(line1 + 1, key) : NULL;
	char *from, *named, *more, *less;

	ck_assert_msg(line2, "%s: not two quick-start lines (\"%s\")", path, key + 1);
	*strchr(line1 + 1, '\n') = *strchr(line2 + 1, '\n') = 0;
	if (!strstr(line1, "install-deps.sh --build ") || !strstr(line1, "make install && demo/run"))
		msg_add(msg, "%s: the first quick-start line is not install-deps.sh --build ... "
			"make install && demo/run:%s", path, line1);
	if (strstr(line2, "--build") || !strstr(line2, "make check"))
		msg_add(msg, "%s: the second is not install-deps.sh ... make check:%s", path, line2);
	from = strstr(line2 + strlen(line2) + 1, "\nFrom source");
	from = from ? strstr(from, "apt-get install") : NULL;
	ck_assert_msg(from, "%s: From source names no `apt-get install`", path);
	named = words_to(from + strlen("apt-get install"), "`");
	more = filter_words(named, build, false);
	less = filter_words(build, named, false);
	if (*more || *less)
		msg_add(msg, "%s: From source names \"%s\" more, \"%s\" less than install-deps.sh "
			"--list's build", path, more, less);
	free(less);
	free(more);
	free(named);
	free(readme);
	free(path);
}

/* install-deps.sh's lists are disjoint, and hold what configure.ac and
 * README name. */
START_TEST(test_install_deps)
{
	char *script = xasprintf("%s/tests/install-deps.sh", test_srcdir()), *msg = NULL;
	char *const argv[] = { "sh", script, "--list", NULL };
	const char *labels[] = { "build", "demo", "tests" };
	char *lists[3], why[64];
	struct run r;

	ck_assert_msg(!run_cmd(&r, 10000, argv) && run_exit(&r) == 0, "sh %s --list: %s\n%s",
		      script, run_describe(&r, why, sizeof(why)), r.err);
	for (int i = 0; i < 3; i++) {
		char *line = strstr(r.out, labels[i]);

		ck_assert_msg(line && line[strlen(labels[i])] == ':', "%s --list: no %s line:\n%s",
			      script, labels[i], r.out);
		line += strlen(labels[i]) + 1;
		line = xasprintf("%.*s", (int)strcspn(line, "\n"), line);
		lists[i] = words_to(line, "");
		free(line);
		for (int j = 0; j < i; j++) {
			char *both = filter_words(lists[j], lists[i], true);

			if (*both)
				msg_add(&msg, "%s: %s in both the %s and the %s list", script, both,
					labels[j], labels[i]);
			free(both);
		}
	}
	configure_packages(lists[0], lists[2], &msg);
	ft_python_packages(lists[0], lists[2], &msg);
	readme_packages(lists[0], &msg);
	fail_if_any(msg, "the packages");
	for (int i = 0; i < 3; i++)
		free(lists[i]);
	run_free(&r);
	free(script);
}
/* --- (b) the licence and the notices of the libraries linked in --------- */

/* COPYING is MIT's; LICENSES/ holds Makefile.am's LICENCE_FILES, each in
 * its README. */
START_TEST(test_licence_files)
{
	static const char *const mit[] = {
		"Permission is hereby granted, free of charge, to any person obtaining a copy\n"
		"of this software and associated documentation files (the \"Software\"), to deal\n",
		"The above copyright notice and this permission notice shall be included in all\n"
		"copies or substantial portions of the Software.\n",
		"THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR\n",
	};
	char *path = xasprintf("%s/COPYING", test_srcdir()), *text = slurp(path);
	char *mk_path = xasprintf("%s/Makefile.am", test_srcdir()), *mk = test_slurp(mk_path);
	char *dir = xasprintf("%s/LICENSES", test_srcdir()), *readme_path = xasprintf("%s/README", dir);
	char *readme = slurp(readme_path), *files = make_words(mk, "LICENCE_FILES"), *msg = NULL;
	struct dirent *e;
	DIR *d = opendir(dir);

	ck_assert_msg(text, "%s is missing", path);
	ck_assert_msg(!strncmp(text, "MIT License\n\nCopyright (c) 2026 the pystrobe authors\n\n",
			       strlen("MIT License\n\nCopyright (c) 2026 the pystrobe authors\n\n")),
		      "%s does not start with the MIT licence's title and the copyright", path);
	for (size_t i = 0; i < ARRAY_SIZE(mit); i++)
		ck_assert_msg(strstr(text, mit[i]), "%s lacks the MIT licence's words '%.60s'", path,
			      mit[i]);
	ck_assert_msg(d && readme, "%s or its README is missing", dir);
	ck_assert_msg(has_word(files, "COPYING"), "%s: LICENCE_FILES has no COPYING", mk_path);
	while ((e = readdir(d))) {
		char *word = xasprintf("LICENSES/%s", e->d_name);

		if (e->d_name[0] != '.' && !has_word(files, word))
			msg_add(&msg, "%s: %s is not in LICENCE_FILES (make dist and the wheel "
				"would leave it out)", mk_path, word);
		if (e->d_name[0] != '.' && strcmp(e->d_name, "README") && !names_word(readme, e->d_name))
			msg_add(&msg, "%s does not name %s", readme_path, e->d_name);
		free(word);
	}
	closedir(d);
	fail_if_any(msg, "LICENSES/ and LICENCE_FILES");
	free(files);
	free(readme);
	free(readme_path);
	free(dir);
	free(mk);
	free(mk_path);
	free(text);
	free(path);
}
END_TEST

/* build-aux/notices.sh with the build's compiler and STATIC_DEPS_LIBS, on
 * a tree (srcdir, or a copy of its licences) into r; false (SKIP) where it
 * cannot tell a library's Debian package. */
static bool run_notices(struct run *r, const char *tree, const char *drop)
{
	char *mk_path = xasprintf("%s/Makefile", test_builddir()), *mk = test_slurp(mk_path);
	char *cc = make_words(mk, "CC"), *libs = make_words(mk, "STATIC_DEPS_LIBS");
	char *cmd = xasprintf("set -e; t=%s; if [ -n '%s' ]; then t=$(mktemp -d); "
			      "trap 'rm -rf \"$t\"' EXIT; cp -R '%s/COPYING' '%s/LICENSES' \"$t\"; "
			      "rm \"$t/LICENSES/%s\"; fi; CC='%s' sh '%s/build-aux/notices.sh' \"$t\" "
			      "--static %s", tree, drop, tree, tree, drop, cc, test_srcdir(), libs);
	char *argv[] = { "sh", "-c", cmd, NULL };
	bool ok = system("command -v dpkg-query >/dev/null 2>&1") == 0;

	if (!ok)
		test_skip("notices: no dpkg here, to name the Debian package of each library");
	else
		ck_assert_int_eq(run_cmd(r, 60000, argv), 0);
	if (ok && strstr(r->err, "finds no lib")) {
		test_skip("notices: a static archive of STATIC_DEPS_LIBS is not installed: %s", r->err);
		ok = false;
	}
	free(cmd);
	free(libs);
	free(cc);
	free(mk);
	free(mk_path);
	return ok;
}

START_TEST(test_notices)
{
	struct run r = { 0 };
	char *mk_path = xasprintf("%s/Makefile", test_builddir()), *mk = test_slurp(mk_path);
	char *libs = make_words(mk, "STATIC_DEPS_LIBS"), *save = NULL, *msg = NULL;

	if (!run_notices(&r, test_srcdir(), ""))
		return;
	ck_assert_msg(!run_exit(&r), "notices.sh on STATIC_DEPS_LIBS failed: %s", r.err);
	/* -lNAME up to -Wl,-Bdynamic (-lunwind-generic: libunwind-<arch>.a) */
	for (char *w = strtok_r(libs, " ", &save); w && strcmp(w, "-Wl,-Bdynamic");
	     w = strtok_r(NULL, " ", &save)) {
		char *archive = xasprintf("  lib%s.a ", w + 2);

		if (!strncmp(w, "-l", 2) && strcmp(w, "-lunwind-generic") && !strstr(r.out, archive))
			msg_add(&msg, "notices: %s (%s) is not listed", archive + 2, w);
		free(archive);
	}
	ck_assert_msg(strstr(r.out, "LICENSES/elfutils") && strstr(r.out, "Lesser General"), "no LGPL");
	fail_if_any(msg, "the libraries of STATIC_DEPS_LIBS and the notices");
	run_free(&r);
	/* Without zlib's licence, the build of pystrobe-static stops. */
	if (!run_notices(&r, test_srcdir(), "zlib"))
		return;
	ck_assert_msg(run_exit(&r) == 1 && strstr(r.err, "LICENSES/zlib"),
		      "notices.sh without LICENSES/zlib: exit %d, '%s'", run_exit(&r), r.err);
	run_free(&r);
	free(libs);
	free(mk);
	free(mk_path);
}
END_TEST

START_TEST(test_licences_option)
{
	struct run r = { 0 }, alias = { 0 };
	char *path = xasprintf("%s/COPYING", test_srcdir()), *copying = slurp(path);

	ck_assert_int_eq(run_pystrobe(&r, "--licences", NULL), 0);
	ck_assert_msg(!run_exit(&r) && copying && strstr(r.out, copying),
		      "pystrobe --licences does not print COPYING: '%.300s'", r.out);
	ck_assert_int_eq(run_pystrobe(&alias, "--license", NULL), 0);
	ck_assert_msg(!run_exit(&alias) && !strcmp(alias.out, r.out), "--license is not --licences");
	run_free(&alias);
	run_free(&r);
	ck_assert_int_eq(run_pystrobe(&r, "--version", NULL), 0);
	ck_assert_msg(strstr(r.out, "\nMIT licence") && strstr(r.out, "pystrobe --licences"),
		      "pystrobe --version names no licence: '%s'", r.out);
	run_free(&r);
	free(copying);
	free(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("packaging");
	TCase *tc = tcase_create("packaging");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_install_deps);
	tcase_add_test(tc, test_licence_files);
	tcase_add_test(tc, test_notices);
	tcase_add_test(tc, test_licences_option);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
