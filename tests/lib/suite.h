/* What every test program's main() does with its Check suite. */
#ifndef PYSTROBE_TEST_SUITE_H
#define PYSTROBE_TEST_SUITE_H

#include <check.h>

/* Add to tc a test that fails when ninterps is 0: a machine with no
 * interpreter must fail the suite, not pass it with nothing run. */
void add_have_interps(TCase *tc, int ninterps);

/* Run every test of s (and free it); the exit status for the test
 * driver. */
int run_suite(Suite *s);

#endif
