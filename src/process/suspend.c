#include "process/suspend.h"
#include "process/pause.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int stop_signals[] = { SIGTSTP, SIGTTIN, SIGTTOU };
#define NSTOP (sizeof(stop_signals) / sizeof(*stop_signals))

/* What each signal did before suspend_on_signals(). */
static struct sigaction before[NSTOP];
static struct sigaction ours;
static volatile sig_atomic_t put_off;	/* the signal whose stop waits, or 0 */
static volatile sig_atomic_t told;	/* said why it waits */
static volatile uint64_t stopped_ns;

uint64_t suspend_total_ns(void)
{
	return stopped_ns;
}

static int index_of(int sig)
{
	for (size_t i = 0; i < NSTOP; i++)
		if (stop_signals[i] == sig)
			return (int)i;
	return -1;
}

/* Stop the way sig would have before we caught it, and come back at
 * SIGCONT.  Only async-signal-safe calls: it runs in the handler too. */
static void stop_now(int sig)
{
	const struct sigaction *was = &before[index_of(sig)];
	uint64_t t0 = mono_ns();
	sigset_t set, old;

	put_off = 0;
	told = 0;
	if (was->sa_handler == SIG_IGN)
		return;
	if (was->sa_handler != SIG_DFL && !(was->sa_flags & SA_SIGINFO)) {
		/* ncurses: it leaves the screen, stops, and takes it back;
		 * and puts its own handler back, over ours. */
		was->sa_handler(sig);
		sigaction(sig, &ours, NULL);
	} else {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		raise(sig);
		/* Stopped here, as soon as the signal is let through.  (Not
		 * through util/sigmask.c's sigprocmask(), which a thread
		 * unwinding answers without the system call.) */
		pthread_sigmask(SIG_UNBLOCK, &set, &old);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		sigaction(sig, &ours, NULL);
	}
	stopped_ns += mono_ns() - t0;
}

static void say_waiting(void)
{
	static const char line[] = "pystrobe: stopping once the target's late threads reach "
		"their stop (stopped now, pystrobe would keep them stopped)\n";

	if (told)
		return;
	told = 1;
	if (write(STDERR_FILENO, line, sizeof(line) - 1) < 0)
		return;
}

static void on_stop_signal(int sig)
{
	int saved = errno;

	if (pause_holding() || pause_leftovers_seen() > 0) {
		put_off = sig;
		if (!pause_holding())
			say_waiting();
	} else {
		stop_now(sig);
	}
	errno = saved;
}

void suspend_poll(void)
{
	int sig = put_off;

	if (!sig || pause_holding() || pause_leftovers() > 0)
		return;
	stop_now(sig);
}

void suspend_on_signals(void)
{
	memset(&ours, 0, sizeof(ours));
	ours.sa_handler = on_stop_signal;
	sigemptyset(&ours.sa_mask);
	/* No SA_RESTART: the wait between samples wakes and looks. */
	for (size_t i = 0; i < NSTOP; i++) {
		/* A shell that starts a job with a stop signal ignored
		 * (nohup, a non-interactive shell's background job) means
		 * it: leave it so. */
		if (sigaction(stop_signals[i], NULL, &before[i]) == 0 &&
		    before[i].sa_handler == SIG_IGN)
			continue;
		sigaction(stop_signals[i], &ours, NULL);
	}
}
