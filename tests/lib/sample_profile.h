/* A small profile with known contents, for the output-format tests. */
#ifndef PYSTROBE_TEST_SAMPLE_PROFILE_H
#define PYSTROBE_TEST_SAMPLE_PROFILE_H

#include "profile/profile.h"

/* Two threads of one process under process and thread roots:
 *   main: <module> -> main -> work (60 samples), <module> -> main -> idle (30)
 *   worker "loader": run -> load (10)
 * plus, when hostile is set, a frame whose function and file names carry
 * '<', '&', '"', ';', a newline, an escape sequence, invalid UTF-8 and
 * "</text><script>alert(1)</script>" (5 samples). */
void sample_profile(struct profile *p, bool hostile);

/* Add to sample_profile()'s main thread what a program's imports look like
 * to a sampler: under <module>, a thin stack depth frames deep (2 samples)
 * of importlib's frames and modules' <module>s. */
void import_tower(struct profile *p, uint32_t depth);

/* A training job recorded with idle threads (wall) or without, under a
 * process root, without thread roots:
 *   main: <module> -> main -> augment (20), -> DataLoader.__next__ ->
 *         <wait:data> (10), all in /home/u/train.py but the loader
 *   helper threads, the standard library's only: Thread._bootstrap ->
 *         Thread._bootstrap_inner -> Thread.run -> Queue._feed ->
 *         Condition.wait (HELPER_FEED), and -> Pool._handle_results ->
 *         Connection._recv (HELPER_RESULTS). */
void helper_profile(struct profile *p, bool wall);

#define HELPER_FEED 200
#define HELPER_RESULTS 150

/* A profile of n samples spread over many distinct stacks, for size tests. */
void big_profile(struct profile *p, unsigned long n);

/* Native frames named in the background (see profile_frame_rename()):
 *   main: main -> lib.so+0x10 (3 samples), then main -> lib.so+0x20 (4)
 *   worker "loader": load (2)
 * with runs when timeline is set, else per-thread counts; with rename,
 * both offsets are then renamed to RENAMED_NAME in RENAMED_FILE, one
 * function without line numbers, so the profile holds two equal frames. */
void renamed_profile(struct profile *p, bool timeline, bool rename);

#define RENAMED_NAME "f"
#define RENAMED_FILE "lib.so"

#define SAMPLE_HOSTILE_NAME "</text><script>alert(1)</script>"

#endif
