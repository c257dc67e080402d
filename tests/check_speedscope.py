#!/usr/bin/env python3
"""Check a speedscope file against the essentials of its schema.

    check_speedscope.py FILE

https://www.speedscope.app/file-format-schema.json, and what speedscope's
importer (src/lib/file-format.ts) relies on: the required keys and their
types, frame indices in range, as many weights as samples, non-negative
weights, startValue <= endValue, evented profiles balanced and in order.
Exits 1 with a message on the first violation; otherwise prints a summary,
JSON with one profile per line:

    {"name": ..., "exporter": ..., "active": N, "frames": N,
     "profiles": [{"name", "type", "unit", "startValue", "endValue",
                   "samples", "total_weight", "frames_used"}, ...]}
"""
import json
import sys

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


class Bad(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Bad(what)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_frames(frames):
    need(isinstance(frames, list), "shared.frames is not a list")
    for i, f in enumerate(frames):
        need(isinstance(f, dict), "frame %d is not an object" % i)
        need(isinstance(f.get("name"), str), "frame %d has no string name" % i)
        if "file" in f:
            need(isinstance(f["file"], str), "frame %d: file is not a string" % i)
        for k in ("line", "col"):
            if k in f:
                need(is_num(f[k]), "frame %d: %s is not a number" % (i, k))


def check_sampled(p, nframes, where):
    samples, weights = p.get("samples"), p.get("weights")
    need(isinstance(samples, list), where + ": samples is not a list")
    need(isinstance(weights, list), where + ": weights is not a list")
    need(len(samples) == len(weights),
         "%s: %d samples but %d weights" % (where, len(samples), len(weights)))
    used = set()
    for i, st in enumerate(samples):
        need(isinstance(st, list), "%s: sample %d is not a list" % (where, i))
        for n in st:
            need(is_int(n) and 0 <= n < nframes,
                 "%s: sample %d: frame index %r out of range" % (where, i, n))
            used.add(n)
    for i, w in enumerate(weights):
        need(is_num(w) and w >= 0, "%s: weight %d is %r" % (where, i, w))
    return len(samples), sum(weights), used


def check_evented(p, nframes, where):
    events = p.get("events")
    need(isinstance(events, list), where + ": events is not a list")
    stack, last, used = [], p["startValue"], set()
    for i, ev in enumerate(events):
        need(isinstance(ev, dict) and ev.get("type") in ("O", "C"),
             "%s: event %d has no type O or C" % (where, i))
        need(is_int(ev.get("frame")) and 0 <= ev["frame"] < nframes,
             "%s: event %d: frame out of range" % (where, i))
        need(is_num(ev.get("at")) and ev["at"] >= last,
             "%s: event %d goes back in time" % (where, i))
        if ev["type"] == "O":
            stack.append(ev["frame"])
            used.add(ev["frame"])
        else:
            need(stack and stack.pop() == ev["frame"],
                 "%s: event %d closes a frame that is not open" % (where, i))
        last = ev["at"]
    need(not stack, where + ": frames left open")
    total = last - p["startValue"] if events else 0
    return len(events), total, used


def check(doc):
    need(isinstance(doc, dict), "not a JSON object")
    need(doc.get("$schema") == SCHEMA, "$schema is not " + SCHEMA)
    shared = doc.get("shared")
    need(isinstance(shared, dict), "no shared object")
    frames = shared.get("frames")
    check_frames(frames)
    profiles = doc.get("profiles")
    need(isinstance(profiles, list) and profiles, "no profiles")
    for k in ("name", "exporter"):
        if k in doc:
            need(isinstance(doc[k], str), k + " is not a string")
    active = doc.get("activeProfileIndex", 0)
    need(is_int(active) and 0 <= active < len(profiles),
         "activeProfileIndex %r out of range" % (active,))

    out = []
    for i, p in enumerate(profiles):
        where = "profile %d" % i
        need(isinstance(p, dict), where + " is not an object")
        need(p.get("type") in ("sampled", "evented"), where + ": bad type")
        need(isinstance(p.get("name"), str), where + ": name is not a string")
        need(p.get("unit") in UNITS, where + ": bad unit %r" % (p.get("unit"),))
        need(is_num(p.get("startValue")) and is_num(p.get("endValue")),
             where + ": startValue/endValue are not numbers")
        need(p["startValue"] <= p["endValue"], where + ": startValue > endValue")
        if p["type"] == "sampled":
            n, total, used = check_sampled(p, len(frames), where)
        else:
            n, total, used = check_evented(p, len(frames), where)
        out.append({"name": p["name"], "type": p["type"], "unit": p["unit"],
                    "startValue": p["startValue"], "endValue": p["endValue"],
                    "samples": n, "total_weight": total,
                    "frames_used": len(used)})
    return {"name": doc.get("name"), "exporter": doc.get("exporter"),
            "active": active, "frames": len(frames), "profiles": out}


def compact(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_speedscope.py FILE")
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            summary = check(json.load(f))
    except (Bad, ValueError, OSError) as e:
        sys.exit("check_speedscope.py: %s: %s" % (sys.argv[1], e))
    profiles = summary.pop("profiles")
    print("{")
    for k in sorted(summary):
        print(" %s: %s," % (json.dumps(k), compact(summary[k])))
    print(' "profiles": [')
    for i, p in enumerate(profiles):
        print("  %s%s" % (compact(p), "," if i + 1 < len(profiles) else ""))
    print(" ]")
    print("}")


if __name__ == "__main__":
    main()
