#include "process/source.h"
#include "util/source_encoding.h"
#include "process/srcline.h"
#include "util/hashidx.h"
#include "util/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct src_file {
	char *path;		/* as the target names it */
	char *text;		/* NULL: unreadable */
	size_t len;
	uint32_t *starts;	/* offset of each line, made on first use */
	uint32_t nlines, cap;
	bool indexed, changed;
	char **lines;		/* stripped lines handed out, per line */
};

struct source_cache {
	pid_t pid;
	char *root;		/* a core's: files under it, not under /proc/PID */
	unsigned long long start_ns;
	struct src_file *files;
	uint32_t nfiles, cap;
	struct hashidx ix;
};

unsigned long long proc_start_ns(pid_t pid)
{
	char path[64], *stat, *stt, *p;
	unsigned long long start = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = read_file(path, NULL);
	stt = read_file("/proc/stat", NULL);
	/* The command name may hold spaces and ')': fields start after the last ')'. */
	p = stat ? strrchr(stat, ')') : NULL;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoull(p + 1, NULL, 10);
	p = stt ? strstr(stt, "\nbtime ") : NULL;
	if (p)
		btime = strtoull(p + 7, NULL, 10);
	free(stat);
	free(stt);
	if (!p || hz <= 0)
		return 0;
	return btime * 1000000000ull + start * (1000000000ull / (unsigned long long)hz);
}

struct source_cache *source_open(pid_t pid)
{
	struct source_cache *sc = xcalloc(1, sizeof(*sc));

	sc->pid = pid;
	sc->start_ns = proc_start_ns(pid);
	return sc;
}

struct source_cache *source_open_root(const char *root, unsigned long long since_ns)
{
	struct source_cache *sc = xcalloc(1, sizeof(*sc));

	sc->root = xstrdup(root && strcmp(root, "/") ? root : "");
	sc->start_ns = since_ns;
	return sc;
}

/* Names that are not files: "<string>", "<frozen importlib._bootstrap>". */
static bool not_a_file(const char *path)
{
	size_t n = strlen(path);

	return !n || (path[0] == '<' && path[n - 1] == '>');
}

static unsigned long long ts_ns(const struct timespec *t)
{
	return (unsigned long long)t->tv_sec * 1000000000ull + (unsigned long long)t->tv_nsec;
}

static void load(struct source_cache *sc, struct src_file *f)
{
	char *full;
	struct stat st;

	if (not_a_file(f->path))
		return;
	if (sc->root && f->path[0] != '/')
		return;	/* relative to a working directory the core does not name */
	if (sc->root)
		full = xasprintf("%s%s", sc->root, f->path);
	else if (f->path[0] == '/')
		full = xasprintf("/proc/%d/root%s", (int)sc->pid, f->path);
	else
		full = xasprintf("/proc/%d/cwd/%s", (int)sc->pid, f->path);
	f->text = srcline_slurp(full, SOURCE_MAX_BYTES, &st, &f->len);
	free(full);
	if (!f->text)
		return;
	if (source_to_utf8(&f->text, &f->len) < 0) {
		free(f->text);
		f->text = NULL;
		f->len = 0;
	}
	/* The boot time is in whole seconds: allow one of slack. */
	f->changed = sc->start_ns && ts_ns(&st.st_mtim) > sc->start_ns + 1000000000ull;
}

/* Line starts, by universal newlines (\n, \r\n, \r) as linecache reads. */
static void index_lines(struct src_file *f)
{
	size_t i = 0;

	f->indexed = true;
	if (!f->text)
		return;
	while (i < f->len) {
		ALLOC_GROW(f->starts, f->nlines + 1, f->cap);
		f->starts[f->nlines++] = (uint32_t)i;
		while (i < f->len && f->text[i] != '\n' && f->text[i] != '\r')
			i++;
		if (i < f->len && f->text[i] == '\r' && i + 1 < f->len && f->text[i + 1] == '\n')
			i++;
		i++;
	}
	f->lines = xcalloc(f->nlines + 1, sizeof(*f->lines));
}

static bool is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The line stripped, cut at SOURCE_MAX_LINE bytes on a character boundary. */
static char *make_line(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	while (n && is_space((unsigned char)*s))
		s++, n--;
	while (n && (is_space((unsigned char)s[n - 1]) || s[n - 1] == '\n'))
		n--;
	if (n <= SOURCE_MAX_LINE) {
		sb_add(&sb, s, n);
		return sb_detach(&sb);
	}
	n = SOURCE_MAX_LINE;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	sb_add(&sb, s, n);
	sb_puts(&sb, "\xe2\x80\xa6");
	return sb_detach(&sb);
}

static struct src_file *find_file(struct source_cache *sc, const char *path)
{
	uint32_t h = hash_str(HASH_INIT, path), id;
	struct hashidx_pos pos;

	for (id = hashidx_first(&sc->ix, h, &pos); id != HASHIDX_NONE; id = hashidx_next(&sc->ix, &pos))
		if (!strcmp(sc->files[id].path, path))
			return &sc->files[id];
	if (sc->nfiles >= SOURCE_MAX_FILES)
		return NULL;
	ALLOC_GROW(sc->files, sc->nfiles + 1, sc->cap);
	id = sc->nfiles++;
	memset(&sc->files[id], 0, sizeof(sc->files[id]));
	sc->files[id].path = xstrdup(path);
	hashidx_add(&sc->ix, h, id);
	load(sc, &sc->files[id]);
	return &sc->files[id];
}

const char *source_line(struct source_cache *sc, const char *path, int line, bool *changed)
{
	struct src_file *f;
	uint32_t i, end;

	*changed = false;
	if (!sc || !path || line < 1 || !(f = find_file(sc, path)) || !f->text)
		return NULL;
	if (!f->indexed)
		index_lines(f);
	if ((uint32_t)line > f->nlines)
		return NULL;
	i = (uint32_t)line - 1;
	end = i + 1 < f->nlines ? f->starts[i + 1] : (uint32_t)f->len;
	if (!f->lines[i])
		f->lines[i] = make_line(f->text + f->starts[i], end - f->starts[i]);
	*changed = f->changed;
	return f->lines[i];
}

void source_close(struct source_cache *sc)
{
	if (!sc)
		return;
	for (uint32_t i = 0; i < sc->nfiles; i++) {
		struct src_file *f = &sc->files[i];

		for (uint32_t k = 0; f->lines && k < f->nlines; k++)
			free(f->lines[k]);
		free(f->lines);
		free(f->starts);
		free(f->text);
		free(f->path);
	}
	free(sc->files);
	free(sc->root);
	hashidx_release(&sc->ix);
	free(sc);
}
