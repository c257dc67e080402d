# -*- coding: utf-8 -*-
"""A target for record --waits: an input pipeline of threads and a
queue.Queue, no torch.  Its main thread, the training loop, takes each batch
from a queue.Queue that a producer thread fills more slowly than the loop
uses it (2.5 times the loop's work on a batch), then works on the batch in
pure Python; a worker thread waits on
another queue.Queue for work that never comes.

  - the main thread's get is the loop waiting for data (<wait:data>);
  - the worker's get is a worker waiting for work: no <wait:data>;
  - the producer sleeps and builds batches.

Usage: waits_queue.py OUTDIR

OUTDIR/truth.json: pid, nthreads (3), get_line (the line of the main
thread's q.get() in this file), threading_file (threading's source, where
the worker's Condition.wait is), wait_def (the line Condition.wait starts
on).  OUTDIR/clock.json, rewritten about every 0.2 s: the wall clock and
the seconds the main thread spent so far in q.get() and in its work.
Runs on 3.7 to 3.15.
"""
import json
import os
import queue
import sys
import threading
import time


def write_atomically(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


def produce(q, pace):
    n = 0
    while True:
        time.sleep(pace[0])
        q.put(list(range(n % 7, n % 7 + 1000)))
        n += 1


def idle_worker(work):
    while True:
        job = work.get()
        job()


def work_on(batch):
    s = 0
    for _ in range(60):
        for x in batch:
            s += x * x
    return s


def next_batch(q, spent):
    t0 = time.time()
    batch = q.get()  # the main thread waits for data here
    spent["get"] += time.time() - t0
    return batch


def main():
    outdir = sys.argv[1]
    q = queue.Queue(maxsize=4)
    work = queue.Queue()
    # The producer takes 2.5 times as long as the loop's work on a batch,
    # on a fast interpreter or a debug build alike: the loop waits about
    # 60% of its time.
    pace = [0.03]
    for target, args in ((produce, (q, pace)), (idle_worker, (work,))):
        t = threading.Thread(target=target, args=args)
        t.daemon = True
        t.start()
    with open(__file__) as f:
        get_line = 1 + f.read().split("batch = q.get()")[0].count("\n")
    write_atomically(os.path.join(outdir, "truth.json"),
                     {"pid": os.getpid(), "nthreads": 3, "get_line": get_line,
                      "threading_file": threading.__file__,
                      "wait_def": threading.Condition.wait.__code__.co_firstlineno})
    spent = {"get": 0.0, "work": 0.0}
    written = 0.0
    while True:
        batch = next_batch(q, spent)
        t1 = time.time()
        work_on(batch)
        t2 = time.time()
        spent["work"] += t2 - t1
        pace[0] = max(0.005, 2.5 * (t2 - t1))
        if t2 - written >= 0.2:
            written = t2
            write_atomically(os.path.join(outdir, "clock.json"), dict(spent, wall=t2))


main()
