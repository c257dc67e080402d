#!/usr/bin/env python3
"""Check every output pystrobe made of tests/targets/hostile.py.

    check_hostile.py DIR

DIR holds truth.json (the names as the target holds them) and whichever of
dump.txt, dump.json, dump-locals.txt, dump-locals.json, out.collapsed, out.flamegraph, out.speedscope,
out.chrometrace, out.pprof, top.txt are there.  Every one must parse as its
format and show the hostile names safely:

  - no output, whatever its format, holds a raw control character (but
    newline) or Unicode format character (bidi overrides, zero-width
    characters, line separators: Cf, Zl, Zp);
  - terminal text (dump, top): valid UTF-8, the names shown escaped (a
    control as \\xNN, a format character as \\uXXXX); a str local as
    repr() shows it;
  - JSON (dump --json, speedscope, Chrome trace): parses strictly; the
    names are the target's own, character for character (JSON escapes
    them), but for the invalid UTF-8 (U+FFFD) and the cut of 10 kB names;
  - collapsed: one "stack COUNT" per line, valid UTF-8, no control
    character, ';' only between frames: every frame is "name (file:line)";
  - SVG: parsed as XML (xmllint runs too), the names in its titles;
  - pprof: decoded by decode_pprof.py, the names among its functions.

Prints one line per file checked; exits 1 with the reasons on failure.
"""
import json
import os
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
FRAME = re.compile(r"^.* \((.*):-?\d+\)$|^<truncated>$|^thread .*$|^process .*$")
failures = []
checked = []


def fail(what, why):
    failures.append("%s: %s" % (what, why))


def unsafe(c):
    return ((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0
            or unicodedata.category(c) in ("Cf", "Zl", "Zp"))


def safe_text(what, data):
    """Valid UTF-8 with no control character but newline and no format
    character; the text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(what, "not valid UTF-8: %s" % e)
        return None
    bad = sorted({"%#x" % ord(c) for c in text if unsafe(c)})
    if bad:
        fail(what, "raw control or format characters %s" % ", ".join(bad))
    return text


def shown(name):
    """A name as a terminal line shows it: controls as \\xNN, format
    characters as \\uXXXX."""
    return "".join(("\\x%02x" % ord(c) if ord(c) < 0x100 else "\\u%04x" % ord(c))
                   if unsafe(c) or c == "\n" else c for c in name)


def check_dump_text(path, truth):
    text = safe_text("dump", open(path, "rb").read())
    if text is None:
        return
    for key in ("function", "thread"):
        if shown(truth[key]) not in text:
            fail("dump", "the %s name is not shown escaped" % key)
    if "\ufffd" not in text:
        fail("dump", "the invalid UTF-8 in the file name is not U+FFFD")
    checked.append("dump text")


def load_json(what, path):
    """The document, strictly parsed, its text checked; None on failure."""
    data = open(path, "rb").read()
    safe_text(what, data)
    try:
        return json.loads(data)
    except ValueError as e:
        fail(what, "does not parse: %s" % e)
        return None


def check_dump_json(path, truth):
    doc = load_json("dump --json", path)
    if doc is None:
        return
    threads = doc["processes"][0]["threads"]
    frames = [f for t in threads for f in t["frames"]]
    if truth["thread"] not in [t["name"] for t in threads]:
        fail("dump --json", "no thread named exactly %r" % truth["thread"])
    if truth["function"] not in [f.get("function") for f in frames]:
        fail("dump --json", "no function named exactly %r" % truth["function"])
    longs = [f["function"] for f in frames
             if f.get("function", "").startswith(truth["long"][:64])]
    if not longs:
        fail("dump --json", "the 10 kB function is missing")
    elif longs[0] != truth["long"] and not longs[0].endswith("..."):
        fail("dump --json", "the 10 kB name is cut without a mark")
    want = truth["file"].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    files = [f.get("file") for f in frames]
    if want not in files and not any(w and w.startswith(want[:-3]) for w in files):
        fail("dump --json", "no file %r (invalid UTF-8 as U+FFFD)" % want)
    checked.append("dump json")


def check_locals_text(path, truth):
    text = safe_text("dump --locals", open(path, "rb").read())
    if text is None:
        return
    if "evil = %s\n" % truth["evil_repr"] not in text:
        fail("dump --locals", "the str local is not shown as repr() shows it")
    checked.append("dump --locals text")


def check_locals_json(path, truth):
    doc = load_json("dump --locals --json", path)
    if doc is None:
        return
    reprs = [l.get("repr") for t in doc["processes"][0]["threads"]
             for f in t["frames"] for l in f.get("locals") or []]
    if truth["evil_repr"] not in reprs:
        fail("dump --locals --json", "no local with repr %r" % truth["evil_repr"])
    checked.append("dump --locals json")


def check_collapsed(path, truth):
    text = safe_text("collapsed", open(path, "rb").read())
    if text is None:
        return
    lines = [l for l in text.split("\n") if l]
    if not lines:
        return fail("collapsed", "empty")
    hostile = 0
    for line in lines:
        m = re.match(r"^(.+) (\d+)$", line)
        if not m:
            fail("collapsed", "not 'stack COUNT': %.200r" % line)
            continue
        for frame in m.group(1).split(";"):
            if not FRAME.match(frame):
                fail("collapsed", "';' inside a frame: %.200r" % frame)
                break
        hostile += "\\x1b[31m" in line
    if not hostile:
        fail("collapsed", "no stack shows the hostile name (escaped)")
    checked.append("collapsed (%d stacks)" % len(lines))


def check_svg(path, truth):
    safe_text("flamegraph", open(path, "rb").read())
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return fail("flamegraph", "not XML: %s" % e)
    titles = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title"))
    if "<evil>&" not in titles or "\\x1b[31m" not in titles:
        fail("flamegraph", "the hostile names are not in the titles as shown text")
    checked.append("flamegraph")


def strings(doc):
    """Every string in a JSON document."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from strings(v)


def check_json_file(what, path, truth):
    """JSON keeps a name as it is (escaped by JSON) or as a terminal shows it."""
    doc = load_json(what, path)
    if doc is None:
        return
    name = truth["function"]
    if not any(name in s or shown(name) in s for s in strings(doc)):
        fail(what, "the hostile name is missing")
    checked.append(what)


def check_pprof(path, truth):
    r = subprocess.run([sys.executable, os.path.join(HERE, "decode_pprof.py"), path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        return fail("pprof", "decode_pprof.py: %s" % r.stderr.decode(errors="replace"))
    funcs = [f["name"] + " " + f["filename"] for f in json.loads(r.stdout)["functions"]]
    safe_text("pprof", "\n".join(funcs).encode("utf-8"))
    if not any("<evil>&" in f and "\\x1b[31m" in f for f in funcs):
        fail("pprof", "no function shows the hostile names")
    checked.append("pprof")


def check_top(path, truth):
    text = safe_text("top", open(path, "rb").read())
    if text is None:
        return
    if "\\x1b[31m" not in text:
        fail("top", "the hostile name is not shown escaped")
    checked.append("top (plain)")


def main():
    d = sys.argv[1]
    truth = json.load(open(os.path.join(d, "truth.json")))
    p = lambda name: os.path.join(d, name)
    jobs = [("dump.txt", check_dump_text), ("dump.json", check_dump_json),
            ("dump-locals.txt", check_locals_text),
            ("dump-locals.json", check_locals_json),
            ("out.collapsed", check_collapsed), ("out.flamegraph", check_svg),
            ("out.pprof", check_pprof), ("top.txt", check_top)]
    for name, fn in jobs:
        if os.path.exists(p(name)):
            fn(p(name), truth)
    if os.path.exists(p("out.speedscope")):
        check_json_file("speedscope", p("out.speedscope"), truth)
    if os.path.exists(p("out.chrometrace")):
        check_json_file("chrometrace", p("out.chrometrace"), truth)
    print("hostile: checked %s" % ", ".join(checked))
    if failures:
        print("\n".join(failures))
        sys.exit(1)


main()
