/* The shell completion files in completion/ (installed by make install),
 * held to the commands' option tables (src/cmd/options.h) and the format
 * table (src/profile/output.c).
 *
 * bash: completion/pystrobe is sourced in `bash -c`; `complete -p pystrobe`
 * must name its function, and lines are completed by setting COMP_WORDS
 * and COMP_CWORD as bash does and calling it: the commands, each
 * command's options (the long options of its table, no more, no less),
 * nothing after an option that takes a value but that value, -f's formats
 * (those of the format table, and for diff and merge only what they
 * write; convert writes them all), files after -o and as diff's inputs, a
 * command after `--`, and the pid of a live python3 after -p.
 * zsh: completion/_pystrobe names every long option of each table, and
 * with zsh installed it parses (zsh -n) and compinit registers it for
 * pystrobe; without zsh that half says so on stdout.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "folded.h"
#include "interpreters.h"
#include "profile/output.h"
#include "target.h"
#include "util/util.h"
#include "suite.h"

static const struct {
	const char *name;
	const struct opt_table *opts;
} commands[] = {
	{ "dump", &dump_options },
	{ "record", &record_options },
	{ "top", &top_options },
	{ "diff", &diff_options },
	{ "merge", &merge_options },
	{ "convert", &convert_options },
	{ "watch", &watch_options },
	{ "group", &group_options },
};

/* bash: source the file, print `complete -p pystrobe`, then one line of
 * candidates per line to complete ("|" marks the cursor at the end). */
static const char driver[] =
	"source \"$1\" || exit 1; shift\n"
	"complete -p pystrobe\n"
	"for line; do\n"
	"  line=${line%|}\n"
	"  read -ra COMP_WORDS <<<\"$line\"\n"
	"  [[ $line == *' ' ]] && COMP_WORDS+=('')\n"
	"  COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()\n"
	"  _pystrobe\n"
	"  printf '%s\\n' \"${COMPREPLY[*]}\"\n"
	"done\n";

static char *completion_file(const char *name)
{
	return xasprintf("%s/completion/%s", test_srcdir(), name);
}

/* Complete each of lines (NULL-terminated); out[i] is line i's candidates,
 * space-separated (new strings). */
static void complete_lines(const char *const *lines, char **out)
{
	struct argv_buf a = { .n = 0 };
	char *file = completion_file("pystrobe"), *p, *nl, why[64];
	struct run r;
	int i = 0;

	arg(&a, "bash");
	arg(&a, "-c");
	arg(&a, driver);
	arg(&a, "bash");
	arg(&a, file);
	for (int k = 0; lines[k]; k++)
		arg(&a, lines[k]);
	ck_assert_int_eq(run_cmd(&r, 20000, a.v), 0);
	ck_assert_msg(run_exit(&r) == 0, "bash: %s; %s", run_describe(&r, why, sizeof(why)), r.err);
	ck_assert_msg(!strncmp(r.out, "complete ", 9) && strstr(r.out, "-F _pystrobe pystrobe\n"),
		      "complete -p pystrobe: %.200s", r.out);
	p = strchr(r.out, '\n') + 1;
	for (; lines[i] && (nl = strchr(p, '\n')); i++, p = nl + 1)
		out[i] = strndup(p, nl - p);
	ck_assert_msg(!lines[i], "bash answered %d lines of %s", i, r.out);
	run_free(&r);
	free(file);
}

/* Every word of a is one of b's. */
static bool words_in(const char *a, const char *b)
{
	char *s = xstrdup(a), *save = NULL;
	bool all = true;

	for (char *w = strtok_r(s, " ", &save); w && all; w = strtok_r(NULL, " ", &save))
		all = has_word(b, w);
	free(s);
	return all;
}

/* Are the space-separated words of a and b the same set? */
static bool same_words(const char *a, const char *b)
{
	return words_in(a, b) && words_in(b, a);
}

START_TEST(test_bash_options)
{
	const char *lines[ARRAY_SIZE(commands) + 1] = { NULL };
	char *got[ARRAY_SIZE(commands)], *want;

	for (int i = 0; i < (int)ARRAY_SIZE(commands); i++)
		lines[i] = xasprintf("pystrobe %s --|", commands[i].name);
	complete_lines(lines, got);
	for (int i = 0; i < (int)ARRAY_SIZE(commands); i++) {
		want = table_long_options(commands[i].opts);
		ck_assert_msg(same_words(got[i], want), "%s: completes '%s', its table has '%s'",
			      commands[i].name, got[i], want);
		free(want);
		free(got[i]);
		free((char *)lines[i]);
	}
}
END_TEST

/* After an option that takes a value, its value: never another option. */
#define VALUES_BATCH 40

START_TEST(test_bash_values)
{
	const char **lines = xcalloc(ARRAY_SIZE(commands) * 2 * OPT_MAX + 1, sizeof(*lines));
	char **got = xcalloc(ARRAY_SIZE(commands) * 2 * OPT_MAX, sizeof(*got));
	int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		for (const struct opt *o = commands[i].opts->opts; o->name || o->like; o++) {
			const struct opt *d = opt_def(o);

			if (d->arg != OPT_ARG)
				continue;
			lines[n++] = xasprintf("pystrobe %s --%s --|", commands[i].name, d->name);
			if (d->short_name)
				lines[n++] = xasprintf("pystrobe %s -%c --|", commands[i].name,
						       d->short_name);
		}
	/* In batches: one bash's argv (struct argv_buf) holds 64 words. */
	for (int at = 0; at < n; at += VALUES_BATCH) {
		const char *save = at + VALUES_BATCH < n ? lines[at + VALUES_BATCH] : NULL;

		if (save)
			lines[at + VALUES_BATCH] = NULL;
		complete_lines(lines + at, got + at);
		if (save)
			lines[at + VALUES_BATCH] = save;
	}
	for (int i = 0; i < n; i++) {
		ck_assert_msg(!strstr(got[i], "--"), "'%s' completes options: %s", lines[i],
			      got[i]);
		free(got[i]);
		free((char *)lines[i]);
	}
	free(got);
	free(lines);
}
END_TEST

/* The names of the formats pick says yes to, space-separated. */
static char *format_words(bool (*pick)(const struct out_format *f))
{
	char *names = out_format_names(pick), *w = names;

	/* "a, b, c" */
	for (char *p = names; *p; p++)
		if (*p != ',')
			*w++ = *p;
	*w = '\0';
	return names;
}

START_TEST(test_bash_words)
{
	char *dir = test_tmpdir("check_completion");
	char *file = test_file(dir, "abc.svg", "x");
	char *all = format_words(NULL), *diff = format_words(out_format_diff);
	char *merge = format_words(out_format_mergeable);
	char *got[16], *o_line = xasprintf("pystrobe record -o %s/ab|", dir);
	char *diff_line = xasprintf("pystrobe diff %s/ab|", dir);
	const char *lines[] = {
		"pystrobe |", "pystrobe me|", "pystrobe record -f |", "pystrobe diff -f |",
		"pystrobe merge --format |", o_line, diff_line, "pystrobe top -- |",
		"pystrobe record --|", "pystrobe convert -f |", NULL,
	};

	complete_lines(lines, got);
	ck_assert_str_eq(got[0], "dump record top diff merge convert watch group --help --version --licences");
	ck_assert_str_eq(got[1], "merge");
	ck_assert_msg(same_words(got[2], all), "record -f: %s", got[2]);
	ck_assert_msg(same_words(got[3], diff), "diff -f: %s", got[3]);
	ck_assert_msg(same_words(got[4], merge), "merge --format: %s", got[4]);
	ck_assert_msg(!strcmp(got[5], file), "record -o: '%s', not %s", got[5], file);
	ck_assert_msg(!strcmp(got[6], file), "diff: '%s', not %s", got[6], file);
	ck_assert_msg(strstr(got[7], "bash"), "after --, commands: no bash in '%.200s'", got[7]);
	ck_assert_msg(strstr(got[8], "--output") && !strstr(got[8], "--delay"), "%s", got[8]);
	ck_assert_msg(same_words(got[9], all), "convert -f: %s", got[9]);
	for (int i = 0; lines[i]; i++)
		free(got[i]);
	free(all);
	free(diff);
	free(merge);
	free(o_line);
	free(diff_line);
	free(file);
	test_rmdir(dir);
	free(dir);
}
END_TEST

/* -p offers the pids of Python processes: a live python3's among them. */
START_TEST(test_bash_pid)
{
	char *const py[] = { (char *)test_python3(), "-c", "import time; time.sleep(30)", NULL };
	const char *lines[] = { "pystrobe dump -p |", NULL };
	pid_t pid = spawn_cmd(py);
	char *got[1], want[32];

	ck_assert_msg(pid > 0, "cannot start %s", py[0]);
	proc_wait_exe(pid, "python3", 5000);
	sleep_ms(200);
	complete_lines(lines, got);
	kill_reap(pid);
	snprintf(want, sizeof(want), "%d", (int)pid);
	ck_assert_msg(has_word(got[0], want), "-p: pid %d not in '%s'", (int)pid, got[0]);
	free(got[0]);
}
END_TEST

START_TEST(test_zsh)
{
	char *file = completion_file("_pystrobe"), *text = test_slurp(file), why[64];
	char *dir = xasprintf("%s/completion", test_srcdir()), *script;
	struct run r;

	ck_assert_msg(text && !strncmp(text, "#compdef pystrobe\n", 18), "%s: no #compdef line",
		      file);
	for (int i = 0; i < (int)ARRAY_SIZE(commands); i++) {
		char *want = table_long_options(commands[i].opts), *save = NULL;

		for (char *w = strtok_r(want, " ", &save); w; w = strtok_r(NULL, " ", &save))
			ck_assert_msg(strstr(text, w), "%s: %s's %s is not in it", file,
				      commands[i].name, w);
		free(want);
	}
	if (system("zsh --version >/dev/null 2>&1") != 0) {
		printf("check_completion: zsh not installed: _pystrobe not parsed by zsh "
		       "(apt-get install zsh)\n");
		goto out;
	}
	script = xasprintf("zsh -n '%s' && zsh -fc 'fpath=(%s $fpath); autoload -Uz compinit; "
			   "compinit -D -u; print -r -- $_comps[pystrobe]'", file, dir);
	ck_assert_int_eq(run_cmd(&r, 20000, (char *[]){ "sh", "-c", script, NULL }), 0);
	ck_assert_msg(run_exit(&r) == 0 && !strcmp(r.out, "_pystrobe\n"),
		      "zsh: %s; out '%s', err '%s'", run_describe(&r, why, sizeof(why)), r.out, r.err);
	run_free(&r);
	free(script);
	printf("check_completion: zsh parses _pystrobe and compinit registers it\n");
out:
	free(dir);
	free(text);
	free(file);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("completion");
	TCase *tc = tcase_create("completion");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bash_options);
	tcase_add_test(tc, test_bash_values);
	tcase_add_test(tc, test_bash_words);
	tcase_add_test(tc, test_bash_pid);
	tcase_add_test(tc, test_zsh);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
