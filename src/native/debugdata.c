/* The bound on .gnu_debugdata; see debugdata.h. */
#include "native/debugdata.h"

#include <gelf.h>
#include <lzma.h>
#include <stdint.h>
#include <string.h>

bool debugdata_xz_fits(const void *in, size_t len, size_t max)
{
	lzma_stream z = LZMA_STREAM_INIT;
	uint8_t buf[65536];
	uint64_t total = 0;
	lzma_ret rc;

	if (lzma_stream_decoder(&z, DEBUGDATA_MEM_MAX, LZMA_CONCATENATED) != LZMA_OK)
		return false;
	z.next_in = in;
	z.avail_in = len;
	/* Each round either consumes input, fills buf or ends: the loop
	 * ends by the time max bytes are out, or the input is spent. */
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = lzma_code(&z, LZMA_FINISH);
		total += sizeof(buf) - z.avail_out;
	} while (rc == LZMA_OK && total <= max);
	lzma_end(&z);
	return rc == LZMA_STREAM_END && total <= max;
}

bool debugdata_ok(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return true;	/* no sections: nothing for libdwfl to unpack */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugdata") != 0)
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
			continue;
		/* The raw bytes, as libdwfl reads them; every section of the
		 * name, whichever it takes. */
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf ||
		    !debugdata_xz_fits(d->d_buf, d->d_size, DEBUGDATA_OUT_MAX))
			return false;
	}
	return true;
}
