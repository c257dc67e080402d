#!/usr/bin/env python3
"""Compare `pystrobe dump --json` output with what the target saw itself.

Usage: compare_dump.py [--loose-moving] [--locals] [--no-extra] [--host-pid=PID]
                       [--minor-version] TRUTH ACTUAL

TRUTH is the truth.json tests/targets/parked.py writes; ACTUAL is pystrobe's
JSON.  Every thread in TRUTH must be in ACTUAL (matched by ident) with the same
name, tid (when TRUTH knows it), gil, attached (when TRUTH has it) and idle
flags, and the same Python
frames (function, file, line, and the interpreter where TRUTH gives one;
source and source_changed where both have them).
No ident and no tid may appear twice: each OS thread is one thread of the
dump, however many interpreters it runs in.  The spinner ("moving": true) moves, so of its
innermost frame only function and file are compared and its line need only be
one of the spin loop's lines; its outer frames are compared as usual.

  --loose-moving  the dump did not pause the target (--nonblocking): the
                  spinner may differ in anything but ident, name and tid, and
                  its differences are printed as notes, not failures.
  --locals        the dump was taken with --locals: check the locals TRUTH
                  lists under locals_check.
  --no-extra      a thread in ACTUAL that TRUTH does not have is a failure.
  --minor-version the interpreter is older than 3.11 and stripped of its
                  symbol table (Debian 11's 3.9): pystrobe can tell its
                  version from the file name only (pystrobe(1)), so only
                  3.minor is compared.
  --host-pid=PID  the target runs in a PID namespace of its own and PID is
                  its id in ours: TRUTH's pid and tids (the target's own)
                  must be ACTUAL's ns_pid and ns_tid, and pid and tid must
                  be ours, as the NSpid lines of /proc/PID/task/*/status
                  (the kernel's own map) pair them.

Threads in ACTUAL that TRUTH does not have are allowed (unless --no-extra)
and listed.  Prints a
readable diff and exits 1 on any mismatch, 0 when all match, 2 on bad input.
"""
import json
import os
import re
import sys


class Report(object):
    def __init__(self):
        self.failures = []
        self.notes = []

    def fail(self, msg):
        self.failures.append(msg)

    def note(self, msg):
        self.notes.append(msg)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("compare: cannot read %s: %s\n" % (path, e))
        sys.exit(2)


def fmt_frame(f):
    if f is None:
        return "-"
    where = "" if f.get("interpreter") is None else " @%s" % f["interpreter"]
    return "%s (%s:%s)%s" % (f.get("function"), f.get("file"), f.get("line"),
                             where)


def python_frames(thread):
    """pystrobe's Python frames; other kinds (native, ...) are not compared."""
    return [f for f in thread.get("frames") or []
            if f.get("kind", "python") == "python"]


def frame_differs(want, got, moving, spin_lines):
    if got is None:
        return "missing"
    if want["function"] != got.get("function"):
        return "function"
    if want["file"] != got.get("file"):
        return "file"
    if "interpreter" in want and want["interpreter"] != got.get("interpreter"):
        return "interpreter"
    if moving:
        if got.get("line") not in spin_lines:
            return "line not in spin loop %s" % spin_lines
        return None
    if want["line"] != got.get("line"):
        return "line"
    # Source lines: only in a dump that has them (not --no-source).
    if "source" in want and "source" in got:
        if want["source"] != got["source"]:
            return "source %r" % got["source"]
        if want["source_changed"] != got.get("source_changed"):
            return "source_changed %s" % got.get("source_changed")
    return None


def frames_diff(want, got, moving, spin_lines):
    """Side-by-side listing of two stacks, or None when they agree."""
    rows = []
    bad = len(want) != len(got)
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        why = None
        if w is None:
            why = "extra"
        else:
            why = frame_differs(w, g, moving and i == 0, spin_lines)
        bad = bad or why is not None
        rows.append("      #%-2d %s %-60s | %s%s" % (
            i, "!" if why else " ", fmt_frame(w), fmt_frame(g),
            "   <- " + why if why else ""))
    if not bad:
        return None
    return "\n".join(["frames differ (truth | pystrobe, innermost first):"]
                     + rows)


def compare_thread(rep, want, got, loose):
    moving = want.get("moving", False)
    label = "thread %r (ident %d)" % (want["name"], want["ident"])
    problems = []

    if got.get("name") != want["name"]:
        problems.append("name: truth %r, pystrobe %r"
                        % (want["name"], got.get("name")))
    for key in ("tid", "ns_tid"):
        if want.get(key) is not None and got.get(key) != want[key]:
            problems.append("%s: truth %s, pystrobe %s"
                            % (key, want[key], got.get(key)))
    soft = []
    for key in ("gil", "idle", "attached"):
        if key in want and got.get(key) != want[key]:
            soft.append("%s: truth %s, pystrobe %s"
                        % (key, want[key], got.get(key)))
    if got.get("error") is not None:
        soft.append("error: %r" % got.get("error"))
    if got.get("truncated"):
        soft.append("truncated: true")
    diff = frames_diff(want["frames"], python_frames(got), moving,
                       want.get("spin_lines", []))
    if diff:
        soft.append(diff)

    if moving and loose:
        for s in soft:
            rep.note("%s, spinner, not paused: %s" % (label, s))
    else:
        problems.extend(soft)
    for p in problems:
        rep.fail("%s: %s" % (label, p))
    return len(want["frames"])


def repr_matches(spec, local):
    """Exact repr, or for a container, a repr that states its length."""
    got = local.get("repr")
    if "repr" not in spec:
        return True
    if got == spec["repr"]:
        return True
    if spec["type"] == "str" and got == spec["repr"][1:-1]:
        return True
    if "len" in spec and got is not None:
        return re.search(r"(?<![\d.])%d(?![\d.])" % spec["len"], got) is not None
    return False


def check_locals(rep, truth, by_ident):
    spec = truth["locals_check"]
    threads = [t for t in truth["threads"] if t["name"] == spec["thread"]]
    got = by_ident.get(threads[0]["ident"]) if threads else None
    if got is None:
        rep.fail("locals: thread %r not in the dump" % spec["thread"])
        return 0
    frames = [f for f in python_frames(got)
              if f.get("function") == spec["function"]]
    if not frames:
        rep.fail("locals: no frame %r in thread %r"
                 % (spec["function"], spec["thread"]))
        return 0
    have = dict((l.get("name"), l) for l in frames[0].get("locals") or [])
    for want in spec["locals"]:
        where = "locals of %s: %s" % (spec["function"], want["name"])
        local = have.get(want["name"])
        if local is None:
            rep.fail("%s: missing (pystrobe has %s)"
                     % (where, sorted(k for k in have if k is not None)))
            continue
        if local.get("arg") != want["arg"]:
            rep.fail("%s: arg: truth %s, pystrobe %s"
                     % (where, want["arg"], local.get("arg")))
        if local.get("type") != want["type"]:
            rep.fail("%s: type: truth %r, pystrobe %r"
                     % (where, want["type"], local.get("type")))
        if not repr_matches(want, local):
            rep.fail("%s: repr: truth %r%s, pystrobe %r"
                     % (where, want.get("repr"),
                        " (or one giving len %d)" % want["len"]
                        if "len" in want else "", local.get("repr")))
    return len(spec["locals"])


def find_process(rep, truth, actual):
    procs = actual.get("processes") or []
    for p in procs:
        if p.get("pid") == truth["pid"]:
            return p
    rep.fail("process %d not in the dump (pids: %s)"
             % (truth["pid"], [p.get("pid") for p in procs]))
    return None


def host_tids(pid):
    """The target's thread ids -> ours, from the kernel's NSpid lines."""
    ids = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    v = [int(x) for x in line.split()[1:]]
                    ids[v[-1]] = v[0]
    return ids


def to_host_ids(truth, host_pid):
    """Truth as seen from outside the target's namespace."""
    ids = host_tids(host_pid)
    truth["ns_pid"] = truth["pid"]
    truth["pid"] = host_pid
    for want in truth["threads"]:
        if want.get("tid") is not None:
            want["ns_tid"] = want["tid"]
            want["tid"] = ids.get(want["tid"], "none of its threads")


def check_process(rep, truth, proc, minor_only):
    if "ns_pid" in truth and proc.get("ns_pid") != truth["ns_pid"]:
        rep.fail("ns_pid: truth %s, pystrobe %s"
                 % (truth["ns_pid"], proc.get("ns_pid")))
    want = truth["version_string"]
    got = (proc.get("python") or {}).get("version") or ""
    if minor_only:
        want = ".".join(want.split(".")[:2])
    # "3.14.0rc2" is fine for 3.14.0: sys.version_info has no room for "rc2".
    if not re.match(re.escape(want) + r"(?!\d)", got):
        rep.fail("python.version: truth %r, pystrobe %r" % (want, got))
    argv = truth.get("argv") or []
    cmdline = proc.get("cmdline") or []
    if argv and cmdline[-len(argv):] != argv:
        rep.fail("cmdline %r does not end with sys.argv %r" % (cmdline, argv))


def index_threads(rep, threads):
    by_ident = {}
    tids = set()
    for t in threads:
        ident = t.get("ident")
        if ident in by_ident:
            rep.fail("ident %s appears twice in the dump" % ident)
        by_ident[ident] = t
        tid = t.get("tid")
        if tid in tids and tid:
            rep.fail("tid %s appears twice in the dump" % tid)
        tids.add(tid)
    return by_ident


def compare(truth, actual, loose, want_locals, no_extra=False, minor_only=False):
    rep = Report()
    nthreads = nframes = nlocals = 0
    proc = find_process(rep, truth, actual)
    if proc is None:
        return rep, 0, 0, 0
    check_process(rep, truth, proc, minor_only)
    by_ident = index_threads(rep, proc.get("threads") or [])
    known = set()
    for want in truth["threads"]:
        known.add(want["ident"])
        got = by_ident.get(want["ident"])
        nthreads += 1
        if got is None:
            rep.fail("thread %r (ident %d, tid %s) missing from the dump"
                     % (want["name"], want["ident"], want.get("tid")))
            continue
        nframes += compare_thread(rep, want, got, loose)
    for ident, t in sorted(by_ident.items(), key=lambda kv: str(kv[0])):
        if ident not in known:
            top = python_frames(t)[:1]
            say = rep.fail if no_extra else rep.note
            say("extra thread in the dump: ident %s tid %s name %r, %s"
                % (ident, t.get("tid"), t.get("name"),
                   fmt_frame(top[0]) if top else "no frames"))
    if want_locals:
        nlocals = check_locals(rep, truth, by_ident)
    check_sources(rep, truth, by_ident)
    return rep, nthreads, nframes, nlocals


def check_sources(rep, truth, by_ident):
    """When the dump has source lines, the edited file must be among them,
    marked: a comparison that never saw the mark proves nothing."""
    got = [f for t in by_ident.values() for f in python_frames(t)]
    if not any("source" in f for f in got):
        return
    want = [f for t in truth["threads"] for f in t["frames"] if f.get("source_changed")]
    marked = [f for f in got if f.get("source_changed")]
    if want and not marked:
        rep.fail("no frame is marked source_changed (truth: %s)" % fmt_frame(want[0]))
    rep.note("source lines compared, %d frames marked changed" % len(marked))


def main(argv):
    flags = [a for a in argv[1:] if a.startswith("--")]
    args = [a for a in argv[1:] if not a.startswith("--")]
    host_pid = [int(f.split("=", 1)[1]) for f in flags
                if f.startswith("--host-pid=")]
    unknown = set(f for f in flags if not f.startswith("--host-pid=")) \
        - set(["--loose-moving", "--locals", "--no-extra", "--minor-version"])
    if len(args) != 2 or unknown:
        sys.stderr.write("usage: compare_dump.py [--loose-moving] [--locals]"
                         " [--no-extra] [--host-pid=PID] [--minor-version] TRUTH ACTUAL\n")
        return 2
    truth, actual = load(args[0]), load(args[1])
    if host_pid:
        to_host_ids(truth, host_pid[0])
    rep, nthreads, nframes, nlocals = compare(
        truth, actual, "--loose-moving" in flags, "--locals" in flags,
        "--no-extra" in flags, "--minor-version" in flags)
    for n in rep.notes:
        print("compare: note: %s" % n)
    summary = "%d threads, %d frames" % (nthreads, nframes)
    if "--locals" in flags:
        summary += ", %d locals" % nlocals
    if rep.failures:
        for f in rep.failures:
            print("compare: MISMATCH %s" % f)
        print("compare: %s, %d mismatches" % (summary, len(rep.failures)))
        return 1
    print("compare: %s, all match" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
