/* Signal names without the SIG prefix ("KILL", "SEGV"), as glibc 2.32's
 * sigabbrev_np() gives them; here because pystrobe-static is built
 * against an older glibc (Makefile.am). */
#ifndef PYSTROBE_SIGNAME_H
#define PYSTROBE_SIGNAME_H

/* The name of signal sig, or NULL when it has none (a real-time signal,
 * out of range). */
const char *sig_abbrev(int sig);

#endif
