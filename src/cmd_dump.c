/* pystrobe dump: every thread's stack, now. */
#include "cmd.h"
#include "json.h"
#include "snapshot.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char dump_usage[] =
	"usage: pystrobe dump [options] --pid PID\n"
	"\n"
	"Print the Python stack of every thread of a running process.\n"
	"\n"
	"  -p, --pid PID      the process to read\n"
	"  -j, --json         one JSON document instead of text\n"
	"  -l, --locals       show arguments and local variables of each frame\n"
	"      --nonblocking  read without pausing the process (stacks may be torn)\n"
	"  -h, --help         show this help\n";

int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v <= 0 || v > 0x7fffffff)
		return 0;
	return (int)v;
}

static void put_name(struct strbuf *sb, const char *s)
{
	sb_add_printable(sb, s ? s : "?");
}

static void text_thread(struct strbuf *sb, const struct py_thread *t, bool locals)
{
	sb_printf(sb, "Thread %d", (int)t->tid);
	if (t->name) {
		sb_puts(sb, " \"");
		put_name(sb, t->name);
		sb_putc(sb, '"');
	}
	sb_printf(sb, " (%s%s) ident 0x%llx\n", t->idle ? "idle" : "active",
		  t->gil ? ", holds the GIL" : "", (unsigned long long)t->ident);
	for (int i = 0; i < t->nframes; i++) {
		const struct py_frame *f = &t->frames[i];

		sb_puts(sb, "    ");
		put_name(sb, f->function);
		sb_puts(sb, " (");
		put_name(sb, f->file);
		if (f->line >= 0)
			sb_printf(sb, ":%d", f->line);
		sb_puts(sb, ")\n");
		for (int k = 0; locals && k < f->nlocals; k++) {
			sb_printf(sb, "        %s", f->locals[k].arg ? "arg " : "");
			put_name(sb, f->locals[k].name);
			sb_puts(sb, " = ");
			put_name(sb, f->locals[k].repr);
			sb_putc(sb, '\n');
		}
	}
	if (t->truncated)
		sb_printf(sb, "    ... (stack cut at %d frames)\n", t->nframes);
	if (t->error) {
		sb_puts(sb, "    [error: ");
		put_name(sb, t->error);
		sb_puts(sb, "]\n");
	}
}

static void text_snapshot(struct strbuf *sb, const struct snapshot *s, bool locals)
{
	sb_printf(sb, "Process %d:", (int)s->pid);
	for (int i = 0; s->argv && i < s->argc; i++) {
		sb_putc(sb, ' ');
		put_name(sb, s->argv[i]);
	}
	sb_printf(sb, "\nPython %s (", s->pi.version);
	put_name(sb, s->pi.path);
	sb_puts(sb, ")\n");
	for (int i = 0; i < s->nthreads; i++) {
		sb_putc(sb, '\n');
		text_thread(sb, &s->threads[i], locals);
	}
}

static void json_frame(struct json *j, const struct py_frame *f, bool locals)
{
	json_obj_begin(j);
	json_key(j, "kind");
	json_str(j, "python");
	json_key(j, "function");
	json_str(j, f->function);
	json_key(j, "file");
	json_str(j, f->file);
	json_key(j, "line");
	json_int(j, f->line);
	if (locals) {
		json_key(j, "locals");
		json_arr_begin(j);
		for (int k = 0; k < f->nlocals; k++) {
			json_obj_begin(j);
			json_key(j, "name");
			json_str(j, f->locals[k].name);
			json_key(j, "arg");
			json_bool(j, f->locals[k].arg);
			json_key(j, "type");
			json_str(j, f->locals[k].type);
			json_key(j, "repr");
			json_str(j, f->locals[k].repr);
			json_obj_end(j);
		}
		json_arr_end(j);
	}
	json_obj_end(j);
}

static void json_thread(struct json *j, const struct py_thread *t, bool locals)
{
	json_obj_begin(j);
	json_key(j, "tid");
	json_int(j, t->tid);
	json_key(j, "ident");
	json_uint(j, t->ident);
	json_key(j, "name");
	json_str(j, t->name);
	json_key(j, "gil");
	json_bool(j, t->gil);
	json_key(j, "idle");
	json_bool(j, t->idle);
	json_key(j, "truncated");
	json_bool(j, t->truncated);
	json_key(j, "error");
	json_str(j, t->error);
	json_key(j, "frames");
	json_arr_begin(j);
	for (int i = 0; i < t->nframes; i++)
		json_frame(j, &t->frames[i], locals);
	json_arr_end(j);
	json_obj_end(j);
}

static void json_snapshot(struct json *j, const struct snapshot *s, bool locals)
{
	json_obj_begin(j);
	json_key(j, "pid");
	json_int(j, s->pid);
	json_key(j, "cmdline");
	json_arr_begin(j);
	for (int i = 0; s->argv && i < s->argc; i++)
		json_str(j, s->argv[i]);
	json_arr_end(j);
	json_key(j, "python");
	json_obj_begin(j);
	json_key(j, "version");
	json_str(j, s->pi.version);
	json_key(j, "path");
	json_str(j, s->pi.path);
	json_obj_end(j);
	json_key(j, "threads");
	json_arr_begin(j);
	for (int i = 0; i < s->nthreads; i++)
		json_thread(j, &s->threads[i], locals);
	json_arr_end(j);
	json_obj_end(j);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "locals", no_argument, NULL, 'l' },
		{ "nonblocking", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct snapshot_opts so = { 0 };
	struct snapshot snap;
	struct strbuf out = STRBUF_INIT;
	bool json = false;
	char err[512];
	int pid = 0, c, rc;

	optind = 1;
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, ":p:jlh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = parse_pid(optarg);
			if (!pid) {
				errorf("dump: invalid pid '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j': json = true; break;
		case 'l': so.locals = true; break;
		case 'N': so.nonblocking = true; break;
		case 'h':
			fputs(dump_usage, stdout);
			return EXIT_OK;
		case ':':
			errorf("dump: %s needs a value (see pystrobe dump --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			errorf("dump: unknown option '%s' (see pystrobe dump --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (!pid || optind < argc) {
		errorf("dump: %s (see pystrobe dump --help)",
		       pid ? "unexpected argument" : "--pid PID is required");
		return EXIT_USAGE;
	}

	rc = snapshot_take(pid, &so, &snap, err, sizeof(err));
	if (rc < 0) {
		errorf("%s", err);
		return -rc;
	}
	if (json) {
		struct json j;

		json_init(&j, &out);
		json_obj_begin(&j);
		json_key(&j, "processes");
		json_arr_begin(&j);
		json_snapshot(&j, &snap, so.locals);
		json_arr_end(&j);
		json_obj_end(&j);
		sb_putc(&out, '\n');
	} else {
		text_snapshot(&out, &snap, so.locals);
	}
	fwrite(out.buf, 1, out.len, stdout);
	sb_release(&out);
	snapshot_free(&snap);
	if (fflush(stdout) != 0) {
		errorf("cannot write the output");
		return EXIT_ERROR;
	}
	return EXIT_OK;
}
