"""Hold a --subprocesses profile or dump against what workers.py wrote.

Usage:
  check_workers.py record MODE RATE PROFILE TRUTH   (collapsed, one root per process)
  check_workers.py group MODE RATE PROFILE TRUTH    (collapsed, --group-processes)
  check_workers.py dump MODE DUMP_JSON TRUTH

Prints what it found, and one line per failure; exits 1 on any failure.
The truth is the target's: its pids, its threads (sys._current_frames())
and the CPU each worker burnt by its own clock.
"""
import json
import re
import sys

# A worker gets at least this share of the samples its CPU time is worth, at
# the rate pystrobe sampled at (its summary's, which another job on the machine
# can hold below the one it asked for: check_subprocesses.c passes it).
# Samples of a runnable process count too, so on a busy machine it gets
# more, never fewer, except for the start (a walk is 50 ms apart) and the
# end of its life.
MIN_SHARE = 0.5
MIN_CPU = 0.1  # seconds: shorter lives are not judged

failures = []


def fail(msg):
    failures.append(msg)


def read_collapsed(path):
    stacks = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                fail("%s:%d: not a collapsed line: %r" % (path, n, line[:80]))
                continue
            stacks.append((stack.split(";"), int(count)))
    return stacks


def func_in(frames, func):
    prefix = func + " ("
    return any(fr.startswith(prefix) or fr == func for fr in frames)


def root_pid(root):
    m = re.match(r"process (\d+): ", root)
    return int(m.group(1)) if m else None


def judged(truth):
    return [p for p in truth["procs"] if p["cpu"] >= MIN_CPU]


def check_record(mode, rate, stacks, truth):
    by_pid = {}
    for frames, count in stacks:
        pid = root_pid(frames[0])
        if pid is None:
            fail("a stack not rooted in a process frame: %r" % ";".join(frames)[:120])
            continue
        by_pid.setdefault(pid, []).append((frames, count))
    print("roots: %d processes: %s" % (len(by_pid), sorted(by_pid)))
    pids = {p["pid"] for p in truth["procs"]}
    for p in judged(truth):
        mine = by_pid.get(p["pid"], [])
        n = sum(c for fr, c in mine if func_in(fr, p["func"]))
        want = MIN_SHARE * p["cpu"] * rate
        print("pid %d (%s): %d samples in %s, CPU %.2f s" % (p["pid"], p["role"], n, p["func"], p["cpu"]))
        if not mine:
            fail("no root for %s %d" % (p["role"], p["pid"]))
        elif n < want:
            fail("%s %d: %d samples in %s, want >= %.0f" % (p["role"], p["pid"], n, p["func"], want))
    # A worker's own function never shows under another process's root.
    for p in truth["procs"]:
        if p["role"] != "worker" or mode in ("pool", "recreate"):
            continue
        for pid, mine in by_pid.items():
            if pid != p["pid"] and any(func_in(fr, p["func"]) for fr, c in mine):
                fail("%s (worker %d) under the root of %d" % (p["func"], p["pid"], pid))
    # Roots other than the truth's processes must be their children
    # (resource tracker, forkserver): the pids exist below the main.
    extra = set(by_pid) - pids
    if extra:
        print("other processes sampled: %s" % sorted(extra))


def check_group(mode, rate, stacks, truth):
    roots = {}
    for frames, count in stacks:
        roots.setdefault(frames[0], []).append((frames, count))
    print("roots: %s" % [r[:60] for r in roots])
    main = truth["main"]
    workers = [p for p in judged(truth) if p["role"] == "worker"]
    funcs = {p["func"] for p in workers}
    holding = [r for r, mine in roots.items()
               if any(func_in(fr, f) for fr, c in mine for f in funcs)]
    if len(holding) != 1:
        fail("the workers' functions are under %d roots, want 1: %s" % (len(holding), holding))
        return
    root = holding[0]
    if not root.startswith("processes: "):
        fail("the workers' root is %r, want a 'processes: ' group" % root)
    for f in sorted(funcs):
        n = sum(c for fr, c in roots[root] if func_in(fr, f))
        cpu = sum(p["cpu"] for p in workers if p["func"] == f)
        print("group: %s %d samples, CPU %.2f s" % (f, n, cpu))
        if n < MIN_SHARE * cpu * rate:
            fail("group: %s has %d samples, want >= %.0f" % (f, n, MIN_SHARE * cpu * rate))
    if not any(root_pid(r) == main for r in roots):
        fail("no root of its own for the main process %d" % main)


def check_dump(mode, doc, truth):
    procs = doc.get("processes", [])
    order = [p["pid"] for p in procs]
    print("dump: processes %s" % order)
    if not order or order[0] != truth["main"]:
        fail("the first process is %r, want the main %d" % (order[:1], truth["main"]))
    index = {pid: i for i, pid in enumerate(order)}
    for p in procs:
        ppid = p.get("ppid")
        if p["pid"] != truth["main"] and ppid not in index:
            fail("process %d: its parent %r is not listed" % (p["pid"], ppid))
        elif ppid in index and index[ppid] > index[p["pid"]]:
            fail("process %d comes before its parent %d" % (p["pid"], ppid))
    for t in truth["procs"]:
        if t["pid"] not in index:
            fail("%s %d missing from the dump" % (t["role"], t["pid"]))
            continue
        got = procs[index[t["pid"]]]
        idents = sorted(th["ident"] for th in got["threads"])
        if idents != sorted(t["idents"]):
            fail("%s %d: threads %s, the process has %s" % (t["role"], t["pid"], idents, t["idents"]))
        if t["role"] == "worker" and got.get("ppid") != t["ppid"]:
            fail("%s %d: ppid %r, want %d" % (t["role"], t["pid"], got.get("ppid"), t["ppid"]))
        for th in got["threads"]:
            if th.get("error"):
                fail("%s %d thread %d: %s" % (t["role"], t["pid"], th["tid"], th["error"]))


def main():
    what, mode = sys.argv[1], sys.argv[2]
    with open(sys.argv[-1]) as f:
        truth = json.load(f)
    if what == "dump":
        with open(sys.argv[3]) as f:
            check_dump(mode, json.load(f), truth)
    else:
        rate = float(sys.argv[3])
        stacks = read_collapsed(sys.argv[4])
        (check_record if what == "record" else check_group)(mode, rate, stacks, truth)
    for msg in failures:
        print("FAIL: " + msg)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
