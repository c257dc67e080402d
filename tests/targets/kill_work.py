# -*- coding: utf-8 -*-
"""A target for tests/live/check_kill.c: known work in several threads, which
must come out right however often the profiler watching it is killed.

Usage: kill_work.py THREADS OUTDIR

Each thread sorts small arrays again and again with libc's qsort through
ctypes, comparing in Python (mixed native and Python stacks), and checks
each result against sorted().  Once every thread runs, OUTDIR/truth.json
says {pid, nthreads}.  When OUTDIR/stop appears the threads finish their
round and OUTDIR/done.json says {rounds: per thread, wrong: rounds whose
result differed, ok}; the exit status is 0 only if every round was right
and every thread made progress.

Keeps to Python 3.7 syntax and the standard library.
"""
import ctypes
import ctypes.util
import json
import os
import random
import sys
import threading

CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_int))
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def compare(a, b):
    return (a[0] > b[0]) - (a[0] < b[0])


def one_round(rng, cmp):
    values = [rng.randrange(1000) for _ in range(32)]
    arr = (ctypes.c_int * len(values))(*values)
    libc.qsort(arr, len(values), ctypes.sizeof(ctypes.c_int), cmp)
    return list(arr) == sorted(values)


def worker(k, stop, rounds, wrong, started):
    rng = random.Random(k)
    cmp = CMPFUNC(compare)
    started.release()
    while not stop.is_set():
        if not one_round(rng, cmp):
            wrong[k] += 1
        rounds[k] += 1


def main():
    nthreads, outdir = int(sys.argv[1]), sys.argv[2]
    stop = threading.Event()
    started = threading.Semaphore(0)
    rounds, wrong = [0] * nthreads, [0] * nthreads
    threads = [threading.Thread(target=worker, args=(k, stop, rounds, wrong, started))
               for k in range(nthreads)]
    for t in threads:
        t.start()
    for _ in threads:
        started.acquire()
    path = os.path.join(outdir, "truth.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "nthreads": nthreads + 1}, f)
    os.rename(path + ".tmp", path)
    stop_file = os.path.join(outdir, "stop")
    while not os.path.exists(stop_file):
        stop.wait(0.05)
    stop.set()
    for t in threads:
        t.join()
    ok = sum(wrong) == 0 and all(r > 0 for r in rounds)
    path = os.path.join(outdir, "done.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"rounds": rounds, "wrong": wrong, "ok": ok}, f)
    os.rename(path + ".tmp", path)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
