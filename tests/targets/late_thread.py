"""A target with a thread late to every pause, for check_pause.

Usage: late_thread.py OUTDIR

Thread "spawner" calls libc's posix_spawn() again and again (through
ctypes, which lets the GIL go: os.posix_spawn() holds it, and no other
thread would run), with a file action that opens the FIFO OUTDIR/fifo.
glibc's posix_spawn runs the child on the
parent's memory (CLONE_VFORK), and the parent thread waits for it in the
kernel, in state D, until the child execs; the child blocks in open() until
thread "releaser" opens the FIFO for writing, every RELEASE_S.  So the
spawner is in D nearly all the time and leaves it briefly, over and over:
PTRACE_INTERRUPT cannot stop it, except in those moments.  The call is
in_vfork(), a frame of its own.

Thread "worker" spins in Python in work() and, every 20 ms of its own
clock, appends "MONOTONIC_NS COUNT" to OUTDIR/progress: how far it got,
and when (time.monotonic_ns() is CLOCK_MONOTONIC, as the test's clock).

OUTDIR/ready.json, once all three run: {"spawner": TID, "worker": TID}.
Everything ends when OUTDIR/stop appears.  Python 3.8+.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading
import time

RELEASE_S = 0.1


def in_vfork(libc, pid, actions, argv, envp):
    # Its own frame: a sample here is of the thread on its way into, out
    # of, or (read while it sleeps) in the uninterruptible sleep.
    return libc.posix_spawn(ctypes.byref(pid), b"/bin/true", actions, None, argv, envp)


def spawn_loop(fifo, stop):
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    actions = ctypes.create_string_buffer(256)  # posix_spawn_file_actions_t: 80 bytes
    argv = (ctypes.c_char_p * 2)(b"true", None)
    envp = (ctypes.c_char_p * 1)(None)
    pid = ctypes.c_int()
    libc.posix_spawn_file_actions_init(actions)
    libc.posix_spawn_file_actions_addopen(actions, 0, os.fsencode(fifo), os.O_RDONLY, 0)
    while not os.path.exists(stop):
        if in_vfork(libc, pid, actions, argv, envp):
            raise OSError(ctypes.get_errno(), "posix_spawn")
        os.waitpid(pid.value, 0)


def release_loop(fifo, spawner):
    # Non-blocking: with no child in open() (the spawner is between two
    # spawns, or has stopped) there is no reader, and this tries again.
    # Until the spawner has ended: its last child may still wait.
    while spawner.is_alive():
        time.sleep(RELEASE_S)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def work(progress, stop):
    count = 0
    mark = time.monotonic_ns()
    with open(progress, "w", buffering=1) as f:
        while True:
            for _ in range(1000):
                count += 1
            now = time.monotonic_ns()
            if now - mark >= 20000000:
                mark = now
                f.write("%d %d\n" % (now, count))
                if os.path.exists(stop):
                    return


def main():
    outdir = sys.argv[-1]
    fifo = os.path.join(outdir, "fifo")
    stop = os.path.join(outdir, "stop")
    os.mkfifo(fifo)
    spawner = threading.Thread(target=spawn_loop, args=(fifo, stop), name="spawner")
    threads = [spawner,
               threading.Thread(target=release_loop, args=(fifo, spawner), name="releaser"),
               threading.Thread(target=work, args=(os.path.join(outdir, "progress"), stop),
                                name="worker")]
    for t in threads:
        t.start()
    ids = {"spawner": threads[0].native_id, "worker": threads[2].native_id}
    tmp = os.path.join(outdir, "ready.tmp")
    with open(tmp, "w") as f:
        json.dump(ids, f)
    os.rename(tmp, os.path.join(outdir, "ready.json"))
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
