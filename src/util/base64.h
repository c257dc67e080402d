/* Base64 (RFC 4648, with padding): a binary profile carried inside a JSON
 * document, as record --slurm's nodes send theirs. */
#ifndef PYSTROBE_BASE64_H
#define PYSTROBE_BASE64_H

#include <stddef.h>

#include "util/util.h"

void sb_add_base64(struct strbuf *sb, const void *data, size_t len);
/* Decode s (n bytes, no whitespace) onto out: 0, or -EINVAL for anything
 * that is not base64, out then as it was. */
int base64_decode(const char *s, size_t n, struct strbuf *out);

#endif
