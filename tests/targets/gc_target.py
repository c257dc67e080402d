# -*- coding: utf-8 -*-
"""A target for the garbage collector shown as <gc>: a thread that forces
collections of a large cyclic graph, and logs when each starts and ends.

Usage: gc_target.py OUTDIR

Automatic collection is off (gc.disable()), so the only collections are
the ones the "collector" thread forces: it builds a graph of N objects in
cycles (in build()), drops it and runs gc.collect() on it, again and
again.  N is chosen first so that one collection takes about half a
second here.  A gc.callbacks hook appends one line per phase to
OUTDIR/gc.log:

    start WALLCLOCK IDENT
    stop WALLCLOCK IDENT

(time.time() and threading.get_ident(), flushed at once).  The hook runs
inside the collection, so between a start line and its stop line the
interpreter's GC state says it is collecting: that is the ground truth the
test holds pystrobe's <gc> frame against.

OUTDIR/truth.json, written once N is chosen: pid, nthreads (2: MainThread,
parked in time.sleep, and the collector), collector_ident, n (objects per
graph), collect_s (how long the last calibration collection took).  Runs
on 3.7 to 3.15.
"""
import gc
import json
import os
import sys
import threading
import time

LOG = None
TARGET_S = 0.5
MAX_N = 1 << 22


class Node(object):
    __slots__ = ("a", "b")


def hook(phase, info):
    LOG.write("%s %.6f %d\n" % (phase, time.time(), threading.get_ident()))
    LOG.flush()


def build(n):
    nodes = [Node() for _ in range(n)]
    for i, x in enumerate(nodes):
        x.a = nodes[i - 1]
        x.b = nodes[(i * 7919) % n]
    return nodes


def collect_once(n):
    graph = build(n)
    del graph
    t = time.time()
    gc.collect()
    return time.time() - t


def calibrate():
    n = 50000
    took = collect_once(n)
    while took < TARGET_S and n < MAX_N:
        n = min(MAX_N, int(n * max(1.5, min(4.0, TARGET_S / max(took, 1e-3)))))
        took = collect_once(n)
    return n, took


def collector(outdir, ready):
    n, took = calibrate()
    truth = {"pid": os.getpid(), "nthreads": 2, "collector_ident": threading.get_ident(),
             "n": n, "collect_s": took}
    tmp = os.path.join(outdir, "truth.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))
    while True:
        collect_once(n)


def main():
    global LOG
    outdir = sys.argv[-1]
    gc.disable()
    LOG = open(os.path.join(outdir, "gc.log"), "a")
    gc.callbacks.append(hook)
    threading.Thread(target=collector, name="collector", args=(outdir, None),
                     daemon=True).start()
    while True:
        time.sleep(3600)


main()
