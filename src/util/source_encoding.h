/* PEP 263: the encoding a Python source file declares, as the interpreter
 * (and linecache, through tokenize.detect_encoding) reads it: a UTF-8 BOM,
 * or a "coding[:=]NAME" comment on the first line, or on the second when
 * the first is blank or a comment; UTF-8 otherwise.
 */
#ifndef PYSTROBE_SOURCE_ENCODING_H
#define PYSTROBE_SOURCE_ENCODING_H

#include <stddef.h>

/* Turn the file's text into UTF-8 in place (*text is replaced, *len
 * updated; a BOM is dropped).  0, or -1 when the file cannot be read as
 * Python would (an unknown encoding, bytes invalid in it, a BOM with
 * another declared encoding): then linecache shows no line either. */
int source_to_utf8(char **text, size_t *len);

#endif
