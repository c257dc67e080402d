# -*- coding: utf-8 -*-
"""A target for the `pystrobe top` tests: one hot function, one cold one.

Usage: hot.py [options] [OUTDIR]

Runs on CPython 3.7 to 3.14, so it keeps to 3.7 syntax and the stdlib.

The main thread runs main() -> rounds of hot_loop(), cold_loop() and
odd_loop(), each spinning for a slice of its own thread CPU clock in the
ratio 17:2:1 (85%, 10% and 5% of what the main thread gets).

odd_loop's code object is renamed (3.8+) to ODD_NAME below: an escape
sequence, a bell, a C1 control, an accented letter and a double-width one,
which pystrobe must show escaped and aligned, never send to the terminal.

Options:
  --duration S    spin for S seconds, then exit (default: until killed)
  --exit N        exit with status N
  --thread        also start a thread "spinner" that spins in thread_spin()
                  for 2 ms of every 20 and sleeps the rest (idle)

With OUTDIR, OUTDIR/ready.json (pid) is written once the threads have
started and a few rounds have run.
"""
import json
import os
import sys
import threading
import time

thread_time = time.thread_time
UNIT = 0.002

# ESC [2J (clear screen), BEL, e acute, CJK "hot" (two columns), C1 CSI.
ODD_NAME = "odd\x1b[2J\x07\u00e9\u70ed\x9b"


def hot_loop(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


def cold_loop(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


def odd_loop(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x


def rename(func, name):
    code = func.__code__
    if not hasattr(code, "replace"):
        return
    if sys.version_info >= (3, 11):
        func.__code__ = code.replace(co_name=name, co_qualname=name)
    else:
        func.__code__ = code.replace(co_name=name)


def thread_spin():
    while True:
        end = thread_time() + 0.002
        while thread_time() < end:
            pass
        time.sleep(0.018)


def main(duration, outdir):
    start = time.monotonic()
    rounds = 0
    while duration is None or time.monotonic() - start < duration:
        hot_loop(17 * UNIT)
        cold_loop(2 * UNIT)
        odd_loop(1 * UNIT)
        rounds += 1
        if rounds == 3 and outdir:
            tmp = os.path.join(outdir, "ready.json.tmp")
            with open(tmp, "w") as f:
                json.dump({"pid": os.getpid()}, f)
            os.rename(tmp, os.path.join(outdir, "ready.json"))


def parse(argv):
    opts = {"duration": None, "exit": 0, "thread": False, "outdir": None}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--duration":
            opts["duration"] = float(args.pop(0))
        elif a == "--exit":
            opts["exit"] = int(args.pop(0))
        elif a == "--thread":
            opts["thread"] = True
        elif a.startswith("-") or opts["outdir"]:
            sys.stderr.write("usage: hot.py [--duration S] [--exit N] "
                             "[--thread] [OUTDIR]\n")
            sys.exit(2)
        else:
            opts["outdir"] = a
    return opts


o = parse(sys.argv[1:])
rename(odd_loop, ODD_NAME)
if o["thread"]:
    threading.Thread(name="spinner", target=thread_spin, daemon=True).start()
main(o["duration"], o["outdir"])
sys.stdout.flush()
os._exit(o["exit"])
