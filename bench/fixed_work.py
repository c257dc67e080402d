"""Benchmark target: N threads each run a fixed amount of pure-Python work at
the bottom of a D-deep stack, then the process prints its wall and CPU
time.  Running it with and without a profiler attached gives the slowdown
the profiler causes, measured by the target itself."""
import os
import sys
import threading
import time


def recurse(depth, work):
    if depth > 1:
        return recurse(depth - 1, work)
    x = 0
    for _ in range(work):
        x += 1
    return x


def main():
    nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    work = int(sys.argv[3]) if len(sys.argv) > 3 else 5000000
    ready = sys.argv[4] if len(sys.argv) > 4 else None
    if ready:
        open(ready, "w").close()
        time.sleep(0.5)       # let the profiler attach
    t0, c0 = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=recurse, args=(depth, work)) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("wall %.3f cpu %.3f" % (time.perf_counter() - t0, time.process_time() - c0))


if __name__ == "__main__":
    main()
