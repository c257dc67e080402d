/* Tests for compact rank ranges and Slurm-style hostlists
 * (src/cluster/ranges.c): the strings expected, and every hostlist read
 * back by Slurm's own `scontrol show hostnames` into the names it was
 * made of. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cluster/ranges.h"
#include "suite.h"
#include "util/util.h"

static void want_ranges(const char *want, const long *in, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	long *v = xcalloc(n ? n : 1, sizeof(*v));

	if (n)
		memcpy(v, in, n * sizeof(*v));
	ranges_format(&sb, v, n);
	ck_assert_str_eq(sb.buf ? sb.buf : "", want);
	sb_release(&sb);
	free(v);
}

START_TEST(test_ranges)
{
	long many[512];

	want_ranges("", NULL, 0);
	want_ranges("3", (long[]){ 3 }, 1);
	want_ranges("0-2", (long[]){ 2, 0, 1 }, 3);
	want_ranges("0-1,3", (long[]){ 3, 1, 0, 1, 3 }, 5);
	want_ranges("-2-0,5", (long[]){ 0, -1, -2, 5 }, 4);
	for (long i = 0; i < 512; i++)
		many[i] = 511 - i;
	many[37] = many[100];	/* 474 is missing, 411 twice */
	want_ranges("0-473,475-511", many, 512);
}
END_TEST

static void want_hosts(const char *want, const char *const *names, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	hostlist_format(&sb, names, n);
	ck_assert_str_eq(sb.buf ? sb.buf : "", want);
	sb_release(&sb);
}

START_TEST(test_hostlist)
{
	static const char *const pad[] = { "node16", "node01", "node10", "node09", "node02" };
	static const char *const mixed[] = { "gpu7", "hnode20", "hnode2", "hnode1", "login",
					     "hnode1", "hnode3" };
	static const char *const widths[] = { "n1", "n001", "n002", "n9", "n10" };
	char *big[64];

	want_hosts("", NULL, 0);
	want_hosts("hnode1", (const char *[]){ "hnode1" }, 1);
	want_hosts("node[01-02,09-10,16]", pad, 5);
	want_hosts("gpu7,hnode[1-3,20],login", mixed, 7);
	/* n1 and n001 are different hosts; n10 has no padded width of 2 */
	want_hosts("n[1,9-10],n[001-002]", widths, 5);
	want_hosts("a,b", (const char *[]){ "b", "a" }, 2);
	/* numbers too long for a range stay names */
	want_hosts("x12345678901,y", (const char *[]){ "y", "x12345678901" }, 2);
	for (int i = 0; i < 64; i++)
		big[i] = xasprintf("hnode%d", i + 1);
	want_hosts("hnode[1-64]", (const char *const *)big, 64);
	for (int i = 0; i < 64; i++)
		free(big[i]);
}
END_TEST

/* Slurm's expansion of list, one name a line, or NULL where scontrol is
 * missing.  scontrol needs a configuration to start, not a cluster. */
static char *slurm_expand(const char *list)
{
	static const char conf[] = "ClusterName=t\nSlurmctldHost=localhost\n"
				   "NodeName=localhost\nPartitionName=p Nodes=localhost\n";
	char path[] = "/tmp/check_ranges_XXXXXX", *cmd, buf[4096];
	int fd = mkstemp(path);
	struct strbuf out = STRBUF_INIT;
	FILE *p;
	size_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, conf, sizeof(conf) - 1), (ssize_t)sizeof(conf) - 1);
	close(fd);
	cmd = xasprintf("SLURM_CONF=%s scontrol show hostnames '%s' 2>/dev/null", path, list);
	p = popen(cmd, "r");
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		sb_add(&out, buf, n);
	if (p && pclose(p) != 0)
		sb_release(&out);
	unlink(path);
	free(cmd);
	return out.len ? sb_detach(&out) : NULL;
}

START_TEST(test_slurm_reads_it_back)
{
	static const char *const names[] = { "node16", "node01", "node10", "node09", "hnode2",
					     "gpu7", "n1", "n001", "n9", "n10", "hnode1", "x" };
	struct strbuf sb = STRBUF_INIT;
	char *back;
	size_t seen = 0;

	hostlist_format(&sb, names, ARRAY_SIZE(names));
	back = slurm_expand(sb.buf);
	if (!back) {
		test_skip("scontrol (slurm-client) is not installed: apt-get install slurm-client");
		sb_release(&sb);
		return;
	}
	test_used("scontrol");
	for (char *line = strtok(back, "\n"); line; line = strtok(NULL, "\n")) {
		size_t k = 0;

		while (k < ARRAY_SIZE(names) && strcmp(names[k], line))
			k++;
		ck_assert_msg(k < ARRAY_SIZE(names), "%s: Slurm reads %s in it", sb.buf, line);
		seen++;
	}
	ck_assert_uint_eq(seen, ARRAY_SIZE(names));
	free(back);
	sb_release(&sb);
}
END_TEST

int main(void)
{
	const struct test_group groups[] = {
		{ "ranges", .tests = { test_ranges, test_hostlist, test_slurm_reads_it_back } },
	};

	return run_groups("ranges", groups, ARRAY_SIZE(groups), 0, 1);
}
