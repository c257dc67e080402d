# -*- coding: utf-8 -*-
"""A target for the `pystrobe dump --native` tests: a thread parked deep in
native code called from Python, in one of two ways.

Usage: native_stack.py qsort OUTDIR
       native_stack.py ext LIBDIR LEVELS OUTDIR
       native_stack.py ctypes LIBDIR LEVELS OUTDIR

qsort   caller() hands libc's qsort a Python comparison function, compare(),
        which parks in time.sleep(): the stack is compare, qsort's frames,
        caller.
ext     py_level(n) calls strobe_ext.descend(n, py_level, fd) (LIBDIR holds
        the extension module built from strobe_ext.c), which calls
        py_level(n - 1), ... down to n == 0, where the C code parks in C++
        reading a pipe: LEVELS + 1 C levels and as many Python ones.
ctypes  the same through ctypes and LIBDIR/libstrobe_ext.so (built with
        -DSTROBE_CTYPES), for interpreters without headers.

The main thread does the parking.  A reporter thread waits until it is
about to park, gives it 0.3 s, writes OUTDIR/truth.json (tmp + rename) and
exits:

  pid, tid (the main thread's native id, null before 3.8), version [3, minor],
  python: the Python functions of the main thread, innermost first, as
  pystrobe names them (co_qualname on 3.11+, co_name before).

Keeps to Python 3.7 syntax and the standard library.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading
import time

parking = threading.Event()


def code_name(code):
    if sys.version_info >= (3, 11):
        return code.co_qualname
    return code.co_name


def python_names(frame):
    """The functions of frame and its callers, innermost first."""
    python = []
    while frame is not None:
        python.append(code_name(frame.f_code))
        frame = frame.f_back
    return python


def report(outdir, main):
    if not parking.wait(60):
        sys.stderr.write("native_stack.py: never parked\n")
        os._exit(3)
    time.sleep(0.3)
    python = python_names(sys._current_frames().get(main.ident))
    truth = {
        "pid": os.getpid(),
        "tid": getattr(main, "native_id", None),
        "version": [sys.version_info[0], sys.version_info[1]],
        "python": python,
    }
    path = os.path.join(outdir, "truth.json")
    with open(path + ".tmp", "w") as f:
        json.dump(truth, f)
    os.rename(path + ".tmp", path)


# --- qsort ---------------------------------------------------------------

CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    parking.set()
    while True:
        time.sleep(3600)
    return a[0] - b[0]


def caller():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    values = (ctypes.c_int * 4)(3, 1, 2, 0)
    libc.qsort(values, len(values), ctypes.sizeof(ctypes.c_int),
               CMPFUNC(compare))


# --- ext / ctypes ----------------------------------------------------------

class Descent(object):
    """descend(n, callback, fd) of the test library, as an extension module
    (mode ext) or through ctypes; callback is what the C code calls back
    (native_burn.py uses this too)."""
    def __init__(self, mode, libdir, callback):
        self.rfd, self.wfd = os.pipe()     # never written: park reads forever
        if mode == "ext":
            sys.path.insert(0, libdir)
            import strobe_ext
            self.descend = strobe_ext.descend
        else:
            lib = ctypes.CDLL(os.path.join(libdir, "libstrobe_ext.so"))
            cbtype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
            self.cb = cbtype(callback)
            entry = lib.strobe_entry
            entry.argtypes = [ctypes.c_int, cbtype, ctypes.c_int]
            entry.restype = ctypes.c_int
            self.descend = lambda n, _cb, fd: entry(n, self.cb, fd)


descent = None


def py_level(n):
    if n == 0:
        parking.set()
    descent.descend(n, py_level, descent.rfd)
    return 0


def main():
    global descent
    mode = sys.argv[1]
    outdir = sys.argv[-1]
    threading.Thread(target=report, args=(outdir, threading.current_thread()),
                     daemon=True).start()
    if mode == "qsort":
        caller()
    else:
        descent = Descent(mode, sys.argv[2], py_level)
        py_level(int(sys.argv[3]))


if __name__ == "__main__":
    main()
