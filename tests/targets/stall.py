# -*- coding: utf-8 -*-
"""Targets for `pystrobe watch`: jobs that move, then stop in a known way,
and jobs that must never be called stalled.  Each says itself when it
stopped, where and in which thread.

Usage: stall.py MODE SECONDS OUTDIR

SECONDS is the watch's threshold (--stall) the test uses: the modes size
their phases by it.  Every mode first writes OUTDIR/truth.json (tmp +
rename): pid, nthreads, mode, and threads: [{ident, tid, name}] (tid: the
OS thread id, from threading.get_native_id() on 3.8+, the gettid system
call on 3.7).  The modes that stop first move for MOVE_S seconds (work in
changing stacks), then stop, and write OUTDIR/stall.json once every thread
is where it stays:

  stalled_unix  time.time() when the last thread stopped moving
  kind          what the watch should call it
  threads       [{tid, name, function, line}] the threads that stopped,
                each where its innermost Python frame stays
                (co_qualname on 3.11+, co_name before: as pystrobe names
                functions); for a spin, lines: every line the loop can
                be on

Modes (3.7 syntax and the standard library; asyncio only on 3.8+):

  deadlock   threads "left" and "right" each hold one lock and block
             acquiring the other's, in take_both(); MainThread joins them.
  livelock   thread "spinner" loops for ever in spin_forever(), calling
             nothing; MainThread joins it.
  asyncio    tasks "lock-a" and "lock-b" each hold one asyncio.Lock and
             await the other task, in hold_and_await(): a cycle of tasks
             (the one `dump --async` finds); the event loop then sleeps
             in its selector.  stall.json has tasks: [{name, function,
             line}] instead of threads, and await_cycle: true.
  asyncio-locks  the same tasks each hold one asyncio.Lock and wait for
             the other's lock, in hold_and_take(): a cycle of locks, which
             asyncio does not record the holders of (await_cycle: false).
  resume     a deadlock until the test sends SIGUSR2: MainThread blocks on
             a lock that thread "holder" keeps while it blocks on another
             lock, which the signal's handler (MainThread's) releases;
             then both move for 2 x SECONDS (MainThread writes
             OUTDIR/moved.json, moved_unix, first), and the process
             exits 7.
  heartbeat  looks like a spin from its start: thread "beat" spends its
             time in one long native call after another (pbkdf2, about
             0.5 s each), in one stack, and MainThread joins it; it writes
             OUTDIR/looks.json (as stall.json, stalled_unix: when it
             began) first.  After each call it appends a line to
             OUTDIR/heartbeat, until the test creates OUTDIR/stop; then
             it goes on calling and stops appending: stall.json,
             stalled_unix its last append, kind "livelock" (also_kind:
             "no-progress", as right when --progress decides).
  busy       never stalls: steps of 0.3 to 1.5 x SECONDS in changing
             stacks (a long "validation" pass, recursion of varying
             depth, short sleeps), each logged to OUTDIR/steps.log.
  server     never stalls: MainThread blocks in accept() on 127.0.0.1
             (the port in truth.json), two handler threads wait on a
             queue for connections; each request (a line) is answered
             with "ok" and logged to OUTDIR/requests.log.
"""
import hashlib
import inspect
import json
import os
import queue
import random
import signal
import socket
import sys
import threading
import time

MOVE_S = 3.0
LIFETIME_S = 300        # no target outlives a test that died: SIGALRM ends it


def native_id():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)     # SYS_gettid on x86-64


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def lines_of(fn, marker):
    """The lines of fn's source holding marker (not the ones asking)."""
    src, first = inspect.getsourcelines(fn)
    return [first + i for i, text in enumerate(src)
            if marker in text and "lines_of(" not in text and "arrive(" not in text]


def write_json(outdir, name, data):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.rename(tmp, os.path.join(outdir, name))


class Job(object):
    """The threads a mode starts, and what it says of them."""

    def __init__(self, outdir, mode, stall_s):
        self.outdir = outdir
        self.mode = mode
        self.stall_s = stall_s
        self.tids = {threading.current_thread().name: native_id()}
        self.started = {}
        self.entered = {}       # thread name -> when it entered its last wait
        self.lock = threading.Lock()

    def start(self, name, fn, *args):
        ready = threading.Event()

        def run():
            with self.lock:
                self.tids[name] = native_id()
            ready.set()
            fn(*args)

        t = threading.Thread(target=run, name=name)
        t.daemon = True
        t.start()
        ready.wait()
        self.started[name] = t
        return t

    def truth(self, **extra):
        threads = [{"ident": t.ident, "tid": self.tids[t.name], "name": t.name}
                   for t in threading.enumerate() if t.name in self.tids]
        data = {"pid": os.getpid(), "nthreads": len(threads), "mode": self.mode,
                "stall_s": self.stall_s, "move_s": MOVE_S, "threads": threads,
                "version": list(sys.version_info[:3])}
        data.update(extra)
        write_json(self.outdir, "truth.json", data)

    def where(self, name):
        """Where thread name's innermost frame is now: (function, line)."""
        t = self.started[name]
        frame = sys._current_frames().get(t.ident)
        if frame is None:
            return None, None
        return qualname(frame.f_code), frame.f_lineno

    def settled(self, names, functions, timeout=30.0):
        """Wait until each named thread sits in its function, unchanged
        over two looks; return [{tid, name, function, line}]."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            now = [(n,) + self.where(n) for n in names]
            if now == last and all(w[1] == f for w, f in zip(now, functions)):
                return [{"tid": self.tids[n], "name": n, "function": f, "line": l}
                        for n, f, l in now]
            last = now
            time.sleep(0.1)
        sys.stderr.write("stall.py: threads never settled: %r\n" % (last,))
        os._exit(3)


# --- moving: work in stacks that keep changing -------------------------------

def leaf_sum(n):
    s = 0
    for i in range(n):
        s += i * i % 7
        s ^= i
    return s


def leaf_mix(n):
    s = 1
    for i in range(n):
        s = (s * 31 + i) % 1000003
        if s % 5 == 0:
            s += 1
    return s


def leaf_str(n):
    return len("-".join(str(i) for i in range(n)))


def leaf_sort(n):
    return sorted(range(n), key=lambda i: (i * 7919) % n)[0]


LEAVES = (leaf_sum, leaf_mix, leaf_str, leaf_sort)


def descend(depth, leaf, n):
    if depth > 0:
        return descend(depth - 1, leaf, n) + 1
    return LEAVES[leaf](n)


def move(seconds, seed=0):
    """Busy for seconds, in a stack drawn anew every fraction of a
    millisecond from about 200 (recursion 0 to 15 deep over four leaves of
    a few lines each): a watch that looks twice a second sees a different
    stack nearly every time, as in a real job's minutes."""
    end = time.time() + seconds
    rnd = random.Random(seed)
    k = 0
    while time.time() < end:
        descend(rnd.randrange(16), rnd.randrange(len(LEAVES)), 200 + rnd.randrange(400))
        k += 1
    return k


# --- deadlock -----------------------------------------------------------------

def take_both(job, first, second, both_hold, arrived):
    move(MOVE_S, len(arrived))
    first.acquire()
    arrived.append(time.time())
    both_hold.wait()
    job.entered[threading.current_thread().name] = time.time()
    second.acquire()                    # never returns: the other holds it


def deadlock(job):
    a, b = threading.Lock(), threading.Lock()
    both_hold, arrived = threading.Event(), []
    job.start("left", take_both, job, a, b, both_hold, arrived)
    job.start("right", take_both, job, b, a, both_hold, arrived)
    job.truth()
    while len(arrived) < 2:
        time.sleep(0.01)
    both_hold.set()
    threads = job.settled(["left", "right"], ["take_both", "take_both"])
    stop(job, threads, "deadlock")
    job.started["left"].join()


def stop(job, threads, kind, **extra):
    """Write stall.json, stalled_unix when the last thread entered its
    last wait (MainThread's own wait was there all along), or now."""
    data = {"stalled_unix": max(job.entered.values()) if job.entered else time.time(),
            "kind": kind, "threads": threads}
    data.update(extra)
    write_json(job.outdir, "stall.json", data)


# --- livelock -----------------------------------------------------------------

def spin_forever():
    x = 1
    while True:
        x = (x * 31 + 7) % 1000003


def spin_lines():
    code = spin_forever.__code__
    import dis
    return sorted(set(l for _, l in dis.findlinestarts(code)
                      if l is not None and l > code.co_firstlineno + 1))


def spinner(job):
    move(MOVE_S)
    job.entered["spinner"] = time.time()
    spin_forever()


def livelock(job):
    job.start("spinner", spinner, job)
    job.truth()
    time.sleep(MOVE_S)
    threads = job.settled(["spinner"], ["spin_forever"])
    threads[0]["lines"] = spin_lines()
    stop(job, threads, "livelock")
    job.started["spinner"].join()


# --- asyncio ------------------------------------------------------------------

async def move_async(seconds, seed):
    """move(), a few milliseconds at a time between awaits."""
    import asyncio
    end = time.time() + seconds
    while time.time() < end:
        move(0.005, seed)
        seed += 1
        await asyncio.sleep(0)


async def hold_and_take(job, mine, other, both_hold, blocked):
    """Hold mine, then take the other's lock: a cycle of locks."""
    await move_async(MOVE_S, len(blocked))
    async with mine:
        await arrive(job, both_hold, blocked, hold_and_take, "# never entered")
        async with other:               # never entered: the other holds it
            pass


async def hold_and_await(job, mine, other, both_hold, blocked):
    """Hold mine, then await the other task: a cycle of tasks."""
    await move_async(MOVE_S, len(blocked))
    async with mine:
        await arrive(job, both_hold, blocked, hold_and_await, "# never returns")
        await other[0]                  # never returns: the other awaits this one


async def arrive(job, both_hold, blocked, fn, marker):
    """Wait for both tasks to hold their lock; the second writes stall.json."""
    blocked.append(None)
    if len(blocked) == 2:
        both_hold.set()
    await both_hold.wait()
    blocked[blocked.index(None)] = {
        "name": job.current_task().get_name(), "function": qualname(fn.__code__),
        "line": lines_of(fn, marker)[0]}
    if None not in blocked:
        stop(job, [], "asyncio", tasks=blocked, await_cycle=fn is hold_and_await)


async def async_main(job, fn):
    import asyncio
    job.current_task = asyncio.current_task
    la, lb, both_hold, blocked = asyncio.Lock(), asyncio.Lock(), asyncio.Event(), []
    # What each waits for: the other's lock, or the other task.
    others = (lb, la) if fn is hold_and_take else ([], [])
    ta = asyncio.ensure_future(fn(job, la, others[0], both_hold, blocked))
    tb = asyncio.ensure_future(fn(job, lb, others[1], both_hold, blocked))
    if fn is hold_and_await:
        others[0].append(tb)
        others[1].append(ta)
    ta.set_name("lock-a")
    tb.set_name("lock-b")
    job.truth()
    await asyncio.gather(ta, tb)


def asyncio_locks(job):
    import asyncio
    asyncio.run(async_main(job, hold_and_take))


def asyncio_tasks(job):
    import asyncio
    asyncio.run(async_main(job, hold_and_await))


# --- resume -------------------------------------------------------------------

def hold_a_while(job, held, never, holding):
    move(MOVE_S, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])    # for MainThread
    with held:
        holding.set()
        job.entered["holder"] = time.time()
        never.acquire()                 # until SIGUSR2's handler releases it
    move(2 * job.stall_s, 2)


def resume(job):
    held, never, holding = threading.Lock(), threading.Lock(), threading.Event()
    never.acquire()
    signal.signal(signal.SIGUSR2, lambda sig, frame: never.release())
    job.start("holder", hold_a_while, job, held, never, holding)
    job.truth()
    holding.wait()
    threads = job.settled(["holder"], ["hold_a_while"])
    threads.append({"tid": job.tids["MainThread"], "name": "MainThread", "function": "resume",
                    "line": lines_of(resume, "# the deadlock, until")[0]})
    stop(job, threads, "deadlock")
    held.acquire()                      # the deadlock, until SIGUSR2
    write_json(job.outdir, "moved.json", {"moved_unix": time.time()})
    move(2 * job.stall_s, 3)
    job.started["holder"].join()
    sys.exit(7)


# --- heartbeat ------------------------------------------------------------------

def crunch_size():
    """pbkdf2 iterations that take about 0.5 s here."""
    n = 20000
    while True:
        t = time.time()
        hashlib.pbkdf2_hmac("sha256", b"pystrobe", b"salt", n)
        took = time.time() - t
        if took >= 0.25 or n > 1 << 30:
            return int(n * 0.5 / max(took, 1e-3))
        n *= 4


def beat(job, path, n):
    write_json(job.outdir, "looks.json", {
        "stalled_unix": time.time(), "kind": "livelock",
        "threads": [{"tid": native_id(), "name": "beat", "function": "beat",
                     "lines": list(range(lines_of(beat, "one long native call")[0],
                                         lines_of(beat, "last = time.time()")[0] + 1))}]})
    stop_file = os.path.join(job.outdir, "stop")
    while True:
        hashlib.pbkdf2_hmac("sha256", b"pystrobe", b"salt", n)     # one long native call
        if os.path.exists(stop_file):
            break
        with open(path, "a") as f:
            f.write("beat %.6f\n" % time.time())
            last = time.time()
    write_json(job.outdir, "stall.json", {
        "stalled_unix": last, "kind": "livelock", "also_kind": "no-progress",
        "threads": [{"tid": native_id(), "name": "beat", "function": "beat",
                     "line": lines_of(beat, "pbkdf2_hmac(")[-1]}]})
    while True:
        hashlib.pbkdf2_hmac("sha256", b"pystrobe", b"salt", n)     # the same, not appending


def heartbeat(job):
    job.start("beat", beat, job, os.path.join(job.outdir, "heartbeat"), crunch_size())
    job.truth()
    job.started["beat"].join()


# --- busy and server: never stalled --------------------------------------------

def validate(seconds, log):
    batch = move(seconds, 99)
    log.write("validate %.6f %d\n" % (time.time(), batch))


def train_step(k, seconds, log):
    move(seconds, k)
    time.sleep(0.05 * (k % 3))          # waiting on "I/O" a little
    log.write("step %.6f %d\n" % (time.time(), k))


def busy(job):
    job.truth()
    log = open(os.path.join(job.outdir, "steps.log"), "a", 1)
    k = 0
    while True:
        long = (k % 4 == 3)
        seconds = job.stall_s * (1.5 if long else 0.3 + 0.2 * (k % 3))
        if long:
            validate(seconds, log)
        else:
            train_step(k, seconds, log)
        k += 1


def handle(work, log):
    while True:
        conn = work.get()
        line = conn.makefile("r").readline()
        conn.sendall(b"ok\n")
        conn.close()
        log.write("request %.6f %s\n" % (time.time(), line.strip()))


def server(job):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    log = open(os.path.join(job.outdir, "requests.log"), "a", 1)
    work = queue.Queue()
    for name in ("handler-1", "handler-2"):
        job.start(name, handle, work, log)
    job.truth(port=srv.getsockname()[1])
    while True:
        conn, _ = srv.accept()
        work.put(conn)


MODES = {"deadlock": deadlock, "livelock": livelock, "asyncio": asyncio_tasks,
         "asyncio-locks": asyncio_locks,
         "resume": resume, "heartbeat": heartbeat, "busy": busy, "server": server}


def main():
    mode, stall_s, outdir = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    signal.alarm(LIFETIME_S)
    MODES[mode](Job(outdir, mode, stall_s))


main()
