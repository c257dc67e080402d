/* Stopping pystrobe without stopping its target with it.
 *
 * A thread that pystrobe holds in a ptrace stop stays stopped for as long
 * as pystrobe is stopped: a Ctrl-Z (SIGTSTP) in the middle of a pause
 * froze the profiled job until `fg`.  So SIGTSTP, SIGTTIN and SIGTTOU are
 * caught: held back while a pause holds threads (pause.c blocks them) and
 * taken once it lets them go; and put off while a thread seized late has
 * not reached its stop yet (a stopped tracer would keep it there), until
 * pause.c's SIGCHLD handler has detached the last.  Then pystrobe stops
 * as the signal asks, through the handler that was there before (ncurses
 * restores the terminal in its own), and goes on at SIGCONT.
 *
 * SIGSTOP cannot be caught: a watchdog process continues a pystrobe
 * stopped while it holds threads, and pystrobe stops again once they are
 * let go (selfstop.c).
 */
#ifndef PYSTROBE_SELFSTOP_H
#define PYSTROBE_SELFSTOP_H

#include <stdbool.h>
#include <stdint.h>

/* Catch the stop signals from now on; call it after any library that
 * installs its own handler for them (ncurses). */
void selfstop_on_signals(void);

/* Stop now if a stop was put off and nothing holds the target any more. */
void selfstop_poll(void);

/* Start the SIGSTOP watchdog, once (pause.c, before its first pause), and
 * tell it whether threads are held or seized late and not yet let go. */
void selfstop_watch(void);
void selfstop_holding(bool on);

/* The watchdog is this binary run as `pystrobe SUSPEND_WATCHDOG_ARG PID
 * FD`: main() hands such a command line to selfstop_watchdog_main(), which
 * returns only on bad arguments. */
#define SUSPEND_WATCHDOG_ARG "--internal-sigstop-watchdog"
int selfstop_watchdog_main(int argc, char **argv);

/* How long pystrobe has been stopped so far, in all: the sampling clock
 * leaves that time out (it is neither lag nor part of --duration). */
uint64_t selfstop_total_ns(void);

#endif
