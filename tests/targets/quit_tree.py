"""A target for tests/live/check_quit.c: a multiprocessing pool that keeps
working until it is stopped.

Usage: quit_tree.py METHOD [--read] OUTDIR

METHOD is the start method of a Pool(3): fork or forkserver.  Once the
pool has run a first batch of tasks, OUTDIR/ready.json (tmp + rename)
holds {"main": pid, "workers": [pid...], "forkserver": pid or null}: every
process of the tree as the program itself knows it.  Then it maps batches
for ever.  On a Ctrl-C (KeyboardInterrupt, or a pool error when its workers
died of the same SIGINT first) the pool is ended by
its own `with` block, and OUTDIR/cleaned is written: the proof that
Python's cleanup ran.  With --read it first writes OUTDIR/asking and reads
a line from standard input (a terminal), into OUTDIR/read.txt.  Runs on CPython 3.7 to 3.15 (3.7 syntax, stdlib).
"""
import json
import multiprocessing as mp
import os
import sys
import time


def task(x):
    end = time.time() + 0.02
    while time.time() < end:
        pass
    return x


def forkserver_pid():
    try:
        from multiprocessing import forkserver
        return forkserver._forkserver._forkserver_pid
    except (ImportError, AttributeError):
        return None


def write_json(outdir, name, obj):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, os.path.join(outdir, name))


def main():
    method, outdir = sys.argv[1], sys.argv[-1]
    if "--read" in sys.argv:
        open(os.path.join(outdir, "asking"), "w").close()
        line = sys.stdin.readline()
        with open(os.path.join(outdir, "read.txt"), "w") as f:
            f.write(line)
    ctx = mp.get_context(method)
    try:
        with ctx.Pool(3) as pool:
            pool.map(task, range(6))
            write_json(outdir, "ready.json", {
                "main": os.getpid(),
                "workers": [p.pid for p in pool._pool],
                "forkserver": forkserver_pid() if method == "forkserver" else None,
            })
            while True:
                pool.map(task, range(6))
    finally:
        # Reached on any exception, not only KeyboardInterrupt: with the
        # whole group interrupted, a forkserver pool's own workers may die
        # first and the main process then sees a pool error instead.  What
        # matters is that Python's cleanup ran (SIGTERM and SIGKILL skip it).
        with open(os.path.join(outdir, "cleaned"), "w") as f:
            f.write("pool ended by its with block\n")


if __name__ == "__main__":
    main()
