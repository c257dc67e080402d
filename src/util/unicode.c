#include "util/unicode.h"

static bool in_ranges(const struct uni_range *r, size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid].first)
			hi = mid;
		else if (cp > r[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

bool uni_printable(uint32_t cp)
{
	if (cp >= 0x110000)
		return false;
	/* ASCII without a lookup: most text is. */
	if (cp < 0x7f)
		return cp >= 0x20;
	return !in_ranges(uni_nonprintable, uni_nonprintable_n, cp);
}

bool uni_is_format(uint32_t cp)
{
	return in_ranges(uni_format, uni_format_n, cp);
}
