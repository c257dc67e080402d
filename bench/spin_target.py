"""Benchmark target for bench/peers: THREADS threads each spin at the
bottom of a DEPTH-deep stack of Python calls while the main thread sleeps,
and the process measures its own work rate, so that the slowdown a
profiler causes is seen from the target's side.

Usage: spin_target.py THREADS DEPTH SECONDS READYFILE [LOGFILE]

Once every thread spins, READYFILE gets the process id; the work of the
next SECONDS is then counted and printed as "work_per_s N" before exit.
With LOGFILE (bench/slowdown), the main thread also writes there, every
20 ms, its CLOCK_MONOTONIC time in ns and the work done so far, so that
any window of the run can be measured afterwards.
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


def log_work(counts, seconds, logfile):
    end = time.monotonic() + seconds
    with open(logfile, "w") as log:
        while time.monotonic() < end:
            log.write("%d %d\n" % (time.monotonic_ns(), sum(counts)))
            log.flush()
            time.sleep(0.02)


def main():
    nthreads, depth = int(sys.argv[1]), int(sys.argv[2])
    seconds, ready = float(sys.argv[3]), sys.argv[4]
    logfile = sys.argv[5] if len(sys.argv) > 5 else None
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
    if logfile:
        log_work(counts, seconds, logfile)
        rate = None
    else:
        time.sleep(0.3)           # the profiler attaches meanwhile
        c0, t0 = sum(counts), time.perf_counter()
        time.sleep(seconds)
        rate = (sum(counts) - c0) / (time.perf_counter() - t0)
    stop.set()
    for t in threads:
        t.join()
    if rate is not None:
        print("work_per_s %.0f" % rate)


if __name__ == "__main__":
    main()
