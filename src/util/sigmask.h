#ifndef PYSTROBE_SIGMASK_H
#define PYSTROBE_SIGMASK_H

#include <stdbool.h>

/* This program defines sigprocmask() (sigmask.c): every caller in the
 * program gets the real thing, except a thread between
 * sigmask_hold_begin() and sigmask_hold_end(), whose calls are answered
 * without a system call.  Only the native unwinder uses the hold; see
 * sigmask.c for why. */
void sigmask_hold_begin(void);
void sigmask_hold_end(void);
bool sigmask_held(void);

#endif
