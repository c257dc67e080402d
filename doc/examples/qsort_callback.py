"""Python called from C called from Python: libc's qsort, through ctypes,
with a Python comparison function that sleeps.  The README's `--native`
example runs it.

    python3 doc/examples/qsort_callback.py
"""
import ctypes
import ctypes.util
import time

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    time.sleep(1)           # a slow comparison: where is the time?
    return a[0] - b[0]


def caller():
    values = (ctypes.c_int * 4)(3, 1, 4, 1)
    libc.qsort(values, len(values), ctypes.sizeof(ctypes.c_int), CMP(compare))


while True:
    caller()
