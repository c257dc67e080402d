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

/* A profile of n samples spread over many distinct stacks, for size tests. */
void big_profile(struct profile *p, unsigned long n);

#define SAMPLE_HOSTILE_NAME "</text><script>alert(1)</script>"

#endif
