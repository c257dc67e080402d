/* Reading profiles back from files, for `diff` and `merge`.
 *
 * Three formats are read, told apart by their content, not their name;
 * each may be gzip-compressed (the stream is opened and looked at again):
 *
 *  - pprof (profile.proto), compressed as `record -f pprof` writes it and
 *    as most pprof producers do, or not: binary data (control characters
 *    other than tab, CR and LF in its first 4 KiB) is read as pprof.  Frames keep their function, file and
 *    line, so they print as `record` prints them; the string labels
 *    "process" and "thread" become process and thread roots again, and
 *    any other string label KEY becomes a root "KEY=VALUE" (what `merge`
 *    writes).  The count is the "samples" value, else the default sample
 *    type's, else the first.
 *  - folded stacks, `frame;frame;...;leaf COUNT` per line, from `record -f
 *    collapsed`, flamegraph.pl's stackcollapse scripts, perf, inferno and
 *    the like.  A frame is kept as its text (pystrobe's \xNN and \\ escapes
 *    undone), since a folded file does not say what is a function, a file
 *    or a line.
 *
 *  - a flight recording of `pystrobe watch` (flightrec.h), with its
 *    timeline: the only input with sample times, and so the only one a
 *    time slice applies to.
 *
 *  - pystrobe's flame graph (SVG), which carries the profile's stacks as
 *    folded text in an SVG_STACKS_TAG element (XML-escaped; its attributes
 *    give the rate, duration and start), read as a folded file is.  An
 *    SVG without it (another tool's, pystrobe diff's) is refused.
 *
 * What is none of these is named in the error (speedscope JSON, a Chrome
 * trace, other JSON, SVG or XML), which also says what is read and how to
 * get it (PROFILE_READ_FORMATS).
 *
 * Files are hostile input: sizes, depths and counts are bounded, and
 * anything that does not parse is an error with one line saying where,
 * never a crash or a partial profile.
 */
#ifndef PYSTROBE_PROFILE_READ_H
#define PYSTROBE_PROFILE_READ_H

#include <stddef.h>

#include "profile/flightrec.h"
#include "profile/profile.h"
#include "util/util.h"

/* Biggest input file, and biggest pprof once decompressed. */
#define PROFILE_READ_MAX	(1u << 30)
/* Deeper stacks are cut to this many frames, root first, and end in a
 * "<truncated>" frame, as `record` does. */
#define PROFILE_READ_DEPTH	4096

#define PROFILE_READ_ERR 1024

/* len bytes of gzip data, decompressed onto out: 0, or -1 with why in err
 * (corrupt, cut short, more than max bytes once decompressed). */
int gunzip_mem(const void *data, size_t len, size_t max, struct strbuf *out, char *err,
	       size_t errlen);

/* What the readers take, for messages about a file they do not. */
#define PROFILE_READ_FORMATS \
	"diff, merge and convert read the flame graphs (.svg) pystrobe record writes by default, " \
	"pprof (record -f pprof), folded stacks (record -f collapsed) and flight recordings " \
	"(watch), plain or gzip-compressed"

/* The start of the element of a flame graph that holds its stacks; its
 * text runs to the next "</metadata>". */
#define SVG_STACKS_TAG "<metadata id=\"pystrobe-stacks\""

/* A flame graph's stacks are folded text: PROFILE_FOLDED.  Recordings
 * and pprof keep functions, files and lines; folded text only labels. */
enum profile_format { PROFILE_FOLDED, PROFILE_PPROF, PROFILE_RECORDING };

/* Read path into p (initialised here).  Returns 0, or
 * status_fail(EXIT_BAD_INPUT) with p empty and a message naming the file
 * in err (PROFILE_READ_ERR bytes hold any). */
int profile_read(const char *path, struct profile *p, enum profile_format *fmt,
		 char *err, size_t errlen);

/* gzip data decompressed onto out (PROFILE_READ_MAX bytes at most): 0,
 * or status_fail(EXIT_BAD_INPUT) with "NAME: why" in err. */
struct strbuf;
int profile_gunzip(const char *data, size_t len, const char *name, struct strbuf *out,
		   char *err, size_t errlen);

/* The same on a buffer; name is for messages. */
int profile_read_mem(const char *data, size_t len, const char *name, struct profile *p,
		     enum profile_format *fmt, char *err, size_t errlen);

/* The same with a time slice of a flight recording (NULL: all of it; a
 * slice given for any other file is an error, and so is a slice without
 * samples, whose message says where the recording's samples are: both
 * return status_fail(EXIT_USAGE), where a file that does not read returns
 * status_fail(EXIT_BAD_INPUT)); info says what the recording held (zeros
 * for other files). */
int profile_read_slice(const char *path, const struct flightrec_slice *slice,
		       struct flightrec_info *info, struct profile *p, enum profile_format *fmt,
		       char *err, size_t errlen);
int profile_read_slice_mem(const char *data, size_t len, const char *name,
			   const struct flightrec_slice *slice, struct flightrec_info *info,
			   struct profile *p, enum profile_format *fmt, char *err, size_t errlen);

#endif
