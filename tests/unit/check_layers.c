/* The layout of the sources held to its rule (CONTRIBUTING, "How the code
 * is laid out").
 *
 * src/ and interp/: every #include "DIR/..." names a layer at or below the
 * including file's own (the table below, lowest first), every directory is
 * a layer of the table and every source file lies in one, and
 * sigprocmask() is defined once, in src/util/sigmask.c (the program's own,
 * which every thread's signal mask goes through).  No source file is
 * longer than MAX_FILE_LINES lines, and no function's body than
 * MAX_FUNCTION_LINES: past those a file holds more than one idea and a
 * function more than a reader can keep in mind (CONTRIBUTING, style).  A
 * body is what lies between a '{' and a '}' that open their lines, which
 * is how this tree writes functions and nothing else.
 *
 * The test collects everything it finds wrong, with the file and the line,
 * and fails once with the whole list.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "folded.h"
#include "interpreters.h"
#include "suite.h"
#include "target.h"
#include "util/util.h"

/* The layers of the sources, lowest first: a file may include from its own
 * directory and the ones before it (Makefile.am lists the sources in this
 * order). */
static const char *const layers[] = {
	"util", "profile", "process", "interp", "python", "native", "analysis", "sample", "top",
	"cluster", "cmd",
};

static int layer_of(const char *dir, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(layers); i++)
		if (strlen(layers[i]) == len && !strncmp(layers[i], dir, len))
			return (int)i;
	return -1;
}

#define MAX_FILE_LINES 900
#define MAX_FUNCTION_LINES 80

struct walk {
	char *msg;
	char order[128];		/* " util profile ...", for messages */
	struct strbuf definers;		/* files defining sigprocmask(), one per line */
	int files;
};

/* Does the text at p, a "sigprocmask(" after a return type, define it (a
 * '{' before any ';')? */
static bool defines(const char *p)
{
	size_t n = strcspn(p, ";{");

	return p[n] == '{';
}

/* The includes and sigprocmask() definitions of one source file, rel its
 * path from the top, own its layer. */
static void check_file(struct walk *w, const char *path, const char *rel, int own)
{
	char *text = test_slurp(path), *p = text;
	int lineno = 1, body = 0;

	w->files++;
	for (; *p; lineno++) {
		size_t n = strcspn(p, "\n");
		const char *s = p + strspn(p, " \t");

		if (*p == '{')
			body = lineno;
		else if (*p == '}' && body) {
			if (lineno - body - 1 > MAX_FUNCTION_LINES)
				msg_add(&w->msg, "%s:%d: a function body of %d lines (at most %d)",
					rel, body, lineno - body - 1, MAX_FUNCTION_LINES);
			body = 0;
		}

		/* int sigprocmask(...) {, the definition; not a prototype. */
		if (!strncmp(s, "int", 3) && isspace((unsigned char)s[3])) {
			const char *name = s + 3 + strspn(s + 3, " \t");

			if (!strncmp(name, "sigprocmask", 11) &&
			    name[11 + strspn(name + 11, " \t")] == '(' && defines(name))
				sb_printf(&w->definers, "%s:%d\n", rel, lineno);
		}
		if (*s == '#') {
			s += 1 + strspn(s + 1, " \t");
			if (!strncmp(s, "include", 7)) {
				s += 7 + strspn(s + 7, " \t");
				if (*s == '"' && memchr(s + 1, '/', strcspn(s + 1, "\"\n"))) {
					size_t dlen = strcspn(s + 1, "/");
					int layer = layer_of(s + 1, dlen);

					if (layer < 0)
						msg_add(&w->msg, "%s:%d: #include \"%.*s/...\": %.*s is no "
							"layer of the table", rel, lineno, (int)dlen, s + 1,
							(int)dlen, s + 1);
					else if (layer > own)
						msg_add(&w->msg, "%s:%d: #include \"%.*s/...\" reaches up, "
							"from %s to %s (the layers, lowest first:%s)",
							rel, lineno, (int)dlen, s + 1, layers[own],
							layers[layer], w->order);
				}
			}
		}
		p += n + (p[n] == '\n');
	}
	if (lineno - 1 > MAX_FILE_LINES)
		msg_add(&w->msg, "%s: %d lines (at most %d)", rel, lineno - 1, MAX_FILE_LINES);
	free(text);
}

/* Every .c and .h under dir (rel: its path from the top), in layer own, or,
 * when own is -1, in the layer its first directory names. */
static void walk_dir(struct walk *w, const char *dir, const char *rel, int own)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	ck_assert_msg(d, "cannot open %s", dir);
	while ((e = readdir(d))) {
		char *path, *sub;
		size_t len = strlen(e->d_name);
		int layer = own;
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		sub = xasprintf("%s/%s", rel, e->d_name);
		if (e->d_type == DT_DIR ||
		    (e->d_type == DT_UNKNOWN && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
			if (own < 0) {
				layer = layer_of(e->d_name, len);
				if (layer < 0)
					msg_add(&w->msg, "%s/: a directory that is no layer of the "
						"table", sub);
			}
			if (layer >= 0)
				walk_dir(w, path, sub, layer);
		} else if (len > 2 && (!strcmp(e->d_name + len - 2, ".c") ||
				       !strcmp(e->d_name + len - 2, ".h"))) {
			if (own < 0)
				msg_add(&w->msg, "%s: a source file in no layer", sub);
			else
				check_file(w, path, sub, own);
		}
		free(sub);
		free(path);
	}
	closedir(d);
}

START_TEST(test_layers)
{
	struct walk w = { .msg = NULL, .definers = STRBUF_INIT };
	char *src = xasprintf("%s/src", test_srcdir());
	char *interp = xasprintf("%s/interp", test_srcdir());

	for (size_t i = 0; i < ARRAY_SIZE(layers); i++)
		snprintf(w.order + strlen(w.order), sizeof(w.order) - strlen(w.order), " %s",
			 layers[i]);
	walk_dir(&w, src, "src", -1);
	walk_dir(&w, interp, "interp", layer_of("interp", 6));
	ck_assert_msg(w.files > 100, "only %d source files under src/ and interp/", w.files);
	if (!w.definers.buf || strncmp(w.definers.buf, "src/util/sigmask.c:", 19) ||
	    strchr(w.definers.buf, '\n')[1])
		msg_add(&w.msg, "sigprocmask() must be defined once, in src/util/sigmask.c; "
			"definitions found:\n%s", w.definers.buf ? w.definers.buf : "(none)\n");
	fail_if_any(w.msg, "the layout of the sources");
	sb_release(&w.definers);
	free(interp);
	free(src);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("layers");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_add_test(tc, test_layers);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
