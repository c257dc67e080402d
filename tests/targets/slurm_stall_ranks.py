# -*- coding: utf-8 -*-
"""A light rank of a Slurm job (no torch), for `watch --slurm`: each task
of srun is one rank, SLURM_PROCID of SLURM_NTASKS.

Usage: slurm_stall_ranks.py OUTDIR MOVE_S [LATE_S]

Each rank works for MOVE_S seconds in changing stacks (short sleeps at
varying depths), the last rank until every other rank has stopped and
then LATE_S more (default 0: it does not wait; LATE_S: a rank that is
late, not stuck), then stops for good where its rank says: the last rank
in fetch_shard(), blocked acquiring a lock it already holds (a shard that
never comes); every other rank in all_reduce(), blocked on a lock no one
releases (the collective that waits for the last rank).  Just before it
blocks, it writes OUTDIR/rank-N.json (tmp + rename):

  rank, node (SLURMD_NODENAME), pid, function, file (base name), line
  (where its innermost Python frame stays), stalled_unix (time.time()).

No rank outlives 600 s (SIGALRM), whatever becomes of its test.
"""
import json
import os
import signal
import sys
import threading
import time


def log(outdir, rank, function, line):
    truth = {
        "rank": rank, "node": os.environ.get("SLURMD_NODENAME"), "pid": os.getpid(),
        "function": function, "file": os.path.basename(__file__), "line": line,
        "stalled_unix": time.time(),
    }
    tmp = os.path.join(outdir, ".rank-%d.json" % rank)
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(outdir, "rank-%d.json" % rank))


def fetch_shard(outdir, rank):
    lock = threading.Lock()
    lock.acquire()
    log(outdir, rank, "fetch_shard", sys._getframe().f_lineno + 1)
    lock.acquire()


def all_reduce(outdir, rank):
    lock = threading.Lock()
    lock.acquire()
    log(outdir, rank, "all_reduce", sys._getframe().f_lineno + 1)
    lock.acquire()


def step(depth):
    if depth:
        return step(depth - 1)
    time.sleep(0.05)


def train(move_s):
    end = time.time() + move_s
    i = 0
    while time.time() < end:
        step(i % 7)
        i += 1


def others_stopped(outdir, rank):
    """Train until every other rank has stopped (its log is there), at
    most 60 s: a late rank is late from the others' stop, not from its own
    start, which srun may give it seconds after theirs on a loaded
    machine."""
    end = time.time() + 60
    while time.time() < end and not all(
            os.path.exists(os.path.join(outdir, "rank-%d.json" % r)) for r in range(rank)):
        train(0.2)


def main():
    signal.alarm(600)
    outdir, move_s = sys.argv[1], float(sys.argv[2])
    late_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    train(move_s)
    if rank == world - 1 and late_s:
        others_stopped(outdir, rank)
        train(late_s)
    if rank == world - 1:
        fetch_shard(outdir, rank)
    else:
        all_reduce(outdir, rank)


if __name__ == "__main__":
    main()
