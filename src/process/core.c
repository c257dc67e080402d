/* A core file as a struct mem: see core.h. */
#include "process/core.h"
#include "process/mem.h"
#include "util/signame.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_ID_MAX 64
#define HEADER_READ 4096	/* the part of a file's first page we look at */

struct segment {
	uint64_t vaddr, memsz, filesz, offset;
	uint32_t flags;		/* PF_R, PF_W, PF_X */
};

enum file_state { FILE_UNCHECKED, FILE_OK, FILE_MISSING, FILE_CHANGED };

struct core_file {
	char *path;		/* as the process named it */
	char *host;		/* where we open it */
	int fd;			/* -1 until opened */
	enum file_state state;
};

struct core {
	struct mem mem;
	int fd;
	uint64_t size;		/* of the core file */
	struct segment *segs;	/* sorted by vaddr */
	size_t nsegs;
	struct proc_maps maps;	/* NT_FILE */
	int *map_file;		/* maps.v[i]'s index in files */
	struct core_file *files;
	size_t nfiles, files_alloc;
	char *exe;
	char *root;		/* NULL for "/" */
	struct core_thread *threads;
	size_t nthreads, threads_alloc;
	struct core_info info;
	uint64_t entry;		/* AT_ENTRY */
	char **notes;
	size_t nnotes, notes_alloc;
	bool incomplete;	/* a note says something is missing */
};

static void add_note(struct core *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_note(struct core *c, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	if (c->nnotes >= 64)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ALLOC_GROW(c->notes, c->nnotes + 1, c->notes_alloc);
	c->notes[c->nnotes++] = xstrdup(buf);
}

/* pread all of len or fail: the core is a file, short reads are its end. */
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EFAULT;
		got += n;
	}
	return 0;
}

/* --- memory --------------------------------------------------------------- */

/* The segment holding addr, or NULL. */
static const struct segment *find_segment(const struct core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct segment *s = &c->segs[mid];

		if (addr < s->vaddr)
			hi = mid;
		else if (addr - s->vaddr >= s->memsz)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

static const struct proc_map *find_map(const struct core *c, uint64_t addr, int *idx)
{
	for (size_t i = 0; i < c->maps.n; i++) {
		if (addr >= c->maps.v[i].start && addr < c->maps.v[i].end) {
			*idx = (int)i;
			return &c->maps.v[i];
		}
	}
	return NULL;
}

/* Read up to *len bytes at addr from what the core itself holds; *len is
 * cut to what one segment gives.  -EFAULT when the core lacks addr. */
static int read_dumped(struct core *c, uint64_t addr, void *buf, size_t *len)
{
	const struct segment *s = find_segment(c, addr);
	uint64_t in;

	if (!s || addr - s->vaddr >= s->filesz)
		return -EFAULT;
	in = addr - s->vaddr;
	if (*len > s->filesz - in)
		*len = s->filesz - in;
	if (s->offset > c->size || in + *len > c->size - s->offset)
		return -EFAULT;	/* truncated core: noted at open */
	return pread_all(c->fd, buf, *len, s->offset + in);
}

static int file_fd(struct core *c, int file);

/* The same from the mapped file, for what the core left out. */
static int read_mapped(struct core *c, uint64_t addr, void *buf, size_t *len)
{
	const struct proc_map *m;
	int idx, fd;

	m = find_map(c, addr, &idx);
	if (!m)
		return -EFAULT;
	fd = file_fd(c, c->map_file[idx]);
	if (fd < 0)
		return -EFAULT;
	if (*len > m->end - addr)
		*len = m->end - addr;
	return pread_all(fd, buf, *len, m->offset + (addr - m->start));
}

static int core_read(struct mem *mm, uint64_t addr, void *buf, size_t len)
{
	struct core *c = (struct core *)mm;

	while (len) {
		size_t chunk = len;
		int rc = read_dumped(c, addr, buf, &chunk);

		if (rc < 0) {
			chunk = len;
			rc = read_mapped(c, addr, buf, &chunk);
		}
		if (rc < 0 || chunk == 0)
			return -EFAULT;
		addr += chunk;
		buf = (char *)buf + chunk;
		len -= chunk;
	}
	return 0;
}

static void core_mem_close(struct mem *m)
{
	(void)m;	/* the core owns it */
}

struct mem *core_mem(struct core *c)
{
	return &c->mem;
}

/* --- build IDs ------------------------------------------------------------ */

typedef int (*read_fn)(void *ctx, uint64_t off, void *buf, size_t len);

/* The GNU build ID in a note area; its length, or 0. */
static size_t note_build_id(const uint8_t *p, size_t len, uint8_t *id)
{
	size_t off = 0;

	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc;

		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name > len - off || desc > len - off - name)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + off, "GNU", 4) && nh.n_descsz > 0 && nh.n_descsz <= BUILD_ID_MAX) {
			memcpy(id, p + off + name, nh.n_descsz);
			return nh.n_descsz;
		}
		off += name + desc;
	}
	return 0;
}

/* The build ID of an ELF image whose first HEADER_READ bytes read() gives
 * (file offsets from 0): the notes must lie in that first page, as the
 * linker puts them.  Its length, or 0 when there is none to be found. */
static size_t image_build_id(read_fn rd, void *ctx, uint8_t *id)
{
	uint8_t *page = xmalloc(HEADER_READ);
	Elf64_Ehdr eh;
	size_t n = 0;

	if (rd(ctx, 0, page, HEADER_READ) != 0)
		goto out;
	memcpy(&eh, page, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phoff > HEADER_READ || eh.e_phnum > (HEADER_READ - eh.e_phoff) / sizeof(Elf64_Phdr))
		goto out;
	for (int i = 0; i < eh.e_phnum && !n; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, page + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset > HEADER_READ ||
		    ph.p_filesz > HEADER_READ - ph.p_offset)
			continue;
		n = note_build_id(page + ph.p_offset, ph.p_filesz, id);
	}
out:
	free(page);
	return n;
}

struct in_core {
	struct core *c;
	uint64_t base;
};

/* Only what the core holds: a file's first page as the process had it. */
static int read_in_core(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct in_core *ic = ctx;

	while (len) {
		size_t chunk = len;

		if (read_dumped(ic->c, ic->base + off, buf, &chunk) < 0 || !chunk)
			return -EFAULT;
		off += chunk;
		buf = (char *)buf + chunk;
		len -= chunk;
	}
	return 0;
}

static int read_in_file(void *ctx, uint64_t off, void *buf, size_t len)
{
	memset(buf, 0, len);	/* a file shorter than a page is fine */
	return pread(*(int *)ctx, buf, len, (off_t)off) > 0 ? 0 : -EFAULT;
}

/* The build ID of file i as the process had it: from the core's copy of
 * the first page of its mapping at offset 0. */
static size_t core_build_id(struct core *c, int file, uint8_t *id)
{
	for (size_t i = 0; i < c->maps.n; i++) {
		struct in_core ic = { c, c->maps.v[i].start };

		if (c->map_file[i] != file || c->maps.v[i].offset != 0 ||
		    c->maps.v[i].end - c->maps.v[i].start < HEADER_READ)
			continue;
		return image_build_id(read_in_core, &ic, id);
	}
	return 0;
}

/* Open file i and check it is the build the process mapped. */
static void check_file(struct core *c, int i)
{
	struct core_file *f = &c->files[i];
	uint8_t want[BUILD_ID_MAX], have[BUILD_ID_MAX];
	size_t nwant, nhave;

	f->fd = open(f->host, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		f->state = FILE_MISSING;
		c->incomplete = true;
		add_note(c, "mapped file %s is missing (%s)", f->host, strerror(errno));
		return;
	}
	nwant = core_build_id(c, i, want);
	nhave = image_build_id(read_in_file, &f->fd, have);
	if (nwant && (nwant != nhave || memcmp(want, have, nwant))) {
		f->state = FILE_CHANGED;
		c->incomplete = true;
		add_note(c, "mapped file %s is not the one the process had (its build ID differs); "
			 "not read", f->host);
		close(f->fd);
		f->fd = -1;
		return;
	}
	if (!nwant)
		add_note(c, "mapped file %s read without a build ID check (the core "
			 "does not hold one for it)", f->host);
	f->state = FILE_OK;
}

static int file_fd(struct core *c, int i)
{
	if (i < 0 || (size_t)i >= c->nfiles)
		return -1;
	if (c->files[i].state == FILE_UNCHECKED)
		check_file(c, i);
	return c->files[i].state == FILE_OK ? c->files[i].fd : -1;
}

static bool core_has_path(const struct core *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (!strcmp(c->files[i].path, path))
			return true;
	return false;
}

const char *core_host_path(struct core *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (!strcmp(c->files[i].path, path))
			return file_fd(c, (int)i) >= 0 ? c->files[i].host : NULL;
	return NULL;
}

/* --- notes ---------------------------------------------------------------- */

/* A core taken from outside the root (gcore from the host of a chrooted
 * process) names the files by their full path already. */
static char *host_path(const char *path, const char *root)
{
	size_t n = root ? strlen(root) : 0;

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (!root || (!strncmp(path, root, n) && path[n] == '/'))
		return xstrdup(path);
	return xasprintf("%.*s%s", (int)n, root, path);
}

static int file_index(struct core *c, const char *path, const char *root)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (!strcmp(c->files[i].path, path))
			return (int)i;
	ALLOC_GROW(c->files, c->nfiles + 1, c->files_alloc);
	c->files[c->nfiles] = (struct core_file){
		.path = xstrdup(path),
		.host = host_path(path, root),
		.fd = -1,
	};
	return (int)c->nfiles++;
}

/* NT_FILE: count, page size, count * (start, end, page offset), names. */
static void parse_nt_file(struct core *c, const uint8_t *p, size_t len, const char *root)
{
	uint64_t count, page;
	const char *name, *end = (const char *)p + len;

	if (c->maps.v || len < 16)
		return;	/* only the first NT_FILE, even one that named nothing */
	memcpy(&count, p, 8);
	memcpy(&page, p + 8, 8);
	if (count > CORE_MAX_FILES || count > (len - 16) / 24 || page == 0 || page > (1u << 30))
		return;
	c->maps.v = xcalloc(count ? count : 1, sizeof(*c->maps.v));
	c->map_file = xcalloc(count ? count : 1, sizeof(*c->map_file));
	name = (const char *)p + 16 + count * 24;
	for (uint64_t i = 0; i < count && name < end; i++) {
		struct proc_map *m = &c->maps.v[c->maps.n];
		uint64_t e[3];
		size_t nlen = strnlen(name, end - name);

		if (name + nlen == end)
			break;	/* an unterminated last name */
		memcpy(e, p + 16 + i * 24, sizeof(e));
		if (e[1] > e[0] && e[2] <= UINT64_MAX / page) {
			m->start = e[0];
			m->end = e[1];
			m->offset = e[2] * page;
			strcpy(m->perms, "r--p");
			m->path = xstrdup(name);
			c->map_file[c->maps.n++] = file_index(c, name, root);
		}
		name += nlen + 1;
	}
}

static void parse_prstatus(struct core *c, const uint8_t *p, size_t len)
{
	struct elf_prstatus ps;
	struct core_thread *t;

	if (len < sizeof(ps) || c->nthreads >= CORE_MAX_THREADS)
		return;
	memcpy(&ps, p, sizeof(ps));
	ALLOC_GROW(c->threads, c->nthreads + 1, c->threads_alloc);
	t = &c->threads[c->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = ps.pr_pid;
	t->signo = ps.pr_cursig;
	_Static_assert(sizeof(ps.pr_reg) == sizeof(t->regs), "x86-64 registers");
	memcpy(t->regs, &ps.pr_reg, sizeof(t->regs));
	if (c->info.pid == 0)
		c->info.pid = ps.pr_pid;	/* a fallback for NT_PRPSINFO */
}

static void parse_prpsinfo(struct core *c, const uint8_t *p, size_t len)
{
	struct elf_prpsinfo pi;

	if (len < sizeof(pi))
		return;
	memcpy(&pi, p, sizeof(pi));
	c->info.pid = pi.pr_pid;
	memcpy(c->info.fname, pi.pr_fname, sizeof(pi.pr_fname));
	c->info.fname[sizeof(pi.pr_fname)] = 0;
	memcpy(c->info.psargs, pi.pr_psargs, sizeof(pi.pr_psargs));
	c->info.psargs[sizeof(pi.pr_psargs)] = 0;
}

/* A signal that writes a core: the one a thread crashed with. */
static bool fatal_signal(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE ||
	       signo == SIGABRT || signo == SIGQUIT || signo == SIGSYS || signo == SIGXCPU ||
	       signo == SIGXFSZ;
}

/* NT_SIGINFO belongs to the thread whose NT_PRSTATUS came before it (the
 * kernel writes one, after the dumping thread's; gdb one per thread). */
static void parse_siginfo(struct core *c, const uint8_t *p, size_t len)
{
	siginfo_t si;
	const struct core_thread *t;

	if (len < sizeof(si) || !c->nthreads || c->info.crash_tid)
		return;
	memcpy(&si, p, sizeof(si));
	t = &c->threads[c->nthreads - 1];
	if (!fatal_signal(si.si_signo))
		return;
	c->info.signo = si.si_signo;
	c->info.code = si.si_code;
	c->info.crash_tid = t->tid;
	c->info.have_addr = si.si_signo == SIGSEGV || si.si_signo == SIGBUS ||
			    si.si_signo == SIGILL || si.si_signo == SIGFPE;
	c->info.addr = (uint64_t)(uintptr_t)si.si_addr;
}

static void parse_auxv(struct core *c, const uint8_t *p, size_t len)
{
	for (size_t off = 0; off + 16 <= len; off += 16) {
		uint64_t kv[2];

		memcpy(kv, p + off, sizeof(kv));
		if (kv[0] == AT_NULL)
			break;
		if (kv[0] == AT_ENTRY)
			c->entry = kv[1];
	}
}

static void parse_notes(struct core *c, const uint8_t *p, size_t len, const char *root)
{
	size_t off = 0;

	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc;
		const uint8_t *d;

		memcpy(&nh, p + off, sizeof(nh));
		off += sizeof(nh);
		name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name > len - off || nh.n_descsz > len - off - name)
			return;
		d = p + off + name;
		switch (nh.n_type) {
		case NT_PRSTATUS: parse_prstatus(c, d, nh.n_descsz); break;
		case NT_PRPSINFO: parse_prpsinfo(c, d, nh.n_descsz); break;
		case NT_SIGINFO: parse_siginfo(c, d, nh.n_descsz); break;
		case NT_AUXV: parse_auxv(c, d, nh.n_descsz); break;
		case NT_FILE: parse_nt_file(c, d, nh.n_descsz, root); break;
		}
		if (desc > len - off - name)
			return;
		off += name + desc;
	}
}

/* --- program headers ------------------------------------------------------ */

static int by_vaddr(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Read the notes of a PT_NOTE segment, as much of it as the core has. */
static void read_note_segment(struct core *c, const Elf64_Phdr *ph, size_t *budget,
			      const char *root)
{
	uint64_t len = ph->p_filesz;
	uint8_t *buf;

	if (ph->p_offset >= c->size)
		return;
	if (len > c->size - ph->p_offset)
		len = c->size - ph->p_offset;
	if (len > *budget)
		len = *budget;
	*budget -= len;
	buf = xmalloc(len ? len : 1);
	if (pread_all(c->fd, buf, len, ph->p_offset) == 0)
		parse_notes(c, buf, len, root);
	free(buf);
}

static void add_segment(struct core *c, const Elf64_Phdr *ph, size_t *alloc)
{
	if (ph->p_memsz == 0 || ph->p_vaddr + ph->p_memsz < ph->p_vaddr)
		return;
	ALLOC_GROW(c->segs, c->nsegs + 1, *alloc);
	c->segs[c->nsegs++] = (struct segment){
		.vaddr = ph->p_vaddr,
		.memsz = ph->p_memsz,
		.filesz = ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz,
		.offset = ph->p_offset,
		.flags = ph->p_flags,
	};
}

/* The program header count; e_phnum PN_XNUM keeps it in section 0. */
static int phnum(struct core *c, const Elf64_Ehdr *eh, uint64_t *n)
{
	Elf64_Shdr sh;

	*n = eh->e_phnum;
	if (eh->e_phnum != PN_XNUM)
		return 0;
	if (eh->e_shoff == 0 || pread_all(c->fd, &sh, sizeof(sh), eh->e_shoff) < 0)
		return -1;
	*n = sh.sh_info;
	return 0;
}

static int read_phdrs(struct core *c, const Elf64_Ehdr *eh, const char *root, char *err,
		      size_t errlen, const char *path)
{
	size_t alloc = 0, budget = CORE_MAX_NOTES;
	uint64_t n, end = 0;
	Elf64_Phdr *ph;

	if (phnum(c, eh, &n) < 0 || n > CORE_MAX_SEGMENTS ||
	    eh->e_phoff > c->size || n * sizeof(*ph) > c->size - eh->e_phoff) {
		snprintf(err, errlen, "%s: truncated or corrupt core (its program headers "
			 "are cut off)", path);
		return status_fail(EXIT_BAD_CORE);
	}
	ph = xmalloc(n ? n * sizeof(*ph) : 1);
	if (pread_all(c->fd, ph, n * sizeof(*ph), eh->e_phoff) < 0) {
		free(ph);
		snprintf(err, errlen, "%s: cannot read the core's program headers", path);
		return status_fail(EXIT_BAD_CORE);
	}
	for (uint64_t i = 0; i < n; i++) {
		if (ph[i].p_type == PT_LOAD)
			add_segment(c, &ph[i], &alloc);
		else if (ph[i].p_type == PT_NOTE)
			read_note_segment(c, &ph[i], &budget, root);
		if ((ph[i].p_type == PT_LOAD || ph[i].p_type == PT_NOTE) &&
		    ph[i].p_offset + ph[i].p_filesz > end && ph[i].p_offset + ph[i].p_filesz >= ph[i].p_offset)
			end = ph[i].p_offset + ph[i].p_filesz;
	}
	free(ph);
	if (c->nsegs)
		qsort(c->segs, c->nsegs, sizeof(*c->segs), by_vaddr);
	if (end > c->size) {
		c->incomplete = true;
		add_note(c, "the core is truncated: %llu of its %llu bytes are there "
			 "(memory past the cut is missing)", (unsigned long long)c->size,
			 (unsigned long long)end);
	}
	return 0;
}

static int check_header(int fd, Elf64_Ehdr *eh, const char *path, char *err, size_t errlen)
{
	memset(eh, 0, sizeof(*eh));
	if (pread_all(fd, eh, sizeof(*eh), 0) < 0 && !memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		snprintf(err, errlen, "%s: truncated core (cut inside its ELF header)", path);
		return status_fail(EXIT_BAD_CORE);
	}
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		snprintf(err, errlen, "%s: not a core file (not an ELF file)", path);
		return status_fail(EXIT_BAD_CORE);
	}
	if (eh->e_type != ET_CORE) {
		snprintf(err, errlen, "%s: not a core file (an ELF file of another type)", path);
		return status_fail(EXIT_BAD_CORE);
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr)) {
		snprintf(err, errlen, "%s: a core of another architecture (pystrobe reads "
			 "x86-64 cores)", path);
		return status_fail(EXIT_BAD_CORE);
	}
	return 0;
}

/* A thread's stack pointer must point at memory that is not all zeros
 * (return addresses, saved registers).  Where it is, the core does not
 * hold the stack: gdb 13's gcore writes zeros for a whole segment it could
 * not read in one piece, as when glibc put a guard region (MADV_GUARD_INSTALL)
 * in it.  Such a segment is dropped, so that reading it fails where it
 * would otherwise stop a walk early without a word. */
static void check_stacks(struct core *c)
{
	uint8_t page[512];

	for (size_t i = 0; i < c->nthreads; i++) {
		uint64_t sp = c->threads[i].regs[19];	/* rsp */
		struct segment *s = (struct segment *)find_segment(c, sp);
		size_t len = sizeof(page);

		if (!s || s->filesz == 0 || read_dumped(c, sp, page, &len) < 0)
			continue;
		for (size_t k = 0; k < len; k++)
			if (page[k])
				goto next;
		s->filesz = 0;
		c->incomplete = true;
		add_note(c, "the core holds zeros where the stack of thread %d was (a gcore "
			 "that could not read it); its frames there are missing", (int)c->threads[i].tid);
next:;
	}
}

/* The executable: the file mapping that holds the entry point. */
static void find_exe(struct core *c, const char *exe)
{
	int idx;
	const struct proc_map *m = c->entry ? find_map(c, c->entry, &idx) : NULL;

	if (!m)
		return;
	c->exe = xstrdup(m->path);
	if (exe) {
		struct core_file *f = &c->files[c->map_file[idx]];

		free(f->host);
		f->host = xstrdup(exe);
	}
}

int core_open(const char *path, const char *root, const char *exe, struct core **out,
	      char *err, size_t errlen)
{
	struct core *c = xcalloc(1, sizeof(*c));
	struct stat st;
	Elf64_Ehdr eh;
	int rc;

	c->mem.read = core_read;
	c->mem.close = core_mem_close;
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0 || fstat(c->fd, &st) < 0) {
		snprintf(err, errlen, "cannot open core %s: %s", path, strerror(errno));
		rc = status_fail(EXIT_BAD_CORE);
		goto fail;
	}
	c->size = (uint64_t)st.st_size;
	c->root = root && strcmp(root, "/") ? xstrdup(root) : NULL;
	rc = check_header(c->fd, &eh, path, err, errlen);
	if (rc == 0)
		rc = read_phdrs(c, &eh, c->root, err, errlen, path);
	if (rc < 0)
		goto fail;
	if (!c->nthreads) {
		snprintf(err, errlen, "%s: truncated or corrupt core (no thread in its notes)", path);
		rc = status_fail(EXIT_BAD_CORE);
		goto fail;
	}
	find_exe(c, exe);
	check_stacks(c);
	*out = c;
	return 0;
fail:
	core_close(c);
	return rc;
}

void core_close(struct core *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nfiles; i++) {
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
		free(c->files[i].path);
		free(c->files[i].host);
	}
	for (size_t i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	for (size_t i = 0; i < c->maps.n; i++)
		free(c->maps.v[i].path);
	free(c->maps.v);
	free(c->map_file);
	free(c->notes);
	free(c->files);
	free(c->segs);
	free(c->threads);
	free(c->exe);
	free(c->root);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* Permissions from the segment at the mapping's start: a kernel core has
 * one for every mapping, dumped or not.  gcore leaves out read-only file
 * mappings altogether: those may be code, so "r-xp" (an unwinder only
 * looks for tables in what is executable). */
static void map_perms(const struct core *c, const struct proc_map *m, char *perms)
{
	const struct segment *s = find_segment(c, m->start);

	if (!s || s->vaddr != m->start) {
		strcpy(perms, "r-xp");
		return;
	}
	perms[0] = s->flags & PF_R ? 'r' : '-';
	perms[1] = s->flags & PF_W ? 'w' : '-';
	perms[2] = s->flags & PF_X ? 'x' : '-';
	perms[3] = 'p';
	perms[4] = 0;
}

char *core_maps_text(const struct core *c)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < c->maps.n; i++) {
		const struct proc_map *m = &c->maps.v[i];
		char perms[5];

		map_perms(c, m, perms);
		sb_printf(&sb, "%llx-%llx %s %08llx 00:00 0 %s\n", (unsigned long long)m->start,
			  (unsigned long long)m->end, perms, (unsigned long long)m->offset, m->path);
	}
	return sb.buf ? sb.buf : xstrdup("");
}

static int maps_fd(const struct core *c)
{
	char *text = core_maps_text(c);
	ssize_t len = (ssize_t)strlen(text);
	int fd = memfd_create("core-maps", MFD_CLOEXEC);

	if (fd >= 0 && (write(fd, text, len) != len || lseek(fd, 0, SEEK_SET) != 0)) {
		close(fd);
		fd = -1;
	}
	free(text);
	return fd;
}

/* "/proc/PID/root/FILE", "/proc/PID/maps"...: what a reader of a live
 * process would open, for the core's process. */
int core_open_path(struct core *c, const char *path)
{
	char prefix[40], *p;
	const char *host;
	size_t n;
	int fd;

	n = (size_t)snprintf(prefix, sizeof(prefix), "/proc/%d/", (int)c->info.pid);
	if (!strncmp(path, prefix, n)) {
		if (!strcmp(path + n, "maps"))
			return maps_fd(c);
		if (strncmp(path + n, "root/", 5))
			return -1;	/* mem, map_files, exe: a core has none */
		path += n + 4;
	}
	host = core_host_path(c, path);
	if (host)
		return open(host, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (core_has_path(c, path))
		return -1;	/* missing or changed: noted */
	p = host_path(path, c->root);	/* debug files and the like */
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	free(p);
	return fd;
}

const struct proc_maps *core_maps(const struct core *c)
{
	return &c->maps;
}

const char *core_exe(const struct core *c)
{
	return c->exe;
}

int core_threads(const struct core *c, const struct core_thread **threads)
{
	*threads = c->threads;
	return (int)c->nthreads;
}

const struct core_info *core_info(const struct core *c)
{
	return &c->info;
}

int core_notes(const struct core *c, const char *const **notes)
{
	*notes = (const char *const *)c->notes;
	return (int)c->nnotes;
}

bool core_incomplete(const struct core *c)
{
	return c->incomplete;
}

const char *core_signal_name(int signo)
{
	const char *abbrev = sig_abbrev(signo);
	static __thread char buf[16];

	if (!abbrev)
		return NULL;
	snprintf(buf, sizeof(buf), "SIG%s", abbrev);
	return buf;
}
