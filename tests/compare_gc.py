#!/usr/bin/env python3
"""Hold pystrobe's <gc> frame against what tests/targets/gc_target.py
logged about its own collections.

    compare_gc.py dump TRUTH LOG OUT T0 T1
    compare_gc.py record TRUTH LOG COLLAPSED T0 T1
    compare_gc.py has TRUTH LOG FILE T0 T1 [D]

TRUTH and LOG are the target's truth.json and gc.log (start/stop lines
with wall-clock times, written from inside each collection); T0 and T1
bound, in wall-clock time, the run of pystrobe that made OUT.

dump: OUT is `dump --json` or text.  When [T0, T1] lies inside one
collection (the GC state said "collecting" all along), the collector
thread's first frame must be <gc> (JSON: kind "gc"; text: the <gc> line),
right above collect_once(), the function that called gc.collect() (or
above hook(), the gc.callbacks hook the collection runs).  When
no collection comes within 50 ms of [T0, T1], no thread may show <gc>.
Prints "inside", "outside" or "unclear" (a collection started or ended
during the dump: either answer is right) and exits 0, or prints the
mismatch and exits 1.

record: COLLAPSED is `record -f collapsed` over [T0, T1]: <gc> must be a
leaf right above collect_once() (or hook()), and its share of the collector thread's
samples within 0.3 of the share of [T0, T1] the log says was spent
collecting.  Prints both shares; exits 3 when the target hardly collected
at all during [T0, T1] (nothing to compare: run it again).

has: FILE (any format of record, gzip-compressed pprof too, or top's
text, made over [T0, T1]) names the <gc> frame; exits 3 when the target
hardly collected while it surely sampled.  With D (record -d D): sampling
took D seconds somewhere within [T0, T1], after a start-up of unknown
length, so it surely covered [T1 - D, T0 + D], and that is where at
least MIN_GC_S of collecting must fall.  For top: the time its last
snapshot says it sampled, the end of [T0, T1].  Otherwise [T0, T1].
"""
import gzip
import json
import re
import sys

SLACK = 0.05
# Collecting a run of `has` must surely have sampled: 10 samples at 100 Hz.
MIN_GC_S = 0.1
# What <gc> may sit on: the function that called gc.collect(), or the
# target's gc.callbacks hook, which the collection runs (its frame is then
# above the caller's: pystrobe puts <gc> innermost).
HOLDERS = ("collect_once", "hook")


def intervals(log):
    """[(start, stop)] of every collection, stop inf while under way."""
    out, start = [], None
    for line in open(log):
        parts = line.split()
        if len(parts) != 3:
            continue
        if parts[0] == "start":
            start = float(parts[1])
        elif parts[0] == "stop" and start is not None:
            out.append((start, float(parts[1])))
            start = None
    if start is not None:
        out.append((start, float("inf")))
    return out


def where(spans, t0, t1):
    if any(a <= t0 and t1 <= b for a, b in spans):
        return "inside"
    if not any(a <= t1 + SLACK and t0 - SLACK <= b for a, b in spans):
        return "outside"
    return "unclear"


def json_threads(doc, pid):
    """{ident: [frame functions, first = innermost, "<gc>" for kind gc]}"""
    out = {}
    for p in doc.get("processes") or []:
        if p.get("pid") != pid:
            continue
        for t in p.get("threads") or []:
            names = []
            for f in t.get("frames") or []:
                names.append("<gc>" if f.get("kind") == "gc" else f.get("function"))
            out[t.get("ident")] = names
    return out


def text_threads(text):
    """The same from the text dump: the frame lines under each header."""
    out, cur = {}, None
    for line in text.split("\n"):
        m = re.match(r"Thread .* ident 0x([0-9a-f]+)$", line)
        if m:
            cur = out.setdefault(int(m.group(1), 16), [])
        elif line.startswith("Process "):
            cur = None
        elif cur is not None and re.match(r"    \S", line):
            if line.startswith("    <gc>"):
                cur.append("<gc>")
            else:
                cur.append(line.split(" (")[0].strip())
    return out


def check_dump(truth, spans, out, t0, t1):
    data = open(out, encoding="utf-8").read()
    threads = (json_threads(json.loads(data), truth["pid"]) if data.startswith("{")
               else text_threads(data))
    ident = truth["collector_ident"]
    if ident not in threads:
        return "no collector thread (ident %#x) in the dump" % ident
    w = where(spans, t0, t1)
    for tid, frames in threads.items():
        if "<gc>" in frames[1:]:
            return "thread %#x: <gc> below its first frame: %s" % (tid, frames[:4])
        if tid != ident and frames[:1] == ["<gc>"]:
            return "thread %#x, not the collector, shows <gc>" % tid
    frames = threads[ident]
    if w == "inside":
        if frames[:1] != ["<gc>"]:
            return "collecting all through the dump, but the collector shows %s" % frames[:3]
        if frames[1:2] != [] and frames[1] not in HOLDERS:
            return "<gc> above %s, not one of %s" % (frames[1:2], HOLDERS)
    if w == "outside" and frames[:1] == ["<gc>"]:
        return "no collection near the dump, but the collector shows <gc>"
    print(w)
    return None


def collected_share(spans, t0, t1):
    busy = sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in spans)
    return busy / (t1 - t0)


def check_record(spans, collapsed, t0, t1):
    total = gc_n = 0
    for line in open(collapsed, encoding="utf-8"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if "<gc>" in frames[:-1]:
            return "<gc> not a leaf: %s" % stack
        if not any(f.startswith("collector (") for f in frames):
            if frames[-1] == "<gc>":
                return "<gc> outside the collector thread: %s" % stack
            continue
        total += int(count)
        if frames[-1] == "<gc>":
            if len(frames) < 2 or frames[-2].split(" (")[0] not in HOLDERS:
                return "<gc> above %s, not one of %s" % (frames[-2:-1], HOLDERS)
            gc_n += int(count)
    if not total:
        return "no sample of the collector thread"
    want = collected_share(spans, t0, t1)
    if want < 0.05:
        print("no collection while it recorded (%.2f of the time)" % want)
        raise SystemExit(3)
    got = gc_n / total
    print("<gc> in %d of %d samples of the collector (%.2f), collecting %.2f of the time"
          % (gc_n, total, got, want))
    if abs(got - want) > 0.3:
        return "share of <gc> %.2f, the target collected %.2f of the time" % (got, want)
    return None


def top_window(data, t0, t1):
    """top's text is a run of snapshots, each over all of the time sampled
    so far ("| 1.5 s, 151 samples"): the last one covers its final seconds
    of [T0, T1], not the start-up before the first sample."""
    spans = re.findall(rb"^pystrobe top: .*\| ([0-9.]+) s, ", data, re.M)
    if not spans:
        print("top printed no snapshot")
        raise SystemExit(3)
    return max(t0, t1 - float(spans[-1]) - 0.2), t1


def check_has(path, spans, t0, t1, d):
    data = open(path, "rb").read()
    if data.startswith(b"pystrobe top: "):
        t0, t1 = top_window(data, t0, t1)
    elif d is not None:
        t0, t1 = t1 - d, t0 + d
        if t1 - t0 < 2 * MIN_GC_S:
            print("start-up took most of the run: cannot tell when it sampled")
            raise SystemExit(3)
    if collected_share(spans, t0, t1) * (t1 - t0) < MIN_GC_S:
        print("no collection while it surely sampled")
        raise SystemExit(3)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)        # pprof: its string table
    if not any(s in data for s in (b"<gc>", b"&lt;gc&gt;", b"\\u003cgc\\u003e")):
        return "no <gc> frame in %s" % path
    print("<gc> in %s" % path)
    return None


def main(argv):
    if not (len(argv) == 7 or (len(argv) == 8 and argv[1] == "has")) or \
            argv[1] not in ("dump", "record", "has"):
        sys.stderr.write(__doc__)
        return 2
    truth = json.load(open(argv[2]))
    spans = intervals(argv[3])
    t0, t1 = float(argv[5]), float(argv[6])
    if argv[1] == "has":
        why = check_has(argv[4], spans, t0, t1, float(argv[7]) if len(argv) == 8 else None)
    elif argv[1] == "dump":
        why = check_dump(truth, spans, argv[4], t0, t1)
    else:
        why = check_record(spans, argv[4], t0, t1)
    if why:
        print("compare_gc: MISMATCH %s" % why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
