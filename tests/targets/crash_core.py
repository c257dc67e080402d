# -*- coding: utf-8 -*-
"""A target for the core tests that crashes itself in C.

Usage: crash_core.py OUTDIR

Runs on CPython 3.7 to 3.15 (3.7 syntax, stdlib only).  Two threads park on
an Event (parked_outer() -> parked_inner()); the main thread, in
crasher() -> crash_here(), reads address 0x10 through ctypes.string_at(),
which dies of SIGSEGV in C.  Before it does, it writes OUTDIR/truth.json
(tmp + rename) with what it sees itself:

  pid, tid (the main thread's native id, null before 3.8), ident,
  fault_address (0x10), threads: [{ident, name, frames}] for the parked
  threads, crash_frames: the main thread's frames from crash_here()
  outwards (the ctypes frames inside it are not listed: which ones there are
  is the ctypes module's business), frames innermost first as
  {function, file, line}, function being co_qualname on 3.11+ and co_name
  before, as pystrobe reports it.

It chdir()s to OUTDIR first, so a kernel core written to the working
directory (core_pattern "core" or "core.%p") lands there.
"""
import ctypes
import json
import os
import sys
import threading
import time

FAULT_ADDRESS = 0x10
ev = threading.Event()
parked = []


def fname(code):
    return getattr(code, "co_qualname", code.co_name)


def frames_of(frame):
    out = []
    while frame is not None:
        out.append({"function": fname(frame.f_code),
                    "file": frame.f_code.co_filename,
                    "line": frame.f_lineno})
        frame = frame.f_back
    return out


def parked_inner(arrived):
    arrived.set()
    ev.wait()


def parked_outer(arrived):
    parked_inner(arrived)


def write_truth(outdir, crash_frames):
    me = threading.current_thread()
    current = sys._current_frames()
    data = {
        "pid": os.getpid(),
        "tid": getattr(me, "native_id", None),
        "ident": me.ident,
        "fault_address": FAULT_ADDRESS,
        "threads": [{"ident": t.ident, "name": t.name,
                     "frames": frames_of(current[t.ident])} for t in parked],
        "crash_frames": crash_frames,
    }
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.rename(tmp, os.path.join(outdir, "truth.json"))


def crash_here(outdir):
    here = frames_of(sys._getframe())
    here[0]["line"] += 3  # the string_at() call, three lines down
    write_truth(outdir, here)
    ctypes.string_at(FAULT_ADDRESS, 8)


def crasher(outdir):
    crash_here(outdir)


def main():
    outdir = os.path.abspath(sys.argv[1])
    os.chdir(outdir)
    for i in range(2):
        arrived = threading.Event()
        t = threading.Thread(target=parked_outer, args=(arrived,),
                             name="parked-%d" % i)
        t.start()
        arrived.wait(60)
        parked.append(t)
    time.sleep(0.3)  # past Event.set(), into ev.wait()
    crasher(outdir)


main()
