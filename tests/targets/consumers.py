"""A target for tests/live/check_consumers.c: recursion of varying depth,
so that consecutive samples leave and re-enter the same function.

Usage: consumers.py SECONDS OUTDIR

Before it starts, it writes OUTDIR/truth.txt: the stacks it will spin in,
one a line, function names outermost first joined by ';', each taken from its own frames
(sys._getframe) at the place it spins.  Then it spins in spin() under
rec() at depths 1 to 5 in turn, a few milliseconds each, for SECONDS, while
a thread "sleeper" sleeps (for --idle).  Runs on CPython 3.7 and later.
"""
import os
import sys
import threading
import time

stacks = []


def names_here():
    """Function names of the caller's stack, outermost first."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        out.append(f.f_code.co_name)
        f = f.f_back
    return out[::-1]


def spin(until, probe):
    if probe:
        stacks.append(names_here())
        return
    while time.perf_counter() < until:
        pass


def rec(n, until, probe):
    if n == 0:
        spin(until, probe)
        return
    rec(n - 1, until, probe)


def sleeper():
    while True:
        time.sleep(0.05)


def main():
    seconds, outdir = float(sys.argv[1]), sys.argv[2]
    for depth in range(1, 6):
        rec(depth, 0, True)
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        f.write("".join(";".join(s) + "\n" for s in stacks))
    os.rename(tmp, os.path.join(outdir, "truth.txt"))
    threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
    end = time.perf_counter() + seconds
    depth = 1
    while time.perf_counter() < end:
        rec(depth, time.perf_counter() + 0.007, False)
        depth = depth % 5 + 1


if __name__ == "__main__":
    main()
