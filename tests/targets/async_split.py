# -*- coding: utf-8 -*-
"""A target for `pystrobe record --async`: three tasks that share the CPU
60/30/10 by their own accounting.

Usage: async_split.py OUTDIR

CPython 3.11+.  Tasks "t60", "t30" and "t10" take turns on the event loop,
each burning 24, 12 and 4 ms of CPU (time.thread_time) in burn() per turn
on average (each turn a random 0.5 to 1.5 times that, so that the round
does not alias with the sampling rate), then yielding.  The turns are long
so that what a turn costs besides burn() (the await, the loop's step into
the task: counted in the task's samples, not in its account; most in the
debug builds) stays well under a point.  Each adds the CPU time it used to its own account, and
the wall time its turn took (time.monotonic: more than its CPU time when
another job on the machine takes the CPU from it mid-turn, which a
sampler sees as the task's time); every 0.2 s the accounts go to
OUTDIR/acct.json (tmp + rename): {"t": monotonic time, "cpu": {name:
seconds}, "wall": {name: seconds}}.  Once running, OUTDIR/truth.json says pid
and nthreads.  The test reads acct.json before and after a recording and
compares the shares it recorded with the difference.
"""
import asyncio
import json
import os
import random
import sys
import threading
import time


def burn(ms):
    end = time.thread_time() + ms / 1000.0
    while time.thread_time() < end:
        pass


async def worker(ms, acct, wall, name):
    while True:
        w0 = time.monotonic()
        t0 = time.thread_time()
        # Turns of random length: a fixed 10 ms round would alias with
        # a 100 Hz sampler and bias it.
        burn(ms * random.uniform(0.5, 1.5))
        acct[name] += time.thread_time() - t0
        wall[name] += time.monotonic() - w0
        await asyncio.sleep(0)


def write(outdir, name, data):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, os.path.join(outdir, name))


async def main(outdir):
    acct = {"t60": 0.0, "t30": 0.0, "t10": 0.0}
    wall = dict(acct)
    loop = asyncio.get_running_loop()
    for name, ms in (("t60", 24), ("t30", 12), ("t10", 4)):
        loop.create_task(worker(ms, acct, wall, name), name=name)
    write(outdir, "truth.json", {"pid": os.getpid(), "nthreads": threading.active_count()})
    while True:
        await asyncio.sleep(0.2)
        write(outdir, "acct.json", {"t": time.monotonic(), "cpu": dict(acct),
                                    "wall": dict(wall)})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
