/* Folded ("collapsed") stack files for the diff and merge tests: written
 * as fixtures, and parsed back here, independently of pystrobe's reader,
 * to hold pystrobe's output against the counts in its inputs. */
#ifndef PYSTROBE_TEST_FOLDED_H
#define PYSTROBE_TEST_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct folded {
	char **stacks;		/* "frame;frame;...;leaf" */
	uint64_t *counts;
	uint64_t *counts2;	/* a second count ("stack BEFORE AFTER"), or 0 */
	size_t n;
	uint64_t total, total2;
};

/* Parse "STACK COUNT" or "STACK COUNT COUNT2" lines (the count after the
 * last space); returns the number of lines that are neither. */
int folded_parse(const char *text, struct folded *f);
void folded_free(struct folded *f);

/* Samples whose stack is exactly path (self) and that pass through it
 * (total); path "" is the root above everything. */
void folded_path(const struct folded *f, const char *path, uint64_t *self, uint64_t *total);

/* Samples whose leaf frame is label (self), and whose stack holds it
 * (total, once per stack). */
void folded_frame(const struct folded *f, const char *label, uint64_t *self, uint64_t *total);

/* The count of the line with exactly this stack, 0 if none. */
uint64_t folded_count(const struct folded *f, const char *stack);

/* A new directory under $TMPDIR or /tmp; file name in it (new string). */
char *test_tmpdir(const char *prefix);
char *test_file(const char *dir, const char *name, const char *text);
void test_rmdir(const char *dir);

/* The whole file, NUL-terminated; fails the test when unreadable. */
char *test_slurp(const char *path);

/* The bytes a gzip stream holds (up to 1 MiB, a new buffer); fails the
 * test when it is not one. */
char *test_gunzip(const char *gz, size_t len, size_t *out_len);

#endif
