/* libdebuginfod through dlopen; see debuginfod.h. */
#include "native/debuginfod.h"
#include "util/util.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SONAME "libdebuginfod.so.1"

struct dfetch {
	void *so;
	debuginfod_client *c;
	void (*end)(debuginfod_client *);
	int (*find)(debuginfod_client *, const unsigned char *, int, char **);
	/* The fetch under way: its deadline, and why it was cut short. */
	const uint64_t *deadline;
	const char *stopped;
};

/* The library's, for progress(), which the client hands only itself. */
static void *(*get_user_data)(debuginfod_client *);

bool dfetch_wanted(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && *urls;
}

/* The client calls this as data comes, and about once a second while
 * none does; non-zero ends the fetch. */
static int progress(debuginfod_client *c, long got, long total)
{
	struct dfetch *d = get_user_data(c);

	(void)total;
	if (mono_ns() > __atomic_load_n(d->deadline, __ATOMIC_RELAXED))
		d->stopped = "no answer within the time limit";
	else if (got > 0 && (unsigned long long)got > DFETCH_MAX_BYTES)
		d->stopped = "larger than pystrobe takes";
	return d->stopped != NULL;
}

/* dlsym into *fn, or false. */
static bool sym(void *so, const char *name, void *fn)
{
	void *p = dlsym(so, name);

	memcpy(fn, &p, sizeof(p));
	return p != NULL;
}

struct dfetch *dfetch_open(char *why, size_t len)
{
	struct dfetch *d = xcalloc(1, sizeof(*d));
	debuginfod_client *(*begin)(void);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);

	d->so = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!d->so) {
		snprintf(why, len, "%s is not installed (Debian, Ubuntu: apt install "
			 "libdebuginfod1; Fedora: dnf install elfutils-debuginfod-client)", SONAME);
		goto fail;
	}
	if (!sym(d->so, "debuginfod_begin", &begin) || !sym(d->so, "debuginfod_end", &d->end) ||
	    !sym(d->so, "debuginfod_find_debuginfo", &d->find) ||
	    !sym(d->so, "debuginfod_set_progressfn", &set_progressfn) ||
	    !sym(d->so, "debuginfod_set_user_data", &set_user_data) ||
	    !sym(d->so, "debuginfod_get_user_data", &get_user_data)) {
		snprintf(why, len, "%s is too old (elfutils 0.179 or later needed)", SONAME);
		goto fail;
	}
	d->c = begin();
	if (!d->c) {
		snprintf(why, len, "debuginfod_begin failed");
		goto fail;
	}
	set_user_data(d->c, d);
	set_progressfn(d->c, progress);
	return d;
fail:
	dfetch_close(d);
	return NULL;
}

void dfetch_close(struct dfetch *d)
{
	if (!d)
		return;
	if (d->c)
		d->end(d->c);
	/* Not dlclose: libcurl, which the client loaded, registers
	 * handlers that outlive it. */
	free(d);
}

int dfetch_get(struct dfetch *d, const unsigned char *id, int len, const uint64_t *deadline,
	       char **path, char *why, size_t whylen)
{
	int fd;

	*path = NULL;
	d->deadline = deadline;
	d->stopped = NULL;
	fd = d->find(d->c, id, len, path);
	if (fd >= 0) {
		close(fd);
		if (*path)
			return 0;
		snprintf(why, whylen, "the client named no file");
		return -1;
	}
	free(*path);
	*path = NULL;
	if (d->stopped)
		snprintf(why, whylen, "%s", d->stopped);
	else if (fd == -ENOENT)
		snprintf(why, whylen, "no server has it");
	else
		snprintf(why, whylen, "%s", strerror(-fd));
	return -1;
}
