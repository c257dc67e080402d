"""A target for the --subprocesses tests: a main process and its workers.

Usage: workers.py MODE [options] OUTDIR

Runs on CPython 3.7 to 3.14, so it keeps to 3.7 syntax and the stdlib.

MODE is how the workers are made:
  fork, spawn, forkserver   4 multiprocessing.Process workers, started with
                            that method; worker i burns in hot0() .. hot3()
  pool                      multiprocessing.Pool(4) (fork), 8 tasks of
                            pool_hot()
  recreate                  3 epochs of 4 fresh fork workers each, the way a
                            DataLoader without persistent workers does;
                            every worker burns in epoch_hot()
The main process burns in main_hot() while its workers work.

Options:
  --cpu S     CPU seconds each worker (or task) burns, by its own thread
              clock (default 0.6)
  --park      instead of burning, every process parks (sleeps) once it has
              reported, until killed: for dump

OUTDIR/truth.json, written (tmp + rename) when the work is done, or with
--park when every process has reported: {"main": pid, "procs": [{pid, ppid,
role, idents, cpu, func}]}: idents are the threading idents of every thread
of that process (its own sys._current_frames()), cpu the CPU seconds it
burnt in func.
"""
import json
import multiprocessing as mp
import os
import sys
import threading
import time

thread_time = time.thread_time


# Each function spins in its own body, so it is the leaf of its samples
# and leads top's table by its own time.  They are made from one template
# (with this file as their file name) rather than written out seven times.
_SPIN = """
def {name}(cpu):
    end = thread_time() + cpu
    x = 0
    while thread_time() < end:
        x += 1
    return x
"""
for _name in ("hot0", "hot1", "hot2", "hot3", "epoch_hot", "main_hot", "pool_hot"):
    exec(compile(_SPIN.format(name=_name), __file__, "exec"))

HOT = ["hot0", "hot1", "hot2", "hot3"]


def report(q, role, func, cpu_used):
    # The queue's feeder thread starts with the first put: send a hello
    # first, so the idents below include it.
    q.put(None)
    time.sleep(0.05)
    q.put({"pid": os.getpid(), "ppid": os.getppid(), "role": role,
           "idents": sorted(sys._current_frames().keys()),
           "cpu": cpu_used, "func": func})


def die_with_parent():
    # A worker must not outlive a test that ended its main process.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass


def worker(i, q, cpu, park, role, fname):
    die_with_parent()
    func = globals()[fname]
    t0 = thread_time()
    if not park:
        func(cpu)
    report(q, role, fname, thread_time() - t0)
    if park:
        while True:
            time.sleep(3600)


def pool_task(cpu):
    t0 = thread_time()
    pool_hot(cpu)  # noqa: F821 (made from _SPIN)
    return os.getpid(), thread_time() - t0


def collect(q, n):
    out = []
    while len(out) < n:
        item = q.get(timeout=120)
        if item is not None:
            out.append(item)
    return out


def write_truth(outdir, procs):
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"main": os.getpid(), "procs": procs}, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))


def run_processes(method, cpu, park, epochs):
    ctx = mp.get_context(method)
    q = ctx.Queue()
    procs, main_cpu = [], 0.0
    for epoch in range(epochs):
        ws = []
        for i in range(4):
            fname = "epoch_hot" if epochs > 1 else HOT[i]
            ws.append(ctx.Process(target=worker, name="worker%d" % i,
                                  args=(i, q, cpu, park, "worker", fname)))
        for w in ws:
            w.start()
        if not park:
            t0 = thread_time()
            main_hot(cpu / 2)  # noqa: F821
            main_cpu += thread_time() - t0
        procs += collect(q, 4)
        if not park:
            for w in ws:
                w.join()
    return procs, main_cpu


def run_pool(cpu, park):
    ctx = mp.get_context("fork")
    procs = {}
    with ctx.Pool(4) as pool:
        res = pool.map_async(pool_task, [cpu] * 8, chunksize=1)
        t0 = thread_time()
        main_hot(cpu / 2)  # noqa: F821
        main_cpu = thread_time() - t0
        for pid, used in res.get(timeout=120):
            p = procs.setdefault(pid, {"pid": pid, "ppid": os.getpid(), "role": "worker",
                                       "idents": [], "cpu": 0.0, "func": "pool_hot"})
            p["cpu"] += used
    return list(procs.values()), main_cpu


def main():
    args = sys.argv[1:]
    mode, outdir = args[0], args[-1]
    cpu = float(args[args.index("--cpu") + 1]) if "--cpu" in args else 0.6
    park = "--park" in args
    if mode == "pool":
        procs, main_cpu = run_pool(cpu, park)
    elif mode == "recreate":
        procs, main_cpu = run_processes("fork", cpu, park, 3)
    else:
        procs, main_cpu = run_processes(mode, cpu, park, 1)
    procs.insert(0, {"pid": os.getpid(), "ppid": os.getppid(), "role": "main",
                     "idents": sorted(sys._current_frames().keys()),
                     "cpu": main_cpu, "func": "main_hot"})
    write_truth(outdir, procs)
    while park:
        time.sleep(3600)


if __name__ == "__main__":
    main()
