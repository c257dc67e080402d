# -*- coding: utf-8 -*-
"""Targets for `pystrobe watch` that need PyTorch (Debian's python3-torch):
a collective that one rank never joins, and a DataLoader whose workers
stop producing.  Each says itself when it stopped, where, and which rank.

Usage: stall_torch.py MODE SECONDS OUTDIR

SECONDS is the watch's threshold; the job moves for MOVE_S seconds first.

  collective  a launcher (as torchrun would be) starts 3 rank processes
              with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
              MASTER_PORT in their environment; they join a gloo process
              group and write OUTDIR/truth.json through the launcher
              (pid: the launcher's; ranks: [{rank, pid, tid}]), then wait
              for OUTDIR/go before they train: steps of a little compute,
              some Python in stacks drawn at random (prepare()) and an
              all_reduce, in train_step().  After MOVE_S (rank 0's
              clock, shared by the all_reduce), rank 1 goes into
              load_batch() and blocks for ever, and ranks 0 and 2 wait in
              all_reduce() for it.
  dataloader  one process reads a DataLoader of 2 worker processes
              (forked), doing a step's Python for each batch (the workers
              keep ahead); MOVE_S after OUTDIR/go appears every worker
              blocks for ever in Stuck.block_forever() and the main loop
              waits for a batch in train(), next(batches).  It writes
              truth.json once torch is imported (importing it is seconds
              of native calls, which a short --stall calls a spin) and the
              workers have given their first batch.

Once everything is where it stays, OUTDIR/stall.json, as tests/targets/
stall.py writes it: stalled_unix, kind ("collective" or "data"),
odd_one_out (the rank that is elsewhere, collective only) and threads:
[{pid, tid, rank, name, function, line, innermost, calls}]: function and
line must be a frame of that thread's stack, its innermost Python frame
when innermost is true; calls: other functions the stack must hold.
"""
import datetime
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

MOVE_S = 3.0
WORLD = 3
ODD_RANK = 1
LIFETIME_S = 600        # no target outlives a test that died: SIGALRM ends it
# Debian's torch has no libuv for its store, and its UCX (through Open MPI)
# complains of a root without /proc on stderr, which is the watch's.
QUIET = {"USE_LIBUV": "0", "UCX_LOG_LEVEL": "fatal"}


def write_json(outdir, name, data):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.rename(tmp, os.path.join(outdir, name))


def read_json(outdir, name):
    with open(os.path.join(outdir, name)) as f:
        return json.load(f)


def wait_files(outdir, names, timeout=120.0):
    deadline = time.time() + timeout
    while not all(os.path.exists(os.path.join(outdir, n)) for n in names):
        if time.time() > deadline:
            sys.stderr.write("stall_torch.py: no %s\n" % names)
            os._exit(3)
        time.sleep(0.05)


def here(depth=1):
    """(function, line) of the caller's caller (depth 1), by qualname."""
    f = sys._getframe(depth + 1)
    return getattr(f.f_code, "co_qualname", f.f_code.co_name), f.f_lineno


def never_returns():
    lock = threading.Lock()
    lock.acquire()
    return lock


# --- collective ---------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(stall_s, outdir):
    port = str(free_port())
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, GLOO_SOCKET_IFNAME="lo",
                   OMP_NUM_THREADS="1", **QUIET)
        procs.append(subprocess.Popen([sys.executable, __file__, "rank", str(stall_s), outdir],
                                      env=env))
    wait_files(outdir, ["rank-%d.json" % r for r in range(WORLD)])
    ranks = [read_json(outdir, "rank-%d.json" % r) for r in range(WORLD)]
    write_json(outdir, "truth.json", {"pid": os.getpid(), "nthreads": 1, "mode": "collective",
                                      "ranks": ranks})
    wait_files(outdir, ["rank-%d-stall.json" % r for r in range(WORLD)], 3600)
    time.sleep(0.5)
    stopped = [read_json(outdir, "rank-%d-stall.json" % r) for r in range(WORLD)]
    write_json(outdir, "stall.json", {
        "stalled_unix": max(s["stalled_unix"] for s in stopped), "kind": "collective",
        "odd_one_out": {"rank": ODD_RANK, "pid": ranks[ODD_RANK]["pid"]},
        "threads": stopped})
    sys.exit(max(p.wait() for p in procs))


def load_batch(rank, outdir, stalled):
    stalled(*here(0), innermost=True)
    never_returns().acquire()           # rank 1 never comes back


def nest(depth, n):
    if depth > 0:
        return nest(depth - 1, n) + 1
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
        if acc % 3 == 0:
            acc += 1
    return acc


def prepare(rnd):
    """The Python a step does between collectives (loss, metrics, logging):
    many short calls, each in a stack drawn from about 50, so that a few
    samples of a rank that moves, even slowly on a loaded machine, are a
    few stacks."""
    for _ in range(600):
        nest(rnd.randrange(14), 50 + rnd.randrange(200))


def train_step(torch, dist, k, t0, rank, outdir, stalled):
    x = torch.randn(64, 64)
    for _ in range(1 + k % 3):
        x = torch.tanh(x @ x.t() / 64)
    prepare(random.Random(k * 3 + rank))
    flag = torch.tensor([x.sum().item() * 0.0 + (1.0 if time.time() - t0 >= MOVE_S else 0.0)])
    if stalled:
        stalled(*here(0), innermost=False, calls=["all_reduce"])
    dist.all_reduce(flag)               # ranks 0 and 2 wait here for rank 1
    return flag.item() > 0


def rank_main(stall_s, outdir):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3600))
    me = {"rank": rank, "pid": os.getpid(), "tid": threading.get_native_id()}
    write_json(outdir, "rank-%d.json" % rank, me)
    wait_files(outdir, ["go"], 3600)

    def stalled(function, line, innermost, calls=()):
        write_json(outdir, "rank-%d-stall.json" % rank, dict(
            me, name="rank %d" % rank, stalled_unix=time.time(), function=function,
            line=line + 1, innermost=innermost, calls=list(calls)))

    t0 = torch.tensor([time.time()], dtype=torch.float64)
    dist.broadcast(t0, 0)               # rank 0's clock for everyone
    k = 0
    while not train_step(torch, dist, k, t0.item(), rank, outdir, None):
        k += 1
    if rank == ODD_RANK:
        load_batch(rank, outdir, stalled)
    train_step(torch, dist, k, t0.item(), rank, outdir, stalled)


# --- dataloader -----------------------------------------------------------------

class Stuck(object):
    """A dataset whose items take a little work until the time in
    OUTDIR/stop_at; then every worker blocks at its next item."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.stop_at = None

    def __len__(self):
        return 1 << 20

    def stopped(self):
        path = os.path.join(self.outdir, "stop_at")
        if self.stop_at is None and os.path.exists(path):
            self.stop_at = read_json(self.outdir, "stop_at")
        return self.stop_at is not None and time.time() >= self.stop_at

    def __getitem__(self, i):
        import torch
        if self.stopped():
            self.block_forever()
        return torch.full((8,), float(nest(i % 5, 100 + i % 7 * 30) % 10))

    def block_forever(self):
        function, line = here(0)
        write_json(self.outdir, "worker-%d.json" % os.getpid(), {
            "pid": os.getpid(), "tid": threading.get_native_id(), "name": "worker",
            "stalled_unix": time.time(), "function": function, "line": line + 5,
            "innermost": True})
        never_returns().acquire()


def report_dataloader(outdir, main, log_path):
    """Once both workers have blocked and the main loop waits: stall.json."""
    while len([n for n in os.listdir(outdir) if n.startswith("worker-")]) < 2:
        time.sleep(0.1)
    time.sleep(1.0)
    with open(log_path) as f:
        last = f.read().split()
    workers = [read_json(outdir, n) for n in sorted(os.listdir(outdir))
               if n.startswith("worker-") and n.endswith(".json")]
    write_json(outdir, "stall.json", {
        "stalled_unix": max([float(last[-1])] + [w["stalled_unix"] for w in workers]),
        "kind": "data", "threads": [main] + workers})


def train(torch, batches, outdir, log_path):
    """Each batch: a little torch and the Python of a step (prepare());
    the workers keep ahead until they block."""
    me = {"pid": os.getpid(), "tid": threading.get_native_id(), "name": "main",
          "function": "train", "innermost": False, "calls": ["__next__"]}
    log = open(log_path, "a", 1)
    threading.Thread(target=report_dataloader, args=(outdir, me, log_path),
                     daemon=True).start()
    k = 0
    while True:
        log.write("wait %.6f\n" % time.time())
        me["line"] = sys._getframe().f_lineno + 1
        batch = next(batches)           # waits for good once the workers block
        torch.tanh(batch * 2.0).sum()
        prepare(random.Random(k))
        k += 1


def dataloader_main(stall_s, outdir):
    import torch
    from torch.utils.data import DataLoader
    torch.set_num_threads(1)
    batches = iter(DataLoader(Stuck(outdir), batch_size=4, num_workers=2,
                              multiprocessing_context="fork"))
    next(batches)                       # the workers run
    write_json(outdir, "truth.json", {"pid": os.getpid(), "nthreads": 1, "mode": "dataloader"})
    wait_files(outdir, ["go"], 3600)
    write_json(outdir, "stop_at", time.time() + MOVE_S)
    train(torch, batches, outdir, os.path.join(outdir, "batches.log"))


MODES = {"collective": launch, "rank": rank_main, "dataloader": dataloader_main}

if __name__ == "__main__":
    os.environ.update(QUIET)
    signal.alarm(LIFETIME_S)
    MODES[sys.argv[1]](float(sys.argv[2]), sys.argv[3])
