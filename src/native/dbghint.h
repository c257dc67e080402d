/* The one line that tells how to get names for the frames of an object
 * without symbols (a distribution's stripped python3.11 reads
 * python3.11+0x6921cb): where its debug file would go, by build ID, and
 * which package ships it, where that can be told from the name. */
#ifndef PYSTROBE_DBGHINT_H
#define PYSTROBE_DBGHINT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The note for lib (a path as pid names it, or a base name), mapped in
 * pid, into buf; false when there is none to give: lib not mapped, or it
 * has a symbol table, or its debug file is in place already. */
bool dbg_hint(pid_t pid, const char *lib, char *buf, size_t len);

/* The Debian/Ubuntu package with the debug file of an object of this base
 * name (python3.11 and libpython3.11.so.1.0: python3.11-dbg; libc.so.6:
 * libc6-dbg), or NULL where it cannot be told from the name. */
const char *dbg_package(const char *base, char *buf, size_t len);

#endif
