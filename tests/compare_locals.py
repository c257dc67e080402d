#!/usr/bin/env python3
"""Compare `pystrobe dump --locals` with the reprs a target wrote itself.

Usage: compare_locals.py [--deep] TRUTH JSON TEXT

TRUTH is the truth.json tests/targets/locals_corpus.py writes: the frame's
function and, per local, its name, type and the repr pystrobe must show.
JSON is `dump --locals --json`, TEXT is `dump --locals` of the same target.
In JSON the frame's locals must have exactly that type and repr; in TEXT
the line "NAME = REPR" must be there, character for character.  Neither
output may hold a raw control or format character (check_hostile.py's
rule).  With --deep, the outputs are of `dump --locals=deep` and each
local's "deep" is what they must show.  Prints the mismatches (a few per kind) and exits 1 on any, 0 when
all match, 2 on bad input.
"""
import json
import sys
import unicodedata


def unsafe(text):
    """Characters no output of pystrobe may write raw."""
    return sorted({"U+%04X" % ord(c) for c in text
                   if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0
                                     or unicodedata.category(c) in ("Cf", "Zl", "Zp"))})


def frame_locals(doc, pid, function):
    for p in doc.get("processes") or []:
        if p.get("pid") != pid:
            continue
        for t in p.get("threads") or []:
            for f in t.get("frames") or []:
                if f.get("function") == function:
                    return dict((l.get("name"), l) for l in f.get("locals") or [])
    return None


def short(s):
    return s if len(s) < 300 else s[:300] + "...(%d chars)" % len(s)


def main(argv):
    field = "repr"
    if argv[1:2] == ["--deep"]:
        field = "deep"
        argv = argv[:1] + argv[2:]
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    try:
        truth = json.load(open(argv[1]))
        raw_json = open(argv[2], "rb").read().decode("utf-8")
        doc = json.loads(raw_json)
        text = open(argv[3], "rb").read().decode("utf-8")
    except (OSError, ValueError) as e:
        sys.stderr.write("compare_locals: %s\n" % e)
        return 2
    failures = []
    for what, data in (("json", raw_json), ("text", text)):
        bad = unsafe(data)
        if bad:
            failures.append("%s: raw control or format characters %s" % (what, bad[:20]))
    have = frame_locals(doc, truth["pid"], truth["function"])
    if have is None:
        failures.append("json: no frame %r" % truth["function"])
        have = {}
    lines = set(l.strip() for l in text.split("\n"))
    n = 0
    for want in truth["locals"]:
        n += 1
        got = have.get(want["name"])
        if got is None:
            failures.append("json: %s missing" % want["name"])
            continue
        if got.get("type") != want["type"]:
            failures.append("json: %s: type %r, want %r" % (want["name"], got.get("type"), want["type"]))
        if got.get("repr") != want[field]:
            failures.append("json: %s: repr\n    got  %s\n    want %s"
                            % (want["name"], short(repr(got.get("repr"))), short(repr(want[field]))))
        if "%s = %s" % (want["name"], want[field]) not in lines:
            failures.append("text: no line %s" % short(repr("%s = %s" % (want["name"], want[field]))))
    for f in failures[:40]:
        print("compare_locals: MISMATCH %s" % f)
    print("compare_locals: %s%d locals (target's Unicode %s), %d mismatches"
          % ("--deep: " if field == "deep" else "", n, truth.get("unicode"), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
