"""A target for record on a free-threaded build: 8 threads computing at once.

Usage: ft_parallel.py [--threads N] [--duration S] OUTDIR
       ft_parallel.py --park [--threads N] OUTDIR

Threads "w1" .. "wN" (default 8) each run rounds of work() for i units of
their OWN thread CPU clock (time.thread_time()), i = 1..N, then sleep one
unit (5 ms): on a build without a GIL they compute in parallel, each
taking its own share of the CPU the machine gives, and the shares differ
(w8 wants eight times w1's CPU).  The main thread only waits.  After S
seconds (default 4) of wall time each thread stops, reads its own
thread_time() and the main thread writes OUTDIR/truth.json: pid,
gil (sys._is_gil_enabled(), True before 3.13), cpu {name: seconds},
each thread's own clock from its start to its end, and wall {name:
seconds}, the wall time (time.monotonic()) it spent in work(): where the
machine kept a thread waiting for a CPU while it computed, its two shares
differ, and the waiting is what /proc shows as running.

With --park, for dump: threads "w1" .. "wN" spin in spin() for good, all
at once, and the main thread sleeps in park().  Once every worker is in
spin(), a reporter thread takes sys._current_frames() (the main thread's
stack until two looks agree), writes OUTDIR/truth.json as parked.py does
for tests/compare_dump.py: pid, version_string, argv, nthreads, threads
[{ident, tid, name, moving (the workers), gil (false without a GIL),
attached (the workers; null with a GIL), idle (the main thread), frames
innermost first, spin_lines}], and exits.

Runs on CPython 3.7 and newer (3.7 syntax, the stdlib only).
"""
import json
import os
import sys
import threading
import time

UNIT = 0.005


def work(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def worker(i, stop_at, cpu, wall):
    start = time.thread_time()
    busy = 0.0
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        work(i * UNIT)
        busy += time.monotonic() - t0
        time.sleep(UNIT)
    cpu[threading.current_thread().name] = time.thread_time() - start
    wall[threading.current_thread().name] = busy


def spin():
    x = 0
    while True:
        x += 1
        x -= 1


def park():
    while True:
        time.sleep(3600)


def code_name(code):
    return code.co_qualname if sys.version_info >= (3, 11) else code.co_name


def stack_of(frame):
    frames = []
    while frame is not None:
        frames.append({"function": code_name(frame.f_code),
                       "file": frame.f_code.co_filename, "line": frame.f_lineno})
        frame = frame.f_back
    return frames


def spin_lines():
    """The lines of spin()'s loop, where a worker may be found."""
    first = spin.__code__.co_firstlineno
    return [first + 2, first + 3, first + 4]


def report(outdir, threads, main):
    """Once every worker spins and the main thread's stack holds still:
    the target's own view of every thread, then this thread is gone."""
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    last = None
    for _ in range(600):
        time.sleep(0.05)
        now = sys._current_frames()
        stacks = dict((t.ident, stack_of(now.get(t.ident))) for t in threads + [main])
        spinning = all(stacks[t.ident][:1] and stacks[t.ident][0]["function"] == "spin"
                       for t in threads)
        if spinning and stacks[main.ident] == last:
            break
        last = stacks[main.ident]
    else:
        sys.exit("ft_parallel.py: the workers never all spun")
    out = []
    for t in threads + [main]:
        moving = t is not main
        out.append({"ident": t.ident, "tid": t.native_id, "name": t.name,
                    "moving": moving, "gil": False, "idle": not moving,
                    "attached": None if gil else moving,
                    "frames": stacks[t.ident], "spin_lines": spin_lines()})
    v = sys.version_info
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "version_string": "%d.%d.%d" % (v[0], v[1], v[2]),
                   "argv": sys.argv, "nthreads": len(threads) + 1, "gil": gil,
                   "threads": out}, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))


def park_main(n, outdir):
    threads = [threading.Thread(target=spin, name="w%d" % i, daemon=True)
               for i in range(1, n + 1)]
    for t in threads:
        t.start()
    threading.Thread(target=report, args=(outdir, threads, threading.main_thread()),
                     name="reporter", daemon=True).start()
    park()


def main():
    args = sys.argv[1:]
    n, duration, parked = 8, 4.0, False
    while len(args) > 1 and args[0] == "--park":
        parked = True
        args = args[1:]
    while len(args) > 1 and args[0].startswith("--"):
        if args[0] == "--threads":
            n = int(args[1])
        elif args[0] == "--duration":
            duration = float(args[1])
        else:
            sys.exit("ft_parallel.py: unknown option " + args[0])
        args = args[2:]
    if len(args) != 1:
        sys.exit(__doc__)
    outdir = args[0]
    if parked:
        park_main(n, outdir)
    cpu, wall = {}, {}
    stop_at = time.monotonic() + duration
    threads = [threading.Thread(target=worker, name="w%d" % i, args=(i, stop_at, cpu, wall))
               for i in range(1, n + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "gil": gil, "cpu": cpu, "wall": wall}, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))


if __name__ == "__main__":
    main()
