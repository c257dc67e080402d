#include "cmd/quit.h"

#include <string.h>

volatile sig_atomic_t quit_requested;
volatile sig_atomic_t quit_signal;

static void on_stop(int sig)
{
	quit_requested = 1;
	quit_signal = sig;
}

static void quit_on(const int *sigs, size_t n)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the wait between samples must wake up and look. */
	for (size_t i = 0; i < n; i++)
		sigaction(sigs[i], &sa, NULL);
}

void quit_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	quit_on(sigs, sizeof(sigs) / sizeof(*sigs));
}

void quit_on_signals_node(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1 };

	quit_on(sigs, sizeof(sigs) / sizeof(*sigs));
}
