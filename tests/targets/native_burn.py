# -*- coding: utf-8 -*-
"""A CPU-bound target with mixed Python/C stacks, for `record --native`,
`top --native` (tests/live/check_native.c) and the benchmarks (bench/native).

Usage: native_burn.py MODE LIBDIR LEVELS THREADS ROUNDS OUTDIR

MODE is ext or ctypes, LIBDIR and LEVELS as for native_stack.py: each round
of a thread is py_level(LEVELS), which does a little Python work in
py_work() and calls strobe_descend() in C, which calls py_level(n - 1) ...
until at n == 0 the C code spins in strobe_spin() (without the GIL).  So
the stacks read, root first,

  worker, py_level, [C], strobe_descend, py_level, ..., strobe_descend, strobe_spin

or end in a py_work() of some level.  THREADS threads run ROUNDS rounds
each (0: until killed; -1: one round that parks at the bottom, in C++
reading a pipe nobody writes, as native_stack.py does: the same stacks,
blocked).  Once every thread runs, OUTDIR/truth.json says
{pid, threads: [native ids]}; at the end OUTDIR/done.json says
{rounds: per thread, seconds: wall time of the work}.

With ALARM_MS before OUTDIR (native_burn.py MODE LIBDIR LEVELS THREADS
ROUNDS ALARM_MS OUTDIR), the main thread takes a SIGALRM every ALARM_MS
(setitimer) from truth.json on, for ALARM_WINDOW seconds, timing each
handler call on its own clock, then writes OUTDIR/alarms0.json: {interval,
window, count, expected, median_gap, max_gap} (gaps between handler calls,
seconds); then the same again (the window a test records), alarms.json.  A profiler that held the signals back (a thread it keeps in a
ptrace stop) shows as gaps longer than the interval and fewer calls.

With SLEEPERS after ALARM_MS (0: no alarms), that many more threads
block for good on an Event, without a timeout, so that they never wake on
their own, and truth.json lists their native ids as "sleepers": the test
watches their voluntary context switches (/proc/PID/task/TID/status), of
which a ptrace stop costs at least one and a thread that never wakes has
none.

Keeps to Python 3.7 syntax and the standard library.
"""
import json
import os
import signal
import sys
import threading
import time

from native_stack import Descent     # beside this file

SPIN = -300         # strobe_spin(300): about a millisecond at the bottom


def write_json(outdir, name, data):
    path = os.path.join(outdir, name)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


descent = None


def py_work(n):
    x = 0
    for i in range(300):
        x += i * n
    return x


bottom = SPIN       # what the C code gets as fd: spin, or a pipe to park on


def py_level(n):
    py_work(n)
    descent.descend(n, py_level, bottom)
    return 0


def worker(levels, rounds, started, done, k):
    started.release()
    i = 0
    while rounds == 0 or i < rounds:
        py_level(levels)
        i += 1
    done[k] = i


ALARM_WINDOW = 3.0


def time_alarms(outdir, interval, name):
    """SIGALRM every interval s for ALARM_WINDOW s: OUTDIR/name."""
    calls = []
    signal.signal(signal.SIGALRM, lambda sig, frame: calls.append(time.monotonic()))
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, interval, interval)
    while time.monotonic() - t0 < ALARM_WINDOW:
        time.sleep(0.05)
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    gaps = sorted(b - a for a, b in zip([t0] + calls, calls))
    write_json(outdir, name, {
        "interval": interval, "window": ALARM_WINDOW, "count": len(calls),
        "expected": int(ALARM_WINDOW / interval),
        "median_gap": gaps[len(gaps) // 2] if gaps else 0,
        "max_gap": gaps[-1] if gaps else 0,
    })


def main():
    global descent, bottom
    mode, libdir, levels, nthreads, rounds = sys.argv[1:6]
    outdir = sys.argv[-1]
    alarm_ms = int(sys.argv[6]) if len(sys.argv) > 7 else 0
    nsleepers = int(sys.argv[7]) if len(sys.argv) > 8 else 0
    levels, nthreads, rounds = int(levels), int(nthreads), int(rounds)
    if rounds < 0:
        bottom, _ = os.pipe()
        rounds = 1
    descent = Descent(mode, libdir, py_level)
    started = threading.Semaphore(0)
    done = [0] * nthreads
    threads = [threading.Thread(target=worker, args=(levels, rounds, started, done, k),
                                name="burn-%d" % k)
               for k in range(nthreads)]
    t0 = time.time()
    for t in threads:
        t.start()
    for _ in threads:
        started.acquire()
    never = threading.Event()
    sleepers = [threading.Thread(target=never.wait, name="sleeper-%d" % k, daemon=True)
                for k in range(nsleepers)]
    for t in sleepers:
        t.start()
    write_json(outdir, "truth.json", {
        "pid": os.getpid(),
        "threads": [getattr(t, "native_id", None) for t in threads],
        "sleepers": [getattr(t, "native_id", None) for t in sleepers],
    })
    if alarm_ms:
        time_alarms(outdir, alarm_ms / 1000.0, "alarms0.json")
        time_alarms(outdir, alarm_ms / 1000.0, "alarms.json")
    for t in threads:
        t.join()
    write_json(outdir, "done.json", {"rounds": done, "seconds": time.time() - t0})


if __name__ == "__main__":
    main()
