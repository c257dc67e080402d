#!/usr/bin/env python3
"""Hold the wait shares of a `pystrobe record -s --idle --threads -f
collapsed` profile of a training job against the job's own clock
(tests/targets/train_data.py, train_gloo.py).

    compare_training.py CLASSIFY JOB OUTDIR COLLAPSED T0 T1

CLASSIFY says who decides that a sample waits:
  leaf    pystrobe (`record --waits`): the sample's innermost frame is
          <wait:CLASS>; this is the test of the product
  frames  this script, by the rules in FRAME_RULES below, on the Python
          frames of a profile recorded without --waits: what the test
          checks its targets and its arithmetic with until --waits exists

JOB is the target: data (train_data.py: its main thread, class data) or
collective (train_gloo.py: each rank's main thread, class collective).
OUTDIR is the target's directory: truth.json and the steps files it names,
a line per step of wall-clock stamps.  [T0, T1] is the time pystrobe
sampled, in wall-clock seconds.

For each thread judged, its share of samples in the class against the
share of [T0, T1] its own clock says it waited (data: from a step's start
to its batch; collective: inside all_reduce).  Prints a line per thread,
pystrobe's figure beside the job's; exits 0 when every one is within
TOLERANCE points (and, for collective, the rank with the most
micro-batches has the smallest share, by pystrobe and by its own clock),
1 when one is not, 3 when the job's steps do not reach T1 yet (run it
again a little later), 2 when the inputs cannot be judged (no samples of
the thread, steps that do not cover [T0, T1]).
"""
import json
import os
import re
import sys

TOLERANCE = 3.0

# Frames that put a sample in a class, when this script decides: the
# function (its qualified name ends in it) and the file it is defined in
# (the end of the path; collapsed output names files by their base name).
FRAME_RULES = {
    "data": [("_MultiProcessingDataLoaderIter._next_data", "dataloader.py"),
             ("_MultiProcessingDataLoaderIter._get_data", "dataloader.py")],
    "collective": [("all_reduce", "distributed_c10d.py")],
}

# Per job: the class, and where the wait lies in a line of its steps file.
JOBS = {
    "data": ("data", 0, 1),             # [start, got-batch, end]
    "collective": ("collective", 1, 2),  # [start, into all_reduce, out, end]
}

FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(:\d+)?\)$")
PROCESS = re.compile(r"^process (\d+):")
THREAD = re.compile(r"^thread (\d+)\b")


def load(path):
    with open(path) as f:
        return json.load(f)


def frame_matches(frame, rules):
    m = FRAME.match(frame)
    if not m:
        return False
    function, path = m.group("function"), m.group("file")
    return any((function == f or function.endswith("." + f)) and
               (path == p or path.endswith("/" + p)) for f, p in rules)


def classify_leaf(frames, cls):
    return bool(frames) and frames[-1] == "<wait:%s>" % cls


def classify_frames(frames, cls):
    return any(frame_matches(f, FRAME_RULES[cls]) for f in frames)


CLASSIFIERS = {"leaf": classify_leaf, "frames": classify_frames}


def thread_counts(collapsed, pid, tid, cls, classify):
    """(samples in the class, all samples) of thread tid of process pid."""
    hit = total = 0
    with open(collapsed) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if len(frames) < 2:
                continue
            p, t = PROCESS.match(frames[0]), THREAD.match(frames[1])
            if not p or not t or int(p.group(1)) != pid or int(t.group(1)) != tid:
                continue
            total += int(count)
            if classify(frames[2:], cls):
                hit += int(count)
    return hit, total


def own_share(path, lo, hi, t0, t1):
    """The share of [t0, t1] in [line[lo], line[hi]] intervals of the
    steps file, and whether its steps reach t1 yet, or None when they
    begin after t0."""
    waited, first, last = 0.0, None, None
    if not os.path.exists(path):
        return None, False
    with open(path) as f:
        for line in f:
            try:
                step = json.loads(line)
            except ValueError:
                continue                # a line being written
            first = step[0] if first is None else first
            last = step[-1]
            waited += max(0.0, min(step[hi], t1) - max(step[lo], t0))
    if first is None or last < t1:
        return None, False
    if first > t0:
        return None, True
    return 100.0 * waited / (t1 - t0), True


def threads(job, truth):
    if job == "data":
        return [("main thread %d" % truth["tid"], truth["pid"], truth["tid"], truth["steps"])]
    return [("rank %d (%d micro-batches) thread %d" % (r["rank"], r["micro_batches"], r["tid"]),
             r["pid"], r["tid"], r["steps"]) for r in truth["ranks"]]


def main(argv):
    try:
        return judge(argv)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print("cannot judge: %s: %s" % (type(e).__name__, e))
        return 2


def judge(argv):
    if len(argv) != 7 or argv[1] not in CLASSIFIERS or argv[2] not in JOBS:
        sys.stderr.write(__doc__)
        return 2
    classify, job, outdir, collapsed = CLASSIFIERS[argv[1]], argv[2], argv[3], argv[4]
    t0, t1 = float(argv[5]), float(argv[6])
    cls, lo, hi = JOBS[job]
    truth = load(os.path.join(outdir, "truth.json"))
    status, shares = 0, []
    for name, pid, tid, steps in threads(job, truth):
        hit, total = thread_counts(collapsed, pid, tid, cls, classify)
        own, reached = own_share(os.path.join(outdir, steps), lo, hi, t0, t1)
        if own is None:
            print("%s: its steps %s [%.3f, %.3f]" % (name, "begin after the start of" if
                                                     reached else "do not reach the end of",
                                                     t0, t1))
            return 2 if reached else 3
        if not total:
            print("%s: no samples" % name)
            return 2
        got = 100.0 * hit / total
        off = abs(got - own)
        print("%s: %s %.1f%% by pystrobe (%d of %d samples), %.1f%% by its own clock over "
              "%.2f s: %.1f points off%s" % (name, cls, got, hit, total, own, t1 - t0, off,
                                             "" if off <= TOLERANCE else " (too far)"))
        if off > TOLERANCE and status == 0:
            status = 1
        shares.append((got, own, name))
    return max(status, check_shape(job, truth, shares))


def check_shape(job, truth, shares):
    """The job must be what it is meant to be: the slow rank waits least,
    by its own clock and by pystrobe; 0, or 1 when it is not."""
    if job != "collective" or len(shares) != len(truth["ranks"]):
        return 0
    slow = max(range(len(shares)), key=lambda i: truth["ranks"][i]["micro_batches"])
    for k, who in ((0, "pystrobe"), (1, "its own clock")):
        if min(range(len(shares)), key=lambda i: shares[i][k]) != slow:
            print("%s: not the smallest collective share by %s" % (shares[slow][2], who))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
