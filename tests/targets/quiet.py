"""Target for check_quiet: a thread that sleeps in nap_long() (time.sleep)
and then in nap_short() (select.select), in turn, while another spins in
Python and so holds the GIL nearly all the time.  The sleeper's stack
changes only when it wakes, and it must take the GIL to wake: a profiler
that keeps the stack of a thread that has not taken the GIL since must see
each change all the same.  The two naps wait in different C functions, so
that a native stack kept from before a change shows as one of the other.

    quiet.py SECONDS OUTDIR

OUTDIR/ready once both threads run; at the end OUTDIR/naps.txt lists each
nap the sleeper took, by its own clock (time.monotonic(), which is
CLOCK_MONOTONIC): "long|short START END" a line, and OUTDIR/done appears.
Keeps to Python 3.7 syntax.
"""
import os
import select
import sys
import threading
import time


def nap_long(naps):
    t0 = time.monotonic()
    time.sleep(0.03)
    naps.append(("long", t0, time.monotonic()))


def nap_short(naps):
    t0 = time.monotonic()
    select.select([], [], [], 0.01)
    naps.append(("short", t0, time.monotonic()))


def sleeper(stop, naps):
    while not stop.is_set():
        nap_long(naps)
        nap_short(naps)


def spinner(stop):
    x = 0
    while not stop.is_set():
        x += 1


def main():
    seconds, out = float(sys.argv[1]), sys.argv[-1]
    naps = []
    stop = threading.Event()
    threads = [threading.Thread(target=sleeper, args=(stop, naps)),
               threading.Thread(target=spinner, args=(stop,))]
    for t in threads:
        t.start()
    open(os.path.join(out, "ready"), "w").close()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    with open(os.path.join(out, "naps.txt"), "w") as f:
        f.write("".join("%s %.6f %.6f\n" % n for n in naps))
    open(os.path.join(out, "done"), "w").close()


if __name__ == "__main__":
    main()
