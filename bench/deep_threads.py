"""Benchmark target: N threads, each spinning at the bottom of a D-deep
stack of Python calls (or with "idle", waiting there).  Prints its own CPU time on exit, so the slowdown a
profiler causes can be measured from the target's side."""
import sys
import threading
import time


def recurse(depth, stop, idle=False):
    if depth > 1:
        return recurse(depth - 1, stop, idle)
    if idle:
        stop.wait()
        return 0
    x = 0
    while not stop.is_set():
        for _ in range(1000):
            x += 1
    return x


def main():
    nthreads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 5
    # "idle": the threads wait at the bottom, their stacks never change.
    idle = len(sys.argv) > 4 and sys.argv[4] == "idle"
    stop = threading.Event()
    threads = [threading.Thread(target=recurse, args=(depth, stop, idle))
               for _ in range(nthreads)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    print("cpu %.3f" % time.process_time())


if __name__ == "__main__":
    main()
