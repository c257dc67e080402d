#include "util/util.h"
#include "util/escape.h"
#include "util/status.h"
#include "util/suggest.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#include <unistd.h>

const char *progname = "pystrobe";

static void oom(void)
{
	fprintf(stderr, "%s: out of memory\n", progname);
	exit(EXIT_ERROR);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		oom();
	return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	return sb_detach(&sb);
}

static void sb_grow(struct strbuf *sb, size_t extra)
{
	ALLOC_GROW(sb->buf, sb->len + extra + 1, sb->cap);
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = 0;
}

void sb_puts(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_putc(struct strbuf *sb, char c)
{
	sb_add(sb, &c, 1);
}

void sb_put_u64(struct strbuf *sb, uint64_t v)
{
	char buf[24];
	int n = sizeof(buf);

	do
		buf[--n] = '0' + v % 10;
	while (v /= 10);
	sb_add(sb, buf + n, sizeof(buf) - n);
}

void sb_put_varint(struct strbuf *sb, uint64_t v)
{
	char buf[10];
	int n = 0;

	do {
		buf[n] = v & 0x7f;
		v >>= 7;
		if (v)
			buf[n] |= 0x80;
		n++;
	} while (v);
	sb_add(sb, buf, n);
}

int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *s = *p;
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (s >= end)
			return -1;
		c = *s++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			*p = s;
			return 0;
		}
	}
	return -1;
}

void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list copy;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return;
	sb_grow(sb, n);
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	sb->len += n;
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(sb, fmt, ap);
	va_end(ap);
}

void sb_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

char *sb_detach(struct strbuf *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");

	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return p;
}

void sb_add_utf8(struct strbuf *sb, uint32_t cp)
{
	char b[4];

	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		sb_putc(sb, (char)cp);
	} else if (cp < 0x800) {
		b[0] = 0xc0 | cp >> 6;
		b[1] = 0x80 | (cp & 0x3f);
		sb_add(sb, b, 2);
	} else if (cp < 0x10000) {
		b[0] = 0xe0 | cp >> 12;
		b[1] = 0x80 | ((cp >> 6) & 0x3f);
		b[2] = 0x80 | (cp & 0x3f);
		sb_add(sb, b, 3);
	} else {
		b[0] = 0xf0 | cp >> 18;
		b[1] = 0x80 | ((cp >> 12) & 0x3f);
		b[2] = 0x80 | ((cp >> 6) & 0x3f);
		b[3] = 0x80 | (cp & 0x3f);
		sb_add(sb, b, 4);
	}
}

int utf8_char(const char *str, uint32_t *cpp)
{
	const unsigned char *s = (const unsigned char *)str;
	int n;
	uint32_t cp;

	if (s[0] < 0x80) {
		cp = s[0];
		n = 1;
		goto out;
	}
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Reject overlong forms, surrogates and values past U+10FFFF. */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
		return 0;
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
out:
	if (cpp)
		*cpp = cp;
	return n;
}

void sb_add_printable(struct strbuf *sb, const char *s)
{
	sb_add_escaped(sb, s, strlen(s), ESC_TEXT);
}

void errorf(const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT, out = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&msg, fmt, ap);
	va_end(ap);
	/* Messages can quote names from the target: keep them printable. */
	sb_add_printable(&out, msg.buf ? msg.buf : "");
	fprintf(stderr, "%s: %s\n", progname, out.buf ? out.buf : "");
	sb_release(&out);
	sb_release(&msg);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&msg, fmt, ap);
	va_end(ap);
	errorf("%s: %s", cmd, msg.buf ? msg.buf : "");
	sb_release(&msg);
	return status_fail(EXIT_USAGE);
}

/* The long option of longopts nearest to arg ("--lcoals=deep"), or NULL. */
static const char *near_option(const char *arg, const struct option *longopts)
{
	const char *names[64], *best;
	size_t n = 0, len = strcspn(arg, "=");
	char *typed;

	if (!longopts || strncmp(arg, "--", 2) || len <= 2)
		return NULL;
	for (; longopts[n].name && n < ARRAY_SIZE(names); n++)
		names[n] = longopts[n].name;
	typed = xasprintf("%.*s", (int)(len - 2), arg + 2);
	best = suggest(typed, names, n);
	free(typed);
	return best;
}

int usage_getopt(const char *cmd, int c, char **argv, const struct option *longopts)
{
	const char *arg = argv[optind - 1], *near;

	if (c == ':')
		return usage_error(cmd, "%s needs a value (see pystrobe %s --help)", arg, cmd);
	near = near_option(arg, longopts);
	if (near)
		return usage_error(cmd, "unknown option '%s' (did you mean --%s? see pystrobe %s "
				   "--help)", arg, near, cmd);
	return usage_error(cmd, "unknown option '%s' (see pystrobe %s --help)", arg, cmd);
}

/* The option argv[i] spells, long or short, when its value is optional:
 * getopt_long() took the word after it for an argument of the command. */
static const struct option *optional_before(char **argv, int i, const struct option *longopts)
{
	const char *prev = i > 1 ? argv[i - 1] : "";

	for (; longopts && longopts->name; longopts++) {
		if (longopts->has_arg != optional_argument)
			continue;
		if ((!strncmp(prev, "--", 2) && !strcmp(prev + 2, longopts->name)) ||
		    (prev[0] == '-' && prev[1] == longopts->val && !prev[2]))
			return longopts;
	}
	return NULL;
}

bool optional_value_of_previous(char **argv, int i, const struct option *longopts)
{
	return optional_before(argv, i, longopts) != NULL;
}

int usage_extra(const char *cmd, char **argv, int i, const struct option *longopts,
		bool pid_hint)
{
	const struct option *o = optional_before(argv, i, longopts);

	if (o)
		return usage_error(cmd, "unexpected argument '%s' (did you mean --%s=%s? its "
				   "value goes after '=')", argv[i], o->name, argv[i]);
	if (pid_hint && all_digits(argv[i]))
		return usage_error(cmd, "unexpected argument '%s' (did you mean --pid %s?)",
				   argv[i], argv[i]);
	return usage_error(cmd, "unexpected argument '%s' (see pystrobe %s --help)", argv[i],
			   cmd);
}

char *read_file(const char *path, size_t *lenp)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	/* /proc files can be large (maps of a big process) but are finite;
	 * cap anyway so a strange file cannot exhaust memory. */
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len < (64u << 20))
		sb_add(&sb, buf, n);
	if (n < 0) {
		int e = errno;
		close(fd);
		sb_release(&sb);
		errno = e;
		return NULL;
	}
	close(fd);
	if (lenp)
		*lenp = sb.len;
	return sb_detach(&sb);
}

int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v <= 0 || v > 0x7fffffff)
		return 0;
	return (int)v;
}

/* The run of digits at *s, its leading zeros skipped: start and length. */
static size_t digit_run(const char **s)
{
	size_t n = 0;

	while (**s == '0' && isdigit((unsigned char)(*s)[1]))
		(*s)++;
	while (isdigit((unsigned char)(*s)[n]))
		n++;
	return n;
}

int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			size_t na = digit_run(&a), nb = digit_run(&b);
			int c = na != nb ? (na < nb ? -1 : 1) : memcmp(a, b, na);

			if (c)
				return c;
			a += na;
			b += nb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int parse_number(const char *s, double min, double max, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v >= min && v <= max))
		return -1;
	*out = v;
	return 0;
}

/* SUDO_UID / SUDO_GID: a plain decimal id, nothing else. */
static int parse_id(const char *s, unsigned long *id)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*id = strtoul(s, &end, 10);
	if (errno || *end || *id >= (unsigned long)(uid_t)-1)
		return -1;
	return 0;
}

/* sudo says who called it in SUDO_UID and SUDO_GID.  An id that does not
 * parse is refused rather than read as 0 (root). */
int sudo_user(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	unsigned long ul, gl;

	if (getuid() != 0 || (!u && !g))
		return 0;
	if (parse_id(u, &ul) < 0 || parse_id(g, &gl) < 0)
		return -EINVAL;
	*uid = (uid_t)ul;
	*gid = (gid_t)gl;
	return 1;
}

int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void sort_small(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	unsigned char x[SORT_SMALL_SIZE], *a = base;

	if (n > SORT_SMALL_MAX || size > sizeof(x)) {
		if (n > 1)
			qsort(base, n, size, cmp);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		size_t j = i;

		memcpy(x, a + i * size, size);
		while (j > 0 && cmp(a + (j - 1) * size, x) > 0)
			j--;
		if (j == i)
			continue;
		memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
		memcpy(a + j * size, x, size);
	}
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t pid_phase(pid_t pid, uint64_t period_ns)
{
	uint32_t frac = (uint32_t)pid * 2654435769u;	/* 2^32 / golden ratio */

	return (uint64_t)((unsigned __int128)frac * period_ns >> 32);
}

/* glibc before 2.32 (pystrobe-static's, Makefile.am) names no system call
 * newer than itself; the kernel's headers do. */
#ifndef SYS_close_range
#define SYS_close_range __NR_close_range
#endif

/* Past this many, a limit on open files is not looked through one by one
 * (an unlimited RLIMIT_NOFILE would take minutes). */
#define CLOSE_FROM_MAX (1 << 20)

int close_from(int lowfd)
{
	struct rlimit rl;
	long top = CLOSE_FROM_MAX;

	if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)top)
		top = (long)rl.rlim_cur;
	for (long fd = lowfd; fd < top; fd++)
		close((int)fd);
	return 0;
}

/* Arguments spawn_self() passes on, its NULL included. */
#define SPAWN_SELF_ARGS 16

/* Set by pystrobe's main(): only its binary answers the command lines
 * spawn_self() is given.  A program that links the library (the tests)
 * is not run again. */
static bool self_runnable;

void spawn_self_allow(void)
{
	self_runnable = true;
}

bool spawn_self_allowed(void)
{
	return self_runnable;
}

pid_t spawn_self(char *const *argv, int keep_fd)
{
	char exe[PATH_MAX], num[16], *args[SPAWN_SELF_ARGS];
	posix_spawnattr_t attr;
	sigset_t none;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd = -1, rc, i;
	pid_t pid;

	if (!self_runnable || n <= 0)
		return -1;
	exe[n] = '\0';
	/* A copy without close-on-exec, for the child alone. */
	if (keep_fd >= 0 && (fd = fcntl(keep_fd, F_DUPFD, 3)) < 0)
		return -1;
	snprintf(num, sizeof(num), "%d", fd);
	for (i = 0; argv[i] && i + 1 < SPAWN_SELF_ARGS; i++)
		args[i] = strcmp(argv[i], "%d") ? argv[i] : num;
	args[i] = NULL;
	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, exe, NULL, &attr, args, environ);
	posix_spawnattr_destroy(&attr);
	if (fd >= 0)
		close(fd);
	return rc == 0 ? pid : -1;
}
