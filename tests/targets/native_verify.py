#!/usr/bin/env python3
"""Judge `pystrobe dump --native --json` output for tests/live/check_native.c.
(It runs on the test's side, with the python3 in PATH, not in a target.)

Usage:
  native_verify.py qsort TRUTH DUMP
  native_verify.py descend TRUTH DUMP LEVELS DESCEND_RANGE PARK_RANGE [--stripped|--lines]
  native_verify.py agree TRUTH PYDUMP NATIVEDUMP
  native_verify.py record-qsort TRUTH COLLAPSED MERGE_ERRORS
  native_verify.py record-burn COLLAPSED LEVELS MERGE_ERRORS [GAPS [LATE]]
  native_verify.py record-jit TRUTH COLLAPSED GAPS MERGE_ERRORS
  native_verify.py record-stripped COLLAPSED LIBRARY UNSTRIPPED
  native_verify.py record-named COLLAPSED LIBRARY
  native_verify.py flame SVG

TRUTH is what tests/targets/native_stack.py (qsort, descend) or parked.py
(agree) wrote.  A RANGE is START-END in hex: where the function lies in
the unstripped library's link-time addresses.

qsort    the main thread's merged stack has the Python callback compare()
         as its first Python frame with only native frames above it, then
         native frames down through qsort, then caller() and the rest of
         the Python stack, in that order.
descend  the C -> Python -> C recursion: read as the merged stack from the
         top, park, then (strobe_descend, py_level) LEVELS + 1 times, each
         level once, in order.  The C++ park is named demangled,
         strobe::Deep<int>::park(int).  Every native frame of ours has an
         offset inside its function's range.  With --stripped nothing may
         name those functions: they must read library+offset, no function,
         the offset their function's start (from its FDE).
         With --lines each of them also has its source file
         (strobe_ext.c, strobe_cxx.cpp) and a line.
agree    a plain dump and a native dump of the same (parked) moment have the
         same Python frames for every thread; every thread's native dump
         merged, with native frames and no eval loop frame left over.
record-qsort  `record --native -f collapsed` of native_stack.py qsort: the
         main thread's stack has the Python frames of TRUTH in order, a
         qsort frame between caller and compare and no Python frame
         there, and native frames above compare (where it sleeps); at
         most MERGE_ERRORS stacks with no native frame (merge fallbacks).
record-burn   `record --native -f collapsed` of native_burn.py: every
         worker stack reads (py_level, strobe_descend)* from the root, then
         py_level alone, with py_work, or with strobe_descend, strobe_spin
         at the bottom (LEVELS + 1 of each there), as native_burn.py's code
         calls them; stacks without a native frame (merge fallbacks) number
         at most MERGE_ERRORS, those with a native gap at most GAPS (the
         summary's counts), and both the C spin and Python work show up.
         A stack of a thread late to its pause, read running, ends in
         LATE_FRAME after its Python frames alone: (py_level)+ then
         py_work or not, or worker() alone (a thread the pause held while
         it pushed py_level's frame is read once it runs: it may be
         caught between two calls); at most LATE of them (the summary's
         count).
record-jit    `record --native -f collapsed` of jit_spin.py, whose main
         thread runs code without unwind tables: a stack through caller()
         reads TRUTH's Python frames, then either native frames (ctypes on
         its way in or out), or the gap marker right after caller() and
         native frames only after it (the JIT code).  The stacks with a gap
         are exactly GAPS (the summary's "native gap"), at least half of
         caller()'s; stacks with no native frame at most MERGE_ERRORS.
record-stripped  `record --native -f collapsed` of native_burn.py with
         the stripped LIBRARY (a base name): its frames read LIBRARY+0xN,
         each N the start of a function in UNSTRIPPED's symbol table (nm),
         never the name of a static function, one frame per function;
         strobe_spin's and strobe_descend's among them.
record-named  the same once debuginfod sent LIBRARY's debug file: no frame
         reads LIBRARY+0xN, and strobe_spin, strobe_descend or park is
         named.
flame    the flame graph of native_burn.py: strobe_spin and strobe_descend
         boxes in the native palette (blue to purple), py_level and py_work
         outside it.
names SVG SPEEDSCOPE PPROF SVG_FULL  `record --native` of native_stack.py
         descend in three formats and with --full-names: the C++ park is
         strobe::Deep<…>::park in the flame graph's labels, its whole
         name in the tooltips, speedscope's and pprof's function names and,
         with --full-names, the labels; every label at most 120
         characters; both SVGs well-formed for xmllint.

Always: the Python frames of the merged stack are exactly the Python
stack, and no frame is the interpreter's eval loop.  A stack that ends in
LATE_FRAME (its thread did not stop in time: no native frames) has only
Python frames before it, and is judged by them.  Prints one line on
success, the reasons and the offending stack on failure (exit 1).
"""
import json
import os
import sys

EVAL = "_PyEval_EvalFrameDefault"
PARK = "strobe::Deep<int>::park(int)"


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def threads_of(dump):
    return dump["processes"][0]["threads"]


def describe(frame):
    if frame["kind"] == "python":
        return "%s (%s:%s)" % (frame["function"], frame["file"], frame["line"])
    where = "%s+0x%x" % (frame["library"], frame["offset"]) if frame["library"] \
        else "0x%x" % frame["address"]
    return "[native] %s (%s)" % (frame["function"], where)


def show(thread):
    return "\n".join("      " + describe(f) for f in thread["frames"])


def main_thread(truth, dump):
    for t in threads_of(dump):
        # The target's own id: ns_tid where pystrobe gives one (it
        # differs from tid in a PID namespace).
        if truth.get("tid") and t.get("ns_tid", t["tid"]) == truth["tid"]:
            return t
    for t in threads_of(dump):
        if t["name"] == "MainThread":
            return t
    return None


def python_names(thread):
    return [f["function"] for f in thread["frames"] if f["kind"] == "python"]


def common(thread, want_python, fails):
    if thread is None:
        fails.append("the main thread is not in the dump")
        return False
    if thread.get("native_error"):
        fails.append("no merged stack: %s" % thread["native_error"])
        return False
    if not any(f["kind"] == "native" for f in thread["frames"]):
        fails.append("no native frames")
    got = python_names(thread)
    if want_python is not None and got != want_python:
        fails.append("Python frames %s, want %s" % (got, want_python))
    for f in thread["frames"]:
        if f["kind"] == "native" and (f["function"] or "").startswith(EVAL):
            fails.append("an eval loop frame was left in: %s" % describe(f))
    return True


def verify_qsort(truth, dump, fails):
    t = main_thread(truth, dump)
    if not common(t, truth["python"], fails):
        return t
    frames = t["frames"]
    kinds = [f["kind"] for f in frames]
    first_py = kinds.index("python")
    if frames[first_py]["function"] != "compare":
        fails.append("first Python frame is %s, want compare"
                     % frames[first_py]["function"])
    try:
        caller = next(i for i, f in enumerate(frames)
                      if f["kind"] == "python" and f["function"] == "caller")
    except StopIteration:
        fails.append("no caller frame")
        return t
    between = frames[first_py + 1:caller]
    if any(f["kind"] != "native" for f in between):
        fails.append("Python frames between compare and caller")
    if not any((f["function"] or "").startswith("qsort") for f in between):
        fails.append("no qsort frame between compare and caller")
    return t


def parse_range(text):
    lo, hi = text.split("-")
    return int(lo, 16), int(hi, 16)


def verify_descend(truth, dump, levels, descend, park, stripped, lines, fails):
    t = main_thread(truth, dump)
    if not common(t, truth["python"], fails):
        return t
    ours = []
    for f in t["frames"]:
        if f["kind"] == "python":
            if f["function"] == "py_level":
                ours.append("py_level")
            continue
        if not (f["library"] or "").endswith("strobe_ext.so"):
            continue
        for name, (lo, hi), want in (("descend", descend, "strobe_descend"),
                                     ("park", park, PARK)):
            if not lo <= f["offset"] < hi:
                continue
            ours.append(name)
            if stripped and f["function"] is not None:
                fails.append("stripped library, yet named: %s" % describe(f))
            if stripped and f["offset"] != lo:
                fails.append("stripped library: %s is not at %s's start, 0x%x"
                             % (describe(f), name, lo))
            if not stripped and f["function"] != want:
                fails.append("%s named %r, want %r" % (name, f["function"], want))
            source = "strobe_ext.c" if name == "descend" else "strobe_cxx.cpp"
            if lines and (not (f["file"] or "").endswith(source) or not f["line"]):
                fails.append("%s without its source line in %s: %s (file %r, line %r)"
                             % (name, source, describe(f), f["file"], f["line"]))
        if not stripped and f["function"] in ("strobe_descend", PARK) and \
                not any(lo <= f["offset"] < hi for lo, hi in (descend, park)):
            fails.append("offset outside the function: %s" % describe(f))
    want = ["park"] + ["descend", "py_level"] * (levels + 1)
    if ours != want:
        fails.append("levels read %s, want %s" % (ours, want))
    return t


def collapsed(path):
    """[(labels root first, count)] of a collapsed file."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            out.append((stack.split(";"), int(count)))
    return out


def label_name(label):
    """'f (file:line)' -> ('f', 'file:line'); a bare name -> (name, None)."""
    if label.endswith(")") and " (" in label:
        name, where = label[:-1].rsplit(" (", 1)
        return name, where
    return label, None


def is_python(label):
    where = label_name(label)[1]
    return where is not None and (".py:" in where or where.endswith(".py") or
                                  where.startswith("<"))


def verify_record_qsort(truth, path, merge_errors, fails):
    lines = [(st, n) for st, n in collapsed(path)
             if any(label_name(l)[0] == "caller" for l in st)]
    if not lines:
        fails.append("no stack with caller()")
        return
    for st, n in lines:
        if late_stack(st, fails) and [label_name(l)[0] for l in st if is_python(l)] != \
                list(reversed(truth["python"])):
            fails.append("a late stack's Python frames: %s" % ";".join(st))
    lines = [(st, n) for st, n in lines if st[-1] != LATE_FRAME]
    fallback = sum(n for st, n in lines if all(is_python(l) for l in st))
    if fallback > merge_errors:
        fails.append("%d stacks without native frames, but %d merge errors counted"
                     % (fallback, merge_errors))
    for st, n in lines:
        if all(is_python(l) for l in st):
            continue
        names = [label_name(l)[0] for l in st]
        py = [label_name(l)[0] for l in st if is_python(l)]
        if py != list(reversed(truth["python"])):
            fails.append("Python frames %s, want %s" % (py, list(reversed(truth["python"]))))
        if "compare" not in names:
            fails.append("no compare frame: %s" % ";".join(st))
            continue
        c, k = names.index("caller"), names.index("compare")
        between = st[c + 1:k]
        if any(is_python(l) for l in between) or \
                not any(label_name(l)[0].startswith("qsort") for l in between):
            fails.append("between caller and compare, want native frames with qsort: %s"
                         % between)
        if k == len(st) - 1:
            fails.append("no native frame above compare: %s" % ";".join(st))


OURS = {"py_level": "P", "strobe_descend": "D", "strobe_spin": "S", "py_work": "W"}


def late_stack(st, fails):
    """Does the stack end in LATE_FRAME?  Then all before it must be Python
    frames (or the thread's root)."""
    if not st or st[-1] != LATE_FRAME:
        return False
    if not all(is_python(l) or l.startswith("thread ") for l in st[:-1]):
        fails.append("a late stack with frames not Python: %s" % ";".join(st))
    return True


def verify_record_burn(path, levels, merge_errors, gaps, fails, late_max=None):
    import re
    shape = re.compile(r"^(PD)*(P(W|DS)?)?$")
    fallback = spin = work = total = gapped = late = 0
    for st, n in collapsed(path):
        if not any(label_name(l)[0] == "worker" for l in st):
            continue
        total += n
        if late_stack(st, fails):
            late += n
            seq = "".join(OURS.get(label_name(l)[0], "") for l in st)
            if not re.match(r"^(P+W?)?$", seq) or seq.count("P") > levels + 1:
                fails.append("a late stack's levels read %s: %s" % (seq, ";".join(st)))
            continue
        if all(is_python(l) for l in st if label_name(l)[0] != "worker" and
               not l.startswith("thread ")):
            fallback += n
            continue
        # A partial merge (the unwind stopped short; a debug build's
        # inlined helpers): its C levels are not known, only counted.
        if GAP in st:
            gapped += n
            continue
        seq = "".join(OURS.get(label_name(l)[0], "") for l in st)
        if not shape.match(seq) or seq.count("P") > levels + 1 or \
                ("S" in seq and seq.count("P") != levels + 1):
            fails.append("levels read %s (%d samples): %s" % (seq, n, ";".join(st)))
        spin += n if seq.endswith("S") else 0
        work += n if seq.endswith("W") else 0
    if fallback > merge_errors:
        fails.append("%d stacks without native frames, but %d merge errors counted"
                     % (fallback, merge_errors))
    if gapped > gaps:
        fails.append("%d stacks with a native gap, but %d native gaps counted"
                     % (gapped, gaps))
    if late_max is not None and late > late_max:
        fails.append("%d late stacks, but %d counted without native frames"
                     % (late, late_max))
    if not spin or not work:
        fails.append("%d samples in strobe_spin, %d in py_work of %d: want both"
                     % (spin, work, total))
    return total, spin, work, fallback


GAP = "<unknown native frames>"
LATE_FRAME = "<native: not stopped in time>"


def verify_record_jit(truth, path, gaps, merge_errors, fails):
    want = list(reversed(truth["python"]))
    total = with_gap = fallback = 0
    for st, n in collapsed(path):
        if GAP in st and not any(label_name(l)[0] == "caller" for l in st):
            fails.append("a gap outside caller(): %s" % ";".join(st))
        if not any(label_name(l)[0] == "caller" for l in st):
            continue
        py = [label_name(l)[0] for l in st if is_python(l)]
        if py[:len(want)] != want:
            fails.append("Python frames %s, want %s first" % (py, want))
        # A late thread's sample has no native part by design: it says
        # nothing of the merge (a loaded machine has many).
        if late_stack(st, fails):
            continue
        total += n
        if all(is_python(l) for l in st):
            fallback += n
            continue
        if GAP not in st:
            continue
        with_gap += n
        k = st.index(GAP)
        if label_name(st[k - 1])[0] != "caller" or k + 1 == len(st) or \
                any(is_python(l) or l == GAP for l in st[k + 1:]):
            fails.append("want caller, the gap, then native frames: %s" % ";".join(st))
    if with_gap != gaps:
        fails.append("%d stacks with a gap, the summary counts %d" % (with_gap, gaps))
    if with_gap * 2 < total:
        fails.append("%d stacks of %d with a gap: the JIT code is not merged"
                     % (with_gap, total))
    if fallback > merge_errors:
        fails.append("%d stacks without native frames, but %d merge errors counted"
                     % (fallback, merge_errors))
    return total, with_gap, fallback


def function_starts(lib):
    """{start: name} of the functions in lib's symbol table."""
    import subprocess
    out = subprocess.run(["nm", "--defined-only", lib], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    starts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwWiI":
            starts.setdefault(int(parts[0], 16), parts[2])
    return starts


def verify_record_stripped(path, lib, unstripped, fails):
    starts = function_starts(unstripped)
    rows = {}
    for st, n in collapsed(path):
        for label in st:
            name = label_name(label)[0]
            if name in ("strobe_spin", "strobe_descend", PARK):
                fails.append("stripped library, yet named: %s" % label)
            if not name.startswith(lib + "+0x"):
                continue
            off = int(name[len(lib) + 3:], 16)
            if off not in starts:
                fails.append("%s is at no function's start" % name)
            rows[off] = rows.get(off, 0) + n
    for want in ("strobe_spin", "strobe_descend"):
        if not any(starts.get(off) == want for off in rows):
            fails.append("no frame at %s's start" % want)
    return len(rows), ", ".join("%s %d" % (starts.get(off, "?"), n)
                                for off, n in sorted(rows.items(), key=lambda r: -r[1]))


def verify_record_named(path, lib, fails):
    named = {}
    for st, n in collapsed(path):
        for label in st:
            name = label_name(label)[0]
            if name.startswith(lib + "+0x"):
                fails.append("still an address: %s" % label)
            if name in ("strobe_spin", "strobe_descend", PARK):
                named[name] = named.get(name, 0) + n
    if not named:
        fails.append("none of strobe_spin, strobe_descend, park named")
    return ", ".join("%s %d" % kv for kv in sorted(named.items()))


def is_native_colour(hexrgb):
    # out_flamegraph.c: CAT_NATIVE is r 100-180, g 100-140, b 210-255.
    r, g, b = (int(hexrgb[i:i + 2], 16) for i in (0, 2, 4))
    return 100 <= r <= 180 and 100 <= g <= 140 and b >= 210


def verify_flame(path, fails):
    import re
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    boxes = re.findall(r'<title>([^<]*?) \(\d+ samples?, [^<]*\)</title><rect [^>]*fill="#([0-9a-f]{6})"', svg)
    seen = {}
    for label, colour in boxes:
        name = label_name(label)[0]
        if name in OURS:
            seen.setdefault(name, set()).add(is_native_colour(colour))
    for name, native in (("strobe_spin", True), ("strobe_descend", True),
                         ("py_level", False), ("py_work", False)):
        if name not in seen:
            fails.append("no %s box in the flame graph" % name)
        elif seen[name] != {native}:
            fails.append("%s drawn %s the native palette" % (name, "outside" if native else "in"))
    return len(boxes)


PARK_SHORT = "strobe::Deep<\u2026>::park"
LABEL_MAX = 120                 # shortname.h's SHORT_NAME_MAX


def svg_boxes(path, fails):
    """[(title's label, data-l or None, text drawn)] of a flame graph that
    xmllint finds well-formed."""
    import re
    import shutil
    import subprocess
    import xml.etree.ElementTree as ET
    if not shutil.which("xmllint"):
        fails.append("no xmllint (apt-get install libxml2-utils) to check %s" % path)
        return []
    r = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True)
    if r.returncode or r.stderr:
        fails.append("xmllint --noout %s: %d %s" % (path, r.returncode, r.stderr[:500]))
        return []
    ns = "{http://www.w3.org/2000/svg}"
    out = []
    for g in ET.parse(path).iter(ns + "g"):
        title, text = g.find(ns + "title"), g.find(ns + "text")
        if title is None or text is None:
            continue
        label = re.sub(r" \(\d+ samples?, [^)]*\)$", "", title.text.split("\n")[0])
        out.append((label, g.get("data-l"), text.text or ""))
    return out


def verify_names(svg, speedscope, pprof, svg_full, fails):
    """The C++ park, a template, short in the flame graph's labels, whole in
    its tooltips, in speedscope and in pprof, and whole everywhere with
    --full-names."""
    import gzip
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import decode_pprof
    boxes = svg_boxes(svg, fails)
    park = [(d, t) for l, d, t in boxes if label_name(l)[0] == PARK]
    if boxes and not park:
        fails.append("no box whose tooltip is %s in %s" % (PARK, svg))
    for d, t in park:
        if d is None or label_name(d)[0] != PARK_SHORT:
            fails.append("%s is labelled %r, not %s" % (PARK, d, PARK_SHORT))
        elif t and not d.startswith(t[:-2] if t.endswith("..") else t):
            fails.append("%s: the text drawn %r is not its label %r" % (PARK, t, d))
    longest = max([len(label_name(d or l)[0]) for l, d, t in boxes] or [0])
    if longest > LABEL_MAX:
        fails.append("a label of %d characters in %s" % (longest, svg))
    with open(speedscope, encoding="utf-8") as f:
        names = set(label_name(fr["name"])[0] for fr in json.load(f)["shared"]["frames"])
    if PARK not in names or PARK_SHORT in names:
        fails.append("speedscope: %s %s, %s %s" % (PARK, PARK in names, PARK_SHORT,
                                                    PARK_SHORT in names))
    with open(pprof, "rb") as f:
        funcs = decode_pprof.decode(gzip.decompress(f.read()))["functions"]
    if not any(fn["name"] == PARK for fn in funcs):
        fails.append("pprof: no function %s: %s" % (PARK, [fn["name"] for fn in funcs][:20]))
    full = [(d, t) for l, d, t in svg_boxes(svg_full, fails) if label_name(l)[0] == PARK]
    if not full or any(d is not None or not t.startswith("strobe::Deep<int>") for d, t in full):
        fails.append("--full-names: the boxes of %s: %s" % (PARK, full))
    return len(park), longest


def verify_agree(truth, plain, native, fails):
    moving = set(t["ident"] for t in truth["threads"] if t.get("moving"))
    plain_by = dict((t["ident"], t) for t in threads_of(plain))
    for t in threads_of(native):
        p = plain_by.get(t["ident"])
        if p is None:
            fails.append("thread %s only in the native dump" % t["name"])
            continue
        common(t, None, fails)
        a = [f for f in p["frames"] if f["kind"] == "python"]
        b = [f for f in t["frames"] if f["kind"] == "python"]
        keys = ("function", "file") if t["ident"] in moving else ("function", "file", "line")
        if [[f[k] for k in keys] for f in a] != [[f[k] for k in keys] for f in b]:
            fails.append("thread %s: Python frames differ:\n  plain:  %s\n  native: %s"
                         % (t["name"], [describe(f) for f in a], [describe(f) for f in b]))
    if len(threads_of(native)) != len(threads_of(plain)):
        fails.append("%d threads in the plain dump, %d in the native one"
                     % (len(threads_of(plain)), len(threads_of(native))))
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    stripped = "--stripped" in sys.argv
    lines = "--lines" in sys.argv
    mode, fails, t = args[0], [], None
    if mode == "record-burn":
        r = verify_record_burn(args[1], int(args[2]), int(args[3]),
                               int(args[4]) if len(args) > 4 else 0, fails,
                               int(args[5]) if len(args) > 5 else None)
        if fails:
            print("FAILED: " + "\n  ".join(fails[:10]))
            return 1
        print("OK (%d worker samples: %d in strobe_spin, %d in py_work, %d Python only)" % r)
        return 0
    if mode == "record-stripped":
        r = verify_record_stripped(args[1], args[2], args[3], fails)
        if fails:
            print("FAILED: " + "\n  ".join(sorted(set(fails))[:10]))
            return 1
        print("OK (%d frames of the library, each at a function's start: %s)" % r)
        return 0
    if mode == "record-named":
        r = verify_record_named(args[1], args[2], fails)
        if fails:
            print("FAILED: " + "\n  ".join(sorted(set(fails))[:10]))
            return 1
        print("OK (named: %s)" % r)
        return 0
    if mode == "names":
        r = verify_names(args[1], args[2], args[3], args[4], fails)
        if fails:
            print("FAILED: " + "\n  ".join(fails))
            return 1
        print("OK (%d boxes of park, short; the longest label %d characters)" % r)
        return 0
    if mode == "flame":
        n = verify_flame(args[1], fails)
        if fails:
            print("FAILED: " + "\n  ".join(fails))
            return 1
        print("OK (%d boxes)" % n)
        return 0
    truth = load(args[1])
    if mode == "record-jit":
        r = verify_record_jit(truth, args[2], int(args[3]), int(args[4]), fails)
        if fails:
            print("FAILED: " + "\n  ".join(fails[:10]))
            return 1
        print("OK (%d samples in caller: %d with the gap, %d Python only)" % r)
        return 0
    if mode == "record-qsort":
        verify_record_qsort(truth, args[2], int(args[3]), fails)
        if fails:
            print("FAILED: " + "\n  ".join(fails[:10]))
            return 1
        print("OK")
        return 0
    if mode == "qsort":
        t = verify_qsort(truth, load(args[2]), fails)
    elif mode == "descend":
        t = verify_descend(truth, load(args[2]), int(args[3]), parse_range(args[4]),
                           parse_range(args[5]), stripped, lines, fails)
    elif mode == "agree":
        verify_agree(truth, load(args[2]), load(args[3]), fails)
    else:
        sys.stderr.write("native_verify: unknown mode %s\n" % mode)
        return 2
    if fails:
        print("FAILED: " + "\n  ".join(fails))
        if t is not None:
            print("    merged stack:\n" + show(t))
        return 1
    if t is not None:
        n = sum(1 for f in t["frames"] if f["kind"] == "native")
        print("OK (%d frames, %d native)" % (len(t["frames"]), n))
    else:
        print("OK (%d threads agree)" % len(threads_of(load(args[3]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
