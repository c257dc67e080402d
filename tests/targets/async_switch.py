# -*- coding: utf-8 -*-
"""A target whose event loop switches tasks all the time (issue 30): a
non-blocking read of its tasks races the loop, and must never show a task
as running with any frames but its thread's.

Usage: async_switch.py [--pytasks] OUTDIR

CPython 3.11+.  The tasks:

  main          the asyncio.run() task, on an Event forever
  switch-0..7   `await asyncio.sleep(0)` in a loop: the loop switches
                task at every one of them
  holder        holds the loop 0.3 ms at a time (a pure-Python busy loop
                in hold()), then sleep(0): mostly the running task, and
                the one whose turns end while a dump reads it

Once they all run, OUTDIR/truth.json (tmp + rename) says pid, nthreads,
version and the names of the tasks (each task's coroutine is the function
its name starts with: switch, holder, main).  --pytasks keeps the C accelerator out
(pure-Python tasks, 3.11-3.13).
"""
import sys
if "--pytasks" in sys.argv:
    sys.modules["_asyncio"] = None  # before asyncio: pure-Python tasks
import asyncio
import json
import os
import threading
import time

SWITCHERS = 8
HOLD = 0.0003


async def switch():
    while True:
        await asyncio.sleep(0)


def hold():
    t = time.monotonic()
    while time.monotonic() - t < HOLD:
        pass


async def holder():
    while True:
        hold()
        await asyncio.sleep(0)


async def main(outdir):
    loop = asyncio.get_running_loop()
    asyncio.current_task().set_name("main")
    names = ["switch-%d" % i for i in range(SWITCHERS)]
    for name in names:
        loop.create_task(switch(), name=name)
    loop.create_task(holder(), name="holder")
    names += ["holder", "main"]
    await asyncio.sleep(0.2)
    truth = {"pid": os.getpid(), "nthreads": threading.active_count(),
             "version": list(sys.version_info[:2]), "tasks": names}
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main([a for a in sys.argv[1:] if a != "--pytasks"][0]))
