"""Target for check_quiet: a thread that sleeps in nap_long() and then in
nap_short(), in turn, while another spins in Python and so holds the GIL
nearly all the time.  The sleeper's stack changes only when it wakes, and it
must take the GIL to wake: a profiler that keeps the stack of a thread that
has not taken the GIL since must see each change all the same.

    quiet.py SECONDS OUTDIR

OUTDIR/ready once both threads run; at the end OUTDIR/done holds the
sleeper's own wall time in each function, by its own clock:
"LONG_S SHORT_S".  Keeps to Python 3.7 syntax.
"""
import os
import sys
import threading
import time


def nap_long(acc):
    t0 = time.perf_counter()
    time.sleep(0.03)
    acc[0] += time.perf_counter() - t0


def nap_short(acc):
    t0 = time.perf_counter()
    time.sleep(0.01)
    acc[1] += time.perf_counter() - t0


def sleeper(stop, acc):
    while not stop.is_set():
        nap_long(acc)
        nap_short(acc)


def spinner(stop):
    x = 0
    while not stop.is_set():
        x += 1


def main():
    seconds, out = float(sys.argv[1]), sys.argv[-1]
    acc = [0.0, 0.0]
    stop = threading.Event()
    threads = [threading.Thread(target=sleeper, args=(stop, acc)),
               threading.Thread(target=spinner, args=(stop,))]
    for t in threads:
        t.start()
    open(os.path.join(out, "ready"), "w").close()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    with open(os.path.join(out, "done.tmp"), "w") as f:
        f.write("%.6f %.6f\n" % (acc[0], acc[1]))
    os.rename(os.path.join(out, "done.tmp"), os.path.join(out, "done"))


if __name__ == "__main__":
    main()
