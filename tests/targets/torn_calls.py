"""A target for the torn-stack test: two busy threads whose stacks change at
very different speeds.

Usage: torn_calls.py OUTDIR

Runs on CPython 3.7 to 3.15, so it keeps to 3.7 syntax and the stdlib.

Thread "caller" loops calling small functions from two call sites each
(caller() -> f() -> g() -> h()): its innermost frame and the instruction
offsets of the frames below it change every few tens of nanoseconds, so a stack read
while it runs is torn most of the time.  Thread "spinner" counts in one
frame and never tears.  Both are pure Python and take turns at the GIL, so
each is running about half the time whatever the machine does.  A profiler
that drops torn stacks under-reports the caller; one that reads them again
gives each thread its share of the CPU.

Each thread keeps its own CPU clock (time.thread_time()) since it started in
cpu[name], updated every few hundred microseconds.  The main thread writes
OUTDIR/ready.json (pid) once both run, then OUTDIR/truth.json about every
0.05 s until killed: pid, cpu {caller, spinner} in seconds, tids {caller,
spinner} (native thread ids, for the test's own look at the kernel's
accounts of them).  Files are written to a temporary name and renamed, so a
reader never sees half of one.
"""
import json
import os
import sys
import threading
import time

thread_time = time.thread_time
cpu = {}
tids = {}


def native_id():
    get = getattr(threading, "get_native_id", None)     # 3.8+
    if get is not None:
        return get()
    import ctypes
    return ctypes.CDLL(None).syscall(186)    # gettid, x86_64 (3.7 only)


def h(x):
    return x + 1


def g(x):
    x = h(x)
    return h(x)


def f(x):
    x = g(x)
    return g(x)


def caller():
    tids["caller"] = native_id()
    start = thread_time()
    x = 0
    while True:
        for _ in range(50):
            x = f(x)
            x = f(x)
        cpu["caller"] = thread_time() - start


def spinner():
    tids["spinner"] = native_id()
    start = thread_time()
    x = 0
    while True:
        for _ in range(2000):
            x += 1
        cpu["spinner"] = thread_time() - start


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        json.dump(data, out, indent=1)
        out.write("\n")
    os.rename(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: torn_calls.py OUTDIR\n")
        sys.exit(2)
    outdir = sys.argv[1]
    # Turns of 20 ms at the GIL rather than 5: each hand-over leaves the
    # thread taking it runnable but not running for a while on a loaded
    # machine; fewer hand-overs, less of that noise.
    sys.setswitchinterval(0.02)
    for fn in (caller, spinner):
        threading.Thread(name=fn.__name__, target=fn, daemon=True).start()
    while len(cpu) < 2:
        time.sleep(0.01)
    write_atomically(os.path.join(outdir, "ready.json"), {"pid": os.getpid()})
    while True:
        write_atomically(os.path.join(outdir, "truth.json"), {
            "pid": os.getpid(),
            "cpu": dict(cpu),
            "tids": dict(tids),
        })
        time.sleep(0.05)


if __name__ == "__main__":
    main()
