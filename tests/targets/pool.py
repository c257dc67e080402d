# -*- coding: utf-8 -*-
"""A target for `pystrobe dump --group`: a pool of identical workers and
a few others.

Usage: pool.py [--fork] OUTDIR

Threads: 16 workers parked in worker() on the same line, 3 in stage_a(),
2 in stage_b() (time.sleep), and MainThread in main_park().  With --fork
the process first forks a child that does the same, so that
`dump -s --group` sees each group in two processes.

When all are parked a reporter thread takes sys._current_frames() until
two looks agree, groups the threads by their stacks (function, file, line
of every frame), writes OUTDIR/truth.json and exits (it is not part of
what the test dumps).  truth.json: pid, nthreads (of this process), and
groups: [{"stack": [...], "members": [[pid, ident, name], ...]}], with the
child's threads in them when there is one.  Runs on 3.7 to 3.15.
"""
import json
import os
import sys
import threading
import time

forever = threading.Event()
arrivals = []


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


def stack_of(frame):
    out = []
    while frame is not None:
        out.append([code_name(frame.f_code), frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return out


def worker(arrived):
    arrived.set()
    forever.wait()


def stage_a(arrived):
    arrived.set()
    forever.wait()


def stage_b(arrived):
    arrived.set()
    while True:
        time.sleep(3600)


def start(fn, name):
    ev = threading.Event()
    arrivals.append(ev)
    threading.Thread(target=fn, name=name, args=(ev,), daemon=True).start()


def look(parked):
    current = sys._current_frames()
    return dict((t.ident, stack_of(current.get(t.ident))) for t in parked)


def groups_now():
    me = threading.current_thread()
    parked = [t for t in threading.enumerate() if t is not me]
    last = look(parked)
    for _ in range(100):
        time.sleep(0.1)
        now = look(parked)
        if now == last:
            break
        last = now
    names = dict((t.ident, t.name) for t in parked)
    groups = {}
    for ident, stack in now.items():
        groups.setdefault(json.dumps(stack), []).append([os.getpid(), ident, names[ident]])
    return len(parked), groups


def write(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


def reporter(outdir, child):
    for ev in arrivals:
        ev.wait(60)
    time.sleep(0.3)
    nthreads, groups = groups_now()
    if child is None:
        write(os.path.join(outdir, "truth-child.json"), {"groups": groups})
        return
    if child:
        path = os.path.join(outdir, "truth-child.json")
        for _ in range(600):
            if os.path.exists(path):
                break
            time.sleep(0.1)
        for key, members in json.load(open(path))["groups"].items():
            groups.setdefault(key, []).extend(members)
    write(os.path.join(outdir, "truth.json"), {
        "pid": os.getpid(), "nthreads": nthreads,
        "groups": sorted([{"stack": json.loads(k), "members": m} for k, m in groups.items()],
                         key=lambda g: -len(g["members"]))})


def main_park(parent):
    while True:
        time.sleep(0.5)
        # A child whose parent is gone (the test killed it) goes too.
        if parent and os.getppid() != parent:
            os._exit(0)


def main():
    outdir = sys.argv[-1]
    child = 0
    parent = 0
    if "--fork" in sys.argv:
        parent = os.getpid()
        child = os.fork()
        if child == 0:
            child = None
        else:
            parent = 0
    for i in range(16):
        start(worker, "worker-%d" % i)
    for i in range(3):
        start(stage_a, "a-%d" % i)
    for i in range(2):
        start(stage_b, "b-%d" % i)
    threading.Thread(target=reporter, args=(outdir, child), daemon=True).start()
    main_park(parent)


main()
