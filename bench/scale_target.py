"""Benchmark target for bench/scale: many threads, most idle, and workers.

  scale_target.py THREADS POOL WORKERS LOG

One process of THREADS threads: the main thread, a torch intra-op pool of
POOL threads (torch.set_num_threads(POOL): POOL - 1 OpenMP threads beside
the main one, idle between its matrix products), a logger and idle Python
threads for the rest; and WORKERS forked worker processes doing pure
Python work.  Every unit of work is timed by the thread doing it, so the
target's slowdown under a profiler is its own clock's: the main thread
multiplies matrices on the pool (a unit), each worker sums a list (a unit),
each sleeping a fixed while between units so that the machine is not
saturated by the target alone.

LOG gets a line every 0.2 s: "MONOTONIC MAIN_UNITS MAIN_SECONDS
WORKER_UNITS WORKER_SECONDS", running totals, the first line once
everything runs.  SIGTERM ends it.
"""
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

import torch

MAIN_SLEEP = 0.010
WORKER_SLEEP = 0.020


def worker(i, totals, parent):
    data = list(range(20000))
    while os.getppid() == parent:       # not left behind by a killed target
        t = time.perf_counter()
        s = 0
        for x in data:
            s += x * x % 7
        d = time.perf_counter() - t
        totals[2 * i] += 1
        totals[2 * i + 1] += d
        time.sleep(WORKER_SLEEP)


def idle(stop):
    stop.wait()


def logger(path, main, totals, nworkers, stop):
    with open(path, "w") as f:
        while not stop.wait(0.2):
            wn = sum(totals[2 * i] for i in range(nworkers))
            ws = sum(totals[2 * i + 1] for i in range(nworkers))
            n, secs = main[0]
            f.write("%.6f %d %.6f %d %.6f\n" % (time.monotonic(), n, secs, wn, ws))
            f.flush()


def main():
    nthreads, pool, nworkers, log = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    totals = mp.Array("d", 2 * nworkers, lock=False)
    ctx = mp.get_context("fork")
    # Forked before the OpenMP pool exists: the workers never touch it.
    procs = [ctx.Process(target=worker, args=(i, totals, os.getpid()), daemon=True) for i in range(nworkers)]
    for p in procs:
        p.start()
    torch.set_num_threads(pool)
    a = torch.randn(384, 384)
    a @ a                       # the pool starts
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # main + pool - 1 OpenMP threads + the logger + idle ones = nthreads.
    for _ in range(max(0, nthreads - pool - 1)):
        threading.Thread(target=idle, args=(stop,), daemon=True).start()
    main_totals = [(0, 0.0)]    # one tuple: the logger reads both at once
    threading.Thread(target=logger, args=(log, main_totals, totals, nworkers, stop),
                     daemon=True).start()
    while not stop.is_set():
        t = time.perf_counter()
        for _ in range(4):
            a @ a
        n, secs = main_totals[0]
        main_totals[0] = (n + 1, secs + time.perf_counter() - t)
        time.sleep(MAIN_SLEEP)
    for p in procs:
        p.terminate()


if __name__ == "__main__":
    main()
