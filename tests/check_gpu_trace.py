"""Check a Chrome trace and the summary of `pystrobe record --gpu` against
what the stand-in NVML (tests/stubs/nvml_stub.c) served, for
tests/live/check_gpu.

Usage: check_gpu_trace.py TRACE STDERR SERVED UTILS MEMS STEP_MS
                          [--readings N --said TEXT]

SERVED is the stub's own log ("UNIX_NS DEVICE UTIL MEM_MIB" per reading),
UTILS and MEMS its scripted values ("5:95:40"), STEP_MS how long each lasts
on the wall clock.  The ground truth is the stub's: what it served and
when, and the schedule it was given.

Checks: the counter events of GPU 0 are the readings served, one for one,
at the times they were served (the trace's start_unix_ns plus ts), with the
scripted value of that moment; GPU 1, which runs none of the target's
processes, has none; the counter track is the target process's; the
summary's mean is the mean of what was served.  With --readings N --said
TEXT (a device lost, a driver that hangs): N readings served, and the
standard error says TEXT.  Prints one line; exits 1 with
the reason on a failure.
"""
import json
import re
import sys

# The reading's clock and the stub's may differ by a thread's scheduling
# delay on a loaded machine.
MAX_DT_MS = 50.0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    readings = said = None
    if "--readings" in args:
        i = args.index("--readings")
        readings, said = int(args[i + 1]), args[i + 3]
        del args[i:i + 4]
    trace_path, err_path, served_path, utils, mems, step_ms = args
    utils = [int(v) for v in utils.split(":")]
    mems = [int(v) for v in mems.split(":")]
    step_ms = int(step_ms)

    with open(trace_path) as f:
        trace = json.load(f)
    with open(err_path) as f:
        err = f.read()
    served = []
    with open(served_path) as f:
        for line in f:
            t, dev, util, mem = (int(w) for w in line.split())
            if dev == 0:
                served.append((t, util, mem))

    events = trace["traceEvents"]
    start_ns = trace["otherData"]["start_unix_ns"]
    counters = [e for e in events if e["ph"] == "C"]
    util_ev = [e for e in counters if e["name"] == "GPU 0 utilization"]
    mem_ev = [e for e in counters if e["name"] == "GPU 0 memory"]
    if any(e["name"].startswith("GPU 1") for e in counters):
        fail("GPU 1 has counters, but runs none of the target's processes")
    pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    if any(e["pid"] not in pids for e in counters):
        fail("a counter is on a pid that is not the recorded process's: %r" % pids)
    if not util_ev or len(util_ev) != len(mem_ev):
        fail("%d utilization and %d memory events" % (len(util_ev), len(mem_ev)))
    if len(util_ev) != len(served):
        fail("%d utilization events, %d readings served" % (len(util_ev), len(served)))
    if readings is not None and len(served) != readings:
        fail("%d readings served, the stub was told %d" % (len(served), readings))

    max_dt = 0.0
    on_schedule = 0
    for (t, util, mem), u, m in zip(served, util_ev, mem_ev):
        wall = start_ns + u["ts"] * 1000
        dt = abs(wall - t) / 1e6
        max_dt = max(max_dt, dt)
        if dt > MAX_DT_MS:
            fail("a reading served at %d is in the trace at %d (%.1f ms apart)" % (t, wall, dt))
        if u["args"]["%"] != util or abs(m["args"]["MiB"] - mem) > 1e-6:
            fail("at ts %d: %r %r, served %d%% %d MiB" % (u["ts"], u["args"], m["args"],
                                                         util, mem))
        # The schedule, away from a step's edges: the value of that moment.
        ms = wall / 1e6
        if MAX_DT_MS < ms % step_ms < step_ms - MAX_DT_MS:
            k = int(ms // step_ms) % len(utils)
            if util != utils[k] or mem != mems[k]:
                fail("at ts %d: %d%%, the schedule says %d%%" % (u["ts"], util, utils[k]))
            on_schedule += 1

    # A third of each step lies between its edges' margins: of enough
    # readings, many must be away from them.
    if len(served) >= 8 and on_schedule * 4 < len(served):
        fail("only %d of %d readings away from a step's edges" % (on_schedule, len(served)))
    mean = sum(s[1] for s in served) / len(served)
    m = re.search(r"GPU 0 \(Stand-in GPU 0\): ([0-9.]+)% busy on average", err)
    if not m:
        fail("no summary line of GPU 0 in: " + err)
    if abs(float(m.group(1)) - mean) > 0.051:
        fail("summary mean %s%%, served mean %.2f%%" % (m.group(1), mean))
    if "GPU 1" in err:
        fail("the summary speaks of GPU 1, which the target does not use")
    if said is not None and said not in err:
        fail("it does not say %r: %s" % (said, err))
    print("%d readings, %d of them checked against the schedule, mean %.2f%% (summary %s%%), "
          "trace within %.1f ms of the stub's clock" % (len(served), on_schedule, mean,
                                                        m.group(1), max_dt))


main()
