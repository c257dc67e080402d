"""A target that never imports threading: its main thread has no name in
any threading module, yet Python would call it MainThread.

Usage: no_threading.py OUTDIR

Writes OUTDIR/truth.json (tmp + rename) with pid, nthreads (1) and
threading (whether the module is loaded after all, which would make the
test moot), then spins in spin() until killed.  Only os, sys and time are
used (none of them loads threading).  Runs on CPython 3.7 to 3.15.
"""
import os
import sys
import time


def spin():
    while True:
        time.time()


def main():
    out = sys.argv[1]
    loaded = "threading" in sys.modules
    text = '{"pid": %d, "nthreads": 1, "threading": %s}\n' % (
        os.getpid(), "true" if loaded else "false")
    tmp = os.path.join(out, "truth.json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, text.encode())
    os.close(fd)
    os.rename(tmp, os.path.join(out, "truth.json"))
    spin()


main()
