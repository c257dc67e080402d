/* The output format table and writing a profile file safely, shared by
 * the commands that write profiles (record, merge, diff). */
#include "profile/output.h"
#include "util/status.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

const struct out_format out_formats[] = {
	{ .name = "flamegraph", .ext = "svg", .write = out_flamegraph, .diff = true },
	{ .name = "collapsed", .ext = "txt", .write = out_collapsed, .diff = true },
	{ .name = "speedscope", .ext = "speedscope.json", .write = out_speedscope,
	  .timeline = true },
	{ .name = "chrometrace", .ext = "trace.json", .write = out_chrometrace, .timeline = true,
	  .times_only = true },
	{ .name = "pprof", .ext = "pb.gz", .write = out_pprof },
	{ .name = NULL },
};

const struct out_format *out_format_find(const char *name)
{
	/* What people call the flame graph, after its files. */
	if (!strcmp(name, "svg"))
		name = "flamegraph";
	for (const struct out_format *f = out_formats; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

char *out_format_names(bool (*pick)(const struct out_format *f))
{
	struct strbuf sb = STRBUF_INIT;

	for (const struct out_format *f = out_formats; f->name; f++)
		if (!pick || pick(f))
			sb_printf(&sb, "%s%s", sb.len ? ", " : "", f->name);
	return sb_detach(&sb);
}

bool out_format_diff(const struct out_format *f)
{
	return f->diff;
}

bool out_format_mergeable(const struct out_format *f)
{
	return !f->times_only;
}

/* The formats a file name's ending stands for, the first taken when -f
 * is not given.  A plain .json is either JSON format: speedscope when
 * nothing says which (speedscope also opens a Chrome trace, not the other
 * way round).  Longer endings first. */
static const struct {
	const char *suffix;
	const char *formats[2];
} out_suffixes[] = {
	{ ".svg", { "flamegraph" } },
	{ ".collapsed", { "collapsed" } },
	{ ".folded", { "collapsed" } },
	{ ".txt", { "collapsed" } },
	{ ".speedscope.json", { "speedscope" } },
	{ ".trace.json", { "chrometrace" } },
	{ ".json", { "speedscope", "chrometrace" } },
	{ ".pb.gz", { "pprof" } },
	{ ".pprof.gz", { "pprof" } },
	{ ".pprof", { "pprof" } },
};

static int suffix_of(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	for (size_t i = 0; i < ARRAY_SIZE(out_suffixes); i++) {
		size_t k = strlen(out_suffixes[i].suffix);

		if (n > k && !strcasecmp(path + n - k, out_suffixes[i].suffix))
			return (int)i;
	}
	return -1;
}

/* Endings of files of other kinds, which no format of ours is: a name
 * with one is a mistake (-o x.png for a picture, -o train.py for the
 * script being profiled), refused before anything runs, -f or not. */
static const struct {
	const char *suffix, *what;
} other_kinds[] = {
	{ ".png", "an image" }, { ".jpg", "an image" }, { ".jpeg", "an image" },
	{ ".gif", "an image" }, { ".webp", "an image" }, { ".bmp", "an image" },
	{ ".tif", "an image" }, { ".tiff", "an image" },
	{ ".pdf", "a document" }, { ".ps", "a document" }, { ".eps", "a document" },
	{ ".html", "a web page" }, { ".htm", "a web page" },
	{ ".prof", "cProfile's pstats" }, { ".pstats", "cProfile's pstats" },
	{ ".py", "Python source" }, { ".pyc", "Python bytecode" },
	{ ".csv", "a table" }, { ".dot", "a Graphviz graph" }, { ".zip", "an archive" },
};

/* The ending of path's last component ("x.tar.gz": ".gz"), or NULL: none
 * (a leading dot is a hidden file's name, not an ending). */
static const char *ending_of(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *dot = strrchr(base, '.');

	return dot && dot > base && dot[1] ? dot : NULL;
}

/* "flamegraph .svg, collapsed .collapsed .folded .txt, ...": the formats
 * and their endings, for messages (a new string). */
static char *format_endings(void)
{
	struct strbuf sb = STRBUF_INIT;

	for (const struct out_format *f = out_formats; f->name; f++) {
		sb_printf(&sb, "%s%s", sb.len ? ", " : "", f->name);
		for (size_t i = 0; i < ARRAY_SIZE(out_suffixes); i++)
			if (!strcmp(out_suffixes[i].formats[0], f->name))
				sb_printf(&sb, " %s", out_suffixes[i].suffix);
	}
	return sb_detach(&sb);
}

/* path ends as a file of another kind: refused, with the endings that
 * are ours.  Returns 0 when it does not. */
static int refuse_other_kind(const char *cmd, const char *path)
{
	const char *end = ending_of(path);
	char *endings;
	int rc;

	for (size_t i = 0; end && i < ARRAY_SIZE(other_kinds); i++) {
		if (strcasecmp(end, other_kinds[i].suffix))
			continue;
		endings = format_endings();
		rc = usage_error(cmd, "cannot write '%s': %s is %s, not a format pystrobe writes; "
				 "give -o a name with one of its formats' endings: %s", path, end,
				 other_kinds[i].what, endings);
		free(endings);
		return rc;
	}
	return 0;
}

/* ".svg .txt ...": each format's own ending, for a hint (a new string). */
static char *own_endings(void)
{
	struct strbuf sb = STRBUF_INIT;

	for (const struct out_format *f = out_formats; f->name; f++)
		sb_printf(&sb, "%s.%s", sb.len ? " " : "", f->ext);
	return sb_detach(&sb);
}

/* A name whose ending names no format, without -f, is written as a flame
 * graph: said, so that nobody opens an SVG as something else.  Not for
 * what is there and is no plain file (/dev/null, a pipe, a directory,
 * refused later): nobody opens those by their name. */
static void say_default(const char *cmd, const char *path)
{
	const char *end = ending_of(path);
	struct stat st;
	char *endings;

	if (!strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
		return;
	endings = own_endings();
	if (end)
		errorf("%s: -o %s: %s names no format, written as a flame graph (SVG); -f FORMAT "
		       "or a known ending (%s) picks another", cmd, path, end, endings);
	else
		errorf("%s: -o %s: no ending, written as a flame graph (SVG); -f FORMAT or an "
		       "ending (%s) picks another", cmd, path, endings);
	free(endings);
}

/* -f's format, the one its name is, or a usage error. */
static int find_named(const char *cmd, const char *name, const struct out_format **f)
{
	char *names;
	int rc;

	*f = name ? out_format_find(name) : NULL;
	if (!name || *f)
		return 0;
	names = out_format_names(NULL);
	rc = usage_error(cmd, "unknown format '%s' (%s)", name, names);
	free(names);
	return rc;
}

int out_format_choose(const char *cmd, const char *name, const char *path,
		      const struct out_format **fmt)
{
	const struct out_format *f;
	int i = suffix_of(path), rc;

	if ((rc = find_named(cmd, name, &f)) < 0)
		return rc;
	if (i < 0 && path && (rc = refuse_other_kind(cmd, path)) < 0)
		return rc;
	if (i < 0) {
		if (!f && path)
			say_default(cmd, path);
		*fmt = f ? f : &out_formats[0];
		return 0;
	}
	if (!f) {
		*fmt = out_format_find(out_suffixes[i].formats[0]);
		return 0;
	}
	for (int k = 0; k < 2 && out_suffixes[i].formats[k]; k++)
		if (!strcmp(out_suffixes[i].formats[k], f->name)) {
			*fmt = f;
			return 0;
		}
	return usage_error(cmd, "-f %s contradicts the output name '%s' (%s is %s): "
			   "change one of them", name, path, out_suffixes[i].suffix,
			   out_suffixes[i].formats[0]);
}

const char *out_path_name(const char *path)
{
	return strcmp(path, "-") ? path : "standard output";
}

/* "-": the profile goes to standard output, as it is written. */
static int write_stdout(int (*fill)(FILE *f, void *arg), void *arg, const char *cmd)
{
	int rc = fill(stdout, arg);

	if (rc == 0)
		rc = out_finish(stdout);
	if (rc == 0)
		return 0;
	errorf("%s: cannot write to standard output: %s", cmd, strerror(-rc));
	return status_fail(EXIT_ERROR);
}

char *out_default_name(const char *what, const struct out_format *fmt)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	return xasprintf("pystrobe-%s-%s.%s", what, stamp, fmt->ext);
}

int out_finish(FILE *f)
{
	int err = 0;

	if (fflush(f) == EOF)
		err = errno;
	if (ferror(f))
		return err ? -err : -EIO;
	return 0;
}

void out_flush_sb(struct strbuf *sb, FILE *f)
{
	if (sb->len)
		fwrite(sb->buf, 1, sb->len, f);
	sb->len = 0;
}

/* A path that is there and is not a plain file (/dev/null, a FIFO, the
 * /dev/fd/N of a shell's >(...), a symbolic link) is written in place:
 * a new file renamed over it would replace the device, the pipe or the
 * link itself. */
static int write_in_place(int (*fill)(FILE *f, void *arg), void *arg, const char *path,
			  const char *cmd)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	int rc = f ? fill(f, arg) : -errno;

	if (rc == 0)
		rc = out_finish(f);
	if (f ? fclose(f) != 0 : (fd >= 0 && close(fd) != 0))
		rc = -errno;
	if (rc == 0)
		return 0;
	errorf("%s: cannot write '%s': %s", cmd, path, strerror(-rc));
	return status_fail(EXIT_ERROR);
}

int out_write_atomic(const char *path, const char *cmd, int (*fill)(FILE *f, void *arg),
		     void *arg)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp), err = 0;
	uid_t uid;
	gid_t gid;
	FILE *f;

	if (fd < 0) {
		err = errno;
		/* The user's path: the temporary's name is ours. */
		if (cmd)
			errorf("%s: cannot create '%s': %s", cmd, path, strerror(err));
		free(tmp);
		return -err;
	}
	fchmod(fd, 0644);
	/* Under sudo the file belongs to the user who asked for it. */
	if (sudo_user(&uid, &gid) > 0 && fchown(fd, uid, gid) != 0 && cmd)
		errorf("%s: cannot give '%s' to uid %d: %s", cmd, path, (int)uid, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		err = errno;
		close(fd);
	} else if ((err = -fill(f, arg)) != 0 || (err = -out_finish(f)) != 0) {
		fclose(f);
	} else if (fsync(fd) != 0 && errno != EINVAL) {
		/* On disk before it replaces anything (EINVAL: a file system
		 * that cannot sync, such as a pipe's). */
		err = errno;
		fclose(f);
	} else if (fclose(f) != 0 || rename(tmp, path) != 0) {
		err = errno;
	}
	if (err) {
		if (cmd)
			errorf("%s: cannot write '%s': %s", cmd, path, strerror(err));
		unlink(tmp);
	}
	free(tmp);
	return -err;
}

struct profile_fill {
	const struct out_format *fmt;
	const struct profile *p;
	const struct out_opts *o;
};

static int fill_profile(FILE *f, void *arg)
{
	const struct profile_fill *pf = arg;

	return pf->fmt->write(pf->p, f, pf->o);
}

int out_write_with(const char *path, const char *cmd, int (*fill)(FILE *f, void *arg),
		   void *arg)
{
	struct stat st;

	if (!strcmp(path, "-"))
		return write_stdout(fill, arg, cmd);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return write_in_place(fill, arg, path, cmd);
	return out_write_atomic(path, cmd, fill, arg) < 0 ? status_fail(EXIT_ERROR) : 0;
}

int out_write_file(const struct out_format *fmt, const struct profile *p,
		   const struct out_opts *o, const char *path, const char *cmd)
{
	struct profile_fill pf = { fmt, p, o };

	return out_write_with(path, cmd, fill_profile, &pf);
}

/* --- checking a path before a recording ------------------------------------ */

int out_probe(const char *path)
{
	/* Not ".tmp.": that file is the write itself, to whoever watches. */
	char *tmp = xasprintf("%s.probe.XXXXXX", path);
	int fd = mkstemp(tmp), err = fd < 0 ? -errno : 0;

	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return err;
}

/* The directory part of path ("." for a bare name), a new string. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xasprintf("%.*s", (int)(slash - path), path);
}

/* The kind of file system at dir when it is one where no file can be
 * made whatever the permissions (even root's mkstemp() gets ENOENT in
 * /proc, EACCES in /sys), or NULL. */
static const char *virtual_fs(const char *dir)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} kinds[] = {
		{ PROC_SUPER_MAGIC, "proc" }, { SYSFS_MAGIC, "sysfs" },
		{ DEVPTS_SUPER_MAGIC, "devpts" }, { CGROUP_SUPER_MAGIC, "cgroup" },
		{ CGROUP2_SUPER_MAGIC, "cgroup2" }, { DEBUGFS_MAGIC, "debugfs" },
		{ TRACEFS_MAGIC, "tracefs" }, { SECURITYFS_MAGIC, "securityfs" },
		{ BPF_FS_MAGIC, "bpf" }, { PSTOREFS_MAGIC, "pstore" },
		{ EFIVARFS_MAGIC, "efivarfs" },
	};
	struct statfs sf;

	if (statfs(dir, &sf) != 0)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if ((unsigned long)sf.f_type == kinds[i].magic)
			return kinds[i].name;
	return NULL;
}

/* Why no file can be made in dir, from the probe's errno err: the real
 * reason, not the errno's words alone (ENOENT in /proc is no missing
 * directory).  Written to sb. */
static void why_no_file(struct strbuf *sb, const char *dir, int err)
{
	const char *fs = virtual_fs(dir);
	struct stat st;

	if (fs)
		sb_printf(sb, "'%s' is in the %s file system, where no file can be made; give -o "
			  "a file in an ordinary directory", dir, fs);
	else if (err == ENOENT && stat(dir, &st) != 0)
		sb_printf(sb, "there is no directory '%s'; give -o a file in a directory that "
			  "exists", dir);
	else if (err == EROFS)
		sb_printf(sb, "'%s' is on a read-only file system; give -o a file where you can "
			  "write", dir);
	else if (err == EACCES || err == EPERM)
		sb_printf(sb, "no permission to create a file in '%s' (%s); give -o a file in a "
			  "directory you can write", dir, strerror(err));
	else if (err == ENOTDIR)
		sb_printf(sb, "'%s' is not a directory (or a directory above it is not); give -o "
			  "a file in a directory", dir);
	else
		sb_printf(sb, "cannot create a file in '%s': %s; give -o a file where you can "
			  "write", dir, strerror(err));
}

/* path cannot be written, for err: a directory (EISDIR), what is written
 * in place (in_place: its own errno says it), else the directory. */
static int refuse(const char *cmd, const char *path, int err, bool in_place)
{
	struct strbuf sb = STRBUF_INIT;
	char *dir = dir_of(path);

	if (err == EISDIR)
		sb_puts(&sb, "it is a directory; give -o a file name");
	else if (in_place)
		sb_printf(&sb, "%s; give -o a file where you can write", strerror(err));
	else
		why_no_file(&sb, dir, err);
	errorf("%s: cannot write '%s': %s", cmd, path, sb.buf);
	sb_release(&sb);
	free(dir);
	return status_fail(EXIT_USAGE);
}

int out_check_path(const char *path, const char *cmd)
{
	struct stat st;
	int err;

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return refuse(cmd, path, EISDIR, false);
	/* Written in place (a device, a pipe, a link): it must open. */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return access(path, W_OK) == 0 ? 0 : refuse(cmd, path, errno, true);
	/* A new file beside it, renamed over it: the directory decides. */
	if ((err = out_probe(path)) < 0)
		return refuse(cmd, path, -err, false);
	return 0;
}

const char *out_tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}
