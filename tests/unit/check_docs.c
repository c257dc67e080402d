/* The documentation held to the code.
 *
 * man/: every page renders with `man --warnings` and not a word on stderr,
 * in the test's locale and in C's (a SKIP where man-db's man is missing),
 * and `make install` installs every one (Makefile.am's dist_man_MANS).
 * The OPTIONS entries of pystrobe-CMD(1) are the long options of CMD's
 * option table (src/cmd/options.h: the one --help is printed from), and
 * those of pystrobe(1) the ones `pystrobe --help` lists, both ways,
 * written \-\-name in the roff source; every long option a SYNOPSIS
 * names is one of them.  Each page's
 * EXIT STATUS lists codes of the table in src/util/status.c, each entry's
 * text starting with the table's meaning word for word; pystrobe(1) lists
 * every code, each command's page at least 0, 1 and 2.  `pystrobe --help`
 * names every status by its brief, in lines under 80 columns.
 *
 * tests/README names every program of tests/Makefile.am's UNIT_TESTS and
 * LIVE_TESTS.
 *
 * Each test collects everything it finds wrong, with the file and the line
 * or the option, and fails once with the whole list.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "folded.h"
#include "interpreters.h"
#include "suite.h"
#include "target.h"
#include "util/status.h"
#include "util/util.h"

/* The pages, and the command whose options each one's OPTIONS must match
 * (NULL: pystrobe's own, from its --help). */
static const struct page {
	const char *name;
	const char *cmd;
	const struct opt_table *opts;
} pages[] = {
	{ "pystrobe", NULL, NULL },
	{ "pystrobe-dump", "dump", &dump_options },
	{ "pystrobe-record", "record", &record_options },
	{ "pystrobe-top", "top", &top_options },
	{ "pystrobe-diff", "diff", &diff_options },
	{ "pystrobe-merge", "merge", &merge_options },
	{ "pystrobe-convert", "convert", &convert_options },
	{ "pystrobe-watch", "watch", &watch_options },
	{ "pystrobe-group", "group", &group_options },
};

static char *page_path(const char *name)
{
	return xasprintf("%s/man/%s.1", test_srcdir(), name);
}

/* --- roff ----------------------------------------------------------------- */

/* A page's lines (pointers into text, which it modifies). */
struct roff {
	char *text;
	char **line;
	int n;
};

static void roff_read(struct roff *r, const char *path)
{
	char *p;

	r->text = test_slurp(path);
	r->n = 0;
	r->line = NULL;
	for (p = r->text; *p; r->n++) {
		char *nl = strchr(p, '\n');

		r->line = realloc(r->line, (r->n + 1) * sizeof(*r->line));
		r->line[r->n] = p;
		if (!nl)
			break;
		*nl = 0;
		p = nl + 1;
	}
}

static void roff_free(struct roff *r)
{
	free(r->line);
	free(r->text);
}

/* Is line the request .NAME (alone, or with arguments)? */
static bool is_request(const char *line, const char *name)
{
	size_t n = strlen(name);

	return line[0] == '.' && !strncmp(line + 1, name, n) &&
	       (line[n + 1] == 0 || line[n + 1] == ' ');
}

/* The lines of section name: [*from, *to), the .SH line itself left out.
 * false when the page has no such section. */
static bool roff_section(const struct roff *r, const char *name, int *from, int *to)
{
	for (int i = 0; i < r->n; i++) {
		const char *s = r->line[i] + 3;

		if (!is_request(r->line[i], "SH"))
			continue;
		s += strspn(s, " ");
		if (*s == '"')
			s++;
		if (strncmp(s, name, strlen(name)) || (s[strlen(name)] && s[strlen(name)] != '"'))
			continue;
		*from = i + 1;
		for (*to = *from; *to < r->n && !is_request(r->line[*to], "SH"); (*to)++)
			;
		return true;
	}
	return false;
}

/* Text with roff's escapes undone, as far as the pages use them. */
static void unescape(struct strbuf *sb, const char *s)
{
	static const struct {
		const char *name, *text;
	} chars[] = {
		{ "dq", "\"" }, { "lq", "\"" }, { "rq", "\"" }, { "aq", "'" }, { "em", "--" },
		{ "en", "-" }, { "mu", "x" }, { "bu", "*" }, { "co", "(C)" },
	};

	for (; *s; s++) {
		if (*s != '\\') {
			sb_putc(sb, *s);
			continue;
		}
		switch (*++s) {
		case 0:
			return;
		case '-':
			sb_putc(sb, '-');
			break;
		case 'e':
		case '\\':
			sb_putc(sb, '\\');
			break;
		case ' ':
		case '~':
		case '0':
			sb_putc(sb, ' ');
			break;
		case '&':
		case '%':
		case ':':
		case '|':
		case '^':
			break;
		case '(': {
			const char *t = "?";

			if (!s[1] || !s[2])
				return;
			for (size_t i = 0; i < ARRAY_SIZE(chars); i++)
				if (!strncmp(s + 1, chars[i].name, 2))
					t = chars[i].text;
			sb_puts(sb, t);
			s += 2;
			break;
		}
		case '[':
			sb_putc(sb, '?');
			while (s[1] && s[1] != ']')
				s++;
			if (s[1])
				s++;
			break;
		case 'f':
		case '*':
			if (s[1] == '[') {
				while (s[1] && s[1] != ']')
					s++;
			} else if (s[1] == '(' && s[2] && s[3]) {
				s += 2;
			}
			if (s[1])
				s++;
			break;
		default:
			sb_putc(sb, *s);
		}
	}
}

/* The text one line puts on the page: a font macro's arguments (run
 * together for the alternating ones, BR, IR...), nothing for any other
 * request, the line itself for text. */
static void deroff_line(struct strbuf *sb, const char *line)
{
	static const char *const fonts[] = { "B", "I", "SM", "SB" };
	static const char *const alternating[] = { "BR", "RB", "IR", "RI", "BI", "IB" };
	struct strbuf arg = STRBUF_INIT;
	bool alt = false, font = false;
	const char *s = line;
	int nargs = 0;

	if (line[0] != '.' && line[0] != '\'') {
		unescape(sb, line);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(fonts); i++)
		font |= is_request(line, fonts[i]);
	for (size_t i = 0; i < ARRAY_SIZE(alternating); i++)
		alt |= is_request(line, alternating[i]);
	if (!font && !alt)
		return;
	s += strcspn(s, " ");
	while (*s) {
		bool quoted;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		quoted = *s == '"';
		if (quoted)
			s++;
		while (*s && (quoted ? *s != '"' : *s != ' ')) {
			if (*s == '\\' && s[1])
				sb_putc(&arg, *s++);
			sb_putc(&arg, *s++);
		}
		if (quoted && *s)
			s++;
		if (nargs++ && !alt)
			sb_putc(sb, ' ');
		unescape(sb, arg.buf ? arg.buf : "");
		sb_release(&arg);
	}
}

/* A new string: line i's text. */
static char *deroff(const struct roff *r, int i)
{
	struct strbuf sb = STRBUF_INIT;

	deroff_line(&sb, r->line[i]);
	return sb_detach(&sb);
}

/* Does line i end the body of a .TP entry? */
static bool ends_entry(const struct roff *r, int i)
{
	static const char *const ends[] = { "TP", "PP", "LP", "P", "IP", "SH", "SS" };

	for (size_t k = 0; k < ARRAY_SIZE(ends); k++)
		if (is_request(r->line[i], ends[k]))
			return true;
	return false;
}

/* Spaces collapsed to one, none at either end. */
static void squeeze(char *s)
{
	char *w = s;

	for (char *p = s; *p; p++) {
		if (isspace((unsigned char)*p)) {
			if (w > s && w[-1] != ' ')
				*w++ = ' ';
		} else {
			*w++ = *p;
		}
	}
	if (w > s && w[-1] == ' ')
		w--;
	*w = 0;
}

/* --- (a) the pages render, and are installed ------------------------------ */

/* `man --warnings -l path`, its warnings (stderr) appended to msg. */
static void render(const char *path, const char *locale, char **msg)
{
	char *env_locale = xasprintf("LC_ALL=%s", locale ? locale : "");
	char *const with[] = { "env", "MANWIDTH=80", env_locale, "man", "--warnings", "-l",
			       (char *)path, NULL };
	char *const without[] = { "env", "MANWIDTH=80", "man", "--warnings", "-l",
				  (char *)path, NULL };
	struct run r;
	char why[64];

	ck_assert_int_eq(run_cmd(&r, 30000, locale ? with : without), 0);
	if (run_exit(&r) != 0 || r.err[0] || !r.out[0])
		msg_add(msg, "%s%s%s: man --warnings -l: %s, %s%s", path,
			locale ? " with LC_ALL=" : "", locale ? locale : "",
			run_describe(&r, why, sizeof(why)), r.out[0] ? "" : "no output; ",
			r.err[0] ? r.err : "no warning");
	run_free(&r);
	free(env_locale);
}

START_TEST(test_pages_render)
{
	char *dir = xasprintf("%s/man", test_srcdir()), *msg = NULL;
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (system("command -v man >/dev/null 2>&1") != 0) {
		test_skip("check_docs: man is not installed (apt-get install man-db): the man "
			  "pages were not rendered");
		free(dir);
		return;
	}
	d = opendir(dir);
	ck_assert_msg(d, "cannot open %s", dir);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *path;

		if (len < 3 || strcmp(e->d_name + len - 2, ".1"))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		render(path, NULL, &msg);
		render(path, "C", &msg);
		free(path);
		n++;
	}
	closedir(d);
	test_used("man");
	ck_assert_msg(n >= (int)ARRAY_SIZE(pages), "%s: %d pages, not %zu", dir, n,
		      ARRAY_SIZE(pages));
	fail_if_any(msg, "man pages that do not render cleanly");
	free(dir);
}
END_TEST

/* Every page in man/ is one of pages[], and Makefile.am installs it. */
START_TEST(test_pages_installed)
{
	char *dir = xasprintf("%s/man", test_srcdir()), *msg = NULL;
	char *mk_path = xasprintf("%s/Makefile.am", test_srcdir()), *mk = test_slurp(mk_path);
	char *mans = strstr(mk, "dist_man_MANS"), *end;
	struct dirent *e;
	DIR *d;

	ck_assert_msg(mans, "%s: no dist_man_MANS", mk_path);
	/* The variable's value: to the first line not continued. */
	for (end = mans; *end && !(end[0] == '\n' && end[-1] != '\\'); end++)
		;
	*end = 0;
	d = opendir(dir);
	ck_assert_msg(d, "cannot open %s", dir);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		bool known = false;

		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(pages); i++)
			known |= len == strlen(pages[i].name) + 2 &&
				 !strncmp(e->d_name, pages[i].name, len - 2) &&
				 !strcmp(e->d_name + len - 2, ".1");
		if (!known)
			msg_add(&msg, "man/%s: not one of the pages this test knows (add it to "
				"pages[] in tests/unit/check_docs.c)", e->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		char *path = page_path(pages[i].name), *word = xasprintf("man/%s.1", pages[i].name);
		FILE *f = fopen(path, "r");

		if (!f)
			msg_add(&msg, "%s: missing", path);
		else
			fclose(f);
		if (!strstr(mans, word))
			msg_add(&msg, "%s: %s is not in dist_man_MANS (make install would leave it "
				"out)", mk_path, word);
		free(word);
		free(path);
	}
	fail_if_any(msg, "man pages");
	free(mk);
	free(mk_path);
	free(dir);
}
END_TEST

/* --- (b) OPTIONS against --help ------------------------------------------- */

/* "--a-b" as the roff source writes it: \-\-a\-b. */
static char *roff_option(const char *opt)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *opt; opt++)
		sb_puts(&sb, *opt == '-' ? "\\-" : (char[]){ *opt, 0 });
	return sb_detach(&sb);
}

/* The long options line i of r puts on the page ("--name" each, a lone
 * "--" or "a--b" left out), space-separated (a new string). */
static char *line_options(const struct roff *r, int i)
{
	char *text = deroff(r, i), *p = text;
	struct strbuf sb = STRBUF_INIT;

	while ((p = strstr(p, "--"))) {
		size_t n = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");

		/* Not the start of an option: "a--b", "---", a lone "--". */
		if ((p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-')) || n == 2) {
			p += 2;
			continue;
		}
		sb_printf(&sb, "%s%.*s", sb.len ? " " : "", (int)n, p);
		p += n;
	}
	free(text);
	return sb.buf ? sb_detach(&sb) : xstrdup("");
}

/* The long options of the .TP entry whose tag is line k+1 of path: each
 * one is appended to in_page, and must be one of help's and be written
 * \-\-name; an entry must have one. */
static void entry_options(const struct roff *r, int k, const char *path, const char *help,
			  const char *what, struct strbuf *in_page, char **msg)
{
	char *opts = line_options(r, k + 1), *save = NULL;
	int found = 0;

	for (char *opt = strtok_r(opts, " ", &save); opt; opt = strtok_r(NULL, " ", &save)) {
		char *raw = roff_option(opt);

		found++;
		sb_printf(in_page, " %s", opt);
		if (!has_word(help, opt))
			msg_add(msg, "%s:%d: OPTIONS has %s, which %s does not list", path, k + 2,
				opt, what);
		if (!strstr(r->line[k + 1], raw))
			msg_add(msg, "%s:%d: write %s as %s in the roff source", path, k + 2, opt,
				raw);
		free(raw);
	}
	if (!found) {
		char *tag = deroff(r, k + 1);

		msg_add(msg, "%s:%d: an OPTIONS entry without a long option: '%s'", path, k + 2,
			tag);
		free(tag);
	}
	free(opts);
}

/* Every long option the SYNOPSIS names is one of help's. */
static void synopsis_options(const struct roff *r, const char *path, const char *help,
			     const char *what, char **msg)
{
	int from, to;

	if (!roff_section(r, "SYNOPSIS", &from, &to)) {
		msg_add(msg, "%s: no SYNOPSIS section", path);
		return;
	}
	for (int k = from; k < to; k++) {
		char *opts = line_options(r, k), *save = NULL;

		for (char *o = strtok_r(opts, " ", &save); o; o = strtok_r(NULL, " ", &save))
			if (!has_word(help, o))
				msg_add(msg, "%s:%d: SYNOPSIS has %s, which %s does not list", path,
					k + 1, o, what);
		free(opts);
	}
}

/* pystrobe(1)'s SYNOPSIS shows every command: its own options (help) and
 * theirs, space-separated (a new string, kept for the test's run). */
static const char *every_option(const char *help)
{
	static char *all;
	struct strbuf sb = STRBUF_INIT;

	if (all)
		return all;
	sb_puts(&sb, help);
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		char *words = pages[i].opts ? table_long_options(pages[i].opts) : NULL;

		if (words)
			sb_printf(&sb, " %s", words);
		free(words);
	}
	return all = sb_detach(&sb);
}

START_TEST(test_options)
{
	char *msg = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		const struct page *pg = &pages[i];
		char *path = page_path(pg->name);
		char *help = pg->opts ? table_long_options(pg->opts) : help_long_options(NULL);
		char *what = pg->opts ? xasprintf("the option table of %s (src/cmd/%s.c)",
						  pg->cmd, pg->cmd) :
					xstrdup("pystrobe --help");
		struct strbuf in_page = STRBUF_INIT;
		char *words, *w, *save = NULL;
		struct roff r;
		int from, to;

		ck_assert_msg(help, "%s did not run, or failed", what);
		roff_read(&r, path);
		if (!roff_section(&r, "OPTIONS", &from, &to)) {
			msg_add(&msg, "%s: no OPTIONS section", path);
			from = to = 0;
		}
		for (int k = from; k + 1 < to; k++)
			if (is_request(r.line[k], "TP"))
				entry_options(&r, k, path, help, what, &in_page, &msg);
		synopsis_options(&r, path, pg->opts ? help : every_option(help), what, &msg);
		/* The other way: what --help lists, the page has. */
		words = xstrdup(help);
		for (w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
			if (!in_page.buf || !has_word(in_page.buf, w))
				msg_add(&msg, "%s: %s lists %s, which is no entry of its OPTIONS", path,
					what, w);
		free(words);
		sb_release(&in_page);
		roff_free(&r);
		free(what);
		free(help);
		free(path);
	}
	fail_if_any(msg, "man pages and the option tables disagree on options");
}
END_TEST

/* --- (c) EXIT STATUS against util/status.c -------------------------------- */

START_TEST(test_exit_status)
{
	char *msg = NULL;

	for (int c = 0; c < EXIT_NR; c++)
		ck_assert_msg(exit_statuses[c].code == c && exit_statuses[c].brief &&
			      exit_statuses[c].meaning,
			      "src/util/status.c: exit_statuses[%d] is not status %d", c, c);
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		char *path = page_path(pages[i].name);
		bool listed[EXIT_NR] = { false };
		int from, to, last = -1;
		struct roff r;

		roff_read(&r, path);
		if (!roff_section(&r, "EXIT STATUS", &from, &to)) {
			msg_add(&msg, "%s: no EXIT STATUS section", path);
			goto next;
		}
		for (int k = from; k + 1 < to; k++) {
			struct strbuf body = STRBUF_INIT;
			char *tag, *meaning, *text;
			int code, line = k + 2;

			if (!is_request(r.line[k], "TP"))
				continue;
			tag = deroff(&r, k + 1);
			squeeze(tag);
			if (!tag[0] || strspn(tag, "0123456789") != strlen(tag)) {
				free(tag);
				continue;
			}
			code = atoi(tag);
			free(tag);
			/* The entry's text: to the next entry or paragraph. */
			for (k += 2; k < to && !ends_entry(&r, k); k++) {
				deroff_line(&body, r.line[k]);
				sb_putc(&body, ' ');
			}
			k--;
			text = sb_detach(&body);
			if (code >= EXIT_NR) {
				msg_add(&msg, "%s:%d: EXIT STATUS lists %d, which src/util/status.c "
					"does not have (0-%d)", path, line, code, EXIT_NR - 1);
				free(text);
				continue;
			}
			if (code <= last)
				msg_add(&msg, "%s:%d: EXIT STATUS lists %d after %d", path, line, code,
					last);
			last = code;
			listed[code] = true;
			meaning = xstrdup(exit_statuses[code].meaning);
			squeeze(text);
			squeeze(meaning);
			if (strncmp(text, meaning, strlen(meaning)))
				msg_add(&msg, "%s:%d: EXIT STATUS %d says \"%s\"; it must start with "
					"src/util/status.c's meaning, \"%s\"", path, line, code, text,
					meaning);
			free(meaning);
			free(text);
		}
		for (int c = 0; c < EXIT_NR; c++)
			if (!listed[c] && (!pages[i].cmd || c <= EXIT_USAGE))
				msg_add(&msg, "%s: EXIT STATUS does not list %d (%s)", path, c,
					exit_statuses[c].brief);
next:
		roff_free(&r);
		free(path);
	}
	fail_if_any(msg, "man pages and src/util/status.c disagree on exit statuses");
}
END_TEST

/* `pystrobe --help`: "Exit status: 0 ok, 1 error, ..." from the table, every
 * line under 80 columns. */
START_TEST(test_help_statuses)
{
	struct strbuf want = STRBUF_INIT;
	char *msg = NULL, *all, *p;
	struct run r;
	int lineno = 1;

	ck_assert_int_eq(run_pystrobe(&r, "--help", NULL), 0);
	ck_assert_int_eq(run_exit(&r), 0);
	for (p = r.out; *p; lineno++) {
		size_t n = strcspn(p, "\n");

		if (n >= 80)
			msg_add(&msg, "pystrobe --help: line %d is %zu columns: %.*s", lineno, n,
				(int)n, p);
		p += n + (p[n] == '\n');
	}
	all = strstr(r.out, "Exit status:");
	ck_assert_msg(all, "pystrobe --help says nothing of exit statuses:\n%s", r.out);
	all = xstrdup(all);
	squeeze(all);
	for (int c = 0; c < EXIT_NR; c++) {
		sb_printf(&want, "%s%d %s%s", c ? " " : "Exit status: ", c, exit_statuses[c].brief,
			  c == EXIT_NR - 1 ? "." : ",");
	}
	if (strncmp(all, want.buf, want.len))
		msg_add(&msg, "pystrobe --help says \"%s\"; the table says \"%s\"", all, want.buf);
	fail_if_any(msg, "pystrobe --help");
	sb_release(&want);
	free(all);
	run_free(&r);
}
END_TEST

/* --- (d) tests/README names every test program ---------------------------- */

START_TEST(test_tests_readme)
{
	char *mk_path = xasprintf("%s/tests/Makefile.am", test_srcdir()), *mk = test_slurp(mk_path);
	char *readme_path = xasprintf("%s/tests/README", test_srcdir());
	char *readme = slurp(readme_path), *msg = NULL;
	const char *vars[] = { "UNIT_TESTS", "LIVE_TESTS" };
	int n = 0;

	ck_assert_msg(readme, "%s is missing: it must name every test program of %s", readme_path,
		      mk_path);
	for (size_t v = 0; v < ARRAY_SIZE(vars); v++) {
		char *words = make_words(mk, vars[v]), *save = NULL;

		for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save), n++) {
			const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;

			if (!names_word(readme, base))
				msg_add(&msg, "%s: %s (%s in %s) is not named", readme_path, base,
					vars[v], mk_path);
		}
		free(words);
	}
	ck_assert_msg(n > 40, "%s: only %d test programs found", mk_path, n);
	fail_if_any(msg, "tests/README");
	free(readme);
	free(readme_path);
	free(mk);
	free(mk_path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("docs");
	TCase *tc = tcase_create("docs");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_pages_render);
	tcase_add_test(tc, test_pages_installed);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_exit_status);
	tcase_add_test(tc, test_help_statuses);
	tcase_add_test(tc, test_tests_readme);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
