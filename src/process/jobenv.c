/* A process's job and rank, from its environment or its ancestry
 * (jobenv.h).
 *
 * Everything here is read from processes that are not ours: an
 * environment may be megabytes, binary, without its last NUL, and a
 * command line may say anything.  Each value is held to the form its
 * launcher writes, and every walk is bounded.
 */
#include "process/jobenv.h"
#include "process/proc.h"
#include "process/proctree.h"
#include "util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The variables read, each the first time it appears. */
enum env_var {
	V_JOB_ID, V_STEP_ID, V_NODENAME,
	V_RANK, V_LOCAL_RANK, V_WORLD_SIZE,
	V_PROCID, V_LOCALID, V_NTASKS,
	V_NR
};

static const char *const env_names[V_NR] = {
	[V_JOB_ID] = "SLURM_JOB_ID",
	[V_STEP_ID] = "SLURM_STEP_ID",
	[V_NODENAME] = "SLURMD_NODENAME",
	[V_RANK] = "RANK",
	[V_LOCAL_RANK] = "LOCAL_RANK",
	[V_WORLD_SIZE] = "WORLD_SIZE",
	[V_PROCID] = "SLURM_PROCID",
	[V_LOCALID] = "SLURM_LOCALID",
	[V_NTASKS] = "SLURM_NTASKS",
};

/* Where each rank comes from, the first whose rank reads winning:
 * torchrun starts its workers inside one Slurm task, whose SLURM_PROCID
 * they all inherit. */
static const struct rank_source {
	enum rank_from from;
	enum env_var rank, local_rank, world_size;
} rank_sources[] = {
	{ RANK_FROM_TORCHRUN, V_RANK, V_LOCAL_RANK, V_WORLD_SIZE },
	{ RANK_FROM_SLURM, V_PROCID, V_LOCALID, V_NTASKS },
};

/* No value we keep is longer: node names are at most 64 in DNS. */
#define VALUE_MAX 128

struct env_scan {
	char val[V_NR][VALUE_MAX];
	bool seen[V_NR];
	bool too_long[V_NR];
};

const char *rank_from_name(enum rank_from from)
{
	return from == RANK_FROM_TORCHRUN ? "torchrun" : from == RANK_FROM_SLURM ? "slurm" : NULL;
}

bool job_ident_known(const struct job_ident *id)
{
	return id->in_job || id->from != RANK_FROM_NONE;
}

static void ident_clear(struct job_ident *out)
{
	*out = (struct job_ident){ .rank = -1, .local_rank = -1, .world_size = -1 };
}

/* One NAME=VALUE entry of len bytes (no NUL in it). */
static void scan_entry(struct env_scan *s, const char *e, size_t len)
{
	const char *eq = memchr(e, '=', len);
	size_t nlen, vlen;

	if (!eq)
		return;
	nlen = eq - e;
	vlen = len - nlen - 1;
	for (int v = 0; v < V_NR; v++) {
		if (s->seen[v] || strlen(env_names[v]) != nlen || memcmp(env_names[v], e, nlen))
			continue;
		s->seen[v] = true;
		s->too_long[v] = vlen >= VALUE_MAX;
		if (!s->too_long[v])
			memcpy(s->val[v], eq + 1, vlen);
		return;
	}
}

/* Every entry of buf; returns how many bytes were used: all when last,
 * else up to the last NUL (the rest is the start of an entry). */
static size_t scan_block(struct env_scan *s, const char *buf, size_t len, bool last)
{
	size_t at = 0;

	while (at < len) {
		const char *nul = memchr(buf + at, 0, len - at);
		size_t n = nul ? (size_t)(nul - (buf + at)) : len - at;

		if (!nul && !last)
			break;
		scan_entry(s, buf + at, n);
		at += n + (nul != NULL);
	}
	return at;
}

/* A number as launchers write them: decimal digits, nothing else. */
static long env_number(const struct env_scan *s, enum env_var v, long min)
{
	const char *p = s->val[v];
	long n = 0;

	if (!s->seen[v] || s->too_long[v] || !*p || strlen(p) > 9)
		return -1;
	for (; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n >= min ? n : -1;
}

/* A word of the characters extra allows besides letters and digits. */
static bool env_word(const char *p, const char *extra)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(extra, *p))
			return false;
	return true;
}

static void env_copy(const struct env_scan *s, enum env_var v, const char *extra,
		     char *dst, size_t size)
{
	if (s->seen[v] && !s->too_long[v] && strlen(s->val[v]) < size &&
	    env_word(s->val[v], extra))
		snprintf(dst, size, "%s", s->val[v]);
}

static bool all_digits(const char *p)
{
	return *p && strspn(p, "0123456789") == strlen(p);
}

static void scan_resolve(const struct env_scan *s, struct job_ident *out)
{
	ident_clear(out);
	env_copy(s, V_JOB_ID, "", out->id, sizeof(out->id));
	/* A job id is a number: Slurm's, never a name. */
	if (!all_digits(out->id))
		out->id[0] = 0;
	env_copy(s, V_STEP_ID, "_+", out->step, sizeof(out->step));
	env_copy(s, V_NODENAME, "-._", out->node, sizeof(out->node));
	out->in_job = out->id[0] != 0;
	for (size_t i = 0; i < ARRAY_SIZE(rank_sources); i++) {
		const struct rank_source *r = &rank_sources[i];
		long rank = env_number(s, r->rank, 0);

		if (rank < 0)
			continue;
		out->from = r->from;
		out->rank = rank;
		out->local_rank = env_number(s, r->local_rank, 0);
		out->world_size = env_number(s, r->world_size, 1);
		break;
	}
}

int job_ident_parse(const char *environ, size_t len, struct job_ident *out)
{
	struct env_scan s = { 0 };

	scan_block(&s, environ, len, true);
	scan_resolve(&s, out);
	return 0;
}

/* The kernel bounds an environment (a quarter of the stack limit, at most
 * 6 MiB); this bounds what is read should that change. */
#define ENVIRON_READ_MAX (64u << 20)

#define ENVIRON_BLOCK 65536

/* Read fd's entries a block at a time: an entry longer than the block
 * (no variable read here is) is passed over up to its NUL. */
static int scan_fd(int fd, struct env_scan *s)
{
	char *buf = xmalloc(ENVIRON_BLOCK);
	size_t have = 0, total = 0;
	bool skipping = false;
	ssize_t n = 0;
	int rc;

	while (total < ENVIRON_READ_MAX &&
	       (n = read(fd, buf + have, ENVIRON_BLOCK - have)) > 0) {
		size_t used, len = have + n;

		total += n;
		if (skipping) {
			char *nul = memchr(buf, 0, len);

			have = 0;
			if (!nul)
				continue;
			skipping = false;
			len -= nul + 1 - buf;
			memmove(buf, nul + 1, len);
		}
		used = scan_block(s, buf, len, false);
		have = len - used;
		memmove(buf, buf + used, have);
		if (have == ENVIRON_BLOCK) {
			have = 0;
			skipping = true;
		}
	}
	rc = n < 0 ? -errno : 0;
	if (!rc && !skipping)
		scan_block(s, buf, have, true);
	free(buf);
	return rc;
}

int job_ident_read(pid_t pid, struct job_ident *out)
{
	struct env_scan s = { 0 };
	char path[64];
	int fd, rc;

	ident_clear(out);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = scan_fd(fd, &s);
	close(fd);
	if (rc == 0)
		scan_resolve(&s, out);
	return rc;
}

void job_host_name(char *buf, size_t size)
{
	char name[256] = "";

	if (gethostname(name, sizeof(name) - 1) != 0)
		name[0] = 0;
	name[strcspn(name, ".")] = 0;
	snprintf(buf, size, "%s", name);
}

/* How far up a process's ancestry its step daemon is looked for: a task
 * is its child, a launcher's worker a few below. */
#define ANCESTRY_MAX 64

bool job_stepd_parse(const char *argv0, struct job_ident *id)
{
	static const char prefix[] = "slurmstepd: [";
	char job[32], step[32];
	const char *p = argv0 + sizeof(prefix) - 1, *dot, *end;

	if (strncmp(argv0, prefix, sizeof(prefix) - 1) || !(end = strchr(p, ']')) ||
	    !(dot = memchr(p, '.', end - p)) || dot - p >= (long)sizeof(job) ||
	    end - dot - 1 >= (long)sizeof(step))
		return false;
	snprintf(job, sizeof(job), "%.*s", (int)(dot - p), p);
	snprintf(step, sizeof(step), "%.*s", (int)(end - dot - 1), dot + 1);
	if (!all_digits(job) || !env_word(step, "_+"))
		return false;
	memcpy(id->id, job, sizeof(job));
	memcpy(id->step, step, sizeof(step));
	return true;
}

static bool is_stepd(pid_t pid)
{
	char **argv = proc_cmdline(pid, NULL);
	bool yes = argv && !strncmp(argv[0], "slurmstepd:", 11);

	proc_cmdline_free(argv);
	return yes;
}

bool job_slurmd_parse(char *const *argv, int argc, char *node, size_t size)
{
	const char *base, *name = NULL;

	if (argc < 1 || !argv[0])
		return false;
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	for (int i = 1; !strcmp(base, "slurmd") && i < argc && !name; i++)
		if (!strcmp(argv[i], "-N"))
			name = i + 1 < argc ? argv[i + 1] : "";
		else if (!strncmp(argv[i], "-N", 2))
			name = argv[i] + 2;
	if (!name || strlen(name) >= size || !env_word(name, "-._"))
		return false;
	snprintf(node, size, "%s", name);
	return true;
}

/* The node the slurmd pid serves, by its command line. */
static bool slurmd_node(pid_t pid, char *node, size_t size)
{
	int argc = 0;
	char **argv = proc_cmdline(pid, &argc);
	bool ok = argv && job_slurmd_parse(argv, argc, node, size);

	proc_cmdline_free(argv);
	return ok;
}

/* The job, step and node of the nearest ancestor that tells them: a step
 * daemon (its node: its slurmd's -N, else this host's name, slurmd's
 * default), or a process whose environment names both job and node. */
static bool ancestry(pid_t pid, struct job_ident *id)
{
	for (int depth = 0; depth < ANCESTRY_MAX; depth++) {
		struct job_ident up;
		char **argv;
		bool stepd;

		if ((pid = proc_parent(pid)) <= 1)
			return false;
		argv = proc_cmdline(pid, NULL);
		stepd = argv && job_stepd_parse(argv[0], &up);
		proc_cmdline_free(argv);
		if (stepd) {
			if (!slurmd_node(proc_parent(pid), up.node, sizeof(up.node)))
				job_host_name(up.node, sizeof(up.node));
		} else if (job_ident_read(pid, &up) < 0 || !up.in_job || !up.node[0]) {
			continue;
		}
		memcpy(id->id, up.id, sizeof(id->id));
		memcpy(id->step, up.step, sizeof(id->step));
		memcpy(id->node, up.node, sizeof(id->node));
		id->in_job = true;
		return true;
	}
	return false;
}

void job_ident_placed(pid_t pid, struct job_ident *id)
{
	if (job_ident_read(pid, id) == 0 && id->in_job && id->node[0])
		return;
	ancestry(pid, id);
}

struct job_want {
	const char *job, *step, *node;
	const char *own_job, *own_step;	/* pystrobe's, from its environment */
};

static bool wanted(const struct job_want *w, const struct job_ident *id)
{
	if (!id->in_job || strcmp(id->id, w->job) || strcmp(id->node, w->node))
		return false;
	if (w->step && strcmp(id->step, w->step))
		return false;
	return !(w->own_job && w->own_step && !strcmp(id->id, w->own_job) &&
		 !strcmp(id->step, w->own_step));
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int jobprocs_list(const char *jobid, const char *step, const char *node, pid_t self,
		  pid_t *out, int max)
{
	struct job_want w = { jobid, step, node, getenv("SLURM_JOB_ID"), getenv("SLURM_STEP_ID") };
	DIR *dir = opendir("/proc");
	struct dirent *d;
	int n = 0;

	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max) {
		struct job_ident id;
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 1 || pid == self)
			continue;
		job_ident_placed(pid, &id);
		if (wanted(&w, &id) && !is_stepd(pid))
			out[n++] = pid;
	}
	closedir(dir);
	qsort(out, n, sizeof(*out), cmp_pid);
	return n;
}
