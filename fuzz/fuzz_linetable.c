/* libFuzzer harness: the three line-table decoders on arbitrary bytes.
 *
 * Input: [fmt u8][firstlineno i32][offset u32] then the table.  The table is
 * decoded in every format (the fmt byte only picks which one also gets a
 * sweep of offsets), at the given offset and at the offsets around the end
 * of what it covers.  The table is passed in place: libFuzzer's copy of the
 * input ends exactly where the table does, so ASan sees any read past it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzzmem.h"
#include "interp/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum lt_format formats[] = { LT_LNOTAB, LT_LINETABLE, LT_LOCATIONS };

static struct lt_ranges ranges[3];

/* The contract: a line (>= 0) or -1, nothing else; and the decoded ranges
 * (formats[f], built once per input) say exactly what the scan says. */
static void check(int f, const uint8_t *t, size_t len, int first, uint32_t off)
{
	int line = linetable_line(formats[f], t, len, first, off);

	if (line < -1 || linetable_ranges_line(&ranges[f], off) != line)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *table;
	size_t len;
	int first;
	uint32_t offset;
	int sweep;

	if (size < 9)
		return 0;
	sweep = data[0] % 3;
	first = (int32_t)fz_le32(data + 1);
	offset = fz_le32(data + 5);
	table = data + 9;
	len = size - 9;

	for (int f = 0; f < 3; f++)
		if (linetable_ranges(formats[f], table, len, first, &ranges[f]) < 0)
			abort();
	for (int f = 0; f < 3; f++) {
		check(f, table, len, first, offset);
		check(f, table, len, first, 0);
		check(f, table, len, first, UINT32_MAX);
		if (linetable_line(formats[f], len ? table : NULL, 0, first, offset) < -1)
			abort();
	}
	/* The first instructions one by one (odd offsets too: a frame's
	 * lasti is whatever the target says), up to a little past what the
	 * table could cover at two bytes an entry. */
	for (uint32_t off = 0; off <= 2 * len + 16 && off < 512; off++)
		check(sweep, table, len, first, off);
	/* And the end of every range, where an off-by-one would show. */
	for (size_t i = 0; i < ranges[sweep].n && i < 4096; i++) {
		uint64_t end = ranges[sweep].r[i].end;

		check(sweep, table, len, first, (uint32_t)(end - 1));
		if (end <= UINT32_MAX)
			check(sweep, table, len, first, (uint32_t)end);
	}
	for (int f = 0; f < 3; f++)
		linetable_ranges_free(&ranges[f]);
	return 0;
}
