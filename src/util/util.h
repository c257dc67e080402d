/* Small things every module uses: allocation that cannot fail silently,
 * a growable string; the exit statuses (status.h). */
#ifndef PYSTROBE_UTIL_H
#define PYSTROBE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/status.h"

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* realloc of n items of size bytes, dying on overflow as on exhaustion. */
void *xreallocarray(void *p, size_t n, size_t size);

/* Make room for nr items in the array x that has room for alloc: grow it
 * to twice its size (16 at first), or to nr if that is more, so appending
 * one at a time costs amortised O(1).  git's ALLOC_GROW.  alloc may be any
 * unsigned type; x and alloc are evaluated more than once. */
#define alloc_nr(a) ((a) ? 2 * (size_t)(a) : 16)
#define ALLOC_GROW(x, nr, alloc)                                              \
	do {                                                                  \
		if ((size_t)(nr) > (size_t)(alloc)) {                         \
			size_t n_ = alloc_nr(alloc);                          \
			(alloc) = n_ < (size_t)(nr) ? (size_t)(nr) : n_;      \
			(x) = xreallocarray((x), (alloc), sizeof(*(x)));      \
		}                                                             \
	} while (0)

/* A growable, always NUL-terminated string. */
struct strbuf {
	char *buf;
	size_t len, cap;
};
#define STRBUF_INIT { NULL, 0, 0 }
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putc(struct strbuf *sb, char c);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Decimal digits, without printf's cost (the trace writers put millions). */
void sb_put_u64(struct strbuf *sb, uint64_t v);
/* An unsigned LEB128 varint (protobuf's, the flight recording's). */
void sb_put_varint(struct strbuf *sb, uint64_t v);
/* The varint at *p, before end, into *v, and *p past it: 0, or -1 when it
 * runs past end or past 64 bits (*p then unchanged). */
int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
void sb_release(struct strbuf *sb);
/* Hand the buffer to the caller ("" when empty). */
char *sb_detach(struct strbuf *sb);

/* Length (1-4) of the valid UTF-8 character at s, storing its code point in
 * *cp when cp is not NULL; 0 when s does not start a valid character. */
int utf8_char(const char *s, uint32_t *cp);

/* Append code point cp as UTF-8; a lone surrogate or a value past
 * U+10FFFF becomes U+FFFD. */
void sb_add_utf8(struct strbuf *sb, uint32_t cp);

/* Append s to sb as terminal text: sb_add_escaped(ESC_TEXT) of the
 * NUL-terminated s (util/escape.h has the rule). */
void sb_add_printable(struct strbuf *sb, const char *s);

/* The program name for messages, and one-line error reporting. */
extern const char *progname;
void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A bad command line of the subcommand cmd, said as "cmd: message".
 * Returns status_fail(EXIT_USAGE), for the option parser to return. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* getopt_long()'s complaint c (with opterr 0 and ':' leading the option
 * string): ':' for an option missing its value, else an unknown option,
 * the one at argv[optind - 1], with the nearest of longopts (a getopt_long
 * table, NULL-terminated) as a "did you mean".  Returns usage_error()'s. */
struct option;
int usage_getopt(const char *cmd, int c, char **argv, const struct option *longopts);
/* argv[i], a word the command takes none of, said with what was likely
 * meant: a value of the option before it that takes one only after '='
 * (--locals=deep), or a bare pid (--pid 17784) when pid_hint.  Returns
 * usage_error()'s. */
int usage_extra(const char *cmd, char **argv, int i, const struct option *longopts,
		bool pid_hint);
/* Whether argv[i] follows an option of longopts whose value is optional,
 * as its value would, given without '='. */
bool optional_value_of_previous(char **argv, int i, const struct option *longopts);

/* Read a whole small file (from /proc) into a NUL-terminated buffer; the
 * length is stored in *len when len is not NULL.  NULL on error, errno set. */
char *read_file(const char *path, size_t *len);

/* Command-line values: a pid (0 when invalid), a number within [min, max]
 * (0, or -1 when invalid). */
int parse_pid(const char *s);
int parse_number(const char *s, double min, double max, double *out);

/* strcmp() with runs of digits compared by their value: "Task-2" before
 * "Task-10", as a person sorts numbered names. */
int natural_cmp(const char *a, const char *b);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds: deadlines, pauses, intervals. */
uint64_t mono_ns(void);
/* CLOCK_REALTIME in nanoseconds: timelines from several hosts or runs
 * are lined up by it (record --slurm's Chrome trace). */
uint64_t realtime_ns(void);

/* A point in [0, period) chosen by pid, for work done once a period per
 * process.  The processes of a fleet are first sampled in the same round,
 * so their once-a-second work would all land in one round too (bench/scale's
 * nine torch processes: a round late by several intervals): starting each at
 * its pid's phase spreads it.  Consecutive pids (forked workers) fall far
 * apart: the fraction is pid times the golden ratio's, modulo 1. */
uint64_t pid_phase(pid_t pid, uint64_t period_ns);

/* qsort() for the short, nearly sorted arrays of a sampling round (a
 * round's dozen ranges or blocks, in the order the last round left them):
 * up to SORT_SMALL_MAX elements of at most SORT_SMALL_SIZE bytes are
 * sorted by insertion, in place and without allocating, where glibc's
 * merge sort was a visible part of a cheap round; anything larger goes to
 * qsort(), so the worst case stays n log n. */
#define SORT_SMALL_MAX 64
#define SORT_SMALL_SIZE 64
void sort_small(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* The order of two uint64_t, for sort_small() and qsort(). */
int cmp_u64(const void *a, const void *b);

/* Run by root under sudo: the invoking user's ids from SUDO_UID and
 * SUDO_GID.  1 with them set, 0 when not under sudo (or not root), -EINVAL
 * when they do not parse. */
int sudo_user(uid_t *uid, gid_t *gid);

/* Close every file descriptor from lowfd up, in a child about to run on
 * its own.  close_range(2) where the kernel has it (5.9 and later), else
 * one by one up to the limit on open files: pystrobe-static is meant for
 * Ubuntu 20.04's 5.4 kernel too.  0, or -errno. */
int close_from(int lowfd);

/* Run this program's own binary again with argv (argv[0] a name for ps),
 * through posix_spawn, which shares no memory with the child: a fork()
 * that never execs keeps every page of the parent copy-on-write, and the
 * parent then pays a fault and a TLB flush on every CPU for its next write
 * to each.  The child gets an empty signal mask, and keep_fd (or -1) open
 * under the number "%d" in argv stands for (up to 15 arguments).  The
 * child's pid, or -1. */
pid_t spawn_self(char *const *argv, int keep_fd);
/* Say that this binary is pystrobe, which main() dispatches such command
 * lines in; without it spawn_self() fails (a test binary that links the
 * library), and its callers fork() instead. */
void spawn_self_allow(void);
/* Whether it was said: the binary that runs is pystrobe. */
bool spawn_self_allowed(void);

#endif
