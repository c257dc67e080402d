/* A node's reply (cluster/nodereply.h). */
#include "cluster/nodereply.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *node_name(char *buf, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME");

	/* A name as Slurm allows one: it goes into every frame's line. */
	if (env && *env && strlen(env) < len &&
	    strspn(env, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") ==
	    strlen(env))
		snprintf(buf, len, "%s", env);
	else
		job_host_name(buf, len);
	return buf;
}

void node_unlink_bcast(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *base;

	if (n <= 0)
		return;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	if (base && !strncmp(base + 1, "slurm_bcast_", 12) && !strstr(exe, " (deleted)"))
		unlink(exe);
}

int node_reply_write(FILE *out, const char *node, int status, const char *json, size_t len)
{
	const size_t piece = NODE_LINE_MAX - 2;

	fprintf(out, "#pystrobe-node %s\n", node);
	for (size_t i = 0; i < len; i += piece) {
		size_t n = len - i < piece ? len - i : piece;

		fputc('=', out);
		fwrite(json + i, 1, n, out);
		fputc('\n', out);
	}
	fprintf(out, "#pystrobe-end %d %zu\n", status, len);
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	/* srun (22.05), once a task of the step has died of a signal, ends
	 * itself when the next task exits, dropping what that task wrote and
	 * srun has not passed on yet: a node that outlives another's failure
	 * lost all but its first lines (tests/live/check_slurm, node_gone).
	 * A moment before exiting lets srun take the reply whole. */
	nanosleep(&(struct timespec){ 0, NODE_LINGER_MS * 1000000L }, NULL);
	return 0;
}

/* A number of a job identity, null when unknown (-1). */
static void json_kcount(struct json *j, const char *key, long n)
{
	json_key(j, key);
	if (n >= 0)
		json_int(j, n);
	else
		json_null(j);
}

static void json_kword(struct json *j, const char *key, const char *s)
{
	json_kstr(j, key, *s ? s : NULL);
}

void json_job_ident(struct json *j, const struct job_ident *id)
{
	json_key(j, "job");
	if (!job_ident_known(id)) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_kword(j, "id", id->id);
	json_kword(j, "step", id->step);
	json_kword(j, "node", id->node);
	json_kcount(j, "rank", id->rank);
	json_kcount(j, "local_rank", id->local_rank);
	json_kcount(j, "world_size", id->world_size);
	json_kstr(j, "rank_from", rank_from_name(id->from));
	json_obj_end(j);
}
