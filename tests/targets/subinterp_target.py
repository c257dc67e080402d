"""A target for the subinterpreter tests: one OS thread in two interpreters.

Usage: subinterp_target.py OUTDIR

Runs on CPython 3.12+, with whichever API the version has: 3.12's private
_xxsubinterpreters (create, run_string), 3.13's _interpreters (create,
exec), 3.14's public concurrent.interpreters (create, Interpreter.exec).

  MainThread   main() -> main_leaf(), in time.sleep()
  sub-runner   a threading.Thread of the main interpreter that runs code in
               a subinterpreter: <module> -> sub_mid() -> sub_leaf(), in
               time.sleep().  Its OS thread has a thread state in each
               interpreter; the dump must show one stack, the
               subinterpreter's frames above the main interpreter's.

Each interpreter reports itself.  sub_leaf() writes its own stack
(sys._getframe(), on the line it sleeps on, so the lines are those of the
parked stack) to OUTDIR/truth-sub.json; then a reporter thread in the main
interpreter takes the main interpreter's sys._current_frames(), stitches
the two by thread ident (one OS thread has the same ident in both) and
writes OUTDIR/truth.json (tmp + rename), and exits, so that it is not part
of what the test dumps.

The subinterpreter does not call sys._current_frames(): on 3.12 it lists
the threads of every interpreter and makes their frame objects with the
calling interpreter's allocator, and the main interpreter's frames then
free them with another (glibc aborts: "free(): invalid size").  The main
interpreter's call makes frame objects for the subinterpreter's parked
frames, which stay parked for good, so nothing frees them.

truth.json: pid, version, version_string, sub_interp (the subinterpreter's
id), nthreads, threads: [{ident, tid, name, gil, idle, moving, frames:
[{function, file, line, interpreter}] innermost first}], the shape
tests/compare_dump.py reads, plus each frame's interpreter id.
"""
import json
import os
import sys
import threading
import time

# Both interpreters describe stacks with this code: the main one runs it
# here, the subinterpreter as part of SUB_CODE.
STACK_CODE = r'''
import sys
def code_name(code):
    return code.co_qualname if sys.version_info >= (3, 11) else code.co_name
def stack_of(frame, interp):
    frames = []
    while frame is not None:
        frames.append({"function": code_name(frame.f_code),
                       "file": frame.f_code.co_filename,
                       "line": frame.f_lineno, "interpreter": interp})
        frame = frame.f_back
    return frames
'''
exec(STACK_CODE)

SUB_CODE = STACK_CODE + r'''
import _thread, json, os, time
def report():
    path = os.path.join(OUTDIR, "truth-sub.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"ident": _thread.get_ident(),
                   "tid": _thread.get_native_id(),
                   "frames": stack_of(sys._getframe(1), SUB_ID)}, f)
    os.rename(path + ".tmp", path)
    return 3600
def sub_leaf():
    while True: time.sleep(report())
def sub_mid():
    sub_leaf()
sub_mid()
'''

main_parked = threading.Event()


def fail(why):
    sys.stderr.write("subinterp_target.py: %s\n" % why)
    sys.stderr.flush()
    os._exit(3)


def new_interpreter():
    """A new subinterpreter: its id, and a function that runs code in it."""
    if sys.version_info >= (3, 14):
        from concurrent import interpreters
        interp = interpreters.create()
        return interp.id, interp.exec
    if sys.version_info >= (3, 13):
        import _interpreters
        iid = _interpreters.create()
        return int(iid), lambda code: _interpreters.exec(iid, code)
    import _xxsubinterpreters
    iid = _xxsubinterpreters.create()
    return int(iid), lambda code: _xxsubinterpreters.run_string(iid, code)


def main_snapshot(threads):
    current = sys._current_frames()
    return dict((t.ident, stack_of(current.get(t.ident), 0)) for t in threads)


def stable_main_snapshot(threads):
    last = main_snapshot(threads)
    for _ in range(100):
        time.sleep(0.1)
        now = main_snapshot(threads)
        if now == last:
            return now
        last = now
    fail("the main interpreter's threads never settled")


def wait_file(path):
    for _ in range(600):
        if os.path.exists(path):
            return
        time.sleep(0.1)
    fail("the subinterpreter never reported")


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.rename(tmp, path)


def reporter(outdir, sub_id):
    sub_path = os.path.join(outdir, "truth-sub.json")
    wait_file(sub_path)
    if not main_parked.wait(60):
        fail("MainThread never parked")
    with open(sub_path) as f:
        sub = json.load(f)
    me = threading.current_thread()
    threads = [t for t in threading.enumerate() if t is not me]
    stacks = stable_main_snapshot(threads)
    out = []
    for t in threads:
        frames = stacks[t.ident]
        if t.ident == sub["ident"]:
            frames = sub["frames"] + frames
        out.append({"ident": t.ident, "tid": t.native_id, "name": t.name,
                    "gil": False, "idle": True, "moving": False,
                    "frames": frames})
    v = sys.version_info
    write_atomically(os.path.join(outdir, "truth.json"), {
        "pid": os.getpid(),
        "version": [v[0], v[1], v[2], v[3], v[4]],
        "version_string": "%d.%d.%d" % (v[0], v[1], v[2]),
        "argv": sys.argv,
        "sub_interp": sub_id,
        "sub_tid": sub["tid"],
        "nthreads": len(threads),
        "threads": out,
    })


def main_leaf():
    main_parked.set()
    while True:
        time.sleep(3600)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: subinterp_target.py OUTDIR\n")
        sys.exit(2)
    outdir = sys.argv[1]
    sub_id, run = new_interpreter()
    code = "OUTDIR = %r\nSUB_ID = %d\n%s" % (outdir, sub_id, SUB_CODE)
    threading.Thread(name="sub-runner", target=run, args=(code,),
                     daemon=True).start()
    threading.Thread(name="reporter", target=reporter,
                     args=(outdir, sub_id), daemon=True).start()
    main_leaf()


if __name__ == "__main__":
    main()
