"""The target of bench/native_shares: a main thread whose time is split
between C code and sleep, timed by its own clock, beside threads that spin
and wait.

Usage: native_shares_target.py OUTDIR [C_MS [NAP_MS]]    (6 and 4)

The main thread repeats: in_c() (zlib.crc32 over a buffer sized for C_MS
in one call, so the whole call is one C frame), then nap()
(time.sleep(NAP_MS), and the GIL back from "spin" after it: up to
the 5 ms switch interval); each turn appends "T0 T1 T2" to OUTDIR/turns
(CLOCK_MONOTONIC ns: in_c from T0 to T1, nap from T1 to T2).  Beside it,
thread "spin" loops in Python and four threads wait on an Event.

OUTDIR/ready.json once all run: {"main": TID}.  Ends when OUTDIR/stop
appears.
"""
import json
import os
import sys
import threading
import time
import zlib


def in_c(buf):
    return zlib.crc32(buf)


def nap(seconds):
    time.sleep(seconds)


def spin(stop):
    n = 0
    while not stop.is_set():
        n += 1


def sized_buffer(ms):
    """A buffer that zlib.crc32 takes about ms milliseconds over."""
    n = 1 << 20
    while True:
        buf = bytes(n)
        zlib.crc32(buf)         # its pages faulted in first, not timed
        t = time.perf_counter()
        zlib.crc32(buf)
        took = time.perf_counter() - t
        if took >= 0.002:
            return bytes(max(1, int(n * ms / 1000.0 / took)))
        n *= 2


def main():
    out = sys.argv[1]
    c_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    nap_s = (float(sys.argv[3]) if len(sys.argv) > 3 else 4.0) / 1000.0
    buf = sized_buffer(c_ms)
    stop, never = threading.Event(), threading.Event()
    threads = [threading.Thread(target=spin, args=(stop,), name="spin", daemon=True)]
    threads += [threading.Thread(target=never.wait, name="wait%d" % i, daemon=True)
                for i in range(4)]
    for t in threads:
        t.start()
    with open(os.path.join(out, "ready.json.tmp"), "w") as f:
        json.dump({"main": threading.get_native_id()}, f)
    os.rename(os.path.join(out, "ready.json.tmp"), os.path.join(out, "ready.json"))
    stop_file = os.path.join(out, "stop")
    with open(os.path.join(out, "turns"), "w") as log:
        turns = 0
        while True:
            t0 = time.monotonic_ns()
            in_c(buf)
            t1 = time.monotonic_ns()
            nap(nap_s)
            t2 = time.monotonic_ns()
            log.write("%d %d %d\n" % (t0, t1, t2))
            turns += 1
            if turns % 50 == 0:
                log.flush()
                if os.path.exists(stop_file):
                    break
    stop.set()


main()
