#!/usr/bin/env python3
"""Hold a `pystrobe watch` report against what the stalled target says of
itself (tests/targets/stall.py, stall_torch.py).

    compare_watch.py stall TRUTH STALL REPORTS STALL_S SEEN SLACK LAUNCHED

TRUTH and STALL are the target's truth.json and stall.json (or another
file of that form, such as looks.json); REPORTS is the
watch's --report-dir; STALL_S its --stall; SEEN the wall-clock time at
which the test first saw a report.json there (its own clock, polling);
SLACK how late the test's own polling loop ran at worst (what the machine's
load took from everyone, added to the allowance below); LAUNCHED the
wall-clock time at which the test started the watch.

There must be exactly one stall-UNIX-PID directory, PID one of the job's
processes (the odd one out's for a collective), holding report.txt,
report.json, dump.txt, dump.json and the flight recording report.json
names.  In report.json:

  - kind is the target's (or its also_kind), why is said;
  - every thread of stall.json is in processes[] under its pid and tid,
    its function and line among its frames (its innermost Python frame
    when stall.json says innermost, the default), and the functions of
    its calls as well; a rank's process has that rank;
  - odd_one_out names the target's (collective), or is null;
  - since_unix within 2.5 s of stalled_unix (the watch looks twice a
    second, and the target writes stalled_unix once it has seen its
    threads settle), or of LAUNCHED when the target stalled before the
    watch began (nothing can be seen before then: looks.json of the
    heartbeat, stalled from its start, on a loaded machine), and
    detected_unix no sooner than STALL_S - 1 after stalled_unix;
  - the report seen by SEEN <= stalled_unix + STALL_S + 5 + SLACK (issue
    27: "a report within threshold + 5 s").

For an asyncio stall, the tasks of stall.json must be in dump.json's
tasks, waiting where the target says (in one cycle when they await each
other: await_cycle), and report.txt must name them.

Prints one line of figures, then each mismatch; exits 0 or 1.
"""
import json
import os
import re
import sys

SINCE_SLACK = 2.5


def load(path):
    with open(path) as f:
        return json.load(f)


def python_frames(frames):
    return [f for f in frames if (f.get("file") or "").endswith(".py")]


def same_function(got, want):
    return got == want or (got or "").endswith("." + want)


def check_thread(report, want, pid, errors):
    procs = [p for p in report["processes"] if p["pid"] == want.get("pid", pid)]
    if not procs:
        errors.append("no process %s in processes[]" % want.get("pid", pid))
        return
    proc = procs[0]
    if "rank" in want and proc.get("rank") != want["rank"]:
        errors.append("process %d: rank %r, the target says %d" % (proc["pid"], proc.get("rank"),
                                                                  want["rank"]))
    threads = [t for t in proc["threads"] if t["tid"] == want["tid"]]
    if not threads:
        errors.append("%s (tid %d) not among the threads of %d" % (want["name"], want["tid"],
                                                                    proc["pid"]))
        return
    frames = python_frames(threads[0]["frames"])
    spots = [(f["function"], f["line"]) for f in frames]
    lines = want["lines"] if "lines" in want else [want["line"]]
    if want.get("innermost", True):
        ok = frames and same_function(frames[0]["function"], want["function"]) \
            and frames[0]["line"] in lines
    else:
        ok = any(same_function(f, want["function"]) and l in lines for f, l in spots)
    if not ok:
        errors.append("%s (tid %d): %s line %s %s, the report has %s" % (
            want["name"], want["tid"], want["function"], lines,
            "innermost" if want.get("innermost", True) else "in its stack", spots[:8]))
    for call in want.get("calls", []):
        if not any(same_function(f, call) for f, _ in spots):
            errors.append("%s: no %s in its stack %s" % (want["name"], call, spots[:12]))


def check_files(d, report, errors):
    for name in ("report.txt", "report.json", "dump.txt", "dump.json"):
        path = os.path.join(d, name)
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            errors.append("%s missing or empty" % name)
    flight = (report.get("files") or {}).get("flight")
    if not flight or not os.path.exists(os.path.join(d, flight)) \
            or os.path.getsize(os.path.join(d, flight)) == 0:
        errors.append("flight recording %r missing or empty" % flight)
    try:
        return load(os.path.join(d, "dump.json"))
    except (OSError, ValueError) as e:
        errors.append("dump.json: %s" % e)
        return None


def check_async(stall, dump, text, errors):
    tasks = {}
    for p in (dump or {}).get("processes", []):
        for t in p.get("tasks") or []:
            tasks[t["name"]] = t
    cycles = set()
    for want in stall["tasks"]:
        if want["name"] not in text:
            errors.append("report.txt does not name task %s" % want["name"])
        t = tasks.get(want["name"])
        if not t:
            errors.append("dump.json has no task %s (has %s)" % (want["name"], sorted(tasks)))
            continue
        cycles.add(json.dumps(t.get("cycle"), sort_keys=True))
        spots = [(f.get("function"), f.get("line")) for f in t.get("frames", [])]
        if not any(same_function(f, want["function"]) and l == want["line"] for f, l in spots):
            errors.append("task %s: not at %s line %d: %s" % (want["name"], want["function"],
                                                             want["line"], spots))
    if stall.get("await_cycle") and (len(cycles) != 1 or "null" in cycles):
        errors.append("the tasks are not in one cycle in dump.json: %s" % sorted(cycles))


def stall_dirs(reports):
    return sorted(n for n in os.listdir(reports) if re.match(r"stall-\d+-\d+$", n))


def stall(truth, want, reports, stall_s, seen, slack, launched):
    truth = load(truth)
    want = load(want)
    errors = []
    dirs = stall_dirs(reports)
    if len(dirs) != 1:
        print("%d stall reports: %s" % (len(dirs), dirs))
        return 1
    d = os.path.join(reports, dirs[0])
    report = load(os.path.join(d, "report.json"))
    stalled = want["stalled_unix"]
    late = seen - stalled
    allowed = stall_s + 5 + slack
    print("%s: kind %s, since %+.2f s, detected %+.2f s, seen %+.2f s after the target stalled "
          "(allowed %.2f; watch started %+.2f s)"
          % (dirs[0], report.get("kind"), report["since_unix"] - stalled,
             report["detected_unix"] - stalled, late, allowed, launched - stalled))
    kinds = [want["kind"], want.get("also_kind")]
    if report.get("kind") not in kinds:
        errors.append("kind %r, the target says %r" % (report.get("kind"), want["kind"]))
    if not report.get("why"):
        errors.append("no why")
    pids = set([truth["pid"]] + [r["pid"] for r in truth.get("ranks", [])]
               + [t["pid"] for t in want["threads"] if "pid" in t])
    odd = want.get("odd_one_out")
    dir_pid = int(dirs[0].split("-")[2])
    if dir_pid not in pids or (odd and dir_pid != odd["pid"]):
        errors.append("report for process %d, the job is %s%s" % (
            dir_pid, sorted(pids), ", the odd one out %d" % odd["pid"] if odd else ""))
    got_odd = report.get("odd_one_out")
    if odd and (not got_odd or got_odd.get("pid") != odd["pid"]
                or got_odd.get("rank") != odd["rank"] or "load_batch" not in got_odd.get("where", "")):
        errors.append("odd_one_out %r, the target says rank %d (%d) in load_batch"
                      % (got_odd, odd["rank"], odd["pid"]))
    if not odd and got_odd:
        errors.append("odd_one_out %r where there is none" % (got_odd,))
    for t in want["threads"]:
        check_thread(report, t, truth["pid"], errors)
    visible = max(stalled, launched)
    if abs(report["since_unix"] - visible) > SINCE_SLACK:
        errors.append("since_unix %.2f s off the target's stall (%.2f s off the first moment "
                      "the watch could see it)"
                      % (report["since_unix"] - stalled, report["since_unix"] - visible))
    if report["detected_unix"] - stalled < stall_s - 1:
        errors.append("detected %.2f s after the stall, before the threshold" %
                      (report["detected_unix"] - stalled))
    if late > allowed:
        errors.append("the report came %.2f s after the stall, more than %.2f" % (late, allowed))
    dump = check_files(d, report, errors)
    if "tasks" in want:
        with open(os.path.join(d, "report.txt")) as f:
            check_async(want, dump, f.read(), errors)
    for e in errors:
        print("  " + e)
    return 1 if errors else 0


def main():
    if sys.argv[1] == "stall" and len(sys.argv) == 9:
        sys.exit(stall(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]),
                       float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])))
    sys.stderr.write(__doc__)
    sys.exit(2)


main()
