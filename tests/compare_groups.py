#!/usr/bin/env python3
"""Compare `pystrobe dump --group` with the groups a target saw itself.

Usage: compare_groups.py TRUTH JSON TEXT

TRUTH is the truth.json tests/targets/pool.py writes: groups of threads
(pid, ident) with the same stack by the target's own sys._current_frames().
JSON is `dump --group --json`: its "groups" must be exactly those (as sets
of (pid, ident)), largest first, and every thread of "processes" in one
group.  TEXT is `dump --group`: its group header lines must give the same
sizes in the same order ("16 threads ..." for a group, a "Thread ..." line
for a thread alone), name every member as the target names it (TID "name",
or PID/TID "name" with several processes), and show the standard library's
files by their short names (threading.py, not /usr/lib/python3.12/...).
Exits 1 on a mismatch, 0 when all match.
"""
import json
import re
import sys


def check_names(truth, doc, text):
    """Every member of a group header named as the target names it."""
    names = dict(((m[0], m[1]), m[2]) for g in truth["groups"] for m in g["members"])
    by_tid = dict(((p["pid"], t["tid"]), (p["pid"], t["ident"]))
                  for p in doc["processes"] for t in p["threads"])
    pid = doc["processes"][0]["pid"]
    fails = []
    for line in text.split("\n"):
        if not re.match(r"^\d+ threads\b", line):
            continue
        members = line.split(":", 1)[1]
        got = re.findall(r' (?:(\d+)/)?(\d+) "([^"]*)"', members)
        if len(got) != int(line.split()[0]):
            fails.append("text: not every member named in %r" % line[:200])
        for p, tid, name in got:
            key = by_tid.get((int(p) if p else pid, int(tid)))
            if key not in names or names[key] != name:
                fails.append("text: %s named %r, the target says %r"
                             % (tid, name, names.get(key)))
    return fails


def main(argv):
    truth = json.load(open(argv[1]))
    doc = json.load(open(argv[2]))
    text = open(argv[3], encoding="utf-8").read()
    fails = []
    want = sorted(frozenset((m[0], m[1]) for m in g["members"]) for g in truth["groups"])
    groups = doc.get("groups") or []
    got = sorted(frozenset((m["pid"], m["ident"]) for m in g["members"]) for g in groups)
    if got != want:
        fails.append("json groups %s, want %s" % (sorted(len(g) for g in got),
                                                  sorted(len(g) for g in want)))
    sizes = [g["threads"] for g in groups]
    if sizes != sorted(sizes, reverse=True) or any(g["threads"] != len(g["members"]) for g in groups):
        fails.append("json group sizes %s: not largest first or not their member count" % sizes)
    nthreads = sum(len(p["threads"]) for p in doc["processes"])
    if sum(sizes) != nthreads:
        fails.append("json: %d threads in groups, %d in processes" % (sum(sizes), nthreads))
    text_sizes = []
    for line in text.split("\n"):
        m = re.match(r"^(\d+) threads\b", line)
        if m:
            text_sizes.append(int(m.group(1)))
        elif re.match(r"^(Process \d+, )?Thread \d+", line):
            text_sizes.append(1)
    want_sizes = sorted((len(g) for g in want), reverse=True)
    if text_sizes != want_sizes:
        fails.append("text group sizes %s, want %s" % (text_sizes, want_sizes))
    fails.extend(check_names(truth, doc, text))
    if "/lib/python3" in text or "threading.py:" not in text:
        fails.append("text: the standard library's paths are not shortened")
    for f in fails:
        print("compare_groups: MISMATCH %s" % f)
    print("compare_groups: groups %s, %d mismatches" % (want_sizes, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
