# -*- coding: utf-8 -*-
"""A target for the `pystrobe dump` tests: threads parked in known stacks.

Usage: parked.py OUTDIR

Runs on CPython 3.7 to 3.14, so it keeps to 3.7 syntax and the stdlib.  It
starts these threads and leaves them where they are until it is killed:

  a-nested    nested_a() -> nested_b() -> nested_c(), waiting on an Event
  b-method    Keeper.outer() -> Keeper.middle(), waiting on an Event
  c-recursion recurse() 5 deep, the innermost waiting on an Event
  d-lock      lock_waiter(), blocked acquiring a Lock the main thread holds
  e-spinner   spinner() -> spin_loop(), a pure-Python busy loop that never
              sleeps: the GIL holder and the only thread that is not idle
  f-sleep     sleeper(), in time.sleep()
  g-ünïcödé   функция_ñ() from OUTDIR/modülé_данные.py, a module this
              script writes at run time, waiting on an Event, called
              through park() of three more it writes: in latin-1 and cp1252
              (coding cookies on lines 1 and 2) and UTF-8 with a BOM
  MainThread  main() -> main_park(), in time.sleep()

When all are parked, a short-lived reporter thread waits 0.3 s, takes
sys._current_frames() until two looks agree, appends a comment line to
the module file it wrote (1.2 s after it imported it: the "changed on
disk" case; each frame's source is linecache.getline() after that), writes OUTDIR/truth.json (tmp +
rename, so a reader never sees half a file) and exits, so that it is not part
of what the test dumps.  tests/compare_dump.py reads truth.json.

truth.json:
  pid, version ([major, minor, micro, level, serial]), version_string
  ("3.12.1"), argv (sys.argv), nthreads (OS threads once the reporter is
  gone), threads: [{ident, tid (native id, null before 3.8), name, role,
  moving, gil (the spinner holds it, but on a build without one), attached
  (on a build without a GIL the spinner is attached, the others detached;
  null on a build with one), idle, frames: [{function, file, line, source,
  source_changed}] innermost first,
  spin_lines (the spinner only)}], locals_check (below).
  function is co_qualname on 3.11+ and co_name before, as pystrobe reports it.

Locals that `pystrobe dump --locals` must show in nested_c() (thread a-nested);
they are listed in truth.json under locals_check:

  ev        arg   Event
  depth     arg   int       3
  answer          int       42
  negative        int       -7
  greeting        str       'hello'
  accented        str       'héllo wörld'
  nothing         NoneType  None
  flag            bool      True
  ratio           float     2.5
  items           list      5 items
  mapping         dict      2 items
  pair            tuple     2 items
"""
import dis
import importlib
import json
import linecache
import os
import sys
import threading
import time

# Written with escapes so the names do not depend on how this file is decoded.
MOD_NAME = "mod\u00fcl\u00e9_\u0434\u0430\u043d\u043d\u044b\u0435"
FUNC_NAME = "\u0444\u0443\u043d\u043a\u0446\u0438\u044f_\u00f1"
UNICODE_THREAD = "g-\u00fcn\u00efc\u00f6d\u00e9"
SPINNER = "e-spinner"

forever = threading.Event()     # never set: the parked threads wait on it
held = threading.Lock()         # main holds it; d-lock waits for it
arrivals = {}                   # thread name -> Event set just before parking


def fail(why):
    """Give up loudly: the test sees the process exit instead of waiting."""
    sys.stderr.write("parked.py: %s\n" % why)
    sys.stderr.flush()
    os._exit(3)


def arrived():
    """Say that the calling thread is about to block for good."""
    arrivals[threading.current_thread().name].set()


def nested_c(ev, depth):
    answer = 42
    negative = -7
    greeting = "hello"
    accented = "h\u00e9llo w\u00f6rld"
    nothing = None
    flag = True
    ratio = 2.5
    items = [10, 20, 30, 40, 50]
    mapping = {"one": 1, "two": 2}
    pair = ("left", "right")
    arrived()
    ev.wait()
    # Keep the locals alive and used, whatever the compiler thinks.
    return (answer, negative, greeting, accented, nothing, flag, ratio,
            items, mapping, pair, depth)


def nested_b(ev):
    nested_c(ev, 3)


def nested_a(ev):
    nested_b(ev)


class Keeper(object):
    def outer(self, ev):
        self.middle(ev)

    def middle(self, ev):
        arrived()
        ev.wait()


def recurse(n, ev):
    if n > 1:
        return recurse(n - 1, ev)
    arrived()
    ev.wait()


def lock_waiter():
    arrived()
    held.acquire()


def spin_loop():
    x = 0
    while True:
        x += 1
        if x > 1000003:
            x = 0


def spinner():
    arrived()
    spin_loop()


def sleeper():
    arrived()
    while True:
        time.sleep(3600)


def spin_lines():
    """Every line spin_loop() can be on once it is looping."""
    code = spin_loop.__code__
    lines = set()
    for _, line in dis.findlinestarts(code):
        if line is not None and line >= code.co_firstlineno + 2:
            lines.add(line)
    return sorted(lines)


def unicode_function(outdir):
    """Write and import OUTDIR/modülé_данные.py; return its function."""
    path = os.path.join(outdir, MOD_NAME + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write("# -*- coding: utf-8 -*-\n")
        f.write("def %s(ev):\n" % FUNC_NAME)
        f.write("    ev.wait()\n")
    sys.path.insert(0, outdir)
    mod = importlib.import_module(MOD_NAME)
    return getattr(mod, FUNC_NAME)


# Modules in other encodings (PEP 263), written beside it: their lines
# must show as linecache decodes them.  Each park() passes the call on, one
# frame deeper, the line holding text of its encoding.  (Escapes, so that
# nothing depends on how this file is decoded.)
ENCODED = [
    ("enc_latin1", "latin-1", "# -*- coding: latin-1 -*-\n"
     "def park(rest, f, ev):\n"
     "    return rest[0](rest[1:], f, ev) if rest else f(ev)  "
     "# caf\u00e9, \u00d1and\u00fa, \u00a35, \u00ab\u00bd\u00bb\n"),
    ("enc_cp1252", "cp1252", "#!/usr/bin/env python3\n"
     "# vim: set fileencoding=cp1252 :\n"
     "def park(rest, f, ev):\n"
     "    return rest[0](rest[1:], f, ev) if rest else f(ev)  "
     "# \u20ac10, \u201cquoted\u201d \u2014 dash\n"),
    ("enc_bom", "utf-8-sig", "def park(rest, f, ev): return rest[0](rest[1:], f, ev) "
     "if rest else f(ev)  # \u00fcn\u00efc\u00f6d\u00e9 after a BOM\n"),
]


def encoded_parks(outdir):
    """Write and import them, dated an hour back: written before this
    process started as far as the changed-file mark goes (only the edited
    module must be marked)."""
    for name, encoding, text in ENCODED:
        path = os.path.join(outdir, name + ".py")
        with open(path, "w", encoding=encoding) as f:
            f.write(text)
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    # The import system keeps each sys.path directory's listing until the
    # directory's mtime changes, and the kernel's file times are coarse:
    # files written within one tick of the last import (of the module
    # unicode_function() wrote there) are not seen without this.
    importlib.invalidate_caches()
    return [importlib.import_module(name).park for name, _, _ in ENCODED]


def unicode_parker(func, ev, parks):
    arrived()
    parks[0](parks[1:], func, ev)


def code_name(code):
    if sys.version_info >= (3, 11):
        return code.co_qualname
    return code.co_name


def stack_of(frame):
    frames = []
    while frame is not None:
        frames.append({"function": code_name(frame.f_code),
                       "file": frame.f_code.co_filename,
                       "line": frame.f_lineno})
        frame = frame.f_back
    return frames


def add_sources(stacks, edited):
    """Each frame's line as a traceback shows it (linecache, read now,
    after the edit), and whether its file is the edited one."""
    linecache.checkcache()
    for frames in stacks.values():
        for f in frames:
            f["source"] = linecache.getline(f["file"], f["line"]).strip() or None
            f["source_changed"] = f["file"] == edited


def edit_module(outdir):
    """Change the module file after the process has run a while (more
    than the second of slack pystrobe allows), lines kept where they are."""
    time.sleep(1.2)
    path = os.path.join(outdir, MOD_NAME + ".py")
    with open(path, "a", encoding="utf-8") as f:
        f.write("# edited after it was imported\n")
    return path


def still(stacks):
    """The parked threads' stacks, spinner left out (it moves)."""
    return dict((k, v) for k, v in stacks.items() if k != SPINNER)


def snapshot(parked):
    current = sys._current_frames()
    return dict((t.name, stack_of(current.get(t.ident))) for t in parked)


def stable_snapshot(parked):
    """Look until two looks 0.1 s apart agree: then every thread is parked."""
    last = snapshot(parked)
    for _ in range(100):
        time.sleep(0.1)
        now = snapshot(parked)
        if still(now) == still(last):
            return now
        last = now
    fail("the parked threads never settled")


def locals_check():
    return {
        "thread": "a-nested",
        "function": "nested_c",
        "locals": [
            {"name": "ev", "arg": True, "type": "Event"},
            {"name": "depth", "arg": True, "type": "int", "repr": "3"},
            {"name": "answer", "arg": False, "type": "int", "repr": "42"},
            {"name": "negative", "arg": False, "type": "int", "repr": "-7"},
            {"name": "greeting", "arg": False, "type": "str",
             "repr": repr("hello")},
            {"name": "accented", "arg": False, "type": "str",
             "repr": repr("h\u00e9llo w\u00f6rld")},
            {"name": "nothing", "arg": False, "type": "NoneType",
             "repr": "None"},
            {"name": "flag", "arg": False, "type": "bool", "repr": "True"},
            {"name": "ratio", "arg": False, "type": "float", "repr": "2.5"},
            {"name": "items", "arg": False, "type": "list",
             "repr": repr([10, 20, 30, 40, 50]), "len": 5},
            {"name": "mapping", "arg": False, "type": "dict",
             "repr": repr({"one": 1, "two": 2}), "len": 2},
            {"name": "pair", "arg": False, "type": "tuple",
             "repr": repr(("left", "right")), "len": 2},
        ],
    }


def truth(parked, stacks):
    threads = []
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    for t in parked:
        moving = t.name == SPINNER
        entry = {
            "ident": t.ident,
            "tid": getattr(t, "native_id", None),
            "name": t.name,
            "moving": moving,
            # A free-threaded build (3.13t) has no GIL to hold: the
            # spinner is attached to the interpreter there, the others
            # detached in their waits; null on a build with a GIL.
            "gil": moving and gil,
            "attached": None if gil else moving,
            "idle": not moving,
            "frames": stacks[t.name],
        }
        if moving:
            entry["spin_lines"] = spin_lines()
        threads.append(entry)
    v = sys.version_info
    return {
        "pid": os.getpid(),
        "version": [v[0], v[1], v[2], v[3], v[4]],
        "version_string": "%d.%d.%d" % (v[0], v[1], v[2]),
        "argv": sys.argv,
        "nthreads": len(parked),
        "threads": threads,
        "locals_check": locals_check(),
    }


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.rename(tmp, path)


def reporter(outdir, names):
    for name in names:
        if not arrivals[name].wait(60):
            fail("thread %s never parked" % name)
    time.sleep(0.3)
    me = threading.current_thread()
    parked = [t for t in threading.enumerate() if t is not me]
    stacks = stable_snapshot(parked)
    add_sources(stacks, edit_module(outdir))
    write_atomically(os.path.join(outdir, "truth.json"), truth(parked, stacks))


def main_park():
    arrived()
    while True:
        time.sleep(3600)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: parked.py OUTDIR\n")
        sys.exit(2)
    outdir = sys.argv[1]
    held.acquire()
    func = unicode_function(outdir)
    threads = [
        ("a-nested", nested_a, (forever,)),
        ("b-method", Keeper().outer, (forever,)),
        ("c-recursion", recurse, (5, forever)),
        ("d-lock", lock_waiter, ()),
        (SPINNER, spinner, ()),
        ("f-sleep", sleeper, ()),
        (UNICODE_THREAD, unicode_parker, (func, forever, encoded_parks(outdir))),
    ]
    names = [name for name, _, _ in threads] + ["MainThread"]
    for name in names:
        arrivals[name] = threading.Event()
    for name, target, args in threads:
        threading.Thread(name=name, target=target, args=args,
                         daemon=True).start()
    threading.Thread(name="reporter", target=reporter,
                     args=(outdir, names), daemon=True).start()
    main_park()


if __name__ == "__main__":
    main()
