"""Benchmark target for bench/peers: THREADS threads each spin at the
bottom of a DEPTH-deep stack of Python calls while the main thread sleeps,
and the process measures its own work rate, so that the slowdown a
profiler causes is seen from the target's side.

Usage: spin_target.py THREADS DEPTH SECONDS READYFILE

Once every thread spins, READYFILE gets the process id; the work of the
next SECONDS is then counted and printed as "work_per_s N" before exit.
Keeps to Python 3.7 syntax and the standard library.
"""
import os
import sys
import threading
import time


def spin(depth, slot, counts, stop):
    if depth > 1:
        return spin(depth - 1, slot, counts, stop)
    while not stop.is_set():
        x = 0
        for _ in range(200):
            x += 1
        counts[slot] += 200
    return counts[slot]


def main():
    nthreads, depth = int(sys.argv[1]), int(sys.argv[2])
    seconds, ready = float(sys.argv[3]), sys.argv[4]
    counts = [0] * nthreads
    stop = threading.Event()
    threads = [threading.Thread(target=spin, args=(depth, i, counts, stop))
               for i in range(nthreads)]
    for t in threads:
        t.start()
    while not all(counts):
        time.sleep(0.01)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(ready + ".tmp", ready)
    time.sleep(0.3)               # the profiler attaches meanwhile
    c0, t0 = sum(counts), time.perf_counter()
    time.sleep(seconds)
    c1, t1 = sum(counts), time.perf_counter()
    stop.set()
    for t in threads:
        t.join()
    print("work_per_s %.0f" % ((c1 - c0) / (t1 - t0)))


if __name__ == "__main__":
    main()
