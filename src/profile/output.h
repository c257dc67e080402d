/* The profile output formats.  Each writer takes a finished profile and a
 * stream; the caller writes to a temporary file and renames it, so an
 * interrupted run never leaves half a file in place of a good one.
 *
 * Errors as util/status.h says: what writes to a stream returns -errno;
 * what has told the user returns status_fail() of the exit status. */
#ifndef PYSTROBE_OUTPUT_H
#define PYSTROBE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "util/util.h"

struct out_opts {
	bool full_filenames;
	/* Native names whole in flame graph labels, not shortened; the
	 * tooltips and the other formats have them whole anyway. */
	bool full_names;
	const char *title;	/* NULL: made from the profile's metadata */
	const char *subtitle;	/* flame graph; NULL: made from the metadata */
	/* A differential profile (flamegraph and collapsed): the profile
	 * written is compared with diff_base, which has the same frame table
	 * (the same frame ids mean the same frames). */
	const struct profile *diff_base;
	bool diff_negate;	/* the profile written is BEFORE, diff_base AFTER */
	bool diff_raw;		/* compare counts, not shares of each total */
};

/* Each returns 0, or -errno when writing failed. */
int out_flamegraph(const struct profile *p, FILE *f, const struct out_opts *o);
int out_collapsed(const struct profile *p, FILE *f, const struct out_opts *o);
int out_speedscope(const struct profile *p, FILE *f, const struct out_opts *o);
int out_chrometrace(const struct profile *p, FILE *f, const struct out_opts *o);

/* Pieces of a Chrome trace's event list, for out_chrometrace() and the
 * job's trace of record --slurm (cluster/jobtrace.c): the comma before an
 * event but the first (*need_comma), an event's "pid" and "tid", and a
 * metadata event ("ph":"M") naming what (process_name, thread_name). */
void chrometrace_event_begin(struct strbuf *sb, bool *need_comma);
void chrometrace_put_ids(struct strbuf *sb, uint64_t pid, uint64_t tid);
void chrometrace_meta(struct strbuf *sb, bool *need_comma, const char *what, uint64_t pid,
		      uint64_t tid, const char *name);
int out_pprof(const struct profile *p, FILE *f, const struct out_opts *o);

/* The end of every writer: flush f and say whether any write failed.
 * Returns 0, or -errno (-EIO when the stream knows no more). */
int out_finish(FILE *f);

/* Write what sb holds to f and empty it: the writers that build their
 * output in pieces hand it over in chunks. */
void out_flush_sb(struct strbuf *sb, FILE *f);

struct out_format {
	const char *name;
	const char *ext;	/* for default file names */
	int (*write)(const struct profile *p, FILE *f, const struct out_opts *o);
	bool timeline;		/* it needs the profile's runs */
	bool diff;		/* it can show a difference (out_opts.diff_base) */
	/* Made of the sample times alone: a profile without them (read
	 * from a file of counts, merged from several) cannot be written. */
	bool times_only;
};

/* The formats, the default (flamegraph) first; NULL-terminated by name. */
extern const struct out_format out_formats[];
const struct out_format *out_format_find(const char *name);

/* The names of the formats pick says yes to (NULL: every one), ", "
 * between them, for messages (a new string). */
char *out_format_names(bool (*pick)(const struct out_format *f));
/* picks: those that can show a difference, those a merge can write. */
bool out_format_diff(const struct out_format *f);
bool out_format_mergeable(const struct out_format *f);

/* The format to write: -f's (name, or NULL when not given), else the one
 * the output name's ending stands for (.svg, .txt/.collapsed/.folded,
 * .json/.speedscope.json, .trace.json, .pb.gz/.pprof), else flamegraph,
 * which a line on stderr then says (-o profile, -o x.out; not -o -, nor
 * what is there and is no plain file, such as /dev/null).
 * Returns 0, or status_fail(EXIT_USAGE) after a usage error starting with
 * cmd: an unknown name, one the ending contradicts (-f pprof -o x.svg), or
 * an ending of a file of another kind (.png, .pdf, .html, .py...), with
 * -f or without. */
int out_format_choose(const char *cmd, const char *name, const char *path,
		      const struct out_format **fmt);

/* How to name path in a message: "-" is standard output. */
const char *out_path_name(const char *path);

/* "pystrobe-WHAT-DATE-TIME.EXT", a default file name (a new string). */
char *out_default_name(const char *what, const struct out_format *fmt);

/* Write p to path through a temporary file renamed into place, so an
 * interrupted run never leaves half a file in place of a good one; "-" is
 * standard output.
 * Returns 0, or status_fail(EXIT_ERROR) after an error message that starts
 * with cmd. */
int out_write_file(const struct out_format *fmt, const struct profile *p,
		   const struct out_opts *o, const char *path, const char *cmd);

/* out_write_file() of any contents (record --slurm's Chrome trace of a
 * job): fill writes them to f, 0 or -errno; "-" and a path that is no
 * plain file alike. */
int out_write_with(const char *path, const char *cmd, int (*fill)(FILE *f, void *arg),
		   void *arg);

/* The same, to a plain file only: fill writes them to f (0, or -errno); the
 * file is synced to disk before it is renamed into place, and
 * the temporary removed on any failure.  Returns 0 or -errno, after an
 * error message that starts with cmd; with cmd NULL, none. */
int out_write_atomic(const char *path, const char *cmd, int (*fill)(FILE *f, void *arg),
		     void *arg);

/* data gzip-compressed onto f: 0, or -errno. */
int out_write_gzip(FILE *f, const void *data, size_t len);

/* Before a recording: will out_write_file() be able to write path?  A
 * file is made beside it and removed, as the real one will be (so a
 * missing directory, a read-only one or a full inode table shows now,
 * not after the recording).  Returns 0, or status_fail(EXIT_USAGE) after
 * one line that starts with cmd, names path and says what to do. */
int out_check_path(const char *path, const char *cmd);

/* Whether a file path.probe.XXXXXX can be made (and is removed at once):
 * 0, or -errno why not. */
int out_probe(const char *path);

/* Where a profile goes when it cannot go where it was meant to: $TMPDIR,
 * else /tmp. */
const char *out_tmpdir(void);

#endif
