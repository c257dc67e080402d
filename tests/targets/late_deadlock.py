# -*- coding: utf-8 -*-
"""A job that works for a while, then deadlocks: `pystrobe watch` must
report it --stall seconds after it stopped, however long it worked
(issue 39: after 20 s of work it came 34 s late, after 60 s 161 s late,
"since" the job's start).

Usage: late_deadlock.py WORK_SECONDS OUTDIR

Threads "left" and "right" work for WORK_SECONDS in one loop of a few
lines: a computation of about CRUNCH_S, then a sleep of NAP_S (two threads
sharing the GIL, each on a CPU about 6% of the time: the kind of loop
the watch sees in the same few stacks round after round, and never a
spin; and little load, so that many run side by side).  Then each takes one lock, waits until the other holds its own,
and blocks for good acquiring the other's.  MainThread joins them.

Each notes time.time() just before it blocks; the second to do so writes
OUTDIR/onset.json (tmp + rename), then blocks:

  onset_unix   the later of the two: when the job stopped
  work_s       WORK_SECONDS
  pid          this process
  version      sys.version_info[:3]

The worker threads are daemons: SIGINT (the watch ending its command)
ends the process.  No target outlives a test that died: SIGALRM ends it.
"""
import json
import os
import sys
import threading
import time

CRUNCH_S = 0.03
NAP_S = 0.5


def native_id():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)     # SYS_gettid on x86-64


def crunch_size():
    """Iterations of the loop's line that take about CRUNCH_S of CPU here
    (CPU time: on a loaded machine the wall clock says less)."""
    n = 1000
    while True:
        t = time.thread_time()
        x = 1
        for i in range(n): x = (x * 31 + i) % 1000003       # noqa: E701
        took = time.thread_time() - t
        if took >= 0.005 or n > 1 << 26:
            return max(1, int(n * CRUNCH_S / max(took, 1e-6)))
        n *= 4


def work(end, n):
    """Until end: the computation (one line), then the nap (another)."""
    x = 1
    while time.time() < end:
        for i in range(n): x = (x * 31 + i) % 1000003       # noqa: E701
        time.sleep(NAP_S)
    return x


class Job(object):
    def __init__(self, outdir, work_s):
        self.outdir = outdir
        self.work_s = work_s
        self.both_hold = threading.Barrier(2)
        self.lock = threading.Lock()
        self.stopped = []
        self.tids = {}

    def stop_here(self):
        """Note when this thread stops; the second writes onset.json."""
        now = time.time()
        with self.lock:
            self.stopped.append(now)
            last = len(self.stopped) == 2
        if last:
            data = {"onset_unix": max(self.stopped), "work_s": self.work_s,
                    "pid": os.getpid(), "tids": self.tids,
                    "version": list(sys.version_info[:3])}
            tmp = os.path.join(self.outdir, "onset.json.tmp")
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.rename(tmp, os.path.join(self.outdir, "onset.json"))

    def worker(self, first, second, end, n):
        self.tids[threading.current_thread().name] = native_id()
        work(end, n)
        first.acquire()
        self.both_hold.wait()
        self.stop_here()
        second.acquire()                # never returns: the other holds it


def main():
    work_s, outdir = float(sys.argv[1]), sys.argv[2]
    import signal
    signal.alarm(int(work_s) + 300)
    job = Job(outdir, work_s)
    n = crunch_size()
    end = time.time() + work_s
    a, b = threading.Lock(), threading.Lock()
    threads = [threading.Thread(target=job.worker, args=(a, b, end, n), name="left"),
               threading.Thread(target=job.worker, args=(b, a, end, n), name="right")]
    for t in threads:
        t.daemon = True
        t.start()
    for t in threads:
        t.join()


main()
