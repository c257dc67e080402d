"""Benchmark target for --subprocesses.

  workers.py steady N SECONDS        a main and N fork workers, each spinning
                                     20 calls deep for SECONDS
  workers.py fresh N INTERVAL OUT    a new fork worker every INTERVAL seconds,
                                     N in all, each spinning 0.3 s; OUT gets
                                     "pid start_unix_s" per worker, the time
                                     taken as the worker's first act

Workers spin rather than sleep: every process is walked in every round,
the most a round can cost.
"""
import multiprocessing as mp
import os
import sys
import time


def recurse(depth, seconds):
    if depth > 1:
        return recurse(depth - 1, seconds)
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for _ in range(1000):
            x += 1
    return x


def fresh_worker(seconds, q):
    q.put((os.getpid(), time.time()))
    recurse(20, seconds)


def steady(n, seconds):
    ctx = mp.get_context("fork")
    ws = [ctx.Process(target=recurse, args=(20, seconds)) for _ in range(n)]
    for w in ws:
        w.start()
    recurse(20, seconds)
    for w in ws:
        w.join()


def fresh(n, interval, out):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    ws, starts = [], []
    for _ in range(n):
        w = ctx.Process(target=fresh_worker, args=(0.3, q))
        w.start()
        ws.append(w)
        time.sleep(interval)
    for _ in ws:
        starts.append(q.get())
    for w in ws:
        w.join()
    with open(out, "w") as f:
        for pid, t in starts:
            f.write("%d %.6f\n" % (pid, t))


if __name__ == "__main__":
    if sys.argv[1] == "steady":
        steady(int(sys.argv[2]), float(sys.argv[3]))
    else:
        fresh(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
