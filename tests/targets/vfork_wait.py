"""A target with a thread in an uninterruptible sleep, for the pause tests.

Usage: vfork_wait.py OUTDIR

Thread "spawner" calls os.posix_spawn() with a file action that opens the
FIFO OUTDIR/fifo.  glibc's posix_spawn runs the child on the parent's
memory (CLONE_VFORK), and the parent thread waits for it in the kernel in
state D until the child execs; the child blocks in open() until the test
opens the FIFO for writing.  PTRACE_INTERRUPT cannot stop a thread there.
Once released, the thread spins in after_spawn() for 4 s.

OUTDIR/ready holds the spawner's native thread id, written just before the
call (tmp + rename).  Python 3.8+ (posix_spawn file_actions).
"""
import os
import sys
import threading
import time


def after_spawn(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def spawner(outdir, fifo):
    tmp = os.path.join(outdir, "ready.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % threading.get_native_id())
    os.rename(tmp, os.path.join(outdir, "ready"))
    pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ),
                         file_actions=[(os.POSIX_SPAWN_OPEN, 0, fifo, os.O_RDONLY, 0)])
    after_spawn(4)
    os.waitpid(pid, 0)


def main():
    outdir = sys.argv[-1]
    fifo = os.path.join(outdir, "fifo")
    os.mkfifo(fifo)
    t = threading.Thread(target=spawner, args=(outdir, fifo), name="spawner")
    t.start()
    t.join()


if __name__ == "__main__":
    main()
