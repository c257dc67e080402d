/* A file's bytes, mapped when big (mapfile.h). */
#include "util/mapfile.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file mapped now, for on_sigbus(). */
static char *volatile map_at;
static volatile size_t map_len;
static volatile sig_atomic_t map_shrank;
static size_t page_size;
static struct sigaction old_bus;

/* A fault in the mapping is the file cut shorter than it was when
 * mapped: from that page on the mapping becomes zeros, read again when
 * the handler returns.  (mmap() is a plain system call on Linux, though
 * POSIX does not list it as async-signal-safe.)  A fault anywhere else is
 * no business of ours: the action from before, when the access runs
 * again. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr, *m = map_at;

	(void)uc;
	if (m && a >= m && a < m + map_len) {
		char *page = m + ((size_t)(a - m) & ~(page_size - 1));

		if (mmap(page, (size_t)(m + map_len - page), PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
			map_shrank = 1;
			return;
		}
	}
	sigaction(sig, &old_bus, NULL);
}

static bool catch_sigbus(void)
{
	static bool done;
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };

	if (!done) {
		page_size = (size_t)sysconf(_SC_PAGESIZE);
		sigemptyset(&sa.sa_mask);
		done = page_size && !(page_size & (page_size - 1)) &&
		       sigaction(SIGBUS, &sa, &old_bus) == 0;
	}
	return done;
}

/* All of fd into sb, bounded (read in 64 KiB steps: max plus at most one). */
static int read_all(int fd, struct strbuf *sb, size_t max)
{
	ssize_t n;

	sb->len = 0;
	while (sb->len < max) {
		ALLOC_GROW(sb->buf, sb->len + 65536, sb->cap);
		n = read(fd, sb->buf + sb->len, 65536);
		if (n == 0)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		sb->len += (size_t)n;
	}
	return 0;
}

int mapfile_load(struct mapfile *mf, int fd, size_t max)
{
	struct stat st;
	int rc;

	mf->map = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)MAPFILE_FROM &&
	    catch_sigbus()) {
		size_t n = (uint64_t)st.st_size > max ? max : (size_t)st.st_size;
		void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m != MAP_FAILED) {
			map_shrank = 0;
			map_len = n;
			map_at = m;
			mf->map = m;
			mf->text = m;
			mf->len = n;
			return 0;
		}
	}
	rc = read_all(fd, &mf->buf, max);
	mf->text = mf->buf.buf ? mf->buf.buf : "";
	mf->len = mf->buf.len;
	return rc;
}

bool mapfile_shrank(const struct mapfile *mf)
{
	return mf->map && map_shrank;
}

void mapfile_unload(struct mapfile *mf)
{
	if (mf->map) {
		map_at = NULL;
		munmap(mf->map, mf->len);
	}
	mf->map = NULL;
	mf->text = NULL;
	mf->len = 0;
}

void mapfile_release(struct mapfile *mf)
{
	mapfile_unload(mf);
	sb_release(&mf->buf);
}
