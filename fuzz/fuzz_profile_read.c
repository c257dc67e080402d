/* libFuzzer harness: the folded, pprof, flame graph and flight recording
 * readers (profile_read.c, flightrec_read.c), and the writers on whatever
 * they accept.
 *
 * Input: [mode u8] then the file.  Mode bit 0 clear reads the bytes as
 * they are (a folded file, a flame graph's SVG, or a gzip stream when they
 * start with its magic); set, it gzips them first, so the fuzzer works on
 * the protobuf or the recording inside rather than on deflate's bit
 * stream.  Bit 1 asks for a time slice (the minute before the mark), which
 * only a recording takes.  Bit 2 also merges the bytes, as they are, into
 * a recorder under a node's and a rank's roots (flightrec_merge(), what
 * watch --slurm's front does with each node's recording) and encodes what
 * that holds.  A profile that reads is written as collapsed,
 * pprof, a flame graph and a differential one against itself, and with a
 * timeline as speedscope and a Chrome trace, to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/flightrec.h"
#include "profile/output.h"
#include "profile/profile_read.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static char *gzip_of(const uint8_t *data, size_t len, size_t *out_len)
{
	uLong cap = compressBound(len) + 32;
	char *out = malloc(cap);
	z_stream z;

	memset(&z, 0, sizeof(z));
	if (!out || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static void write_all(const struct profile *p)
{
	struct out_opts o = { .full_filenames = false };

	out_collapsed(p, devnull, &o);
	out_pprof(p, devnull, &o);
	out_flamegraph(p, devnull, &o);
	if (p->nruns) {
		out_speedscope(p, devnull, &o);
		out_chrometrace(p, devnull, &o);
	}
	o.diff_base = p;
	out_flamegraph(p, devnull, &o);
	out_collapsed(p, devnull, &o);
}

static void fuzz_roots(void *arg, pid_t pid, const char **roots)
{
	(void)arg;
	roots[0] = "node=n1";
	roots[1] = pid % 2 ? "rank=1" : NULL;
}

/* A node's recording merged as the front merges it: added whole, or an
 * error of one line and nothing added. */
static void merge(const char *data, size_t len)
{
	struct flightrec *fr = flightrec_new(UINT64_MAX, 1 << 20);
	struct strbuf sb = STRBUF_INIT;
	char err[PROFILE_READ_ERR];

	err[0] = 0;
	if (flightrec_merge(fr, data, len, fuzz_roots, NULL, err, sizeof(err)) == 0) {
		if (flightrec_encode(fr, 0, &sb) < 0)
			abort();
	} else if (!err[0] || strchr(err, '\n') || flightrec_samples(fr)) {
		abort();
	}
	sb_release(&sb);
	flightrec_free(fr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct flightrec_slice minute = { -60000000000ll, 0 };
	struct flightrec_info info;
	struct profile p;
	char err[PROFILE_READ_ERR], *buf = NULL;
	const char *in;
	size_t len;

	if (size < 1)
		return 0;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	if (data[0] & 1) {
		buf = gzip_of(data + 1, size - 1, &len);
		in = buf;
	} else {
		/* A copy that ends where the input does, for ASan. */
		len = size - 1;
		buf = malloc(len ? len : 1);
		memcpy(buf, data + 1, len);
		in = buf;
	}
	if (data[0] & 4)
		merge((const char *)data + 1, size - 1);
	if (profile_read_slice_mem(in, len, "fuzz", data[0] & 2 ? &minute : NULL, &info, &p, NULL,
				   err, sizeof(err)) == 0) {
		if (!p.samples)
			abort();	/* the reader refuses empty profiles */
		write_all(&p);
		profile_free(&p);
	} else if (!err[0] || strchr(err, '\n')) {
		abort();		/* one line, always */
	}
	free(buf);
	return 0;
}
