/* The output format table and writing a profile file safely, shared by
 * the commands that write profiles (record, merge, diff). */
#include "profile/output.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const struct out_format out_formats[] = {
	{ "flamegraph", "svg", out_flamegraph, false },
	{ "collapsed", "txt", out_collapsed, false },
	{ "speedscope", "speedscope.json", out_speedscope, true },
	{ "chrometrace", "trace.json", out_chrometrace, true },
	{ "pprof", "pb.gz", out_pprof, false },
	{ NULL, NULL, NULL, false },
};

const struct out_format *out_format_find(const char *name)
{
	for (const struct out_format *f = out_formats; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
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
	if (ferror(f)) {
		errno = err ? err : EIO;
		return -1;
	}
	return 0;
}

void out_flush_sb(struct strbuf *sb, FILE *f)
{
	if (sb->len)
		fwrite(sb->buf, 1, sb->len, f);
	sb->len = 0;
}

int out_write_file(const struct out_format *fmt, const struct profile *p,
		   const struct out_opts *o, const char *path, const char *cmd)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp), rc = -1;
	uid_t uid;
	gid_t gid;
	FILE *f;

	if (fd < 0) {
		errorf("%s: cannot create '%s': %s", cmd, tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	fchmod(fd, 0644);
	/* Under sudo the file belongs to the user who asked for it. */
	if (sudo_user(&uid, &gid) > 0 && fchown(fd, uid, gid) != 0)
		errorf("%s: cannot give '%s' to uid %d: %s", cmd, path, (int)uid, strerror(errno));
	f = fdopen(fd, "w");
	if (f && fmt->write(p, f, o) == 0 && fflush(f) == 0 && !ferror(f)) {
		if (fclose(f) == 0 && rename(tmp, path) == 0)
			rc = 0;
		f = NULL;
	}
	if (f)
		fclose(f);
	if (rc < 0) {
		errorf("%s: cannot write '%s': %s", cmd, path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}
