# -*- coding: utf-8 -*-
"""A job that computes, then blocks, in steps on a fixed grid: for
check_ontime (issue 39), whose samples must be on time on a busy machine.

Usage: ontime.py [WORKERS [STEP_MS [WORK_MS [SLOW_MS]]]] OUTDIR

Runs on CPython 3.7 and later (3.7 syntax, the stdlib only).

The launcher forks WORKERS processes (default 2).  Each takes steps of
STEP_MS (default 13) on one grid of absolute deadlines, all together:
burst() spins for WORK_MS (default 3; worker 0 SLOW_MS, default the same)
of its own CPU time (time.thread_time()), then block()
sleeps until the next step starts (a step that overran starts the next one
at the next boundary still ahead).  The moment a worker blocks, a CPU frees
up: a sampler that waits for a CPU gets one then, and its samples fall in
block() more often than its share of the time.

Each worker times block() and the rest of its loop (busy: burst() and its
bookkeeping) on the wall clock (perf_counter), back to back, and
rewrites OUTDIR/w<N>.json about every 0.2 s: pid, mono (time.monotonic(),
CLOCK_MONOTONIC), busy_s and blocked_s, the totals so far.  A test
subtracts two looks to get the shares of a window.  Once every worker has
written its first look, the launcher writes OUTDIR/ready.json: pid (its
own), workers (their pids).  Files are written to a temporary name and
renamed, so a reader never sees half of one.  Everything ends after
LIFETIME_S, or when the launcher gets SIGTERM.
"""
import json
import os
import signal
import sys
import time

LIFETIME_S = 600


def write_json(outdir, name, data):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, os.path.join(outdir, name))


def burst(work_s):
    end = time.thread_time() + work_s
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


def block(until):
    delay = until - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def worker(outdir, index, grid, step_s, work_s):
    busy = blocked = 0.0
    step = grid
    next_look = 0.0
    t0 = time.perf_counter()
    while True:
        burst(work_s)
        t1 = time.perf_counter()
        now = time.monotonic()
        step += step_s
        if step <= now:
            step += ((now - step) // step_s + 1) * step_s
        block(step)
        t2 = time.perf_counter()
        # Everything outside block() is busy, the bookkeeping included:
        # a sample anywhere else in the loop is one too.
        busy += t1 - t0
        blocked += t2 - t1
        t0 = t2
        if now >= next_look:
            next_look = now + 0.2
            write_json(outdir, "w%d.json" % index,
                       {"pid": os.getpid(), "mono": time.monotonic(),
                        "busy_s": busy, "blocked_s": blocked})


def main():
    outdir = sys.argv[-1]
    nums = [float(a) for a in sys.argv[1:-1]] + [2, 13, 3][len(sys.argv) - 2:]
    workers = int(nums[0])
    step_s = nums[1] / 1000
    work_s = nums[2] / 1000
    slow_s = nums[3] / 1000 if len(nums) > 3 else work_s
    grid = time.monotonic()
    pids = []
    for i in range(workers):
        pid = os.fork()
        if pid == 0:
            signal.alarm(LIFETIME_S)
            try:
                worker(outdir, i, grid, step_s, slow_s if i == 0 else work_s)
            finally:
                os._exit(0)
        pids.append(pid)

    def end(signo, frame):
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGALRM, end)
    signal.alarm(LIFETIME_S)
    names = ["w%d.json" % i for i in range(workers)]
    while not all(os.path.exists(os.path.join(outdir, n)) for n in names):
        time.sleep(0.05)
    write_json(outdir, "ready.json", {"pid": os.getpid(), "workers": pids})
    while True:
        os.wait()


if __name__ == "__main__":
    main()
