"""A target for record on a free-threaded build: 8 threads computing at once.

Usage: ft_parallel.py [--threads N] [--duration S] OUTDIR

Threads "w1" .. "wN" (default 8) each run rounds of work() for i units of
their OWN thread CPU clock (time.thread_time()), i = 1..N, then sleep one
unit (5 ms): on a build without a GIL they compute in parallel, each
taking its own share of the CPU the machine gives, and the shares differ
(w8 wants eight times w1's CPU).  The main thread only waits.  After S
seconds (default 4) of wall time each thread stops, reads its own
thread_time() and the main thread writes OUTDIR/truth.json: pid,
gil (sys._is_gil_enabled(), True before 3.13), cpu {name: seconds},
each thread's own clock from its start to its end, and wall {name:
seconds}, the wall time (time.monotonic()) it spent in work(): where the
machine kept a thread waiting for a CPU while it computed, its two shares
differ, and the waiting is what /proc shows as running.

Runs on CPython 3.7 and newer (3.7 syntax, the stdlib only).
"""
import json
import os
import sys
import threading
import time

UNIT = 0.005


def work(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def worker(i, stop_at, cpu, wall):
    start = time.thread_time()
    busy = 0.0
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        work(i * UNIT)
        busy += time.monotonic() - t0
        time.sleep(UNIT)
    cpu[threading.current_thread().name] = time.thread_time() - start
    wall[threading.current_thread().name] = busy


def main():
    args = sys.argv[1:]
    n, duration = 8, 4.0
    while len(args) > 1 and args[0].startswith("--"):
        if args[0] == "--threads":
            n = int(args[1])
        elif args[0] == "--duration":
            duration = float(args[1])
        else:
            sys.exit("ft_parallel.py: unknown option " + args[0])
        args = args[2:]
    if len(args) != 1:
        sys.exit(__doc__)
    outdir = args[0]
    cpu, wall = {}, {}
    stop_at = time.monotonic() + duration
    threads = [threading.Thread(target=worker, name="w%d" % i, args=(i, stop_at, cpu, wall))
               for i in range(1, n + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "gil": gil, "cpu": cpu, "wall": wall}, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))


if __name__ == "__main__":
    main()
