/* libFuzzer harness: _Py_DebugOffsets tables (3.13+) as they may be found
 * at a _PyRuntime address: the first 1024 bytes of the input (a shorter
 * input is a table cut short by unmapped memory).
 *
 * A table that debug_offsets_layout() accepts must give a layout the walker
 * can use: every offset it took from the table bounded as the table's own
 * struct sizes say.  The accepted layout is also checked for the invariants
 * the readers rely on (the GIL fields near the GIL, str headers small).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/layout.h"
#include "process/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RUNTIME 0x7f0000100000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct debug_offsets_info info;
	struct py_layout L;
	struct mem *m;
	char err[256];
	int rc;

	if (size > 1024)
		size = 1024;
	m = mem_fake_new();
	if (size)
		mem_fake_add(m, RUNTIME, data, size);
	debug_offsets_probe(m, RUNTIME, &info);
	memset(err, 0, sizeof(err));
	rc = debug_offsets_layout(m, RUNTIME, &L, err, sizeof(err));
	if (rc == 0) {
		const struct py_layout *base = layout_for_build(L.minor, L.free_threaded);

		if (!base || L.minor < 13)
			abort();
		if (L.gil.locked >= 256 || L.gil.holder >= 256)
			abort();
		if (L.str.ascii_size >= 256 || L.str.compact_size != L.str.ascii_size + 16)
			abort();
		/* What the table does not cover stays as the static table has it. */
		if (L.frames != base->frames || L.lines != base->lines ||
		    L.frame.owner_shim != base->frame.owner_shim ||
		    L.frame.code_tagged != base->frame.code_tagged ||
		    L.obj.managed_dict != base->obj.managed_dict)
			abort();
	} else if (rc > 0 || !err[0] || !memchr(err, 0, sizeof(err))) {
		abort();	/* a failure must be negative and say why */
	}
	mem_close(m);
	return 0;
}
