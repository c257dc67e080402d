"""A target for the `pystrobe record` tests: CPU burnt in a known split.

Usage: burn.py [options] OUTDIR

Runs on CPython 3.7 to 3.14, so it keeps to 3.7 syntax and the stdlib.

The main thread runs rounds of burn_a(), burn_b() and burn_c(), each
spinning for a slice of its OWN thread CPU clock (time.thread_time()) in the
ratio 6:3:1, so whatever else the machine is doing the split of the CPU the
target gets is 60/30/10.  Each call is timed with thread_time() (and the wall
clock, for diagnosis) and the totals are what truth.json reports: the test
holds the profile against what the target measured, not against the ratio it
was asked for.

The slices are 30, 15 and 5 ms of CPU by default.  Longer than a sampling
interval at 200 Hz, so that each slice gets a nearly fixed number of
samples: a profile of short slices is a coin toss per sample, and 600 coin
tosses give shares that wander by 2 points, too much for a 3-point test.
--slice-ms changes the unit (the time of burn_c).

Options:
  --duration S    burn for S seconds of wall time, then write truth.json and
                  exit (default 3)
  --forever       burn until killed; truth.json is rewritten about every
                  0.2 s with the totals so far (the test subtracts two looks)
  --exit N        exit with status N (after writing truth.json)
  --signal N      kill itself with signal N instead of exiting
  --busy-thread   also burn in a second thread, "busy2" (same rounds)
  --idle-thread   also start a thread "sleeper" that sleeps in idle_sleep()
  --slice-ms MS   the unit slice (default 5)

Once the extra threads have started and the main thread has burnt a few
rounds it writes OUTDIR/ready.json: pid, nthreads (OS threads) and threads:
[{name, tid}] (tid: the native id; on 3.7 from gettid(2), null if unknown).

truth.json: pid, rounds, cpu {a, b, c} and wall {a, b, c} in seconds (the
main thread's calls only), end_mono (time.monotonic() just before exiting,
the same clock as CLOCK_MONOTONIC), forever (bool).  Files are written to a
temporary name and renamed, so a reader never sees half of one.
"""
import json
import os
import signal
import sys
import threading
import time

thread_time = time.thread_time
monotonic = time.monotonic


def burn_a(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


def burn_b(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


def burn_c(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


class Totals(object):
    def __init__(self):
        self.rounds = 0
        self.cpu = {"a": 0.0, "b": 0.0, "c": 0.0}
        self.wall = {"a": 0.0, "b": 0.0, "c": 0.0}


def timed(totals, key, func, seconds):
    w0 = monotonic()
    c0 = thread_time()
    func(seconds)
    totals.cpu[key] += thread_time() - c0
    totals.wall[key] += monotonic() - w0


def one_round(totals, unit):
    timed(totals, "a", burn_a, 6 * unit)
    timed(totals, "b", burn_b, 3 * unit)
    timed(totals, "c", burn_c, 1 * unit)
    totals.rounds += 1


def busy_loop(unit):
    """The second busy thread: the same rounds, not counted."""
    totals = Totals()
    while True:
        one_round(totals, unit)


def idle_sleep():
    while True:
        time.sleep(3600)


def gettid():
    """The calling thread's native id: threading has it from 3.8."""
    get = getattr(threading, "get_native_id", None)
    if get is not None:
        return get()
    try:
        import ctypes
        import platform
        nr = {"x86_64": 186, "aarch64": 178, "i686": 224}.get(
            platform.machine())
        if nr is None:
            return None
        return ctypes.CDLL(None, use_errno=True).syscall(nr)
    except Exception:
        return None


def os_threads():
    """Threads of the process; a chroot may have no /proc, and then the
    threading module's count is the same number for this script."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.rename(tmp, path)


def write_truth(outdir, totals, forever):
    write_atomically(os.path.join(outdir, "truth.json"), {
        "pid": os.getpid(),
        "rounds": totals.rounds,
        "cpu": totals.cpu,
        "wall": totals.wall,
        "end_mono": monotonic(),
        "forever": forever,
    })


def start_thread(name, target, args, tids):
    started = threading.Event()

    def run():
        tids[name] = gettid()
        started.set()
        target(*args)

    threading.Thread(name=name, target=run, daemon=True).start()
    if not started.wait(60):
        sys.stderr.write("burn.py: thread %s never started\n" % name)
        os._exit(3)


def usage():
    sys.stderr.write("usage: burn.py [--duration S] [--forever] [--exit N] "
                     "[--signal N] [--busy-thread] [--idle-thread] "
                     "[--slice-ms MS] OUTDIR\n")
    sys.exit(2)


def parse(argv):
    opts = {"duration": 3.0, "forever": False, "exit": 0, "signal": 0,
            "busy": False, "idle": False, "unit": 0.005}
    args = list(argv)
    try:
        while len(args) > 1:
            a = args.pop(0)
            if a == "--duration":
                opts["duration"] = float(args.pop(0))
            elif a == "--forever":
                opts["forever"] = True
            elif a == "--exit":
                opts["exit"] = int(args.pop(0))
            elif a == "--signal":
                opts["signal"] = int(args.pop(0))
            elif a == "--busy-thread":
                opts["busy"] = True
            elif a == "--idle-thread":
                opts["idle"] = True
            elif a == "--slice-ms":
                opts["unit"] = float(args.pop(0)) / 1000.0
            else:
                usage()
    except (IndexError, ValueError):
        usage()
    if len(args) != 1:
        usage()
    opts["outdir"] = args[0]
    return opts


def main():
    o = parse(sys.argv[1:])
    outdir = o["outdir"]
    unit = o["unit"]
    tids = {"MainThread": gettid()}
    if o["busy"]:
        start_thread("busy2", busy_loop, (unit,), tids)
    if o["idle"]:
        start_thread("sleeper", idle_sleep, (), tids)

    totals = Totals()
    start = monotonic()
    # A few rounds first: "ready" means the profile from now on is the
    # steady state, not start-up.
    for _ in range(3):
        one_round(totals, unit)
    write_atomically(os.path.join(outdir, "ready.json"), {
        "pid": os.getpid(),
        "nthreads": os_threads(),
        "threads": [{"name": k, "tid": v} for k, v in sorted(tids.items())],
    })

    if o["forever"]:
        next_write = 0.0
        while True:
            one_round(totals, unit)
            now = monotonic()
            if now >= next_write:
                write_truth(outdir, totals, True)
                next_write = now + 0.2

    end = start + o["duration"]
    while monotonic() < end:
        one_round(totals, unit)
    write_truth(outdir, totals, False)
    sys.stdout.flush()
    sys.stderr.flush()
    if o["signal"]:
        signal.signal(o["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), o["signal"])
        time.sleep(10)
        os._exit(99)    # the signal did not kill us
    # os._exit: no interpreter teardown between end_mono and the exit
    # the test times.
    os._exit(o["exit"])


if __name__ == "__main__":
    main()
