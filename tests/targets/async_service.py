# -*- coding: utf-8 -*-
"""A target for `pystrobe dump --async`: an asyncio service with named tasks
in a known await graph, which writes what it sees of itself.

Usage: async_service.py [--churn|--many=N|--uvloop|--pytasks] OUTDIR

CPython 3.11+ (TaskGroup).  The tasks, once settled:

  main          the asyncio.run() task, in `async with TaskGroup()`
  worker-0..2   tasks of main's TaskGroup: work() -> step() -> Event.wait()
  gatherer      awaits asyncio.gather(gather-a, gather-b)
  gather-a, -b  leaf() -> Event.wait()
  event-waiter  waits on an Event directly
  dl-a, dl-b    deadlocked: each awaits the other task
  lock-a, -b    deadlocked on locks: each holds one asyncio.Lock and
                waits to acquire the other's
  churn         (--churn) starts a short-lived `ephemeral-N` task every
                millisecond or so, forever: tasks end while they are read
  many-N        (--many=N) N more tasks, each in leaf() -> Event.wait()
  spinner       (--churn) started once truth.json is written, so not in
                it: spin() -> busy(), a pure-Python loop 50 ms at a time,
                so that a dump mostly finds it the running task

--uvloop runs it all on uvloop's event loop (uvloop.run) instead.

With --pytasks the C accelerator is kept out (sys.modules['_asyncio'] =
None before asyncio is imported): every task and future is the
pure-Python one (asyncio.tasks._PyTask).

When they are all parked, a reporter task writes OUTDIR/truth.json (tmp +
rename) and ends:
  pid, nthreads, version [major, minor], tasks: [{address (id()), name,
  state, frames: [{function, file, line}] innermost first (the task's
  coroutine, then what it awaits through cr_await, gi_yieldfrom for a
  generator, while that is a coroutine or a generator), awaited_by:
  [addresses], waiting_in}].  awaited_by on 3.14+: the tasks in the
  _asyncio_awaited_by that asyncio.capture_call_graph() reads, futures such
  as gather's resolved to the tasks that await them.  Before 3.14 nothing
  records it, and it is derived from the awaiting side, from the tasks'
  own objects: a task awaits the task its _fut_waiter is, or, where that
  is a gather's future, the tasks among its _children (nested gathers
  too); the task that entered a TaskGroup (its _parent_task) awaits the
  tasks in its _tasks.
  waiting_in: {type, address (id()), locked (Lock only)} of the object
  whose waiting method (Lock.acquire, Event.wait, Queue.get...) is the
  innermost coroutine, its `self`; or null.
Every task but the reporter is listed; ephemeral ones (which come and go)
are not.
"""
import sys
if "--pytasks" in sys.argv:
    sys.modules["_asyncio"] = None  # before asyncio: pure-Python tasks
import asyncio
import json
import os
import sys
import threading
import time


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


GROUPS = []  # the TaskGroups main entered


def coro_frames(coro):
    """The await chain of a suspended coroutine, innermost first."""
    out = []
    seen = 0
    while coro is not None and seen < 256 and (hasattr(coro, "cr_frame")
                                                or hasattr(coro, "gi_frame")):
        f = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if f is None:
            break
        out.append({"function": qualname(f.f_code), "file": f.f_code.co_filename,
                    "line": f.f_lineno})
        coro = getattr(coro, "cr_await", None) if hasattr(coro, "cr_frame") else \
            getattr(coro, "gi_yieldfrom", None)
        seen += 1
    out.reverse()
    return out


def awaiting_tasks(fut, depth=0):
    """The tasks awaiting fut, through plain futures (gather's)."""
    found = []
    for w in fut._asyncio_awaited_by or ():
        if isinstance(w, asyncio.Task):
            found.append(id(w))
        elif depth < 8:
            found.extend(awaiting_tasks(w, depth + 1))
    return found


def gathered(fut, depth=0):
    """The tasks a gather future gathers, through nested gathers."""
    found = []
    for c in getattr(fut, "_children", None) or ():
        if isinstance(c, asyncio.Task):
            found.append(c)
        elif depth < 8:
            found.extend(gathered(c, depth + 1))
    return found


def derived_awaited_by(tasks):
    """Before 3.14: who awaits whom, from the awaiting side."""
    by = {id(t): set() for t in tasks}
    for t in tasks:
        w = t._fut_waiter
        for x in [w] if isinstance(w, asyncio.Task) else gathered(w):
            by.setdefault(id(x), set()).add(id(t))
    for tg in GROUPS:
        for x in tg._tasks:
            if tg._parent_task is not None:
                by.setdefault(id(x), set()).add(id(tg._parent_task))
    return by


def awaited_by(task, derived):
    """What asyncio.capture_call_graph() reports as awaited_by, read from
    the same field it reads (it recurses forever on a deadlock cycle);
    before 3.14, derived."""
    if not hasattr(task, "_asyncio_awaited_by"):
        return sorted(derived.get(id(task), ()))
    return sorted(set(awaiting_tasks(task)))


def waiting_in(task):
    """The synchronization object the task waits in, as the task's own
    innermost coroutine frame holds it."""
    coro, inner = task.get_coro(), None
    for _ in range(256):
        if coro is None or not hasattr(coro, "cr_frame") or coro.cr_frame is None:
            break
        inner, coro = coro, coro.cr_await
    if inner is None:
        return None
    fname = inner.cr_code.co_filename.replace(os.sep, "/")
    if not fname.endswith(("asyncio/locks.py", "asyncio/queues.py")):
        return None
    obj = inner.cr_frame.f_locals.get("self")
    if obj is None:
        return None
    out = {"type": "asyncio." + type(obj).__name__, "address": id(obj)}
    if isinstance(obj, asyncio.Lock):
        out["locked"] = obj.locked()
    return out


def describe(task, derived):
    return {"address": id(task), "name": task.get_name(),
            "state": "done" if task.done() else "pending",
            "frames": coro_frames(task.get_coro()),
            "awaited_by": awaited_by(task, derived),
            "waiting_in": waiting_in(task)}


async def step(ev):
    await ev.wait()


async def work(ev):
    await step(ev)


async def leaf(ev):
    await ev.wait()


async def gatherer(a, b):
    await asyncio.gather(a, b)


async def waiter(ev):
    await ev.wait()


async def deadlocked(other):
    while not other:
        await asyncio.sleep(0)
    await other[0]


async def lock_pair(mine, theirs, both_held):
    async with mine:
        both_held.append(1)
        while len(both_held) < 2:
            await asyncio.sleep(0)
        async with theirs:
            pass


async def ephemeral():
    await asyncio.sleep(0)


async def churn():
    n = 0
    while True:
        asyncio.get_running_loop().create_task(ephemeral(), name="ephemeral-%d" % n)
        n += 1
        await asyncio.sleep(0.001)


def busy():
    t = time.monotonic()
    while time.monotonic() - t < 0.05:
        pass


async def spin():
    while True:
        busy()
        await asyncio.sleep(0.005)


async def report(outdir, me, churning):
    await asyncio.sleep(0.5)
    every = list(asyncio.all_tasks())
    derived = derived_awaited_by(every)
    tasks = [t for t in every
             if t is not me and not t.get_name().startswith("ephemeral-")]
    truth = {"pid": os.getpid(), "nthreads": threading.active_count(),
             "version": list(sys.version_info[:2]),
             "pytasks": type(me).__module__ != "_asyncio",
             "tasks": [describe(t, derived) for t in tasks]}
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f, indent=1)
    os.rename(tmp, os.path.join(outdir, "truth.json"))
    if churning:
        asyncio.get_running_loop().create_task(spin(), name="spinner")


async def main(outdir, churning, many):
    asyncio.current_task().set_name("main")
    ev = asyncio.Event()
    loop = asyncio.get_running_loop()
    ga = loop.create_task(leaf(ev), name="gather-a")
    gb = loop.create_task(leaf(ev), name="gather-b")
    loop.create_task(gatherer(ga, gb), name="gatherer")
    loop.create_task(waiter(ev), name="event-waiter")
    a_holder, b_holder = [], []
    a_holder.append(loop.create_task(deadlocked(b_holder), name="dl-a"))
    b_holder.append(loop.create_task(deadlocked(a_holder), name="dl-b"))
    la, lb, held = asyncio.Lock(), asyncio.Lock(), []
    loop.create_task(lock_pair(la, lb, held), name="lock-a")
    loop.create_task(lock_pair(lb, la, held), name="lock-b")
    for i in range(many):
        loop.create_task(leaf(ev), name="many-%d" % i)
    if churning:
        loop.create_task(churn(), name="churn")
    async with asyncio.TaskGroup() as tg:
        GROUPS.append(tg)
        for i in range(3):
            tg.create_task(work(ev), name="worker-%d" % i)
        # Not awaited: main's own stack stays what it is after the
        # reporter has gone.
        loop.create_task(report_self(outdir, churning), name="reporter")
        await ev.wait()


async def report_self(outdir, churning):
    try:
        await report(outdir, asyncio.current_task(), churning)
    except BaseException:
        import traceback
        traceback.print_exc()
        raise


def parse(argv):
    churning, many, uv = False, 0, False
    args = [a for a in argv[1:] if a != "--pytasks"]
    if args and args[0] == "--churn":
        churning, args = True, args[1:]
    elif args and args[0].startswith("--many="):
        many, args = int(args[0][7:]), args[1:]
    elif args and args[0] == "--uvloop":
        uv, args = True, args[1:]
    return args[0], churning, many, uv


if __name__ == "__main__":
    outdir, churning, many, uv = parse(sys.argv)
    if uv:
        import uvloop
        uvloop.run(main(outdir, churning, many))
    else:
        asyncio.run(main(outdir, churning, many))
