#include "process/selfstop.h"
#include "process/pause.h"
#include "process/proc.h"
#include "util/util.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const int stop_signals[] = { SIGTSTP, SIGTTIN, SIGTTOU };
#define NSTOP (sizeof(stop_signals) / sizeof(*stop_signals))

/* What each signal did before selfstop_on_signals(). */
static struct sigaction before[NSTOP];
static struct sigaction ours;
static volatile sig_atomic_t put_off;	/* the signal whose stop waits, or 0 */
static volatile sig_atomic_t told;	/* said why it waits */
static volatile uint64_t stopped_ns;

/* Shared with the SIGSTOP watchdog: see below. */
struct watch_page {
	volatile sig_atomic_t holding;	/* pystrobe holds threads, or has
					 * leftovers (pause.c) */
	volatile sig_atomic_t continued;	/* the watchdog sent SIGCONT */
	uint32_t holds;		/* times holding was set: the watchdog's
				 * sign of pauses coming and going */
	uint32_t asleep;	/* the watchdog waits on this word (futex) */
};
static struct watch_page *watch;

uint64_t selfstop_total_ns(void)
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
 * SIGCONT.  Only async-signal-safe calls: it runs in the handler too.  A
 * SIGSTOP the watchdog put off (below) is sent again. */
static void stop_now(int sig)
{
	const struct sigaction *was = sig == SIGSTOP ? NULL : &before[index_of(sig)];
	uint64_t t0 = mono_ns();
	sigset_t set, old;

	put_off = 0;
	told = 0;
	if (!was) {
		raise(SIGSTOP);
	} else if (was->sa_handler == SIG_IGN) {
		return;
	} else if (was->sa_handler != SIG_DFL && !(was->sa_flags & SA_SIGINFO)) {
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

void selfstop_poll(void)
{
	int sig = put_off;

	if (watch && watch->continued) {
		watch->continued = 0;
		put_off = sig = SIGSTOP;
	}
	if (!sig || pause_holding() || pause_leftovers() > 0)
		return;
	stop_now(sig);
}

/* --- SIGSTOP --------------------------------------------------------------
 *
 * SIGSTOP cannot be caught, and stops pystrobe with the threads it holds.
 * A watchdog process, started before the first pause, looks every WATCH_NS
 * at a page it shares with pystrobe: when pystrobe holds threads (or has
 * threads seized late, not let go yet) and the kernel says it is stopped
 * (state T), it sends SIGCONT and says so on the
 * page; pystrobe finishes the pause, lets the threads go and stops itself
 * with SIGSTOP (selfstop_poll()), as it was asked to.  The SIGSTOP is only
 * put off, by at most the pause and WATCH_NS.  The watchdog ignores the
 * signals of the terminal (a Ctrl-C or Ctrl-Z reaches the whole job) and
 * dies with pystrobe (PR_SET_PDEATHSIG).
 *
 * It is pystrobe's own binary run afresh (posix_spawn, which shares no
 * memory copy-on-write), the page a memfd it is handed.  A fork() that
 * never execs kept every page pystrobe had at the first pause shared with
 * it: pystrobe's next write to each paid a copy-on-write fault and a TLB
 * flush on every CPU, most of the first pause of a 200-thread process
 * (bench/README, "scale"), with its threads held.  Where the binary cannot
 * be run again, fork() it is. */
#define WATCH_NS 2000000L
/* Looks with no pause seen, after which the watchdog sleeps until the
 * next one.  Without --blocking a pause is rare (a thread whose stack
 * would not hold still, stopped alone), and a look every WATCH_NS was,
 * at 1 kHz, several percent of pystrobe's own CPU (bench/README, "peers");
 * with --blocking every round pauses, and it never sleeps. */
#define WATCH_IDLE_LOOKS 50

static long futex(uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/* Until pystrobe holds threads again (selfstop_holding()).  It sets
 * holding before it reads asleep, and this sets asleep before it reads
 * holding: one of the two sees the other's store, so no pause starts
 * unseen.  PR_SET_PDEATHSIG ends the wait with pystrobe. */
static void watch_sleep(void)
{
	__atomic_store_n(&watch->asleep, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&watch->holding, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&watch->asleep, __ATOMIC_SEQ_CST))
		futex(&watch->asleep, FUTEX_WAIT, 1);
	__atomic_store_n(&watch->asleep, 0, __ATOMIC_SEQ_CST);
}

static void watch_loop(pid_t parent)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN,
				       SIGTTOU, SIGPIPE };
	struct timespec tick = { 0, WATCH_NS };
	uint32_t holds = 0;
	int quiet = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	/* Holding none of pystrobe's files: a pipe it writes must end when
	 * pystrobe does. */
	close_from(0);
	for (;;) {
		uint32_t now;

		if (quiet >= WATCH_IDLE_LOOKS) {
			watch_sleep();
			quiet = 0;
		}
		nanosleep(&tick, NULL);
		if (watch->holding && proc_task_state(parent, parent) == 'T') {
			watch->continued = 1;
			kill(parent, SIGCONT);
		}
		now = __atomic_load_n(&watch->holds, __ATOMIC_SEQ_CST);
		quiet = watch->holding || now != holds ? 0 : quiet + 1;
		holds = now;
	}
}

int selfstop_watchdog_main(int argc, char **argv)
{
	pid_t parent;
	int fd;

	if (argc != 4 || (parent = atoi(argv[2])) <= 0 || (fd = atoi(argv[3])) < 0)
		return EXIT_USAGE;
	watch = mmap(NULL, sizeof(*watch), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (watch == MAP_FAILED)
		return EXIT_ERROR;
	close(fd);
	watch_loop(parent);
	return EXIT_OK;
}

void selfstop_watch(void)
{
	static bool started;
	pid_t parent = getpid(), pid;
	char spid[16], fdarg[] = "%d";
	char *argv[] = { "pystrobe", SUSPEND_WATCHDOG_ARG, spid, fdarg, NULL };
	int fd;

	if (started)
		return;
	started = true;
	fd = memfd_create("pystrobe-watch", 0);
	if (fd < 0 || ftruncate(fd, sizeof(*watch)) < 0)
		goto fail;
	watch = mmap(NULL, sizeof(*watch), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (watch == MAP_FAILED)
		goto fail;
	snprintf(spid, sizeof(spid), "%d", (int)parent);
	if (spawn_self(argv, fd) < 0) {
		pid = fork();
		if (pid == 0)
			watch_loop(parent);
		if (pid < 0) {
			munmap(watch, sizeof(*watch));
			goto fail;
		}
	}
	close(fd);
	return;
fail:
	if (fd >= 0)
		close(fd);
	watch = NULL;
}

/* Async-signal-safe: pause.c calls it from its SIGCHLD handler too. */
void selfstop_holding(bool on)
{
	if (!watch)
		return;
	__atomic_store_n(&watch->holding, on, __ATOMIC_SEQ_CST);
	if (!on)
		return;
	__atomic_add_fetch(&watch->holds, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&watch->asleep, 0, __ATOMIC_SEQ_CST))
		futex(&watch->asleep, FUTEX_WAKE, 1);
}

void selfstop_on_signals(void)
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
