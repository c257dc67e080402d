/* What /proc tells about a process: its mappings, command line, threads and
 * their scheduler states. */
#ifndef PYSTROBE_PROC_H
#define PYSTROBE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start, end, offset;
	char perms[5];
	char *path;		/* as the target names it; "" when anonymous */
};

struct proc_maps {
	struct proc_map *v;
	size_t n;
};

/* 0 when the process exists, status_fail(EXIT_NO_PROCESS) when it does not. */
int proc_check(pid_t pid);
/* 0 (proc_maps_free() maps when done), or status_fail(EXIT_PERMISSION)
 * when not allowed to read them, status_fail(EXIT_NO_PROCESS) otherwise. */
int proc_maps_read(pid_t pid, struct proc_maps *maps);
/* The lines of a maps file in text (which it frees) into maps. */
void proc_maps_parse(char *text, struct proc_maps *maps);
void proc_maps_free(struct proc_maps *maps);

/* argv of the process (NULL-terminated, *argc set); NULL if unreadable. */
char **proc_cmdline(pid_t pid, int *argc);
void proc_cmdline_free(char **argv);

/* The thread ids of the process, sorted; returns the count or -1. */
int proc_tasks(pid_t pid, pid_t **tids);
/* The same under another proc tree than /proc (tests use a fake one). */
int proc_tasks_under(const char *proc, pid_t pid, pid_t **tids);

/* The state letter of a thread from /proc/PID/task/TID/stat ('R', 'S', 'D',
 * 'T', ...), or 0 if it cannot be read (the thread is gone). */
char proc_task_state(pid_t pid, pid_t tid);

/* The thread's state letter and the CPU time it has used (user and
 * system), from /proc/PID/task/TID/stat.  0, or -1 when it is gone. */
int proc_task_cpu(pid_t pid, pid_t tid, char *state, uint64_t *cpu_ns);

/* The system call the thread sits in and its arguments, from
 * /proc/PID/task/TID/syscall.  0, or -1 when it runs, is gone, or that
 * file cannot be read (it needs the right to trace the process). */
int proc_task_syscall(pid_t pid, pid_t tid, long *nr, uint64_t args[6]);

/* A thread off its CPU in the kernel, as that file tells without stopping
 * it: the call (-1: none, a fault), its arguments, and the user stack
 * pointer and instruction pointer it entered the kernel with. */
struct task_entry {
	long nr;
	uint64_t args[6];
	uint64_t sp, pc;
};

/* Open /proc/PID/task/TID/<file> to read (close-on-exec): an fd, or -1. */
int proc_task_open(pid_t pid, pid_t tid, const char *file);

/* That file's text into *e: 0, or -1 for "running" or anything else. */
int proc_syscall_parse(const char *text, struct task_entry *e);
/* The same read from /proc/PID/task/TID/syscall. */
int proc_task_entry(pid_t pid, pid_t tid, struct task_entry *e);

/* From an open /proc/PID/task/TID/schedstat: the CPU time the thread has
 * run (ns) and how many times it was given a CPU.  A thread whose two
 * counts are what they were has not run in between: the kernel adds to
 * them each time it takes the thread off a CPU.  0, or -1. */
int proc_schedstat_read(int fd, uint64_t *run_ns, uint64_t *runs);

/* Is the process gone, a zombie, or on its way out (its memory may already
 * be released: an empty map, ptrace refusing even root)? */
bool proc_exiting(pid_t pid);
/* The same for one thread of the process. */
bool proc_task_exiting(pid_t pid, pid_t tid);

/* A path in the process's own root, so files of a process in a container or
 * chroot are opened as it sees them: "/proc/PID/root" + path. */
char *proc_root_path(pid_t pid, const char *path);

/* The message for a permission failure on pid, with what to do about it:
 * ptrace_scope, CAP_SYS_PTRACE, containers, and as root what else blocks
 * (permission.c). */
void permission_message(pid_t pid, char *err, size_t errlen);

#endif
