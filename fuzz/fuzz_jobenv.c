/* libFuzzer harness: a process's job and rank from its environment
 * (src/process/jobenv.c), whose input is /proc/PID/environ of a process
 * on a node of a job: any bytes, any length, no last NUL.  Input: the
 * environment block.  What is kept must be what a launcher writes: a
 * job id of digits, node and step names of their characters, ranks from
 * -1 up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/jobenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_word(const char *s, size_t size, const char *allowed)
{
	size_t n = strnlen(s, size);

	if (n == size)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!strchr(allowed, s[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char node_chars[sizeof(alnum) + 3], step_chars[sizeof(alnum) + 2];
	/* A copy of exactly size bytes: the parser must not read past it. */
	char *env = malloc(size ? size : 1);
	struct job_ident id;

	if (!env)
		return 0;
	memcpy(env, data, size);
	snprintf(node_chars, sizeof(node_chars), "%s-._", alnum);
	snprintf(step_chars, sizeof(step_chars), "%s_+", alnum);
	job_ident_parse(env, size, &id);
	check_word(id.id, sizeof(id.id), "0123456789");
	check_word(id.step, sizeof(id.step), step_chars);
	check_word(id.node, sizeof(id.node), node_chars);
	if (id.in_job != (id.id[0] != 0) || id.rank < -1 || id.local_rank < -1 ||
	    id.world_size < -1 || id.world_size == 0 ||
	    (id.from == RANK_FROM_NONE) != (id.rank == -1))
		abort();
	free(env);
	return 0;
}
