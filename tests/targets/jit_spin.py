# -*- coding: utf-8 -*-
"""A target whose main thread spends its time in JIT code: machine code in
an anonymous executable mapping, with no unwind table, as oneDNN's kernels
under PyTorch are.  For `record --native` (tests/live/check_native.c).

Usage: jit_spin.py OUTDIR

The code, written here into an anonymous mmap and called through ctypes
from caller(), saves rbp, uses it as a scratch register (zero), counts a
register down and returns: no frame pointer to follow, no table to read,
so a native unwind ends after its first frame, below ctypes' frames and
every interpreter call.  caller() calls it in a loop until killed.

Once the loop runs, OUTDIR/truth.json says (tmp + rename):

  pid, version [3, minor],
  python: the Python functions of the main thread, innermost first, as
  pystrobe names them (co_qualname on 3.11+, co_name before), read from
  the thread's own frames (sys._current_frames) while it is in the code.

When executable anonymous memory cannot be had (a kernel or policy that
forbids it), truth.json says {"skip": reason} instead.

Keeps to Python 3.7 syntax and the standard library.
"""
import ctypes
import json
import mmap
import os
import struct
import sys
import threading
import time

from native_stack import python_names     # beside this file

# push rbp; xor ebp, ebp; mov rax, COUNT; 1: dec rax; jne 1b; pop rbp; ret
COUNT = 20000000


def code_bytes():
    return (b"\x55\x31\xed\x48\xb8" + struct.pack("<Q", COUNT) +
            b"\x48\xff\xc8\x75\xfb\x5d\xc3")


def write_truth(outdir, truth):
    path = os.path.join(outdir, "truth.json")
    with open(path + ".tmp", "w") as f:
        json.dump(truth, f)
    os.rename(path + ".tmp", path)


def make_spin():
    """The code as a ctypes function, and the mapping that holds it."""
    prot = mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC
    # Private, as a JIT's: no file name in the maps (a shared one reads
    # "/dev/zero (deleted)").
    buf = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=prot)
    buf.write(code_bytes())
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return ctypes.CFUNCTYPE(None)(addr), buf


def report(outdir, main, running):
    running.wait()
    time.sleep(0.2)
    python = python_names(sys._current_frames().get(main.ident))
    write_truth(outdir, {"pid": os.getpid(),
                         "version": [sys.version_info[0], sys.version_info[1]],
                         "python": python})


def caller(spin, running):
    running.set()
    while True:
        spin()


def outer(spin, running):
    caller(spin, running)


def main():
    outdir = sys.argv[1]
    try:
        spin, buf = make_spin()
    except (OSError, ValueError, TypeError) as e:
        write_truth(outdir, {"skip": "no executable anonymous memory: %s" % e})
        time.sleep(60)
        return
    running = threading.Event()
    threading.Thread(target=report, args=(outdir, threading.current_thread(), running),
                     daemon=True).start()
    outer(spin, running)


if __name__ == "__main__":
    main()
