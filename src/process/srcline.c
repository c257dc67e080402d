/* Lines of a target's source files; see srcline.h. */
#include "process/srcline.h"
#include "util/util.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct srcfile {
	char *full;		/* the path opened; NULL: a free slot */
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	char *text;
	size_t len;
};

struct srcline_cache {
	struct srcfile files[SRCLINE_MAX_FILES];
	unsigned next;		/* the slot a new file replaces when all are full */
	char line[SRCLINE_MAX_LINE + 1];
};

struct srcline_cache *srcline_new(void)
{
	return xcalloc(1, sizeof(struct srcline_cache));
}

static void drop(struct srcfile *f)
{
	free(f->full);
	free(f->text);
	memset(f, 0, sizeof(*f));
}

void srcline_free(struct srcline_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < SRCLINE_MAX_FILES; i++)
		drop(&c->files[i]);
	free(c);
}

char *srcline_slurp(const char *full, size_t max, struct stat *st, size_t *len)
{
	char *text = NULL;
	size_t got = 0;
	ssize_t r;
	int fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size < 0 ||
	    (size_t)st->st_size > max)
		goto out;
	text = xmalloc((size_t)st->st_size + 1);
	/* A file that grows while read is read as far as its size said. */
	while (got < (size_t)st->st_size &&
	       (r = read(fd, text + got, (size_t)st->st_size - got)) > 0)
		got += (size_t)r;
	text[got] = 0;
	*len = got;
out:
	close(fd);
	return text;
}

static bool same_file(const struct srcfile *f, const char *full, const struct stat *st)
{
	return f->full && !strcmp(f->full, full) && f->dev == st->st_dev &&
	       f->ino == st->st_ino && f->size == st->st_size &&
	       f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* The cached text of full, read now if it is new or changed; NULL when it
 * cannot be read.  stat() first, so that a file already cached costs one
 * system call and a FIFO is never opened when it is known for one. */
static const struct srcfile *load(struct srcline_cache *c, const char *full)
{
	struct srcfile *f = NULL;
	struct stat st;

	if (stat(full, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	for (unsigned i = 0; i < SRCLINE_MAX_FILES; i++) {
		if (same_file(&c->files[i], full, &st))
			return &c->files[i];
		if (c->files[i].full && !strcmp(c->files[i].full, full))
			f = &c->files[i];	/* an older version: replaced */
	}
	if (!f) {
		f = &c->files[c->next];
		c->next = (c->next + 1) % SRCLINE_MAX_FILES;
	}
	drop(f);
	f->text = srcline_slurp(full, SRCLINE_MAX_BYTES, &st, &f->len);
	if (!f->text)
		return NULL;
	f->full = xstrdup(full);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtime = st.st_mtim;
	return f;
}

/* Line `line` of text, ends as universal newlines have them (\n, \r\n,
 * \r), cut at SRCLINE_MAX_LINE bytes into buf. */
static const char *nth_line(const char *text, size_t len, int line, char *buf)
{
	size_t i = 0, n = 0;

	for (int k = 1; k < line; k++) {
		while (i < len && text[i] != '\n' && text[i] != '\r')
			i++;
		if (i >= len)
			return NULL;
		if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
			i++;
		i++;
	}
	if (i >= len)
		return NULL;
	while (i + n < len && n < SRCLINE_MAX_LINE && text[i + n] != '\n' && text[i + n] != '\r')
		n++;
	memcpy(buf, text + i, n);
	buf[n] = 0;
	return buf;
}

const char *srcline_get(struct srcline_cache *c, const char *root, const char *cwd,
			const char *path, int line)
{
	const struct srcfile *f;
	char *full;

	if (!path || !*path || line < 1 || (path[0] != '/' && !cwd))
		return NULL;
	if (path[0] == '/')
		full = xasprintf("%s%s", root, path);
	else
		full = xasprintf("%s/%s", cwd, path);
	f = load(c, full);
	free(full);
	return f ? nth_line(f->text, f->len, line, c->line) : NULL;
}
