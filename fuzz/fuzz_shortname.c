/* libFuzzer harness: the short labels of C++ and Rust names
 * (src/profile/shortname.c), whose input is a demangled name from the
 * target's ELF files.  Input: the name's bytes (a NUL ends it early, as it
 * would a symbol).  Every label must stay within SHORT_NAME_MAX code
 * points, whatever the name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/shortname.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), *label;
	size_t chars = 0;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	label = short_name(name);
	for (const char *s = label; *s; chars++) {
		int n = utf8_char(s, NULL);

		s += n > 0 ? n : 1;
	}
	if (chars > SHORT_NAME_MAX)
		abort();
	free(label);
	free(name);
	return 0;
}
