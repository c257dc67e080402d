"""A target for the aliasing test: a periodic job, as a training loop is.

Usage: periodic.py PERIOD_MS OUTDIR

Runs on CPython 3.7 to 3.15, so it keeps to 3.7 syntax and the stdlib.

The main thread (the only one) runs steps of exactly PERIOD_MS on the
monotonic clock, from a fixed origin: each step is busy() for its first
third (a pure-Python loop until a third of the period has passed), then
asleep until the step's end, an absolute boundary, so lateness does not
accumulate and the steps stay on one grid however long it runs.  A sampler
whose instants are on a grid of the same period (or a divisor of it) sees
the same phase of every step: busy always or never.

It measures itself with time.perf_counter(): busy_s, the time spent
inside busy() since the start, and wall_s, the time since the start, both
from the same origin; late_s, how late its steps began in all (a sleep
ends late by the timer slack and, on a loaded machine, the wait for a CPU:
a sampler woken as late samples late too); and overruns, the steps that
began only after they should have ended (the job was off its grid).  The
share busy_s / wall_s is what a wall-clock profile (--idle) of the thread
must give busy().  OUTDIR/truth.json comes after the first ten steps, then
about every 0.1 s (pid, nthreads: 1, period_ms, busy_s, wall_s, steps,
overruns, late_s), written in a step's sleep, outside busy(), to a
temporary name and renamed, so a reader never sees half of one.
"""
import json
import os
import sys
import time

clock = time.perf_counter


def busy(until):
    x = 0
    while clock() < until:
        x += 1
    return x


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        json.dump(data, out)
        out.write("\n")
    os.rename(tmp, path)


def run_steps(period, outdir):
    origin = clock()
    busy_s = late_s = 0.0
    steps = overruns = 0
    next_write = origin + 0.1
    k = 0
    while True:
        start = origin + k * period
        began = clock()
        if began >= start + period:
            # Asleep past the whole step (a starved machine): skip to the
            # step under way, and say so.
            overruns += 1
            k = int((began - origin) / period)
            continue
        late_s += began - start
        busy(start + period / 3)
        busy_s += clock() - began
        steps += 1
        k += 1
        now = clock()
        if now >= next_write and steps >= 10:
            write_atomically(os.path.join(outdir, "truth.json"), {
                "pid": os.getpid(), "nthreads": 1, "period_ms": period * 1000,
                "busy_s": busy_s, "wall_s": now - origin,
                "steps": steps, "overruns": overruns, "late_s": late_s,
            })
            next_write = now + 0.1
        left = origin + k * period - clock()
        if left > 0:
            time.sleep(left)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: periodic.py PERIOD_MS OUTDIR\n")
        sys.exit(2)
    run_steps(float(sys.argv[1]) / 1000, sys.argv[2])


if __name__ == "__main__":
    main()
