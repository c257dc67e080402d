# -*- coding: utf-8 -*-
"""A target for record --waits, with no torch: its main thread turns, in a
loop, between three things it times with its own clock:

  - work(): pure Python, running;
  - a line that holds ".item(": `x = v.item(0.03)`, where v.item is
    time.sleep, a C function that blocks with no Python frame of its own,
    as a tensor's .item() does while it waits for the GPU.  The line rule
    reads the line's text: this is that text, on a real blocking C call;
  - a get() with a timeout on an empty multiprocessing queue: the frame
    rule for a queue the input pipeline feeds (multiprocessing/queues.py).

Usage: waits_target.py OUTDIR

OUTDIR/truth.json: pid, nthreads (1), queue (false where the queue could
not be made: no /dev/shm in a chroot).  OUTDIR/clock.json, rewritten about
every 0.2 s: the wall clock and the seconds spent so far in each phase
(work, item, get), for the test to difference over its recording.
Runs on 3.7 to 3.15.
"""
import json
import os
import sys
import time


class Value(object):
    pass


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, path)


def work():
    s = 0
    for i in range(300000):
        s += i * i
    return s


def make_queue():
    try:
        import multiprocessing
        return multiprocessing.Queue()
    except (ImportError, OSError):
        return None


def main():
    outdir = sys.argv[1]
    v = Value()
    v.item = time.sleep
    q = make_queue()
    spent = {"work": 0.0, "item": 0.0, "get": 0.0}
    write_atomically(os.path.join(outdir, "truth.json"),
                     {"pid": os.getpid(), "nthreads": 1, "queue": q is not None})
    written = 0.0
    while True:
        t0 = time.time()
        work()
        t1 = time.time()
        x = v.item(0.03)
        t2 = time.time()
        if q is not None:
            try:
                q.get(timeout=0.03)
            except Exception:
                pass
        t3 = time.time()
        spent["work"] += t1 - t0
        spent["item"] += t2 - t1
        spent["get"] += t3 - t2
        if t3 - written >= 0.2:
            written = t3
            write_atomically(os.path.join(outdir, "clock.json"), dict(spent, wall=t3))


main()
