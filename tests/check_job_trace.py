"""Check the Chrome trace of `pystrobe record --slurm -f chrometrace` of the
light-rank job against the ranks' own logs, for tests/live/check_slurm.c.

Usage: check_job_trace.py TRACE LOGDIR RANKS

LOGDIR holds each rank's log, rank-<r>.json (tests/targets/slurm_light_rank.py:
its node, pid and the function it sits in), and rank-<r>.clock, the rank's
own wall clock (time.time()) each time it was sent SIGUSR2: the test marks
every rank before the recording and after it.  The ground truth is theirs.

Checks: the file is a Chrome trace of "X" and "M" events with whole ids and
times, every slice on a named process and thread; one process track per
rank, no other, named "rank R on NODE (pid PID)" as its log says; its main
thread (tid = its pid) named MainThread; its slices only <module>, main and
the function its log names, nested in that order, never overlapping
partly (time only moves forward on a thread); at least a second of them
in its function; every slice, placed on the wall clock by the trace's
start_unix_ns, within the rank's two marks.  Prints a line a rank; exits 1
with the reasons on a failure.
"""
import json
import os
import sys

# Rounding to microseconds, and a wall clock slewed by NTP over seconds.
SLACK_S = 0.005
MIN_IN_FN_S = 1.0

failures = []


def fail(msg):
    failures.append(msg)


def load(path):
    with open(path) as f:
        return json.load(f)


def check_events(events):
    """Every event well formed; the names of processes and threads."""
    procs, threads = {}, {}
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph not in ("M", "X") or not isinstance(e.get("pid"), int) or \
                not isinstance(e.get("tid"), int):
            fail("event %d is not what pystrobe writes: %r" % (i, e))
            continue
        if ph == "M":
            what, name = e.get("name"), e.get("args", {}).get("name")
            if what == "process_name":
                if e["pid"] in procs:
                    fail("process %d named twice" % e["pid"])
                procs[e["pid"]] = name
            elif what == "thread_name":
                threads[(e["pid"], e["tid"])] = name
            continue
        if not isinstance(e.get("ts"), int) or not isinstance(e.get("dur"), int) or \
                e["ts"] < 0 or e["dur"] <= 0 or not isinstance(e.get("name"), str):
            fail("slice %d has no whole time, duration and name: %r" % (i, e))
    for e in events:
        if e.get("ph") == "X" and (e["pid"] not in procs or
                                   (e["pid"], e["tid"]) not in threads):
            fail("a slice on a track with no name: %r" % e)
            break
    return procs, threads


def function(name):
    return name.split(" (")[0]


def check_thread(what, slices, fn):
    """Nested as <module> > main > fn, never partly overlapping; the
    seconds in fn."""
    in_fn = 0.0
    stack = []
    for e in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
            fail("%s: %r overlaps %r partly: time went back" % (what, e, stack[-1]))
            return in_fn
        path = [function(s["name"]) for s in stack] + [function(e["name"])]
        if path != ["<module>", "main", fn][:len(path)]:
            fail("%s: a stack the rank never had: %s" % (what, ";".join(path)))
            return in_fn
        if len(path) == 3:
            in_fn += e["dur"] / 1e6
        stack.append(e)
    return in_fn


def check_rank(r, truth, clock, procs, threads, by_pid, start_ns):
    want = "rank %d on %s (pid %d)" % (r, truth["node"], truth["pid"])
    pid = [p for p, n in procs.items() if n == want]
    if len(pid) != 1:
        fail("rank %d: no one process track \"%s\" (the tracks: %s)" %
             (r, want, ", ".join(sorted(map(str, procs.values())))))
        return
    pid = pid[0]
    if threads.get((pid, truth["pid"])) != "MainThread":
        fail("%s: its main thread %d is not there as MainThread: %r" %
             (want, truth["pid"], threads))
    tids = sorted({e["tid"] for e in by_pid.get(pid, [])})
    t0, t1 = clock[0], clock[-1]
    in_fn = 0.0
    for tid in tids:
        slices = [e for e in by_pid[pid] if e["tid"] == tid]
        in_fn += check_thread("%s, thread %d" % (want, tid), slices, truth["function"])
        for e in slices:
            a = start_ns / 1e9 + e["ts"] / 1e6
            b = a + e["dur"] / 1e6
            if a < t0 - SLACK_S or b > t1 + SLACK_S:
                fail("%s: a slice from %.6f to %.6f, outside its own clock's %.6f to %.6f" %
                     (want, a, b, t0, t1))
                break
    if in_fn < MIN_IN_FN_S:
        fail("%s: %.3f s in %s, not %.1f" % (want, in_fn, truth["function"], MIN_IN_FN_S))
    print("job trace: %s (track %d): threads %s, %.3f s in %s, within its clock's "
          "%.3f s" % (want, pid, tids, in_fn, truth["function"], t1 - t0))


def main():
    trace_path, logdir, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    trace = load(trace_path)
    events = trace["traceEvents"]
    start_ns = trace["otherData"]["start_unix_ns"]
    procs, threads = check_events(events)
    by_pid = {}
    for e in events:
        if e.get("ph") == "X":
            by_pid.setdefault(e["pid"], []).append(e)
    if len(procs) != ranks:
        fail("%d process tracks, not one a rank (%d): %s" % (len(procs), ranks, procs))
    for r in range(ranks):
        truth = load(os.path.join(logdir, "rank-%d.json" % r))
        with open(os.path.join(logdir, "rank-%d.clock" % r)) as f:
            clock = [float(line) for line in f if line.strip()]
        if len(clock) < 2:
            fail("rank %d: its clock was not marked before and after: %r" % (r, clock))
            continue
        check_rank(r, truth, clock, procs, threads, by_pid, start_ns)
    if failures:
        print("FAIL: " + "\nFAIL: ".join(failures))
        sys.exit(1)
    print("job trace: %d events, %d ranks checked" % (len(events), ranks))


main()
