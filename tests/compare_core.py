#!/usr/bin/env python3
"""Compare `pystrobe dump --core --json` with what else is known.

Usage: compare_core.py live TRUTH LIVE CORE CORE_PATH
       compare_core.py quit TRUTH LIVE CORE CORE_PATH
       compare_core.py crash TRUTH CORE
       compare_core.py crash-native TRUTH CORE

live:  CORE is the dump of a gcore of the target LIVE was dumped from, while
       it stayed parked (TRUTH is parked.py's truth.json).  Every thread of
       LIVE must be in CORE with the same tid, ns_tid, ident and name, and
       identical frames: every key of every frame (function, file, line,
       interpreter, source, locals...) but source_changed, which a core
       judges against its own time, not the process's start.  The spinner
       (moving in TRUTH) moves between the two: of its innermost frame
       only function and file are compared, and its locals not at all.
       CORE must name CORE_PATH, record no crash and mark no thread crashed.
       A core records no run state: every thread of CORE has "idle": null,
       every thread of LIVE true or false.

quit:  the same for the kernel's core of the target killed by SIGQUIT
       after LIVE: the crash is SIGQUIT (no address) in the one thread
       marked crashed.

crash: TRUTH is tests/targets/crash_core.py's truth.json, CORE the dump of
       its kernel core.  The crash must be SIGSEGV at TRUTH's fault address
       in TRUTH's thread, that thread (and only it) marked crashed, its
       Python frames ctypes' string_at() then exactly TRUTH's crash_frames,
       and every parked thread's frames exactly TRUTH's; "idle" null in
       every thread.

crash-native: the same for a dump with --native, whose crashing thread
       must also have merged native frames (no native_error), the innermost
       one native in a mapped object (the code that faulted, in C), a native
       frame between string_at and the crash (the ctypes call), and its
       Python frames in the same order as without.

Prints what differs and exits 1, 0 when all agree, 2 on bad input.
"""
import json
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("compare_core: cannot read %s: %s\n" % (path, e))
        sys.exit(2)


def process(doc):
    procs = doc.get("processes") or []
    if len(procs) != 1:
        sys.stderr.write("compare_core: want one process, got %d\n" % len(procs))
        sys.exit(2)
    return procs[0]


def frame_keys(f, moving_top):
    f = dict(f)
    f.pop("source_changed", None)
    if moving_top:
        f = {"function": f.get("function"), "file": f.get("file")}
    elif "locals" in f and f.get("_moving"):
        f.pop("locals")
    return f


def check_idle_unknown(core):
    """A core records no run state: idle is null (present, not false)."""
    return ["thread %s %r: idle is %r in a core, not null"
            % (t["tid"], t.get("name"), t.get("idle", "absent"))
            for t in core["threads"] if "idle" not in t or t["idle"] is not None]


def check_quit(core):
    crash = core.get("crash") or {}
    if crash.get("signal") != "SIGQUIT" or crash.get("address", 0) is not None:
        return ["crash %r, not SIGQUIT without an address" % (core.get("crash"),)]
    marked = [t["tid"] for t in core["threads"] if t.get("crashed")]
    if marked != [crash.get("tid")]:
        return ["threads marked crashed: %r, want [%r]" % (marked, crash.get("tid"))]
    return []


def compare_live(truth, live, core, core_path, quit):
    bad = []
    moving = set(t["ident"] for t in truth["threads"] if t.get("moving"))
    if core.get("core") != core_path:
        bad.append("core is %r, not %r" % (core.get("core"), core_path))
    if quit:
        bad += check_quit(core)
    elif core.get("crash") is not None:
        bad.append("a crash in a gcore: %r" % core.get("crash"))
    by_tid = dict((t["tid"], t) for t in core["threads"])
    for lt in live["threads"]:
        ct = by_tid.get(lt["tid"])
        label = "thread %s %r" % (lt["tid"], lt.get("name"))
        if ct is None:
            bad.append("%s: not in the core's dump" % label)
            continue
        for key in ("ns_tid", "ident", "name", "interpreters", "truncated", "error"):
            if lt.get(key) != ct.get(key):
                bad.append("%s: %s live %r, core %r" % (label, key, lt.get(key), ct.get(key)))
        if not quit and ct.get("crashed") is not False:
            bad.append("%s: crashed is %r" % (label, ct.get("crashed")))
        if not isinstance(lt.get("idle"), bool):
            bad.append("%s: idle is %r live, not true or false" % (label, lt.get("idle")))
        mv = lt["ident"] in moving
        lf, cf = lt["frames"], ct["frames"]
        if len(lf) != len(cf):
            bad.append("%s: %d frames live, %d in the core" % (label, len(lf), len(cf)))
        for i, (a, b) in enumerate(zip(lf, cf)):
            if mv:
                a = dict(a, _moving=True)
                b = dict(b, _moving=True)
            if frame_keys(a, mv and i == 0) != frame_keys(b, mv and i == 0):
                bad.append("%s: frame #%d differs:\n    live %r\n    core %r" % (label, i, a, b))
    if len(core["threads"]) != len(live["threads"]):
        bad.append("%d threads live, %d in the core" % (len(live["threads"]), len(core["threads"])))
    return bad + check_idle_unknown(core)


def py_frames(t):
    return [{"function": f["function"], "file": f["file"], "line": f["line"]}
            for f in t["frames"] if f.get("kind", "python") == "python"]


def check_native(me):
    frames = me["frames"]
    if me.get("native_error") is not None:
        return ["crashing thread: native_error %r" % me.get("native_error")]
    # Named where the object has a symbol for it (sid's libc keeps none
    # for its memmove variants: then library+offset, as live).
    if not frames or frames[0].get("kind") != "native" or not frames[0].get("library"):
        return ["crashing thread: innermost frame is not a native frame in an object: %r" % (frames[:1],)]
    kinds = [f.get("kind") for f in frames]
    first_py = kinds.index("python") if "python" in kinds else -1
    if first_py < 2:
        return ["crashing thread: no native frames between the fault and string_at: %r" % kinds]
    return []


def compare_crash(truth, core, native=False):
    bad = []
    crash = core.get("crash") or {}
    if crash.get("signal") != "SIGSEGV":
        bad.append("crash signal %r, not SIGSEGV" % crash.get("signal"))
    if crash.get("address") != truth["fault_address"]:
        bad.append("fault address %r, not %r" % (crash.get("address"), truth["fault_address"]))
    by_ident = dict((t["ident"], t) for t in core["threads"])
    me = by_ident.get(truth["ident"])
    if me is None:
        return bad + ["the crashing thread (ident %d) is not in the dump" % truth["ident"]]
    if truth["tid"] is not None and (me["tid"] != truth["tid"] or crash.get("tid") != truth["tid"]):
        bad.append("crashing thread tid %r (crash.tid %r), not %r" % (me["tid"], crash.get("tid"), truth["tid"]))
    marked = [t["tid"] for t in core["threads"] if t.get("crashed")]
    if marked != [me["tid"]]:
        bad.append("threads marked crashed: %r, want [%r]" % (marked, me["tid"]))
    if native:
        bad += check_native(me)
    bad += check_idle_unknown(core)
    got = py_frames(me)
    if not got or not got[0]["function"].endswith("string_at"):
        bad.append("innermost frame is not ctypes' string_at: %r" % (got[:1],))
    tail = got[len(got) - len(truth["crash_frames"]):]
    if tail != truth["crash_frames"] or len(got) != len(truth["crash_frames"]) + 1:
        bad.append("crashing thread's frames:\n    want string_at + %r\n    got  %r" % (truth["crash_frames"], got))
    for t in truth["threads"]:
        ct = by_ident.get(t["ident"])
        if ct is None:
            bad.append("thread %r is not in the dump" % t["name"])
        elif ct.get("name") != t["name"] or py_frames(ct) != t["frames"]:
            bad.append("thread %r:\n    want %r %r\n    got  %r %r" % (t["name"], t["name"], t["frames"], ct.get("name"), py_frames(ct)))
    return bad


def main(argv):
    if len(argv) == 6 and argv[1] in ("live", "quit"):
        bad = compare_live(load(argv[2]), process(load(argv[3])), process(load(argv[4])), argv[5],
                           argv[1] == "quit")
    elif len(argv) == 4 and argv[1] in ("crash", "crash-native"):
        bad = compare_crash(load(argv[2]), process(load(argv[3])), argv[1] == "crash-native")
    else:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    for b in bad:
        print("MISMATCH " + b)
    if not bad:
        print("core and %s agree" % ("truth" if argv[1].startswith("crash") else "live dump"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
